//! Who wrote an event: every event aea appends is signed with its author's
//! ed25519 key, in a file of its own beside the log, `events.sig.jsonl`
//! (the protocol's files stay as other ACP tools write them; their
//! validators, of either schema, look only at the files they name, so a
//! file they do not know is no finding).
//!
//! One line per signed event, JSON: the event's seq, the signer's id, the
//! SHA-256 of the event's line exactly as it stands in `events.jsonl`
//! (without its newline), the SHA-256 of what tells one collaboration from
//! another wherever its folder is mounted — the log's first line (the
//! `initialized` event), the objective and the participants of
//! `protocol.json`, which no event changes — and the signature over those
//! four, under a domain of its own. A signature therefore holds for one
//! line of one collaboration by one signer: copied onto another event,
//! kept for a line that was edited, or moved to another folder, it fails.
//! The first line alone would not do: it is the same in two
//! collaborations one agent started in the same second, and anyone can
//! copy a log, first line and all, beside a `protocol.json` of their own.
//!
//! Reading the file is like reading any of the folder's: capped, never
//! through a symlink, a FIFO never waited on; a line that is not a proof
//! (a torn write, a truncation) proves nothing. A signature is checked
//! only against the key the reader pinned for the signer (its registry,
//! or its own key): the key a proof names is never taken on its word.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Mutex;

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::log::{self, Protocol};
use super::validate::Finding;
use super::{EVENTS, EventName, Folder, PROTOCOL, Rule};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::identity;
use crate::message::Signature;

/// The file of signatures, beside `events.jsonl`.
pub const SIDECAR: &str = "events.sig.jsonl";

/// What a signature is over, so that it can stand for nothing else aea
/// signs.
const DOMAIN: &str = "aea-collab-event-v2";

/// The most of the file that is read or appended to: some thousands of
/// events, far above a real collaboration.
const SIDECAR_LIMIT: u64 = 8 * 1024 * 1024;

/// Who signs the events a [`Folder`] appends: an agent id and its private
/// key. What went wrong with the last signature, if anything, is kept for
/// the caller to say: the event stands either way.
pub struct Signer {
    id: String,
    key: SigningKey,
    problem: Mutex<Option<String>>,
}

impl Signer {
    pub fn new(id: impl Into<String>, key: SigningKey) -> Self {
        Signer {
            id: id.into(),
            key,
            problem: Mutex::new(None),
        }
    }

    /// Why the last event appended was left unsigned, if it was.
    pub fn problem(&self) -> Option<String> {
        self.problem
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("id", &self.id)
            .field("key", &identity::public_text(&self.key.verifying_key()))
            .finish_non_exhaustive()
    }
}

impl PartialEq for Signer {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.key.verifying_key() == other.key.verifying_key()
    }
}

impl Eq for Signer {}

/// One line of the sidecar.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Proof {
    seq: u64,
    signer: String,
    /// SHA-256 (hex) of the event's line.
    event: String,
    /// Which collaboration: see [`collaboration`].
    folder: String,
    signature: Signature,
}

/// The bytes a signature is over.
fn payload(folder: &str, seq: u64, signer: &str, event: &str) -> String {
    format!("{folder}\n{seq}\n{signer}\n{event}")
}

/// A line of the log as it is hashed: without a carriage return a
/// checkout may have added.
fn digest(line: &str) -> String {
    fsutil::sha256_hex(line.trim_end_matches(['\n', '\r']).as_bytes())
}

/// Which collaboration a log whose first line is `first` belongs to, as a
/// signature names it: the SHA-256 of that line, the objective and the
/// participants of its `protocol.json`, none of which an event changes.
pub(crate) fn collaboration(first: &str, protocol: &Protocol) -> String {
    let what = serde_json::json!([
        first.trim_end_matches(['\n', '\r']),
        protocol.map.get("objective"),
        protocol.participants(),
    ]);
    fsutil::sha256_hex(what.to_string().as_bytes())
}

