//! Where everything of one inbox lives (SPEC §2), and the one module that
//! joins names under it. Two places, and the line between them is the
//! trust boundary (SPEC §15.1):
//!
//! - **The work tree's `.aea/`** ([`Shared`]): what is shared and what other
//!   tools read — waiting mail, the committed config and prompts, the AEA
//!   v1.0 log and `.processed/` markers, the staging folder senders deliver
//!   through. Git writes all of it (clone, checkout, pull and merge write
//!   ignored files too), so nothing here is ever taken as the receiver's
//!   own decision or as something to run.
//! - **The receiver's private state** ([`Private`]): everything aea decides
//!   or acts on — processed and claim records, approvals, deferrals, sent
//!   copies, the sync store and its queue, remembered answers, locks. It
//!   lives where git never writes: in the per-worktree git directory, under
//!   `aea/` and a name made from the inbox's path relative to the top of
//!   the work tree (so package inboxes of one repository and linked
//!   worktrees never share it), or, for an inbox outside any git
//!   repository, in the user's state directory. Git refuses to check out a
//!   path named `.git` in any case and never writes into a git directory
//!   what a commit holds, so no clone, pull or merge reaches it.
//!
//! Nothing else in the crate spells a name under either place: code asks a
//! [`Layout`] for the path of a [`Shared`] or [`Private`] entry.

use std::fmt::Write as _;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::fsutil;

/// The inbox folder inside a repository (SPEC §2).
pub const AEA_DIR: &str = ".aea";

/// The folder of the private state inside a git directory.
const GIT_DIR_FOLDER: &str = "aea";
/// The private state of an inbox at the top of the work tree.
const TOP_KEY: &str = "root";
/// The private state of inboxes outside git, in the user's state dir.
const OUTSIDE_GIT_FOLDER: &str = "inboxes";
/// In the git directory's `aea/`: the inboxes below the top of the work
/// tree that its git hooks serve (see `crate::served`).
const SERVED_FILE: &str = "served-inboxes";
/// Held while that list is changed.
const SERVED_LOCK: &str = "served-inboxes.lock";

/// An entry of the work tree's `.aea/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// `agent-config.yaml`: identity and policy (committed).
    Config,
    /// `agent.log`: AEA v1.0's shared log; nothing is decided from it.
    Log,
    /// `.agent.log.lock`: taken by every writer of the log, senders too.
    LogLock,
    /// `.processed/`: AEA v1.0 markers, written for other readers.
    Markers,
    /// `.tmp/`: where deliveries into this inbox are staged.
    Staging,
    /// `.quarantine/`: files moved out of the inbox, never read again.
    Quarantine,
    /// `prompts/`: what an agent does with its mail (committed).
    Prompts,
    /// `scripts/`: the bash AEA's readers, as `init` writes them.
    Scripts,
    /// `.gitignore`: keeps mail out of commits (committed).
    GitIgnore,
}

/// The config file of the inbox `aea_dir` (`agent-config.yaml`), for a
/// caller that has the folder but no [`Layout`] (another repository's, or
/// one not opened as a mailbox).
pub fn config_file(aea_dir: &Path) -> PathBuf {
    aea_dir.join(Shared::Config.name())
}

/// The config file of the repository at `repo`
/// (`.aea/agent-config.yaml`).
pub fn repo_config_file(repo: &Path) -> PathBuf {
    config_file(&repo.join(AEA_DIR))
}

/// The bash AEA's checker in `aea_dir` (`scripts/aea-check.sh`): where it
/// is decides whether deliveries keep its `.processed/` markers, and a
/// listing stamps it.
pub(crate) fn bash_checker(aea_dir: &Path) -> PathBuf {
    aea_dir.join(Shared::Scripts.name()).join("aea-check.sh")
}

/// The marker line of a whole file aea owns (a shim under `scripts/`, a
/// harness's file `init` writes); a file without it is the user's and is
/// left alone.
pub const OWNED_MARKER: &str = "aea:owned";

