//! Text normalisation for matching what a sender wrote against what a reader
//! (a shell, a person, an agent) will take it to mean.
//!
//! A hard stop compares patterns with text a hostile sender chose, so the
//! text is first brought to one spelling: Unicode compatibility forms folded
//! (NFKC: fullwidth `ｒｍ` is `rm`), lower case, invisible format characters
//! removed (zero-width spaces, joiners, soft hyphens, bidi controls, …),
//! look-alike dashes and quotes replaced by ASCII ones, and every run of
//! whitespace (newlines, tabs, NBSP, …) turned into one space.
//!
//! [`push_shell_words`] goes one step further for command patterns: quotes
//! and backslashes are dropped (`"rm" \-rf` is `rm -rf` to a shell), `$IFS`
//! is a space, and shell operators stand apart (`x|sh` is `x | sh`).

use unicode_normalization::UnicodeNormalization;

/// Appends the normalised form of `text` to `out`.
///
/// Runs of whitespace collapse across calls too: `out` never gets two
/// spaces in a row.
pub fn push_normalized(out: &mut String, text: &str) {
    if text.is_ascii() {
        // NFKC and `to_lowercase` are the identity on ASCII apart from case:
        // copy runs of lower-case text whole, one character at a time only
        // what changes (1 MiB of prose is read in about a millisecond).
        let mut run = 0;
        for (at, b) in text.bytes().enumerate() {
            if b.is_ascii_whitespace() || b.is_ascii_control() || b.is_ascii_uppercase() {
                out.push_str(&text[run..at]);
                push_char(out, char::from(b));
                run = at + 1;
            }
        }
        out.push_str(&text[run..]);
    } else {
        for c in text.nfkc() {
            push_char(out, c);
        }
    }
}

/// `text` normalised into a new string (for patterns, compiled once).
pub fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_normalized(&mut out, text);
    out
}

/// Appends one space unless `out` is empty or already ends with one.
pub fn push_space(out: &mut String) {
    if !out.is_empty() && !out.ends_with(' ') {
        out.push(' ');
    }
}

fn push_char(out: &mut String, c: char) {
    if c.is_whitespace() {
        push_space(out);
    } else if is_invisible(c) {
        // Removed, not a space: `r\u{200B}m` reads as `rm`.
    } else if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else if let Some(ascii) = fold_lookalike(c) {
        // Before lower-casing: Cyrillic `Т` is drawn as `T`, its lower
        // case `т` as a small capital.
        out.push(ascii.to_ascii_lowercase());
    } else {
        for lower in c.to_lowercase() {
            out.push(fold_lookalike(lower).unwrap_or(lower));
        }
    }
}

/// Characters that render as nothing: controls other than whitespace and
/// the format characters (Unicode category Cf) and fillers used to split a
/// word without a visible gap. The hard stops and the secret scan both take
/// them out before matching.
pub fn is_invisible(c: char) -> bool {
    (c.is_control() && !c.is_whitespace())
        || matches!(
            c,
            '\u{00AD}'                     // soft hyphen
            | '\u{034F}'                   // combining grapheme joiner
            | '\u{061C}'                   // Arabic letter mark
            | '\u{115F}' | '\u{1160}'      // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'      // Khmer inherent vowels
            | '\u{180B}'..='\u{180F}'      // Mongolian selectors and separator
            | '\u{200B}'..='\u{200F}'      // zero-width space/joiners, LRM, RLM
            | '\u{202A}'..='\u{202E}'      // bidi embeddings and overrides
            | '\u{2060}'..='\u{206F}'      // word joiner, invisible operators, bidi isolates
            | '\u{3164}' | '\u{FFA0}'      // Hangul fillers
            | '\u{FE00}'..='\u{FE0F}'      // variation selectors
            | '\u{FEFF}'                   // zero-width no-break space (BOM)
            | '\u{FFF9}'..='\u{FFFB}'      // interlinear annotation
            | '\u{1D173}'..='\u{1D17A}'    // musical formatting
            | '\u{E0000}'..='\u{E007F}'    // tag characters
            | '\u{E0100}'..='\u{E01EF}'  // variation selectors supplement
            | '\u{1BCA0}'..='\u{1BCA3}'  // shorthand format controls
            | '\u{13430}'..='\u{1343F}'  // Egyptian hieroglyph format controls
            | '\u{110BD}' | '\u{110CD}'  // Kaithi number signs
            | '\u{1D159}'                 // musical null notehead
        )
}

