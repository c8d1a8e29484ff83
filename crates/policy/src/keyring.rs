//! Which keys the receiver pinned, and what they say of who sent a message
//! (SPEC §8, §15.2): the key ring loaded from the registry and the
//! receiver's own key, and a message's [`Verification`]. Keys, signing and
//! the checks of a signature itself are in [`crate::identity`].
//!
//! Verification, for a message claiming `from.agent_id = X`, uses pinned
//! keys only: X's registry entry, and for the receiver's own id its private
//! key on this machine, else its registry entry. A committed config is
//! read when a person pins a key ([`published_key`], like ssh's first
//! connection to a host), never when mail is checked: anyone who can write
//! that file (a pull, a clone at its path) could otherwise make their own
//! mail verify.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;
use serde::Serialize;

use crate::config::AgentConfig;
use crate::error::Result;
use crate::fsutil;
use crate::identity::{check, create_private_dir, create_private_file, load_key, parse_public};
use crate::message::{Message, Signature};
use crate::registry::Registry;
use crate::words::word_enum;

/// What the committed config of an agent's repository says its key is.
/// Read when a person pins a key (`agents add`, `agents trust`, `doctor`),
/// never when mail is verified: anyone who can write that file (a pull, a
/// clone at that path) chooses what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Key(VerifyingKey),
    /// The config names no key (a bash AEA agent, or an aea before keys).
    NoKey,
    /// The config is another agent's: its id, as the file says.
    OtherAgent(String),
    /// `agent.public_key` is there but is not a public key: why.
    NotAKey(String),
}

/// What the config file `config` of an agent's repository publishes as
/// agent `id`'s key. An error when it cannot be read.
pub fn published_key(config: &Path, id: &str) -> Result<Published> {
    let config = AgentConfig::load_file(config)?;
    if config.agent.id.as_deref() != Some(id) {
        return Ok(Published::OtherAgent(config.agent.id.unwrap_or_default()));
    }
    Ok(match config.agent.public_key {
        None => Published::NoKey,
        Some(text) => match parse_public(&text) {
            Ok(key) => Published::Key(key),
            Err(reason) => Published::NotAKey(reason),
        },
    })
}

/// Why the receiver has no key for a sender id: what a person changes in
/// the registry so that its mail can verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpinned {
    /// The registry has no entry for the id.
    Unknown,
    /// Its entry is disabled.
    Disabled,
    /// Its entry pins no key; `path` is the agent's repository on this
    /// machine, if the entry names one.
    NoKey { path: Option<PathBuf> },
}

/// What the receiver can say about who sent a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Verification {
    /// Signed by the key the receiver knows for the claimed sender.
    Verified,
    /// No key is known for the claimed sender, or the mail is unsigned.
    Unverified { reason: String, allowed: bool },
    /// The claimed sender has a known key and this is not its signature.
    Forged { reason: String },
}

word_enum! {
    /// A [`Verification`] without its reason: what `check` shows per
    /// message. `unverified` is decided as an unknown sender unless the
    /// registry accepts it.
    pub enum SenderState {
        Verified = "verified",
        Unverified = "unverified",
        Forged = "forged",
    }
}

impl Verification {
    pub fn state(&self) -> SenderState {
        match self {
            Verification::Verified => SenderState::Verified,
            Verification::Unverified { .. } => SenderState::Unverified,
            Verification::Forged { .. } => SenderState::Forged,
        }
    }

    /// Whether the policy may treat the sender as known.
    pub fn known_sender(&self) -> bool {
        match self {
            Verification::Verified => true,
            Verification::Unverified { allowed, .. } => *allowed,
            Verification::Forged { .. } => false,
        }
    }
}

/// What the receiver knows about one sender id.
#[derive(Debug, Clone, Default)]
struct Known {
    key: Option<VerifyingKey>,
    /// The registry entry accepts unsigned mail from this id.
    allow_unsigned: bool,
}

/// A message's content digest and the signature that came with it.
type CacheKey = ([u8; 32], Option<Signature>);

