//! Waiting for a mailbox to change (SPEC §10): file-system notifications,
//! with polling as the fallback where notifications are unavailable.
//! Waiting uses no CPU, however much mail already waits.
//!
//! Only what can mean new or changed mail wakes a waiter: a file created
//! in, moved into or written and closed in `.aea/` (not its subfolders)
//! whose name is a message's or one of the control files the caller names
//! (`monitor.stop`), and the loss of the watch itself. Reading the inbox
//! must never wake it: every wake-up reads messages (the monitor all of
//! them, `aea watch` the new ones), so a watch that reported opens and
//! reads woke itself for ever and burnt a core while mail waited. On Linux
//! the kernel is asked for exactly those events (`inotify` with an explicit
//! mask: `notify` 8 always subscribes to IN_OPEN, and every read of a
//! waiting message would wake its thread); elsewhere `notify`'s backend
//! (FSEvents on macOS) reports changes, and access events are dropped
//! before they wake anyone.
//!
//! A wake-up says which files woke it ([`Woke::Names`]), so that a caller
//! whose look costs a read per file (`aea watch` verifies and judges every
//! message it reads) can read only those: with a thousand messages waiting,
//! reading them all on every wake-up cost far more than the one new file.
//! Where the names are not known — the kernel's queue overflowed, the
//! watch was lost, or there are no notifications and it polls — the
//! wake-up says so ([`Woke::Unknown`]) and the caller looks at everything.

use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use crate::message::is_message_file_name;

/// How often to look when notifications are unavailable.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// More names than this in one wake-up are reported as [`Woke::Unknown`]:
/// a caller then lists the folder once instead of reading file after file,
/// and a flood of names cannot grow the list without bound.
const MAX_NAMES: usize = 4096;

pub struct DirWatch {
    /// One report per batch of events the backend read.
    rx: Receiver<Woke>,
    /// Kept alive for as long as we wait; empty in polling mode.
    backend: Vec<backend::Handle>,
}

/// What ended a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Woke {
    /// The timeout passed and nothing relevant happened.
    TimedOut,
    /// Files of these names were created in, moved into or written and
    /// closed in a watched folder: each name once, in the order its first
    /// event came. Only names that pass the watch's [`Names`].
    Names(Vec<String>),
    /// Something may have changed, under names nobody knows: the kernel's
    /// event queue overflowed, the watch was lost (it polls from then on),
    /// or it polls because notifications are unavailable.
    Unknown,
}

impl Woke {
    /// Both reports as one, for a burst drained into one wake-up.
    fn and(self, later: Woke) -> Woke {
        match (self, later) {
            (Woke::Names(mut names), Woke::Names(more)) => {
                let mut seen: HashSet<String> = names.iter().cloned().collect();
                names.extend(more.into_iter().filter(|n| seen.insert(n.clone())));
                Woke::names(names)
            }
            (Woke::Unknown, _) | (_, Woke::Unknown) => Woke::Unknown,
            (Woke::TimedOut, other) | (other, Woke::TimedOut) => other,
        }
    }

    /// `names` (without repeats) as a report, or `Unknown` past [`MAX_NAMES`].
    fn names(names: Vec<String>) -> Woke {
        if names.len() > MAX_NAMES {
            Woke::Unknown
        } else {
            Woke::Names(names)
        }
    }
}

/// Which files wake a watch.
#[derive(Debug, Clone, Copy)]
pub enum Names {
    /// An AEA inbox: message files, and the control files named.
    Mail(&'static [&'static str]),
    /// Another protocol's folder: the files whose names pass.
    Matching(fn(&str) -> bool),
}

/// `name` if a file of that name, created or changed directly in the
/// watched folder, may mean new mail (or is a control file): staging files
/// live in `.tmp/` and markers in `.processed/`, which a non-recursive
/// watch does not report, and the log is not mail.
fn relevant(name: &std::ffi::OsStr, names: Names) -> Option<&str> {
    name.to_str().filter(|n| match names {
        Names::Mail(extra) => is_message_file_name(n) || extra.contains(n),
        Names::Matching(wanted) => wanted(n),
    })
}

