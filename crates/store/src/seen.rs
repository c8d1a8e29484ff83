//! What the receiver last worked out from its inbox, kept so that a
//! command can answer without listing again when nothing moved.
//!
//! Between two prompts of an agent almost nothing changes in `.aea/`, yet
//! every `check`, harness hook and git hook used to list both folders and
//! read, verify and judge every unprocessed message: time growing with the
//! inbox. A [`Memo`] keeps the answer together with a [`Stamp`] of every
//! path it was worked out from (the folders, each unprocessed file, the
//! config, the registry). The next command stats those paths — a few
//! hundred microseconds — and uses the answer only if every stamp is the
//! same and was already *settled* when it was taken.
//!
//! Why that cannot hide mail:
//! - A stamp holds the inode's change time (`ctime`), which no user can
//!   set, with its device, inode, size and modification time: creating,
//!   renaming or deleting a file in a folder, or writing a file in place,
//!   moves it on. A folder swapped for another is another inode.
//! - Timestamps come from a coarse clock: two changes within one tick can
//!   carry the same time. A memo is only trusted when every stamp it
//!   records is older than [`SETTLE`] before it was taken (the "racy git"
//!   rule), so a change made after the listing began always shows.
//! - Memos live in the receiver's private `seen/` (a state folder: `0700`,
//!   owned by the receiver) and carry an HMAC under a key kept in the
//!   user's cache dir, never in the repository: a memo written by anyone
//!   else (a sender sharing the folder, a cloned repository's committed
//!   files) does not verify and is ignored. A memo never stands for
//!   another inbox: the inbox path is part of what is authenticated.
//! - A memo is a cache: when anything is in doubt it is not used, and a
//!   command that cannot write one still answers.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::Sha256;

use crate::fsutil;

/// An empty folder in the private `seen/` whose change time says when aea
/// last found no unprocessed mail: the pre-commit script compares the
/// change times of the inbox folders and the config against it (`find
/// -newercc`: no tool sets a change time, so a marker touched into the
/// future says nothing) and starts aea unless all are older. It lives in
/// the git directory, where no clone, checkout or pull writes; empty,
/// with the sticky bit, as a second wall (git never sets that bit).
///
/// It also says that none of the inbox's own state (mail, markers, the
/// log) was staged in git's index when it was made: the script compares
/// the index against it too. After a `git add` (of a `.aea/` whose
/// committed `.gitignore` a pull emptied) the script asks git what is
/// staged under `.aea/`, and aea starts and refuses the commit; a `git
/// add` before the marker kept it from being made.
pub use crate::layout::seen::QUIET;
/// How old every recorded time must be, relative to when the memo was
/// taken, before the memo is trusted. Covers coarse kernel clocks (a tick)
/// and file systems that keep whole or even seconds.
pub const SETTLE: Duration = Duration::from_secs(2);
/// The key file, in the user's cache dir.
const KEY_FILE: &str = "seen.key";
/// Largest memo read back: an inbox of unprocessed mail this large is
/// listed instead.
const MEMO_LIMIT: u64 = 64 * 1024 * 1024;
/// Bumped whenever what a memo holds changes meaning.
const FORMAT: u32 = 1;

/// What one `lstat` saw of a path: enough to tell that it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    /// Modification and change time, nanoseconds since the epoch.
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    /// The stamp of `path` (not following a symlink); `None` when absent
    /// or unreadable, which is itself recorded and compared.
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = fs::symlink_metadata(path).ok()?;
        Some(Stamp::from_meta(&meta))
    }

    #[cfg(unix)]
    fn from_meta(meta: &fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            size: meta.size(),
            mtime: ns(meta.mtime(), meta.mtime_nsec()),
            ctime: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    #[cfg(not(unix))]
    fn from_meta(meta: &fs::Metadata) -> Stamp {
        // Without a change time nothing is ever settled: always list.
        Stamp {
            dev: 0,
            ino: 0,
            mode: 0,
            size: meta.len(),
            mtime: i128::MAX,
            ctime: i128::MAX,
        }
    }

    /// Whether both times lie at least `settle` before `taken` (ns).
    fn settled(&self, taken: i128, settle: i128) -> bool {
        self.mtime < taken - settle && self.ctime < taken - settle
    }
}

