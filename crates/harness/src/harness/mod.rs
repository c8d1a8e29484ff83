//! Agent-harness integration files (SPEC §9, §16): for each harness a team
//! runs, its instructions (the AEA section of `CLAUDE.md`, `AGENTS.md`,
//! `GEMINI.md`, a rule file), its hooks (merged into its JSON settings next
//! to the user's own), its project MCP file naming `aea mcp`, its `/aea`
//! command and, for OpenCode, a plugin. What
//! each harness gets is in [`kits`]. Every file written is recorded in
//! the private `installed.json` with what it held before, so that `aea uninstall`
//! restores it exactly when nobody edited it since, and removes only aea's
//! parts when somebody did.

mod guard;
pub mod hook_runs;
mod ignore;
pub(crate) mod json;
pub mod kits;
pub mod mcp;
mod names;
pub mod shims;
pub mod trust;

pub use names::{Agent, Harness};

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout::{Layout, Private};
use crate::mailbox::Mailbox;
use crate::templates;
use json::Edit;
use kits::{Kind, OWNED_MARKER, Piece};

/// The marker of the `/aea` command written by aea before 0.2.
const OLD_COMMAND_MARKER: &str = "<!-- aea:command";

/// The harnesses a repository already uses, by their files, plus Claude
/// Code (and with it `AGENTS.md`, which Codex, OpenCode and Copilot CLI
/// read). Aider only when asked: its `read:` changes every chat.
pub fn detect(repo: &Path) -> Vec<Agent> {
    detected(repo).into_iter().map(|(agent, _)| agent).collect()
}

/// [`detect`], each harness with the file that showed it is used (`None`
/// for Claude Code, the default).
pub fn detected(repo: &Path) -> Vec<(Agent, Option<&'static str>)> {
    let has = |p: &str| fs::symlink_metadata(repo.join(p)).is_ok();
    let mut agents = vec![(Agent::Claude, None)];
    let signs: [(Agent, &[&'static str]); 6] = [
        (Agent::Codex, &[".codex"]),
        (Agent::Gemini, &[".gemini", "GEMINI.md"]),
        (
            Agent::Opencode,
            &[".opencode", "opencode.json", "opencode.jsonc"],
        ),
        (
            Agent::Copilot,
            &[".github/hooks", ".github/copilot-instructions.md"],
        ),
        (Agent::Cursor, &[".cursor", ".cursorrules"]),
        (Agent::Cline, &[".clinerules"]),
    ];
    for (agent, files) in signs {
        if let Some(file) = files.iter().find(|f| has(f)) {
            agents.push((agent, Some(*file)));
        }
    }
    agents
}

/// The project MCP files aea writes for `agent` in `repo` (SPEC §18).
pub fn mcp_files(agent: Agent, repo: &Path) -> Vec<String> {
    kits::pieces(agent, repo)
        .into_iter()
        .filter(|p| matches!(&p.kind, Kind::Toml | Kind::Json(Edit { mcp: Some(_), .. })))
        // Only a file aea could read, inside the repository: one it never
        // read is not said to hold its server.
        .filter(|p| {
            let path = repo.join(&p.path);
            lies_inside(repo, &path) && read_regular(&path).is_some()
        })
        .map(|p| p.path)
        .collect()
}

/// The layout of the repository whose `.aea/` is `aea_dir`.
fn layout_of(aea_dir: &Path) -> Layout {
    let repo = aea_dir.parent().unwrap_or(aea_dir);
    Layout::of(&fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf()))
}

/// Where what `init` installed (and what the user opted out of) is
/// recorded: the private state, never the work tree, where a commit could
/// switch the git hooks off or name the files `uninstall` rewrites.
fn state_file(aea_dir: &Path) -> PathBuf {
    layout_of(aea_dir).private(Private::Installed)
}

/// The harnesses installed in the repository of `aea_dir`, as recorded.
/// aea before 0.2 installed only Claude Code's files and did not record
/// the harness: its record of them stands for it. With no record at all
/// (a clone), those whose aea files are there.
pub fn installed(aea_dir: &Path) -> Vec<Agent> {
    let state = InstallState::load(aea_dir);
    if state.agents.is_empty() && !state.files.is_empty() {
        return vec![Agent::Claude];
    }
    if state.agents.is_empty() && !state.opted_out.agent_files {
        // A teammate's clone: the files came in a commit, the record of
        // what `init` wrote stayed on the machine that ran it.
        return committed(aea_dir.parent().unwrap_or(aea_dir));
    }
    state.agents
}

/// The harnesses whose aea files are in `repo` (a file aea owns, or aea's
/// hooks in a settings file), with no record of who wrote them.
fn committed(repo: &Path) -> Vec<Agent> {
    Agent::ALL
        .iter()
        .copied()
        .filter(|agent| {
            kits::pieces(*agent, repo).iter().any(|piece| {
                let Some(text) = read_regular(&repo.join(&piece.path)) else {
                    return false;
                };
                match &piece.kind {
                    Kind::Section | Kind::Ignore(_) => false,
                    Kind::Owned(_) | Kind::Script(_) => owned_by_aea(&text),
                    Kind::Json(edit) => {
                        !json::commands(&text, edit.shape).is_empty()
                            || edit.mcp.is_some_and(|style| {
                                json::server(&text, style).is_some_and(|s| mcp::is_ours(&s))
                            })
                    }
                    Kind::Toml => mcp::toml_server(&text)
                        .ok()
                        .flatten()
                        .is_some_and(|s| mcp::is_ours(&s)),
                }
            })
        })
        .collect()
}

/// What `init` wrote, so `uninstall` can take exactly that back.
#[derive(Debug, Default, Serialize, Deserialize)]
struct InstallState {
    /// The harnesses installed for, so that `hooks install --agents`
    /// without a list brings the same ones up to date.
    #[serde(default)]
    agents: Vec<Agent>,
    #[serde(default)]
    files: BTreeMap<String, FileRecord>,
    #[serde(default)]
    dirs_created: Vec<String>,
    #[serde(default)]
    opted_out: OptOuts,
}

/// The parts of a set-up the user turned off (`init --no-agent-files`,
/// `--no-git-hooks`). A later `init` keeps them off unless asked again
/// (`--agent-files`, `--agents`, `--git-hooks`), and `doctor` reports them
/// as skipped by choice, not as problems.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptOuts {
    #[serde(default)]
    pub agent_files: bool,
    #[serde(default)]
    pub git_hooks: bool,
}