/// Signs `line`, the `seq`th event of collaboration `collab` (see
/// [`collaboration`]), as `signer`: appends its proof to the sidecar. Called by the
/// one writer of events, under the folder's lock, right after the line
/// was written. A signature that cannot be written (a sidecar that is a
/// symlink, a FIFO, over its cap) leaves the event unsigned, which the
/// signer keeps as its [`Signer::problem`]: the event stands.
pub(crate) fn record(folder: &Path, signer: Option<&Signer>, collab: &str, line: &str, seq: u64) {
    let Some(signer) = signer else {
        return;
    };
    let outcome = append_proof(folder, signer, collab, line, seq);
    *signer
        .problem
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) =
        outcome.err().map(|e| crate::error::one_line(&e));
}

fn append_proof(folder: &Path, signer: &Signer, collab: &str, line: &str, seq: u64) -> Result<()> {
    let (folder_id, event) = (collab.to_string(), digest(line));
    let signature = identity::sign_bytes(
        DOMAIN,
        payload(&folder_id, seq, &signer.id, &event).as_bytes(),
        &signer.key,
    );
    let proof = Proof {
        seq,
        signer: signer.id.clone(),
        event,
        folder: folder_id,
        signature,
    };
    let mut text = serde_json::to_string(&proof).expect("a proof always serialises");
    text.push('\n');
    let path = folder.join(SIDECAR);
    // Opened without following a symlink or waiting on a FIFO; a regular
    // file only.
    let mut file = fsutil::open_append(&path)?;
    let len = file
        .metadata()
        .map_err(|e| Error::io("read the size of", &path, e))?
        .len();
    if len > SIDECAR_LIMIT {
        return Err(Error::io(
            "sign the event in",
            &path,
            std::io::Error::other(format!("the file is over its {SIDECAR_LIMIT} byte cap")),
        ));
    }
    // A line torn by a crash must not swallow this one.
    if len > 0 && !ends_with_newline(&path, len) {
        text.insert(0, '\n');
    }
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io("append to", &path, e))
}

/// Whether the file at `path`, `len` bytes long, ends with a newline.
fn ends_with_newline(path: &Path, len: u64) -> bool {
    let Ok(mut file) = fsutil::open_read(path) else {
        return false;
    };
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1)).is_ok()
        && file.read_exact(&mut last).is_ok()
        && last[0] == b'\n'
}

/// What a reader can tell of who wrote an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Authorship {
    /// Signed by its author, with the key this repository pinned for it.
    Signed { signer: String },
    /// No signature: another ACP tool or a person wrote it, or its
    /// signature was removed. Nothing says its `from` wrote it.
    Unsigned,
    /// Signed by `signer`, whose key this repository has not pinned: who
    /// signed cannot be told here.
    Unverifiable { signer: String },
    /// A signature that does not hold: for other bytes, by another key
    /// than the one pinned, by someone else than the author, or for
    /// another collaboration.
    Forged { reason: String },
}

#[cfg(test)]
impl Authorship {
    pub fn is_signed(&self) -> bool {
        matches!(self, Authorship::Signed { .. })
    }
}

/// One event of the log and what can be told of its author.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EventAuthor {
    /// Its line in `events.jsonl` (1-based).
    pub line: usize,
    pub seq: Option<u64>,
    /// Its `from`, as written (the folder's text: untrusted).
    pub from: Option<String>,
    /// Its `event`, when it is one of the protocol's.
    pub event: Option<EventName>,
    /// The SHA-256 (hex) of its line.
    #[serde(skip)]
    pub digest: String,
    pub authorship: Authorship,
}

impl EventAuthor {
    /// How messages name it: `seq 4 (review_submitted by api)`.
    fn label(&self) -> String {
        let seq = self.seq.map_or_else(
            || format!("events.jsonl line {}", self.line),
            |s| format!("seq {s}"),
        );
        format!(
            "{seq} ({} by {})",
            self.event.map_or("an unknown event", EventName::as_str),
            self.from.as_deref().unwrap_or("no one named")
        )
    }
}

/// The author of every event of a folder's log, and why the sidecar
/// could not be read, if it could not (every event then counts unsigned).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authors {
    pub events: Vec<EventAuthor>,
    pub sidecar_problem: Option<String>,
}

