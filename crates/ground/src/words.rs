//! Closed sets of words (a message type, an outcome, a git hook, an audit
//! event): one macro declares each as an enum and derives every edge from
//! the one list of names — `clap::ValueEnum` for the command line, serde
//! for files and `--json`, `Display`/`as_str` for output — so the names
//! cannot drift apart (prek's `HookType`). Also [`OrUnknown`], for reading
//! such a word from a file another version may have written.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Declares `enum $name` whose variants are written as `$text` everywhere:
/// serde (`rename`), clap (`ValueEnum`, so a wrong value is a usage error
/// that lists the valid ones), `FromStr`, `Display` and `as_str`. `ALL` and
/// `NAMES` list the variants in declaration order, which is also `Ord`.
#[macro_export]
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            ::serde::Serialize, ::serde::Deserialize,
        )]
        #[cfg_attr(any(test, feature = "schema"), derive(::schemars::JsonSchema))]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> ::std::result::Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!("unknown {} {s:?} (expected one of: {})",
                        $crate::words::spaced(stringify!($name)), Self::NAMES.join(", "))),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                // `pad`, not `write_str`: `{:<14}` in a table must line up.
                f.pad(self.as_str())
            }
        }

        impl ::clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }

            fn to_possible_value(&self) -> Option<::clap::builder::PossibleValue> {
                Some(::clap::builder::PossibleValue::new(self.as_str()))
            }
        }
    };
}

pub use crate::word_enum;

/// A type name as words for a message: `OacpPriority` → `oacp priority`
/// (not `oacppriority`, which a reader has to take apart).
pub fn spaced(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A word of a closed set as read from a file that an older tool, another
/// implementation or a newer version may have written: the known word, or
/// the text as found. The text is kept as it was, so a reader can still
/// show it and write it back (a signature over it still verifies), and one
/// word it does not know never makes the whole file unreadable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// Named after the set, so two in one schema do not become `OrUnknown2`.
#[cfg_attr(feature = "schema", schemars(rename = "{T}OrUnknown"))]
#[serde(untagged)]
pub enum OrUnknown<T> {
    Known(T),
    Unknown(String),
}

impl<T> OrUnknown<T> {}

impl<T> From<T> for OrUnknown<T> {
    fn from(word: T) -> Self {
        OrUnknown::Known(word)
    }
}

impl<T: fmt::Display> fmt::Display for OrUnknown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrUnknown::Known(word) => word.fmt(f),
            OrUnknown::Unknown(text) => f.pad(text),
        }
    }
}

/// The word in `known` nearest to `target`, if one is a typo away: at
/// most two edits (a swap of neighbours counts as one), and fewer than
/// the word is long. For "did you mean …?".
pub fn closest(target: &str, known: &[String]) -> Option<String> {
    known
        .iter()
        .filter(|id| id.as_str() != target)
        .map(|id| (edits(target, id), id))
        .filter(|(d, _)| *d <= 2 && *d < target.chars().count())
        .min_by_key(|(d, id)| (*d, (*id).clone()))
        .map(|(_, id)| id.clone())
}

/// Optimal-string-alignment distance: insertions, deletions,
/// substitutions and swaps of neighbours, case-insensitive.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::{closest, edits};

    #[test]
    fn a_typo_is_near_and_a_stranger_is_not() {
        assert_eq!(edits("wbe", "web"), 1);
        assert_eq!(edits("web", "webs"), 1);
        let known = ["web".to_string(), "docs".to_string(), "api".to_string()];
        assert_eq!(closest("wbe", &known).as_deref(), Some("web"));
        assert_eq!(closest("dcos", &known).as_deref(), Some("docs"));
        assert_eq!(closest("nobody", &known), None);
        assert_eq!(closest("ab", &known), None, "two edits from any short id");
    }
    use super::*;

    word_enum! {
        /// A test set with a two-word name.
        enum Sample {
            One = "one",
            TwoWords = "two_words",
        }
    }

    #[test]
    fn every_edge_uses_the_same_names() {
        use clap::ValueEnum;
        for (word, name) in Sample::ALL.iter().zip(Sample::NAMES) {
            assert_eq!(word.as_str(), *name);
            assert_eq!(word.to_string(), *name);
            assert_eq!(name.parse::<Sample>().as_ref(), Ok(word));
            assert_eq!(serde_json::to_value(word).unwrap(), **name);
            let parsed = <Sample as ValueEnum>::from_str(name, false).unwrap();
            assert_eq!(&parsed, word);
        }
        assert_eq!(
            "TwoWords".parse::<Sample>().unwrap_err(),
            "unknown sample \"TwoWords\" (expected one of: one, two_words)"
        );
        assert_eq!(spaced("OacpPriority"), "oacp priority");
        assert_eq!(spaced("MessageType"), "message type");
        assert_eq!(format!("[{:<5}]", Sample::One), "[one  ]");
    }

    #[test]
    fn unknown_words_read_and_write_back_unchanged() {
        let known: OrUnknown<Sample> = serde_json::from_str("\"two_words\"").unwrap();
        assert_eq!(known, OrUnknown::Known(Sample::TwoWords));
        let other: OrUnknown<Sample> = serde_json::from_str("\"three\"").unwrap();
        assert_eq!(other, OrUnknown::Unknown("three".into()));
        assert_eq!(other.to_string(), "three");
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"three\"");
        assert!(serde_json::from_str::<OrUnknown<Sample>>("3").is_err());
    }
}
