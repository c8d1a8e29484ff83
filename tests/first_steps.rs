//! What a new user trips on (issue 15): documented config keys, re-running
//! init, `review` at a scripted terminal, completions, `gc --dry-run`.

use crate::common::*;

#[test]
fn documented_config_keys_are_not_called_unknown() {
    let env = TestEnv::new();
    let web = env.repo("web");
    let config = web.join(".aea/agent-config.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "sync:\n  remote: /nowhere/mail.git\nbridges:\n  - protocol: roo\n    path: .roo/mailbox\n",
    );
    std::fs::write(&config, &text).unwrap();
    for args in [&["validate"][..], &["doctor"]] {
        let out = env.run(&web, args);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains("unknown"), "{args:?}: {all}");
        assert!(!all.contains("not a valid aea config"), "{args:?}: {all}");
    }

    std::fs::write(&config, format!("{text}colour: blue\n")).unwrap();
    for args in [&["validate"][..], &["doctor"]] {
        let out = env.run(&web, args);
        assert_ne!(code(&out), 0, "{args:?}");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(all.contains("colour"), "{args:?}: {all}");
    }
}
