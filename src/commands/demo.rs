//! `aea demo`: two repositories exchanging mail end to end, in a temporary
//! directory, printed as a transcript of the real commands. It uses its own
//! config dir (registry, keys) inside that directory, so it never touches
//! the user's; a kept directory is used afterwards through
//! `AEA_CONFIG_DIR`, which the demo prints.

use std::path::{Path, PathBuf};

use clap::Parser;

use super::context::Context;
use crate::cli::{Cli, DemoArgs};
use crate::env::Env;
use crate::error::{Error, ExitCode, Result};
use crate::mailbox::Mailbox;
use crate::message::MessageType;

pub(crate) fn run(args: &DemoArgs, ctx: &Context) -> Result<ExitCode> {
    let temp;
    let root: PathBuf = match &args.keep {
        Some(dir) => {
            let dir = ctx.cwd.join(dir);
            // The demo makes api/, web/ and config/ there: in a folder that
            // holds anything, it would set up someone's own `web` project
            // and replace a registry.
            if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
                return Err(Error::usage(
                    format!(
                        "--keep {}: the folder is not empty",
                        crate::printer::untrusted_short(&dir.display().to_string(), 200)
                    ),
                    "name a new folder (aea creates it) or an empty one, e.g. `aea demo --keep /tmp/aea-demo`",
                ));
            }
            std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
            dir
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("aea-demo-")
                .tempdir_in(&ctx.temp_dir)
                .map_err(|e| Error::io("create", &ctx.temp_dir, e))?;
            temp.path().to_path_buf()
        }
    };
    let root = std::fs::canonicalize(&root).map_err(|e| Error::io("resolve", &root, e))?;
    // The registry lives in the demo's config dir, where aea looks when
    // `AEA_CONFIG_DIR` points there: one variable reaches the demo's
    // registry and keys together, so a kept demo never mixes with the
    // user's (its `api` would sign with the user's own `api` key).
    let config_dir = root.join("config");
    let env = Env {
        registry: Some(config_dir.join("registry.toml")),
        user: Some(ctx.rt.user().to_string()),
        fixed_now: None,
        seed: None,
        keep_send_record: false,
        seen_settle: None,
        exe: None,
        cwd: Some(root.clone()),
        temp_dir: ctx.temp_dir.clone(),
        config_dir: Some(config_dir.clone()),
        cache_dir: Some(root.join("cache")),
        state_dir: Some(root.join("state")),
        git_index_file: None,
        // The demo rings no doorbells.
        opencode_username: None,
        opencode_password: None,
        variables: crate::env::Variables::default(),
        aea_candidates: Vec::new(),
        // The demo installs no harness files, so reads no trust gates.
        harness_homes: crate::env::HarnessHomes::default(),
    };
    // What tells a later `aea send` in these repositories that they are
    // the demo's, to be used with its config dir only.
    let marker = root.join(super::context::DEMO_MARKER);
    std::fs::write(
        &marker,
        b"aea demo: use with AEA_CONFIG_DIR set to the config folder here\n",
    )
    .map_err(|e| Error::io("write", &marker, e))?;
    let api = root.join("api");
    let web = root.join("web");
    // Git repositories, as the real ones are: each keeps its private
    // state in its `.git/aea/`.
    for repo in [&api, &web] {
        std::fs::create_dir_all(repo).map_err(|e| Error::io("create directory", repo, e))?;
        crate::repo::init(repo)?;
    }
    let p = &ctx.printer;
    p.line(format_args!(
        "Two repositories, api and web, in {} (registry {}).",
        root.display(),
        env.registry
            .as_ref()
            .map_or(String::new(), |r| r.display().to_string())
    ));
    let demo = Demo { env, printer: p };

    demo.step(
        "Set up both repositories",
        &api,
        &["init", "--no-agent-files", "--no-git-hooks"],
    )?;
    demo.step("", &web, &["init", "--no-agent-files", "--no-git-hooks"])?;
    send_three(&demo, &api, &web)?;
    read_and_handle(&demo, &api, &web)?;
    p.line("");
    if args.keep.is_none() {
        p.line("The demo directory is removed now; pass --keep DIR to look around.");
    } else {
        p.line(format_args!(
            "The repositories stay in {}. They are registered only in the demo's own",
            root.display()
        ));
        p.line("config dir; use them with it, never with your own registry and keys:");
        p.line(format_args!(
            "  export AEA_CONFIG_DIR={}; unset AEA_REGISTRY",
            shell_quote(&config_dir.display().to_string())
        ));
        p.line(format_args!(
            "  cd {}; aea check",
            shell_quote(&web.display().to_string())
        ));
    }
    Ok(ExitCode::Success)
}

