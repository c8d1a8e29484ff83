//! Bridges to other file protocols agents already use (SPEC §12): pure
//! conversions between their files and [`crate::message::Message`], one
//! module per protocol, and what they share: the patch that carries the
//! AEA fields a foreign format has no place for, and a YAML scalar writer.
//!
//! Losslessness works the same way for every bridge. Converting a message
//! out writes the foreign file from the fields that protocol has; reading
//! that file back gives a message that may differ (a timestamp cut to
//! seconds, no `repo_path`, a body the other side could not take). The
//! differences are computed and written into the file as one
//! [`Patch`] line that the foreign tool sees as an opaque reference;
//! reading the file applies it, so AEA → foreign → AEA is exact by
//! construction, and a file written by hand (no patch) is read from its
//! own fields alone.

pub mod live;
pub mod oacp;
pub(crate) mod roo;
pub mod transfer;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The prefix of the line that carries a [`Patch`] inside a foreign file.
pub(crate) const PATCH_PREFIX: &str = "aea-patch: ";

/// The AEA fields a foreign file does not carry by itself: JSON pointers
/// (RFC 6901) to set to a value, and pointers to remove, applied to the
/// message read from the foreign fields. Arrays are replaced whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Patch {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unset: Vec<String>,
}

impl Patch {
    /// What turns `read` into `wanted`.
    pub(crate) fn between(read: &Value, wanted: &Value) -> Patch {
        let mut patch = Patch::default();
        diff(read, wanted, &mut String::new(), &mut patch);
        patch
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.set.is_empty() && self.unset.is_empty()
    }

    /// One line: the prefix and compact JSON (which never holds a newline).
    pub(crate) fn to_line(&self) -> String {
        format!(
            "{PATCH_PREFIX}{}",
            serde_json::to_string(self).expect("a patch always serialises")
        )
    }

    pub(crate) fn from_line(line: &str) -> Option<Result<Patch, String>> {
        let json = line.strip_prefix(PATCH_PREFIX)?;
        Some(
            serde_json::from_str(json).map_err(|e| format!("unreadable {PATCH_PREFIX:?}line: {e}")),
        )
    }

    pub(crate) fn apply(&self, value: &mut Value) -> Result<(), String> {
        // A pointer a patch of ours holds points into a message, which is
        // never deeper than a message file may be; a longer one (`/a/a/…`
        // a million times, from a hostile file) would build a value too deep
        // to walk or drop without overflowing the stack.
        if let Some(deep) = self
            .unset
            .iter()
            .chain(self.set.keys())
            .find(|p| p.matches('/').count() > crate::message::MAX_DEPTH)
        {
            return Err(format!(
                "patch path {:?}… is nested deeper than {} levels",
                deep.chars().take(40).collect::<String>(),
                crate::message::MAX_DEPTH
            ));
        }
        for pointer in &self.unset {
            let (parent, key) = split_pointer(pointer)?;
            if let Some(Value::Object(map)) = value.pointer_mut(&parent) {
                map.remove(&key);
            }
        }
        for (pointer, new) in &self.set {
            if pointer.is_empty() {
                *value = new.clone();
                continue;
            }
            let (parent, key) = split_pointer(pointer)?;
            let mut at = &mut *value;
            for part in parent.split('/').skip(1) {
                let part = unescape(part);
                let Value::Object(map) = at else {
                    return Err(format!("patch path {pointer:?} runs through a non-object"));
                };
                at = map.entry(part).or_insert_with(|| Value::Object(Map::new()));
            }
            let Value::Object(map) = at else {
                return Err(format!("patch path {pointer:?} runs through a non-object"));
            };
            map.insert(key, new.clone());
        }
        Ok(())
    }
}

/// The message a foreign file describes: `message` read from its fields,
/// with the file's `patch` (named `what` in errors) applied, checked as an
/// AEA message file is, nesting included, so that what is delivered reads
/// back from the inbox.
fn finish(
    message: crate::message::Message,
    patch: Option<&Patch>,
    what: &str,
) -> Result<crate::message::Message, String> {
    let mut value = serde_json::to_value(&message).expect("a message always serialises");
    if let Some(patch) = patch {
        patch.apply(&mut value)?;
    }
    if crate::message::depth(&value) > crate::message::MAX_DEPTH {
        return Err(format!(
            "nested deeper than {} levels (an AEA message may not be)",
            crate::message::MAX_DEPTH
        ));
    }
    let message = match patch {
        None => message,
        Some(_) => {
            serde_json::from_value(value).map_err(|e| format!("{what} gives no message: {e}"))?
        }
    };
    crate::message::validate(&message)?;
    Ok(message)
}

fn diff(read: &Value, wanted: &Value, path: &mut String, patch: &mut Patch) {
    match (read, wanted) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                patch.unset.push(format!("{path}/{}", escape(key)));
            }
            for (key, b_value) in b {
                let len = path.len();
                path.push('/');
                path.push_str(&escape(key));
                match a.get(key) {
                    Some(a_value) => diff(a_value, b_value, path, patch),
                    None => {
                        patch.set.insert(path.clone(), b_value.clone());
                    }
                }
                path.truncate(len);
            }
        }
        (a, b) if a == b => {}
        (_, b) => {
            patch.set.insert(path.clone(), b.clone());
        }
    }
}