/// Whether the bash AEA's readers work on the `.aea/` at `aea_dir`: its
/// `scripts/aea-check.sh` ([`bash_checker`]) is there and is not aea's
/// shim. `install-aea.sh` puts it there with
/// `process-messages-iterative.sh` and the auto-processor; `aea init`
/// leaves such a script alone, so a repository can have both. Mail
/// delivered there then also carries the 0.1.0 fields those scripts parse
/// ([`crate::message::Message::add_legacy_copy`]). Only the check script
/// counts: the protocol text and its `CLAUDE.md` section name it, and a
/// copied `aea-send.sh` alone reads no mail.
pub(crate) fn bash_readers(aea_dir: &Path) -> bool {
    bash_script(&bash_checker(aea_dir))
}

/// Whether the bash AEA's own sender is installed in the `.aea/` at
/// `aea_dir`: its `scripts/aea-send.sh` is there and is not aea's shim.
/// `aea init` leaves it alone, so what it sends (by hand, or from the bash
/// auto-processor, which answers through it) goes out unsigned while this
/// agent has a key: aea's own mail from here says so
/// ([`crate::message::Party::also_unsigned`]), and `aea whoami` and `init`
/// tell the person what peers run.
pub fn bash_sender(aea_dir: &Path) -> bool {
    bash_script(&aea_dir.join(Shared::Scripts.name()).join("aea-send.sh"))
}

/// Whether `.aea/` at `aea_dir` is (also) the bash AEA's install: its
/// checker or its sender is there and is not aea's shim. `aea uninstall`
/// then leaves the folder where its scripts read it.
pub fn bash_install(aea_dir: &Path) -> bool {
    bash_readers(aea_dir) || bash_sender(aea_dir)
}

/// A script there that aea did not write.
fn bash_script(path: &Path) -> bool {
    // Anyone's file (a cloned repository, a sender sharing the folder):
    // read without following a symlink, never a FIFO, at most 1 MiB.
    match fsutil::read_limited(path, 1 << 20) {
        Ok(bytes) => !String::from_utf8_lossy(&bytes).contains(OWNED_MARKER),
        // aea writes its shims as files, never as links: a link there to a
        // script (the bash AEA's scripts resolve their own links, so a
        // person may link them in from one checkout) is not aea's. Only
        // the link's target kind is asked, which opens nothing.
        Err(fsutil::ReadLimited::Symlink) => fs::metadata(path).is_ok_and(|m| m.is_file()),
        Err(_) => false,
    }
}

impl Shared {
    /// Its name in `.aea/`.
    pub const fn name(self) -> &'static str {
        match self {
            Shared::Config => "agent-config.yaml",
            Shared::Log => "agent.log",
            Shared::LogLock => ".agent.log.lock",
            Shared::Markers => ".processed",
            Shared::Staging => ".tmp",
            Shared::Quarantine => ".quarantine",
            Shared::Prompts => "prompts",
            Shared::Scripts => "scripts",
            Shared::GitIgnore => ".gitignore",
        }
    }

    /// Whether the path `rel` (relative to `.aea/`) is one a repository
    /// shares through its commits: the config, the prompts and the ignore
    /// file. Everything else of `.aea/` is this machine's (mail, markers,
    /// the log) and never belongs in a commit.
    pub fn committed(rel: &str) -> bool {
        rel == Shared::Config.name()
            || rel == Shared::GitIgnore.name()
            || rel
                .strip_prefix(Shared::Prompts.name())
                .is_some_and(|rest| rest.starts_with('/'))
    }

    /// The folders `init` makes in `.aea/`.
    pub const FOLDERS: [Shared; 5] = [
        Shared::Markers,
        Shared::Staging,
        Shared::Quarantine,
        Shared::Prompts,
        Shared::Scripts,
    ];
}