/// Nanoseconds since the epoch, now.
pub(crate) fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// The paths an answer was worked out from, stamped before they were read.
#[derive(Debug, Default)]
pub struct Watched {
    taken: i128,
    paths: Vec<(PathBuf, Option<Stamp>)>,
    /// The paths recorded, so that adding one is not a walk through all.
    known: HashSet<PathBuf>,
}

impl Watched {
    /// Starts a record at the current time.
    pub fn start() -> Self {
        Watched {
            taken: now_ns(),
            paths: Vec::new(),
            known: HashSet::new(),
        }
    }

    /// Stamps `path` now. Stamp before reading: a change made while the
    /// answer is worked out then shows as a different stamp next time.
    pub fn add(&mut self, path: PathBuf) {
        if !self.known.contains(&path) {
            let stamp = Stamp::of(&path);
            self.known.insert(path.clone());
            self.paths.push((path, stamp));
        }
    }

    /// Records `path` with the `stamp` an earlier answer saw and found
    /// unchanged just now: what [`Parts`] vouched for needs no second
    /// `stat`.
    pub fn add_seen(&mut self, path: PathBuf, stamp: Stamp) {
        if !self.known.contains(&path) {
            self.known.insert(path.clone());
            self.paths.push((path, Some(stamp)));
        }
    }

    /// The paths of this record that `keep` says an answer depends on,
    /// with their stamps, taken at the same time: for a smaller answer
    /// worked out from part of what this one was.
    #[must_use]
    pub fn keeping(&self, keep: impl Fn(&Path) -> bool) -> Watched {
        Self::of(
            self.taken,
            self.paths
                .iter()
                .filter(|(p, _)| keep(p))
                .cloned()
                .collect(),
        )
    }

    /// A record taken at `taken` (ns since the epoch) of `paths` as they
    /// were stamped then.
    #[must_use]
    pub fn of(taken: i128, paths: Vec<(PathBuf, Option<Stamp>)>) -> Watched {
        let known = paths.iter().map(|(p, _)| p.clone()).collect();
        Watched {
            taken,
            paths,
            known,
        }
    }

    /// Whether every stamp is old enough to be trusted (see [`SETTLE`]).
    fn settled(&self, settle: i128) -> bool {
        self.paths
            .iter()
            .all(|(_, s)| s.is_none_or(|s| s.settled(self.taken, settle)))
    }

    /// Whether every path still has the stamp recorded.
    fn unchanged(&self) -> bool {
        self.paths.iter().all(|(p, s)| Stamp::of(p) == *s)
    }

    /// The latest modification time recorded, if any path exists.
    fn newest(&self) -> Option<i128> {
        self.paths
            .iter()
            .filter_map(|(_, s)| s.map(|s| s.mtime))
            .max()
    }
}

/// A remembered answer, whatever moved since it was worked out
/// ([`Memos::recall_parts`]).
pub struct Parts<T> {
    pub value: T,
    /// When it was worked out (ns since the epoch).
    pub taken: i128,
    /// When the answer goes stale whatever the files say (ns).
    pub valid_until: Option<i128>,
    /// Each path it was worked out from, with its stamp then, and whether
    /// that stamp is still the path's and was settled when it was taken.
    pub paths: Vec<(PathBuf, Option<Stamp>, bool)>,
}

/// A remembered answer of type `T` and what it was worked out from.
#[derive(Serialize, Deserialize)]
struct Stored<T> {
    format: u32,
    /// Everything besides the paths that the answer depends on: the inbox,
    /// the binary, where the registry and keys are.
    context: String,
    taken: i128,
    /// After this time (ns) the answer is stale whatever the files say
    /// (a message expires).
    valid_until: Option<i128>,
    paths: Vec<(PathBuf, Option<Stamp>)>,
    value: T,
}

