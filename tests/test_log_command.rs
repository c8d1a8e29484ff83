//! `aea log`: its filters, the agents' health it shows, and a log line a
//! crash left out, repaired from the processed marker.

use crate::common::*;

/// A log line a kill cut off (the marker was written, the line was not):
/// `doctor` names it, `doctor --fix` writes it from the marker, marked
/// repaired, once.
#[test]
fn a_missing_log_line_is_repaired_from_the_marker() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "q");
    env.ok(&web, &["process", &id, "--outcome", "done"]);
    let log = web.join(".aea/agent.log");
    let kept: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"processed\""))
        .map(str::to_string)
        .collect();
    let kept = kept.join("\n") + "\n";
    std::fs::write(&log, kept).unwrap();
    let out = env.run(&web, &["doctor"]);
    assert_eq!(code(&out), 6);
    assert!(
        stdout(&out).contains("1 operation(s) with no log line"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&web, &["doctor", "--fix"]);
    assert!(
        stdout(&out).contains("fixed wrote 1 log line"),
        "{}",
        stdout(&out)
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &serde_json::Value| l["event"] == "processed")
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["message"], id.as_str());
    assert_eq!(lines[0]["outcome"], "done");
    assert_eq!(lines[0]["repaired"], "from the marker");
    let again = env.run(&web, &["doctor", "--fix"]);
    assert!(
        !stdout(&again).contains("fixed wrote"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn log_filters_and_agents_health() {
    let env = TestEnv::new();
    let api = env.repo("api");
    let web = env.repo("web");
    let id = env.question(&api, "web", "q");
    env.question(&api, "web", "q2");
    let all = env.ok(&web, &["--json", "log"]);
    assert_eq!(all.lines().count(), 3, "init and two deliveries: {all}");
    let one = env.ok(&web, &["--json", "log", "--message", &id[..8]]);
    assert_eq!(one.lines().count(), 1);
    assert_eq!(
        env.ok(&web, &["--json", "log", "--since", "2099-01-01T00:00:00Z"]),
        ""
    );
    assert_eq!(
        env.ok(&web, &["--json", "log", "--since", "1h"])
            .lines()
            .count(),
        3
    );
    assert_eq!(code(&env.run(&web, &["log", "--since", "yesterday"])), 2);
    let sent = env.ok(&api, &["--json", "log", "--event", "sent"]);
    assert_eq!(sent.lines().count(), 2);

    std::fs::remove_dir_all(&web).unwrap();
    let agents = env.json(&api, &["agents"]);
    let rows = agents["agents"].as_array().unwrap();
    let health: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["health"].as_str().unwrap()))
        .collect();
    assert_eq!(health, [("api", "ok"), ("web", "path_missing")]);
}
