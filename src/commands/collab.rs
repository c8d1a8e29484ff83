//! `aea collab` (SPEC §17): the Agent Collaboration Protocol's commands
//! over [`crate::collab`], plus what aea adds — each participant an event
//! puts into `waitingFor` is woken by an aea message (type `request`, tag
//! `collab`: the folder and the next action, never the documents' text),
//! and `list` shows the collaborations this agent takes part in.
//!
//! The folder is the record; the mail only wakes. A participant that
//! cannot be reached is a warning: the event stands. Once a command here
//! finds a collaboration ended, its wake-ups in this inbox are marked
//! processed (`aea check` does the same for every collaboration).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::context::Context;
use crate::cli::{
    CollabClassifyArgs, CollabCommand, CollabEventArgs, CollabFolderArgs, CollabInitArgs,
    CollabParticipantArgs, CollabReviewArgs, CollabWaitArgs,
};
use crate::collab::{
    self, Appended, Authorship, Event, EventAuthor, Fields, Folder, Next, Phase, ReadinessItem,
    Review, Schema, Signer,
};
use crate::collab_wake::{CONTEXT_FOLDER, OBJECTIVE_SHOWN, TAG, WAKE_MAX, Waker, Woken, ended};
use crate::error::{Error, ExitCode, Result};
use crate::hints::collab_advice;
use crate::mailbox::Mailbox;
use crate::printer::untrusted_short;
use crate::watch::{DirWatch, Names};
use crate::words::word_enum;

pub(crate) fn run(command: &CollabCommand, ctx: &Context) -> Result<ExitCode> {
    match command {
        CollabCommand::Init(args) => init(args, ctx),
        CollabCommand::Event(args) => event(args, ctx),
        CollabCommand::Review(args) => review(args, ctx),
        CollabCommand::Classify(args) => classify(args, ctx),
        CollabCommand::Next(args) => next(args, ctx),
        CollabCommand::Wait(args) => wait(args, ctx),
        CollabCommand::Validate(args) => validate(args, ctx),
        CollabCommand::List => list(ctx),
    }
}

/// `aea collab init --json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct InitOutput {
    pub folder: PathBuf,
    /// The `initialized` event; `None` with `--resume` on an existing one.
    pub event: Option<Event>,
    pub woken: Vec<Woken>,
}

/// `aea collab event --json` and `aea collab review --json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct EventOutput {
    pub folder: PathBuf,
    #[serde(flatten)]
    pub appended: Appended,
    /// The wake-up mail to each participant put into `waitingFor`.
    pub mailed: Vec<Woken>,
}

/// `aea collab classify --json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ClassifyOutput {
    pub folder: PathBuf,
    /// The item classified (with `--item`), else every item.
    pub items: Vec<ReadinessItem>,
}

word_enum! {
    /// Why `aea collab wait` returned.
    pub(super) enum WaitEvent {
        /// It is the participant's turn.
        Turn = "turn",
        /// The collaboration is completed.
        Completed = "completed",
        /// The collaboration is blocked.
        Blocked = "blocked",
        /// `--timeout` passed first (exit status 4).
        Timeout = "timeout",
    }
}

/// `aea collab wait --json`: one JSON line.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct WaitOutput {
    pub event: WaitEvent,
    #[serde(flatten)]
    pub next: Next,
    /// What can be told of who wrote the last event (the one that handed
    /// the turn over): signed by its author or not.
    pub last_event_author: Option<EventAuthor>,
}

/// `aea collab next --json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct NextOutput {
    #[serde(flatten)]
    pub next: Next,
    /// What can be told of who wrote the last event (the one that handed
    /// the turn over): signed by its author or not.
    pub last_event_author: Option<EventAuthor>,
}

/// `aea collab validate --json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ValidateOutput {
    pub folder: PathBuf,
    /// The ACP schema the folder was judged by (1 or 2); `None` when
    /// protocol.json could not be read or declares one aea does not speak.
    pub schema: Option<Schema>,
    pub valid: bool,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

/// One thing the validator found: the rule, what is wrong, how to fix it.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Finding {
    pub rule: collab::Rule,
    pub message: String,
    pub hint: String,
}

