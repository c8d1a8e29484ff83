//! A person's approvals (SPEC §19): the SSH keys of the people whose
//! signature approves, kept in the user's config dir, and the SSHSIG
//! signatures that bind a decision to one of them.
//!
//! The list is a chain of signed versions, `approvers/changes.jsonl`, one
//! JSON object per line. Each version carries the whole list in OpenSSH's
//! `allowed_signers` format and whether the user requires signatures, and
//! is signed (namespace [`LIST_NAMESPACE`]) by an approver of the version
//! before it; the first by a key it lists itself. An agent running as the
//! user can write the file, but cannot sign a version without a current
//! approver's key: a line that does not verify, and every line after it,
//! changes nothing. `approvers/allowed_signers` is the current version
//! written out, for `ssh-keygen -Y verify` by hand; aea never reads it.
//!
//! Readers verify in-process ([`Approvers::verify`]); `aea approve` signs
//! with `ssh-keygen -Y sign`, which is the cli's business.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ssh_key::{Algorithm, PublicKey, SshSig};

/// A public key, as the approver list holds it.
pub use ssh_key::public::KeyData;

use crate::error::{Error, Result};
use crate::fsutil;

/// The SSHSIG namespace of a decision on a message.
pub const NAMESPACE: &str = "aea-approval";
/// The SSHSIG namespace of a version of the approver list: a signature
/// made for one never verifies as the other.
pub const LIST_NAMESPACE: &str = "aea-approvers";
/// The folder in the user's config dir.
pub const DIR: &str = "approvers";
/// The signed versions, oldest first.
pub const CHANGES: &str = "changes.jsonl";
/// The current version in `allowed_signers` format, written for people.
pub const ALLOWED_SIGNERS: &str = "allowed_signers";
/// What a decision's signed text says it is.
const DECISION_FORMAT: &str = "aea-approval/1";
/// Largest `changes.jsonl` read: thousands of versions.
const CHANGES_LIMIT: u64 = 4 * 1024 * 1024;
/// Longest approver name.
const NAME_MAX: usize = 64;
/// Most approvers a list holds: people, not a key server.
pub const APPROVERS_MAX: usize = 100;

/// One person's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approver {
    pub name: String,
    pub key: KeyData,
}

impl Approver {
    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    pub fn fingerprint(&self) -> String {
        self.key
            .fingerprint(ssh_key::HashAlg::default())
            .to_string()
    }

    /// The key type, as OpenSSH names it (`ssh-ed25519`, `sk-ssh-ed25519@openssh.com`).
    pub fn key_type(&self) -> String {
        self.key.algorithm().as_str().to_string()
    }

    /// A FIDO key: each signature needs a touch, which the reader checks.
    pub fn hardware(&self) -> bool {
        is_hardware(&self.key.algorithm())
    }

    /// The key in OpenSSH's one-line public form, without a comment.
    pub fn public_line(&self) -> String {
        PublicKey::new(self.key.clone(), "")
            .to_openssh()
            .expect("a parsed key encodes")
            .trim_end()
            .to_string()
    }

    /// Its line of `allowed_signers`.
    fn allowed_signers_line(&self) -> String {
        format!(
            "{} namespaces=\"{NAMESPACE},{LIST_NAMESPACE}\" {}",
            self.name,
            self.public_line()
        )
    }
}

fn is_hardware(algorithm: &Algorithm) -> bool {
    matches!(
        algorithm,
        Algorithm::SkEd25519 | Algorithm::SkEcdsaSha2NistP256
    )
}

/// Checks an approver's name: a principal of `allowed_signers`, shown in
/// listings and records, so short and plain.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() || name.len() > NAME_MAX {
        return Err(format!("an approver's name has 1 to {NAME_MAX} characters"));
    }
    if name.starts_with('-') {
        return Err("an approver's name does not begin with `-`".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | '+'))
    {
        return Err(
            "an approver's name is letters, digits and . _ - @ + (an email address will do)".into(),
        );
    }
    Ok(())
}

/// Reads a public key as `ssh-keygen` writes it (`FILE.pub`: type, base64,
/// comment). Only the key types aea verifies are accepted.
pub fn parse_public_key(text: &str) -> std::result::Result<KeyData, String> {
    let line = text.trim();
    if line.lines().count() != 1 {
        return Err("a public key file holds one line".into());
    }
    let key =
        PublicKey::from_openssh(line).map_err(|e| format!("not an OpenSSH public key ({e})"))?;
    supported(key.key_data())?;
    Ok(key.key_data().clone())
}

