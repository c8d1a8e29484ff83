//! The approver chain and decision signatures, with keys made here: the
//! integration tests sign with the real `ssh-keygen` and ssh-agent.

use ssh_key::private::Ed25519Keypair;
use ssh_key::public::{Ed25519PublicKey, SkEd25519};
use ssh_key::{HashAlg, LineEnding, Signature};

use super::*;

fn keypair(seed: u8) -> ssh_key::PrivateKey {
    ssh_key::PrivateKey::from(Ed25519Keypair::from_seed(&[seed; 32]))
}

fn approver(name: &str, seed: u8) -> Approver {
    Approver {
        name: name.into(),
        key: KeyData::from(&keypair(seed)),
    }
}

fn sign(seed: u8, namespace: &str, data: &[u8]) -> String {
    SshSig::sign(&keypair(seed), namespace, HashAlg::Sha512, data)
        .unwrap()
        .to_pem(LineEnding::LF)
        .unwrap()
}

/// A FIDO ed25519 signature made in software, with `flags` as the
/// authenticator would set them (bit 0: the key was touched).
fn sk_sign(seed: u8, namespace: &str, data: &[u8], flags: u8) -> (KeyData, String) {
    use ed25519_dalek::Signer;
    use sha2::{Digest, Sha256};
    let pair = Ed25519Keypair::from_seed(&[seed; 32]);
    let key = KeyData::SkEd25519(SkEd25519::new(
        Ed25519PublicKey(pair.public.0),
        "ssh:".to_string(),
    ));
    let inner = SshSig::signed_data(namespace, HashAlg::Sha512, data).unwrap();
    let counter = 7u32.to_be_bytes();
    let mut signed = Vec::new();
    signed.extend(Sha256::digest(b"ssh:"));
    signed.push(flags);
    signed.extend(counter);
    signed.extend(Sha256::digest(&inner));
    let dalek = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
    let mut raw = dalek.sign(&signed).to_bytes().to_vec();
    raw.push(flags);
    raw.extend(counter);
    let sig = SshSig::new(
        key.clone(),
        namespace,
        HashAlg::Sha512,
        Signature::new(Algorithm::SkEd25519, raw).unwrap(),
    )
    .unwrap();
    (key, sig.to_pem(LineEnding::LF).unwrap())
}

fn now() -> String {
    "2026-11-27T10:00:00Z".into()
}

/// A chain in a temporary config dir whose first version lists alice
/// (seed 1), signed by her.
fn started() -> (tempfile::TempDir, Approvers) {
    let dir = tempfile::tempdir().unwrap();
    let empty = Approvers::load(dir.path()).unwrap();
    assert_eq!(empty.version, 0);
    assert!(empty.approvers.is_empty());
    let proposal = empty.propose("add alice".into(), vec![approver("alice", 1)], true, now());
    let signature = sign(1, LIST_NAMESPACE, &proposal.bytes());
    assert_eq!(empty.commit(proposal, signature).unwrap(), "alice");
    let list = Approvers::load(dir.path()).unwrap();
    (dir, list)
}

fn changes(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join(DIR).join(CHANGES)
}

#[test]
fn the_first_approver_signs_with_its_own_key() {
    let (dir, list) = started();
    assert_eq!(list.version, 1);
    assert!(list.require_signature);
    assert_eq!(list.named("alice").unwrap().key, approver("alice", 1).key);
    assert!(list.ignored.is_none());
    let written = std::fs::read_to_string(dir.path().join(DIR).join(ALLOWED_SIGNERS)).unwrap();
    assert!(
        written.starts_with("alice namespaces=\"aea-approval,aea-approvers\" ssh-ed25519 "),
        "{written}"
    );

    // Signed by another key than the one it adds: refused, nothing written.
    let fresh = tempfile::tempdir().unwrap();
    let empty = Approvers::load(fresh.path()).unwrap();
    let proposal = empty.propose("add bob".into(), vec![approver("bob", 2)], true, now());
    let signature = sign(3, LIST_NAMESPACE, &proposal.bytes());
    let err = empty.commit(proposal, signature).unwrap_err().to_string();
    assert!(err.contains("not an approver's"), "{err}");
    assert!(!fresh.path().join(DIR).join(CHANGES).exists());
}