impl Finding {
    fn of(finding: &collab::Finding) -> Self {
        Finding {
            rule: finding.rule,
            message: finding.message.clone(),
            hint: collab_advice(&finding.advice),
        }
    }
}

/// One collaboration of `aea collab list`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct Listed {
    pub folder: PathBuf,
    /// `None` when the folder could not be read (see `error`).
    pub objective: Option<String>,
    pub phase: Option<Phase>,
    pub waiting_for: Vec<String>,
    pub your_turn: bool,
    pub action: Option<String>,
    pub error: Option<String>,
}

/// `aea collab list --json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(super) struct ListOutput {
    pub agent: String,
    pub collaborations: Vec<Listed>,
}

/// This repository's mailbox and agent id.
fn me(ctx: &Context) -> Result<(Mailbox, String)> {
    let mailbox = ctx.mailbox()?;
    let id = mailbox.agent_id()?;
    Ok((mailbox, id))
}

/// `folder`, the events appended through it signed with `id`'s key (see
/// [`collab::SIDECAR`]); without the key, says on stderr that they will
/// not be. The signer tells afterwards what went wrong with a signature.
fn signing(folder: Folder, id: &str, ctx: &Context) -> (Folder, Option<Arc<Signer>>) {
    match ctx.signing_key(id) {
        Ok(key) => {
            let signer = Arc::new(Signer::new(id, key));
            (folder.signed_by(signer.clone()), Some(signer))
        }
        Err(e) => {
            ctx.printer.warn(format_args!(
                "the event will not be signed ({}): nothing will show that {id} wrote it",
                crate::error::one_line(&e)
            ));
            (folder, None)
        }
    }
}

/// Says on stderr when the event just appended was left unsigned.
fn warn_unsigned(signer: Option<&Signer>, ctx: &Context) {
    if let Some(problem) = signer.and_then(Signer::problem) {
        ctx.printer.warn(format_args!(
            "the event stands, but it is not signed: {}",
            untrusted_short(&problem, 300)
        ));
    }
}

/// What can be told of who wrote the last event of `folder`, by the keys
/// this repository pinned; `None` when the log holds none or cannot be read.
fn last_author(folder: &Folder, ctx: &Context) -> Option<EventAuthor> {
    let keyring = ctx.keyring();
    folder.authors(&|id| keyring.key_for(id)).ok()?.events.pop()
}

/// A line about the author of `last`, the event that handed the turn
/// over, when it is not signed by its author: `None` when it is.
fn author_note(last: &EventAuthor) -> Option<String> {
    let what = format!(
        "{} {} by {}",
        last.seq.map_or("?".to_string(), |s| s.to_string()),
        last.event.map_or("?", |e| e.as_str()),
        untrusted_short(last.from.as_deref().unwrap_or("?"), 80)
    );
    let from = untrusted_short(last.from.as_deref().unwrap_or("its author"), 80);
    match &last.authorship {
        Authorship::Signed { .. } => None,
        Authorship::Unsigned => Some(format!(
            "the last event ({what}) is unsigned: nothing shows that {from} wrote it (another ACP tool, or someone by hand)"
        )),
        Authorship::Unverifiable { signer } => Some(format!(
            "the last event ({what}) is signed by {}, whose key is not pinned here: who wrote it cannot be told",
            untrusted_short(signer, 80)
        )),
        Authorship::Forged { reason } => Some(format!(
            "the last event ({what}) carries a FORGED signature ({}): {from} may not have written it; `aea collab validate` says more",
            untrusted_short(reason, 200)
        )),
    }
}

/// This repository's mailbox, refusing a `--participant` that is not its
/// agent: one agent never acts for another.
fn acting(who: &CollabParticipantArgs, ctx: &Context) -> Result<(Mailbox, String, Folder)> {
    let (mailbox, id) = me(ctx)?;
    if let Some(named) = who.participant.as_deref().filter(|p| *p != id) {
        return Err(Error::usage(
            format!("--participant {named} is not this repository's agent ({id})"),
            format!(
                "act as {id} here (leave --participant out); {named} acts from its own repository"
            ),
        ));
    }
    Ok((mailbox, id, folder(&who.folder, ctx)))
}