impl Folder {
    /// What can be told of who wrote each event of the log, by the keys
    /// `keys` says are pinned for an id. A log that cannot be read is no
    /// events (the validator says why); only a folder that is not a real
    /// directory is an error.
    pub fn authors(&self, keys: &dyn Fn(&str) -> Option<VerifyingKey>) -> Result<Authors> {
        fsutil::require_real_dir(self.path())?;
        let text = log::read_text(self.path(), EVENTS, log::EVENTS_LIMIT)
            .ok()
            .flatten()
            .unwrap_or_default();
        let protocol = log::read_text(self.path(), PROTOCOL, log::PROTOCOL_LIMIT)
            .ok()
            .flatten()
            .and_then(|t| Protocol::parse(&t).ok());
        let participants = protocol
            .as_ref()
            .map(Protocol::participants)
            .unwrap_or_default();
        let (proofs, sidecar_problem) = match (
            &protocol,
            log::read_text(self.path(), SIDECAR, SIDECAR_LIMIT),
        ) {
            // Which collaboration the signatures are for cannot be told.
            (None, _) => (
                Vec::new(),
                Some(format!(
                    "{PROTOCOL} cannot be read, so which collaboration {SIDECAR} signs cannot be told"
                )),
            ),
            (Some(_), Ok(text)) => (parse_proofs(text.as_deref().unwrap_or_default()), None),
            (Some(_), Err(refusal)) => (Vec::new(), Some(refusal.message)),
        };
        let lines = event_lines(&text);
        let Some((_, first)) = lines.first() else {
            return Ok(Authors {
                events: Vec::new(),
                sidecar_problem,
            });
        };
        // Without protocol.json there are no proofs to judge (above).
        let collab = protocol
            .as_ref()
            .map(|p| collaboration(first, p))
            .unwrap_or_default();
        let proofs = Proofs::of(&proofs, &collab);
        let events = lines
            .iter()
            .filter_map(|(number, line)| {
                let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
                    return None;
                };
                let mut author = EventAuthor {
                    line: *number,
                    seq: map.get("seq").and_then(Value::as_u64),
                    from: map.get("from").and_then(Value::as_str).map(str::to_string),
                    event: map
                        .get("event")
                        .and_then(Value::as_str)
                        .and_then(|e| e.parse().ok()),
                    digest: digest(line),
                    authorship: Authorship::Unsigned,
                };
                author.authorship = proofs.judge(&author, &participants, keys);
                Some(author)
            })
            .collect();
        Ok(Authors {
            events,
            sidecar_problem,
        })
    }
}

/// The non-blank lines of the log, each with its line number, without
/// its newline or a carriage return.
fn event_lines(text: &str) -> Vec<(usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_end_matches('\r')))
        .filter(|(_, line)| !line.trim().is_empty())
        .collect()
}

/// The proofs of the sidecar's text; a line that is not one is passed over.
fn parse_proofs(text: &str) -> Vec<Proof> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Proof>(line).ok())
        .collect()
}

/// The proofs of one collaboration, by the line they sign and by seq,
/// and the lines signed for another collaboration.
struct Proofs<'a> {
    folder: &'a str,
    by_event: HashMap<&'a str, Vec<&'a Proof>>,
    by_seq: HashMap<u64, Vec<&'a Proof>>,
    elsewhere: HashSet<&'a str>,
}

impl<'a> Proofs<'a> {
    fn of(proofs: &'a [Proof], folder: &'a str) -> Self {
        let mut by_event: HashMap<&str, Vec<&Proof>> = HashMap::new();
        let mut by_seq: HashMap<u64, Vec<&Proof>> = HashMap::new();
        let mut elsewhere = HashSet::new();
        for proof in proofs {
            if proof.folder == folder {
                by_event.entry(&proof.event).or_default().push(proof);
                by_seq.entry(proof.seq).or_default().push(proof);
            } else {
                elsewhere.insert(proof.event.as_str());
            }
        }
        Proofs {
            folder,
            by_event,
            by_seq,
            elsewhere,
        }
    }

