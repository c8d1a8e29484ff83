//! What a report of the unprocessed mail is worked out from, and what of
//! an earlier one serves again: the whole report, the page `check`
//! prints, the lines of files that did not change, and a first page that
//! judges only what it lists. Also what a listing notes on the way (mail
//! gone without aea, housekeeping due).

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{Invalid, Item, Report, build_report, unread};
use crate::commands::Context;
use crate::error::Result;
use crate::housekeeping;
use crate::judge::{Judge, Warn};
use crate::mailbox::{Entry, Mailbox};
use crate::seen::{Memos, Parts, Stamp, Watched};

/// The name the report of the unprocessed mail is remembered under.
const REPORT_MEMO: &str = "report.json";

/// A report as remembered, with the warnings working it out gave: a
/// command that shows warnings says them again from here.
#[derive(Serialize, Deserialize)]
struct Remembered {
    report: Report,
    warned: bool,
    #[serde(default)]
    warnings: Vec<String>,
}

/// The report of the unprocessed mail (as `check` prints it), remembered
/// from an earlier command when nothing it was worked out from moved
/// ([`crate::seen`]); otherwise listed, read and judged, and remembered.
/// `judge` makes the judge on a miss, with where it should warn; `quiet`
/// drops the warnings (hooks) instead of printing them.
/// The remembered report, if it is still good and working it out printed
/// no warning: then the config it depends on (stamped with it) compiled,
/// and has not changed since.
pub(crate) fn remembered_clean(mailbox: &Mailbox, ctx: &Context) -> Result<Option<Report>> {
    mailbox.check_state()?;
    let now = ctx
        .rt
        .now()
        .timestamp_nanos_opt()
        .map_or(i128::MAX, i128::from);
    Ok(ctx
        .memos(mailbox)
        .and_then(|memos| memos.recall::<Remembered>(REPORT_MEMO, now))
        .filter(|r| !r.warned)
        .map(|r| r.report))
}

/// Makes the quiet marker anew once the pre-commit gate found the inbox
/// quiet from the remembered report and none of its files staged: the
/// script compares the marker with git's index too, and until the marker
/// is newer it asks git what is staged at every commit (or, when git
/// names something under `.aea/`, starts aea). Made only while that
/// report is still good, and checked against git's own index once made
/// (see [`Memos::set_quiet`]).
pub(crate) fn renew_quiet(mailbox: &Mailbox, ctx: &Context) {
    let Some(memos) = ctx.memos(mailbox) else {
        return;
    };
    let now = ctx
        .rt
        .now()
        .timestamp_nanos_opt()
        .map_or(i128::MAX, i128::from);
    let Some(parts) = memos.recall_parts::<Remembered>(REPORT_MEMO, now) else {
        return;
    };
    let report = &parts.value.report;
    let quiet = !parts.value.warned
        && report.messages.is_empty()
        && report.invalid.is_empty()
        && report.processed_without_approval.is_empty()
        && report.not_read == 0
        && parts.paths.iter().all(|(_, _, good)| *good);
    if quiet {
        let watched = Watched::of(
            parts.taken,
            parts.paths.into_iter().map(|(p, s, _)| (p, s)).collect(),
        );
        memos.set_quiet(true, &watched, || {
            crate::hook_gate::staged_state(mailbox.dir(), None).is_empty()
        });
    }
}

/// The page a `check` without `--all` printed, remembered with what it
/// shows: the inbox folder, the state and identity a report depends on,
/// and the files on the page (not the rest: with thousands waiting,
/// stamping each would cost more than the answer saves). A file past the
/// page rewritten in place shows at the next change of the folder; every
/// command that acts on a message reads it again.
#[derive(Serialize, Deserialize)]
struct Paged {
    limit: usize,
    remembered: Remembered,
}

/// The name the page of `check` is remembered under.
const PAGE_MEMO: &str = "page.json";

impl Remembered {
    /// Whether this answer serves a command: one that shows warnings needs
    /// to know them (a memo from before they were kept only says that it
    /// warned). Says them unless `quiet`.
    fn serves(&self, quiet: bool, ctx: &Context) -> bool {
        if !(quiet || !self.warned || !self.warnings.is_empty()) {
            return false;
        }
        if !quiet {
            for text in &self.warnings {
                ctx.printer.warn(text);
            }
        }
        true
    }
}