fn supported(key: &KeyData) -> std::result::Result<(), String> {
    match key.algorithm() {
        Algorithm::Ed25519
        | Algorithm::SkEd25519
        | Algorithm::SkEcdsaSha2NistP256
        | Algorithm::Ecdsa {
            curve: ssh_key::EcdsaCurve::NistP256,
        } => Ok(()),
        other => Err(format!(
            "{} keys are not accepted; use ed25519, or a FIDO key (ed25519-sk, ecdsa-sk)",
            other.as_str()
        )),
    }
}

/// Why a signature approves nothing. Says it in words for people; never
/// includes text from the record beyond a fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The record carries no signature.
    Unsigned,
    /// Signatures are required and the user has no approver.
    NoApprovers,
    /// Not an SSHSIG, or one aea cannot read.
    Malformed(String),
    /// Made for another namespace (another purpose).
    WrongNamespace(String),
    /// A key that is not an approver's; its fingerprint.
    NotAnApprover(String),
    /// The signature does not match what the record says.
    Mismatch,
    /// A FIDO key signed without a touch; the approver's name.
    NoTouch(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Unsigned => write!(f, "the decision is not signed"),
            Refusal::NoApprovers => write!(
                f,
                "signatures are required and no approver is set (`aea approvers add`)"
            ),
            Refusal::Malformed(why) => write!(f, "the signature does not read: {why}"),
            Refusal::WrongNamespace(ns) => write!(
                f,
                "the signature was made for {ns:?}, not for an aea approval"
            ),
            Refusal::NotAnApprover(fp) => {
                write!(f, "signed with key {fp}, which is not an approver's")
            }
            Refusal::Mismatch => write!(
                f,
                "the signature does not match the decision (the record was edited or belongs to another message or repository)"
            ),
            Refusal::NoTouch(name) => write!(
                f,
                "{name}'s hardware key signed without a touch (no user presence)"
            ),
        }
    }
}

/// The text a person signs for a decision on a message: the message, the
/// exact bytes (SHA-256), the decision and its words, when, and in which
/// repository. Its JSON, fields in this order, is what is signed.
#[derive(Debug, Serialize)]
pub struct Decision<'a> {
    pub format: &'static str,
    /// The receiving repository's canonical path: a record copied into
    /// another repository's state does not verify there.
    pub repository: &'a str,
    pub message_id: &'a str,
    pub file: &'a str,
    pub sha256: &'a str,
    pub decision: &'a str,
    pub note: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub at: &'a str,
}

impl<'a> Decision<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        repository: &'a str,
        message_id: &'a str,
        file: &'a str,
        sha256: &'a str,
        decision: &'a str,
        note: Option<&'a str>,
        reason: Option<&'a str>,
        at: &'a str,
    ) -> Self {
        Decision {
            format: DECISION_FORMAT,
            repository,
            message_id,
            file,
            sha256,
            decision,
            note,
            reason,
            at,
        }
    }

    /// The bytes that are signed.
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a decision serialises")
    }
}

/// One version of the approver list, as stored and signed: a link of
/// the chain.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Link {
    /// 1 for the first, then one more each time.
    version: u64,
    /// SHA-256 of the previous line: a version signed for one chain does
    /// not extend another.
    previous: Option<String>,
    at: String,
    /// What changed, in words (`add alice`, `remove bob`, `require off`).
    change: String,
    /// Whether this user requires signed approvals in every repository.
    require_signature: bool,
    /// The whole list after the change.
    allowed_signers: String,
    /// SSHSIG over this object's JSON without this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
}

impl Link {
    fn signed_bytes(&self) -> Vec<u8> {
        let mut unsigned = self.clone();
        unsigned.signature = None;
        serde_json::to_vec(&unsigned).expect("a version serialises")
    }
}

/// The approver list in force: the last version of the chain that
/// verifies.
#[derive(Debug, Clone, Default)]
pub struct Approvers {
    pub approvers: Vec<Approver>,
    /// The user requires signed approvals (`aea approvers require on`).
    pub require_signature: bool,
    /// The version in force; 0 when there is none.
    pub version: u64,
    /// The first line that did not verify and why: it and every line
    /// after it changed nothing.
    pub ignored: Option<(usize, String)>,
    /// Where the chain is.
    dir: Option<PathBuf>,
    /// The lines that verified, as read.
    lines: Vec<String>,
}

