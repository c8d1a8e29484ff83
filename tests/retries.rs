//! Attacks on what `send` records before it delivers (`.aea/.sent-keys/`)
//! and on what `doctor --fix` repairs from it (issue 11): a retry must not
//! deliver again what a recipient already holds, nor hold back what it
//! does not; a repair must not take someone else's word for what we sent.

use crate::common::*;

/// The same subject and body in another conversation, or asking for an
/// answer this time, is another message: it was held back as "not sent
/// twice" because the record's digest left those out.
#[test]
fn another_conversation_or_a_request_for_an_answer_is_not_a_repeat() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let base = ["--type", "update", "--subject", "status?", "--body", "b"];
    let first = env.send(
        &api,
        "web",
        &[&base[..], &["--conversation", "c1"]].concat(),
    );
    let second = env.send(
        &api,
        "web",
        &[&base[..], &["--conversation", "c2"]].concat(),
    );
    assert_ne!(first, second, "another conversation, another message");
    let asking = env.send(
        &api,
        "web",
        &[&base[..], &["--conversation", "c2", "--requires-response"]].concat(),
    );
    assert_ne!(second, asking, "a request for an answer is another message");
    let report = env.json(&web, &["check"]);
    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{report}");
    assert!(messages.iter().any(|m| m["requires_response"] == true));
}
