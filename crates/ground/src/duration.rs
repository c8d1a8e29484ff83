//! Durations as people write them (`250ms`, `30s`, `10m`, `2h`, `7d`,
//! `1h 30m`): one parser for every flag (`--timeout`, `--watch`,
//! `--older-than`, `--since`, `--expires`) and every config key
//! (`monitoring.retry_initial`, `retry_max`, `debounce`), so all of them
//! accept the same syntax and refuse the same mistakes.
//!
//! The syntax is humantime's. A value that does not parse, overflows, or
//! moves a time past the calendar is an error that says what was given and
//! what would work, never a panic or a silent default.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};

/// Formats a time the way messages carry it: `2026-11-21T22:48:14.123Z`.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// An RFC 3339 time, as messages and `--since`/`--expires` give it, in UTC.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// What every refusal suggests instead.
pub const EXAMPLES: &str = "use e.g. 250ms, 30s, 10m, 2h, 7d or 1w (units may be combined: 1h 30m)";

/// A non-negative span of time, parsed from text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration(std::time::Duration);

/// Why a text is not a [`Duration`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a duration ({EXAMPLES})")]
    NotADuration(String),
    #[error(
        "{0:?} is neither a duration ({EXAMPLES}) nor an RFC 3339 time such as 2026-12-01T09:00:00Z"
    )]
    NeitherDurationNorTime(String),
    #[error("{0:?} is negative: a duration counts forward from now ({EXAMPLES})")]
    Negative(String),
    #[error("{0:?} is too large a duration ({EXAMPLES})")]
    Overflow(String),
    #[error("{0:?} reaches past the calendar's range")]
    OutOfCalendar(String),
    #[error("{0:?} is no time at all: a period must be longer than zero ({EXAMPLES})")]
    Zero(String),
}

impl Duration {
    pub const fn from_std(d: std::time::Duration) -> Self {
        Duration(d)
    }

    pub fn std(self) -> std::time::Duration {
        self.0
    }

    /// At most `cap`, so that adding it to a clock cannot overflow.
    #[must_use]
    pub fn capped(self, cap: std::time::Duration) -> Self {
        Duration(self.0.min(cap))
    }