/// An entry of the receiver's private state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Private {
    /// `processed/`: processed mail, moved out of the inbox.
    Processed,
    /// `records/`: how each processed message was processed.
    Records,
    /// `claims/`: a claim while a message is being processed.
    Claims,
    /// `approvals/`: a person's decision on a gated message.
    Approvals,
    /// `deferred/`: mail put off with `process --outcome deferred`.
    Deferred,
    /// `archive/`: mail `gc` moved out of the way, with its records.
    Archive,
    /// `sent/`: a copy of every message this repository sent.
    Sent,
    /// `sent-keys/`: send records (`send --idempotency-key`, retries).
    SendKeys,
    /// `outgoing/`: mail queued for `aea sync`.
    Outgoing,
    /// `sync/`: the bare git repository `aea sync` works in, and its state.
    SyncStore,
    /// `attachments/`: attachment content by SHA-256.
    Attachments,
    /// `seen/`: remembered answers, the quiet marker, the id index.
    Seen,
    /// `custody/`: in an inbox shared with other OS users, a copy of each
    /// message the receiver read, as it first read it (another user's
    /// file can be rewritten by its owner; the copy cannot).
    Custody,
    /// `accepted/`: which file first held each message id taken as mail
    /// (an id is accepted once: a second file holding it is a replay).
    Accepted,
    /// `bridged/`: where `aea bridge` found each message it imported.
    Bridged,
    /// `announced/`: what each agent-harness session was told.
    Announced,
    /// `tmp/`: staging for writes into the private state.
    Tmp,
    /// `collabs.json`: the collaboration folders `aea collab list` shows.
    Collabs,
    /// `collab-turns.json`: what the monitor last saw of each of them, so
    /// that a turn is noticed once.
    CollabTurns,
    /// `installed.json`: what `init` installed and what the user opted out of.
    Installed,
    /// `gc.lock`: held by a running `aea gc`.
    GcLock,
    /// `sync.lock`: held by a running `aea sync`.
    SyncLock,
    /// `monitor.lock`: held by `aea monitor` for its whole life.
    MonitorLock,
    /// `monitor.pid`: the running monitor, for `monitor status`.
    MonitorPid,
    /// `monitor.stop`: asks the monitor to stop.
    MonitorStop,
    /// `migrated.json`: what the move from the old layout found and did.
    Migrated,
    /// `log-witness.json`: what `doctor` last saw of `.aea/agent.log`.
    LogWitness,
}

impl Private {
    /// Its name in the private state.
    pub const fn name(self) -> &'static str {
        match self {
            Private::Processed => "processed",
            Private::Records => "records",
            Private::Claims => "claims",
            Private::Approvals => "approvals",
            Private::Deferred => "deferred",
            Private::Archive => "archive",
            Private::Sent => "sent",
            Private::SendKeys => "sent-keys",
            Private::Outgoing => "outgoing",
            Private::SyncStore => "sync",
            Private::Attachments => "attachments",
            Private::Seen => "seen",
            Private::Custody => "custody",
            Private::Accepted => "accepted",
            Private::Bridged => "bridged",
            Private::Announced => "announced",
            Private::Tmp => "tmp",
            Private::Collabs => "collabs.json",
            Private::CollabTurns => "collab-turns.json",
            Private::Installed => "installed.json",
            Private::GcLock => "gc.lock",
            Private::SyncLock => "sync.lock",
            Private::MonitorLock => "monitor.lock",
            Private::MonitorPid => "monitor.pid",
            Private::MonitorStop => "monitor.stop",
            Private::Migrated => "migrated.json",
            Private::LogWitness => "log-witness.json",
        }
    }

    /// Every folder of the private state: created `0700`, checked (a real
    /// directory of the receiver's) before anything in it is trusted.
    pub const FOLDERS: [Private; 17] = [
        Private::Processed,
        Private::Records,
        Private::Claims,
        Private::Approvals,
        Private::Deferred,
        Private::Archive,
        Private::Sent,
        Private::SendKeys,
        Private::Outgoing,
        Private::SyncStore,
        Private::Attachments,
        Private::Seen,
        Private::Custody,
        Private::Accepted,
        Private::Bridged,
        Private::Announced,
        Private::Tmp,
    ];
}