/// Characters that NFKC keeps but a reader takes for ASCII: dashes and
/// quotes, the Latin small capitals (`ʀᴍ`), and every letter Unicode's
/// confusables data (UTS #39) draws like an ASCII letter or digit: Cyrillic
/// `ѕ`, Greek `ο`, Armenian `օ`, Cherokee, Lisu, …
fn fold_lookalike(c: char) -> Option<char> {
    match c {
        '\u{2010}'..='\u{2015}'
        | '\u{2043}'
        | '\u{2212}'
        | '\u{FE58}'
        | '\u{FE63}'
        | '\u{02D7}'
        | '\u{2796}' => Some('-'),
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => Some('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => Some('"'),
        _ => small_capital(c).or_else(|| confusable_ascii(c)),
    }
}

/// The Latin letter small capitals, which UTS #39 keeps apart from the
/// lower-case letters they are drawn as, and the Cyrillic lower-case
/// letters drawn like them (`в`, `к`, `м`, `н`, `т`).
fn small_capital(c: char) -> Option<char> {
    Some(match c {
        'ᴀ' => 'a',
        'ʙ' | 'в' => 'b',
        'ᴄ' => 'c',
        'ᴅ' => 'd',
        'ᴇ' => 'e',
        'ꜰ' => 'f',
        'ɢ' => 'g',
        'ʜ' | 'н' => 'h',
        'ɪ' => 'i',
        'ᴊ' => 'j',
        'ᴋ' | 'к' => 'k',
        'ʟ' => 'l',
        'ᴍ' | 'м' => 'm',
        'ɴ' => 'n',
        'ᴏ' => 'o',
        'ᴘ' => 'p',
        'ꞯ' => 'q',
        'ʀ' => 'r',
        'ꜱ' => 's',
        'ᴛ' | 'т' => 't',
        'ᴜ' => 'u',
        'ᴠ' => 'v',
        'ᴡ' => 'w',
        'ʏ' => 'y',
        'ᴢ' => 'z',
        _ => return None,
    })
}

/// The ASCII letter or digit whose UTS #39 skeleton is `c`'s, if any:
/// skeletons are compared, never read (the skeleton of `m` is `rn`), so
/// each ASCII character's skeleton is mapped back to the character.
fn confusable_ascii(c: char) -> Option<char> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    use unicode_security::confusable_detection::skeleton;
    // Where letters share a skeleton (`I` and `l`), an upper-case letter
    // reads as the upper-case one: two tables.
    static LOWER: OnceLock<HashMap<String, char>> = OnceLock::new();
    static UPPER: OnceLock<HashMap<String, char>> = OnceLock::new();
    let table = |first: std::ops::RangeInclusive<char>, second: std::ops::RangeInclusive<char>| {
        // Letters before digits: `0` and `O`, `1` and `l` read as letters.
        let mut map = HashMap::new();
        for a in first.chain(second).chain('0'..='9') {
            map.entry(skeleton(&a.to_string()).collect::<String>())
                .or_insert(a);
        }
        map
    };
    let ascii = if c.is_uppercase() {
        UPPER.get_or_init(|| table('A'..='Z', 'a'..='z'))
    } else {
        LOWER.get_or_init(|| table('a'..='z', 'A'..='Z'))
    };
    // Only the scripts that draw letters like Latin ones are looked up:
    // the rest of Unicode (CJK, Arabic, …) costs nothing.
    let lookalike_script = matches!(c,
        '\u{00C0}'..='\u{02AF}'      // Latin-1, Latin extended, IPA
        | '\u{0370}'..='\u{058F}'    // Greek, Cyrillic, Armenian
        | '\u{0590}'..='\u{06FF}'    // Hebrew, Arabic
        | '\u{13A0}'..='\u{13FF}'    // Cherokee
        | '\u{1400}'..='\u{167F}'    // Canadian syllabics
        | '\u{1D00}'..='\u{1EFF}'    // phonetic extensions, Latin extended additional
        | '\u{2100}'..='\u{214F}'    // letterlike symbols
        | '\u{2300}'..='\u{23FF}'    // technical symbols (APL)
        | '\u{2C60}'..='\u{2CFF}'    // Latin extended-C, Coptic
        | '\u{2D30}'..='\u{2D7F}'    // Tifinagh
        | '\u{A4D0}'..='\u{A4FF}'    // Lisu
        | '\u{A720}'..='\u{A7FF}'    // Latin extended-D
        | '\u{AB30}'..='\u{ABBF}'    // Latin extended-E, Cherokee supplement
    );
    if !lookalike_script {
        return None;
    }
    let key: String = skeleton(&c.to_string()).collect();
    ascii.get(&key).copied()
}

/// Shell operators that end a word whether or not a space follows.
const OPERATORS: &[char] = &['|', ';', '&', '(', ')', '<', '>', '`'];

