//! What the command line says about an [`Error`]: its exit code (SPEC
//! §13), the `hint:` that tells a user how to fix it, and the `--json`
//! form of both. The library's errors say what went wrong; the advice,
//! which names commands and flags, is the command line's, so it lives
//! here, above every module an error comes from.

use std::io;

use crate::collab::{Advice, Refusal};
use crate::error::{
    CollabPart, ConfigDirUse, ConfigProblem, DraftProblem, Error, ExitCode, GitError, RecipientLead,
};
use crate::mailbox::ApprovalDecision;
use crate::words::OrUnknown;

/// The words of a collaboration's advice (a refusal's hint, a `fix:` of
/// `aea collab validate`): the library says which kind of advice, the
/// command line names the commands and flags that follow it.
pub fn collab_advice(advice: &Advice) -> String {
    match advice {
        Advice::Plain(words) => words.clone(),
        Advice::WriteMissing { name: Some(name) } => format!(
            "every collaboration folder has {name}; `aea collab init --resume` writes missing documents"
        ),
        Advice::Doc { event, doc } => format!("append {event} with --doc {doc}"),
        Advice::WaitFor { owner } => {
            format!("wait for {owner}; `aea collab next` says what is yours to do")
        }
        Advice::Resume => "pass --resume to keep it as it is, or choose another folder".into(),
        Advice::Init => "start the collaboration with `aea collab init`".into(),
        Advice::Start => "the collaboration starts with initialized (`aea collab init`)".into(),
        Advice::OneInitialized => "a collaboration has one initialized event, written by `aea collab init`".into(),
        Advice::WriteMissing { name: None } => "`aea collab init --resume` writes missing documents".into(),
        Advice::Validate => "nothing is appended to a broken log; `aea collab validate` lists every problem".into(),
        Advice::Summary => "say in one short sentence what the event does (--summary TEXT)".into(),
        Advice::Review => "`aea collab review` writes the review and its review_submitted together, under the right heading".into(),
        Advice::ReviewHeadings => "each review in review.md is headed `## <time> - <participant> - seq <N>` with the seq of its own review_submitted event; `aea collab review` writes both".into(),
        Advice::NotWaitedFor => "only participants in waitingFor may advance; `aea collab next` says what is yours to do".into(),
        Advice::EventLine => "events.jsonl holds one JSON object a line; never edit it by hand, append with `aea collab event`".into(),
        Advice::TornLine => "once no one is writing to the folder, remove that partial last line (its event was never written whole) and append the event again with `aea collab event`".into(),
        Advice::Seq => "seq counts 1, 2, 3… without gaps or repeats; append with `aea collab event`, which numbers events".into(),
        Advice::ReplyTo => "name the earlier event this one answers with --reply-to SEQ".into(),
        Advice::PhaseFromLog => "currentPhase follows from events.jsonl; `aea collab next` shows it".into(),
        Advice::MissingDerived => "it follows from events.jsonl; append an event with `aea collab event` to rewrite it".into(),
        Advice::Derived => "protocol.json follows events.jsonl; the next `aea collab event` rewrites it".into(),
        Advice::ItemNumber => "items are numbered from 1 in the order of readiness.md; `aea collab next` lists them".into(),
        Advice::Reason => "give the reason the item does not block the work (--reason TEXT)".into(),
    }
}

/// What a command run with `--json` prints on stderr, on one line, when it
/// fails: `{"error": {...}}`, the exit code unchanged.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ErrorOutput {
    pub error: ErrorDetail,
}

#[derive(Debug, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ErrorDetail {
    /// The `error:` line.
    pub message: String,
    /// The `caused by:` lines, outermost first.
    pub causes: Vec<String>,
    /// The `hint:` line: what to do about it.
    pub hint: Option<String>,
    /// The exit status (SPEC §13).
    pub code: u8,
}

impl ErrorOutput {
    pub(crate) fn of(err: &Error) -> Self {
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        ErrorOutput {
            error: ErrorDetail {
                message: err.to_string(),
                causes,
                hint: hint(err),
                code: exit_code(err) as u8,
            },
        }
    }

    /// clap's syntax error as `--json` prints it: its first paragraph on
    /// one line, the usage line as the hint.
    pub fn of_clap(e: &clap::Error) -> Self {
        // clap's text: the error (a line, maybe a list under it), a blank
        // line, `Usage: …`, a blank line, where to read more.
        let text = e.render().to_string();
        let message = text
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        let message = message.strip_prefix("error: ").unwrap_or(&message);
        let usage = text.lines().find(|l| l.starts_with("Usage: "));
        let hint = match usage {
            Some(usage) => format!("{usage}; `--help` says more"),
            None => "`aea help` lists the commands; `aea <command> --help` their arguments".into(),
        };
        let code = u8::try_from(e.exit_code()).unwrap_or(2);
        ErrorOutput::usage(message.to_string(), hint, code)
    }

    /// A command-line syntax error (clap's), as `--json` prints it.
    pub fn usage(message: String, hint: String, code: u8) -> Self {
        ErrorOutput {
            error: ErrorDetail {
                message,
                causes: Vec::new(),
                hint: Some(hint),
                code,
            },
        }
    }
}