    /// What the proofs say of `author`'s event: signed when one of them
    /// holds; else forged when one is there and fails; else unverifiable
    /// when one is by a signer without a pinned key; else unsigned.
    fn judge(
        &self,
        author: &EventAuthor,
        participants: &[String],
        keys: &dyn Fn(&str) -> Option<VerifyingKey>,
    ) -> Authorship {
        let Some(candidates) = self.by_event.get(author.digest.as_str()) else {
            if let Some(seq) = author.seq
                && self.by_seq.contains_key(&seq)
            {
                return Authorship::Forged {
                    reason: format!(
                        "the signature kept for seq {seq} is over other bytes: the line was changed after it was signed, or replaced"
                    ),
                };
            }
            if self.elsewhere.contains(author.digest.as_str()) {
                return Authorship::Forged {
                    reason: "its signature is for another collaboration".into(),
                };
            }
            return Authorship::Unsigned;
        };
        let mut forged = None;
        let mut unverifiable = None;
        for proof in candidates {
            // `initialized` names the proposal owner, whoever started the
            // collaboration: any participant may have signed it.
            let may_sign = author.from.as_deref() == Some(proof.signer.as_str())
                || (author.event == Some(EventName::Initialized)
                    && participants.contains(&proof.signer));
            let Some(key) = keys(&proof.signer) else {
                if may_sign {
                    unverifiable.get_or_insert_with(|| proof.signer.clone());
                } else {
                    forged.get_or_insert_with(|| {
                        format!("signed by {}, not by its author", proof.signer)
                    });
                }
                continue;
            };
            let bytes = payload(self.folder, proof.seq, &proof.signer, &author.digest);
            match identity::verify_bytes(DOMAIN, bytes.as_bytes(), &proof.signature, &key) {
                Ok(()) if !may_sign => {
                    forged.get_or_insert_with(|| {
                        format!("signed by {}, not by its author", proof.signer)
                    });
                }
                Ok(()) if author.seq != Some(proof.seq) => {
                    forged.get_or_insert_with(|| format!("its signature is for seq {}", proof.seq));
                }
                Ok(()) => {
                    return Authorship::Signed {
                        signer: proof.signer.clone(),
                    };
                }
                Err(reason) => {
                    forged.get_or_insert_with(|| {
                        format!("its signature by {} does not hold: {reason}", proof.signer)
                    });
                }
            }
        }
        match (forged, unverifiable) {
            (Some(reason), _) => Authorship::Forged { reason },
            (None, Some(signer)) => Authorship::Unverifiable { signer },
            (None, None) => Authorship::Unsigned,
        }
    }
}