fn split_pointer(pointer: &str) -> Result<(String, String), String> {
    match pointer.rsplit_once('/') {
        Some((parent, key)) if pointer.starts_with('/') => Ok((parent.to_string(), unescape(key))),
        _ => Err(format!("patch path {pointer:?} is not a JSON pointer")),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn unescape(part: &str) -> String {
    part.replace("~1", "/").replace("~0", "~")
}

/// A YAML double-quoted scalar that every YAML 1.1 and 1.2 reader (PyYAML
/// included) reads back as exactly `text`: JSON's escapes, plus `\u`
/// escapes for what YAML 1.1 does not allow raw in a stream (DEL, C1
/// controls, U+FFFE/FFFF) or takes as a line break inside quotes (NEL,
/// U+2028, U+2029).
pub(crate) fn yaml_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn needs_escape(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}')
}

/// `key: <text>` as a literal block scalar when `text` reads well as one
/// (printable, not blank), else as a quoted scalar. The chomping indicator
/// keeps trailing newlines exact; an indentation indicator is added only
/// when the first line that is not empty starts with a space (YAML would
/// otherwise take its spaces as the block's indentation, and reject the
/// lines after it: OACP's validator did, for a body of blank lines and an
/// indented line), because OACP's fallback reader (no PyYAML) knows `|`,
/// `|-` and `|+` only.
pub(crate) fn yaml_text_field(key: &str, text: &str) -> String {
    let plain = !text.trim().is_empty()
        && !text
            .chars()
            .any(|c| c != '\n' && (needs_escape(c) || c == '\t'));
    if !plain {
        return format!("{key}: {}\n", yaml_quoted(text));
    }
    let trimmed = text.trim_end_matches('\n');
    let chomp = match text.len() - trimmed.len() {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let indent = if text.trim_start_matches('\n').starts_with(' ') {
        "2"
    } else {
        ""
    };
    let mut out = format!("{key}: |{indent}{chomp}\n");
    for line in text.split_inclusive('\n') {
        if line == "\n" {
            out.push('\n');
        } else {
            out.push_str("  ");
            out.push_str(line);
        }
    }
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The files of `tests/bridge-corpus/<protocol>/<kind>/`, by name, sorted.
#[cfg(test)]
fn test_corpus(protocol: &str, kind: &str) -> Vec<(String, String)> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/bridge-corpus")
        .join(protocol)
        .join(kind);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patch_turns_one_value_into_the_other() {
        let read = json!({"a": 1, "b": {"c": 2, "gone": true}, "x": [1]});
        let wanted = json!({"a": 1, "b": {"c": 3, "new/key~": null}, "x": [1, 2], "y": {"z": 1}});
        let patch = Patch::between(&read, &wanted);
        let line = patch.to_line();
        assert!(!line.contains('\n'));
        let back = Patch::from_line(&line).unwrap().unwrap();
        let mut value = read.clone();
        back.apply(&mut value).unwrap();
        assert_eq!(value, wanted);
        assert!(Patch::between(&wanted, &wanted).is_empty());
    }

    /// A hostile patch path a million levels deep is refused, not walked
    /// (building it overflowed the stack and aborted `aea bridge`).
    #[test]
    fn a_patch_path_deeper_than_a_message_is_refused() {
        let deep = format!("/message/context{}", "/a".repeat(200_000));
        let patch = Patch {
            set: std::iter::once((deep, json!(1))).collect(),
            unset: Vec::new(),
        };
        let mut value = json!({"message": {"context": {}}});
        let err = patch.apply(&mut value).unwrap_err();
        assert!(err.contains("deeper than"), "{err}");
        // Through the parsers, as a file carries it.
        let oacp = format!(
            "id: x-1\nfrom: codex\nto: web\ntype: question\npriority: P2\n\
             created_at_utc: \"2026-11-23T09:00:00Z\"\nsubject: s\nbody: b\n\
             context_keys: {}\n",
            yaml_quoted(&patch.to_line())
        );
        assert!(
            super::oacp::parse(&oacp)
                .unwrap_err()
                .contains("deeper than")
        );
        let roo = format!(
            "---\nfrom: x\ntimestamp: \"2026-11-23T09:00:00Z\"\nid: r-1\naea-patch: {}\n---\nhi\n",
            yaml_quoted(&serde_json::to_string(&patch).unwrap())
        );
        assert!(
            super::roo::parse(&roo, "web")
                .unwrap_err()
                .contains("deeper than")
        );
        // Nesting the file's own fields carry is held to a message's limit
        // too: what is delivered must read back from the inbox.
        let nested = format!(
            "id: x-2\nfrom: codex\nto: web\ntype: question\npriority: P2\n\
             created_at_utc: \"2026-11-23T09:00:00Z\"\nsubject: s\nbody: b\nchannel: {}{}\n",
            "[".repeat(60),
            "]".repeat(60)
        );
        assert!(
            super::oacp::parse(&nested)
                .unwrap_err()
                .contains("deeper than")
        );
    }

    #[test]
    fn quoted_scalars_escape_what_yaml_would_change() {
        assert_eq!(
            yaml_quoted("a\"b\\c\nd\u{7f}\u{2028}"),
            r#""a\"b\\c\nd\u007f\u2028""#
        );
    }

    #[test]
    fn text_fields_keep_trailing_newlines() {
        assert_eq!(yaml_text_field("body", "a\nb"), "body: |-\n  a\n  b\n");
        assert_eq!(yaml_text_field("body", "a\n\nb\n"), "body: |\n  a\n\n  b\n");
        assert_eq!(yaml_text_field("body", "a\n\n"), "body: |+\n  a\n\n");
        assert_eq!(yaml_text_field("body", " a"), "body: |2-\n   a\n");
        // Blank lines before an indented one: the indicator is needed too
        // (found by scripts/oacp-e2e: PyYAML refused the file without it).
        assert_eq!(
            yaml_text_field("body", "\n\n   x\ny\n"),
            "body: |2\n\n\n     x\n  y\n"
        );
        assert_eq!(yaml_text_field("body", "\t"), "body: \"\\t\"\n");
    }
}