impl Approvers {
    /// The approver list kept under `config_dir`; none if it has none.
    /// A chain that cannot be read at all (a symlink, a FIFO, too large)
    /// is an error: nothing then approves.
    pub fn load(config_dir: &Path) -> Result<Approvers> {
        let dir = config_dir.join(DIR);
        let path = dir.join(CHANGES);
        let mut approvers = Approvers {
            dir: Some(dir),
            ..Approvers::default()
        };
        let Some(bytes) = fsutil::read_state(&path, CHANGES_LIMIT)? else {
            return Ok(approvers);
        };
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match approvers.extend(line) {
                Ok(()) => approvers.lines.push(line.to_string()),
                Err(why) => {
                    approvers.ignored = Some((index + 1, why));
                    break;
                }
            }
        }
        Ok(approvers)
    }

    /// Takes one more line of the chain if it is the next version and an
    /// approver of the current one (or, first, of itself) signed it.
    fn extend(&mut self, line: &str) -> std::result::Result<(), String> {
        let version: Link =
            serde_json::from_str(line).map_err(|e| format!("not a version of the list: {e}"))?;
        let (list, require) = self.check_next(&version)?;
        self.approvers = list;
        self.require_signature = require;
        self.version = version.version;
        Ok(())
    }

    /// What `version` would make the list, if it may follow this one.
    fn check_next(&self, version: &Link) -> std::result::Result<(Vec<Approver>, bool), String> {
        if version.version != self.version + 1 {
            return Err(format!(
                "version {} where {} was due",
                version.version,
                self.version + 1
            ));
        }
        let previous = self.lines.last().map(|l| fsutil::sha256_hex(l.as_bytes()));
        if version.previous != previous {
            return Err("it does not follow the version before it".into());
        }
        let list = parse_allowed_signers(&version.allowed_signers)?;
        let signers = if self.version == 0 {
            &list
        } else {
            &self.approvers
        };
        let signature = version
            .signature
            .as_deref()
            .ok_or_else(|| "it is not signed".to_string())?;
        verify_with(signers, LIST_NAMESPACE, &version.signed_bytes(), signature).map_err(
            |refusal| match refusal {
                Refusal::Mismatch => {
                    "its signature does not match its content (it was edited after signing)"
                        .to_string()
                }
                other => other.to_string(),
            },
        )?;
        Ok((list, version.require_signature))
    }

    /// Whether signatures are required: by this user, or by the
    /// repository's policy (`repository_requires`). Either is enough. A
    /// list with a line that does not verify requires them too, whatever
    /// its valid lines say: an agent that breaks a line, even the first,
    /// must not turn the requirement off.
    pub fn required(&self, repository_requires: bool) -> bool {
        repository_requires || self.require_signature || self.ignored.is_some()
    }

    /// The approver whose key is `key`.
    pub fn find(&self, key: &KeyData) -> Option<&Approver> {
        self.approvers.iter().find(|a| &a.key == key)
    }

    /// The approver named `name`.
    pub fn named(&self, name: &str) -> Option<&Approver> {
        self.approvers.iter().find(|a| a.name == name)
    }

    /// Checks that `signature` (an armored SSHSIG) is an approver's over
    /// `data` for `namespace`, with a touch if the key is a FIDO key.
    pub fn verify(
        &self,
        namespace: &str,
        data: &[u8],
        signature: &str,
    ) -> std::result::Result<&Approver, Refusal> {
        if self.approvers.is_empty() {
            return Err(Refusal::NoApprovers);
        }
        verify_with(&self.approvers, namespace, data, signature)
    }

    /// A new version: the list becomes `list`, the requirement `require`;
    /// `change` says what changed. To be signed by a current approver (the
    /// first version by one of its own), then [`Approvers::commit`].
    pub fn propose(
        &self,
        change: String,
        list: Vec<Approver>,
        require: bool,
        at: String,
    ) -> Proposal {
        let allowed_signers: String = list
            .iter()
            .map(|a| a.allowed_signers_line() + "\n")
            .collect();
        Proposal {
            version: Link {
                version: self.version + 1,
                previous: self.lines.last().map(|l| fsutil::sha256_hex(l.as_bytes())),
                at,
                change,
                require_signature: require,
                allowed_signers,
                signature: None,
            },
            list,
        }
    }

    /// Who may sign the next version: the current approvers, or for the
    /// first version the approvers it lists.
    pub fn signers_for<'a>(&'a self, proposal: &'a Proposal) -> &'a [Approver] {
        if self.version == 0 {
            &proposal.list
        } else {
            &self.approvers
        }
    }

    /// Appends `proposal` signed with `signature`, if that signature is a
    /// current approver's: the chain is written whole (the lines that
    /// verified and the new one; lines that did not verify are dropped)
    /// and `allowed_signers` rewritten. Returns the signer's name.
    pub fn commit(&self, proposal: Proposal, signature: String) -> Result<String> {
        let dir = self.dir.clone().ok_or_else(|| Error::Internal {
            what: "an approver list without a folder".into(),
        })?;
        // A list damaged from its first line is not started afresh over
        // what is left of it: a first version signs itself, so anyone could
        // start it, and aea would drop the evidence. A person removes the
        // damaged file, having seen what it held.
        if self.version == 0
            && let Some((line, why)) = &self.ignored
        {
            return Err(Error::DecisionRefused {
                message: format!(
                    "the approver list does not verify from line {line} ({why}); it is not started again over that"
                ),
                hint: format!(
                    "look at {} (something edited it), then move it aside and add your key again",
                    dir.join(CHANGES).display()
                ),
            });
        }
        let signer = {
            let signed = proposal.bytes();
            verify_with(self.signers_for(&proposal), LIST_NAMESPACE, &signed, &signature)
                .map_err(|refusal| Error::DecisionRefused {
                    message: format!("the approver list was not changed: {refusal}"),
                    hint: if self.version == 0 {
                        "the first approver signs with its own key: pass --ssh-key with the private key of the key being added, or load it into ssh-agent".into()
                    } else {
                        "a current approver signs a change: pass --ssh-key FILE with an approver's key, or load one into ssh-agent (`aea approvers list` shows whose)".into()
                    },
                })?
                .name
                .clone()
        };
        let mut version = proposal.version;
        version.signature = Some(signature);
        if let Some(parent) = dir.parent() {
            fsutil::ensure_dir(parent)?;
        }
        fsutil::ensure_state_dir(&dir)?;
        let _lock = fsutil::lock_within(&dir.join(".lock"), std::time::Duration::from_secs(10))?;
        // Another change may have landed since this list was read: then
        // this one no longer follows, and is not written.
        let config_dir = dir.parent().unwrap_or(&dir).to_path_buf();
        let now = Approvers::load(&config_dir)?;
        if now.version != self.version || now.lines != self.lines {
            return Err(Error::DecisionRefused {
                message: "the approver list changed while this change was being signed; nothing was written".into(),
                hint: "run the command again".into(),
            });
        }
        let line = serde_json::to_string(&version).expect("a version serialises");
        let mut text = String::new();
        for l in self.lines.iter().chain(std::iter::once(&line)) {
            text.push_str(l);
            text.push('\n');
        }
        fsutil::replace_atomic(&dir.join(CHANGES), text.as_bytes())?;
        // Written for people and never read: the change is made once the
        // chain is written, whatever became of this copy.
        let _ = fsutil::replace_atomic(
            &dir.join(ALLOWED_SIGNERS),
            version.allowed_signers.as_bytes(),
        );
        Ok(signer)
    }
}