impl DirWatch {
    /// Watches `dir` (not its subfolders) for message files and for files
    /// named in `extra`.
    pub fn new(dir: &Path, extra: &'static [&'static str]) -> Self {
        Self::watching(&[dir], Names::Mail(extra))
    }

    /// Watches each folder of `dirs` (not their subfolders) for `names`;
    /// polls only if none of them can be watched. A folder that cannot be
    /// (missing for now) is left to the caller's own timeout: polling every
    /// folder twice a second for its sake made `aea bridge` re-read every
    /// file of every bridge twice a second, for as long as it ran.
    pub fn watching(dirs: &[&Path], names: Names) -> Self {
        let each: Vec<(&Path, Names)> = dirs.iter().map(|dir| (*dir, names)).collect();
        Self::watching_each(&each)
    }

    /// Watches each folder of `dirs` for its own names, in one watch.
    pub fn watching_each(dirs: &[(&Path, Names)]) -> Self {
        let (tx, rx) = mpsc::channel();
        let backend: Vec<_> = dirs
            .iter()
            .filter_map(|(dir, names)| backend::Handle::start(dir, *names, tx.clone()).ok())
            .collect();
        DirWatch { rx, backend }
    }

    /// Stops watching, for a process about to exit, without making its
    /// exit wait for the kernel.
    ///
    /// The last close of an inotify descriptor tears its group down and
    /// waits for an SRCU grace period (`fsnotify_destroy_group`; 8–20 ms
    /// measured on Linux 6.18). It happens inside `exit_group` whichever
    /// thread closes it, so a harness waiting for `aea watch` to exit
    /// waited that long after the wake-up line. Here a forked
    /// holder keeps a copy of the descriptors until this process has gone:
    /// our own close is then a reference dropped, and the holder pays for
    /// the teardown after the parent's exit has been seen.
    pub fn hand_off(self) {
        #[cfg(target_os = "linux")]
        {
            let fds: Vec<_> = self.backend.iter().map(backend::Handle::fd).collect();
            if !fds.is_empty() {
                holder::keep_past_exit(&fds);
            }
        }
        drop(self);
    }

    pub(crate) fn is_polling(&self) -> bool {
        self.backend.is_empty()
    }

    /// Waits until something relevant happened or `timeout` passed; returns
    /// whether something happened. Bursts of events are drained into one.
    /// For callers that look at everything whatever woke them.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.wait_names(timeout) != Woke::TimedOut
    }

    /// Waits like [`Self::wait`] and says what woke it: the names of the
    /// files behind every event drained into this wake-up, or that they
    /// are not known.
    pub fn wait_names(&self, timeout: Duration) -> Woke {
        if self.is_polling() {
            return poll(timeout);
        }
        match self.rx.recv_timeout(timeout) {
            Ok(first) => {
                let mut woke = first;
                while let Ok(more) = self.rx.try_recv() {
                    woke = woke.and(more);
                }
                woke
            }
            Err(RecvTimeoutError::Timeout) => Woke::TimedOut,
            // The watch was lost (the folder was deleted or moved, or the
            // backend failed): poll from now on. Returning at once instead
            // would spin the caller's loop.
            Err(RecvTimeoutError::Disconnected) => poll(timeout),
        }
    }
}

/// One round of polling: sleep, then report "maybe something happened".
fn poll(timeout: Duration) -> Woke {
    std::thread::sleep(timeout.min(POLL_EVERY));
    Woke::Unknown
}

/// inotify with an explicit mask, read on a thread of its own that sleeps
/// in `read(2)` until the kernel has an event it was asked for.
#[cfg(target_os = "linux")]
mod backend {
    use std::ffi::OsStr;
    use std::io::ErrorKind;
    use std::os::fd::{AsRawFd, RawFd};
    use std::path::Path;
    use std::sync::mpsc::Sender;

    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