/// The folder `path` names, absolute and with `.` and `..` taken out
/// lexically (the name the mail and `list` show; a symlinked folder is
/// still refused by the folder's own checks).
fn folder(path: &Path, ctx: &Context) -> Folder {
    Folder::new(lexical(&ctx.cwd.join(path)))
}

/// `path` with `.` and `..` taken out, without asking the file system.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

/// Remembers `folder` for `aea collab list`; a failure only warns.
fn remember(mailbox: &Mailbox, folder: &Folder, ctx: &Context) {
    if let Err(e) = mailbox.records().remember_collab(folder.path()) {
        ctx.printer.warn(format_args!(
            "could not remember the collaboration for `aea collab list`: {}",
            crate::error::one_line(&e)
        ));
    }
}

fn init(args: &CollabInitArgs, ctx: &Context) -> Result<ExitCode> {
    let (mailbox, id) = me(ctx)?;
    if !args.participants.iter().any(|p| p.trim() == id) {
        return Err(Error::usage(
            format!("this repository's agent ({id}) is not among the participants"),
            format!("name yourself with --participant {id} (first if you own the proposal)"),
        ));
    }
    let init = collab::Init {
        participants: args.participants.clone(),
        objective: args.objective.clone(),
        completion_gates: args.completion.clone(),
        schema: if args.schema == 1 {
            Schema::One
        } else {
            Schema::Two
        },
        primary_type: args.primary_deliverable_type,
        primary_file: args.primary_deliverable_file.clone(),
        primary_checks: args.primary_deliverable_checks.clone(),
        deliverables_dir: args.deliverables_dir.clone(),
        resume: args.resume,
    };
    // Resuming writes no event.
    let (folder, signer) = if args.resume {
        (folder(&args.folder, ctx), None)
    } else {
        signing(folder(&args.folder, ctx), &id, ctx)
    };
    let event = folder.init(&init, ctx.rt.now())?;
    warn_unsigned(signer.as_deref(), ctx);
    remember(&mailbox, &folder, ctx);
    if event.is_none() {
        warn_invalid(&folder, ctx);
    }
    // `initialized` puts the proposal owner into waitingFor.
    let woken = match &event {
        Some(event) if event.from != id => wake(
            &mailbox,
            &id,
            &folder,
            std::slice::from_ref(&event.from),
            ctx,
        ),
        _ => Vec::new(),
    };
    if ctx.printer.json() {
        ctx.printer.value(&InitOutput {
            folder: folder.path().to_path_buf(),
            event,
            woken,
        });
        return Ok(ExitCode::Success);
    }
    match &event {
        Some(event) => ctx.printer.line(format_args!(
            "started a collaboration (ACP schema {}) in {}: {} owns the proposal (drafting)",
            init.schema.number(),
            folder.path().display(),
            untrusted_short(&event.from, 80)
        )),
        None => ctx.printer.line(format_args!(
            "resumed the collaboration in {}: missing documents written",
            folder.path().display()
        )),
    }
    print_woken(&woken, ctx);
    Ok(ExitCode::Success)
}

/// After `init --resume`: a folder kept as found may break the protocol
/// (no log, a log another tool left broken); say so on stderr.
fn warn_invalid(folder: &Folder, ctx: &Context) {
    let errors = match folder.validate() {
        Ok(report) => report.errors,
        Err(e) => {
            ctx.printer.warn(format_args!(
                "the folder cannot be validated: {}",
                untrusted_short(&crate::error::one_line(&e), 300)
            ));
            return;
        }
    };
    if let Some(first) = errors.first() {
        ctx.printer.warn(format_args!(
            "the folder is not a valid collaboration ({} error(s), first: {}); `aea collab validate` lists them",
            errors.len(),
            untrusted_short(&first.message, 200)
        ));
    }
}

fn event(args: &CollabEventArgs, ctx: &Context) -> Result<ExitCode> {
    let (mailbox, id, folder) = acting(&args.who, ctx)?;
    let fields = Fields {
        doc: args.doc.clone(),
        reply_to: args.reply_to,
        role: args.role,
        sha256: args.sha256.clone(),
    };
    let (folder, signer) = signing(folder, &id, ctx);
    let appended = folder.append_fields(&id, args.event, &args.summary, &fields, ctx.rt.now())?;
    warn_unsigned(signer.as_deref(), ctx);
    Ok(appended_out(&mailbox, &id, &folder, appended, ctx))
}