/// The report of the unprocessed mail, as [`unprocessed_report`] works it
/// out, paged to the first `limit` messages and invalid files; remembered
/// as that page, which the next `check` asking for it answers from while
/// nothing it shows moved.
pub(crate) fn unprocessed_page(
    mailbox: &Mailbox,
    ctx: &Context,
    limit: usize,
    judge: impl FnOnce(Warn) -> Judge,
) -> Result<Report> {
    mailbox.check_state()?;
    let memos = ctx.memos(mailbox);
    let now_ns = ctx
        .rt
        .now()
        .timestamp_nanos_opt()
        .map_or(i128::MAX, i128::from);
    if let Some(memos) = &memos
        && let Some(paged) = memos.recall::<Paged>(PAGE_MEMO, now_ns)
        && paged.limit == limit
        && paged.remembered.serves(false, ctx)
    {
        return Ok(paged.remembered.report);
    }
    let (mut report, made) =
        report_and_sources(mailbox, ctx, false, judge, memos.as_ref(), Some(limit))?;
    report.page(limit);
    if let (Some(memos), Some(made)) = (&memos, made) {
        let shown: HashSet<PathBuf> = report
            .messages
            .iter()
            .map(|m| mailbox.dir().join(&m.file))
            .chain(report.invalid.iter().map(|i| mailbox.dir().join(&i.file)))
            .collect();
        let watched = made
            .watched
            .keeping(|p| shown.contains(p) || !is_inbox_file(mailbox, p));
        let paged = Paged {
            limit,
            remembered: Remembered {
                report,
                warned: made.warned,
                warnings: made.warnings,
            },
        };
        memos.keep(PAGE_MEMO, watched, made.valid_until, &paged);
        return Ok(paged.remembered.report);
    }
    Ok(report)
}

/// Whether `path` is a message file at the top of the inbox.
fn is_inbox_file(mailbox: &Mailbox, path: &std::path::Path) -> bool {
    path.parent() == Some(mailbox.dir())
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(crate::message::is_message_file_name)
}

/// What a report was worked out from, for a memo of part of it.
struct Sources {
    watched: Watched,
    valid_until: Option<i128>,
    warned: bool,
    warnings: Vec<String>,
}

pub(crate) fn unprocessed_report(
    mailbox: &Mailbox,
    ctx: &Context,
    quiet: bool,
    judge: impl FnOnce(Warn) -> Judge,
) -> Result<Report> {
    // Unsound state folders stop every reader, remembered or not.
    mailbox.check_state()?;
    let memos = ctx.memos(mailbox);
    Ok(report_and_sources(mailbox, ctx, quiet, judge, memos.as_ref(), None)?.0)
}

