//! ACP schema 2: which schema a folder speaks, and its deliverables.
//!
//! A schema 2 folder says so in `protocol.json` (`"protocol": "acp"`,
//! `"schemaVersion": 2`) and declares a primary Markdown deliverable (a
//! type, a file, for `custom` a checklist of sections), optionally
//! supporting deliverables and attachments, kept in a directory of the
//! folder (`internal`) or of the repository around it (`external`, with
//! `repoRoot`). The deliverable has a `Status:` line and one `## ` heading
//! per required section; `deliverable_frozen` records its SHA-256.
//!
//! Everything here reads what the folder declares as hostile text: a file
//! name is refused when absolute or when it has a `..` part, and a
//! deliverable is read capped, never through a symlink (the file's own, or
//! a directory's between the folder and it), never a FIFO. A checklist item is only ever a heading to look for: nothing in
//! `protocol.json` is executed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::log::{self, Protocol};
pub(crate) use super::schema::{
    DeliverableType, Role, Schema, is_markdown, is_sha256, not_in_schema_one, path_escapes,
    shown_value,
};

use super::schema::STATUSES;
use super::{Refusal, Rule};

/// `dir` joined with `file` the way a Python `PurePath` prints it: empty
/// and `.` parts dropped, one `/` between parts (the form events and
/// documents reference a deliverable by).
fn joined(dir: &str, file: &str) -> String {
    let parts: Vec<&str> = dir
        .split('/')
        .chain(file.split('/'))
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// One declared deliverable, as found.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub kind: Option<DeliverableType>,
    pub file: String,
    pub checklist: Vec<String>,
    /// `supporting[].frozen`.
    pub frozen: bool,
}

impl Declared {
    fn of(map: &Map<String, Value>) -> Declared {
        Declared {
            kind: map
                .get("type")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok()),
            file: map
                .get("file")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            checklist: match map.get("checklist") {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            },
            frozen: map.get("frozen").is_some_and(truthy),
        }
    }

    /// The `## ` sections the deliverable must have.
    pub(crate) fn sections(&self) -> Vec<String> {
        match self.kind {
            Some(DeliverableType::Custom) => self.checklist.clone(),
            Some(kind) => kind.spec().2.iter().map(|s| (*s).to_string()).collect(),
            None => Vec::new(),
        }
    }
}

/// Python's truthiness of a JSON value, for a `frozen` flag.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// What `protocol.json` declares under `deliverables` (schema 2), as found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deliverables {
    pub external: bool,
    pub dir: String,
    pub repo_root: Option<String>,
    pub primary: Option<Declared>,
    pub supporting: Vec<Declared>,
    pub attachments: Vec<String>,
}

