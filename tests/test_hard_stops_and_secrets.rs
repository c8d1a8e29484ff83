//! Hard stops and secret detection that a sender can
//! no longer step around with spacing, Unicode, flag order or another field.
//!
//! `tests/secrets-corpus/<case>.txt` holds one case per file: the expected
//! kind (or `none`) on the first line, the text after it. The hard-stop
//! bypasses live in `tests/policy-corpus/` (cases 78 on).

use crate::common::{TestEnv, code, inbox_files, stderr, stdout};
use serde_json::Value;
use std::path::Path;

/// Runs every case under `root`; returns the number of cases and the
/// failures, one line each.
fn secrets_corpus(root: &Path) -> (usize, Vec<String>) {
    let mut cases: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    for path in &cases {
        let text = std::fs::read_to_string(path).unwrap();
        let (expected, body) = text.split_once('\n').unwrap_or((&text, ""));
        let got = aea::secrets::find(body).unwrap_or("none");
        if got != expected.trim() {
            failures.push(format!(
                "{}: got {got:?}, expected {:?}",
                path.file_name().unwrap().to_string_lossy(),
                expected.trim()
            ));
        }
    }
    (cases.len(), failures)
}

/// How many cases `tests/secrets-corpus/` holds. Counted exactly so that a
/// case that goes missing fails the test; whoever adds a case raises this
/// number in the same commit.
const SECRETS_CASES: usize = 50;

#[test]
fn every_secrets_corpus_case_gets_its_expected_kind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secrets-corpus");
    let (count, failures) = secrets_corpus(&root);
    assert_eq!(
        count, SECRETS_CASES,
        "the corpus has {count} cases, expected {SECRETS_CASES}: update SECRETS_CASES in tests/test_hard_stops_and_secrets.rs when adding a case"
    );
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_wrong_expectation_fails_the_secrets_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secrets-corpus");
    let scratch = tempfile::tempdir().unwrap();
    // A secret expected as `none`, a `none` expected as a secret, and a
    // secret expected as another kind: each must be reported.
    for (case, wrong) in [
        ("jwt.txt", "none"),
        ("none-changeme.txt", "secret in an assignment"),
        ("pgp-private-key.txt", "private key block"),
    ] {
        let text = std::fs::read_to_string(root.join(case)).unwrap();
        let (_, body) = text.split_once('\n').unwrap();
        std::fs::write(scratch.path().join(case), format!("{wrong}\n{body}")).unwrap();
    }
    let (count, failures) = secrets_corpus(scratch.path());
    assert_eq!(count, 3);
    assert_eq!(failures.len(), 3, "{failures:?}");
}

/// Every string `send` carries is scanned: tags, nested context,
/// attachment paths, and every PEM block rather than the first.
#[test]
fn send_refuses_secrets_in_any_field() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    std::fs::write(
        api.join("xoxb-123456789012-abcdefghij.txt"),
        "an innocent file",
    )
    .unwrap();
    let pem = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n\
               -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n";
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV";
    let context = serde_json::json!({"deploy": {"headers": [jwt]}}).to_string();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--tag", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
            "GitHub token",
        ),
        (&["--body", pem], "private key block"),
        (&["--context", &context], "JSON web token"),
        (
            &["--attach", "xoxb-123456789012-abcdefghij.txt"],
            "Slack token",
        ),
        (
            &["--body", "DATABASE_URL=postgres://app:s3cr3t-pw@db/app"],
            "password in URL",
        ),
        (
            &["--body", "npm_abcdefghijklmnopqrstuvwxyz0123456789"],
            "npm token",
        ),
    ];
    for (extra, kind) in cases {
        let mut args = vec!["send", "--to", "web", "--type", "update", "--subject", "s"];
        args.extend_from_slice(extra);
        let out = env.run(&api, &args);
        assert_eq!(code(&out), 5, "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(kind), "{extra:?}: {}", stderr(&out));
    }
    assert!(inbox_files(&web).is_empty(), "nothing was delivered");
    // Placeholders are not secrets.
    env.ok(
        &api,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "update",
            "--subject",
            "s",
            "--body",
            "SECRET_KEY=changeme\nDATABASE_URL=postgres://user:<password>@localhost/app",
        ],
    );
    assert_eq!(inbox_files(&web).len(), 1);
}

/// A stop in a tag or an attachment path, spelt another way, forces
/// approval in `policy explain` and `check`, which name the field.
#[test]
fn explain_names_the_stop_and_the_field() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let plain = env.question(&api, "web", "Which port?");
    let v = env.json(&web, &["policy", "explain", &plain]);
    assert_eq!(v["decision"]["action"], "auto_respond", "{v}");

    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "question",
            "--subject",
            "Which port?",
            "--body",
            "b",
            "--tag",
            "r\u{200B}m  -f\u{FF0D}r /",
        ],
    );
    let v = env.json(&web, &["policy", "explain", &id]);
    assert_eq!(v["decision"]["action"], "require_approval", "{v}");
    assert_eq!(v["decision"]["rule"], "hard_stop:rm -rf", "{v}");
    let step = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["rule"] == "hard_stop:rm -rf")
        .cloned()
        .unwrap_or(Value::Null);
    assert!(
        step["detail"].as_str().unwrap_or("").contains("the tags"),
        "{v}"
    );
    let text = env.ok(&web, &["policy", "explain", &id]);
    assert!(text.contains("hard_stop:rm -rf"), "{text}");

    std::fs::create_dir_all(web.join("docs")).unwrap();
    std::fs::create_dir_all(api.join("ops")).unwrap();
    std::fs::write(api.join("ops/then git push origin +main"), "x").unwrap();
    let id = env.send(
        &api,
        "web",
        &[
            "--type",
            "question",
            "--subject",
            "A note",
            "--body",
            "b",
            "--attach",
            "ops/then git push origin +main",
        ],
    );
    let v = env.json(&web, &["policy", "explain", &id]);
    assert_eq!(v["decision"]["rule"], "hard_stop:push -f", "{v}");
    assert!(v.to_string().contains("the attachments"), "{v}");
}