fn review(args: &CollabReviewArgs, ctx: &Context) -> Result<ExitCode> {
    let (mailbox, id, folder) = acting(&args.who, ctx)?;
    let review = Review {
        summary: args.summary.clone(),
        position: args.position.clone(),
        concerns: args.concerns.clone(),
        required_changes: args.required_changes.clone(),
        questions: args.questions.clone(),
    };
    let (folder, signer) = signing(folder, &id, ctx);
    let appended = folder.review(&id, args.reply_to, &review, ctx.rt.now())?;
    warn_unsigned(signer.as_deref(), ctx);
    Ok(appended_out(&mailbox, &id, &folder, appended, ctx))
}

/// Wakes who the append put into `waitingFor`, then prints.
fn appended_out(
    mailbox: &Mailbox,
    id: &str,
    folder: &Folder,
    appended: Appended,
    ctx: &Context,
) -> ExitCode {
    remember(mailbox, folder, ctx);
    // This repository ended it: its own wake-ups of it are over.
    if ended(Some(appended.phase)) {
        ctx.retire_ended_collabs(mailbox, Some(folder.path()), false);
    }
    let others: Vec<String> = appended
        .woken
        .iter()
        .filter(|w| *w != id)
        .cloned()
        .collect();
    let mailed = wake(mailbox, id, folder, &others, ctx);
    if ctx.printer.json() {
        ctx.printer.value(&EventOutput {
            folder: folder.path().to_path_buf(),
            appended,
            mailed,
        });
        return ExitCode::Success;
    }
    let waiting = if appended.waiting_for.is_empty() {
        "no one".to_string()
    } else {
        untrusted_short(&appended.waiting_for.join(", "), 200)
    };
    ctx.printer.line(format_args!(
        "appended {} (seq {}); phase {}, waiting for {waiting}",
        appended.event.event, appended.event.seq, appended.phase
    ));
    print_woken(&mailed, ctx);
    ExitCode::Success
}

fn print_woken(woken: &[Woken], ctx: &Context) {
    let (shown, skipped) = woken.split_at(woken.len().min(WAKE_MAX));
    for w in shown {
        match (&w.message_id, &w.error) {
            (Some(id), None) if w.mailed => ctx.printer.line(format_args!(
                "woke {} by mail ({}, id {id})",
                untrusted_short(&w.participant, 80),
                w.short_ref.as_deref().unwrap_or_default()
            )),
            (_, error) => ctx.printer.line(format_args!(
                "could not wake {} by mail: {}",
                untrusted_short(&w.participant, 80),
                untrusted_short(error.as_deref().unwrap_or("not delivered"), 300)
            )),
        }
    }
    if !skipped.is_empty() {
        ctx.printer.line(format_args!(
            "did not wake {} more participant(s) by mail (at most {WAKE_MAX} per event)",
            skipped.len()
        ));
    }
}

/// Wakes each of `participants` by mail from `sender_id`
/// ([`collab_wake`]), saying on stderr who was not reached: the event
/// stands.
fn wake(
    mailbox: &Mailbox,
    sender_id: &str,
    folder: &Folder,
    participants: &[String],
    ctx: &Context,
) -> Vec<Woken> {
    if participants.is_empty() {
        return Vec::new();
    }
    // Once per command: `trusted` says on stderr what it left out.
    // A collaboration's participants are named in its folder: one found
    // nowhere here is behind the remote, if there is one.
    let via_remote = if mailbox
        .config()
        .is_ok_and(|config| ctx.trusted(mailbox, config).sync_remote.is_some())
    {
        crate::route::ViaRemote::Asked
    } else {
        crate::route::ViaRemote::None
    };
    let key = ctx.signing_key(sender_id);
    let waker = Waker {
        mailbox,
        sender_id,
        key: key.as_ref().map_err(|e| crate::error::one_line(e)),
        cwd: &ctx.cwd,
        registry: ctx.registry(),
        via_remote,
        rt: &ctx.rt,
        keep_send_record: ctx.keep_send_record,
    };
    let woke = waker.wake(folder, participants);
    let mut woken = Vec::new();
    for attempt in woke.tried {
        for warning in &attempt.warnings {
            ctx.printer.warn(warning);
        }
        if let Some(error) = &attempt.woken.error {
            let p = untrusted_short(&attempt.woken.participant, 80);
            ctx.printer.warn(format_args!(
                "{p} was not woken by mail ({}); the event stands, tell {p} another way",
                untrusted_short(error, 300)
            ));
        }
        woken.push(attempt.woken);
    }
    if !woke.skipped.is_empty() {
        ctx.printer.warn(format_args!(
            "{} more participant(s) were not woken by mail (aea mails at most {WAKE_MAX} per event); the event stands, tell them another way",
            woke.skipped.len()
        ));
        woken.extend(woke.skipped);
    }
    woken
}