    use super::Woke;

    /// New or changed files in the folder, and the folder itself going
    /// away. Not IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE or IN_ATTRIB: reading
    /// mail must not wake the reader. IN_CLOSE_WRITE catches a file
    /// written in place, whose IN_CREATE came while it was still empty.
    fn mask() -> WatchMask {
        WatchMask::CREATE
            | WatchMask::MOVED_TO
            | WatchMask::CLOSE_WRITE
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
    }

    /// Events after which the watch no longer follows the mailbox: the
    /// folder was deleted or moved away, or the watch was removed.
    fn lost() -> EventMask {
        EventMask::DELETE_SELF | EventMask::MOVE_SELF | EventMask::IGNORED
    }

    /// What one read's worth of events means for a waiter: the relevant
    /// names, in order, each once; `Unknown` when the queue overflowed (any
    /// file may have come, under names the kernel dropped) or the watch was
    /// lost (the folder may have been replaced); `None` when nothing
    /// relevant happened. The second value says whether the watch is lost.
    pub(super) fn report<'a>(
        events: impl IntoIterator<Item = (EventMask, Option<&'a OsStr>)>,
        names: super::Names,
    ) -> (Option<Woke>, bool) {
        let (mut found, mut overflow, mut gone) = (Vec::<String>::new(), false, false);
        for (mask, name) in events {
            gone |= mask.intersects(lost());
            overflow |= mask.contains(EventMask::Q_OVERFLOW);
            if let Some(name) = name.and_then(|n| super::relevant(n, names))
                && !found.iter().any(|f| f == name)
            {
                found.push(name.to_string());
            }
        }
        let woke = if overflow || gone {
            Some(Woke::Unknown)
        } else if found.is_empty() {
            None
        } else {
            Some(Woke::names(found))
        };
        (woke, gone)
    }

    pub(crate) struct Handle {
        watches: Watches,
        wd: WatchDescriptor,
        /// The inotify descriptor, open for as long as `watches` is.
        fd: RawFd,
    }

    impl Handle {
        pub(crate) fn start(
            dir: &Path,
            names: super::Names,
            tx: Sender<Woke>,
        ) -> std::io::Result<Self> {
            let mut inotify = Inotify::init()?;
            let fd = inotify.as_raw_fd();
            let mut watches = inotify.watches();
            let wd = watches.add(dir, mask())?;
            std::thread::Builder::new()
                .name("aea-watch".into())
                .spawn(move || {
                    // Room for many events at once (one is 16 bytes plus
                    // its name, at most 255 bytes).
                    let mut buffer = [0; 16 * 1024];
                    loop {
                        let events = match inotify.read_events_blocking(&mut buffer) {
                            Ok(events) => events,
                            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                            // Dropping the sender makes the waiter poll.
                            Err(_) => return,
                        };
                        let (mut woke, mut gone) = report(events.map(|e| (e.mask, e.name)), names);
                        // What else is queued already goes into the same
                        // report (reads that do not block): a burst that
                        // came while this thread or the waiter was not
                        // running wakes the waiter once, with every name.
                        while !gone {
                            let Ok(events) = inotify.read_events(&mut buffer) else {
                                break;
                            };
                            let (more, lost) = report(events.map(|e| (e.mask, e.name)), names);
                            gone = lost;
                            woke = match (woke, more) {
                                (Some(a), Some(b)) => Some(a.and(b)),
                                (a, b) => a.or(b),
                            };
                        }
                        if let Some(woke) = woke
                            && tx.send(woke).is_err()
                        {
                            return;
                        }
                        if gone {
                            return;
                        }
                    }
                })?;
            Ok(Handle { watches, wd, fd })
        }

        pub(crate) fn fd(&self) -> RawFd {
            self.fd
        }
    }

    impl Drop for Handle {
        /// Removing the watch queues IN_IGNORED, which ends the thread and
        /// closes the inotify descriptor.
        fn drop(&mut self) {
            let _ = self.watches.remove(self.wd.clone());
        }
    }
}