impl Deliverables {
    pub(crate) fn of(protocol: &Protocol) -> Deliverables {
        let Some(Value::Object(d)) = protocol.map.get("deliverables") else {
            return Deliverables {
                dir: "deliverables".into(),
                ..Deliverables::default()
            };
        };
        let objects = |key: &str| -> Vec<&Map<String, Value>> {
            match d.get(key) {
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
                _ => Vec::new(),
            }
        };
        Deliverables {
            external: d.get("mode").and_then(Value::as_str) == Some("external"),
            dir: match d.get("dir") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "deliverables".into(),
            },
            repo_root: protocol
                .map
                .get("repoRoot")
                .and_then(Value::as_str)
                .map(str::to_string),
            primary: d
                .get("primary")
                .and_then(Value::as_object)
                .map(Declared::of),
            supporting: objects("supporting")
                .into_iter()
                .map(Declared::of)
                .collect(),
            attachments: objects("attachments")
                .into_iter()
                .filter_map(|a| a.get("file").and_then(Value::as_str))
                .map(str::to_string)
                .collect(),
        }
    }

    /// How events and documents name `file`: `<dir>/<file>` inside the
    /// folder, `external:<file>` outside it.
    pub(crate) fn reference(&self, file: &str) -> String {
        if self.external {
            format!("external:{file}")
        } else {
            joined(&self.dir, file)
        }
    }

    /// The references of every declared deliverable, primary first.
    pub(crate) fn refs(&self) -> Vec<String> {
        self.primary_ref()
            .into_iter()
            .chain(self.supporting.iter().map(|s| self.reference(&s.file)))
            .collect()
    }

    /// The primary deliverable's reference (`None` when none is declared).
    pub(crate) fn primary_ref(&self) -> Option<String> {
        self.primary.as_ref().map(|p| self.reference(&p.file))
    }

    /// The declared deliverable `doc` references in `role`, if any.
    pub(crate) fn by_ref(&self, doc: &str, role: Role) -> Option<&Declared> {
        match role {
            Role::Primary => self
                .primary
                .as_ref()
                .filter(|p| self.reference(&p.file) == doc),
            Role::Supporting => self
                .supporting
                .iter()
                .find(|s| self.reference(&s.file) == doc),
        }
    }

    /// The role `doc` has, when it references a declared deliverable.
    pub(crate) fn role_of(&self, doc: &str) -> Option<Role> {
        [Role::Primary, Role::Supporting]
            .into_iter()
            .find(|r| self.by_ref(doc, *r).is_some())
    }

    /// The directory the deliverable files are in.
    fn base(&self, folder: &Path) -> Result<PathBuf, Refusal> {
        if !self.external {
            return Ok(folder.join(&self.dir));
        }
        let root = self.repo_root.as_deref().ok_or_else(|| {
            Refusal::new(
                Rule::Deliverables,
                "repoRoot is required for external deliverables",
                "name the repository around the folder with a relative repoRoot in protocol.json",
            )
        })?;
        // Checked for every read, not only by `validate`: a `repoRoot`
        // written into protocol.json would otherwise have any file the
        // user can read judged and hashed as the deliverable.
        let mut problem: Option<(String, String)> = None;
        if Path::new(root).is_absolute() {
            problem = Some((
                "repoRoot must be relative".to_string(),
                "name repoRoot relative to the collaboration folder, such as ../..".to_string(),
            ));
        } else {
            Self::check_repo_root(folder, root, &mut |what, how| {
                problem.get_or_insert((what, how.to_string()));
            });
        }
        if let Some((what, how)) = problem {
            return Err(Refusal::new(Rule::Deliverables, what, how));
        }
        Ok(folder.join(root).join(&self.dir))
    }

    /// Reads the deliverable `file`: `Ok(None)` when missing; refused when
    /// the name escapes its directory, or the file is a symlink, a FIFO,
    /// too large or not UTF-8.
    pub(crate) fn read(&self, folder: &Path, file: &str) -> Result<Option<Vec<u8>>, Refusal> {
        if path_escapes(file) || file.is_empty() {
            return Err(Refusal::new(
                Rule::Deliverables,
                format!("deliverable file {file:?} must be relative and must not contain .."),
                "declare deliverable files relative to the deliverables directory",
            ));
        }
        let path = self.base(folder)?.join(file);
        self.no_linked_directory(folder, file)?;
        match crate::fsutil::read_limited(&path, log::DOCUMENT_LIMIT) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(crate::fsutil::ReadLimited::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(e) => {
                let what = match e {
                    crate::fsutil::ReadLimited::Symlink => {
                        "is a symbolic link; it is not followed".to_string()
                    }
                    crate::fsutil::ReadLimited::NotAFile => {
                        "is not a regular file (a FIFO, socket, device or folder)".to_string()
                    }
                    crate::fsutil::ReadLimited::TooLarge(n) => {
                        format!("is {n} bytes, over the {} byte cap", log::DOCUMENT_LIMIT)
                    }
                    crate::fsutil::ReadLimited::Io(e) => format!("cannot be read: {e}"),
                };
                Err(Refusal::new(
                    Rule::UnsafeFile,
                    format!("deliverable {} {what}", self.reference(file)),
                    "replace it with a regular Markdown file",
                ))
            }
        }
    }

    /// Refuses a deliverables directory, or a directory between it and
    /// `file`, that is a symlink (or a `dir` that escapes): swapped for
    /// a link to a directory elsewhere, it would have a file outside the
    /// folder read, judged and hashed into a freeze as the deliverable.
    fn no_linked_directory(&self, folder: &Path, file: &str) -> Result<(), Refusal> {
        let refuse = |what: String| {
            Refusal::new(
                Rule::UnsafeFile,
                format!("deliverable {} {what}", self.reference(file)),
                "replace it with a regular directory of the folder",
            )
        };
        if path_escapes(&self.dir) {
            return Err(refuse(format!(
                "is in {:?}, which must be relative and must not contain ..",
                self.dir
            )));
        }
        // The repository root of an external deliverable is outside the
        // folder by design (`../..`); what is below it is checked.
        let mut at = match (&self.repo_root, self.external) {
            (Some(root), true) => folder.join(root),
            _ => folder.to_path_buf(),
        };
        let inner = Path::new(&self.dir).join(file);
        let parents = inner.parent().map(Path::components).into_iter().flatten();
        for part in parents {
            let std::path::Component::Normal(part) = part else {
                continue;
            };
            at.push(part);
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(refuse(format!(
                    "is under {}, a symbolic link; it is not followed",
                    at.display()
                )));
            }
        }
        Ok(())
    }

    /// Problems of the declaration itself (schema 2's deliverable schema).
    pub(crate) fn declaration_problems(protocol: &Protocol, folder: &Path) -> Vec<Refusal> {
        let mut out = Vec::new();
        let mut bad = |message: String, advice: &str| {
            out.push(Refusal::new(Rule::Deliverables, message, advice));
        };
        let Some(Value::Object(d)) = protocol.map.get("deliverables") else {
            bad(
                "protocol.json declares no deliverables.primary (schema 2 requires a primary deliverable)".into(),
                "declare deliverables.primary with a type and a Markdown file (`aea collab init` writes it)",
            );
            return out;
        };
        let mode = d.get("mode").and_then(Value::as_str);
        if !matches!(mode, Some("internal" | "external")) {
            bad(
                "deliverables.mode must be internal or external".into(),
                "internal keeps deliverables in the folder, external in repoRoot",
            );
        }
        if mode == Some("internal") && protocol.map.contains_key("repoRoot") {
            bad(
                "repoRoot is not allowed for internal deliverables".into(),
                "remove repoRoot, or set deliverables.mode to external",
            );
        }
        if mode == Some("external") {
            match protocol.map.get("repoRoot").and_then(Value::as_str) {
                Some(root) if !root.trim().is_empty() => {
                    if root.starts_with('/') {
                        bad(
                            "repoRoot must be relative".into(),
                            "name repoRoot relative to the collaboration folder, such as ../..",
                        );
                    } else {
                        Self::check_repo_root(folder, root, &mut bad);
                    }
                }
                _ => bad(
                    "repoRoot is required for external deliverables".into(),
                    "name the repository around the folder with a relative repoRoot",
                ),
            }
        }
        match d.get("dir") {
            Some(Value::String(dir)) if !dir.trim().is_empty() => {
                if path_escapes(dir) {
                    bad(
                        format!(
                            "deliverables.dir {dir:?} must be relative and must not contain .."
                        ),
                        "name a directory inside the folder (or repoRoot), such as deliverables",
                    );
                }
            }
            _ => bad(
                "deliverables.dir is required".into(),
                "name the deliverables directory, such as deliverables",
            ),
        }
        let Some(Value::Object(primary)) = d.get("primary") else {
            bad(
                "protocol.json declares no deliverables.primary (schema 2 requires a primary deliverable)".into(),
                "declare deliverables.primary with a type and a Markdown file",
            );
            return out;
        };
        let primary = (Declared::of(primary), primary.get("type"));
        check_declared("primary", &primary.0, primary.1, &mut bad);
        let mut seen: Vec<&str> = Vec::new();
        if let Some(Value::Array(items)) = d.get("supporting") {
            for item in items.iter().filter_map(Value::as_object) {
                let declared = Declared::of(item);
                check_declared("supporting", &declared, item.get("type"), &mut bad);
                let file = item.get("file").and_then(Value::as_str).unwrap_or_default();
                if !file.is_empty() && is_markdown(file) && !path_escapes(file) {
                    if seen.contains(&file) {
                        bad(
                            format!("supporting deliverable file {file:?} is declared twice"),
                            "supporting deliverable files must be unique",
                        );
                    } else if file == primary.0.file {
                        bad(
                            format!(
                                "supporting deliverable {file:?} reuses the primary deliverable file"
                            ),
                            "give the supporting deliverable a file of its own",
                        );
                    } else {
                        seen.push(file);
                    }
                }
            }
        }
        if let Some(Value::Array(items)) = d.get("attachments") {
            for item in items {
                match item.as_object().map(|a| a.get("file")) {
                    None => bad(
                        "deliverables.attachments must be objects".into(),
                        "declare each attachment as {\"file\": …}",
                    ),
                    Some(Some(Value::String(f))) if !f.is_empty() => {
                        if path_escapes(f) {
                            bad(
                                format!(
                                    "attachment file {f:?} must be relative and must not contain .."
                                ),
                                "name attachments relative to the deliverables directory",
                            );
                        }
                    }
                    Some(_) => bad(
                        "an attachment has no file".into(),
                        "declare each attachment as {\"file\": …}",
                    ),
                }
            }
        }
        out
    }

    fn check_repo_root(folder: &Path, root: &str, bad: &mut impl FnMut(String, &str)) {
        let resolved = folder.join(root).canonicalize();
        let here = folder.canonicalize();
        match (resolved, here) {
            (Ok(resolved), Ok(here)) if resolved.is_dir() => {
                if resolved.parent().is_none() {
                    bad(
                        "repoRoot must not resolve to the file system root".into(),
                        "name the repository around the folder",
                    );
                } else if !here.starts_with(&resolved) {
                    bad(
                        "the collaboration folder must be inside repoRoot".into(),
                        "name the repository that holds the folder, such as ../..",
                    );
                }
            }
            _ => bad(
                "repoRoot must resolve to an existing directory".into(),
                "name the repository around the folder, relative to the folder",
            ),
        }
    }
}