#[test]
fn a_change_needs_a_current_approver() {
    let (dir, list) = started();
    let both = vec![approver("alice", 1), approver("bob", 2)];
    // Bob cannot add himself.
    let proposal = list.propose("add bob".into(), both.clone(), true, now());
    let by_bob = sign(2, LIST_NAMESPACE, &proposal.bytes());
    assert!(list.commit(proposal.clone(), by_bob).is_err());
    assert_eq!(Approvers::load(dir.path()).unwrap().approvers.len(), 1);
    // A signature made for an approval is not one for the list.
    let wrong_namespace = sign(1, NAMESPACE, &proposal.bytes());
    let err = list
        .commit(proposal.clone(), wrong_namespace)
        .unwrap_err()
        .to_string();
    assert!(err.contains("aea-approval"), "{err}");
    // Alice can.
    let by_alice = sign(1, LIST_NAMESPACE, &proposal.bytes());
    list.commit(proposal, by_alice).unwrap();
    let list = Approvers::load(dir.path()).unwrap();
    assert_eq!(list.version, 2);
    assert_eq!(list.approvers, both);
    // Now bob may turn the requirement off.
    let off = list.propose("require off".into(), both, false, now());
    let by_bob = sign(2, LIST_NAMESPACE, &off.bytes());
    list.commit(off, by_bob).unwrap();
    assert!(!Approvers::load(dir.path()).unwrap().require_signature);
}

#[test]
fn lines_written_by_hand_change_nothing() {
    let (dir, list) = started();
    let original = std::fs::read_to_string(changes(&dir)).unwrap();
    // An agent appends a version adding its own key, signed by that key.
    let mut forged = list
        .propose(
            "add agent".into(),
            vec![approver("alice", 1), approver("agent", 9)],
            false,
            now(),
        )
        .version;
    forged.signature = Some(sign(9, LIST_NAMESPACE, &forged.signed_bytes()));
    let line = serde_json::to_string(&forged).unwrap();
    std::fs::write(changes(&dir), format!("{original}{line}\n")).unwrap();
    let read = Approvers::load(dir.path()).unwrap();
    assert_eq!(read.version, 1);
    assert!(read.named("agent").is_none());
    assert!(read.require_signature);
    let (at, why) = read.ignored.clone().unwrap();
    assert_eq!(at, 2);
    assert!(why.contains("not an approver's"), "{why}");

    // Or edits alice's signed version to list its key instead: the
    // signature no longer matches, so nothing is in force.
    let edited = original.replace(
        &approver("alice", 1).public_line()[12..],
        &approver("agent", 9).public_line()[12..],
    );
    assert_ne!(edited, original);
    std::fs::write(changes(&dir), edited).unwrap();
    let read = Approvers::load(dir.path()).unwrap();
    assert_eq!(read.version, 0);
    assert!(read.approvers.is_empty());
    assert!(read.ignored.is_some());

    // Or appends a version alice signed, but for another chain: it does
    // not follow this one.
    std::fs::write(changes(&dir), &original).unwrap();
    let mut spliced = list
        .propose(
            "add agent".into(),
            vec![approver("alice", 1), approver("agent", 9)],
            true,
            now(),
        )
        .version;
    spliced.previous = Some("0".repeat(64));
    spliced.signature = Some(sign(1, LIST_NAMESPACE, &spliced.signed_bytes()));
    let line = serde_json::to_string(&spliced).unwrap();
    std::fs::write(changes(&dir), format!("{original}{line}\n")).unwrap();
    let read = Approvers::load(dir.path()).unwrap();
    assert_eq!(read.version, 1);
    assert!(read.ignored.unwrap().1.contains("does not follow"));
}

#[test]
fn a_commit_drops_lines_that_did_not_verify() {
    let (dir, list) = started();
    let original = std::fs::read_to_string(changes(&dir)).unwrap();
    std::fs::write(changes(&dir), format!("{original}{{\"junk\":1}}\n")).unwrap();
    let read = Approvers::load(dir.path()).unwrap();
    assert!(read.ignored.is_some());
    let both = vec![approver("alice", 1), approver("bob", 2)];
    let proposal = read.propose("add bob".into(), both, true, now());
    read.commit(proposal.clone(), sign(1, LIST_NAMESPACE, &proposal.bytes()))
        .unwrap();
    let after = Approvers::load(dir.path()).unwrap();
    assert!(after.ignored.is_none());
    assert_eq!(after.version, 2);
    drop(list);
}