/// A process that outlives `aea watch` by the kernel's teardown of its
/// inotify descriptors, so that the watch's exit does not wait for it.
///
/// Forked at the end rather than when the watch starts: nothing extra runs
/// while the watch waits, a watch killed or interrupted has no holder to
/// clean up, and the one fork (a fraction of a millisecond) comes before
/// the wake-up line, where the 50 ms wake-up budget has room for it. The
/// process is multi-threaded by then, so the child makes only system calls
/// that are async-signal-safe (close, read, _exit) and touches no lock.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // fork(2), pipe2(2), close_range(2), read(2), _exit(2).
mod holder {
    use std::os::fd::RawFd;

    /// Forks a child that keeps `keep` open until this process has exited
    /// (its end of a pipe reaches EOF), and closes every other descriptor
    /// first: it holds none of the harness's pipes, so a harness reading
    /// our stdout to its end is not kept waiting either. Best effort: if
    /// the fork fails, this process pays for the teardown as before.
    ///
    /// The child is the parent's until the parent exits a moment later;
    /// then it is an orphan that init (or the harness's subreaper) reaps.
    pub(crate) fn keep_past_exit(keep: &[RawFd]) {
        let mut pipe = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let [read_end, write_end] = pipe;
        let mut kept: Vec<RawFd> = keep.iter().copied().chain([read_end]).collect();
        kept.sort_unstable();
        // SAFETY: the child runs only `hold`, which makes async-signal-safe
        // system calls on plain integers and never returns.
        match unsafe { libc::fork() } {
            0 => hold(&kept, read_end),
            -1 => {
                // SAFETY: both descriptors are ours and open.
                unsafe {
                    libc::close(read_end);
                    libc::close(write_end);
                }
            }
            // The write end stays open (and is closed by the exit), which
            // is what the child waits for.
            _ => {
                // SAFETY: the read end is ours and open.
                unsafe { libc::close(read_end) };
            }
        }
    }