/// The exit status `aea` ends with when a command fails with `err`.
pub(crate) fn exit_code(err: &Error) -> ExitCode {
    match err {
        Error::Io { .. }
        | Error::InvalidMessage { .. }
        | Error::AlreadyProcessed { .. }
        | Error::Claimed { .. }
        | Error::RegistryCorrupt { .. }
        | Error::NoSigningKey { .. }
        | Error::KeyInvalid { .. }
        | Error::RegistryConflict { .. }
        | Error::ConfigInvalid { .. }
        | Error::PartialDelivery { .. }
        | Error::NotGated { .. }
        | Error::AlreadyDecided(_)
        | Error::HookConflict { .. }
        | Error::SettingsInvalid { .. }
        | Error::SyncFailed { .. }
        | Error::MailStore { .. }
        | Error::Git { .. }
        | Error::TrustStoreCorrupt { .. }
        | Error::Internal { .. }
        | Error::DemoStepFailed { .. }
        | Error::NoFreeName { .. }
        | Error::UnknownExecutable
        | Error::NoConfigDir { .. }
        | Error::RegistryMismatch { .. }
        | Error::BackupExists { .. } => ExitCode::Failure,
        Error::InvalidAgentId { .. }
        | Error::RecipientAmbiguous { .. }
        | Error::Usage { .. }
        | Error::InvalidDraft(_)
        | Error::SendKeyTaken { .. }
        | Error::CollabIncomplete { .. }
        | Error::BadDuration { .. }
        | Error::AmbiguousReference { .. }
        | Error::NeedsTerminal
        | Error::NoMailRemote => ExitCode::Usage,
        Error::NoRepository { .. }
        | Error::NotInitialized { .. }
        | Error::RecipientNotFound { .. }
        | Error::MessageNotFound { .. }
        | Error::NoLogEntries { .. }
        | Error::SentNotFound { .. }
        | Error::NotAGitRepository { .. }
        | Error::NoKeyToPin { .. } => ExitCode::NotFound,
        Error::MonitorDidNotStart { .. } => ExitCode::Timeout,
        // A file where aea keeps a folder is unsound state, as a symlink
        // is: a pull can put one there, and the commit gate fails closed.
        Error::Symlink { .. }
        | Error::NotADirectory { .. }
        | Error::UnsafeState { .. }
        | Error::MailboxSlotTaken { .. }
        | Error::CollabRefused(_)
        | Error::SendToSelf { .. }
        | Error::SecretDetected { .. }
        | Error::OwnKeyDetected { .. }
        | Error::NoReturnAddress { .. }
        | Error::Gated { .. }
        | Error::NotActionable { .. }
        | Error::ChangedAfterRead { .. }
        | Error::Replayed { .. }
        | Error::HooksPathInherited { .. }
        | Error::HooksCannotSee { .. }
        | Error::RemoteLooksLikeOption { .. }
        | Error::RemoteRefused { .. }
        | Error::AttachmentOutside { .. }
        | Error::AttachmentRefused { .. }
        | Error::DecisionRefused { .. }
        | Error::LinkLeavesRepository { .. }
        | Error::DanglingLink { .. }
        | Error::MessageTooLarge { .. }
        | Error::KeyChanged(_) => ExitCode::Refused,
    }
}

/// The `error:` line: the error's text, with a message file's long name
/// (the sender's choice, and not what the person typed) said as aea's
/// short reference, which every hint and listing uses.
pub(crate) fn headline(err: &Error) -> String {
    let text = err.to_string();
    let (Error::Gated { name, .. }
    | Error::NotActionable { name, .. }
    | Error::AlreadyProcessed { name }
    | Error::Claimed { name, .. }
    | Error::NotGated { name, .. }
    | Error::ChangedAfterRead { name, .. }
    | Error::Replayed { name, .. }) = err
    else {
        return text;
    };
    if name.is_empty() {
        return text;
    }
    text.replacen(name.as_str(), &crate::shortref::of_file(name), 1)
}