#[test]
fn a_chain_that_is_no_regular_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(DIR)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join(DIR).join(CHANGES)).unwrap();
    assert!(Approvers::load(dir.path()).is_err());
}

fn decision<'a>(repo: &'a str, sha: &'a str, note: Option<&'a str>) -> Decision<'a> {
    Decision::new(
        repo,
        "handoff-1",
        "message-20261127T100000000Z-from-api-0badf11e.json",
        sha,
        "approved",
        note,
        None,
        "2026-11-27T10:00:00Z",
    )
}

#[test]
fn a_decision_verifies_only_as_signed() {
    let (_dir, list) = started();
    let signed = decision("/r/web", "ab", Some("ok")).bytes();
    let good = sign(1, NAMESPACE, &signed);
    assert_eq!(
        list.verify(NAMESPACE, &signed, &good).unwrap().name,
        "alice"
    );
    // Another repository, other bytes, another note: each a mismatch.
    for other in [
        decision("/r/api", "ab", Some("ok")),
        decision("/r/web", "cd", Some("ok")),
        decision("/r/web", "ab", Some("ok!")),
        decision("/r/web", "ab", None),
    ] {
        assert_eq!(
            list.verify(NAMESPACE, &other.bytes(), &good).unwrap_err(),
            Refusal::Mismatch
        );
    }
    assert_eq!(
        list.verify(NAMESPACE, &signed, "").unwrap_err(),
        Refusal::Unsigned
    );
    assert!(matches!(
        list.verify(
            NAMESPACE,
            &signed,
            "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"
        ),
        Err(Refusal::Malformed(_))
    ));
    assert!(matches!(
        list.verify(NAMESPACE, &signed, &sign(9, NAMESPACE, &signed)),
        Err(Refusal::NotAnApprover(_))
    ));
    assert!(matches!(
        list.verify(NAMESPACE, &signed, &sign(1, "git", &signed)),
        Err(Refusal::WrongNamespace(ns)) if ns == "git"
    ));
    assert_eq!(
        Approvers::default()
            .verify(NAMESPACE, &signed, &good)
            .unwrap_err(),
        Refusal::NoApprovers
    );
}

#[test]
fn a_hardware_key_must_have_been_touched() {
    let signed = decision("/r/web", "ab", None).bytes();
    let (key, touched) = sk_sign(5, NAMESPACE, &signed, 0x01);
    let (_, untouched) = sk_sign(5, NAMESPACE, &signed, 0x00);
    let list = Approvers {
        approvers: vec![Approver {
            name: "yubi".into(),
            key,
        }],
        version: 1,
        ..Approvers::default()
    };
    assert!(list.approvers[0].hardware());
    assert_eq!(
        list.verify(NAMESPACE, &signed, &touched).unwrap().name,
        "yubi"
    );
    assert_eq!(
        list.verify(NAMESPACE, &signed, &untouched).unwrap_err(),
        Refusal::NoTouch("yubi".into())
    );
    // The flags are signed: setting the bit afterwards breaks the signature.
    let mut sig = SshSig::from_pem(&untouched).unwrap();
    let mut raw = sig.signature_bytes().to_vec();
    let at = raw.len() - 5;
    raw[at] |= 0x01;
    sig = SshSig::new(
        sig.public_key().clone(),
        NAMESPACE,
        HashAlg::Sha512,
        Signature::new(Algorithm::SkEd25519, raw).unwrap(),
    )
    .unwrap();
    assert_eq!(
        list.verify(NAMESPACE, &signed, &sig.to_pem(LineEnding::LF).unwrap())
            .unwrap_err(),
        Refusal::Mismatch
    );
}

#[test]
fn names_and_keys_are_checked() {
    for good in ["alice", "a.b-c_d@example.org", "x+y"] {
        check_name(good).unwrap();
    }
    for bad in ["", "-rf", "a b", "a\"b", "a,b", &"x".repeat(65), "é"] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    let line = approver("alice", 1).public_line();
    assert_eq!(
        parse_public_key(&format!("{line} alice@host\n")).unwrap(),
        approver("alice", 1).key
    );
    assert!(parse_public_key("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7").is_err());
    assert!(parse_public_key(&format!("{line}\n{line}")).is_err());
    assert!(parse_public_key("not a key").is_err());
}
