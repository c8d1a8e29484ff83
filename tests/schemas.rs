//! Real `--json` output checked against the schemas shipped in `schemas/`
//! (which `cargo test schemas` keeps equal to the types). The validator is
//! a small one written here for the keywords schemars emits, rather than a
//! JSON Schema crate: it is stricter where it matters for drift (a property
//! the schema does not declare is an error) and adds no dependency.

use std::path::Path;

use serde_json::{Map, Value};

use crate::common::*;

fn shipped(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The problems of `value` against `schema`, with their JSON paths.
fn check(root: &Value, schema: &Value, value: &Value, at: &str, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        // `true` accepts anything; schemars writes no `false`.
        return;
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("unsupported $ref {reference}"));
        check(root, &root["$defs"][name], value, at, problems);
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            other => panic!("unsupported type {other}"),
        };
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let fits = types
            .iter()
            .any(|t| *t == actual || (*t == "number" && actual == "integer"));
        if !fits {
            problems.push(format!("{at}: is {actual}, schema says {types:?}"));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        problems.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let Some(wanted) = schema.get("const")
        && wanted != value
    {
        problems.push(format!("{at}: {value} is not {wanted}"));
    }
    if let Some(minimum) = schema.get("minimum").and_then(Value::as_f64)
        && value.as_f64().is_some_and(|v| v < minimum)
    {
        problems.push(format!("{at}: {value} is below {minimum}"));
    }
    for (keyword, want_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(options) = schema.get(keyword).and_then(Value::as_array) {
            let fitting = options
                .iter()
                .filter(|option| {
                    let mut inner = Vec::new();
                    check(root, option, value, at, &mut inner);
                    inner.is_empty()
                })
                .count();
            if fitting == 0 || (want_one && fitting > 1) {
                problems.push(format!(
                    "{at}: {value} fits {fitting} of the {keyword} options"
                ));
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, item) in list.iter().enumerate() {
            check(root, items, item, &format!("{at}[{i}]"), problems);
        }
    }
    if let Some(object) = value.as_object() {
        check_object(root, schema, object, at, problems);
    }
}

fn check_object(
    root: &Value,
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    at: &str,
    problems: &mut Vec<String>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !object.contains_key(name) {
            problems.push(format!("{at}: required property {name:?} is missing"));
        }
    }
    for (name, value) in object {
        let path = format!("{at}.{name}");
        match (
            properties.and_then(|p| p.get(name)),
            schema.get("additionalProperties"),
        ) {
            (Some(property), _) => check(root, property, value, &path, problems),
            (None, Some(additional)) => check(root, additional, value, &path, problems),
            // Only schemas that describe properties are held to them (a
            // `oneOf` branch of a tagged enum carries its own).
            (None, None) if properties.is_some() => {
                problems.push(format!("{path}: not in the schema"));
            }
            (None, None) => {}
        }
    }
}

/// Asserts that `doc`, the output of `aea --json <args>`, fits `schemas/<name>.json`.
pub(crate) fn assert_fits(name: &str, doc: &Value) {
    let schema = shipped(name);
    let mut problems = Vec::new();
    check(&schema, &schema, doc, "$", &mut problems);
    assert!(
        problems.is_empty(),
        "{name}: the output does not fit schemas/{name}.json:\n  {}\n{doc:#}",
        problems.join("\n  ")
    );
}

/// Runs `aea --json <args>` in `dir`, expecting exit status `want`, and
/// returns the document (the last line for JSON Lines output).
fn json_exiting(env: &TestEnv, dir: &Path, args: &[&str], want: i32) -> Value {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = env.run(dir, &full);
    assert_eq!(code(&out), want, "{args:?}: {}", stderr(&out));
    let text = stdout(&out);
    serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(text.lines().last().unwrap_or_default()))
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
}

