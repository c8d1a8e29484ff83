//! Who is woken for which mail, and when again (SPEC §10): the mail worth
//! waking an agent for, and the monitor's doorbell schedule — ring once per
//! burst, then again with doubling backoff until the mail is processed.
//!
//! Time is a parameter (`now`), never read here, so the schedule is tested
//! without waiting; the command that runs it passes the clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::mailbox::Mailbox;
use crate::policy::{Action, Judge};

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
    let entries = mailbox.unprocessed()?;
    let deferred = mailbox.deferrals()?;
    let refs = crate::shortref::of_entries(&entries);
    Ok(entries
        .into_iter()
        .zip(refs)
        .filter(|(e, _)| !deferred.contains_key(&e.name))
        .filter_map(|(e, short_ref)| {
            let m = e.valid()?;
            (judge.decide(m).action != Action::Reject).then_some(Waiting {
                name: e.name,
                short_ref,
            })
        })
        .collect())
}

/// How often a doorbell rings again for mail still waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// After the first ring, the next one comes this much later...
    pub initial: Duration,
    /// ...doubling each time, but never more than this apart.
    pub max: Duration,
}

impl Backoff {
    /// The gap after the `attempts`-th ring (1 = the first).
    pub fn after(self, attempts: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempts.saturating_sub(1).min(16));
        self.initial.saturating_mul(factor).min(self.max)
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
pub struct Schedule {
    backoff: Backoff,
    rung: HashMap<String, Rung>,
}

impl Schedule {
    pub fn new(backoff: Backoff) -> Self {
        Schedule {
            backoff,
            rung: HashMap::new(),
        }
    }

    /// Forgets mail no longer waiting (processed, or now rejected) and
    /// says whether anything arrived that was never rung for.
    pub fn observe(&mut self, waiting: &[Waiting]) -> bool {
        self.rung
            .retain(|name, _| waiting.iter().any(|w| &w.name == name));
        waiting.iter().any(|w| !self.rung.contains_key(&w.name))
    }

    /// Whether a ring is due for mail already rung for.
    pub fn due(&self, now: Instant) -> bool {
        self.rung.values().any(|r| r.next <= now)
    }

    /// Takes in `waiting` (new mail is due at once) and returns the sorted
    /// references to ring for now; each of them is scheduled again.
    pub fn ring(&mut self, waiting: &[Waiting], now: Instant) -> Vec<String> {
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
    pub fn next_in(&self, now: Instant) -> Option<Duration> {
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
    fn backoff_doubles_up_to_the_cap() {
        let b = Backoff {
            initial: S,
            max: 5 * S,
        };
        let gaps: Vec<_> = (1..=5).map(|n| b.after(n).as_secs()).collect();
        assert_eq!(gaps, [1, 2, 4, 5, 5]);
        assert_eq!(b.after(u32::MAX), 5 * S);
    }

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