/// What the user opted out of in the repository of `aea_dir`.
pub fn opt_outs(aea_dir: &Path) -> OptOuts {
    InstallState::load(aea_dir).opted_out
}

/// Records the user's opt-outs for the next `init` and `doctor`.
pub fn remember_opt_outs(aea_dir: &Path, choice: OptOuts) -> Result<()> {
    let mut state = InstallState::load(aea_dir);
    if state.opted_out == choice {
        return Ok(());
    }
    state.opted_out = choice;
    state.save(aea_dir)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileRecord {
    /// The text before aea first touched the file; `None` if aea created it.
    original: Option<String>,
    /// The text aea last wrote.
    written: String,
}

impl InstallState {
    fn load(aea_dir: &Path) -> InstallState {
        let mut state: InstallState = fsutil::read_state(&state_file(aea_dir), fsutil::STATE_LIMIT)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        // A cloned repository can carry this file (`git add -f`): a file or
        // folder it names is taken back only inside the repository, so a
        // record naming `/home/u/.bashrc` or `../x` is dropped unread.
        state.files.retain(|rel, _| inside_repository(rel));
        state.dirs_created.retain(|rel| inside_repository(rel));
        state
    }

    fn save(&self, aea_dir: &Path) -> Result<()> {
        let text = serde_json::to_vec_pretty(self).expect("the state always serialises");
        layout_of(aea_dir).ensure_state(fsutil::dir_owner(aea_dir))?;
        fsutil::replace_atomic(&state_file(aea_dir), &text)
    }

    /// Writes `text` to `repo/rel` (executable when `program`),
    /// remembering what was there first.
    fn write(
        &mut self,
        repo: &Path,
        rel: &str,
        before: Option<&str>,
        text: &str,
        program: bool,
    ) -> Result<()> {
        let path = repo.join(rel);
        if !resolves_inside(repo, &path) {
            return Err(Error::UnsafeState {
                path,
                detail: "leads outside the repository through a symbolic link; aea writes its agent files only inside it".into(),
            });
        }
        if let Some(parent) = path.parent() {
            self.create_dirs(repo, parent)?;
        }
        fsutil::replace_atomic(&path, text.as_bytes())?;
        if program {
            crate::hooks::make_executable(&path)?;
        }
        let original = match self.files.get(rel) {
            Some(record) => record.original.clone(),
            None => before.map(str::to_string),
        };
        self.files.insert(
            rel.to_string(),
            FileRecord {
                original,
                written: text.to_string(),
            },
        );
        Ok(())
    }

    fn create_dirs(&mut self, repo: &Path, dir: &Path) -> Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            self.create_dirs(repo, parent)?;
        }
        fsutil::ensure_dir(dir)?;
        if let Ok(rel) = dir.strip_prefix(repo) {
            self.dirs_created.push(rel.to_string_lossy().into_owned());
        }
        Ok(())
    }
}

