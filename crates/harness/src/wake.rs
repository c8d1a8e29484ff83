//! Who is woken for which mail, and when again (SPEC §10): the mail worth
//! waking an agent for, and the monitor's doorbell schedule — ring once per
//! burst, then again with doubling backoff until the mail is processed.
//!
//! Time is a parameter (`now`), never read here, so the schedule is tested
//! without waiting; the command that runs it passes the clock.
//!
//! `aea watch` tells new mail from what waited when it started ([`Known`])
//! by the names its wake-up reports, reading only those files: the mail
//! worth waking for is then judged file by file with the same filter a
//! whole look applies ([`worth_waking`]).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::doorbell::Backoff;
use crate::error::Result;
use crate::judge::Judge;
use crate::mailbox::{Entry, Mailbox, Marker};
use crate::policy::Action;

/// One message worth waking for: its file name and aea's short reference
/// (the only message data that reaches a wake-up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub name: String,
    pub short_ref: String,
}

/// The valid unprocessed messages, leaving out mail the policy rejects
/// (nobody should be woken for it) and mail the agent deferred (it knows).
/// The references are those `aea check` prints.
pub fn waiting(mailbox: &Mailbox, judge: &Judge) -> Result<Vec<Waiting>> {
    worth_waking_among(mailbox, judge, mailbox.inbox().unprocessed()?)
}

/// [`waiting`] for `entries`, all the unprocessed files of the inbox.
fn worth_waking_among(
    mailbox: &Mailbox,
    judge: &Judge,
    entries: Vec<Entry>,
) -> Result<Vec<Waiting>> {
    let deferred = mailbox.records().deferrals()?;
    let refs = crate::mailbox::short_refs(&entries);
    Ok(entries
        .into_iter()
        .zip(refs)
        .filter(|(e, _)| worth_waking(e, &deferred, judge))
        .map(|(e, short_ref)| Waiting {
            name: e.name,
            short_ref,
        })
        .collect())
}

/// Whether unprocessed inbox file `entry` is mail to wake an agent for:
/// a valid message, not deferred (the agent knows of it), that the policy
/// does not reject (nobody should be woken for it). The one filter of a
/// whole look ([`waiting`]) and of a look at single files ([`Known`]).
fn worth_waking(entry: &Entry, deferred: &HashMap<String, Option<Marker>>, judge: &Judge) -> bool {
    !deferred.contains_key(&entry.name)
        && entry
            .valid()
            .is_some_and(|m| judge.decide(m).action != Action::Reject)
}

/// What `aea watch` found when it started, to tell new mail from it.
pub struct Known {
    /// The mail worth waking for then.
    pub waiting: Vec<Waiting>,
    /// Their file names.
    names: HashSet<String>,
    /// The (sender, id) of every valid unprocessed message then, deferred
    /// or rejected too: a file that repeats one of them is a copy, which a
    /// listing sets aside, not new mail.
    ids: HashSet<(String, String)>,
    /// The same of the files read since: mail that came during the watch
    /// and woke nobody (rejected, deferred) still makes a later file of
    /// its (sender, id) a copy.
    read_since: std::cell::RefCell<HashSet<(String, String)>>,
    /// Of `names`, those with something in `.processed/` at the start.
    marked: HashSet<String>,
    /// The reference key (see [`crate::shortref`]) of every unprocessed
    /// file read, at the start or since, by file name: what a listing
    /// lengthens a new message's reference against.
    keys: std::cell::RefCell<HashMap<String, String>>,
    /// Every message file in the inbox at the start: one not among them
    /// nor in `keys` was never read, and its key is unknown.
    present: HashSet<String>,
}

/// Which of `names` have anything at their name in the inbox's
/// `.processed/`: one `stat` each.
fn marker_names<'a>(mailbox: &Mailbox, names: impl Iterator<Item = &'a str>) -> HashSet<String> {
    let Ok(Some(markers)) = mailbox.shared_dir(crate::layout::Shared::Markers) else {
        return HashSet::new();
    };
    names
        .filter(|n| std::fs::symlink_metadata(markers.join(n)).is_ok())
        .map(str::to_string)
        .collect()
}

/// The reference key of each of `entries`, by file name.
fn keys_of(entries: &[Entry]) -> HashMap<String, String> {
    entries
        .iter()
        .map(|e| (e.name.clone(), e.ref_key()))
        .collect()
}

/// Mail that arrived since [`Known::look`].
#[derive(Debug, PartialEq, Eq)]
pub struct NewMail {
    /// aea's references to the new mail, in processing order: those
    /// `aea check` prints.
    pub refs: Vec<String>,
    /// How many messages worth waking for wait now, new or not.
    pub unprocessed: usize,
}

/// What the files a wake-up named hold.
enum Named {
    Nothing,
    Mail(NewMail),
    /// Only a listing of the whole inbox can tell (see [`Known::named`]).
    Unsure,
}