    /// The child: closes everything but `kept` (the parent's stdout and
    /// stderr among them, and the write end of the pipe), waits for EOF on
    /// `read_end`, i.e. for the parent to be gone, and exits, which closes
    /// the inotify descriptors for the last time.
    fn hold(kept: &[RawFd], read_end: RawFd) -> ! {
        let mut from: RawFd = 0;
        for &fd in kept {
            close_between(from, fd - 1);
            from = fd + 1;
        }
        close_between(from, RawFd::MAX);
        let mut byte = 0_u8;
        loop {
            // SAFETY: reads at most one byte into `byte`.
            let n = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
            if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        // SAFETY: ends the child without running the parent's destructors
        // or atexit handlers, which are not the child's to run.
        unsafe { libc::_exit(0) }
    }

    /// Closes the descriptors `first..=last` (none if `last < first`).
    fn close_between(first: RawFd, last: RawFd) {
        if last < first {
            return;
        }
        let (Ok(lo), Ok(hi)) = (libc::c_uint::try_from(first), libc::c_uint::try_from(last)) else {
            return;
        };
        // SAFETY: close_range takes plain integers; closing descriptors the
        // child does not use is its purpose.
        let closed = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0) } == 0;
        if !closed {
            // Before Linux 5.9: one by one, up to the usual ceiling of open
            // descriptors (the harness's pipes are among the lowest).
            for fd in first..=last.min(65_535) {
                // SAFETY: as above, one descriptor at a time.
                unsafe { libc::close(fd) };
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
use notify_backend as backend;

/// `notify`'s recommended backend (FSEvents on macOS, kqueue on the BSDs,
/// ReadDirectoryChangesW on Windows). Access events are dropped: they are
/// what reading the inbox causes.
/// Compiled on Linux too in tests, so that the code other platforms run is
/// built and exercised here (against notify's inotify backend).
#[cfg(any(not(target_os = "linux"), test))]
mod notify_backend {
    use std::path::Path;
    use std::sync::mpsc::Sender;

    use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

    use super::Woke;

    pub(crate) struct Handle {
        _watcher: RecommendedWatcher,
    }

    impl Handle {
        pub(crate) fn start(
            dir: &Path,
            names: super::Names,
            tx: Sender<Woke>,
        ) -> notify::Result<Self> {
            let handler = move |event: notify::Result<Event>| {
                let Ok(event) = event else { return };
                // The backend dropped events (FSEvents, or inotify's queue
                // overflowed, asks for a rescan): which files changed is
                // not known.
                if event.need_rescan() {
                    let _ = tx.send(Woke::Unknown);
                    return;
                }
                if matches!(event.kind, EventKind::Access(_)) {
                    return;
                }
                let mut found: Vec<String> = Vec::new();
                for name in event
                    .paths
                    .iter()
                    .filter_map(|p| p.file_name().and_then(|n| super::relevant(n, names)))
                {
                    if !found.iter().any(|f| f == name) {
                        found.push(name.to_string());
                    }
                }
                if !found.is_empty() {
                    let _ = tx.send(Woke::names(found));
                }
            };
            let mut watcher = notify::recommended_watcher(handler)?;
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
            Ok(Handle { _watcher: watcher })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{DirWatch, Woke};

    /// The backend other platforms use, run here on notify's inotify: an
    /// access (reading a waiting message) does not wake it, a new message
    /// does.
    #[test]
    fn the_notify_backend_ignores_reads_and_sees_new_mail() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let waiting = dir.path().join(message_name(1));
        std::fs::write(&waiting, "{}").expect("write a message");
        let (tx, rx) = std::sync::mpsc::channel();
        let _handle = super::notify_backend::Handle::start(dir.path(), super::Names::Mail(&[]), tx)
            .expect("notify watches the folder");
        std::fs::read(&waiting).expect("read the waiting message");
        assert!(rx.recv_timeout(QUIET).is_err(), "a read woke it");
        std::fs::write(dir.path().join(message_name(2)), "{}").expect("new mail");
        assert_eq!(
            rx.recv_timeout(SOON),
            Ok(Woke::Names(vec![message_name(2)])),
            "new mail did not wake it, by name"
        );
    }

    /// How long a wake-up that must not come is given to come anyway.
    const QUIET: Duration = Duration::from_millis(300);
    const SOON: Duration = Duration::from_secs(5);

    fn message_name(n: u32) -> String {
        let at = chrono::DateTime::from_timestamp(1_700_000_000 + i64::from(n), 0)
            .expect("a valid time");
        crate::message::file_name(at, "sender", &format!("{n:08x}"))
    }

    /// Reading waiting mail (what every wake-up does) never wakes the
    /// watch; mail moved or written into the folder and a control file do.
    #[test]
    fn reads_do_not_wake_the_watch_new_mail_and_control_files_do() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let waiting = dir.path().join(message_name(1));
        std::fs::write(&waiting, "{}").expect("write a message");
        std::fs::create_dir(dir.path().join(".tmp")).expect("a staging folder");
        let watch = DirWatch::new(dir.path(), &["monitor.stop"]);
        assert!(!watch.is_polling());

        for _ in 0..3 {
            std::fs::read(&waiting).expect("read the message");
            let _ = std::fs::metadata(&waiting);
            let _ = std::fs::read_dir(dir.path()).map(Iterator::count);
        }
        // Staging files and other names are not mail either.
        std::fs::write(dir.path().join(".tmp/x.tmp"), "{").expect("stage");
        std::fs::write(dir.path().join("notes.json"), "{}").expect("a non-message");
        assert!(!watch.wait(QUIET), "woke for reads or non-mail");

        std::fs::rename(
            dir.path().join(".tmp/x.tmp"),
            dir.path().join(message_name(2)),
        )
        .expect("deliver");
        assert_eq!(
            watch.wait_names(SOON),
            Woke::Names(vec![message_name(2)]),
            "a delivery wakes the watch, by its name"
        );
        assert!(!watch.wait(QUIET), "one burst, one wake-up");

        std::fs::write(dir.path().join(message_name(3)), "{}").expect("write in place");
        assert!(watch.wait(SOON), "a message written in place wakes it");
        while watch.wait(QUIET) {}

        std::fs::write(dir.path().join("monitor.stop"), "stop\n").expect("ask to stop");
        assert_eq!(
            watch.wait_names(SOON),
            Woke::Names(vec!["monitor.stop".into()]),
            "a control file wakes it, by its name"
        );
    }

    /// A file written in place is reported when it is created (still
    /// empty, or half written) and again when it is closed: the second
    /// report is what tells a reader that found it incomplete to read it
    /// again. Each report names it once, however many events it had.
    #[test]
    fn a_file_written_in_place_is_named_again_when_it_is_closed() {
        use std::io::Write as _;

        let dir = tempfile::tempdir().expect("a temporary folder");
        let watch = DirWatch::new(dir.path(), &[]);
        let mut file =
            std::fs::File::create(dir.path().join(message_name(1))).expect("create in place");
        file.write_all(b"{\"half\":").expect("write half");
        file.flush().expect("flush");
        assert_eq!(
            watch.wait_names(SOON),
            Woke::Names(vec![message_name(1)]),
            "its creation"
        );
        file.write_all(b" 1}").expect("write the rest");
        drop(file);
        assert_eq!(
            watch.wait_names(SOON),
            Woke::Names(vec![message_name(1)]),
            "its close after writing"
        );
        assert_eq!(watch.wait_names(QUIET), Woke::TimedOut);
    }

    /// A burst is named file by file, in the order it came, each once per
    /// wake-up (however many wake-ups the waiter needed to keep up); other
    /// names (the log, staging files in `.tmp/`) are not among them.
    #[test]
    fn a_burst_names_each_new_file_in_order() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::create_dir(dir.path().join(".tmp")).expect("a staging folder");
        let watch = DirWatch::new(dir.path(), &[]);
        let names: Vec<String> = (1..=50).map(message_name).collect();
        for name in &names {
            let staged = dir.path().join(".tmp").join(format!("{name}.tmp"));
            std::fs::write(&staged, "{}").expect("stage");
            std::fs::rename(&staged, dir.path().join(name)).expect("deliver");
            std::fs::write(dir.path().join("agent.log"), "a line\n").expect("log");
        }
        // Written twice: named once.
        std::fs::write(dir.path().join(&names[0]), "{ }").expect("rewrite in place");
        let mut reported = Vec::new();
        loop {
            match watch.wait_names(QUIET) {
                Woke::Names(more) => reported.extend(more),
                Woke::TimedOut => break,
                Woke::Unknown => panic!("names are known"),
            }
        }
        // The waiter may have woken before the burst ended: later
        // wake-ups name the rest, and only a rewritten file comes twice.
        assert!(reported.contains(&names[0]), "{reported:?}");
        assert_eq!(
            reported
                .iter()
                .filter(|n| *n != &names[0])
                .collect::<Vec<_>>(),
            names[1..].iter().collect::<Vec<_>>()
        );
        assert!(reported.len() <= names.len() + 1, "{reported:?}");
    }

    /// Drained reports merge: names of both, each once, in order; a report
    /// that cannot name its files makes the whole wake-up `Unknown`, and a
    /// list too long to be worth reading file by file is `Unknown` too.
    #[test]
    fn reports_merge_and_unknown_wins() {
        let names = |n: &[&str]| Woke::Names(n.iter().map(|s| (*s).to_string()).collect());
        assert_eq!(
            names(&["a", "b"]).and(names(&["b", "c"])),
            names(&["a", "b", "c"])
        );
        assert_eq!(names(&["a"]).and(Woke::Unknown), Woke::Unknown);
        assert_eq!(Woke::Unknown.and(names(&["a"])), Woke::Unknown);
        assert_eq!(Woke::TimedOut.and(names(&["a"])), names(&["a"]));
        let many: Vec<String> = (0..=super::MAX_NAMES).map(|n| n.to_string()).collect();
        assert_eq!(Woke::names(many), Woke::Unknown);
    }

    /// What the kernel reports, read by the inotify thread: relevant names
    /// once each; an overflowed queue (names dropped) or a lost watch is
    /// `Unknown`, whatever else came with it.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_inotify_report_names_files_and_is_unknown_after_an_overflow() {
        use inotify::EventMask;
        use std::ffi::OsStr;

        let mail = super::Names::Mail(&["monitor.stop"]);
        let (one, two) = (message_name(1), message_name(2));
        let event = |mask, name: &str| (mask, Some(OsStr::new(name).to_owned()));
        let report = |events: Vec<(EventMask, Option<std::ffi::OsString>)>| {
            super::backend::report(events.iter().map(|(m, n)| (*m, n.as_deref())), mail)
        };
        assert_eq!(
            report(vec![
                event(EventMask::CREATE, &one),
                event(EventMask::CLOSE_WRITE, "agent.log"),
                event(EventMask::CLOSE_WRITE, &one),
                event(EventMask::MOVED_TO, &two),
                event(EventMask::CLOSE_WRITE, "monitor.stop"),
            ]),
            (
                Some(Woke::Names(vec![
                    one.clone(),
                    two.clone(),
                    "monitor.stop".into()
                ])),
                false
            )
        );
        assert_eq!(
            report(vec![event(EventMask::CLOSE_WRITE, "agent.log")]),
            (None, false),
            "nothing relevant: no wake-up"
        );
        assert_eq!(
            report(vec![
                event(EventMask::MOVED_TO, &one),
                (EventMask::Q_OVERFLOW, None),
            ]),
            (Some(Woke::Unknown), false),
            "the kernel dropped events: their names are unknown"
        );
        assert_eq!(
            report(vec![
                (EventMask::DELETE_SELF, None),
                (EventMask::IGNORED, None)
            ]),
            (Some(Woke::Unknown), true),
            "the folder is gone"
        );
    }

    /// Of several folders, one missing does not turn the others' watch
    /// into polling: they still wake it, and it otherwise sleeps.
    #[test]
    fn a_missing_folder_leaves_the_others_watched() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let missing = dir.path().join("missing");
        let watch = DirWatch::watching(
            &[missing.as_path(), dir.path()],
            super::Names::Matching(|n| n.starts_with("to-")),
        );
        assert!(!watch.is_polling());
        assert!(!watch.wait(QUIET), "woke with nothing new");
        std::fs::write(dir.path().join("to-web.md"), "x").expect("new mail");
        assert_eq!(
            watch.wait_names(SOON),
            Woke::Names(vec!["to-web.md".into()]),
            "new mail did not wake it, by name"
        );
    }

    /// Polling (no folder could be watched) never knows what changed.
    #[test]
    fn polling_reports_unknown_names() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let watch = DirWatch::new(&dir.path().join("missing"), &[]);
        assert!(watch.is_polling());
        assert_eq!(watch.wait_names(Duration::from_millis(10)), Woke::Unknown);
    }

    /// A lost watch (the folder deleted) turns into polling rather than a
    /// wait that returns at once and spins its caller.
    #[test]
    fn a_lost_watch_polls_instead_of_spinning() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let inbox = dir.path().join("inbox");
        std::fs::create_dir(&inbox).expect("the inbox");
        let watch = DirWatch::new(&inbox, &[]);
        std::fs::remove_dir(&inbox).expect("remove the inbox");
        // The loss itself wakes it once, and names nothing: the folder
        // may have been replaced by one with other files.
        assert_eq!(watch.wait_names(SOON), Woke::Unknown);
        let start = std::time::Instant::now();
        assert_eq!(watch.wait_names(Duration::from_millis(200)), Woke::Unknown);
        assert!(
            start.elapsed() >= Duration::from_millis(150),
            "returned at once"
        );
    }
}