/// The user's approvers as one command reads them: once, and only if a
/// decision is looked at. The repository's policy (`approvals.
/// require_signature`) or the user's list (`aea approvers require`) says
/// whether a decision must be signed; either one is enough.
#[derive(Debug, Default)]
pub struct SignOff {
    /// The user's config dir; `None`: the user has none, so no approver.
    config_dir: Option<PathBuf>,
    approvers: std::cell::OnceCell<std::result::Result<Approvers, String>>,
}

impl SignOff {
    pub fn new(config_dir: Option<PathBuf>) -> Self {
        SignOff {
            config_dir,
            approvers: std::cell::OnceCell::new(),
        }
    }

    /// The user's approver list in force, or why it cannot be read.
    pub fn approvers(&self) -> std::result::Result<&Approvers, &str> {
        self.approvers
            .get_or_init(|| match &self.config_dir {
                Some(dir) => Approvers::load(dir).map_err(|e| {
                    format!("the approver list cannot be read ({e}), so no signature verifies")
                }),
                None => Ok(Approvers::default()),
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether a decision counts only when signed, given whether the
    /// repository's policy requires it. A list that cannot be read, or
    /// holds a line that does not verify, requires it: what broke the list
    /// must not open the way.
    pub fn required(&self, repository_requires: bool) -> bool {
        match self.approvers() {
            Ok(list) => list.required(repository_requires),
            Err(_) => true,
        }
    }

    /// Checks `signature` over the decision whose signed bytes are `data`.
    pub fn verify(
        &self,
        data: &[u8],
        signature: Option<&str>,
    ) -> std::result::Result<&Approver, String> {
        let list = self.approvers().map_err(str::to_string)?;
        list.verify(NAMESPACE, data, signature.unwrap_or_default())
            .map_err(|refusal| refusal.to_string())
    }

    /// Where signatures are required and no approver can make one, why:
    /// nothing can then be approved.
    pub fn unusable(&self, repository_requires: bool) -> Option<String> {
        if !self.required(repository_requires) {
            return None;
        }
        match self.approvers() {
            Err(why) => Some(format!("signed approvals are required, and {why}")),
            Ok(list) if list.approvers.is_empty() => Some(match &list.ignored {
                Some((line, why)) => format!(
                    "signed approvals are required and the approver list does not verify from line {line} ({why}), so nothing can be approved"
                ),
                None => "signed approvals are required (approvals.require_signature) and no approver is set, so nothing can be approved".to_string(),
            }),
            Ok(_) => None,
        }
    }
}

/// A version of the list waiting for its signature.
#[derive(Debug, Clone)]
pub struct Proposal {
    version: Link,
    list: Vec<Approver>,
}

impl Proposal {
    /// The bytes to sign, with namespace [`LIST_NAMESPACE`].
    pub fn bytes(&self) -> Vec<u8> {
        self.version.signed_bytes()
    }
}

/// Reads the `allowed_signers` text of a version: `NAME namespaces="…"
/// TYPE BASE64` per line, as [`Approver::allowed_signers_line`] writes.
fn parse_allowed_signers(text: &str) -> std::result::Result<Vec<Approver>, String> {
    let mut list: Vec<Approver> = Vec::new();
    let (mut names, mut keys) = (
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
    );
    // Counted before any key is read: a forged version listing thousands
    // costs nothing to refuse.
    if text.lines().filter(|l| !l.trim().is_empty()).count() > APPROVERS_MAX {
        return Err(format!("it lists more than {APPROVERS_MAX} approvers"));
    }
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let (Some(name), Some(options), Some(kind), Some(base64), None) = (
            words.next(),
            words.next(),
            words.next(),
            words.next(),
            words.next(),
        ) else {
            return Err("a line of the list is not `NAME namespaces=… KEY`".into());
        };
        check_name(name)?;
        if options != format!("namespaces=\"{NAMESPACE},{LIST_NAMESPACE}\"") {
            return Err(format!("{name}'s line has other options than aea writes"));
        }
        let key = parse_public_key(&format!("{kind} {base64}"))?;
        if !names.insert(name.to_string()) || !keys.insert(base64.to_string()) {
            return Err(format!("{name} or its key is listed twice"));
        }
        list.push(Approver {
            name: name.to_string(),
            key,
        });
    }
    Ok(list)
}

/// Checks an armored SSHSIG against `signers`.
fn verify_with<'a>(
    signers: &'a [Approver],
    namespace: &str,
    data: &[u8],
    armored: &str,
) -> std::result::Result<&'a Approver, Refusal> {
    if armored.trim().is_empty() {
        return Err(Refusal::Unsigned);
    }
    let sig = SshSig::from_pem(armored.trim()).map_err(|e| Refusal::Malformed(e.to_string()))?;
    if sig.namespace() != namespace {
        // Whoever made the signature chose the namespace: only plain
        // characters of it are ever shown.
        return Err(Refusal::WrongNamespace(
            sig.namespace()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '@'))
                .take(64)
                .collect(),
        ));
    }
    let Some(approver) = signers.iter().find(|a| &a.key == sig.public_key()) else {
        return Err(Refusal::NotAnApprover(
            sig.public_key()
                .fingerprint(ssh_key::HashAlg::default())
                .to_string(),
        ));
    };
    let key = PublicKey::new(approver.key.clone(), "");
    key.verify(namespace, data, &sig)
        .map_err(|_| Refusal::Mismatch)?;
    if approver.hardware() && !user_present(sig.signature_bytes()) {
        return Err(Refusal::NoTouch(approver.name.clone()));
    }
    Ok(approver)
}

/// The user-presence bit of a FIDO signature: OpenSSH's encoding ends the
/// signature with one flags byte and a four-byte counter; bit 0 of the
/// flags says the key was touched.
fn user_present(signature: &[u8]) -> bool {
    signature
        .len()
        .checked_sub(5)
        .and_then(|at| signature.get(at))
        .is_some_and(|flags| flags & 0x01 != 0)
}

#[cfg(test)]
mod tests;