fn check_declared(
    what: &str,
    declared: &Declared,
    kind: Option<&Value>,
    bad: &mut impl FnMut(String, &str),
) {
    if declared.kind.is_none() {
        bad(
            format!(
                "{what} deliverable type {} is not one of {}",
                kind.map_or_else(|| "(none)".into(), shown_value),
                DeliverableType::NAMES.join(", ")
            ),
            "declare a known deliverable type",
        );
    }
    let file = &declared.file;
    if !is_markdown(file) {
        bad(
            format!("{what} deliverable file {file:?} must be Markdown (.md)"),
            "declare a .md file",
        );
    } else if path_escapes(file) {
        bad(
            format!("{what} deliverable file {file:?} must be relative and must not contain .."),
            "declare the file relative to the deliverables directory",
        );
    }
    if declared.kind == Some(DeliverableType::Custom) && declared.checklist.is_empty() {
        bad(
            format!("custom {what} deliverable requires a checklist of sections"),
            "list the sections it must have under checklist",
        );
    }
}

/// The `Status:` a deliverable declares (the first recognised one).
pub(crate) fn status(text: &str) -> Option<&'static str> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix("Status:")?.trim();
        STATUSES.iter().find(|s| **s == rest).copied()
    })
}

/// Whether `text` has the heading `## <heading>`.
pub(crate) fn has_heading(text: &str, heading: &str) -> bool {
    text.lines().any(|l| h2(l) == Some(heading))
}

