//! Destructive SQL, however it is spaced, cased or commented:
//! `DROP/**/TABLE`, `drop -- why\ntable`, `TRUNCATE users` without `;`,
//! `DELETE FROM users;` without a `WHERE`.

use super::classes::{Class, Found};
use crate::normalize::push_normalized;

/// Words after `TRUNCATE` that make it prose, not a statement: "we
/// truncate it", "truncate the log".
const NOT_A_TABLE: &[&str] = &[
    "a", "an", "the", "it", "them", "this", "that", "these", "those", "to", "at", "each", "all",
    "any", "long", "its", "their", "our", "your", "his", "her", "some", "every", "and", "or",
];

/// The classes of destructive SQL in `raw` (a field as the sender wrote
/// it), into `found`.
pub(super) fn classify(raw: &str, found: &mut Found) {
    use aho_corasick::AhoCorasick;
    use std::sync::OnceLock;
    static KEYWORDS: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    let keywords = KEYWORDS.get_or_init(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(["drop", "truncate", "delete"])
            .ok()
    });
    // Cheap test first: most text names none of the keywords. Text that is
    // not ASCII may spell them with look-alike letters.
    if !raw.is_ascii() || keywords.as_ref().is_none_or(|k| k.is_match(raw)) {
        scan(raw, found);
    }
}

fn scan(raw: &str, found: &mut Found) {
    // Normalised line by line (odd spaces, look-alikes), then without
    // comments, then one line at a time, so a line's end still ends a
    // statement. A keyword in capitals (`TRUNCATE`, `DELETE`) is SQL
    // wherever it stands.
    let mut text = String::with_capacity(raw.len());
    for line in raw.lines() {
        push_normalized(&mut text, line);
        text.push('\n');
    }
    let shouting = raw.contains("TRUNCATE") || raw.contains("DELETE");
    let lines: Vec<(Vec<String>, bool)> = uncommented(&text)
        .lines()
        .map(|line| (tokens(line), shouting))
        .collect();
    // Keyword pairs may be split over lines (`DROP\nTABLE`): read as one.
    let joined: Vec<&str> = lines
        .iter()
        .flat_map(|(t, _)| t)
        .map(String::as_str)
        .filter(|t| *t != END)
        .collect();
    for pair in joined.windows(2) {
        match pair {
            ["drop", "table"] => found.add(Class::DropTable),
            ["drop", "database" | "schema"] => found.add(Class::DropDatabase),
            ["truncate", "table" | "only"] => found.add(Class::Truncate),
            _ => {}
        }
    }
    for (at, (line, shouting)) in lines.iter().enumerate() {
        let mut words: Vec<&str> = line.iter().map(String::as_str).collect();
        // A keyword that ends its line reads on into the next one.
        if words
            .last()
            .is_some_and(|w| matches!(*w, "truncate" | "from" | "delete"))
        {
            if let Some((next, _)) = lines.get(at + 1) {
                words.extend(next.iter().map(String::as_str));
            }
        }
        let ends = |at: usize| {
            words
                .get(at)
                .is_none_or(|w| matches!(*w, ";" | "," | END | "cascade" | "restart" | "continue"))
        };
        for (i, word) in words.iter().enumerate() {
            match *word {
                "truncate" => {
                    let table = words
                        .get(i + 1)
                        .is_some_and(|t| is_table(t) && !NOT_A_TABLE.contains(t));
                    if table && (*shouting || ends(i + 2)) {
                        found.add(Class::Truncate);
                    }
                }
                "delete" if words.get(i + 1) == Some(&"from") => {
                    let table = words
                        .get(i + 2)
                        .is_some_and(|t| is_table(t) && !NOT_A_TABLE.contains(t));
                    let statement = words[i + 2..]
                        .iter()
                        .take_while(|w| !matches!(**w, ";" | END));
                    let has_where = statement.clone().any(|w| *w == "where");
                    if table && !has_where && (*shouting || ends(i + 3) || statement.count() > 1) {
                        found.add(Class::Truncate);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The token that stands for the end of a quoted or code-span statement.
const END: &str = "\u{0}";

/// `raw` without SQL comments: `/* … */` and `-- …` to the line's end.
fn uncommented(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    loop {
        let block = rest.find("/*");
        let line = rest.find("--").filter(|&at| {
            // `--x` is an option of a command line, not a comment.
            rest[at + 2..].starts_with([' ', '\t', '\n']) || at + 2 == rest.len()
        });
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = rest[b + 2..]
                    .find("*/")
                    .map_or("", |end| &rest[b + 2 + end + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                out.push(' ');
                rest = rest[l..].find('\n').map_or("", |end| &rest[l + end..]);
            }
            _ => break,
        }
    }
    out.push_str(rest);
    out
}

/// The words of a normalised line, with `;`, `,`, `(` and `)` apart, other
/// punctuation around a word dropped (a code span's backticks, a block
/// quote's `>`, an HTML tag) and words of punctuation only left out. A
/// closing quote or backtick after a word ends the statement: an [`END`].
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split([' ', '<', '>']) {
        let mut current = String::new();
        let push = |current: &mut String, out: &mut Vec<String>| {
            let word = current.trim_start_matches(|c: char| !c.is_alphanumeric() && c != '_');
            let closes = word.ends_with(['"', '`', '\'']);
            let word = word.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if !word.is_empty() {
                out.push(word.to_string());
                if closes {
                    out.push(END.to_string());
                }
            }
            current.clear();
        };
        for c in word.chars() {
            if matches!(c, ';' | ',' | '(' | ')') {
                push(&mut current, &mut out);
                out.push(c.to_string());
            } else {
                current.push(c);
            }
        }
        push(&mut current, &mut out);
    }
    out
}

/// A table name as SQL writes one: `users`, `app.users`, `"users"`,
/// `` `users` ``, `[users]`.
fn is_table(word: &str) -> bool {
    let name = word.trim_matches(['"', '`', '[', ']']);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '$'))
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::{Class, Found, classify};

    fn classes(text: &str) -> Found {
        let mut found = Found::default();
        classify(text, &mut found);
        found
    }

    #[test]
    fn destructive_statements_however_written() {
        for (text, class) in [
            ("DROP TABLE users", Class::DropTable),
            ("DROP/**/TABLE users", Class::DropTable),
            ("drop -- old\ntable users", Class::DropTable),
            ("DROP\nTABLE users", Class::DropTable),
            ("DROP SCHEMA app CASCADE", Class::DropDatabase),
            ("TRUNCATE users", Class::Truncate),
            ("TRUNCATE users;", Class::Truncate),
            ("TRUNCATE TABLE users", Class::Truncate),
            ("then run\nTRUNCATE users\nand go home", Class::Truncate),
            ("DELETE FROM users;", Class::Truncate),
            ("delete from users", Class::Truncate),
        ] {
            assert!(classes(text).has(class), "{text:?}");
        }
    }

    #[test]
    fn prose_and_safe_statements_are_not() {
        for text in [
            "we truncate long subjects in the list",
            "Let's truncate it.",
            "DELETE FROM users WHERE id = 3;",
            "drop the old column from the plan",
            "delete from the list what you do not need",
            "SELECT * FROM users;",
        ] {
            assert!(!classes(text).any(), "{text:?}");
        }
    }
}
