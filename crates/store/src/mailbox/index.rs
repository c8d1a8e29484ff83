//! The id index of received mail, in the private `seen/` folder: 256
//! bucket files named by the first two hex digits of the SHA-256 of a
//! message id, lines of `<message id>\t<file name>`; and beside it the
//! file names by the first two hex digits of their short reference, so
//! one file's reference can be made unique without listing. Written by
//! the receiver when mail is delivered or listed; never trusted over the
//! files (every name it gives is read and checked).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::Inbox;
use crate::fsutil;
use crate::layout::{Private, seen};
use crate::message;

/// A bucket larger than this is not read (lookups list the inbox).
const IDS_LIMIT: u64 = 4 * 1024 * 1024;

impl Inbox<'_> {
    /// An index folder (`seen::IDS` or `seen::REFS`), made when missing;
    /// only the receiver keeps an index.
    fn index_dir(&self, name: &str) -> Option<PathBuf> {
        if !self.own {
            return None;
        }
        let dir = self.make_private_dir(Private::Seen).ok()?.join(name);
        fsutil::ensure_state_dir(&dir).ok()?;
        fsutil::check_private_dir(&dir, self.owner)
            .ok()?
            .then_some(dir)
    }

    /// Adds file names to the short-reference index.
    fn index_refs<'a>(&self, names: impl Iterator<Item = &'a str>) {
        let Some(dir) = self.index_dir(seen::REFS) else {
            return;
        };
        let mut buckets: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for name in names.filter(|n| message::is_message_file_name(n)) {
            buckets.entry(ref_bucket(name)).or_default().push(name);
        }
        for (bucket, names) in buckets {
            let path = dir.join(bucket);
            // A bucket that does not read (past its limit) is not added to.
            let Some(known) = read_names(&path) else {
                continue;
            };
            let mut text = String::new();
            for name in names.into_iter().filter(|n| !known.contains(*n)) {
                text.push_str(name);
                text.push('\n');
            }
            append(&path, &text);
        }
    }

    /// The received file names known to share the first two hex digits
    /// of their short reference with `name` (see [`crate::shortref`]), or
    /// `None` where this inbox keeps no such index yet. Names gone since
    /// may be among them; names never indexed are not.
    pub(crate) fn ref_neighbours(&self, name: &str) -> Option<Vec<String>> {
        if !self.own {
            return None;
        }
        let dir = self.private_dir(Private::Seen).ok()??.join(seen::REFS);
        if !fsutil::check_private_dir(&dir, self.owner).ok()? {
            return None;
        }
        Some(
            read_names(&dir.join(ref_bucket(name)))?
                .into_iter()
                .collect(),
        )
    }

    /// The file names the index gives for message id `id`, sorted: hints
    /// only, each read and checked before it is used.
    pub(super) fn indexed_names(&self, id: &str) -> Vec<String> {
        let Some(dir) = self.index_dir(seen::IDS) else {
            return Vec::new();
        };
        let Ok(Some(bytes)) = fsutil::read_state(&dir.join(id_bucket(id)), IDS_LIMIT) else {
            return Vec::new();
        };
        let mut names: Vec<String> = index_lines(&bytes)
            .filter(|(i, _)| *i == id)
            .map(|(_, n)| n.to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The (message id, file name) pairs of one bucket of the id index,
    /// in the order they were added; none when it does not read.
    pub(super) fn index_pairs(bucket: &Path) -> Vec<(String, String)> {
        let Ok(Some(bytes)) = fsutil::read_state(bucket, IDS_LIMIT) else {
            return Vec::new();
        };
        index_lines(&bytes)
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .collect()
    }

    /// Adds the (message id, file name) pairs the index lacks. Best
    /// effort: an index that cannot be written only makes lookups by id
    /// list the inbox. Lines are appended, each bucket in one write, so
    /// writers at the same time lose nothing.
    pub(super) fn index_ids(&self, pairs: &[(&str, &str)]) {
        if pairs.is_empty() {
            return;
        }
        let Some(dir) = self.index_dir(seen::IDS) else {
            return;
        };
        let mut buckets: BTreeMap<String, Vec<(&str, &str)>> = BTreeMap::new();
        for &(id, name) in pairs {
            if index_line_ok(id, name) {
                buckets.entry(id_bucket(id)).or_default().push((id, name));
            }
        }
        self.index_refs(pairs.iter().map(|(_, name)| *name));
        for (bucket, pairs) in buckets {
            let path = dir.join(bucket);
            // A bucket that does not read (past its limit, not a file) is
            // never used: adding to it would only grow it.
            let Ok(bytes) = fsutil::read_state(&path, IDS_LIMIT) else {
                continue;
            };
            let bytes = bytes.unwrap_or_default();
            let mut text = String::new();
            for (id, name) in pairs {
                let line = format!("{id}\t{name}\n");
                // A search of the bucket's bytes, not a set of its lines: a
                // bucket of a large history holds hundreds of them.
                let known = bytes.starts_with(line.as_bytes())
                    || contains(&bytes, format!("\n{line}").as_bytes());
                if !known && !text.contains(&line) {
                    text.push_str(&line);
                }
            }
            append(&path, &text);
        }
    }
}

/// Whether `haystack` holds `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Appends `text` to an index bucket in one write (nothing when empty).
fn append(path: &Path, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Ok(mut file) = fsutil::open_append(path) {
        use std::io::Write as _;
        let _ = file.write_all(text.as_bytes());
    }
}

fn ref_bucket(name: &str) -> String {
    fsutil::sha256_hex(name.as_bytes())[..2].to_string()
}

/// The message file names in a reference bucket (none where there is no
/// bucket yet); `None` when it does not read.
fn read_names(path: &Path) -> Option<HashSet<String>> {
    let names = fsutil::read_state(path, IDS_LIMIT)
        .ok()?
        .map(|b| {
            b.split(|c| *c == b'\n')
                .filter_map(|l| std::str::from_utf8(l).ok())
                .filter(|n| message::is_message_file_name(n))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Some(names)
}

fn id_bucket(id: &str) -> String {
    fsutil::sha256_hex(id.as_bytes())[..2].to_string()
}

/// What an index line may hold: an id without tabs or line breaks and a
/// message file name.
fn index_line_ok(id: &str, name: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && !id.contains(['\t', '\n', '\r'])
        && message::is_message_file_name(name)
}

/// The well-formed lines of a bucket; anything else is skipped.
fn index_lines(bytes: &[u8]) -> impl Iterator<Item = (&str, &str)> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| std::str::from_utf8(line).ok())
        .filter_map(|line| line.split_once('\t'))
        .filter(|(id, name)| index_line_ok(id, name))
}