/// Reads a text file inside the repository, `None` when missing. Symlinks
/// are followed only when they stay inside the repository.
fn read_inside(repo: &Path, rel: &str) -> Result<(PathBuf, Option<String>)> {
    let path = repo.join(rel);
    let real = match fs::canonicalize(&path) {
        Ok(real) if !real.starts_with(repo) => {
            return Err(Error::LinkLeavesRepository { path });
        }
        Ok(real) => real,
        Err(_) if fs::symlink_metadata(&path).is_ok() => {
            return Err(Error::DanglingLink { path });
        }
        Err(_) => return Ok((path, None)),
    };
    // A regular file only, capped: a FIFO committed as CLAUDE.md must not hang init.
    let text = fsutil::read_optional(&real)?;
    Ok((real, text))
}

/// Adds what `agents` need in `repo`; returns what changed and warnings. A
/// file that is not aea's is left alone and said.
pub fn install(
    repo: &Path,
    aea_dir: &Path,
    agents: &[Agent],
) -> Result<(Vec<String>, Vec<String>)> {
    let mut state = InstallState::load(aea_dir);
    for agent in agents {
        if !state.agents.contains(agent) {
            state.agents.push(*agent);
        }
    }
    let (writes, warnings) = plan(repo, agents)?;
    let mut changed = Vec::new();
    // Every file's new text is known before the first is written, so a
    // settings file aea cannot merge stops init before it has touched
    // CLAUDE.md; and what was written is recorded even when a
    // later write fails, so `uninstall` can take it back.
    let mut written = Ok(());
    for (rel, before, new, program) in writes {
        written = state.write(repo, &rel, before.as_deref(), &new, program);
        if written.is_err() {
            break;
        }
        changed.push(rel);
    }
    state.save(aea_dir)?;
    written?;
    Ok((changed, warnings))
}

/// Fails as `install` would, without writing anything: `init` asks before
/// it creates `.aea/` or touches any file.
pub fn preflight(repo: &Path, agents: &[Agent]) -> Result<()> {
    plan(repo, agents).map(drop)
}

/// A file to write: its path relative to the repo, its text before, its
/// new text, and whether it is a program (made executable).
type Write = (String, Option<String>, String, bool);