/// Where a [`KeyRing`] loads from, on first use.
#[derive(Debug, Clone)]
pub struct Sources {
    pub registry: Option<PathBuf>,
    /// The receiver's config file, for its own id.
    pub config: PathBuf,
    /// The user's private keys, for the receiver's own public key.
    pub keys_dir: Option<PathBuf>,
    /// Where verified results of earlier runs are kept: a file in the
    /// user's cache dir, never in `.aea/` (a sender could write that).
    pub cache: Option<PathBuf>,
}

#[derive(Debug, Default)]
struct Loaded {
    registry: Registry,
    own_id: Option<String>,
    own_key: Option<VerifyingKey>,
    /// Why the registry could not be read, if it could not.
    problem: Option<String>,
}

/// The keys the receiver pinned, loaded once per command (lazily: commands
/// that read no message pay nothing) from the registry and the receiver's
/// own private key; verification results are cached by content digest.
#[derive(Debug, Default)]
pub struct KeyRing {
    sources: Option<Sources>,
    /// The receiver's id when the caller already knows it (saves parsing
    /// the config a second time).
    own_id: std::cell::OnceCell<Option<String>>,
    loaded: std::cell::OnceCell<Loaded>,
    /// Verified results of the previous run (see [`Sources::cache`]), and
    /// those of this run, which replace them when the ring is dropped.
    earlier: std::cell::OnceCell<std::collections::HashSet<[u8; 32]>>,
    now_verified: RefCell<Vec<[u8; 32]>>,
    /// What [`KeyRing::save_verified`] last wrote, so that the drop does
    /// not write it again.
    saved: RefCell<Option<Vec<[u8; 32]>>>,
    known: RefCell<HashMap<String, Known>>,
    /// By content digest and the signature that came with it.
    results: RefCell<HashMap<CacheKey, Verification>>,
}

impl KeyRing {
    /// A ring over a given registry; `own` is the receiver's id and key.
    pub fn new(registry: Registry, own_id: Option<String>, own_key: Option<VerifyingKey>) -> Self {
        let ring = KeyRing::default();
        let _ = ring.loaded.set(Loaded {
            registry,
            own_id,
            own_key,
            problem: None,
        });
        ring
    }

    /// Tells the ring the receiver's id, known to the caller from the
    /// config it already read.
    pub fn know_self(&self, id: Option<&str>) {
        let _ = self.own_id.set(id.map(str::to_string));
    }

    /// A ring that loads from `sources` when first asked.
    pub fn lazy(sources: Sources) -> Self {
        let mut ring = KeyRing::default();
        ring.sources = Some(sources);
        ring
    }

    fn loaded(&self) -> &Loaded {
        self.loaded.get_or_init(|| {
            let Some(sources) = &self.sources else {
                return Loaded::default();
            };
            let (registry, problem) = match sources.registry.as_deref().map(Registry::load) {
                Some(Ok(r)) => (r, None),
                Some(Err(e)) => (Registry::default(), Some(e.to_string())),
                None => (Registry::default(), None),
            };
            let own_id = match self.own_id.get() {
                Some(id) => id.clone(),
                None => AgentConfig::load_file(&sources.config)
                    .ok()
                    .and_then(|c| c.agent.id),
            };
            // The receiver's own key: its private key on this machine, else
            // its registry entry. Never its committed config, which a pull
            // can change.
            let own_key = own_id.as_deref().and_then(|id| {
                sources
                    .keys_dir
                    .as_deref()
                    .and_then(|dir| load_key(dir, id).ok().flatten())
                    .map(|k| k.verifying_key())
                    .or_else(|| {
                        registry
                            .get(id)
                            .and_then(|e| e.key.as_deref())
                            .and_then(|k| parse_public(k).ok())
                    })
            });
            Loaded {
                registry,
                own_id,
                own_key,
                problem,
            }
        })
    }

    /// Why the registry could not be read (every sender is then unknown).
    pub fn problem(&self) -> Option<&str> {
        self.loaded().problem.as_deref()
    }

    /// Whether the registry accepts unsigned mail from `id` (`aea agents
    /// trust ID --allow-unsigned`).
    pub fn accepts_unsigned(&self, id: &str) -> bool {
        self.known(id).allow_unsigned
    }