/// Names inside [`Private::Seen`] (see `crate::seen`).
pub mod seen {
    /// The last report, sealed.
    pub const REPORT: &str = "report.json";
    /// The quiet marker the pre-commit script trusts.
    pub const QUIET: &str = "quiet";
    /// The id index: message id -> file name.
    pub(crate) const IDS: &str = "ids";
    /// When `gc --auto` was last started.
    pub(crate) const AUTO_GC: &str = "auto-gc";
    /// Invalid inbox files already judged, by stamp.
    pub(crate) const INVALID: &str = "invalid.json";
    /// What waited at the last listing (file name -> message id).
    pub(crate) const WAITING: &str = "waiting.json";
    /// Mail that waited and is gone without aea moving it.
    pub(crate) const VANISHED: &str = "vanished.json";
    /// What each agent harness's hooks last ran with.
    pub const HOOK_RUNS: &str = "hook-runs.json";
}

/// Names inside [`Private::SyncStore`], beside the bare repository.
pub(crate) mod sync {
    /// The tips each watched ref had after the last sync.
    pub(crate) const TIPS: &str = "tips.json";
    /// What sync did, one JSON line per record.
    pub(crate) const JOURNAL: &str = "journal";
    /// The state file of an older aea, folded into the journal.
    pub(crate) const LEGACY_STATE: &str = "state.json";
}

/// Names inside [`Private::Archive`]: what moves with an archived message.
pub(crate) mod archive {
    /// Processed records of archived mail.
    pub(crate) const RECORDS: &str = "records";
    /// Approval records of archived or quarantined mail.
    pub(crate) const APPROVALS: &str = "approvals";
    /// The `.aea/.processed/` markers of archived or quarantined mail,
    /// kept for the record and never read.
    pub(crate) const MARKERS: &str = "markers";
}

/// Names of the old layout that the migration reads from.
pub mod old {
    pub const OUTGOING: &str = "outgoing";
    pub const SENT: &str = "sent";
    pub const ATTACHMENTS: &str = "attachments";
    pub const APPROVALS: &str = ".approvals";
    pub const SYNC: &str = ".sync";
}

/// The names the receiver's state had inside `.aea/` before it moved to
/// the private state. A file or folder under one of them in the work tree
/// is a leftover (or was planted by a commit): the migrate module (run by
/// the first command in an inbox) takes over what it can verify, `doctor`
/// reports the rest, nothing honours it.
pub const OLD_STATE_NAMES: [&str; 22] = [
    ".claims",
    old::APPROVALS,
    ".deferred",
    ".sent-keys",
    ".bridged",
    ".announced",
    ".archive",
    ".seen",
    old::SYNC,
    old::SENT,
    old::OUTGOING,
    old::ATTACHMENTS,
    ".collabs.json",
    ".installed.json",
    ".announced-agent.json",
    ".announced-git.json",
    ".gc.lock",
    ".sync.lock",
    "monitor.lock",
    "monitor.stop",
    "aea-monitor.pid",
    ".config-cache.json",
];

/// Where the private state of inboxes outside git goes: set once, at
/// start, from the environment (`env::Env::state_dir`); `None` there means
/// the platform's default.
static USER_STATE_DIR: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Sets the user's state directory (first call wins).
pub fn set_user_state_dir(dir: Option<PathBuf>) {
    let _ = USER_STATE_DIR.set(dir);
}

fn user_state_dir() -> Option<PathBuf> {
    USER_STATE_DIR
        .get_or_init(|| {
            directories::ProjectDirs::from("", "", "aea").map(|d| {
                d.state_dir()
                    .unwrap_or_else(|| d.data_local_dir())
                    .to_path_buf()
            })
        })
        .clone()
}

/// Where the private state of one inbox lives, and which kind of place
/// that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Home {
    /// In the git directory of the work tree holding the inbox.
    GitDir {
        /// The per-worktree git directory.
        git_dir: PathBuf,
        /// The top of the work tree.
        top: PathBuf,
    },
    /// In the user's state directory: the inbox is in no git work tree.
    UserState,
    /// Nowhere: outside git, and the user has no state directory (no
    /// home). Nothing private can be kept; `ensure_state` says how to fix it.
    Nowhere,
}