    /// `now` moved forward (`later`) or back by this span.
    pub fn shift(
        self,
        now: DateTime<Utc>,
        later: bool,
        text: &str,
    ) -> Result<DateTime<Utc>, DurationError> {
        chrono::Duration::from_std(self.0)
            .ok()
            .and_then(|d| {
                if later {
                    now.checked_add_signed(d)
                } else {
                    now.checked_sub_signed(d)
                }
            })
            .ok_or_else(|| DurationError::OutOfCalendar(short(text)))
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, DurationError> {
        if text.trim().starts_with('-') {
            return Err(DurationError::Negative(short(text)));
        }
        match humantime::parse_duration(text.trim()) {
            Ok(d) => Ok(Duration(d)),
            Err(humantime::DurationError::NumberOverflow) => {
                Err(DurationError::Overflow(short(text)))
            }
            Err(_) => Err(DurationError::NotADuration(short(text))),
        }
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A [`Duration`] that must not be zero: how often something repeats
/// (`sync --watch 30s`). A zero period would repeat without pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period(Duration);

impl Period {
    pub fn std(self) -> std::time::Duration {
        self.0.std()
    }
}

impl DurationError {
    /// This refusal as the error of flag `what` (exit 2, with examples).
    pub fn of_flag(self, what: &'static str) -> crate::error::Error {
        crate::error::Error::BadDuration {
            what,
            source: Box::new(self),
        }
    }
}

impl FromStr for Period {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, DurationError> {
        let d: Duration = text.parse()?;
        if d.std().is_zero() {
            return Err(DurationError::Zero(short(text)));
        }
        Ok(Period(d))
    }
}

/// A point in time given either as a span from `now` (forward when
/// `later`) or as an RFC 3339 time: `--expires 2h`, `--since 2026-11-01T00:00:00Z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    In(Duration, String),
    At(DateTime<Utc>),
}

impl When {
    /// The time this names, relative to `now`.
    pub fn resolve(&self, now: DateTime<Utc>, later: bool) -> Result<DateTime<Utc>, DurationError> {
        match self {
            When::In(d, text) => d.shift(now, later, text),
            When::At(t) => Ok(*t),
        }
    }
}

impl FromStr for When {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, DurationError> {
        match text.parse::<Duration>() {
            Ok(d) => Ok(When::In(d, text.to_string())),
            Err(DurationError::NotADuration(_)) => parse_time(text)
                .map(When::At)
                .ok_or_else(|| DurationError::NeitherDurationNorTime(short(text))),
            Err(e) => Err(e),
        }
    }
}

/// The value as it goes into an error: a flag's value may be anything.
fn short(text: &str) -> String {
    crate::printer::untrusted_short(text, 40)
}

#[cfg(test)]
mod tests {
    use super::{Duration, DurationError, When};
    use std::time::Duration as Std;

    fn d(text: &str) -> Option<Std> {
        text.parse::<Duration>().ok().map(Duration::std)
    }

    #[test]
    fn the_syntax_people_write() {
        assert_eq!(d("90s"), Some(Std::from_secs(90)));
        assert_eq!(d("250ms"), Some(Std::from_millis(250)));
        assert_eq!(d("2h"), Some(Std::from_secs(7200)));
        assert_eq!(d("7d"), Some(Std::from_secs(7 * 86400)));
        assert_eq!(d("1h 30m"), Some(Std::from_secs(5400)));
        assert_eq!(d(" 10m "), Some(Std::from_secs(600)));
        for bad in ["h", "5q", "2026-01-01", "", "-1s"] {
            assert_eq!(d(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn overflow_is_its_own_error() {
        assert!(matches!(
            "99999999999999999999w".parse::<Duration>(),
            Err(DurationError::Overflow(_))
        ));
    }

    #[test]
    fn shifting_past_the_calendar_is_an_error_not_a_panic() {
        let now = chrono::Utc::now();
        let huge: Duration = "99999999w".parse().unwrap();
        assert!(huge.shift(now, true, "99999999w").is_err());
        assert!(huge.shift(now, false, "99999999w").is_err());
        let hour: Duration = "1h".parse().unwrap();
        assert_eq!(
            hour.shift(now, true, "1h").unwrap(),
            now + chrono::Duration::hours(1)
        );
    }

    #[test]
    fn a_when_is_a_span_or_a_time() {
        let now = chrono::Utc::now();
        let at: When = "2026-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            at.resolve(now, true).unwrap().to_rfc3339(),
            "2026-01-01T00:00:00+00:00"
        );
        let back: When = "2h".parse().unwrap();
        assert_eq!(
            back.resolve(now, false).unwrap(),
            now - chrono::Duration::hours(2)
        );
        assert!("yesterday".parse::<When>().is_err());
        assert!(matches!(
            "99999999999999999999w".parse::<When>(),
            Err(DurationError::Overflow(_))
        ));
    }

    #[test]
    fn a_period_is_never_zero() {
        use super::Period;
        assert!(matches!(
            "0s".parse::<Period>(),
            Err(DurationError::Zero(_))
        ));
        assert!(matches!(
            "0ms".parse::<Period>(),
            Err(DurationError::Zero(_))
        ));
        assert_eq!("30s".parse::<Period>().unwrap().std(), Std::from_secs(30));
    }

    #[test]
    fn config_values_deserialize_through_the_same_parser() {
        #[derive(Debug, serde::Deserialize)]
        struct C {
            every: Duration,
        }
        let c: C = serde_json::from_str(r#"{"every": "1m 30s"}"#).unwrap();
        assert_eq!(c.every.std(), Std::from_secs(90));
        let bad = serde_json::from_str::<C>(r#"{"every": "soon"}"#).unwrap_err();
        assert!(bad.to_string().contains("is not a duration"), "{bad}");
    }
}
