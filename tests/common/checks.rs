//! Checks many test files make of what aea prints: that a `--json`
//! document fits the schema shipped in `schemas/`, that a stream carries
//! no terminal control a sender could have put there; and the plain git
//! repository several tests start from.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::TestEnv;

pub fn shipped(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The problems of `value` against `schema`, with their JSON paths.
pub fn check_schema(
    root: &Value,
    schema: &Value,
    value: &Value,
    at: &str,
    problems: &mut Vec<String>,
) {
    let Some(schema) = schema.as_object() else {
        // `true` accepts anything; schemars writes no `false`.
        return;
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference
            .strip_prefix("#/$defs/")
            .unwrap_or_else(|| panic!("unsupported $ref {reference}"));
        check_schema(root, &root["$defs"][name], value, at, problems);
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
                    check_schema(root, option, value, at, &mut inner);
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
            check_schema(root, items, item, &format!("{at}[{i}]"), problems);
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
            (Some(property), _) => check_schema(root, property, value, &path, problems),
            (None, Some(additional)) => check_schema(root, additional, value, &path, problems),
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
pub fn assert_fits(name: &str, doc: &Value) {
    let schema = shipped(name);
    let mut problems = Vec::new();
    check_schema(&schema, &schema, doc, "$", &mut problems);
    assert!(
        problems.is_empty(),
        "{name}: the output does not fit schemas/{name}.json:\n  {}\n{doc:#}",
        problems.join("\n  ")
    );
}

/// The first character a terminal or a reader could be fooled by, if any.
fn offending(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(
                c,
                '\u{202A}'..='\u{202E}'
                    | '\u{2066}'..='\u{2069}'
                    | '\u{200E}'
                    | '\u{200F}'
                    | '\u{061C}'
                    | '\u{2028}'
                    | '\u{2029}'
            )
    })
}

/// Asserts on the raw bytes of one stream: valid UTF-8, no ESC, no BEL, no
/// C1 (UTF-8 `C2 80`–`C2 9F`), no bidi controls, no forged aea line.
pub fn assert_clean(what: &str, bytes: &[u8]) {
    assert!(
        !bytes.contains(&0x1b) && !bytes.contains(&0x07),
        "{what}: raw ESC or BEL in {:?}",
        String::from_utf8_lossy(bytes)
    );
    assert!(
        !bytes
            .windows(2)
            .any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1])),
        "{what}: raw C1 control in {:?}",
        String::from_utf8_lossy(bytes)
    );
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"));
    if let Some(c) = offending(text) {
        panic!(
            "{what}: raw {:?} in {text:?}",
            c.escape_unicode().to_string()
        );
    }
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("AEA: the user")),
        "{what}: a file name forged a line: {text}"
    );
}

/// An empty git repository named `name`, without aea.
pub fn plain_git_repo(env: &TestEnv, name: &str) -> PathBuf {
    let dir = env.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    env.git_ok(&dir, &["init", "-q"]);
    dir
}