/// The text of a `## ` heading line.
fn h2(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("##")?;
    rest.starts_with(char::is_whitespace).then(|| rest.trim())
}

/// Whether the section under `## <heading>` has any text before the next
/// `## ` heading.
pub(crate) fn section_has_content(text: &str, heading: &str) -> bool {
    text.lines()
        .skip_while(|l| h2(l) != Some(heading))
        .skip(1)
        .take_while(|l| h2(l).is_none())
        .any(|l| !l.trim().is_empty())
}

/// Problems of a deliverable's text: its status, its sections, and when
/// `frozen`, `Status: Frozen` and no empty section.
pub(crate) fn content_problems(
    reference: &str,
    declared: &Declared,
    text: &str,
    frozen: bool,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut bad = |message: String, advice: String| {
        out.push(Refusal::new(Rule::DeliverableContent, message, advice));
    };
    match status(text) {
        None => bad(
            format!("deliverable {reference} has no line Status: Draft, In Review or Frozen"),
            "add a line `Status: Draft` (In Review, Frozen) to the deliverable".into(),
        ),
        Some(s) if frozen && s != "Frozen" => bad(
            format!("deliverable {reference} is frozen but says Status: {s}"),
            "set `Status: Frozen` before freezing the deliverable".into(),
        ),
        Some(_) => {}
    }
    for section in declared.sections() {
        if !has_heading(text, &section) {
            bad(
                format!(
                    "deliverable {reference} is missing the required section ## {}",
                    super::docs::one_line(&section)
                ),
                format!(
                    "a {} deliverable has one `## ` heading per required section",
                    declared.kind.map_or("declared", DeliverableType::as_str)
                ),
            );
        } else if frozen && !section_has_content(text, &section) {
            bad(
                format!(
                    "deliverable {reference} section ## {} is empty, and a frozen deliverable fills every section",
                    super::docs::one_line(&section)
                ),
                "write the section before freezing the deliverable".into(),
            );
        }
    }
    out
}

/// The template `init` writes for a deliverable: its title, type, `Status:
/// Draft` and one empty `## ` section each.
pub(crate) fn template(declared: &Declared) -> String {
    let kind = declared.kind.unwrap_or(DeliverableType::Custom);
    let mut out = format!(
        "# {}\n\nDeliverable type: `{kind}`\nStatus: Draft\n\n",
        kind.spec().0
    );
    let sections = declared.sections();
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let _ = write!(out, "## {}\n\n", super::docs::one_line(section));
    }
    out.push('\n');
    out
}