/// Appends `normalized` (output of [`push_normalized`]) to `out` as a shell
/// would split it into words: quotes and backslashes removed, `$IFS` and
/// `${IFS}` read as a space, each operator a word of its own, a comment
/// (`#` starting a word, to the line's end) left out. Words are
/// separated by exactly one space, so `out.split(' ')` yields them.
pub fn push_shell_words(out: &mut String, normalized: &str) {
    let mut rest = normalized;
    while !rest.is_empty() {
        // Copy the run of ordinary characters whole.
        let run = rest
            .find(|c: char| {
                matches!(c, '$' | '\'' | '"' | '\\' | ' ' | '\n' | '#') || OPERATORS.contains(&c)
            })
            .unwrap_or(rest.len());
        out.push_str(&rest[..run]);
        rest = &rest[run..];
        let Some(c) = rest.chars().next() else {
            break;
        };
        if c == '$'
            && let Some(after) = rest
                .strip_prefix("${ifs}")
                .or_else(|| rest.strip_prefix("$ifs"))
        {
            push_space(out);
            rest = after;
            continue;
        }
        rest = &rest[c.len_utf8()..];
        // A `#` that starts a word starts a comment, to the line's end.
        if c == '#' && (out.is_empty() || out.ends_with(' ')) {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
            continue;
        }
        match c {
            '\'' | '"' | '\\' => {}
            ' ' | '\n' => push_space(out),
            '$' => out.push('$'),
            '#' => out.push('#'),
            c => {
                push_space(out);
                out.push(c);
                out.push(' ');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{normalized, push_shell_words};

    fn shell(text: &str) -> String {
        let mut out = String::new();
        push_shell_words(&mut out, &normalized(text));
        out
    }

    #[test]
    fn folds_case_and_compatibility_forms() {
        assert_eq!(normalized("RM -RF"), "rm -rf");
        assert_eq!(normalized("ｒｍ　－ｒｆ"), "rm -rf");
        assert_eq!(normalized("ＤＲＯＰ ＴＡＢＬＥ"), "drop table");
        assert_eq!(normalized("ﬁle"), "file");
        assert_eq!(normalized("Ⓢudo"), "sudo");
    }

    #[test]
    fn removes_invisible_characters() {
        for text in [
            "r\u{200B}m -rf",
            "r\u{200C}m -rf",
            "r\u{200D}m -rf",
            "r\u{2060}m -rf",
            "r\u{FEFF}m -rf",
            "r\u{00AD}m -rf",
            "\u{202E}rm -rf",
            "r\u{E0041}m -rf",
            "r\u{0007}m -rf",
        ] {
            assert_eq!(normalized(text), "rm -rf", "{text:?}");
        }
    }

    #[test]
    fn collapses_every_kind_of_whitespace() {
        for text in [
            "rm  -rf",
            "rm\n-rf",
            "rm\t\t-rf",
            "rm\u{00A0}-rf",
            "rm\u{2003}-rf",
            "rm\u{2028}-rf",
            "rm \u{200B} -rf",
        ] {
            assert_eq!(normalized(text), "rm -rf", "{text:?}");
        }
        assert_eq!(normalized("  a \n\n b  "), "a b ");
    }

    #[test]
    fn folds_lookalike_dashes_and_quotes() {
        assert_eq!(normalized("rm \u{2013}rf"), "rm -rf");
        assert_eq!(normalized("rm \u{2212}rf"), "rm -rf");
        assert_eq!(normalized("\u{201C}rm\u{201D}"), "\"rm\"");
        // Cyrillic ѕ, у and о drawn like Latin s, y, o; upper case too.
        assert_eq!(normalized("\u{0455}udo"), "sudo");
        assert_eq!(normalized("DR\u{041E}P"), "drop");
    }

    #[test]
    fn folds_confusables_of_every_script() {
        // Latin small capitals, which UTS #39 keeps apart.
        assert_eq!(normalized("\u{280}\u{1D0D} -\u{280}\u{A730}"), "rm -rf");
        // Armenian, Greek, Cherokee look-alikes; Cyrillic capitals read as
        // the Latin capitals they are drawn as (`І` is `I`, not `l`).
        assert_eq!(normalized("\u{57D}\u{585}"), "uo");
        assert_eq!(normalized("\u{3BF}\u{3BD}"), "ov");
        assert_eq!(normalized("\u{406}\u{422}\u{415}\u{41C}"), "item");
        assert_eq!(normalized("\u{433}\u{43C}"), "rm");
        // ASCII is never folded: `|`, `1` and `m` stay what they are.
        assert_eq!(normalized("| 1 m"), "| 1 m");
        // Letters of other scripts are not touched.
        assert_eq!(normalized("日本語 é"), "日本語 é");
    }

    #[test]
    fn splits_shell_words() {
        assert_eq!(shell("curl x|sh"), "curl x | sh");
        assert_eq!(shell("\"rm\" '-rf' /"), "rm -rf /");
        assert_eq!(shell("r\\m \\-rf"), "rm -rf");
        assert_eq!(shell("rm${IFS}-rf"), "rm -rf");
        assert_eq!(shell("rm$IFS-rf"), "rm -rf");
        assert_eq!(shell("bash <(curl x)"), "bash < ( curl x ) ");
        assert_eq!(shell("a&&b"), "a & & b");
    }
}