/// The layout of one inbox: its `.aea/` and its private state.
#[derive(Debug, Clone)]
pub struct Layout {
    repo: PathBuf,
    inbox: PathBuf,
    state: PathBuf,
    home: Home,
    /// Where the state of this inbox was kept while it was in no git
    /// repository (for an inbox in one): taken over on first use.
    before_git: Option<PathBuf>,
}

impl Layout {
    /// The layout of the repository at `repo` (a canonical path).
    pub fn of(repo: &Path) -> Layout {
        Layout::with_user_state(repo, user_state_dir().as_deref())
    }

    /// The layout of `repo` for a user whose state directory is
    /// `user_state` (tests, and tools looking at another user's setup).
    pub fn with_user_state(repo: &Path, user_state: Option<&Path>) -> Layout {
        let inbox = repo.join(AEA_DIR);
        let before_git = outside_git(repo, user_state);
        let (state, home) = match find_git_dir(repo) {
            Some((top, git_dir)) => {
                let rel = repo.strip_prefix(&top).unwrap_or(Path::new(""));
                let state = git_dir.join(GIT_DIR_FOLDER).join(key_of(rel));
                (state, Home::GitDir { git_dir, top })
            }
            None => match outside_git(repo, user_state) {
                Some(state) => (state, Home::UserState),
                // A path that can never be created: nothing is written.
                None => (PathBuf::from("/dev/null/aea-state"), Home::Nowhere),
            },
        };
        let before_git = before_git.filter(|_| matches!(home, Home::GitDir { .. }));
        Layout {
            repo: repo.to_path_buf(),
            inbox,
            state,
            home,
            before_git,
        }
    }

    /// The private state this inbox had in the user's state dir before its
    /// folder became a git repository, if it is still there.
    pub fn state_before_git(&self) -> Option<&Path> {
        self.before_git
            .as_deref()
            .filter(|p| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
    }

    /// The repository (the folder holding `.aea/`).
    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// The work tree's `.aea/`.
    pub fn inbox(&self) -> &Path {
        &self.inbox
    }

    /// The root of the private state.
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// The path of `entry` in `.aea/`.
    pub fn shared(&self, entry: Shared) -> PathBuf {
        self.inbox.join(entry.name())
    }

    /// The path of `entry` in the private state.
    pub fn private(&self, entry: Private) -> PathBuf {
        self.state.join(entry.name())
    }

    /// What a channel (agent hooks, git hooks) announced last:
    /// `announced-<channel>.json` in the private state.
    pub(crate) fn announced_channel(&self, channel: &str) -> PathBuf {
        self.state.join(format!("announced-{channel}.json"))
    }

    /// A name of the old layout inside `.aea/` (see [`OLD_STATE_NAMES`]).
    pub fn old(&self, name: &str) -> PathBuf {
        self.inbox.join(name)
    }

    /// Makes the private state's root (`0700`, and the folder above it
    /// that aea owns), then checks both: real directories of `owner` (the
    /// owner of `.aea/`), writable by no one else. Only the receiver calls
    /// this.
    pub fn ensure_state(&self, owner: Option<u32>) -> Result<()> {
        let base = match &self.home {
            Home::GitDir { git_dir, .. } => {
                fsutil::require_real_dir(git_dir)?;
                git_dir.join(GIT_DIR_FOLDER)
            }
            Home::UserState => {
                let base = self.state.parent().unwrap_or(&self.state).to_path_buf();
                if let Some(above) = base.parent() {
                    fs::create_dir_all(above)
                        .map_err(|e| Error::io("create directory", above, e))?;
                }
                base
            }
            Home::Nowhere => {
                return Err(Error::NoConfigDir {
                    needed_for: crate::error::ConfigDirUse::PrivateState,
                });
            }
        };
        fsutil::ensure_state_dir(&base)?;
        fsutil::check_private_dir(&base, owner)?;
        // `aea init` before `git init`: the state kept in the user's state
        // dir meanwhile is this user's own, and moves in whole. On another
        // file system it stays, and `doctor` says how to move it.
        if let Some(before) = self.state_before_git()
            && fs::symlink_metadata(&self.state).is_err()
            && fsutil::check_private_dir(before, owner).is_ok_and(|sound| sound)
        {
            let _ = fs::rename(before, &self.state);
        }
        fsutil::ensure_state_dir(&self.state)?;
        fsutil::check_private_dir(&self.state, owner)?;
        Ok(())
    }

    /// The git work tree holding this inbox, and the inbox's folder
    /// relative to its top (empty for the top itself); `None` outside git.
    pub fn work_tree(&self) -> Option<(WorkTree, PathBuf)> {
        let Home::GitDir { git_dir, top } = &self.home else {
            return None;
        };
        let rel = self.repo.strip_prefix(top).ok()?.to_path_buf();
        Some((WorkTree::new(top.clone(), git_dir), rel))
    }

    /// Whether the private state exists; an error when something is in
    /// its place that is not the receiver's own directory.
    pub fn state_exists(&self, owner: Option<u32>) -> Result<bool> {
        if self.home == Home::Nowhere {
            return Ok(false);
        }
        fsutil::check_private_dir(&self.state, owner)
    }
}

/// The private state of a git work tree as a whole, beside the private
/// states of its inboxes in the per-worktree git directory's `aea/`: what
/// the git hooks at its top serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkTree {
    top: PathBuf,
    base: PathBuf,
}