impl Known {
    /// Looks at every unprocessed message once, at the start.
    pub fn look(mailbox: &Mailbox, judge: &Judge) -> Result<Known> {
        let present = mailbox.inbox().message_names()?.into_iter().collect();
        let entries = mailbox.inbox().unprocessed()?;
        let keys = keys_of(&entries);
        let ids = entries
            .iter()
            .filter_map(Entry::valid)
            .map(|m| (m.from.agent_id.clone(), m.message_id.clone()))
            .collect();
        let waiting = worth_waking_among(mailbox, judge, entries)?;
        let names = waiting.iter().map(|w| w.name.clone()).collect();
        // Mail that waits with a marker beside it (one that does not cover
        // it): only a marker that appears later may mean it was processed.
        let marked = marker_names(mailbox, waiting.iter().map(|w| w.name.as_str()));
        Ok(Known {
            waiting,
            names,
            ids,
            read_since: std::cell::RefCell::new(HashSet::new()),
            marked,
            keys: std::cell::RefCell::new(keys),
            present,
        })
    }

    /// The mail worth waking for that was not there at the start, if any,
    /// after a wake-up that named the files that changed (`Some`) or could
    /// not (`None`: a lost watch, an overflowed queue, polling).
    ///
    /// With names, only the named files that are new are read, so a
    /// wake-up costs what arrived, not what waits; the count of waiting
    /// mail comes from a listing of names, without reading the files. A
    /// file written in place is named when it is created and again when
    /// it is closed, so one found incomplete the first time (not valid)
    /// is read again. Without names, every file is read, as at the start.
    pub fn new_mail(
        &self,
        mailbox: &Mailbox,
        judge: &Judge,
        names: Option<&[String]>,
    ) -> Result<Option<NewMail>> {
        if let Some(names) = names {
            match self.named(mailbox, judge, names)? {
                Named::Nothing => return Ok(None),
                Named::Mail(new) => return Ok(Some(new)),
                Named::Unsure => {}
            }
        }
        let entries = mailbox.inbox().unprocessed()?;
        self.keys.borrow_mut().extend(keys_of(&entries));
        // A later file of one of these (sender, id)s is a copy, even of
        // mail that wakes nobody.
        self.read_since.borrow_mut().extend(
            entries
                .iter()
                .filter_map(Entry::valid)
                .map(|m| (m.from.agent_id.clone(), m.message_id.clone())),
        );
        let now = worth_waking_among(mailbox, judge, entries)?;
        let refs: Vec<String> = now
            .iter()
            .filter(|w| !self.names.contains(&w.name))
            .map(|w| w.short_ref.clone())
            .collect();
        Ok((!refs.is_empty()).then_some(NewMail {
            refs,
            unprocessed: now.len(),
        }))
    }

    /// The new mail among the files `names`: a listing of the inbox that
    /// reads only those ([`Mailbox::unprocessed_among`]), so each is read
    /// as a listing reads it (never through a symlink, never blocking on a
    /// FIFO) and left out when gone, processed, an own copy or a replay,
    /// exactly as a whole listing would. `Unsure` where a listing that
    /// reads every file could decide otherwise: a file of the (sender, id)
    /// of mail that was there at the start, of which only one is the
    /// message, or a reference whose first digits another file's shares,
    /// which `aea check` lengthens only if that file is one it lists.
    fn named(&self, mailbox: &Mailbox, judge: &Judge, names: &[String]) -> Result<Named> {
        let fresh: HashSet<String> = names
            .iter()
            .filter(|n| crate::message::is_message_file_name(n) && !self.names.contains(*n))
            .cloned()
            .collect();
        if fresh.is_empty() {
            return Ok(Named::Nothing);
        }
        let present = mailbox.inbox().message_names()?;
        let mut entries = mailbox
            .inbox()
            .unprocessed_among(present.clone(), Some(&fresh))?;
        if entries.is_empty() {
            return Ok(Named::Nothing);
        }
        // Copies among the new files the listing has set aside already;
        // a new file of the (sender, id) of mail that was there at the
        // start, or came since, is decided over both, by a listing that
        // reads every file.
        let ids: Vec<(String, String)> = entries
            .iter()
            .filter_map(Entry::valid)
            .map(|m| (m.from.agent_id.clone(), m.message_id.clone()))
            .collect();
        let copy = {
            let since = self.read_since.borrow();
            ids.iter()
                .any(|id| self.ids.contains(id) || since.contains(id))
        };
        self.read_since.borrow_mut().extend(ids);
        self.keys.borrow_mut().extend(keys_of(&entries));
        if copy {
            return Ok(Named::Unsure);
        }
        let deferred = mailbox.records().deferrals()?;
        entries.retain(|e| worth_waking(e, &deferred, judge));
        if entries.is_empty() {
            return Ok(Named::Nothing);
        }
        let new = crate::mailbox::keys_and_names(entries.iter());
        // The key of each file a listing would list beside them: read at
        // the start or since; one never read (neither there at the start
        // nor named since) is left to a whole listing.
        let keys = self.keys.borrow();
        let mut listed = Vec::with_capacity(present.len());
        for name in &present {
            match keys.get(name) {
                Some(key) => listed.push((key.as_str(), name.as_str())),
                None if self.present.contains(name) => {}
                None => return Ok(Named::Unsure),
            }
        }
        let Some(refs) = crate::shortref::alone_among(&new, &listed) else {
            return Ok(Named::Unsure);
        };
        // What waited at the start and waits still: not gone, not deferred
        // since, not marked processed by another tool since (one `stat` of
        // its marker each).
        let still: Vec<&str> = present
            .iter()
            .filter(|n| self.names.contains(*n) && !deferred.contains_key(*n))
            .map(String::as_str)
            .collect();
        let marked_now = marker_names(mailbox, still.iter().copied());
        let still_waiting = still
            .iter()
            .filter(|n| !marked_now.contains(**n) || self.marked.contains(**n))
            .count();
        Ok(Named::Mail(NewMail {
            refs,
            unprocessed: still_waiting + entries.len(),
        }))
    }
}