/// [`unprocessed_report`], with what the report was worked out from when
/// it is at hand.
fn report_and_sources(
    mailbox: &Mailbox,
    ctx: &Context,
    quiet: bool,
    judge: impl FnOnce(Warn) -> Judge,
    memos: Option<&Memos>,
    page: Option<usize>,
) -> Result<(Report, Option<Sources>)> {
    let now = ctx.rt.now();
    let now_ns = now.timestamp_nanos_opt().map_or(i128::MAX, i128::from);
    let parts = memos.and_then(|m| m.recall_parts::<Remembered>(REPORT_MEMO, now_ns));
    let parts = match parts {
        Some(parts) if parts.paths.iter().all(|(_, _, good)| *good) => {
            if parts.value.serves(quiet, ctx) {
                let sources = Sources {
                    watched: Watched::of(
                        parts.taken,
                        parts.paths.into_iter().map(|(p, s, _)| (p, s)).collect(),
                    ),
                    valid_until: parts.valid_until,
                    warned: parts.value.warned,
                    warnings: parts.value.warnings.clone(),
                };
                return Ok((parts.value.report, Some(sources)));
            }
            None
        }
        other => other,
    };
    let mut watched = Watched::start();
    mailbox.inbox().watch_listing(&mut watched);
    ctx.watch_identity(&mut watched);
    // What the last report knew of the files that have not changed since
    // is not read, verified or judged again.
    let earlier = parts.and_then(|parts| Earlier::of(mailbox, parts));
    // With nothing to start from, a page needs the signatures and
    // decisions of the messages on it only: the rest are read for their
    // place in the order, and counted.
    let later = earlier.is_none() && page.is_some();
    let (mut entries, kept) = match earlier {
        Some(earlier) => earlier.listing(mailbox)?,
        None => {
            mailbox.inbox().verify_later(later);
            let entries = mailbox.inbox().unprocessed();
            mailbox.inbox().verify_later(false);
            (entries?, Kept::default())
        }
    };
    let past = match page {
        Some(limit) if later => Past::split(mailbox, &mut entries, limit),
        _ => Past::default(),
    };
    housekeep_if_due(mailbox, ctx, quiet);
    let warned = Rc::new(Cell::new(false));
    let warnings = Rc::new(std::cell::RefCell::new(Vec::new()));
    let warn: Warn = {
        let warned = warned.clone();
        let warnings = warnings.clone();
        let printer = ctx.printer;
        Rc::new(move |text: &str| {
            warned.set(true);
            warnings.borrow_mut().push(text.to_string());
            if !quiet {
                printer.warn(text);
            }
        })
    };
    let judge = judge(warn);
    let mut report = build_report(mailbox, &entries, &judge, ctx);
    let valid_until_kept = kept.valid_until;
    kept.join(&mut report, &mut watched);
    past.count(&mut report);
    if report.not_read == 0 {
        let waiting = report
            .messages
            .iter()
            .map(|m| {
                let key = crate::shortref::key(Some((&m.from, &m.id)), &m.file);
                (m.file.as_str(), key)
            })
            .chain(past.waiting());
        note_vanished(mailbox, waiting, quiet, ctx);
    }
    // A report that left files unread says nothing of them: never
    // remembered, never quiet.
    let memos = memos.filter(|_| report.not_read == 0);
    let Some(memos) = memos else {
        mailbox
            .inbox()
            .index_entries(entries.iter().chain(&past.entries));
        return Ok((report, None));
    };
    // Index the ids of mail not in the last report (that was indexed then).
    let before: HashSet<String> = memos
        .peek::<Remembered>(REPORT_MEMO)
        .map(|r| unread(&r.report).into_iter().map(|u| u.name).collect())
        .unwrap_or_default();
    mailbox.inbox().index_entries(
        entries
            .iter()
            .chain(&past.entries)
            .filter(|e| !before.contains(&e.name)),
    );
    for entry in &entries {
        watched.add(entry.path.clone());
    }
    // `expired` flips when the first message expires.
    let valid_until = entries
        .iter()
        .filter_map(|e| crate::message::parse_time(e.valid()?.expires_at.as_deref()?))
        .filter(|t| *t > now)
        .min()
        .and_then(|t| t.timestamp_nanos_opt())
        .map(i128::from)
        .into_iter()
        .chain(valid_until_kept)
        .min();
    // Quiet lets the pre-commit script skip aea: not while anything was
    // said about the inbox (a config that does not read, on which the
    // gate blocks, is said in a warning), nor while gated mail is hidden
    // by a marker aea did not write (the gate blocks on it).
    let quiet = report.messages.is_empty()
        && report.invalid.is_empty()
        && past.entries.is_empty()
        && report.processed_without_approval.is_empty();
    memos.set_quiet(quiet && !warned.get(), &watched, || {
        crate::hook_gate::staged_state(mailbox.dir(), None).is_empty()
    });
    let remembered = Remembered {
        report,
        warned: warned.get(),
        warnings: warnings.take(),
    };
    let sources = Sources {
        watched: watched.keeping(|_| true),
        valid_until,
        warned: remembered.warned,
        warnings: remembered.warnings.clone(),
    };
    // A report with messages left unjudged is no report of the inbox.
    if past.entries.is_empty() {
        memos.keep(REPORT_MEMO, watched, valid_until, &remembered);
    }
    Ok((remembered.report, Some(sources)))
}

/// The messages past a page, when only the page was judged: read, in
/// order, neither verified nor judged.
#[derive(Default)]
struct Past {
    entries: Vec<Entry>,
    deferred: usize,
}

impl Past {
    /// Verifies `entries` (sorted for processing, signatures unchecked)
    /// in order until `limit` messages hold, deferred mail last, and takes
    /// the messages after those out: `entries` keeps the page and every
    /// invalid file, a forged one among them.
    fn split(mailbox: &Mailbox, entries: &mut Vec<Entry>, limit: usize) -> Past {
        let deferrals = mailbox.records().deferrals().unwrap_or_default();
        let deferred = |e: &Entry| deferrals.contains_key(&e.name);
        // Deferred mail is listed after the rest: it comes last here too.
        entries.sort_by_key(|e| e.valid().is_some() && deferred(e));
        let mut judged = 0;
        let mut past = Past::default();
        let mut kept = Vec::with_capacity(entries.len().min(limit * 2));
        for mut entry in entries.drain(..) {
            if entry.valid().is_none() {
                kept.push(entry);
                continue;
            }
            if judged < limit {
                mailbox.inbox().verify_entry(&mut entry);
                judged += usize::from(entry.valid().is_some());
                kept.push(entry);
            } else {
                past.deferred += usize::from(deferred(&entry));
                past.entries.push(entry);
            }
        }
        crate::mailbox::sort_for_processing(&mut kept);
        *entries = kept;
        past
    }

