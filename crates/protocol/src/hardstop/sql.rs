//! Destructive SQL, however it is spaced, cased or commented:
//! `DROP/**/TABLE`, `drop -- why\ntable`, `TRUNCATE users` without `;`,
//! `DELETE FROM users;` without a `WHERE`.

use super::classes::{Class, Found};
use crate::normalize::push_normalized;

/// Words after `TRUNCATE` that make it prose, not a statement: "we
/// truncate it", "truncate the log".
const NOT_A_TABLE: &[&str] = &[
    "is",
    "was",
    "are",
    "be",
    "will",
    "in",
    "on",
    "of",
    "for",
    "with",
    "statements",
    "statement",
    "a",
    "an",
    "the",
    "it",
    "them",
    "this",
    "that",
    "these",
    "those",
    "to",
    "at",
    "each",
    "all",
    "any",
    "long",
    "its",
    "their",
    "our",
    "your",
    "his",
    "her",
    "some",
    "every",
    "and",
    "or",
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
    let shouting = |keyword: &str| raw.contains(keyword);
    // All the words, a line's end marked: statements run on over lines.
    // Read twice: without comments (`DROP/**/TABLE`), and as written,
    // where `--` or `/*` belongs to a shell command before the SQL
    // (`cd -- /srv && psql -c "DROP TABLE users"`).
    let mut words: Vec<String> = Vec::new();
    for version in [uncommented(&text), text.clone()] {
        for line in version.lines() {
            words.extend(tokens(line));
            words.push(LINE.to_string());
        }
        words.push(";".to_string());
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    // The next word after `at` that is not a line's end.
    let next = |at: usize| -> Option<(usize, &str)> {
        words[at + 1..]
            .iter()
            .position(|w| *w != LINE)
            .map(|p| (at + 1 + p, words[at + 1 + p]))
    };
    // Whether the statement ends at `at`: `;`, a closing quote, the text's
    // end, a line's end not followed by more of it, or a clause that only
    // follows a complete statement.
    let ends = |at: usize| match words.get(at) {
        None => true,
        Some(&LINE) => next(at).is_none_or(|(_, w)| !matches!(w, "where" | "using" | "returning")),
        Some(w) => matches!(
            *w,
            ";" | "," | END | "cascade" | "restrict" | "restart" | "continue"
        ),
    };
    let table_at = |at: usize| -> Option<usize> {
        let (mut at, mut word) = next(at)?;
        // `IF EXISTS`, `ONLY` before the name.
        while matches!(word, "if" | "exists" | "only") {
            (at, word) = next(at)?;
        }
        (is_table(word) && !NOT_A_TABLE.contains(&word)).then_some(at)
    };
    for (i, word) in words.iter().enumerate() {
        let kind = match *word {
            "drop" => match next(i) {
                Some((at, "table" | "tables")) => Some((at, Class::DropTable, "DROP")),
                Some((at, "database" | "schema")) => Some((at, Class::DropDatabase, "DROP")),
                _ => None,
            },
            "truncate" => match next(i) {
                Some((at, "table" | "only")) => Some((at, Class::Truncate, "TRUNCATE")),
                _ => Some((i, Class::Truncate, "TRUNCATE")),
            },
            _ => None,
        };
        if let Some((at, class, keyword)) = kind {
            // `DROP TABLE users;`, or in capitals anywhere: a statement.
            // "Drop table support from the renderer" is prose.
            if table_at(at).is_some_and(|t| shouting(keyword) || ends(t + 1) || qualified(words[t]))
            {
                found.add(class);
            }
        }
        if *word == "delete" && next(i).is_some_and(|(_, w)| w == "from") {
            let from = next(i).map_or(i, |(at, _)| at);
            if let Some(table) = table_at(from) {
                // No WHERE before the statement ends.
                let rest = &words[table + 1..];
                let statement: Vec<&&str> = rest
                    .iter()
                    .take_while(|w| !matches!(**w, ";" | END))
                    .take(64)
                    .collect();
                let has_where = statement.iter().any(|w| **w == "where");
                if !has_where && (shouting("DELETE") || ends(table + 1) || qualified(words[table]))
                {
                    found.add(Class::Truncate);
                }
            }
        }
    }
}

/// The token that stands for a line's end.
const LINE: &str = "\n";

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
            // MySQL runs what `/*! … */` holds: keep it, drop the markers.
            (Some(b), l) if l.is_none_or(|l| b < l) && rest[b..].starts_with("/*!") => {
                out.push_str(&rest[..b]);
                out.push(' ');
                let inner = rest[b + 3..].trim_start_matches(|c: char| c.is_ascii_digit());
                rest = inner;
                if let Some(end) = rest.find("*/") {
                    out.push_str(&rest[..end]);
                    rest = &rest[end + 2..];
                }
            }
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
    for word in text.split(' ') {
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
        let chars: Vec<char> = word.chars().collect();
        for (at, &c) in chars.iter().enumerate() {
            // `TABLE"users"`, ``TABLE`users` ``, `TABLE[users]`: a keyword
            // ends where a quoted name opens.
            let opens = chars.get(at + 1).is_some_and(|n| n.is_alphanumeric());
            if matches!(c, '"' | '`' | '[')
                && opens
                && !current.is_empty()
                && current.chars().all(|c| c.is_ascii_alphabetic())
            {
                push(&mut current, &mut out);
            }
            if matches!(c, ';' | ',' | '(' | ')') {
                push(&mut current, &mut out);
                out.push(c.to_string());
            } else if c == '<' {
                // An HTML tag after the code ends it.
                push(&mut current, &mut out);
                out.push(END.to_string());
            } else if c == '>' {
                push(&mut current, &mut out);
            } else {
                current.push(c);
            }
        }
        push(&mut current, &mut out);
    }
    out
}

/// A name no English word is: `app_production`, `public.users`,
/// `[dbo].[Users]`, `"users"`, `t1`.
fn qualified(word: &str) -> bool {
    word.contains(|c: char| c.is_ascii_digit() || matches!(c, '_' | '.' | '[' | '"' | '`'))
}

/// A table name as SQL writes one: `users`, `app.users`, `"users"`,
/// `` `users` ``, `[users]`.
fn is_table(word: &str) -> bool {
    let name = word.trim_matches(['"', '`', '[', ']']);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '$' | '[' | ']' | '"' | '`'))
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