/// The line printed after `hint:`: what the user can do about it.
pub(crate) fn hint(err: &Error) -> Option<String> {
    let hint = match err {
        Error::Io { source, .. } => match source.kind() {
            io::ErrorKind::PermissionDenied => {
                "check the file's permissions and owner".to_string()
            }
            io::ErrorKind::NotFound => "check that the path exists".to_string(),
            _ => return None,
        },
        Error::NoRepository { inside, .. } if !inside.is_empty() => {
            let names: Vec<String> = inside
                .iter()
                .map(|n| crate::printer::untrusted_short(n, 80))
                .collect();
            format!(
                "this folder holds the repositories {}: run the command in one of them, or pass `--repo {}`",
                names.join(", "),
                names[0]
            )
        }
        Error::NoRepository { .. } => {
            "run `aea init` in the repository, or pass `--repo PATH`".to_string()
        }
        Error::NotInitialized { path } => {
            format!("run `aea init {}` first", path.display())
        }
        Error::Symlink { path } => format!(
            "replace {} with a real directory or file inside the repository",
            path.display()
        ),
        Error::NotADirectory { path } => {
            format!("move {} aside and run `aea init` again", path.display())
        }
        // The path may be a file a sender named: quoted for the shell.
        Error::UnsafeState { path, .. } => format!(
            "aea reads its state only from regular files and real folders owned by the receiver; move {0} aside (`mv {0} {0}.suspect`) and run `aea doctor`",
            crate::printer::shell_quote(&path.to_string_lossy())
        ),
        Error::CollabRefused(_) => collab_advice(&Refusal::of(err)?.advice),
        Error::MailboxSlotTaken { .. } => "the recipient deletes that file once it has processed the message: send again then (the message is not lost: it was not sent)".to_string(),
        Error::InvalidAgentId { .. } => {
            "an agent id is 2-64 characters of letters, digits, `_` and `-`, starting with a letter or digit".to_string()
        }
        Error::RecipientNotFound { lead: None, .. } => {
            "pass the recipient's path (`--to ../web`), or run `aea init` there so it registers; `aea agents` lists known agents".to_string()
        }
        Error::RecipientNotFound {
            target,
            lead: Some(RecipientLead::BehindRemote),
            ..
        } => format!(
            "if {target} is reached through the mail remote, register it (`aea agents add {target} --remote URL`) or pass `--via-remote`; `aea agents` lists the known agents"
        ),
        Error::RecipientNotFound {
            lead: Some(RecipientLead::Near { id }),
            ..
        } => format!(
            "did you mean `{id}`? `aea agents` lists the registered agents; or pass the recipient's path (`--to ../{id}`) when it is on this machine"
        ),
        Error::RecipientNotFound {
            target,
            lead: Some(RecipientLead::Moved { .. }),
            ..
        } => format!(
            "if {target} moved, run `aea init` in its new place (it takes over the stale entry) or `aea agents add {target} --path NEW-PATH --force`; if it is gone, `aea agents remove {target}`"
        ),
        Error::RecipientNotFound {
            target,
            lead: Some(RecipientLead::HoldsRepositories { inside }),
            ..
        } => {
            let shown = inside.len().min(10);
            format!(
                "it holds the initialised repositories {}{}: pass one of them, e.g. `--to {}`",
                inside[..shown].join(", "),
                if inside.len() > shown { ", …" } else { "" },
                std::path::Path::new(target)
                    .join(inside.first().map(String::as_str).unwrap_or_default())
                    .display()
            )
        }
        Error::RecipientAmbiguous { .. } => {
            "pass the recipient's path instead of its id".to_string()
        }
        Error::SendToSelf { .. } => "pass another repository with `--to`".to_string(),
        Error::SecretDetected { .. } => {
            "remove the secret, or pass `--allow-secrets` if it is not one".to_string()
        }
        Error::OwnKeyDetected { .. } => {
            "remove the key: it is never sent, not even with `--allow-secrets` (whoever holds it can sign mail as this agent)"
                .to_string()
        }
        Error::Usage { hint, .. }
        | Error::AttachmentRefused { hint, .. }
        | Error::DecisionRefused { hint, .. } => hint.clone(),
        Error::InvalidDraft(DraftProblem::Subject { .. }) => {
            "give a one-line subject of at most 200 characters".to_string()
        }
        Error::InvalidDraft(DraftProblem::Tag { .. }) => {
            "tags are short words without control characters".to_string()
        }
        Error::SendKeyTaken { earlier: Some(_), .. } => {
            "a key names one message: use a new `--idempotency-key` for a new message".to_string()
        }
        Error::SendKeyTaken { earlier: None, .. } => {
            "use another `--idempotency-key` (a key names one message)".to_string()
        }
        Error::CollabIncomplete { missing } => match missing {
            CollabPart::Objective => {
                "say what the collaboration must decide or produce (--objective TEXT)"
            }
            CollabPart::Participants => "name each with --participant ID, the proposal owner first",
            CollabPart::CompletionGates => {
                "name each concrete gate that ends it with --completion GATE"
            }
        }
        .to_string(),
        Error::BadDuration { .. } => crate::duration::EXAMPLES.to_string(),
        Error::MessageNotFound { reference } | Error::SentNotFound { reference, .. }
            if crate::shortref::parse(&format!("{}{reference}", crate::shortref::PREFIX))
                .is_some_and(|digits| digits.len() <= 16 && digits.len() == reference.len()) =>
        {
            format!(
                "aea's references start with `m`: did you mean `{}{}`? (`aea check` lists them)",
                crate::shortref::PREFIX,
                reference.to_ascii_lowercase()
            )
        }
        Error::MessageNotFound { reference } | Error::SentNotFound { reference, .. }
            if crate::shortref::too_short(reference) =>
        format!(
            "a reference is `m` and at least {} hex digits, as `aea check` prints it (`m3f9a01c2`)",
            crate::shortref::FEWEST_TYPED
        ),
        Error::MessageNotFound { .. } => {
            "`aea check` lists unprocessed messages with their references (`m…`), `aea check --processed` the processed ones; a reference names mail of the repository whose `check` printed it (`aea -C PATH …` there)".to_string()
        }
        Error::SentNotFound { received: true, .. } => {
            "that names mail this repository received: `aea show` reads it; `aea status` follows mail sent from here (`aea sent` lists it)".to_string()
        }
        Error::SentNotFound { .. } => {
            "`aea sent` lists what this repository sent, with the references `aea status` takes".to_string()
        }
        Error::NoLogEntries { filtered: true, .. } => {
            "drop `--since`/`--event` to see every entry about it; `aea log` lists all entries".to_string()
        }
        Error::NoLogEntries { .. } => {
            "pass a reference (`m…`), id or file name as `aea check`, `aea check --processed` or `aea log` show them".to_string()
        }
        Error::AmbiguousReference { .. } => {
            "use one of the longer references listed, or more characters of the id or file name"
                .to_string()
        }
        Error::InvalidMessage { .. } => {
            "`aea validate` lists what is wrong with each file".to_string()
        }
        Error::AlreadyProcessed { .. } => {
            "nothing to do; `aea check` lists what is still waiting".to_string()
        }
        Error::Claimed { .. } => {
            "wait for the other process to finish; a claim older than 30 minutes can be taken over".to_string()
        }
        Error::Gated {
            name,
            rejected: true,
            ..
        } => format!(
            "a person rejected it, and decisions are not changed: mark it handled with `aea process {} --outcome ignored`",
            crate::shortref::of_file(name)
        ),
        Error::Gated { name, .. } => format!(
            "a person decides it: `aea approve {0}` or `aea reject {0} --reason …` (or `aea review`); until then an agent leaves it waiting, or defers it (`aea process {0} --outcome deferred`)",
            crate::shortref::of_file(name)
        ),
        Error::NotActionable { name, .. } => format!(
            "mark it handled with `aea process {0} --outcome ignored`, or move it aside with `aea quarantine {0} --reason …`",
            crate::shortref::of_file(name)
        ),
        Error::ChangedAfterRead { name, command } => format!(
            "run `aea show {0}` again: it shows what aea read (its copy) and puts that copy back in place of the rewritten file; then `aea {command} {0}`",
            crate::shortref::of_file(name)
        ),
        Error::Replayed { held, .. } => format!(
            "the message itself is {held}: `aea show {held}`; `aea log --event quarantined` says what was set aside"
        ),
        Error::NotGated { .. } => {
            "process it as usual with `aea process`; `aea pending` lists what waits for a person".to_string()
        }
        Error::AlreadyDecided(_) => {
            let decided = crate::mailbox::AlreadyDecided::of(err)?;
            let name = crate::shortref::of_file(&decided.name);
            match decided.decision {
                Some(OrUnknown::Known(ApprovalDecision::Rejected)) => format!(
                    "decisions are kept as an audit trail and not changed: mark it handled with `aea process {name} --outcome ignored`"
                ),
                Some(OrUnknown::Known(ApprovalDecision::Approved)) => format!(
                    "nothing to decide: act on it, then mark it done with `aea process {name}`"
                ),
                _ => "decisions are kept as an audit trail and not changed; `aea log --message <ref>` shows the history".to_string(),
            }
        }
        Error::NotAGitRepository { .. } => {
            "run `git init` first, or pass `--repo` with the path of a git repository".to_string()
        }
        Error::HooksPathInherited { path } => format!(
            "either give this repository its own hooks directory (`git config core.hooksPath .git/hooks`, then `aea hooks install`), \
or remove the global setting (`git config --global --unset core.hooksPath`), \
or install into {} for every repository with `aea hooks install --force`",
            path.display()
        ),
        Error::HooksCannotSee { root, .. } => format!(
            "an inbox below the top of a work tree is served by the hooks there once `aea init` records it, which needs a path from {} without control characters or spaces at either end; rename the folder, or run `aea init` in {} for one inbox for the whole repository, or rely on `aea check` and the agent hooks (`aea hooks install --agents`); `aea init --no-git-hooks` skips the git hooks",
            root.display(),
            root.display()
        ),
        Error::HookConflict { path } => format!(
            "move {} aside by hand, then run `aea hooks install` again",
            path.display()
        ),
        Error::SettingsInvalid { .. } => {
            "fix the JSON by hand (aea leaves it untouched), then run the command again".to_string()
        }
        Error::SyncFailed {
            source: GitError::KeptMoving { .. },
            ..
        } => {
            "nothing was lost: queued mail stays queued; others are pushing to the same remote, so run `aea sync` again in a moment".to_string()
        }
        Error::SyncFailed {
            source: GitError::StaleLock { lock, .. },
            ..
        } => format!(
            "nothing was lost: queued mail stays queued; if no other `aea sync` or `git push` to that remote is running, remove the lock on the remote's host (`rm '{lock}'`), then run `aea sync` again"
        ),
        Error::SyncFailed { remote, .. } => format!(
            "nothing was lost: queued mail stays queued; check that `git ls-remote -- {remote}` works, then run `aea sync` again"
        ),
        Error::Git { path, .. } => format!(
            "run `git status` in {} to see what git says, fix it, then run the command again",
            path.display()
        ),
        Error::MailStore { path, .. } => format!(
            "nothing was lost: queued mail stays queued; the store holds only copies, so move it aside (`mv {0} {0}.bad`) and run `aea sync` again to rebuild it from the remote",
            path.display()
        ),
        Error::RemoteRefused { .. } => {
            "name the remote as a URL (ssh://host/path, https://…, file:///path), user@host:path, or a path".to_string()
        }
        Error::RemoteLooksLikeOption { .. } => {
            "name the remote by a URL or path that does not begin with `-` (e.g. `./-mail.git`)".to_string()
        }
        Error::TrustStoreCorrupt { path, .. } => format!(
            "fix or delete {}, then run `aea trust` again in each repository you trust",
            path.display()
        ),
        Error::NoMailRemote => {
            "pass `--remote URL`, or set `remote: URL` under `sync:` in .aea/agent-config.yaml; one set there counts once you trust it (`aea trust --show`, then `aea trust`)".to_string()
        }
        Error::NeedsTerminal => {
            "run it in a terminal, or use `aea pending`, `aea approve` and `aea reject` from scripts".to_string()
        }
        Error::NoReturnAddress { agent, .. } => format!(
            "register the sender with `aea init` in its repository, or send a new message with `aea send --to <path-to-{agent}>`"
        ),
        Error::NoSigningKey { .. } => {
            "run `aea init` in this repository: it creates the key and publishes its public half".into()
        }
        Error::KeyInvalid { path } => format!(
            "the file must hold the 64 hex digits aea wrote; move it aside (`mv {0} {0}.bak`) and run `aea init` for a new key, then tell the agents you write to (`aea agents trust`)",
            path.display()
        ),
        Error::RegistryCorrupt { path, .. } => format!(
            "fix the file by hand, or move it aside (`mv {0} {0}.bak`) and run `aea init` in each repository again",
            path.display()
        ),
        Error::RegistryConflict { .. } => {
            "choose another id with `--id`, or remove the old repository's entry from the registry".to_string()
        }
        Error::ConfigInvalid {
            path,
            problem: ConfigProblem::Missing,
        } => format!("run `aea init` to write a new {}", path.display()),
        Error::ConfigInvalid { path, problem } => match place(problem) {
            Some(place) => format!(
                "fix {place} of {}, or compare with a ready-made policy: `aea policy preset default`",
                path.display()
            ),
            None => format!(
                "fix {}, or compare with a ready-made policy: `aea policy preset default`",
                path.display()
            ),
        },
        Error::PartialDelivery { delivered, failed } => format!(
            "delivered: {}; failed: {}. Once they can be reached, run the same `aea send` again (within 24 hours): it reuses the message id and delivers only to them",
            if delivered.is_empty() {
                "none".to_string()
            } else {
                delivered.join(", ")
            },
            failed.join(", ")
        ),
        Error::Internal { .. } => {
            "this is a bug in aea; please report it with the command that led here".to_string()
        }
        Error::DemoStepFailed { .. } => {
            "the step's own error is printed above; unless it is about this machine (HOME, git, disk), report it as a bug with the transcript".to_string()
        }
        Error::NoFreeName { dir } => format!(
            "too many files in {} share the names aea tries; move old ones aside (`aea gc` for processed mail), then run the command again",
            dir.display()
        ),
        Error::MonitorDidNotStart { .. } => {
            "run `aea monitor run` in a terminal to see why".to_string()
        }
        Error::UnknownExecutable => "run aea by its full path".to_string(),
        Error::NoConfigDir { needed_for } => match needed_for {
            ConfigDirUse::SigningKey => {
                "set HOME (or XDG_CONFIG_HOME) so aea can keep its keys".to_string()
            }
            ConfigDirUse::Registry => {
                "set HOME (or XDG_CONFIG_HOME), or AEA_REGISTRY to a file path".to_string()
            }
            ConfigDirUse::TrustStore => {
                "set HOME (or XDG_CONFIG_HOME) so aea can keep its trust store there".to_string()
            }
            ConfigDirUse::PrivateState => {
                "set HOME (or XDG_STATE_HOME, or AEA_STATE_DIR), or make the folder a git repository (`git init`): its private state then lives in .git/aea/".to_string()
            }
            ConfigDirUse::Approvers => {
                "set HOME (or XDG_CONFIG_HOME) so aea can keep the approver list there".to_string()
            }
        },
        Error::AttachmentOutside { .. } => {
            "attach files of this repository only; the recipient reads them by path".to_string()
        }
        Error::LinkLeavesRepository { path } => format!(
            "replace {} with a regular file, or a link to a file inside the repository",
            path.display()
        ),
        Error::DanglingLink { path } => format!("remove or fix {}", path.display()),
        Error::MessageTooLarge { .. } => {
            "shorten the body, or attach files with `--attach` instead of inlining them; the receiver sets the limit in `limits.max_message_bytes`".to_string()
        }
        Error::RegistryMismatch { id, .. } => format!(
            "fix the registry entry with `aea agents add {id} --path <repository> --force`"
        ),
        Error::NoKeyToPin { path: Some(path), .. } => format!(
            "run `aea init` in {} to create its key, or pass --key, or --allow-unsigned for an agent that cannot sign",
            path.display()
        ),
        Error::NoKeyToPin { path: None, .. } => {
            "pass --key ed25519:… as the agent's owner gives it to you".to_string()
        }
        Error::BackupExists { .. } => {
            "wait a second and run it again, or move the old backup away".to_string()
        }
        Error::KeyChanged(change) => format!(
            "mail signed with the new key is refused as forged. Ask {0}'s owner to run `aea whoami` in its repository; only if it prints {1}, pin it: aea agents trust {0} --key {2}",
            change.agent, change.published_fingerprint, change.published
        ),
    };
    Some(hint)
}