    /// Counts the messages past the page in `report`'s totals: they wait,
    /// unjudged, and come after the page.
    fn count(&self, report: &mut Report) {
        let n = self.entries.len();
        if n > 0 {
            relabel(report, &crate::mailbox::keys_and_names(self.entries.iter()));
        }
        report.unprocessed += n;
        report.deferred += self.deferred;
        report.unjudged = n;
        report.more += n;
    }

    /// Each message past the page as (file, reference key).
    fn waiting(&self) -> impl Iterator<Item = (&str, String)> {
        self.entries
            .iter()
            .filter(|e| e.valid().is_some())
            .map(|e| (e.name.as_str(), e.ref_key()))
    }
}

/// The report an earlier command worked out, where nothing it was worked
/// out from moved but the inbox's own listing and some of its files: the
/// folders that hide, defer or approve mail, the config, the registry and
/// keys are as they were, and were settled then.
struct Earlier {
    remembered: Remembered,
    valid_until: Option<i128>,
    /// The waiting files of that report still as they were, by name.
    files: HashMap<String, (PathBuf, Stamp)>,
}

impl Earlier {
    fn of(mailbox: &Mailbox, parts: Parts<Remembered>) -> Option<Self> {
        // Warnings are said by the judge as it works: a report that warned
        // is worked out again whole, so that they are said again.
        if parts.value.warned || parts.value.report.not_read > 0 {
            return None;
        }
        let mut files = HashMap::new();
        for (path, stamp, good) in parts.paths {
            if path == mailbox.dir() {
                continue;
            }
            if !is_inbox_file(mailbox, &path) {
                // Anything else it was worked out from must be as it was.
                if !good {
                    return None;
                }
            } else if let (true, Some(stamp), Some(name)) =
                (good, stamp, path.file_name().and_then(|n| n.to_str()))
            {
                files.insert(name.to_string(), (path.clone(), stamp));
            }
        }
        Some(Earlier {
            remembered: parts.value,
            valid_until: parts.valid_until,
            files,
        })
    }

    /// Lists the inbox, reading only the files the earlier report does not
    /// vouch for; returns their entries and what is kept of the report.
    fn listing(self, mailbox: &Mailbox) -> Result<(Vec<Entry>, Kept)> {
        let names = mailbox.inbox().message_names()?;
        let listed: HashSet<&str> = names.iter().map(String::as_str).collect();
        let report = self.remembered.report;
        // A file with anything beside it in `.processed/` is judged again:
        // a marker can be rewritten in place, which moves no folder (one
        // `stat` per kept file).
        let markers = mailbox.shared_dir(crate::layout::Shared::Markers)?;
        let unmarked = |file: &str| {
            markers
                .as_ref()
                .is_none_or(|d| std::fs::symlink_metadata(d.join(file)).is_err())
        };
        let still =
            |file: &str| listed.contains(file) && self.files.contains_key(file) && unmarked(file);
        let messages: Vec<Item> = report
            .messages
            .into_iter()
            .filter(|m| still(&m.file))
            .collect();
        let invalid: Vec<Invalid> = report
            .invalid
            .into_iter()
            .filter(|i| still(&i.file))
            .collect();
        let known: HashSet<&str> = messages
            .iter()
            .map(|m| m.file.as_str())
            .chain(invalid.iter().map(|i| i.file.as_str()))
            .collect();
        let fresh: HashSet<String> = names
            .iter()
            .filter(|n| !known.contains(n.as_str()))
            .cloned()
            .collect();
        let entries = mailbox
            .inbox()
            .unprocessed_among(names.clone(), Some(&fresh))?;
        // A new file with the (sender, id) of a kept message: which of
        // them is the message is decided over both, by a whole listing.
        let ids: HashSet<(&str, &str)> = messages
            .iter()
            .map(|m| (m.from.as_str(), m.id.as_str()))
            .collect();
        if entries.iter().any(|e| {
            e.valid()
                .is_some_and(|m| ids.contains(&(m.from.agent_id.as_str(), m.message_id.as_str())))
        }) {
            return Ok((mailbox.inbox().unprocessed()?, Kept::default()));
        }
        let stamps = known
            .iter()
            .filter_map(|n| self.files.get(*n).cloned())
            .collect();
        Ok((
            entries,
            Kept {
                messages,
                invalid,
                stamps,
                valid_until: self.valid_until,
            },
        ))
    }
}