/// This user's own aea signing key, pasted anywhere in a message or an
/// attached file, in any spelling: `send` and `reply` refuse it (exit 5),
/// also with `--allow-secrets`, deliver nothing, and never print the key.
#[test]
fn send_and_reply_never_carry_this_users_signing_key() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let key = |id: &str| {
        std::fs::read_to_string(env.keys_dir().join(format!("{id}.key")))
            .unwrap()
            .trim()
            .to_string()
    };
    let (api_key, web_key) = (key("api"), key("web"));
    let spaced: Vec<&str> = (0..32).map(|i| &api_key[2 * i..2 * i + 2]).collect();
    let spaced = spaced.join(" ");
    std::fs::create_dir_all(api.join("notes")).unwrap();
    std::fs::write(
        api.join("notes/setup.md"),
        format!("# Setup\n\nexport AEA_KEY=0x{}\n", api_key.to_uppercase()),
    )
    .unwrap();
    let body = format!("the key is\n{}\n{}", &api_key[..30], &api_key[30..]);
    let context = serde_json::json!({"deploy": {"seed": spaced}}).to_string();
    let other_agent = format!("web's key: {web_key}");
    let cases: [(&[&str], &str); 4] = [
        (&["--body", &body], "the body"),
        (&["--context", &context], "the context"),
        (
            &["--attach", "notes/setup.md"],
            "the attached file notes/setup.md",
        ),
        (&["--body", &other_agent], "the body"),
    ];
    let shown =
        |out: &std::process::Output| format!("{}{}", stdout(out), stderr(out)).to_lowercase();
    for (extra, field) in cases {
        for allow in [false, true] {
            let mut args = vec!["send", "--to", "web", "--type", "update", "--subject", "s"];
            args.extend_from_slice(extra);
            if allow {
                args.push("--allow-secrets");
            }
            let out = env.run(&api, &args);
            assert_eq!(code(&out), 5, "{extra:?}: {}", stderr(&out));
            assert!(
                stderr(&out).contains(&format!(
                    "error: {field} carries this user's aea private signing key"
                )),
                "{extra:?}: {}",
                stderr(&out)
            );
            for secret in [&api_key, &web_key] {
                assert!(
                    !shown(&out).contains(&secret[..16]),
                    "the key was printed: {}",
                    shown(&out)
                );
            }
        }
    }
    assert!(inbox_files(&web).is_empty(), "nothing was delivered");

    // `reply` goes through the same check.
    let question = env.question(&web, "api", "Which key do you sign with?");
    let out = env.run(
        &api,
        &["reply", &question, "--body", &body, "--allow-secrets"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the body carries this user's aea private signing key"),
        "{}",
        stderr(&out)
    );
    assert!(!shown(&out).contains(&api_key[..16]), "{}", shown(&out));
    env.ok(
        &api,
        &["reply", &question, "--body", "the one in my config dir"],
    );
    assert_eq!(inbox_files(&web).len(), 1, "the reply without the key went");
}

/// An attached file is scanned for private keys (with or without their
/// PEM header), which `--allow-secrets` lets through, and for nothing
/// else: a token in a test fixture is the file's own business.
#[test]
fn attached_files_are_scanned_for_private_keys() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    std::fs::create_dir_all(api.join("ops")).unwrap();
    std::fs::write(
        api.join("ops/deploy.txt"),
        "deploy key:\nMC4CAQAwBQYDK2VwBCIEIJ3l0b2mXh7dQz6c8vYkR1sT9aPfWgLqN4oUeHxCjZyB\n",
    )
    .unwrap();
    std::fs::write(
        api.join("ops/fixture.rs"),
        "const TOKEN: &str = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\";\n",
    )
    .unwrap();
    let send = |file: &str, allow: bool| {
        let mut args = vec!["send", "--to", "web", "--type", "update", "--subject", "s"];
        args.extend(["--attach", file]);
        if allow {
            args.push("--allow-secrets");
        }
        env.run(&api, &args)
    };
    let out = send("ops/deploy.txt", false);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "error: the attached file ops/deploy.txt looks like it carries a secret (private key block)"
        ),
        "{}",
        stderr(&out)
    );
    assert!(inbox_files(&web).is_empty());
    assert_eq!(code(&send("ops/deploy.txt", true)), 0);
    assert_eq!(code(&send("ops/fixture.rs", false)), 0);
    assert_eq!(inbox_files(&web).len(), 2);
}