/// The key or line to fix, as the hint names it.
fn place(problem: &ConfigProblem) -> Option<String> {
    match problem {
        ConfigProblem::Missing => None,
        ConfigProblem::Yaml { line, .. } => line.map(|l| format!("line {l}")),
        ConfigProblem::Value { key, .. } | ConfigProblem::Glob { key, .. } => {
            Some(format!("`{key}`"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{KeyChange, one_line};
    use std::path::PathBuf;
    use std::time::Duration;

    /// Number of arms of [`expected_code`]; each returns its own index.
    const VARIANTS: usize = 68;

    /// SPEC §13 for each variant, written apart from [`exit_code`]
    /// and without a wildcard: a new variant does not compile until it is
    /// given its code here and an example in [`examples`].
    fn expected_code(e: &Error) -> (usize, ExitCode) {
        use ExitCode::*;
        match e {
            Error::Io { .. } => (0, Failure),
            Error::NoRepository { .. } => (1, NotFound),
            Error::NotInitialized { .. } => (2, NotFound),
            Error::Symlink { .. } => (3, Refused),
            Error::NotADirectory { .. } => (4, Refused),
            Error::UnsafeState { .. } => (5, Refused),
            Error::InvalidAgentId { .. } => (6, Usage),
            Error::RecipientNotFound { .. } => (7, NotFound),
            Error::RecipientAmbiguous { .. } => (8, Usage),
            Error::SendToSelf { .. } => (9, Refused),
            Error::SecretDetected { .. } => (10, Refused),
            Error::OwnKeyDetected { .. } => (66, Refused),
            Error::Usage { .. } => (11, Usage),
            Error::BadDuration { .. } => (12, Usage),
            Error::MessageNotFound { .. } => (13, NotFound),
            Error::AmbiguousReference { .. } => (14, Usage),
            Error::InvalidMessage { .. } => (15, Failure),
            Error::AlreadyProcessed { .. } => (16, Failure),
            Error::Claimed { .. } => (17, Failure),
            Error::Gated { .. } => (18, Refused),
            Error::NotGated { .. } => (19, Failure),
            Error::AlreadyDecided(_) => (20, Failure),
            Error::NotAGitRepository { .. } => (21, NotFound),
            Error::HooksPathInherited { .. } => (22, Refused),
            Error::HookConflict { .. } => (23, Failure),
            Error::SettingsInvalid { .. } => (24, Failure),
            Error::MailStore { .. } => (25, Failure),
            Error::SyncFailed { .. } => (26, Failure),
            Error::NoMailRemote => (27, Usage),
            Error::RemoteLooksLikeOption { .. } => (28, Refused),
            Error::RemoteRefused { .. } => (29, Refused),
            Error::TrustStoreCorrupt { .. } => (30, Failure),
            Error::NeedsTerminal => (31, Usage),
            Error::NoReturnAddress { .. } => (32, Refused),
            Error::NoSigningKey { .. } => (33, Failure),
            Error::KeyInvalid { .. } => (34, Failure),
            Error::RegistryCorrupt { .. } => (35, Failure),
            Error::RegistryConflict { .. } => (36, Failure),
            Error::ConfigInvalid { .. } => (37, Failure),
            Error::PartialDelivery { .. } => (38, Failure),
            Error::Internal { .. } => (39, Failure),
            Error::DemoStepFailed { .. } => (40, Failure),
            Error::NoFreeName { .. } => (41, Failure),
            Error::MonitorDidNotStart { .. } => (42, Timeout),
            Error::UnknownExecutable => (43, Failure),
            Error::NoConfigDir { .. } => (44, Failure),
            Error::AttachmentOutside { .. } => (45, Refused),
            Error::LinkLeavesRepository { .. } => (46, Refused),
            Error::DanglingLink { .. } => (47, Refused),
            Error::MessageTooLarge { .. } => (48, Refused),
            Error::RegistryMismatch { .. } => (49, Failure),
            Error::NoKeyToPin { .. } => (50, NotFound),
            Error::BackupExists { .. } => (51, Failure),
            Error::NotActionable { .. } => (52, Refused),
            Error::Git { .. } => (53, Failure),
            Error::HooksCannotSee { .. } => (54, Refused),
            Error::MailboxSlotTaken { .. } => (55, Refused),
            Error::CollabRefused(_) => (56, Refused),
            Error::NoLogEntries { .. } => (57, NotFound),
            Error::SentNotFound { .. } => (58, NotFound),
            Error::AttachmentRefused { .. } => (59, Refused),
            Error::KeyChanged(_) => (60, Refused),
            Error::ChangedAfterRead { .. } => (61, Refused),
            Error::Replayed { .. } => (62, Refused),
            Error::InvalidDraft(_) => (63, Usage),
            Error::SendKeyTaken { .. } => (64, Usage),
            Error::CollabIncomplete { .. } => (65, Usage),
            Error::DecisionRefused { .. } => (67, Refused),
        }
    }

    /// One value of every variant (several where the hint depends on a field).
    fn examples() -> Vec<Error> {
        let p = || PathBuf::from("/r/.aea/x");
        let s = |t: &str| t.to_string();
        vec![
            Error::HooksCannotSee {
                root: p(),
                repo: p(),
            },
            Error::Git {
                path: p(),
                op: "open",
                source: Box::new(io::Error::other("config file parse error")),
            },
            Error::MailboxSlotTaken { path: p() },
            Error::DecisionRefused {
                message: s("the decision is not signed"),
                hint: s("pass --ssh-key FILE with an approver's key"),
            },
            Error::AttachmentRefused {
                message: s("attachment 1 does not match its SHA-256"),
                hint: s("ask the sender to send it again"),
            },
            Error::CollabRefused(Box::new(crate::collab::Refusal::new(
                crate::collab::Rule::Turn,
                "seq 3: proposal_revised is the proposal owner's (web) to append, not api's",
                crate::collab::Advice::WaitFor { owner: s("web") },
            ))),
            Error::NotActionable {
                name: s("message-x.json"),
                reason: s("it is not a valid message"),
            },
            Error::ChangedAfterRead {
                name: s("message-20261121T100000000Z-from-api-0badf11e.json"),
                command: "approve",
            },
            Error::Replayed {
                name: s("message-20261121T100000000Z-from-api-5eed5eed.json"),
                held: s("m3f9a01c2"),
            },
            Error::io("read", p(), io::Error::from(io::ErrorKind::NotFound)),
            Error::io(
                "read",
                p(),
                io::Error::from(io::ErrorKind::PermissionDenied),
            ),
            Error::NoRepository {
                start: p(),
                inside: vec![],
            },
            Error::NoRepository {
                start: p(),
                inside: vec![s("api"), s("web")],
            },
            Error::NotInitialized { path: p() },
            Error::Symlink { path: p() },
            Error::NotADirectory { path: p() },
            Error::UnsafeState {
                path: p(),
                detail: s("is writable by others"),
            },
            Error::InvalidAgentId {
                id: s("a b"),
                reason: "it has a space",
            },
            Error::RecipientNotFound {
                target: s("web"),
                tried: vec![s("registry")],
                lead: None,
            },
            Error::RecipientNotFound {
                target: s("wbe"),
                tried: vec![s("registry")],
                lead: Some(RecipientLead::Near { id: s("web") }),
            },
            Error::RecipientNotFound {
                target: s("wbe"),
                tried: vec![],
                lead: Some(RecipientLead::BehindRemote),
            },
            Error::RecipientNotFound {
                target: s("web"),
                tried: vec![s("registry")],
                lead: Some(RecipientLead::Moved { registered: p() }),
            },
            Error::RecipientNotFound {
                target: s("../src"),
                tried: vec![s("../src is neither an aea nor a git repository")],
                lead: Some(RecipientLead::HoldsRepositories {
                    inside: vec![s("api"), s("web")],
                }),
            },
            Error::InvalidDraft(DraftProblem::Subject {
                reason: s("message.subject must be one line"),
            }),
            Error::InvalidDraft(DraftProblem::Tag { tag: s(" ") }),
            Error::SendKeyTaken {
                key: s("job-1"),
                earlier: Some(s("5b0e8e8e-1111-4222-8333-444455556666")),
            },
            Error::SendKeyTaken {
                key: s("job-1"),
                earlier: None,
            },
            Error::CollabIncomplete {
                missing: CollabPart::Objective,
            },
            Error::CollabIncomplete {
                missing: CollabPart::Participants,
            },
            Error::CollabIncomplete {
                missing: CollabPart::CompletionGates,
            },
            Error::RecipientAmbiguous {
                target: s("web"),
                candidates: vec![s("/a"), s("/b")],
            },
            Error::SendToSelf { id: s("api") },
            Error::SecretDetected {
                kind: "github token",
                field: s("the body"),
            },
            Error::OwnKeyDetected {
                field: s("the attached file notes.txt"),
            },
            Error::usage("bad flag", "use a good one"),
            Error::BadDuration {
                what: "--older-than",
                source: Box::new(crate::duration::DurationError::Overflow(s("99999999w"))),
            },
            Error::MessageNotFound { reference: s("m1") },
            Error::AmbiguousReference {
                reference: s("m"),
                candidates: vec![s("m1"), s("m2")],
            },
            Error::InvalidMessage {
                path: p(),
                reason: s("not valid JSON"),
            },
            Error::AlreadyProcessed { name: s("n") },
            Error::Claimed {
                name: s("n"),
                holder: s("pid 1"),
            },
            Error::Gated {
                name: s("message-20261121T100000000Z-from-api-0badf11e.json"),
                reason: s("handoff"),
                rejected: false,
            },
            Error::Gated {
                name: s("message-20261121T100000000Z-from-api-0badf11e.json"),
                reason: s("handoff"),
                rejected: true,
            },
            Error::NoLogEntries {
                reference: s("zzzz"),
                filtered: false,
            },
            Error::NoLogEntries {
                reference: s("zzzz"),
                filtered: true,
            },
            Error::SentNotFound {
                reference: s("nope"),
                received: false,
            },
            Error::SentNotFound {
                reference: s("m1234abcd"),
                received: true,
            },
            Error::MessageNotFound {
                reference: s("m3f9"),
            },
            Error::NotGated {
                name: s("n"),
                action: "auto_respond",
                rule: s("r"),
            },
            crate::mailbox::AlreadyDecided {
                name: s("n"),
                decision: Some(OrUnknown::Known(ApprovalDecision::Approved)),
                by: s("me"),
                at: s("now"),
            }
            .into(),
            Error::NotAGitRepository {
                path: p(),
                detail: s("no .git"),
            },
            Error::HooksPathInherited { path: p() },
            Error::HookConflict { path: p() },
            Error::SettingsInvalid {
                path: p(),
                detail: s("not JSON"),
            },
            Error::MailStore {
                path: p(),
                op: "open",
                source: Box::new(io::Error::other("damaged")),
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::Spawn(io::Error::from(io::ErrorKind::NotFound)),
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::Failed {
                    command: "fetch",
                    said: s("fatal: no"),
                },
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::KeptMoving {
                    refname: s("refs/aea/mail/web"),
                    attempts: 10,
                },
            },
            Error::SyncFailed {
                remote: s("/srv/mail.git"),
                source: GitError::StaleLock {
                    refname: s("refs/aea/mail/web"),
                    lock: s("/srv/mail.git/refs/aea/mail/web.lock"),
                },
            },
            Error::NoMailRemote,
            Error::RemoteLooksLikeOption { remote: s("-x") },
            Error::RemoteRefused {
                remote: s("ext::sh"),
                why: s("a program"),
            },
            Error::TrustStoreCorrupt {
                path: p(),
                detail: s("bad"),
            },
            Error::NeedsTerminal,
            Error::NoReturnAddress {
                agent: s("stranger"),
                reason: s("unknown"),
            },
            Error::NoSigningKey {
                agent: s("api"),
                path: p(),
            },
            Error::KeyInvalid { path: p() },
            Error::RegistryCorrupt {
                path: p(),
                detail: s("bad"),
            },
            Error::RegistryConflict {
                id: s("api"),
                other: p(),
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::Missing,
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::Yaml {
                    line: Some(3),
                    column: Some(1),
                    message: s("duplicate mapping key"),
                },
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::Yaml {
                    line: None,
                    column: None,
                    message: s("unexpected end of file"),
                },
            },
            Error::ConfigInvalid {
                path: p(),
                problem: ConfigProblem::value("limits.max_recipients", "0 is out of range"),
            },
            Error::PartialDelivery {
                delivered: vec![],
                failed: vec![s("web")],
            },
            Error::Internal { what: s("oops") },
            Error::DemoStepFailed {
                step: s("send"),
                code: ExitCode::Refused,
            },
            Error::NoFreeName { dir: p() },
            Error::MonitorDidNotStart {
                within: Duration::from_secs(5),
            },
            Error::UnknownExecutable,
            Error::NoConfigDir {
                needed_for: ConfigDirUse::SigningKey,
            },
            Error::NoConfigDir {
                needed_for: ConfigDirUse::Registry,
            },
            Error::NoConfigDir {
                needed_for: ConfigDirUse::TrustStore,
            },
            Error::NoConfigDir {
                needed_for: ConfigDirUse::PrivateState,
            },
            Error::AttachmentOutside { path: p() },
            Error::LinkLeavesRepository { path: p() },
            Error::DanglingLink { path: p() },
            Error::MessageTooLarge {
                bytes: 2_000_000,
                limit: 1_000_000,
                repo: p(),
            },
            Error::RegistryMismatch {
                id: s("web"),
                path: p(),
                found: s("api"),
            },
            Error::NoKeyToPin {
                agent: s("web"),
                path: Some(p()),
            },
            Error::NoKeyToPin {
                agent: s("web"),
                path: None,
            },
            Error::BackupExists { path: p() },
            Error::KeyChanged(Box::new(KeyChange {
                agent: s("api"),
                path: p(),
                pinned_fingerprint: s("SHA256:0123456789abcdef"),
                published_fingerprint: s("SHA256:fedcba9876543210"),
                published: s("ed25519:00"),
            })),
        ]
    }

    #[test]
    fn every_variant_has_its_exit_code_and_a_one_line_hint() {
        let mut seen = [false; VARIANTS];
        for e in examples() {
            let (index, code) = expected_code(&e);
            seen[index] = true;
            assert_eq!(exit_code(&e), code, "{e:?}");
            let hint = hint(&e).unwrap_or_default();
            assert!(!hint.trim().is_empty(), "{e:?} has no hint");
            for text in [hint, one_line(&e)] {
                assert!(!text.contains('\n'), "{e:?}: {text:?} is not one line");
            }
        }
        let missing: Vec<usize> = (0..VARIANTS).filter(|&i| !seen[i]).collect();
        assert!(missing.is_empty(), "no example of arms {missing:?}");
    }

    #[test]
    fn an_io_error_without_advice_has_no_hint() {
        let e = Error::io("read", "/x", io::Error::other("odd"));
        assert_eq!(hint(&e), None);
    }

    #[test]
    fn collab_advice_with_data_keeps_its_words() {
        use crate::collab::EventName;
        assert_eq!(
            collab_advice(&Advice::Doc {
                event: EventName::Completed,
                doc: "conclusion.md".into(),
            }),
            "append completed with --doc conclusion.md"
        );
        assert_eq!(
            collab_advice(&Advice::WriteMissing {
                name: Some("review.md".into()),
            }),
            "every collaboration folder has review.md; `aea collab init --resume` writes missing documents"
        );
        assert_eq!(
            collab_advice(&Advice::Plain(
                "in drafting the proposal owner appends proposal_submitted".into()
            )),
            "in drafting the proposal owner appends proposal_submitted"
        );
    }
}