impl WorkTree {
    fn new(top: PathBuf, git_dir: &Path) -> WorkTree {
        WorkTree {
            top,
            base: git_dir.join(GIT_DIR_FOLDER),
        }
    }

    /// The work tree holding `path` (a canonical path), as git finds it;
    /// `None` outside git.
    pub fn of(path: &Path) -> Option<WorkTree> {
        find_git_dir(path).map(|(top, git_dir)| WorkTree::new(top, &git_dir))
    }

    /// The top of the work tree, where git runs hooks.
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// `aea/` in the git directory: the folder of every inbox's private
    /// state, and of what belongs to the work tree as a whole.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The list of the inboxes below the top that its git hooks serve.
    pub fn served_file(&self) -> PathBuf {
        self.base.join(SERVED_FILE)
    }

    /// The lock held while [`WorkTree::served_file`] is changed.
    pub fn served_lock(&self) -> PathBuf {
        self.base.join(SERVED_LOCK)
    }

    /// The private state of the inbox at `rel` (relative to the top),
    /// wherever its folder now leads.
    pub fn inbox_state(&self, rel: &Path) -> PathBuf {
        self.base.join(key_of(rel))
    }

    /// The name of the private state of the inbox at `rel` (relative to
    /// the top), as the hook scripts find it in [`WorkTree::base`].
    pub fn state_name(rel: &Path) -> String {
        key_of(rel)
    }
}

/// The name of the private state of the inbox at `rel` (relative to the
/// top of the work tree): one path component, never the name of another
/// inbox's. `root` for the top; `in-` and the path with every byte but
/// letters, digits, `.`, `_` and `-` written `%XX` otherwise (`/` too), so
/// `a/b` and `a%2Fb` differ; a long path is cut and a digest added.
fn key_of(rel: &Path) -> String {
    let text = rel.to_string_lossy();
    if text.is_empty() {
        return TOP_KEY.to_string();
    }
    let mut key = String::from("in-");
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            key.push(char::from(b));
        } else {
            let _ = write!(key, "%{b:02X}");
        }
    }
    if key.len() > 200 {
        let digest = fsutil::sha256_hex(text.as_bytes());
        key.truncate(120);
        // Never cut an escape in half.
        while key.ends_with('%') || key[..key.len() - 1].ends_with('%') {
            key.pop();
        }
        key.push('-');
        key.push_str(&digest[..32]);
    }
    key
}

