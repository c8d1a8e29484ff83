//! The signed form of a message (the book's "The signed form",
//! `docs/src/message-format.md`) is a format other tools and earlier mail
//! depend on: its test vectors are read from the book itself and checked against the code, and mail signed by the
//! first version that signed still verifies.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The book's "The signed form" section, up to the next heading of its
/// level or above.
fn signed_form_section() -> String {
    let page = std::fs::read_to_string(manifest().join("docs/src/message-format.md")).unwrap();
    let start = page
        .find("\n## The signed form\n")
        .expect("docs/src/message-format.md has a section \"The signed form\"");
    let rest = &page[start + 1..];
    let end = [rest[3..].find("\n## "), rest[3..].find("\n# ")]
        .into_iter()
        .flatten()
        .min()
        .map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

/// The value after `- {label}: ` in `section`, inside backticks.
fn item(section: &str, label: &str) -> String {
    let prefix = format!("- {label}: `");
    let line = section
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line `{prefix}…` in the section"));
    line[prefix.len()..].trim_end_matches('`').to_string()
}

/// The body of the first fenced block of kind `kind` (indentation of the
/// list item removed).
fn block(section: &str, kind: &str) -> String {
    let open = format!("```{kind}\n");
    let start = section
        .find(&open)
        .unwrap_or_else(|| panic!("no ```{kind} block in the section"));
    let body = &section[start + open.len()..];
    let end = body.find("```").unwrap();
    body[..end]
        .lines()
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_test_vectors_are_what_the_code_signs() {
    let section = signed_form_section();
    let seed_hex = item(&section, "seed of the signing key (hex)");
    assert_eq!(seed_hex.len(), 64, "{seed_hex}");
    let seed: [u8; 32] =
        std::array::from_fn(|i| u8::from_str_radix(&seed_hex[i * 2..i * 2 + 2], 16).unwrap());
    let key = ed25519_dalek::SigningKey::from_bytes(&seed);
    let public = aea::identity::public_text(&key.verifying_key());
    assert_eq!(public, item(&section, "public key"));

    let file = block(&section, "json");
    let value: Value = serde_json::from_str(&file).unwrap();
    let mut canonical = String::new();
    aea::message::canonical(&value, &mut canonical);
    assert_eq!(canonical, block(&section, "text").trim_end());
    let digest = aea::fsutil::sha256_hex(format!("aea-message-v1\n{canonical}").as_bytes());
    assert_eq!(digest, item(&section, "digest (SHA-256)"));

    // What `aea send` does: sign the message as aea holds it.
    let mut message = aea::message::parse(file.as_bytes(), None).unwrap();
    aea::identity::sign(&mut message, &key);
    assert_eq!(hex(&message.digest.unwrap()), digest);
    let signature = message.signature.clone().unwrap();
    assert_eq!(signature.alg, "ed25519");
    assert_eq!(signature.key, public);
    assert_eq!(signature.value, item(&section, "signature"));

    // The book's file with that signature added verifies as read, in
    // any layout; one changed character does not.
    let mut signed = value.clone();
    signed["signature"] = serde_json::to_value(&signature).unwrap();
    for bytes in [
        serde_json::to_vec(&signed).unwrap(),
        serde_json::to_vec_pretty(&signed).unwrap(),
    ] {
        let read = aea::message::parse(&bytes, None).unwrap();
        assert!(aea::identity::signed_by(&read, &key.verifying_key()));
    }
    signed["message"]["subject"] = "Which port!".into();
    let read = aea::message::parse(&serde_json::to_vec(&signed).unwrap(), None).unwrap();
    assert!(!aea::identity::signed_by(&read, &key.verifying_key()));
}

/// api's key when aea at commit 5ce80ec signed the kept message.
const EARLIER_API_KEY: &str =
    "ed25519:38a7ca30c780f0b8cb29db068c76923f5dd8087926502e0f7ca97795262c8194";
const EARLIER_MESSAGE: &str = "message-20261125T102914633Z-from-api-91ca405d.json";

fn earlier(name: &str) -> Vec<u8> {
    std::fs::read(
        manifest()
            .join("tests/signed-by-earlier-versions")
            .join(name),
    )
    .unwrap()
}

#[test]
fn a_message_signed_by_an_earlier_version_still_verifies() {
    let bytes = earlier(EARLIER_MESSAGE);
    let message = aea::message::parse(&bytes, Some(EARLIER_MESSAGE)).unwrap();
    let key = aea::identity::parse_public(EARLIER_API_KEY).unwrap();
    assert!(aea::identity::signed_by(&message, &key));

    // The real binary, with that key pinned for api.
    let env = TestEnv::new();
    let web = env.repo("web");
    let api: &Path = &env.path().join("api");
    std::fs::create_dir_all(api).unwrap();
    env.ok(
        &web,
        &[
            "agents",
            "add",
            "api",
            "--path",
            api.to_str().unwrap(),
            "--key",
            EARLIER_API_KEY,
        ],
    );
    std::fs::write(web.join(".aea").join(EARLIER_MESSAGE), &bytes).unwrap();
    let report = env.json(&web, &["check"]);
    let item = report["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == message.message_id.as_str())
        .unwrap_or_else(|| panic!("not listed: {report}"));
    assert_eq!(item["sender"], "verified", "{item}");
}