fn classify(args: &CollabClassifyArgs, ctx: &Context) -> Result<ExitCode> {
    let folder = folder(&args.folder, ctx);
    let items = match (args.item, args.class) {
        (Some(number), Some(class)) => {
            if number == 0 {
                return Err(Error::usage(
                    "--item counts from 1",
                    "`aea collab classify --folder F` lists the items with their numbers",
                ));
            }
            vec![folder.classify(number, class, args.reason.as_deref())?]
        }
        _ => folder.readiness()?.items,
    };
    if ctx.printer.json() {
        ctx.printer.value(&ClassifyOutput {
            folder: folder.path().to_path_buf(),
            items,
        });
        return Ok(ExitCode::Success);
    }
    if args.item.is_some() {
        for item in &items {
            ctx.printer.line(format_args!(
                "item {} is now [{}]: {}",
                args.item.unwrap_or_default(),
                item.class,
                untrusted_short(&item.text, 100)
            ));
        }
    } else if items.is_empty() {
        ctx.printer.line("readiness.md lists no classified items");
    } else {
        for (i, item) in items.iter().enumerate() {
            ctx.printer.line(format_args!(
                "{:>3}. [{}] {}",
                i + 1,
                item.class,
                untrusted_short(&item.text, 100)
            ));
        }
    }
    Ok(ExitCode::Success)
}

fn next(args: &CollabParticipantArgs, ctx: &Context) -> Result<ExitCode> {
    let (mailbox, id, folder) = acting(args, ctx)?;
    let next = folder.next(&id)?;
    remember(&mailbox, &folder, ctx);
    if ended(next.phase) {
        ctx.retire_ended_collabs(&mailbox, Some(folder.path()), false);
    }
    let last_event_author = last_author(&folder, ctx);
    if ctx.printer.json() {
        ctx.printer.value(&NextOutput {
            next,
            last_event_author,
        });
    } else {
        print_next(&next, last_event_author.as_ref(), ctx);
    }
    Ok(ExitCode::Success)
}

fn print_next(next: &Next, author: Option<&EventAuthor>, ctx: &Context) {
    let p = &ctx.printer;
    if let Some(objective) = &next.objective {
        p.line(format_args!(
            "objective:   {}",
            untrusted_short(objective, 100)
        ));
    }
    p.line(format_args!(
        "phase:       {}",
        next.phase.map_or("not started", |p| p.as_str())
    ));
    if let Some(owner) = &next.proposal_owner {
        p.line(format_args!("owner:       {}", untrusted_short(owner, 80)));
    }
    p.line(format_args!(
        "waiting for: {}",
        untrusted_short(&next.waiting_for.join(", "), 200)
    ));
    if let Some(last) = &next.last_event {
        p.line(format_args!(
            "last event:  {} {} by {}: {}",
            last.seq.map_or("?".to_string(), |s| s.to_string()),
            untrusted_short(last.event.as_deref().unwrap_or("?"), 40),
            untrusted_short(last.from.as_deref().unwrap_or("?"), 80),
            untrusted_short(last.summary.as_deref().unwrap_or(""), 100),
        ));
    }
    if let Some(note) = author.and_then(author_note) {
        p.line(format_args!("signed:      no — {note}"));
    }
    p.line(format_args!(
        "your turn:   {}",
        if next.your_turn { "yes" } else { "no" }
    ));
    p.line(format_args!(
        "next:        {}",
        untrusted_short(&next.action, 400)
    ));
}

