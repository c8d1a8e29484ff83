//! Who sent a message (SPEC §8, §15.2): every agent's Ed25519 signing key,
//! signing what aea writes, and verifying what it reads against the key the
//! receiver pinned for the claimed sender.
//!
//! Keys: the private half is a file of 64 hex digits in the user's config
//! dir (`keys/<agent-id>.key`, mode 0600, folder 0700), never in a
//! repository; the public half (`ed25519:<64 hex>`) is published in the
//! agent's committed `agent-config.yaml` (`agent.public_key`) and pinned in
//! registry entries (`key`).
//!
//! Which keys the receiver pinned, and how a message is judged against
//! them, is the key ring's ([`crate::keyring`]).

use std::fs;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::message::{Message, Signature};

pub(crate) const ALG: &str = "ed25519";
const KEY_PREFIX: &str = "ed25519:";
/// Folder of private keys inside the user's config dir.
pub const KEYS_DIR: &str = "keys";

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.trim();
    if text.len() != N * 2 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// `ed25519:<64 hex>`, the public key as configs and registries carry it.
pub fn public_text(key: &VerifyingKey) -> String {
    format!("{KEY_PREFIX}{}", hex(key.as_bytes()))
}

/// Parses `ed25519:<64 hex>`.
pub fn parse_public(text: &str) -> std::result::Result<VerifyingKey, String> {
    let bytes = text
        .trim()
        .strip_prefix(KEY_PREFIX)
        .and_then(unhex::<32>)
        .ok_or_else(|| "a public key is `ed25519:` followed by 64 hex digits".to_string())?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| "not a valid Ed25519 public key".to_string())
}

/// A short, readable form of a public key for people to compare: the first
/// 16 hex digits of its SHA-256.
pub fn fingerprint(key: &VerifyingKey) -> String {
    let digest = fsutil::sha256_hex(key.as_bytes());
    format!("SHA256:{}", &digest[..16])
}

/// What the name of a private key file ends with, after the agent's id.
const KEY_SUFFIX: &str = ".key";

/// Where the private key of `agent_id` lives.
pub fn key_path(keys_dir: &Path, agent_id: &str) -> PathBuf {
    keys_dir.join(format!("{agent_id}{KEY_SUFFIX}"))
}

/// The agent whose private key a file of the keys dir named `file_name`
/// is (`web.key` is `web`'s): the other way round from [`key_path`].
pub fn key_agent(file_name: &str) -> Option<&str> {
    file_name
        .strip_suffix(KEY_SUFFIX)
        .filter(|id| !id.is_empty())
}

/// Reads the private key of `agent_id`, `None` when there is none.
pub fn load_key(keys_dir: &Path, agent_id: &str) -> Result<Option<SigningKey>> {
    let path = key_path(keys_dir, agent_id);
    let Some(text) = fsutil::read_optional(&path)? else {
        return Ok(None);
    };
    let seed = unhex::<32>(&text).ok_or_else(|| Error::KeyInvalid { path: path.clone() })?;
    Ok(Some(SigningKey::from_bytes(&seed)))
}

/// The private key of `agent_id`, created (from the OS's randomness) when
/// missing. Returns whether it was created. An existing key is never
/// replaced.
pub fn load_or_create_key(keys_dir: &Path, agent_id: &str) -> Result<(SigningKey, bool)> {
    if let Some(key) = load_key(keys_dir, agent_id)? {
        return Ok((key, false));
    }
    create_private_dir(keys_dir)?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| {
        Error::io(
            "read randomness for",
            keys_dir,
            std::io::Error::other(e.to_string()),
        )
    })?;
    let key = SigningKey::from_bytes(&seed);
    let path = key_path(keys_dir, agent_id);
    if !create_private_file(&path, format!("{}\n", hex(&seed)).as_bytes(), true)? {
        // Another process created it first: use that one.
        return load_key(keys_dir, agent_id)?
            .map(|k| (k, false))
            .ok_or(Error::KeyInvalid { path });
    }
    Ok((key, true))
}

pub fn create_private_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io("set permissions of", dir, e))?;
    }
    Ok(())
}

/// Creates `path` readable by its owner only; false when it exists.
/// `durable` flushes it to disk (keys are; caches need not be).
pub fn create_private_file(path: &Path, bytes: &[u8], durable: bool) -> Result<bool> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(Error::io("create", path, e)),
    };
    file.write_all(bytes)
        .and_then(|()| if durable { file.sync_all() } else { Ok(()) })
        .map_err(|e| Error::io("write", path, e))?;
    Ok(true)
}

/// Signs `message` with `key`: sets `signature` over everything else.
pub fn sign(message: &mut Message, key: &SigningKey) {
    message.signature = None;
    let value = serde_json::to_value(&*message).expect("a message always serialises");
    let serde_json::Value::Object(object) = value else {
        unreachable!("a message serialises to an object")
    };
    let digest = crate::message::signed_digest(&object);
    message.signature = Some(Signature {
        alg: ALG.to_string(),
        key: public_text(&key.verifying_key()),
        value: hex(&key.sign(&digest).to_bytes()),
    });
    message.digest = Some(digest);
}

/// Whether `message`, as read, carries a valid signature by `key`: the
/// sender's own check that a copy someone else holds is the one it signed.
pub fn signed_by(message: &Message, key: &VerifyingKey) -> bool {
    match (&message.signature, message.digest) {
        (Some(signature), Some(digest)) => check(signature, &digest, key).is_ok(),
        _ => false,
    }
}

/// Signs arbitrary bytes under a domain tag (sync receipts).
pub fn sign_bytes(domain: &str, bytes: &[u8], key: &SigningKey) -> Signature {
    Signature {
        alg: ALG.to_string(),
        key: public_text(&key.verifying_key()),
        value: hex(&key.sign(&tagged_digest(domain, bytes)).to_bytes()),
    }
}

fn tagged_digest(domain: &str, bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(domain.as_bytes());
    hasher.update(b"\n");
    hasher.update(bytes);
    hasher.finalize().into()
}

/// Checks `signature` over `digest` against `expected`.
pub fn check(
    signature: &Signature,
    digest: &[u8; 32],
    expected: &VerifyingKey,
) -> std::result::Result<(), String> {
    if signature.alg != ALG {
        return Err(format!(
            "unsupported signature algorithm {:?}",
            signature.alg
        ));
    }
    match parse_public(&signature.key) {
        Ok(k) if k == *expected => {}
        _ => return Err("signed by a key other than the one known for this sender".into()),
    }
    let bytes = unhex::<64>(&signature.value).ok_or("the signature is not 128 hex digits")?;
    expected
        .verify_strict(digest, &ed25519_dalek::Signature::from_bytes(&bytes))
        .map_err(|_| "the signature does not match the content".to_string())
}

/// Verifies a signature over `bytes` made with [`sign_bytes`].
pub fn verify_bytes(
    domain: &str,
    bytes: &[u8],
    signature: &Signature,
    expected: &VerifyingKey,
) -> std::result::Result<(), String> {
    check(signature, &tagged_digest(domain, bytes), expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_created_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        let (a, created) = load_or_create_key(&keys, "api").unwrap();
        assert!(created);
        let (b, again) = load_or_create_key(&keys, "api").unwrap();
        assert!(!again);
        assert_eq!(a.to_bytes(), b.to_bytes());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&key_path(&keys, "api")), 0o600);
            assert_eq!(mode(&keys), 0o700);
        }
        assert_eq!(
            parse_public(&public_text(&a.verifying_key())).unwrap(),
            a.verifying_key()
        );
    }
}