/// The validator's findings about who wrote the events: a forged
/// signature is an error, an unsigned or unverifiable event a warning.
/// The folder's text in them is for the caller to escape, as any finding.
pub fn findings(authors: &Authors) -> (Vec<Finding>, Vec<Finding>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if let Some(problem) = &authors.sidecar_problem {
        warnings.push(Finding {
            rule: Rule::Signature,
            message: format!("no signature could be read: {problem}"),
            advice: format!(
                "{SIDECAR} is written by aea only; replace it with the file aea appended to"
            )
            .into(),
        });
    }
    for event in &authors.events {
        let label = event.label();
        let from = event.from.as_deref().unwrap_or("its author");
        match &event.authorship {
            Authorship::Signed { .. } => {}
            Authorship::Unsigned => warnings.push(Finding {
                rule: Rule::Unsigned,
                message: format!(
                    "{label} carries no signature: nothing shows that {from} wrote it"
                ),
                advice: format!(
                    "aea signs every event it appends (in {SIDECAR}); other ACP tools sign none. Ask {from} whether it wrote this event"
                )
                .into(),
            }),
            Authorship::Unverifiable { signer } => warnings.push(Finding {
                rule: Rule::Signature,
                message: format!(
                    "{label} is signed by {signer}, whose key this repository has not pinned"
                ),
                advice: format!("pin {signer}'s key in the registry, then validate again").into(),
            }),
            Authorship::Forged { reason } => errors.push(Finding {
                rule: Rule::Signature,
                message: format!("{label}: {reason}; {from} may not have written it"),
                advice: format!(
                    "ask {from} whether it wrote this event; an event is never edited or signed again: if it is not {from}'s, say so with a new event"
                )
                .into(),
            }),
        }
    }
    (errors, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    const FIRST: &str = r#"{"seq":1,"from":"web","event":"initialized","at":"2026-01-01T00:00:00Z","summary":"Collaboration initialized","doc":"protocol.json"}"#;
    const SECOND: &str = r#"{"seq":2,"from":"web","event":"proposal_submitted","at":"2026-01-01T00:01:00Z","summary":"P","doc":"proposal.md","reply_to":1}"#;
    const THIRD: &str = r#"{"seq":3,"from":"api","event":"review_submitted","at":"2026-01-01T00:02:00Z","summary":"R","doc":"review.md","reply_to":2}"#;

    fn folder(lines: &[&str]) -> (tempfile::TempDir, Folder) {
        let dir = tempfile::tempdir().unwrap();
        let text = lines.join("\n") + "\n";
        std::fs::write(dir.path().join(EVENTS), text).unwrap();
        std::fs::write(
            dir.path().join(PROTOCOL),
            r#"{"participants":[{"id":"web"},{"id":"api"}]}"#,
        )
        .unwrap();
        let folder = Folder::new(dir.path());
        (dir, folder)
    }

    fn pinned(id: &str) -> Option<VerifyingKey> {
        match id {
            "web" => Some(key(1).verifying_key()),
            "api" => Some(key(2).verifying_key()),
            _ => None,
        }
    }

    fn states(folder: &Folder) -> Vec<Authorship> {
        folder
            .authors(&pinned)
            .unwrap()
            .events
            .into_iter()
            .map(|e| e.authorship)
            .collect()
    }

    /// Which collaboration the folder of [`folder`] is, first line `first`.
    fn collab_of(f: &Folder, first: &str) -> String {
        let text = std::fs::read_to_string(f.path().join(PROTOCOL)).unwrap();
        collaboration(first, &Protocol::parse(&text).unwrap())
    }

    fn sign(folder: &Folder, who: &str, seed: u8, line: &str, seq: u64) {
        let signer = Signer::new(who, key(seed));
        record(
            folder.path(),
            Some(&signer),
            &collab_of(folder, FIRST),
            line,
            seq,
        );
        assert_eq!(signer.problem(), None);
    }

    #[test]
    fn what_a_signed_folder_appends_is_signed_by_its_signer() {
        let dir = tempfile::tempdir().unwrap();
        let signer = std::sync::Arc::new(Signer::new("web", key(1)));
        let f = Folder::new(dir.path().join("c")).signed_by(signer.clone());
        let now = chrono::Utc::now();
        let ids = ["web".to_string(), "api".to_string()];
        let init = crate::collab::Init {
            schema: crate::collab::Schema::One,
            ..crate::collab::Init::new(&ids, "O", &["conclusion.md says proceed".into()])
        };
        f.init(&init, now).unwrap();
        f.append(
            "web",
            EventName::ProposalSubmitted,
            "P",
            Some("proposal.md"),
            Some(1),
            now,
        )
        .unwrap();
        assert_eq!(signer.problem(), None);
        let web = Authorship::Signed {
            signer: "web".into(),
        };
        assert_eq!(states(&f), vec![web.clone(), web]);
        // Unsigned through a folder without a signer.
        Folder::new(f.path())
            .review("api", 2, &crate::collab::Review::default(), now)
            .unwrap();
        assert_eq!(states(&f)[2], Authorship::Unsigned);
    }

    #[test]
    fn each_event_is_judged_by_its_own_signature() {
        let (_dir, f) = folder(&[FIRST, SECOND, THIRD]);
        sign(&f, "web", 1, FIRST, 1);
        sign(&f, "web", 1, SECOND, 2);
        let web = Authorship::Signed {
            signer: "web".into(),
        };
        assert_eq!(
            states(&f),
            vec![web.clone(), web.clone(), Authorship::Unsigned]
        );
        // api's key, but web signs in api's name: not the key pinned for api.
        sign(&f, "api", 1, THIRD, 3);
        assert!(matches!(states(&f)[2], Authorship::Forged { .. }));
    }

    #[test]
    fn a_signature_moved_to_another_event_or_kept_for_an_edited_line_fails() {
        let (dir, f) = folder(&[FIRST, SECOND]);
        sign(&f, "web", 1, SECOND, 2);
        // The line edited after it was signed.
        let edited = SECOND.replace("\"P\"", "\"Q\"");
        std::fs::write(dir.path().join(EVENTS), format!("{FIRST}\n{edited}\n")).unwrap();
        assert!(
            matches!(states(&f)[1], Authorship::Forged { .. }),
            "{:?}",
            states(&f)
        );
        // web's genuine proof of seq 2 relabelled seq 3, for api's line.
        let (dir, f) = folder(&[FIRST, SECOND, THIRD]);
        sign(&f, "web", 1, SECOND, 2);
        let text = std::fs::read_to_string(dir.path().join(SIDECAR)).unwrap();
        let mut proof: Proof = serde_json::from_str(text.trim()).unwrap();
        proof.seq = 3;
        proof.signer = "api".into();
        proof.event = digest(THIRD);
        std::fs::write(
            dir.path().join(SIDECAR),
            format!("{text}{}\n", serde_json::to_string(&proof).unwrap()),
        )
        .unwrap();
        let got = states(&f);
        assert!(got[1].is_signed(), "{got:?}");
        assert!(matches!(got[2], Authorship::Forged { .. }), "{got:?}");
    }

    #[test]
    fn a_torn_sidecar_proves_nothing_and_keeps_the_next_proof_whole() {
        let (dir, f) = folder(&[FIRST, SECOND]);
        sign(&f, "web", 1, FIRST, 1);
        let path = dir.path().join(SIDECAR);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
        assert_eq!(states(&f), vec![Authorship::Unsigned, Authorship::Unsigned]);
        sign(&f, "web", 1, SECOND, 2);
        assert_eq!(
            states(&f),
            vec![
                Authorship::Unsigned,
                Authorship::Signed {
                    signer: "web".into()
                }
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_sidecar_that_is_a_link_or_a_fifo_is_neither_followed_nor_waited_on() {
        let (dir, f) = folder(&[FIRST]);
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(SIDECAR)).unwrap();
        let signer = Signer::new("web", key(1));
        record(f.path(), Some(&signer), &collab_of(&f, FIRST), FIRST, 1);
        assert!(signer.problem().is_some());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
        assert!(f.authors(&pinned).unwrap().sidecar_problem.is_some());

        std::fs::remove_file(dir.path().join(SIDECAR)).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join(SIDECAR))
            .status()
            .unwrap();
        assert!(made.success());
        record(f.path(), Some(&signer), &collab_of(&f, FIRST), FIRST, 1);
        assert!(signer.problem().is_some());
        let authors = f.authors(&pinned).unwrap();
        assert!(authors.sidecar_problem.is_some());
        assert_eq!(authors.events[0].authorship, Authorship::Unsigned);
    }

    #[test]
    fn an_unpinned_signer_is_unverifiable_and_another_folders_signature_fails() {
        let (_dir, f) = folder(&[FIRST, SECOND]);
        sign(&f, "web", 1, SECOND, 2);
        let nobody: &dyn Fn(&str) -> Option<VerifyingKey> = &|_| None;
        let events = f.authors(nobody).unwrap().events;
        assert_eq!(
            events[1].authorship,
            Authorship::Unverifiable {
                signer: "web".into()
            }
        );
        // The same lines after another first line: another collaboration.
        let other = FIRST.replace("00:00:00Z", "00:00:01Z");
        let (dir, g) = folder(&[&other, SECOND]);
        std::fs::copy(f.path().join(SIDECAR), dir.path().join(SIDECAR)).unwrap();
        assert!(
            matches!(states(&g)[1], Authorship::Forged { .. }),
            "{:?}",
            states(&g)
        );
    }
}