fn wait(args: &CollabWaitArgs, ctx: &Context) -> Result<ExitCode> {
    let (mailbox, id, folder) = acting(&args.who, ctx)?;
    let timeout = Some(args.timeout.std()).filter(|t| !t.is_zero());
    // Watch first, then look: an event in between is seen either way.
    let watch = DirWatch::watching(&[folder.path()], Names::Matching(collab::turn_file));
    let mut next = folder.next(&id)?;
    remember(&mailbox, &folder, ctx);
    if !next.settled() {
        ctx.printer.err_line(format_args!(
            "aea collab wait: waiting for {id}'s turn in {}",
            folder.path().display()
        ));
    }
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    while !next.settled() {
        let left = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => {
                    print_wait(WaitEvent::Timeout, next, &folder, ctx);
                    return Ok(ExitCode::Timeout);
                }
            },
            // Without a deadline, wake now and then to notice a lost watch.
            None => Duration::from_secs(60),
        };
        // A watch that could not be set up polls; either way, look again.
        watch.wait(left.min(Duration::from_secs(60)));
        next = folder.next(&id)?;
    }
    if ended(next.phase) {
        ctx.retire_ended_collabs(&mailbox, Some(folder.path()), false);
    }
    let why = match next.phase {
        Some(Phase::Completed) if !next.your_turn => WaitEvent::Completed,
        Some(Phase::Blocked) if !next.your_turn => WaitEvent::Blocked,
        _ => WaitEvent::Turn,
    };
    print_wait(why, next, &folder, ctx);
    Ok(ExitCode::Success)
}

fn print_wait(why: WaitEvent, next: Next, folder: &Folder, ctx: &Context) {
    let last_event_author = last_author(folder, ctx);
    if ctx.printer.json() {
        ctx.printer.value_line(&WaitOutput {
            event: why,
            next,
            last_event_author,
        });
        return;
    }
    match why {
        WaitEvent::Timeout => ctx
            .printer
            .line("timed out: still not your turn (`aea collab next` says who is waited for)"),
        WaitEvent::Turn => {
            ctx.printer.line(format_args!(
                "your turn ({}): {}",
                next.phase.map_or("not started", |p| p.as_str()),
                untrusted_short(&next.action, 400)
            ));
            if let Some(note) = last_event_author.as_ref().and_then(author_note) {
                ctx.printer.line(format_args!("note: {note}"));
            }
        }
        WaitEvent::Completed | WaitEvent::Blocked => {
            ctx.printer.line(format_args!("the collaboration is {why}"));
        }
    }
}

fn validate(args: &CollabFolderArgs, ctx: &Context) -> Result<ExitCode> {
    let folder = folder(&args.folder, ctx);
    let mut report = folder.validate()?;
    // Who wrote each event, by the keys this repository pinned.
    let keyring = ctx.keyring();
    let (forged, unsigned) = collab::author_findings(&folder.authors(&|id| keyring.key_for(id))?);
    report.errors.extend(forged);
    // The protocol's own warnings make a folder need attention; events
    // that merely carry no signature aea can check are named, not held
    // against it: every other ACP tool writes them that way.
    let valid = report.is_valid() && report.warnings.is_empty();
    let unproven = unsigned.len();
    report.warnings.extend(unsigned);
    if ctx.printer.json() {
        ctx.printer.value(&ValidateOutput {
            folder: folder.path().to_path_buf(),
            schema: report.schema,
            valid,
            errors: report.errors.iter().map(Finding::of).collect(),
            warnings: report.warnings.iter().map(Finding::of).collect(),
        });
    } else {
        for (kind, findings) in [("error", &report.errors), ("warning", &report.warnings)] {
            for f in findings {
                ctx.printer.line(format_args!(
                    "{kind}: {} (rule {})",
                    untrusted_short(&f.message, 300),
                    f.rule
                ));
                ctx.printer.line(format_args!(
                    "  fix: {}",
                    untrusted_short(&collab_advice(&f.advice), 300)
                ));
            }
        }
        if valid {
            ctx.printer.line(format_args!(
                "{}: a valid collaboration folder (ACP schema {}){}",
                folder.path().display(),
                report.schema.map_or(0, Schema::number),
                match unproven {
                    0 => String::new(),
                    n => format!("; {n} warning(s) about who wrote its events, named above"),
                }
            ));
        } else {
            ctx.printer.line(format_args!(
                "{}: {} error(s), {} warning(s)",
                folder.path().display(),
                report.errors.len(),
                report.warnings.len()
            ));
        }
    }
    Ok(if valid {
        ExitCode::Success
    } else {
        ExitCode::Attention
    })
}