/// Memos of one inbox: where they live and the key they are sealed with.
pub struct Memos {
    dir: PathBuf,
    key: [u8; 32],
    context: String,
    /// [`SETTLE`], in nanoseconds (shorter in tests).
    settle: i128,
}

impl Memos {
    /// The memos of the inbox `aea_dir` (its private `seen/`, which must be a
    /// sound state folder already), sealed with the user's key in
    /// `cache_dir` (created there on first use). `context` names what else
    /// the answers depend on; `settle` is [`SETTLE`] but in tests. `None`
    /// when there is no key to be had.
    pub fn open(
        aea_dir: &Path,
        seen_dir: PathBuf,
        cache_dir: &Path,
        context: &str,
        settle: Duration,
    ) -> Option<Self> {
        let key = user_key(cache_dir)?;
        Some(Memos {
            dir: seen_dir,
            key,
            settle: i128::try_from(settle.as_nanos()).unwrap_or(i128::MAX),
            context: format!("{FORMAT}\n{}\n{context}", aea_dir.display()),
        })
    }

    /// The answer remembered as `name`, if it verifies and every path it
    /// records is unchanged and was settled, and it has not expired by
    /// `now` (ns, the command's clock).
    pub fn recall<T: DeserializeOwned>(&self, name: &str, now: i128) -> Option<T> {
        let stored: Stored<T> = self.open_sealed(name)?;
        let fresh = stored.valid_until.is_none_or(|t| now < t)
            && stored.paths.iter().all(|(p, s)| {
                s.is_none_or(|s| s.settled(stored.taken, self.settle)) && Stamp::of(p) == *s
            });
        fresh.then_some(stored.value)
    }

    /// The answer remembered as `name` whatever moved since, with each
    /// path it was worked out from judged: still as recorded, and settled
    /// when it was taken (see [`SETTLE`]). For an answer worked out again
    /// only where something changed. `None` if it does not verify or has
    /// expired by `now`.
    pub fn recall_parts<T: DeserializeOwned>(&self, name: &str, now: i128) -> Option<Parts<T>> {
        let stored: Stored<T> = self.open_sealed(name)?;
        if stored.valid_until.is_some_and(|t| now >= t) {
            return None;
        }
        let paths = stored
            .paths
            .into_iter()
            .map(|(p, s)| {
                let good =
                    s.is_none_or(|s| s.settled(stored.taken, self.settle)) && Stamp::of(&p) == s;
                (p, s, good)
            })
            .collect();
        Some(Parts {
            value: stored.value,
            taken: stored.taken,
            valid_until: stored.valid_until,
            paths,
        })
    }

