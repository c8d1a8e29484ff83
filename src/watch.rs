//! Waiting for a mailbox to change (SPEC §10): file-system notifications
//! through `notify` (inotify on Linux), with polling as the fallback where
//! notifications are unavailable. Waiting uses no CPU.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};

use crate::message::is_message_file_name;

/// How often to look when notifications are unavailable.
const POLL_EVERY: Duration = Duration::from_millis(500);

pub struct DirWatch {
    rx: Receiver<()>,
    /// Kept alive for as long as we wait; `None` in polling mode.
    watcher: Option<RecommendedWatcher>,
}

/// Whether an event may mean new mail (or a control file for the monitor):
/// staging files live in `.tmp/` and markers in `.processed/`, which a
/// non-recursive watch does not report, and the log is not mail.
fn relevant(event: &Event, extra: &[&str]) -> bool {
    event.paths.iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| is_message_file_name(n) || extra.contains(&n))
    })
}

impl DirWatch {
    /// Watches `dir` (not its subfolders) for message files and for files
    /// named in `extra`.
    pub fn new(dir: &Path, extra: &'static [&'static str]) -> Self {
        let (tx, rx) = mpsc::channel();
        let handler = move |event: notify::Result<Event>| {
            if event.is_ok_and(|e| relevant(&e, extra)) {
                let _ = tx.send(());
            }
        };
        let watcher = notify::recommended_watcher(handler)
            .and_then(|mut w| w.watch(dir, RecursiveMode::NonRecursive).map(|()| w))
            .ok();
        DirWatch { rx, watcher }
    }

    pub fn is_polling(&self) -> bool {
        self.watcher.is_none()
    }

    /// Waits until something relevant happened or `timeout` passed; returns
    /// whether something happened. Bursts of events are drained into one.
    pub fn wait(&self, timeout: Duration) -> bool {
        if self.is_polling() {
            std::thread::sleep(timeout.min(POLL_EVERY));
            return true;
        }
        match self.rx.recv_timeout(timeout) {
            Ok(()) => {
                while self.rx.try_recv().is_ok() {}
                true
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => false,
        }
    }
}