#[derive(Debug)]
struct Rung {
    short_ref: String,
    attempts: u32,
    next: Instant,
}

/// The monitor's memory of what it rang for.
#[derive(Debug)]
pub(crate) struct Schedule {
    backoff: Backoff,
    rung: HashMap<String, Rung>,
}

impl Schedule {
    pub(crate) fn new(backoff: Backoff) -> Self {
        Schedule {
            backoff,
            rung: HashMap::new(),
        }
    }

    /// Forgets mail no longer waiting (processed, or now rejected) and
    /// says whether anything arrived that was never rung for.
    pub(crate) fn observe(&mut self, waiting: &[Waiting]) -> bool {
        self.rung
            .retain(|name, _| waiting.iter().any(|w| &w.name == name));
        waiting.iter().any(|w| !self.rung.contains_key(&w.name))
    }

    /// Whether a ring is due for mail already rung for.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.rung.values().any(|r| r.next <= now)
    }

    /// Takes in `waiting` (new mail is due at once) and returns the sorted
    /// references to ring for now; each of them is scheduled again.
    pub(crate) fn ring(&mut self, waiting: &[Waiting], now: Instant) -> Vec<String> {
        for w in waiting {
            self.rung.entry(w.name.clone()).or_insert(Rung {
                short_ref: w.short_ref.clone(),
                attempts: 0,
                next: now,
            });
        }
        let mut refs = Vec::new();
        for r in self.rung.values_mut().filter(|r| r.next <= now) {
            refs.push(r.short_ref.clone());
            r.attempts += 1;
            r.next = now + self.backoff.after(r.attempts);
        }
        refs.sort();
        refs
    }

    /// How long until the next ring is due; `None` with nothing rung for.
    pub(crate) fn next_in(&self, now: Instant) -> Option<Duration> {
        self.rung
            .values()
            .map(|r| r.next.saturating_duration_since(now))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::{Backoff, Schedule, Waiting};
    use std::time::{Duration, Instant};

    fn w(name: &str) -> Waiting {
        Waiting {
            name: name.into(),
            short_ref: format!("m{name}"),
        }
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn rings_at_once_then_again_with_backoff_until_processed() {
        let t0 = Instant::now();
        let mut s = Schedule::new(Backoff {
            initial: 10 * S,
            max: 30 * S,
        });
        let mail = [w("a"), w("b")];
        assert!(s.observe(&mail), "new mail arrived");
        assert_eq!(s.ring(&mail, t0), ["ma", "mb"]);
        assert!(!s.observe(&mail), "nothing new");
        assert!(!s.due(t0 + 9 * S));
        assert_eq!(s.next_in(t0 + 4 * S), Some(6 * S));
        assert!(s.due(t0 + 10 * S));
        assert_eq!(s.ring(&mail, t0 + 10 * S), ["ma", "mb"]);
        // The second gap is twice the first.
        assert!(!s.due(t0 + 29 * S));
        assert!(s.due(t0 + 30 * S));
        // `a` was processed: only `b` rings, and once `b` is gone too,
        // nothing is scheduled.
        assert!(!s.observe(&[w("b")]));
        assert_eq!(s.ring(&[w("b")], t0 + 30 * S), ["mb"]);
        assert!(!s.observe(&[]));
        assert_eq!(s.next_in(t0 + 31 * S), None);
        assert!(s.ring(&[], t0 + 1000 * S).is_empty());
    }

    #[test]
    fn a_late_arrival_rings_alone_and_on_its_own_schedule() {
        let t0 = Instant::now();
        let mut s = Schedule::new(Backoff {
            initial: 10 * S,
            max: 10 * S,
        });
        s.observe(&[w("a")]);
        assert_eq!(s.ring(&[w("a")], t0), ["ma"]);
        let both = [w("a"), w("b")];
        assert!(s.observe(&both));
        assert_eq!(s.ring(&both, t0 + 3 * S), ["mb"], "a is not due yet");
        assert_eq!(s.next_in(t0 + 3 * S), Some(7 * S));
    }
}