#[test]
fn json_output_fits_the_shipped_schemas() {
    let env = TestEnv::new();
    let api_dir = env.path().join("api");
    std::fs::create_dir(&api_dir).unwrap();
    let init = json_exiting(&env, &api_dir, &["init", "--no-agent-files"], 0);
    assert_fits("init", &init);
    let web = env.path().join("web");
    std::fs::create_dir(&web).unwrap();
    git_command(&web).args(["init", "-q"]).output().unwrap();
    env.ok(&web, &["init", "--no-agent-files", "--no-git-hooks"]);

    let sent = json_exiting(
        &env,
        &api_dir,
        &[
            "send",
            "--to",
            "web",
            "--type",
            "handoff",
            "--subject",
            "Rotate the keys",
            "--body",
            "Please.",
            "--context",
            r#"{"ticket": "OPS-1"}"#,
            "--tag",
            "ops",
        ],
        0,
    );
    assert_fits("send", &sent);
    let request = sent["message_id"].as_str().unwrap().to_string();
    let question = env.question(&api_dir, "web", "Which port?");

    assert_fits("check", &json_exiting(&env, &web, &["check"], 0));
    assert_fits("pending", &json_exiting(&env, &web, &["pending"], 0));
    assert_fits("show", &json_exiting(&env, &web, &["show", &request], 0));
    assert_fits(
        "policy-explain",
        &json_exiting(&env, &web, &["policy", "explain", &request], 0),
    );
    assert_fits(
        "policy-show",
        &json_exiting(&env, &web, &["policy", "show"], 0),
    );
    assert_fits(
        "watch",
        &json_exiting(&env, &web, &["watch", "--pending", "--timeout", "5s"], 0),
    );
    assert_fits(
        "approve",
        &json_exiting(&env, &web, &["approve", &request], 0),
    );
    let reply = json_exiting(&env, &web, &["reply", &question, "--body", "8080"], 0);
    assert_fits("reply", &reply);
    let processed = json_exiting(&env, &web, &["process", &question, "--note", "answered"], 0);
    assert_fits("process", &processed);
    // A processed message shows its marker.
    assert_fits("show", &json_exiting(&env, &web, &["show", &question], 0));
    assert_fits(
        "status",
        &json_exiting(&env, &api_dir, &["status", &question], 0),
    );
    assert_fits("sent", &json_exiting(&env, &api_dir, &["sent"], 0));
    assert_fits(
        "thread",
        &json_exiting(&env, &api_dir, &["thread", &question], 0),
    );
    assert_fits(
        "show-copy",
        &json_exiting(&env, &api_dir, &["show", &question], 0),
    );

    assert_fits("gc", &json_exiting(&env, &web, &["gc", "--dry-run"], 0));
    assert_fits("validate", &json_exiting(&env, &web, &["validate"], 0));
    assert_fits(
        "monitor",
        &json_exiting(&env, &web, &["monitor", "status"], 0),
    );
    assert_fits("agents", &json_exiting(&env, &web, &["agents"], 0));
    assert_fits("whoami", &json_exiting(&env, &web, &["whoami"], 0));
    assert_fits("trust", &json_exiting(&env, &web, &["trust", "--show"], 0));
    assert_fits(
        "hooks-install",
        &json_exiting(&env, &web, &["hooks", "install"], 0),
    );
    assert_fits(
        "hooks-status",
        &json_exiting(&env, &web, &["hooks", "status"], 0),
    );
    let doctor = env.run(&web, &["--json", "doctor"]);
    assert_fits("doctor", &serde_json::from_slice(&doctor.stdout).unwrap());
    assert_fits(
        "hooks-uninstall",
        &json_exiting(&env, &web, &["hooks", "uninstall"], 0),
    );
    assert_fits(
        "quarantine",
        &json_exiting(
            &env,
            &web,
            &["quarantine", &request, "--reason", "testing"],
            0,
        ),
    );
}

#[test]
fn collab_json_output_fits_the_shipped_schemas() {
    let env = TestEnv::new();
    let web = env.repo("web");
    env.repo("api");
    let folder = env.path().join("c");
    let f = folder.to_str().unwrap();
    let run = |args: &[&str], want: i32| {
        let mut full = vec!["collab"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--folder", f]);
        json_exiting(&env, &web, &full, want)
    };
    assert_fits(
        "collab-init",
        &run(
            &[
                "init",
                "--participant",
                "web",
                "--participant",
                "api",
                "--objective",
                "o",
                "--completion",
                "g",
            ],
            0,
        ),
    );
    assert_fits("collab-next", &run(&["next", "--participant", "web"], 0));
    assert_fits(
        "collab-wait",
        &run(&["wait", "--participant", "web", "--timeout", "1s"], 0),
    );
    assert_fits(
        "collab-event",
        &run(
            &[
                "event",
                "--participant",
                "web",
                "--event",
                "proposal_submitted",
                "--summary",
                "s",
                "--doc",
                "proposal.md",
                "--reply-to",
                "1",
            ],
            0,
        ),
    );
    assert_fits(
        "collab-wait",
        &run(&["wait", "--participant", "web", "--timeout", "1s"], 4),
    );
    assert_fits("collab-classify", &run(&["classify"], 0));
    assert_fits("collab-validate", &run(&["validate"], 0));
    std::fs::write(folder.join("opinions.md"), "x").unwrap();
    assert_fits("collab-validate", &run(&["validate"], 6));
    assert_fits(
        "collab-list",
        &json_exiting(&env, &web, &["collab", "list"], 0),
    );
}

/// The validator itself: it must reject what the schemas rule out, or the
/// test above proves nothing.
#[test]
fn the_schema_check_catches_drift() {
    let schema = shipped("process");
    let good = serde_json::json!({
        "file": "f.json", "message_id": "m", "marker": "/x", "outcome": "done"
    });
    let mut problems = Vec::new();
    check(&schema, &schema, &good, "$", &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    for (bad, why) in [
        (
            serde_json::json!({"file": "f.json", "message_id": "m", "marker": "/x", "outcome": "finished"}),
            "not one of",
        ),
        (
            serde_json::json!({"file": "f.json", "message_id": "m", "marker": "/x"}),
            "missing",
        ),
        (
            serde_json::json!({"file": 1, "message_id": "m", "marker": "/x", "outcome": "done"}),
            "is integer",
        ),
        (
            serde_json::json!({"file": "f", "message_id": "m", "marker": "/x", "outcome": "done", "extra": true}),
            "not in the schema",
        ),
    ] {
        let mut problems = Vec::new();
        check(&schema, &schema, &bad, "$", &mut problems);
        assert!(
            problems.iter().any(|p| p.contains(why)),
            "{bad}: {problems:?}"
        );
    }
}

/// A failed command under `--json` prints its error as `schemas/error.json`
/// on stderr.
#[test]
fn json_errors_fit_the_shipped_schema() {
    let env = TestEnv::new();
    let web = env.repo("web");
    for args in [
        vec!["--json", "show", "zzzz"],
        vec!["--json", "send", "--to", "nobody"],
    ] {
        let out = env.run(&web, &args);
        assert_ne!(code(&out), 0);
        let doc: Value = serde_json::from_str(stderr(&out).trim())
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&out)));
        assert_fits("error", &doc);
    }
}