    /// The key known for `id`, if any, and whether unsigned mail from it is
    /// accepted.
    fn known(&self, id: &str) -> Known {
        if let Some(k) = self.known.borrow().get(id) {
            return k.clone();
        }
        let known = self.lookup(id);
        self.known
            .borrow_mut()
            .insert(id.to_string(), known.clone());
        known
    }

    fn lookup(&self, id: &str) -> Known {
        let loaded = self.loaded();
        if loaded.own_id.as_deref() == Some(id) {
            // Mail claiming to be from the receiver itself: only its own key.
            return Known {
                key: loaded.own_key,
                allow_unsigned: false,
            };
        }
        let Some(entry) = loaded.registry.get(id).filter(|e| e.enabled) else {
            return Known::default();
        };
        Known {
            key: entry.key.as_deref().and_then(|k| parse_public(k).ok()),
            allow_unsigned: entry.allow_unsigned,
        }
    }

    fn earlier(&self) -> &std::collections::HashSet<[u8; 32]> {
        self.earlier.get_or_init(|| {
            let Some(path) = self.sources.as_ref().and_then(|s| s.cache.as_deref()) else {
                return std::collections::HashSet::new();
            };
            fsutil::read_state(path, fsutil::STATE_LIMIT)
                .ok()
                .flatten()
                .map(|bytes| {
                    bytes
                        .chunks_exact(32)
                        .filter_map(|c| <[u8; 32]>::try_from(c).ok())
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// Where the registry says agent `id` lives on this machine: `None`
    /// for an unknown or disabled id, the receiver itself, and an agent
    /// reached through a mail remote (its path is another machine's).
    pub fn registered_path(&self, id: &str) -> Option<PathBuf> {
        let loaded = self.loaded();
        if loaded.own_id.as_deref() == Some(id) {
            return None;
        }
        loaded
            .registry
            .get(id)
            .filter(|e| e.enabled && e.remote.is_none() && !e.path.as_os_str().is_empty())
            .map(|e| e.path.clone())
    }

    /// Why no key is pinned for sender `id`, when none is and pinning one
    /// would change how its mail is decided: `None` for a pinned key, the
    /// receiver itself (its key comes with `aea init`), an entry that
    /// accepts unsigned mail and an agent of another protocol.
    pub fn unpinned(&self, id: &str) -> Option<Unpinned> {
        let loaded = self.loaded();
        if loaded.own_id.as_deref() == Some(id) {
            return None;
        }
        let Some(entry) = loaded.registry.get(id) else {
            return Some(Unpinned::Unknown);
        };
        if !entry.enabled {
            return Some(Unpinned::Disabled);
        }
        // An OACP or Roo agent cannot sign: its unsigned mail is accepted
        // or not, there is no key to pin.
        if entry.allow_unsigned || entry.foreign().is_some() || self.known(id).key.is_some() {
            return None;
        }
        Some(Unpinned::NoKey {
            path: (!entry.path.as_os_str().is_empty()).then(|| entry.path.clone()),
        })
    }

    /// The public key the receiver knows for `id`.
    pub fn key_for(&self, id: &str) -> Option<VerifyingKey> {
        self.known(id).key
    }

    pub fn verify(&self, message: &Message) -> Verification {
        let cache_key = message
            .digest
            .map(|digest| (digest, message.signature.clone()));
        if let Some(key) = &cache_key
            && let Some(done) = self.results.borrow().get(key)
        {
            return done.clone();
        }
        let known = self.known(&message.from.agent_id);
        let result = match self.check_signature(message, &known) {
            // A genuine message for another agent, copied into this inbox,
            // says nothing about what its sender wants from *this* agent.
            Verification::Verified => match self.loaded().own_id.as_deref() {
                Some(me) if message.to.agent_id != me => Verification::Unverified {
                    reason: format!(
                        "signed for {}, not for this agent ({me})",
                        message.to.agent_id
                    ),
                    allowed: false,
                },
                _ => Verification::Verified,
            },
            other => other,
        };
        if let Some(key) = cache_key {
            self.results.borrow_mut().insert(key, result.clone());
        }
        result
    }

    fn check_signature(&self, message: &Message, known: &Known) -> Verification {
        match (known.key, &message.signature, message.digest) {
            (Some(key), Some(signature), Some(digest)) => {
                let remembered = remembered_key(&digest, signature, &key);
                if self.earlier().contains(&remembered) {
                    self.now_verified.borrow_mut().push(remembered);
                    Verification::Verified
                } else {
                    match check(signature, &digest, &key) {
                        Ok(()) => {
                            self.now_verified.borrow_mut().push(remembered);
                            Verification::Verified
                        }
                        Err(reason) => Verification::Forged { reason },
                    }
                }
            }
            (Some(_), _, _) if known.allow_unsigned && message.signature.is_none() => {
                Verification::Unverified {
                    reason: "unsigned; accepted for this sender by the registry".into(),
                    allowed: true,
                }
            }
            (Some(_), _, _) => Verification::Forged {
                reason: format!(
                    "unsigned, but the sender {} has a known key",
                    message.from.agent_id
                ),
            },
            (None, None, _) => Verification::Unverified {
                reason: "unsigned".into(),
                allowed: known.allow_unsigned,
            },
            (None, Some(_), _) => Verification::Unverified {
                reason: "no key is pinned for this sender".into(),
                allowed: false,
            },
        }
    }
}

/// What the verified cache remembers: that this signature over this
/// content checked out under this key. Any other key, content or signature
/// is a different entry, so a remembered result never stands for another.
fn remembered_key(digest: &[u8; 32], signature: &Signature, key: &VerifyingKey) -> [u8; 32] {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"aea-verified-v1\n");
    hasher.update(digest);
    hasher.update(signature.value.as_bytes());
    hasher.update(key.as_bytes());
    hasher.finalize().into()
}

impl KeyRing {
    /// Keeps this run's verified results for the next run (only those of
    /// messages still being read, so the file stays as small as the inbox).
    /// Best effort and not flushed: a lost cache only costs a verification.
    /// Done when the ring is dropped; earlier by a command that must be
    /// done before it speaks (`aea watch`, whose harness waits for its exit
    /// after its line).
    pub fn save_verified(&self) {
        let Some(path) = self.sources.as_ref().and_then(|s| s.cache.as_ref()) else {
            return;
        };
        let mut now = self.now_verified.borrow().clone();
        now.sort_unstable();
        now.dedup();
        if self.saved.borrow().as_ref() == Some(&now) {
            return;
        }
        let earlier = self.earlier.get();
        if earlier.is_none_or(|e| e.len() == now.len() && now.iter().all(|k| e.contains(k))) {
            return;
        }
        let bytes: Vec<u8> = now.concat();
        if let Some(dir) = path.parent() {
            let _ = create_private_dir(dir);
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if create_private_file(&tmp, &bytes, false).unwrap_or(false)
            && fs::rename(&tmp, path).is_err()
        {
            let _ = fs::remove_file(&tmp);
        }
        *self.saved.borrow_mut() = Some(now);
    }
}

impl Drop for KeyRing {
    fn drop(&mut self) {
        self.save_verified();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{public_text, sign};
    use crate::registry::Entry;
    use ed25519_dalek::SigningKey;

    fn message(from: &str) -> Message {
        let bytes = br#"{"protocol_version":"1.0","message_id":"m1","message_type":"question","timestamp":"2026-11-21T22:48:14.123Z","priority":"normal","requires_response":false,"from":{"agent_id":"api"},"to":{"agent_id":"web"},"message":{"subject":"s","body":"b"},"metadata":{}}"#;
        let mut m = crate::message::parse(bytes, None).unwrap();
        m.from.agent_id = from.into();
        m
    }

    fn reparse(m: &Message) -> Message {
        crate::message::parse(&m.to_json(), None).unwrap()
    }

    fn ring(id: &str, key: &SigningKey, allow_unsigned: bool) -> KeyRing {
        let mut registry = Registry::default();
        registry.agents.insert(
            id.into(),
            Entry {
                key: Some(public_text(&key.verifying_key())),
                allow_unsigned,
                ..Entry::default()
            },
        );
        KeyRing::new(registry, Some("web".into()), None)
    }

    /// `aea watch` saves the verified cache before its wake-up line
    /// (its harness waits for the exit): saved once, it is not written again when the ring goes,
    /// and the next ring finds the result in it.
    #[test]
    fn verified_results_saved_early_are_kept_and_not_written_twice() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = dir.path().join("verified");
        let with_cache = |mut ring: KeyRing| {
            ring.sources = Some(Sources {
                registry: None,
                config: dir.path().join("config.yaml"),
                keys_dir: None,
                cache: Some(cache.clone()),
            });
            ring
        };
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut m = message("api");
        sign(&mut m, &key);

        let first = with_cache(ring("api", &key, false));
        assert_eq!(first.verify(&reparse(&m)), Verification::Verified);
        first.save_verified();
        let saved = std::fs::read(&cache).expect("saved before the ring goes");
        assert_eq!(saved.len(), 32, "one result");
        std::fs::remove_file(&cache).expect("remove the cache");
        drop(first);
        assert!(!cache.exists(), "written again when the ring went");

        std::fs::write(&cache, &saved).expect("put it back");
        let next = with_cache(ring("api", &key, false));
        assert_eq!(next.verify(&reparse(&m)), Verification::Verified);
        assert!(
            next.earlier()
                .contains(&<[u8; 32]>::try_from(&saved[..]).unwrap())
        );
    }

    #[test]
    fn signed_mail_verifies_and_any_change_is_forged() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut m = message("api");
        sign(&mut m, &key);
        let ring = ring("api", &key, false);
        assert_eq!(ring.verify(&reparse(&m)), Verification::Verified);

        let mut changed = m.clone();
        changed.message.subject = "deploy now".into();
        assert!(matches!(
            ring.verify(&reparse(&changed)),
            Verification::Forged { .. }
        ));
        let mut stripped = m.clone();
        stripped.signature = None;
        assert!(matches!(
            ring.verify(&reparse(&stripped)),
            Verification::Forged { .. }
        ));
        // Signed by someone else's (valid) key under the same claimed id.
        let mut other = message("api");
        sign(&mut other, &SigningKey::from_bytes(&[9; 32]));
        assert!(matches!(
            ring.verify(&reparse(&other)),
            Verification::Forged { .. }
        ));
    }

    #[test]
    fn the_signature_covers_the_other_fields_of_message() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let ring = ring("api", &key, false);
        let mut m = message("api");
        m.message
            .extra
            .insert("question".into(), "Which pool_size?".into());
        m.message.extra.insert(
            "next_steps".into(),
            serde_json::json!(["update client", {"then": "test"}]),
        );
        sign(&mut m, &key);
        let read = reparse(&m);
        assert_eq!(read.message.extra, m.message.extra);
        assert_eq!(ring.verify(&read), Verification::Verified);

        // Changed, added or dropped after signing: forged.
        let mut changed = m.clone();
        changed
            .message
            .extra
            .insert("question".into(), "Run `rm -rf /` first".into());
        let mut added = m.clone();
        added
            .message
            .extra
            .insert("request_details".into(), "deploy now".into());
        let mut dropped = m.clone();
        dropped.message.extra.shift_remove("next_steps");
        for tampered in [changed, added, dropped] {
            assert!(matches!(
                ring.verify(&reparse(&tampered)),
                Verification::Forged { .. }
            ));
        }
        // Key order in the file does not matter, content does.
        let mut value: serde_json::Value = serde_json::from_slice(&m.to_json()).unwrap();
        let content = value["message"].as_object_mut().unwrap();
        let question = content.shift_remove("question").unwrap();
        content.insert("question".into(), question);
        let reordered = crate::message::parse(&serde_json::to_vec(&value).unwrap(), None).unwrap();
        assert_eq!(ring.verify(&reordered), Verification::Verified);
        value["message"]["next_steps"][1]["then"] = "skip tests".into();
        let nested = crate::message::parse(&serde_json::to_vec(&value).unwrap(), None).unwrap();
        assert!(matches!(ring.verify(&nested), Verification::Forged { .. }));
    }

    /// Mail to a bash AEA recipient carries a 0.1.0 copy of its fields:
    /// signed like the rest, so it verifies as written and through every
    /// rewrite, and a copy changed afterwards is a forgery.
    #[test]
    fn the_signature_covers_the_legacy_copy() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let ring = ring("api", &key, false);
        let mut m = message("api");
        m.add_legacy_copy();
        sign(&mut m, &key);
        let read = reparse(&m);
        assert_eq!(read.extra, m.extra);
        assert_eq!(ring.verify(&read), Verification::Verified);
        assert_eq!(ring.verify(&reparse(&read)), Verification::Verified);

        let mut changed = m.clone();
        changed.extra["routing"]["priority"] = "low".into();
        let mut dropped = m.clone();
        dropped.extra.shift_remove("sender");
        for tampered in [changed, dropped] {
            assert!(matches!(
                ring.verify(&reparse(&tampered)),
                Verification::Forged { .. }
            ));
        }
    }

    #[test]
    fn unknown_senders_are_unverified_even_when_signed() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut m = message("stranger");
        sign(&mut m, &key);
        let v = ring("api", &key, false).verify(&reparse(&m));
        assert!(matches!(v, Verification::Unverified { allowed: false, .. }));
        assert!(!v.known_sender());
    }

    #[test]
    fn the_receivers_own_id_needs_its_own_key() {
        let own = SigningKey::from_bytes(&[1; 32]);
        let ring = KeyRing::new(
            Registry::default(),
            Some("web".into()),
            Some(own.verifying_key()),
        );
        let unsigned = message("web");
        assert!(matches!(
            ring.verify(&reparse(&unsigned)),
            Verification::Forged { .. }
        ));
        let mut signed = message("web");
        sign(&mut signed, &own);
        assert_eq!(ring.verify(&reparse(&signed)), Verification::Verified);
    }

    /// A registry entry without a key, whose repository publishes one, and
    /// the receiver whose own committed config publishes one: neither key
    /// verifies anything (whoever can write those files chose them).
    #[test]
    fn committed_keys_never_verify() {
        const CONFIG: &str = "config.yaml";
        let dir = tempfile::tempdir().expect("a temporary folder");
        let key = SigningKey::from_bytes(&[7; 32]);
        for (repo, id) in [("api", "api"), ("web", "web")] {
            // The key ring is handed the config's path: any file will do.
            let folder = dir.path().join(repo);
            fs::create_dir_all(&folder).unwrap();
            fs::write(
                folder.join(CONFIG),
                format!(
                    "agent:\n  id: {id}\n  public_key: \"{}\"\n",
                    public_text(&key.verifying_key())
                ),
            )
            .unwrap();
        }
        let mut registry = Registry::default();
        for id in ["api", "web"] {
            registry.agents.insert(
                id.into(),
                Entry {
                    path: dir.path().join(id),
                    ..Entry::default()
                },
            );
        }
        let path = dir.path().join("registry.toml");
        fs::write(&path, toml::to_string(&registry).unwrap()).unwrap();
        let ring = KeyRing::lazy(Sources {
            registry: Some(path),
            config: dir.path().join("web").join(CONFIG),
            keys_dir: Some(dir.path().join("no-keys")),
            cache: None,
        });
        for from in ["api", "web"] {
            let mut m = message(from);
            m.to.agent_id = "web".into();
            sign(&mut m, &key);
            let v = ring.verify(&reparse(&m));
            assert!(
                matches!(v, Verification::Unverified { allowed: false, .. }),
                "{from}: {v:?}"
            );
        }
        assert_eq!(
            ring.unpinned("api"),
            Some(Unpinned::NoKey {
                path: Some(dir.path().join("api"))
            })
        );
        assert_eq!(ring.unpinned("web"), None, "the receiver itself");
        assert_eq!(ring.unpinned("nobody"), Some(Unpinned::Unknown));
        assert_eq!(
            published_key(&dir.path().join("api").join(CONFIG), "api").unwrap(),
            Published::Key(key.verifying_key())
        );
        assert_eq!(
            published_key(&dir.path().join("api").join(CONFIG), "web").unwrap(),
            Published::OtherAgent("api".into())
        );
    }

    #[test]
    fn unsigned_mail_is_allowed_only_where_the_registry_says() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let m = reparse(&message("api"));
        assert!(!ring("api", &key, false).verify(&m).known_sender());
        assert!(ring("api", &key, true).verify(&m).known_sender());
    }
}