/// The folders remembered, and those named by collab mail in the inbox
/// (with `true`: remembered only once found to be a collaboration of this
/// agent, since anyone can send mail naming any path).
fn known_folders(mailbox: &Mailbox) -> Result<Vec<(PathBuf, bool)>> {
    let folders = mailbox.records().collabs()?;
    let mut mailed = Vec::new();
    let entries = mailbox.inbox().unprocessed()?;
    for entry in &entries {
        let Some(message) = entry.valid() else {
            continue;
        };
        if !message.metadata.tags.iter().any(|t| t == TAG) {
            continue;
        }
        let Some(path) = message
            .message
            .context
            .get(CONTEXT_FOLDER)
            .and_then(serde_json::Value::as_str)
        else {
            continue;
        };
        let path = lexical(Path::new(path));
        if path.is_absolute() && !folders.contains(&path) && !mailed.contains(&path) {
            mailed.push(path);
        }
    }
    Ok(folders
        .into_iter()
        .map(|f| (f, false))
        .chain(mailed.into_iter().map(|f| (f, true)))
        .collect())
}

fn list(ctx: &Context) -> Result<ExitCode> {
    let (mailbox, id) = me(ctx)?;
    let mut collaborations = Vec::new();
    for (path, mailed) in known_folders(&mailbox)? {
        let folder = Folder::new(&path);
        let listed = match folder.next(&id) {
            Ok(next) => {
                if mailed && let Err(e) = mailbox.records().remember_mailed_collab(&path) {
                    ctx.printer.warn(format_args!(
                        "could not remember the collaboration for `aea collab list`: {}",
                        crate::error::one_line(&e)
                    ));
                }
                Listed {
                    folder: path,
                    objective: next.objective.clone(),
                    phase: next.phase,
                    waiting_for: next.waiting_for.clone(),
                    your_turn: next.your_turn,
                    action: Some(next.action.clone()),
                    error: None,
                }
            }
            // Not (or no longer) a participant there: not ours to list.
            Err(e)
                if collab::Refusal::of(&e).is_some_and(|r| r.rule == collab::Rule::Participant) =>
            {
                continue;
            }
            Err(e) => Listed {
                folder: path,
                objective: None,
                phase: None,
                waiting_for: Vec::new(),
                your_turn: false,
                action: None,
                error: Some(crate::error::one_line(&e)),
            },
        };
        collaborations.push(listed);
    }
    if collaborations.iter().any(|c| ended(c.phase)) {
        ctx.retire_ended_collabs(&mailbox, None, false);
    }
    if ctx.printer.json() {
        ctx.printer.value(&ListOutput {
            agent: id,
            collaborations,
        });
        return Ok(ExitCode::Success);
    }
    if collaborations.is_empty() {
        ctx.printer.line(format_args!(
            "{id} takes part in no collaboration known here"
        ));
    }
    for c in &collaborations {
        let state = match (&c.error, c.phase) {
            (Some(error), _) => format!("unreadable: {}", untrusted_short(error, 200)),
            (None, Some(Phase::Completed | Phase::Blocked)) => {
                c.phase.map_or(String::new(), |p| p.as_str().to_string())
            }
            (None, phase) if c.your_turn => format!(
                "YOUR TURN ({})",
                phase.map_or("not started", |p| p.as_str())
            ),
            (None, phase) => format!(
                "{} — waiting for {}",
                phase.map_or("not started", |p| p.as_str()),
                untrusted_short(&c.waiting_for.join(", "), 100)
            ),
        };
        ctx.printer.line(format_args!(
            "{}  {state}  {}",
            untrusted_short(&c.folder.display().to_string(), 200),
            untrusted_short(c.objective.as_deref().unwrap_or(""), OBJECTIVE_SHOWN)
        ));
    }
    Ok(ExitCode::Success)
}