/// What `install` would write, and its warnings.
fn plan(repo: &Path, agents: &[Agent]) -> Result<(Vec<Write>, Vec<String>)> {
    let mut warnings = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut writes: Vec<Write> = Vec::new();
    for agent in agents {
        for piece in kits::pieces(*agent, repo) {
            // git reads no .gitignore that is a symbolic link (2.32 on):
            // lines added to what it leads to would change nothing.
            if matches!(piece.kind, Kind::Ignore(_)) && is_symlink(&repo.join(&piece.path)) {
                warnings.push(format!(
                    "{} is a symbolic link, which git does not read; left alone",
                    piece.path
                ));
                continue;
            }
            let (real, text) = match read_inside(repo, &piece.path) {
                Ok(found) => found,
                Err(e) => {
                    warnings.push(format!("{}; left alone", crate::error::one_line(&e)));
                    continue;
                }
            };
            // CLAUDE.md may be a symlink to AGENTS.md: one section.
            if seen.contains(&real) {
                continue;
            }
            seen.push(real.clone());
            let rel = real
                .strip_prefix(repo)
                .map_or_else(|_| piece.path.clone(), |r| r.to_string_lossy().into_owned());
            let program = matches!(piece.kind, Kind::Script(_));
            // A server named `aea` the person wrote stays theirs.
            if let (
                Kind::Json(Edit {
                    mcp: Some(style), ..
                }),
                Some(text),
            ) = (&piece.kind, &text)
                && let Some(detail) = json::foreign_server(text, *style)
            {
                warnings.push(format!(
                    "{}: {detail}; left alone: the agent gets that server, not aea's mail tools",
                    piece.path
                ));
            }
            match updated(&piece, text.as_deref(), repo)? {
                Update::Write(new) => writes.push((rel, text, new, program)),
                // Same text, but a checkout without the executable bit:
                // the harness would not run it.
                Update::Current if program && !hook_runs::is_executable(&real) => {
                    writes.push((rel, text.clone(), text.unwrap_or_default(), program));
                }
                Update::Current => {}
                Update::NotOurs(hint) => warnings.push(hint),
            }
        }
        if *agent == Agent::Aider
            && let Some(why) = aider_config_hidden(repo, &writes)
        {
            warnings.push(why);
        }
    }
    Ok((writes, warnings))
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// What to say when aea could not make `.gitignore` keep `.aider.conf.yml`
/// (a symbolic link, a FIFO, too big): on its first run Aider adds
/// `.aider*` to it, which hides the config from every teammate's clone.
fn aider_config_hidden(repo: &Path, writes: &[Write]) -> Option<String> {
    let kept = writes.iter().any(|(rel, ..)| rel == ".gitignore")
        || kits::pieces(Agent::Aider, repo).iter().any(|piece| {
            let Kind::Ignore(edit) = &piece.kind else {
                return false;
            };
            let path = repo.join(&piece.path);
            // Bounded, regular files only: a committed .gitignore can be
            // a symlink to anything.
            !is_symlink(&path)
                && fsutil::read_optional(&path)
                    .ok()
                    .flatten()
                    .is_some_and(|text| ignore::in_effect(repo, &text, edit))
        });
    (!kept).then(|| {
        "Aider adds `.aider*` to .gitignore on its first run, which hides .aider.conf.yml from git: add the line `!.aider.conf.yml` after it (or `git add -f .aider.conf.yml`) so that a teammate's clone has it".to_string()
    })
}

enum Update {
    Write(String),
    Current,
    /// The file is the user's: left alone, with what to do instead.
    NotOurs(String),
}

fn owned_by_aea(text: &str) -> bool {
    text.contains(OWNED_MARKER) || text.contains(OLD_COMMAND_MARKER)
}

/// What `piece` makes of the file's current text.
fn updated(piece: &Piece, current: Option<&str>, repo: &Path) -> Result<Update> {
    Ok(match &piece.kind {
        Kind::Section => match templates::with_agent_section(current.unwrap_or_default()) {
            Some(text) => Update::Write(text),
            None => Update::Current,
        },
        Kind::Owned(text) | Kind::Script(text) => match current {
            None => Update::Write(text.clone()),
            Some(now) if now == text => Update::Current,
            Some(now) if owned_by_aea(now) => Update::Write(text.clone()),
            Some(_) if piece.path == ".aider.conf.yml" => Update::NotOurs(
                ".aider.conf.yml exists and is not aea's; left alone: add `read: [AGENTS.md]` to it so aider reads the AEA section".to_string(),
            ),
            Some(_) if matches!(piece.kind, Kind::Script(_)) => Update::NotOurs(format!(
                "{} exists and is not aea's; left alone: Cline runs it, not aea's hook, for that event (add `aea check --hook cline --event {}` to it to hear of mail there)",
                piece.path,
                piece.path.rsplit('/').next().unwrap_or_default()
            )),
            Some(_) => Update::NotOurs(format!(
                "{} exists and is not aea's; left alone",
                piece.path
            )),
        },
        Kind::Ignore(edit) => {
            let text = current.unwrap_or_default();
            if ignore::in_effect(repo, text, edit) {
                Update::Current
            } else {
                Update::Write(ignore::added(text, edit))
            }
        }
        Kind::Json(edit) => match json::merge(current, edit) {
            Ok(Some(text)) => Update::Write(text),
            Ok(None) => Update::Current,
            // A file of MCP servers only: one aea cannot read keeps init
            // going, without aea's server, and says so.
            Err(detail) if edit.hooks.is_empty() => Update::NotOurs(format!(
                "{}: {detail}; left alone: aea's MCP server is not added to it",
                piece.path
            )),
            Err(detail) => {
                return Err(Error::SettingsInvalid {
                    path: repo.join(&piece.path),
                    detail,
                });
            }
        },
        Kind::Toml => match mcp::toml_merged(current) {
            Ok(Some(text)) => Update::Write(text),
            Ok(None) => Update::Current,
            Err(detail) => Update::NotOurs(format!(
                "{}: {detail}; left alone: aea's MCP server is not added to it",
                piece.path
            )),
        },
    })
}

/// How aea's part of the file at `rel` is recognised, from every piece
/// any harness installs.
fn kind_of(rel: &str, repo: &Path) -> Option<Kind> {
    Agent::ALL
        .iter()
        .flat_map(|a| kits::pieces(*a, repo))
        .find(|p| p.path == rel)
        .map(|p| p.kind)
}

/// Whether `rel` is a plain relative path (no root, no `..`): one that
/// stays inside the repository it is joined to.
fn inside_repository(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Whether the folder holding `path` (its nearest existing ancestor, with
/// every symbolic link on the way resolved) is inside `repo`: a committed
/// `.claude` that links to `~/.claude` leads outside.
fn resolves_inside(repo: &Path, path: &Path) -> bool {
    let Ok(root) = fs::canonicalize(repo) else {
        return false;
    };
    path.parent()
        .into_iter()
        .flat_map(Path::ancestors)
        .find_map(|a| fs::canonicalize(a).ok())
        .is_some_and(|real| real.starts_with(&root))
}

/// Whether `path` (or, when it does not exist, the folder it would be in)
/// is inside `repo` once every symbolic link is followed.
fn lies_inside(repo: &Path, path: &Path) -> bool {
    match (fs::canonicalize(path), fs::canonicalize(repo)) {
        (Ok(real), Ok(root)) => real.starts_with(root),
        (Err(_), _) => resolves_inside(repo, path),
        (_, Err(_)) => false,
    }
}

/// Takes back what `install` did; returns what changed.
pub fn uninstall(repo: &Path, aea_dir: &Path) -> Result<Vec<String>> {
    let mut state = InstallState::load(aea_dir);
    let mut changed = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for agent in Agent::ALL {
        for piece in kits::pieces(*agent, repo) {
            if !names.contains(&piece.path) {
                names.push(piece.path);
            }
        }
    }
    for rel in state.files.keys() {
        if !names.contains(rel) {
            names.push(rel.clone());
        }
    }
    for rel in names {
        let path = repo.join(&rel);
        // A committed link out of the repository: what it points to is
        // not aea's to change.
        if !resolves_inside(repo, &path) || !lies_inside(repo, &path) {
            continue;
        }
        let Some(current) = read_regular(&path) else {
            continue;
        };
        let record = state.files.remove(&rel);
        let untouched = record.as_ref().filter(|r| r.written == current);
        // `Some(None)`: the file goes; `Some(Some(text))`: it becomes `text`.
        let restored: Option<Option<String>> = match untouched {
            // Nobody edited it since: put back exactly what was there.
            Some(r) => Some(r.original.clone()),
            // Edited, or never recorded: take out only aea's part, and the
            // file too when nothing else is left in one aea created.
            None => remove_ours(&rel, &current, repo).map(|text| {
                let created = record.as_ref().is_none_or(|r| r.original.is_none());
                (!(created && text.trim().is_empty())).then_some(text)
            }),
        };
        match restored {
            None => {}
            Some(Some(text)) if text == current => {}
            Some(Some(text)) => {
                fsutil::replace_atomic(&path, text.as_bytes())?;
                changed.push(rel);
            }
            Some(None) => {
                fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
                changed.push(rel);
            }
        }
    }
    for dir in state.dirs_created.iter().rev() {
        let path = repo.join(dir);
        if !resolves_inside(repo, &path) {
            continue;
        }
        if fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none()) {
            let _ = fs::remove_dir(&path);
        }
    }
    let _ = fs::remove_file(state_file(aea_dir));
    Ok(changed)
}

/// The text of the regular file `path` resolves to (capped, never a FIFO
/// or device), `None` when there is none.
fn read_regular(path: &Path) -> Option<String> {
    let real = fs::canonicalize(path).ok()?;
    fsutil::read_optional(&real).ok()?
}

/// `current` without aea's part, `None` when there is none.
fn remove_ours(rel: &str, current: &str, repo: &Path) -> Option<String> {
    match kind_of(rel, repo) {
        Some(Kind::Json(edit)) => json::remove(current, &edit).ok().flatten(),
        Some(Kind::Toml) => mcp::toml_removed(current).ok().flatten(),
        Some(Kind::Owned(_) | Kind::Script(_)) => owned_by_aea(current).then(String::new),
        Some(Kind::Ignore(edit)) => ignore::removed(current, &edit),
        Some(Kind::Section) | None => templates::without_agent_section(current),
    }
}

/// What is wrong with one harness's installed files, each with its fix.
#[derive(Debug)]
pub struct Problem {
    pub agent: Agent,
    pub detail: String,
    pub fix: String,
}

/// Checks every installed harness: each piece present and current, and
/// every hook command portable and finding an aea where the hook looks:
/// with the PATH the harness gave it when it last ran, else with
/// `aea_candidates`, this command's (see
/// [`crate::env::Env::aea_candidates`]; SPEC §16).
pub fn problems(mailbox: &Mailbox, aea_candidates: &[PathBuf]) -> Vec<Problem> {
    let (repo, aea_dir) = (mailbox.repo(), mailbox.dir());
    let mut found = Vec::new();
    let reinstall = "aea hooks install --agents (rewrites aea's entries; `aea doctor --fix` too)";
    for agent in installed(aea_dir) {
        let run = hook_runs::last(mailbox, agent);
        let looks = Looks {
            candidates: run.as_ref().map_or(aea_candidates, |r| &r.candidates),
            run: run.as_ref(),
        };
        // aea's hook files of this harness that would run: they all find
        // aea the same way, so a missing aea is said once.
        let mut scripts = Vec::new();
        for piece in kits::pieces(agent, repo) {
            let text = read_regular(&repo.join(&piece.path));
            let problem = match (&piece.kind, &text) {
                // A link git does not read: init said so, and left it.
                (Kind::Ignore(_), _) if is_symlink(&repo.join(&piece.path)) => None,
                // A committed link out of the repository: the harness reads
                // whatever is there, aea never wrote it and cannot vouch.
                (_, Some(_)) if !lies_inside(repo, &repo.join(&piece.path)) => Some(format!(
                    "{} leads out of the repository (a symbolic link): aea neither writes nor checks what it points to",
                    piece.path
                )),
                (Kind::Ignore(edit), t) => (!t
                    .as_deref()
                    .is_some_and(|t| ignore::in_effect(repo, t, edit)))
                .then(|| {
                    format!(
                        "{} lacks `{}` in that order with no later line undoing them: git hides {} from a teammate's clone once {agent} adds its own line",
                        piece.path,
                        edit.patterns.join("` then `"),
                        edit.kept.join(", "),
                    )
                }),
                (_, None) => Some(format!("{} is missing", piece.path)),
                (Kind::Section, Some(t)) if !t.contains(templates::SECTION_BEGIN) => {
                    Some(format!("{} has no AEA section", piece.path))
                }
                (Kind::Owned(_) | Kind::Script(_), Some(t)) if !owned_by_aea(t) => None,
                // Aider's config is the person's to add settings to.
                (Kind::Owned(want), Some(t)) if t != want && piece.path != ".aider.conf.yml" => {
                    Some(format!(
                        "{} is marked as aea's but is not what this aea writes (changed by hand, in a commit, or by an older aea)",
                        piece.path
                    ))
                }
                (Kind::Script(want), Some(t)) => {
                    let problem = script_problem(&repo.join(&piece.path), &piece.path, t, want);
                    if problem.is_none() {
                        scripts.push(piece.path.clone());
                    }
                    problem
                }
                (Kind::Json(edit), Some(t)) => json_problem(&piece.path, t, edit, &looks),
                (Kind::Toml, Some(t)) => toml_problem(&piece.path, t),
                _ => None,
            };
            if let Some(detail) = problem {
                found.push(Problem {
                    agent,
                    detail,
                    fix: reinstall.to_string(),
                });
            }
        }
        // What the guard tries: PATH (the one the harness gave the hook when
        // it last ran, else this command's), then ~/.cargo/bin.
        if !scripts.is_empty() && !looks.candidates.iter().any(|c| hook_runs::runs(c)) {
            found.push(Problem {
                agent,
                detail: format!(
                    "{}: the hooks find no aea on {} nor in ~/.cargo/bin: the harness is told nothing",
                    scripts.join(", "),
                    if looks.run.is_some() {
                        "the PATH the harness gave them"
                    } else {
                        "this PATH"
                    }
                ),
                fix: "install aea there, or put it on the PATH the harness starts with".to_string(),
            });
        }
    }
    found
}

/// Where one harness's hooks look for aea, and their last run if any.
struct Looks<'a> {
    candidates: &'a [PathBuf],
    run: Option<&'a hook_runs::HookRun>,
}

/// A JSON settings file whose aea hooks are missing, name this machine's
/// path (an older aea's), or find no aea here.
fn json_problem(path: &str, text: &str, edit: &json::Edit, looks: &Looks) -> Option<String> {
    if let Some(style) = edit.mcp {
        if let Some(problem) = server_problem(path, text, style) {
            return Some(problem);
        }
        // A file of servers only: the hooks' files say whether aea is found.
        if edit.hooks.is_empty() {
            return None;
        }
    }
    let present = json::commands(text, edit.shape);
    let missing: Vec<&str> = edit
        .hooks
        .iter()
        .filter(|(event, _)| !present.iter().any(|(e, _)| e == event))
        .map(|(event, _)| event.as_str())
        .collect();
    if !missing.is_empty() {
        return Some(format!("{path}: no aea hook for {}", missing.join(", ")));
    }
    // Committed files must run on a teammate's clone: an older aea wrote
    // this machine's path.
    if let Some((_, old)) = present
        .iter()
        .find(|(_, c)| !c.starts_with(json::HOOK_GUARD))
    {
        let program = program_of(old).unwrap_or_default();
        return Some(format!(
            "{path}: the hooks call {program} by this machine's path, which a teammate's clone of this repository cannot run"
        ));
    }
    // Each hook that looks like aea's is exactly the command aea writes
    // for its event: anything added to it (`; curl … | sh`, `$(…)`) runs
    // too, and came from a hand or a commit, not from aea.
    if let Some((event, _)) = present.iter().find(|(event, command)| {
        edit.hooks
            .iter()
            .find(|(e, _)| e == event)
            .is_none_or(|(_, want)| command != want)
    }) {
        return Some(format!(
            "{path}: the {event} hook looks like aea's but is not the command aea writes (changed by hand or in a commit): it may run something else"
        ));
    }
    if let Some(rule) = approving_rule(text) {
        return Some(format!(
            "{path}: permissions.allow holds {rule}, which lets the agent run `aea approve` or `aea reject` without asking: only a person may decide (take that rule out of {path} by hand)"
        ));
    }
    // What the guard tries: PATH (the one the harness gave the hook when
    // it last ran, else this command's), then ~/.cargo/bin.
    if looks.candidates.iter().any(|c| hook_runs::runs(c)) {
        return None;
    }
    Some(match looks.run {
        Some(run) => format!(
            "{path}: the hooks ran {} on {}, and now find no aea on the PATH the harness gave them nor in ~/.cargo/bin: the harness is told nothing (install aea again, on that PATH or in ~/.cargo/bin)",
            run.aea
                .as_deref()
                .map_or_else(|| "aea".to_string(), |a| a.display().to_string()),
            run.at.format("%Y-%m-%d %H:%M UTC")
        ),
        None => format!(
            "{path}: the hooks find no aea on this PATH nor in ~/.cargo/bin: the harness is told nothing (install aea there, or put it on the PATH the harness starts with)"
        ),
    })
}

/// aea's MCP server in a JSON file: missing, someone else's under its
/// name, or changed from what aea writes.
fn server_problem(path: &str, text: &str, style: mcp::Style) -> Option<String> {
    if serde_json::from_str::<serde_json::Value>(text).is_err() {
        return Some(format!(
            "{path} is not valid JSON (comments?): aea cannot add its MCP server to it"
        ));
    }
    let Some(entry) = json::server(text, style) else {
        return Some(format!("{path}: no aea MCP server (`{}.aea`)", style.key()));
    };
    if let Some(detail) = json::foreign_server(text, style) {
        return Some(format!(
            "{path}: {detail}: the agent gets that, not aea's mail tools (rename it, or remove it and run `aea hooks install --agents`)"
        ));
    }
    (!mcp::current(&entry, style)).then(|| {
        format!(
            "{path}: the `aea` MCP server looks like aea's but is not the command aea writes (changed by hand or in a commit): it may run something else"
        )
    })
}

/// aea's MCP server in Codex's TOML config, as [`server_problem`].
fn toml_problem(path: &str, text: &str) -> Option<String> {
    match mcp::toml_server(text) {
        Err(detail) => Some(format!("{path} is {detail}: Codex reads none of it")),
        Ok(None) => Some(format!("{path}: no aea MCP server (`[mcp_servers.aea]`)")),
        Ok(Some(server)) if !mcp::is_ours(&server) => Some(format!(
            "{path}: `[mcp_servers.aea]` is a server aea did not write (it runs `{}`): the agent gets that, not aea's mail tools (rename it, or remove it and run `aea hooks install --agents`)",
            crate::printer::untrusted_short(&mcp::shown(&server), 80)
        )),
        Ok(Some(server)) if !mcp::toml_current(&server) => Some(format!(
            "{path}: the `aea` MCP server looks like aea's but is not the command aea writes (changed by hand or in a commit): it may run something else"
        )),
        Ok(Some(_)) => None,
    }
}

/// A hook file of aea's that its harness would not run as aea wrote it.
fn script_problem(path: &Path, rel: &str, text: &str, want: &str) -> Option<String> {
    if text != want {
        return Some(format!(
            "{rel} is marked as aea's but is not the hook this aea writes (changed by hand, in a commit, or by an older aea): it may run something else"
        ));
    }
    if !hook_runs::is_executable(path) {
        return Some(format!(
            "{rel} is not executable: the harness does not run it"
        ));
    }
    None
}

/// A `permissions.allow` rule of Claude Code's settings that pre-allows
/// approving or rejecting (SPEC §19): `Bash(aea approve…)`, `Bash(aea
/// reject…)`, `Bash(aea review…)` or one that covers every aea command.
fn approving_rule(text: &str) -> Option<String> {
    let root: serde_json::Value = serde_json::from_str(text).ok()?;
    let rules = root.get("permissions")?.get("allow")?.as_array()?;
    rules
        .iter()
        .filter_map(serde_json::Value::as_str)
        .find_map(|rule| {
            let inner = rule.strip_prefix("Bash(")?.strip_suffix(')')?;
            let words: Vec<&str> = inner.split_whitespace().collect();
            let program = words.first()?.trim_end_matches(":*");
            if program.rsplit('/').next() != Some("aea") {
                return None;
            }
            let command = words.get(1).map(|w| w.trim_end_matches(":*"));
            let decides = match command {
                None => true,
                Some(c) => ["approve", "reject", "review", "*"].contains(&c) || c.starts_with('*'),
            };
            decides.then(|| format!("`{}`", crate::printer::untrusted_short(rule, 80)))
        })
}

/// The program a hook command of an older aea runs (unquoted).
fn program_of(command: &str) -> Option<String> {
    let command = command.trim_start();
    if let Some(quoted) = command.strip_prefix('\'') {
        let mut program = String::new();
        let mut rest = quoted;
        // 'a'\''b' style quoting, as `sh_quote` writes it.
        loop {
            let end = rest.find('\'')?;
            program.push_str(&rest[..end]);
            rest = &rest[end + 1..];
            match rest.strip_prefix("\\''") {
                Some(more) => {
                    program.push('\'');
                    rest = more;
                }
                None => return Some(program),
            }
        }
    }
    command.split_whitespace().next().map(str::to_string)
}