/// `text` as one shell word (single quotes unless it needs none).
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// api sends a question (by registry id), an urgent issue (by path) and a
/// handoff.
fn send_three(demo: &Demo<'_>, api: &Path, web: &Path) -> Result<()> {
    demo.step(
        "api asks web a question (recipient by registry id)",
        api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "question",
            "--subject",
            "Which port does the dev server use?",
            "--body",
            "We need it for the proxy config.",
            "--requires-response",
        ],
    )?;
    let web_path = web.display().to_string();
    demo.step(
        "api reports an urgent issue (recipient by path)",
        api,
        &[
            "send",
            "--to",
            &web_path,
            "--type",
            "issue",
            "--priority",
            "urgent",
            "--subject",
            "Login returns 500 since the last deploy",
            "--body",
            "Stack trace in the attached log; started at 14:02.",
        ],
    )?;
    demo.step(
        "api hands work over",
        api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "handoff",
            "--subject",
            "Take over the session-cookie migration",
            "--body",
            "Branch cookie-migration, steps 1-3 done.",
            "--context",
            r#"{"branch": "cookie-migration"}"#,
        ],
    )?;
    Ok(())
}

/// web checks its mail, answers the question, and a person approves the
/// handoff; api receives the answer.
fn read_and_handle(demo: &Demo<'_>, api: &Path, web: &Path) -> Result<()> {
    demo.step(
        "web checks its mail: processing order and the policy's decision",
        web,
        &["check"],
    )?;
    demo.step(
        "What a harness hook shows the model: counts and aea's own references only",
        web,
        &["check", "--hook", "plain"],
    )?;

    // The demo uses aea's short references, as an agent told by a hook would.
    let inbox = Mailbox::at(web)?.inbox().unprocessed()?;
    let refs = crate::mailbox::short_refs(&inbox);
    let id_of = |kind: MessageType| {
        inbox
            .iter()
            .zip(&refs)
            .find(|(e, _)| e.valid().is_some_and(|m| m.message_type == kind))
            .map(|(_, r)| r.clone())
            .ok_or_else(|| Error::Internal {
                what: format!("the demo's {kind:?} message did not arrive"),
            })
    };
    let (question, issue, handoff) = (
        id_of(MessageType::Question)?,
        id_of(MessageType::Issue)?,
        id_of(MessageType::Handoff)?,
    );
    let short = question.as_str();
    demo.step(
        "web reads the question, framed as untrusted data",
        web,
        &["show", short],
    )?;
    demo.step(
        "web answers in the same conversation",
        web,
        &[
            "reply",
            short,
            "--body",
            "Port 5173; the proxy should target http://localhost:5173.",
        ],
    )?;
    demo.step(
        "web marks the question processed",
        web,
        &["process", short, "--note", "answered"],
    )?;
    demo.step(
        "web's inbox now: the gated messages wait for a person",
        web,
        &["pending"],
    )?;
    demo.step(
        "Why the urgent issue waits",
        web,
        &["policy", "explain", &issue],
    )?;
    demo.step(
        "A person approves the handoff; now the agent may act on it",
        web,
        &["approve", &handoff, "--note", "yes, take it over"],
    )?;
    demo.step("", web, &["process", &handoff])?;
    demo.step("api receives the answer", api, &["check"])?;
    demo.step("The audit log of web", web, &["log"])?;
    Ok(())
}

/// Runs aea commands as the transcript shows them, in its own environment.
struct Demo<'a> {
    env: Env,
    printer: &'a crate::printer::Printer,
}

impl Demo<'_> {
    /// Prints `title` (unless empty) and the command line, then runs it.
    fn step(&self, title: &str, repo: &Path, args: &[&str]) -> Result<()> {
        let p = self.printer;
        if !title.is_empty() {
            p.line("");
            p.line(format_args!("## {title}"));
        }
        p.line(format_args!(
            "[{}]$ aea {}",
            repo.file_name().unwrap_or_default().to_string_lossy(),
            args.iter()
                .map(|a| if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    (*a).to_string()
                })
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let repo_arg = repo.display().to_string();
        let argv = ["aea", "--repo", repo_arg.as_str()]
            .into_iter()
            .chain(args.iter().copied());
        let cli = Cli::try_parse_from(argv).map_err(|e| Error::Internal {
            what: format!(
                "demo step `{title}` does not parse: {}",
                e.to_string().lines().next().unwrap_or_default()
            ),
        })?;
        match crate::run(cli, &self.env) {
            ExitCode::Success | ExitCode::Attention => Ok(()),
            code => Err(Error::DemoStepFailed {
                step: title.to_string(),
                code,
            }),
        }
    }
}
