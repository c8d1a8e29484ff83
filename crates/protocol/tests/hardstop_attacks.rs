//! Bypasses a second attacker found against the hard stops, each kept
//! here once caught: `tests/hardstop-attacks.txt` holds them as records
//! separated by a line `=====`, each a `# label` line and the text
//! (`\u{XXXX}` standing for a character hard to type). Every one must be
//! held, in the body and in the context.

mod common;

use common::{Field, defaults, message_with};

const ATTACKS: &str = include_str!("../../../tests/hardstop-attacks.txt");

/// The records of `all`: (label, text).
fn records(all: &str) -> Vec<(String, String)> {
    all.split("\n=====\n")
        .map(|record| record.trim_start_matches('\n'))
        .filter(|record| !record.trim().is_empty())
        .map(|record| {
            let (first, rest) = record.split_once('\n').unwrap_or((record, ""));
            let label = first.trim_start_matches('#').trim().to_string();
            let text = rest.strip_suffix('\n').unwrap_or(rest);
            (label, unescape(text))
        })
        .collect()
}

/// `text` with each `\u{XXXX}` made the character it names.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\\u{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let end = after.find('}').expect("an escape ends with }");
        let code = u32::from_str_radix(&after[..end], 16).expect("hex digits");
        out.push(char::from_u32(code).expect("a character"));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn every_attack_of_the_second_round_is_held() {
    let stops = defaults();
    let attacks = records(ATTACKS);
    assert!(attacks.len() > 200, "{} records", attacks.len());
    let mut passed = Vec::new();
    for (label, text) in &attacks {
        for field in [Field::Body, Field::Context] {
            if stops.find(&message_with(field, text)).is_none() {
                passed.push(format!("{label} ({field:?}): {text:?}"));
            }
        }
    }
    assert!(
        passed.is_empty(),
        "{} of {} attacks passed the default hard stops:\n{}",
        passed.len(),
        attacks.len() * 2,
        passed.join("\n")
    );
}
