//! The id index of received mail, in the private `seen/` folder: 256
//! bucket files named by the first two hex digits of the SHA-256 of a
//! message id, lines of `<message id>\t<file name>`. Written by the
//! receiver when mail is delivered or listed; never trusted over the files
//! (every name it gives is read and checked).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::Inbox;
use crate::fsutil;
use crate::layout::{Private, seen};
use crate::message;

/// A bucket larger than this is not read (lookups list the inbox).
const IDS_LIMIT: u64 = 4 * 1024 * 1024;

impl Inbox<'_> {
    /// The id index's folder (`seen::IDS`), made when missing;
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

    /// Of `names` (files of the processed store), those whose reference may
    /// start with `digits` (see [`crate::shortref::parse`]), found without
    /// reading each: the index gives a file's id, its name the sender it
    /// claims, and the two give its reference. A file the index does not
    /// know, or whose name claims no sender, is a candidate all the same
    /// (it is read); only a file whose name lies about its sender can be
    /// left out, and that file is not the one a person's reference names.
    /// Every candidate is read and checked by the caller. `None` where
    /// this inbox keeps no index.
    pub(super) fn ref_candidates<'n>(
        &self,
        names: &'n [String],
        digits: &str,
    ) -> Option<Vec<&'n String>> {
        let dir = self.index_dir(seen::IDS)?;
        let mut ids: std::collections::HashMap<String, Vec<String>> =
            std::collections::HashMap::new();
        for bucket in fs::read_dir(&dir).ok()?.flatten() {
            for (id, name) in Self::index_pairs(&bucket.path()) {
                ids.entry(name).or_default().push(id);
            }
        }
        let may_match = |name: &String| {
            let claimed = message::parse_file_name(name).map(|parts| parts.sender);
            match (ids.get(name.as_str()), claimed) {
                (Some(ids), Some(sender)) => {
                    crate::shortref::matches(name, digits)
                        || ids.iter().any(|id| {
                            let key = crate::shortref::key(Some((sender, id)), name);
                            crate::shortref::matches(&key, digits)
                        })
                }
                _ => true,
            }
        };
        Some(names.iter().filter(|n| may_match(n)).collect())
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