    /// The answer remembered as `name` if it is ours (it verifies), however
    /// old: for hints that are checked anyway.
    pub fn peek<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.open_sealed::<T>(name).map(|stored| stored.value)
    }

    /// Memo `name` if its seal verifies and it was made by this format, for
    /// this inbox and context.
    fn open_sealed<T: DeserializeOwned>(&self, name: &str) -> Option<Stored<T>> {
        let bytes = fsutil::read_state(&self.dir.join(name), MEMO_LIMIT).ok()??;
        let (mac, body) = bytes.split_at_checked(64)?;
        let body = body.strip_prefix(b"\n")?;
        if !verify(&self.key, body, mac) {
            return None;
        }
        let stored: Stored<T> = serde_json::from_slice(body).ok()?;
        (stored.format == FORMAT && stored.context == self.context).then_some(stored)
    }

    /// Remembers `value` as `name`, worked out from `watched`. A path
    /// still unsettled is kept too: [`Self::recall`] then does not trust
    /// the whole answer, and [`Self::recall_parts`] says which parts are
    /// good. Best effort: a memo that cannot be written costs only time.
    pub fn keep<T: Serialize>(
        &self,
        name: &str,
        watched: Watched,
        valid_until: Option<i128>,
        value: &T,
    ) {
        let stored = Stored {
            format: FORMAT,
            context: self.context.clone(),
            taken: watched.taken,
            valid_until,
            paths: watched.paths,
            value,
        };
        let Ok(body) = serde_json::to_vec(&stored) else {
            return;
        };
        let mut bytes = hex(&hmac(&self.key, &body)).into_bytes();
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        let _ = fsutil::replace_cache_via(&self.dir, &self.dir.join(name), &bytes);
    }

    /// Marks the inbox quiet (see [`QUIET`]) when `watched` (its folders)
    /// settled before the marker's own time and `unstaged` says, once the
    /// marker is made, that git's index holds none of the inbox's state;
    /// or removes the marker.
    pub fn set_quiet(&self, quiet: bool, watched: &Watched, unstaged: impl FnOnce() -> bool) {
        let marker = self.dir.join(QUIET);
        let _ = fs::remove_dir(&marker);
        // A file system may keep whole seconds: the folders must be older
        // than the marker by more than a second.
        let old_enough = watched.newest().is_none_or(|t| t < now_ns() - self.settle);
        // Mail that arrived while the inbox was listed moved a folder
        // before the marker was made, so the folder is older than it: look
        // again once it is made. A change after this look is newer. The
        // index likewise: one written before this look is looked at, one
        // written after it is newer than the marker.
        if quiet
            && watched.settled(self.settle)
            && old_enough
            && make_marker(&marker).is_ok()
            && !(watched.unchanged() && unstaged())
        {
            let _ = fs::remove_dir(&marker);
        }
    }
}

/// Makes the [`QUIET`] marker: a new folder, `0700` with the sticky bit.
/// Git checks a submodule entry out as an empty folder, so a commit can
/// bring an empty folder; git never sets the sticky bit, which the script
/// asks for.
fn make_marker(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        fs::DirBuilder::new().mode(0o700).create(path)?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o1700))
    }
    #[cfg(not(unix))]
    {
        // No script compares times there: no marker.
        let _ = path;
        Ok(())
    }
}

/// The user's memo key: 32 random bytes in `cache_dir`, readable by the
/// user only, created on first use.
fn user_key(cache_dir: &Path) -> Option<[u8; 32]> {
    let path = cache_dir.join(KEY_FILE);
    if let Ok(Some(bytes)) = fsutil::read_state(&path, 64) {
        return <[u8; 32]>::try_from(bytes.as_slice()).ok();
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).ok()?;
    fs::create_dir_all(cache_dir).ok()?;
    let tmp = cache_dir.join(format!("{KEY_FILE}.{}", std::process::id()));
    write_private(&tmp, &key).ok()?;
    // Two first runs at once: the first key to land wins, both read it.
    let _ = fs::hard_link(&tmp, &path);
    let _ = fs::remove_file(&tmp);
    let bytes = fsutil::read_state(&path, 64).ok()??;
    <[u8; 32]>::try_from(bytes.as_slice()).ok()
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(bytes)
}

/// An HMAC-SHA-256 (RFC 2104) under `key`, waiting for its message.
fn seal(key: &[u8; 32]) -> Hmac<Sha256> {
    <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length")
}

/// The HMAC-SHA-256 of `message` under `key`.
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    seal(key)
        .chain_update(message)
        .finalize()
        .into_bytes()
        .into()
}