/// The private state of an inbox outside git: in the user's state dir,
/// named by the folder's name and the digest of its path.
fn outside_git(repo: &Path, base: Option<&Path>) -> Option<PathBuf> {
    let base = base?;
    let name: String = repo
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let digest = fsutil::sha256_hex(repo.as_os_str().as_encoded_bytes());
    Some(
        base.join(OUTSIDE_GIT_FOLDER)
            .join(format!("{name}-{}", &digest[..16])),
    )
}

/// The top of the work tree holding `repo` and its per-worktree git
/// directory, as git finds them: the nearest `.git` at or above `repo`, a
/// directory or a file saying `gitdir: <path>` (linked worktrees,
/// submodules). `None` outside git, or where that `.git` leads nowhere.
fn find_git_dir(repo: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in repo.ancestors() {
        let dotgit = dir.join(".git");
        let Ok(meta) = fs::symlink_metadata(&dotgit) else {
            continue;
        };
        let git_dir = if meta.is_file() {
            let named = read_gitdir_file(&dotgit)?;
            dir.join(named)
        } else {
            // A directory, or a symlink to one (git follows it too).
            dotgit
        };
        let git_dir = fs::canonicalize(&git_dir).ok()?;
        return fs::metadata(&git_dir)
            .ok()
            .filter(fs::Metadata::is_dir)
            .map(|_| (dir.to_path_buf(), git_dir));
    }
    None
}

/// The path a `.git` file names (`gitdir: <path>`).
fn read_gitdir_file(path: &Path) -> Option<PathBuf> {
    let file = fsutil::open_read(path).ok()?;
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!named.is_empty()).then(|| PathBuf::from(named))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_collide_and_stay_one_component() {
        assert_eq!(key_of(Path::new("")), "root");
        assert_eq!(key_of(Path::new("packages/ui")), "in-packages%2Fui");
        assert_ne!(
            key_of(Path::new("a/b")),
            key_of(Path::new("a%2Fb")),
            "an escape is escaped itself"
        );
        assert_ne!(key_of(Path::new("root")), key_of(Path::new("")));
        let long = "x/".repeat(300);
        let key = key_of(Path::new(&long));
        assert!(key.len() < 200 && !key.contains('/'), "{key}");
        assert_ne!(key, key_of(Path::new(&format!("{long}y"))));
    }

    #[test]
    fn state_goes_into_the_git_dir_of_the_work_tree() {
        let dir = tempfile::tempdir().unwrap();
        let top = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(top.join(".git")).unwrap();
        fs::create_dir_all(top.join("packages/ui")).unwrap();
        let layout = Layout::of(&top);
        assert_eq!(layout.state(), top.join(".git/aea/root"));
        let package = Layout::of(&top.join("packages/ui"));
        assert_eq!(package.state(), top.join(".git/aea/in-packages%2Fui"));
    }

    #[test]
    fn a_linked_worktree_has_state_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let wt_git = root.join("main/.git/worktrees/wt");
        fs::create_dir_all(&wt_git).unwrap();
        fs::create_dir(root.join("wt")).unwrap();
        fs::write(
            root.join("wt/.git"),
            format!("gitdir: {}\n", wt_git.display()),
        )
        .unwrap();
        assert_eq!(
            Layout::of(&root.join("wt")).state(),
            wt_git.join("aea/root")
        );
        // A submodule names its git dir relative to itself.
        fs::create_dir_all(root.join("main/.git/modules/sub")).unwrap();
        fs::create_dir_all(root.join("main/sub")).unwrap();
        fs::write(root.join("main/sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        assert_eq!(
            Layout::of(&root.join("main/sub")).state(),
            root.join("main/.git/modules/sub/aea/root")
        );
    }

    #[test]
    fn outside_git_state_is_per_folder_in_the_user_state_dir() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join("a/repo")).unwrap();
        fs::create_dir_all(root.join("b/repo")).unwrap();
        let a = Layout::of(&root.join("a/repo"));
        let b = Layout::of(&root.join("b/repo"));
        if find_git_dir(&root).is_none() {
            assert_eq!(&a.home, &Home::UserState);
            assert_ne!(a.state(), b.state());
            assert!(!a.state().starts_with(&root), "{}", a.state().display());
        }
    }
}
