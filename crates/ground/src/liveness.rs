//! Whether the process that holds something (a claim) is still there.
//!
//! A pid alone is not enough: pids are reused, and a claim may come from
//! another machine sharing the folder (NFS) or from before a reboot. A
//! holder is identified by its host, the boot it ran in, its pid and the
//! time the process started (`/proc/<pid>/stat` field 22, in clock ticks
//! since boot); it is gone when, on the same host, the boot differs, the pid
//! does not exist, or the pid now belongs to a process that started at
//! another time. On another host, or where `/proc` cannot tell, nobody
//! knows: the caller falls back to the claim's age.

use serde::{Deserialize, Serialize};

/// Who holds something, as recorded next to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// Start time of the process, in clock ticks after boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
}

/// What can be said about a holder from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alive {
    Yes,
    Gone,
    /// Another host, or this system cannot tell: only age can decide.
    Unknown,
}

impl Holder {
    /// This process.
    pub fn current() -> Self {
        Holder {
            host: host(),
            boot_id: boot_id(),
            started: start_time(std::process::id()),
        }
    }

    /// Whether process `pid`, recorded with this holder, still runs.
    pub fn alive(&self, pid: u32) -> Alive {
        let (Some(host), Some(here)) = (&self.host, host()) else {
            return Alive::Unknown;
        };
        if *host != here {
            return Alive::Unknown;
        }
        if let (Some(then), Some(now)) = (&self.boot_id, boot_id())
            && *then != now
        {
            return Alive::Gone;
        }
        match (self.started, start_time(pid)) {
            // No such process.
            (_, None) if std::path::Path::new("/proc/self/stat").exists() => Alive::Gone,
            (Some(then), Some(now)) if then != now => Alive::Gone,
            (Some(_), Some(_)) => Alive::Yes,
            _ => Alive::Unknown,
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn host() -> Option<String> {
    read_trimmed("/proc/sys/kernel/hostname")
}

fn boot_id() -> Option<String> {
    read_trimmed("/proc/sys/kernel/random/boot_id")
}

/// Field 22 of `/proc/<pid>/stat`. The command name (field 2) is in
/// parentheses and may hold spaces or `)`: fields are counted after the
/// last `)`.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first; 22 is the 20th.
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{Alive, Holder};

    #[test]
    fn this_process_is_alive_and_a_finished_one_is_gone() {
        let me = Holder::current();
        if me.started.is_none() {
            return; // no /proc here: nothing can be told
        }
        assert_eq!(me.alive(std::process::id()), Alive::Yes);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(me.alive(pid), Alive::Gone, "a reaped pid");
        // Same pid, another start time: the pid was reused.
        let reused = Holder {
            started: me.started.map(|s| s + 1),
            ..me.clone()
        };
        assert_eq!(reused.alive(std::process::id()), Alive::Gone);
        let elsewhere = Holder {
            host: Some("another-host".into()),
            ..me.clone()
        };
        assert_eq!(elsewhere.alive(1), Alive::Unknown);
        assert_eq!(Holder::default().alive(1), Alive::Unknown);
    }
}