/// Whether `mac` (64 hex digits, as [`hex`] writes them) is the HMAC of
/// `message` under `key`; compared in constant time by the `hmac` crate.
fn verify(key: &[u8; 32], message: &[u8], mac: &[u8]) -> bool {
    let Some(bytes) = unhex(mac) else {
        return false;
    };
    seal(key).chain_update(message).verify_slice(&bytes).is_ok()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The bytes of lower-case hex digits; `None` for anything else.
fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 uses a 4-byte key; ours are 32 bytes, zero-padded to
        // the block like any short key, so a key of "Jefe" and 28 zeros is
        // the same HMAC key.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex(&hmac(&key, b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// Memos sealed before the `hmac` crate replaced the hand-written
    /// HMAC still open: these seals were computed by that code (key bytes
    /// 0..=31), one message shorter and one longer than a block.
    #[test]
    fn seals_made_by_the_earlier_code_still_verify() {
        let key: [u8; 32] = std::array::from_fn(|i| u8::try_from(i).unwrap());
        let long = br#"{"format":1,"context":"1\n/repo/.aea\ncheck"}"#.repeat(3);
        for (message, seal) in [
            (
                &b"aea seen memo"[..],
                "49a0d26cc5040657d4a03dbadedc153651e9279d24a5d536176fbedf31169ce1",
            ),
            (
                &long[..],
                "b33ae1fd962e256d8b6d1f7f0877d75bbadfc8373c4b53276deeca09a30e0b15",
            ),
            (
                &b""[..],
                "d38b42096d80f45f826b44a9d5607de72496a415d3f4a1a8c88e3bb9da8dc1cb",
            ),
        ] {
            assert_eq!(hex(&hmac(&key, message)), seal);
            assert!(verify(&key, message, seal.as_bytes()));
        }
        // One digit off, upper case, short or not hex: refused.
        let good = "49a0d26cc5040657d4a03dbadedc153651e9279d24a5d536176fbedf31169ce1";
        for bad in [
            good.replace("49a0", "49a1"),
            good.to_uppercase(),
            good[..62].to_string(),
            good.replace("49", "zz"),
        ] {
            assert!(!verify(&key, b"aea seen memo", bad.as_bytes()), "{bad}");
        }
    }

    const SHORT: Duration = Duration::from_millis(30);
    /// Where these tests keep memos.
    const SEEN: &str = "seen";

    fn memos(dir: &Path) -> Memos {
        let seen = dir.join(".aea").join(SEEN);
        fs::create_dir_all(&seen).unwrap();
        Memos::open(&dir.join(".aea"), seen, &dir.join("cache"), "test", SHORT).unwrap()
    }

    /// Waits until everything written so far is older than SHORT: time
    /// passing is the condition itself here (change times cannot be set).
    fn settle() {
        std::thread::sleep(SHORT * 2);
    }

    #[test]
    fn a_memo_is_recalled_only_while_nothing_it_was_made_from_moved() {
        let dir = tempfile::tempdir().unwrap();
        let memos = memos(dir.path());
        let input = dir.path().join("input");
        fs::write(&input, "one").unwrap();
        settle();
        let mut watched = Watched::start();
        watched.add(input.clone());
        memos.keep("m", watched, None, &"answer");
        assert_eq!(
            memos.recall::<String>("m", now_ns()).as_deref(),
            Some("answer")
        );
        // Rewritten in place, same size: the change time moved.
        fs::write(&input, "two").unwrap();
        assert_eq!(memos.recall::<String>("m", now_ns()), None);
    }

    #[test]
    fn an_unsettled_input_is_never_trusted_whole_nor_in_part() {
        let dir = tempfile::tempdir().unwrap();
        let memos = memos(dir.path());
        let old = dir.path().join("old");
        fs::write(&old, "settled").unwrap();
        settle();
        let fresh = dir.path().join("fresh");
        fs::write(&fresh, "fresh").unwrap();
        let mut watched = Watched::start();
        watched.add(old.clone());
        watched.add(fresh.clone());
        memos.keep("m", watched, None, &"answer");
        // Even once both are old, the answer was taken while one was not.
        settle();
        assert_eq!(memos.recall::<String>("m", now_ns()), None);
        let parts = memos.recall_parts::<String>("m", now_ns()).unwrap();
        let good = |path: &Path| parts.paths.iter().find(|(p, ..)| p == path).unwrap().2;
        assert!(good(&old), "the settled input is a good part");
        assert!(!good(&fresh), "the unsettled one is not");
        // A part that changed since is not good either.
        fs::write(&old, "changed").unwrap();
        let parts = memos.recall_parts::<String>("m", now_ns()).unwrap();
        assert!(!parts.paths.iter().find(|(p, ..)| *p == old).unwrap().2);
    }

    #[test]
    fn a_forged_or_foreign_memo_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let memos = memos(dir.path());
        let mut watched = Watched::start();
        watched.add(dir.path().join("absent"));
        memos.keep("m", watched, None, &"answer");
        assert_eq!(
            memos.recall::<String>("m", now_ns()).as_deref(),
            Some("answer")
        );
        let path = dir.path().join(".aea").join(SEEN).join("m");
        let bytes = fs::read(&path).unwrap();
        // The same body with another answer and the old MAC.
        let forged = String::from_utf8(bytes.clone())
            .unwrap()
            .replace("\"answer\"", "\"forged\"");
        fs::write(&path, forged).unwrap();
        assert_eq!(memos.recall::<String>("m", now_ns()), None);
        // The genuine bytes under another user's key: not ours.
        fs::write(&path, &bytes).unwrap();
        let seen = dir.path().join(".aea").join(SEEN);
        let other = Memos::open(
            &dir.path().join(".aea"),
            seen.clone(),
            &dir.path().join("other-cache"),
            "test",
            SHORT,
        )
        .unwrap();
        assert_eq!(other.recall::<String>("m", now_ns()), None);
        // Nor for another inbox, another context, or once it expired.
        let cache = dir.path().join("cache");
        let elsewhere = Memos::open(
            &dir.path().join("elsewhere"),
            seen.clone(),
            &cache,
            "test",
            SHORT,
        )
        .unwrap();
        assert_eq!(elsewhere.recall::<String>("m", now_ns()), None);
        let other_registry =
            Memos::open(&dir.path().join(".aea"), seen, &cache, "other", SHORT).unwrap();
        assert_eq!(other_registry.recall::<String>("m", now_ns()), None);
        let mut watched = Watched::start();
        watched.add(dir.path().join("absent"));
        memos.keep("m", watched, Some(now_ns() - 1), &"answer");
        assert_eq!(memos.recall::<String>("m", now_ns()), None);
    }

    #[test]
    fn mail_that_arrives_while_the_inbox_is_listed_leaves_it_not_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let memos = memos(dir.path());
        let inbox = dir.path().join("inbox");
        fs::create_dir(&inbox).unwrap();
        settle();
        let mut watched = Watched::start();
        watched.add(inbox.clone());
        // Delivered after the folder was stamped, before the marker: the
        // hook's `test inbox -ot quiet` would hold and skip aea.
        fs::write(inbox.join("message-new.json"), "{}").unwrap();
        settle();
        memos.set_quiet(true, &watched, || true);
        assert!(!dir.path().join(".aea").join(SEEN).join(QUIET).exists());
        // Nothing moved: quiet, unless the inbox's state is staged.
        let mut watched = Watched::start();
        watched.add(inbox);
        memos.set_quiet(true, &watched, || false);
        assert!(!dir.path().join(".aea").join(SEEN).join(QUIET).exists());
        memos.set_quiet(true, &watched, || true);
        assert!(dir.path().join(".aea").join(SEEN).join(QUIET).is_dir());
    }

    #[test]
    fn a_path_that_appears_voids_the_memo() {
        let dir = tempfile::tempdir().unwrap();
        let memos = memos(dir.path());
        let absent = dir.path().join("later");
        let mut watched = Watched::start();
        watched.add(absent.clone());
        memos.keep("m", watched, None, &1u32);
        assert_eq!(memos.recall::<u32>("m", now_ns()), Some(1));
        fs::write(&absent, "now here").unwrap();
        assert_eq!(memos.recall::<u32>("m", now_ns()), None);
    }
}