/// What a report keeps of an earlier one: the items of the files that did
/// not change, to be joined with those read now.
#[derive(Default)]
struct Kept {
    messages: Vec<Item>,
    invalid: Vec<Invalid>,
    stamps: Vec<(PathBuf, Stamp)>,
    valid_until: Option<i128>,
}

impl Kept {
    /// Joins the kept items with `report` (of the files read now): in
    /// processing order, deferred mail last, with references and counts
    /// worked out over the whole inbox, as a whole listing gives them.
    fn join(self, report: &mut Report, watched: &mut Watched) {
        for (path, stamp) in self.stamps {
            watched.add_seen(path, stamp);
        }
        if self.messages.is_empty() && self.invalid.is_empty() {
            return;
        }
        report.messages.extend(self.messages);
        report.invalid.extend(self.invalid);
        report.messages.sort_by(|a, b| {
            let key = |m: &Item| {
                (
                    m.priority,
                    m.message_type,
                    crate::message::parse_time(&m.timestamp),
                )
            };
            key(a).cmp(&key(b)).then_with(|| a.file.cmp(&b.file))
        });
        report.messages.sort_by_key(|m| m.deferred.is_some());
        report.invalid.sort_by(|a, b| a.file.cmp(&b.file));
        relabel(report, &[]);
        report.unprocessed = report.messages.len();
        report.deferred = report
            .messages
            .iter()
            .filter(|m| m.deferred.is_some())
            .count();
        report.needs_approval = report
            .messages
            .iter()
            .filter(|m| m.approval.waits())
            .count();
    }
}

/// Gives each listed message and invalid file the short reference a
/// listing of the whole inbox gives it: made unique among those and the
/// messages `past` (waiting, not listed), given as (key, file name).
fn relabel(report: &mut Report, past: &[(String, &str)]) {
    let keys: Vec<(String, &str)> = report
        .messages
        .iter()
        .map(|m| {
            let key = crate::shortref::key(Some((&m.from, &m.id)), &m.file);
            (key, m.file.as_str())
        })
        .chain(
            report
                .invalid
                .iter()
                .map(|i| (i.file.clone(), i.file.as_str())),
        )
        .chain(past.iter().map(|(k, n)| (k.clone(), *n)))
        .collect();
    let refs = crate::shortref::for_messages(&keys);
    let (messages, rest) = refs.split_at(report.messages.len());
    for (m, r) in report.messages.iter_mut().zip(messages) {
        m.short_ref.clone_from(r);
    }
    for (i, r) in report.invalid.iter_mut().zip(rest) {
        i.short_ref.clone_from(r);
    }
}

/// Notes what waits now, and says (unless `quiet`) what waited at the last
/// listing and is gone without aea moving it (see
/// [`crate::mailbox::Vanished`]); `doctor` names them until a person
/// looked.
fn note_vanished<'a>(
    mailbox: &Mailbox,
    waiting: impl Iterator<Item = (&'a str, String)>,
    quiet: bool,
    ctx: &Context,
) {
    let waiting: Vec<(&str, String)> = waiting.collect();
    let gone = mailbox.inbox().note_waiting(&waiting);
    if !gone.is_empty() && !quiet {
        ctx.printer.warn(super::lost_line(
            &gone,
            "a checkout or pull that replaces .aea/ deletes what git ignores there (`aea doctor` lists them)",
        ));
    }
}

/// Starts `aea gc --auto` in the background when housekeeping says it is
/// due ([`housekeeping::auto_due`]); says so unless `quiet`. Best effort:
/// the command that lists never waits for it and never fails because of
/// it.
fn housekeep_if_due(mailbox: &Mailbox, ctx: &Context, quiet: bool) {
    let Some(exe) = ctx.exe.as_deref() else {
        return;
    };
    let Some(housekeeping::AutoDue { count, limit }) = housekeeping::auto_due(mailbox) else {
        return;
    };
    let mut gc = std::process::Command::new(exe);
    gc.arg("--repo")
        .arg(mailbox.repo())
        .args(["gc", "--auto"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    detach(&mut gc);
    if gc.spawn().is_ok() && !quiet {
        ctx.printer.err_line(format_args!(
            "aea: {count} messages in .aea/ marked processed by another tool, over limits.auto_gc_over ({limit}): archiving the oldest in the background (`aea gc --auto`)"
        ));
    }
}

/// Puts `cmd`'s process in a process group of its own, so that a signal
/// to the hook's or terminal's group (Ctrl-C, a harness ending its hook)
/// does not stop it half-way; nothing waits for it.
#[cfg(unix)]
fn detach(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    cmd.process_group(0);
}

#[cfg(not(unix))]
fn detach(_: &mut std::process::Command) {}
