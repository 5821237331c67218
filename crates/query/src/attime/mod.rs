//! `from`, `until` and `now` as graphite-web 1.1.10's `parseATTime` reads them.
//!
//! The text is stripped, lower-cased, and `_`, `,` and spaces are removed. Then:
//! - all digits: epoch seconds, unless it has 8 digits that look like `YYYYMMDD`
//!   (year > 1900, month < 13, day < 32), which is a date;
//! - otherwise it is cut at the first `+` (or, when there is none, the first `-`) into a
//!   *reference* (`reference.rs`: `now`, `noon`, `6pm`, `12:30`, `yesterday`,
//!   `20240101`, `11/14/23`, `jan5`, `monday`, combined as `6pmyesterday`) and an
//!   *offset* (`offset.rs`: `-1d`, `+2h30min`, units by their first letters, a bare `m`
//!   refused).
//!
//! Wall-clock references are read in the request's time zone and turned into an instant
//! as pytz's `localize(is_dst=False)` does (`localize.rs`); the offset is then added as a
//! fixed number of seconds. graphite-web's quirks are kept on purpose, because clients
//! were written against them: `12pm` is midnight and `12am` is noon, `-1d+6h` is an
//! error (the `+` splits it and `-1d` is no reference), `mon` is 30 days and `y` 365.
//!
//! [`resolve_range`] applies the rules of graphite-web's `parseOptions`: `until`
//! defaults to `now`, `from` to `-1d`, the two are swapped when `from` is later, and an
//! empty range is refused.

mod localize;
mod offset;
mod reference;

pub use localize::lookup_timezone;
pub use offset::parse_time_offset;

use chrono_tz::Tz;

use crate::py;

/// The longest piece of offending input quoted in an error message, in characters.
const QUOTE_LIMIT: usize = 64;

/// Why a time expression was refused. Every variant quotes the input; graphite-web
/// answers these with HTTP 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtTimeError {
    #[error("invalid time {input:?}: unknown day reference {reference:?}")]
    UnknownReference { input: String, reference: String },
    #[error("invalid time {input:?}: day of month required after month name")]
    MissingDayOfMonth { input: String },
    #[error("invalid time {input:?}: {text:?} is not a number")]
    NotANumber { input: String, text: String },
    #[error(
        "invalid time {input:?}: invalid offset unit {unit:?} (use s, min, h, d, w, mon or y)"
    )]
    InvalidUnit { input: String, unit: String },
    #[error("invalid time {input:?}: an offset must start with + or -")]
    InvalidOffset { input: String },
    #[error("invalid time {input:?}: {what} {value} out of range")]
    OutOfRange {
        input: String,
        what: &'static str,
        value: i64,
    },
    #[error("invalid time {input:?}: the result is outside the years 1 to 9999")]
    Overflow { input: String },
}

/// A resolved request interval, in epoch seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    pub from: i64,
    pub until: i64,
    /// The `now` every relative time was read against.
    pub now: i64,
}

/// Why a request's `from`/`until`/`now` could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeRangeError {
    #[error("invalid value for parameter {param}: {source}")]
    Param {
        param: &'static str,
        #[source]
        source: AtTimeError,
    },
    /// graphite-web: "Invalid empty time range".
    #[error("invalid empty time range: from and until are both {at}")]
    Empty { at: i64 },
}

/// Parses one time expression against `now` (epoch seconds) in time zone `tz`, as
/// graphite-web's `parseATTime(s, tz, now)`. Returns epoch seconds.
pub fn parse_at_time(s: &str, tz: Tz, now: i64) -> Result<i64, AtTimeError> {
    let input = || quote(s);
    let cleaned: String = py::strip(s)
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '_' | ',' | ' '))
        .collect();
    let chars: Vec<char> = cleaned.chars().collect();

    // all digits: an epoch, unless they look like YYYYMMDD (then a reference below)
    if !chars.is_empty() && chars.iter().all(char::is_ascii_digit) && !looks_like_yyyymmdd(&chars) {
        let epoch = cleaned
            .parse::<i64>()
            .map_err(|_| AtTimeError::Overflow { input: input() })?;
        // Python's datetime.fromtimestamp refuses what falls outside years 1..9999
        localize::local_naive(tz, epoch).ok_or_else(|| AtTimeError::Overflow { input: input() })?;
        return Ok(epoch);
    }

    let split = chars
        .iter()
        .position(|&c| c == '+')
        .or_else(|| chars.iter().position(|&c| c == '-'));
    let (reference, offset) = match split {
        Some(i) => chars.split_at(i),
        None => (&chars[..], &[][..]),
    };
    let at = reference::parse(reference, tz, now, s)?;
    let delta = offset::parse_chars(offset, s)?;
    let result = at
        .checked_add(delta)
        .ok_or_else(|| AtTimeError::Overflow { input: input() })?;
    localize::local_naive(tz, result).ok_or_else(|| AtTimeError::Overflow { input: input() })?;
    Ok(result)
}

/// graphite-web's rule for 8 digits: a date when the year part is after 1900, the month
/// part below 13 and the day part below 32 (`20231314` is therefore an epoch).
fn looks_like_yyyymmdd(chars: &[char]) -> bool {
    if chars.len() != 8 {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> u32 {
        chars[r]
            .iter()
            .fold(0, |acc, c| acc * 10 + c.to_digit(10).unwrap_or(0))
    };
    num(0..4) > 1900 && num(4..6) < 13 && num(6..8) < 32
}

/// Resolves a render request's time parameters as graphite-web's `parseOptions` does:
/// `now` (when given) is read against `clock_now`; `until` defaults to `now` and `from`
/// to `-1d`; when `from` is later than `until` the two are swapped; equal bounds are an
/// error.
pub fn resolve_range(
    from: Option<&str>,
    until: Option<&str>,
    now: Option<&str>,
    tz: Tz,
    clock_now: i64,
) -> Result<TimeRange, TimeRangeError> {
    let param = |param: &'static str| move |source| TimeRangeError::Param { param, source };
    let now = match now {
        Some(s) => parse_at_time(s, tz, clock_now).map_err(param("now"))?,
        None => clock_now,
    };
    let until = match until {
        Some(s) => parse_at_time(s, tz, now).map_err(param("until"))?,
        None => now,
    };
    let from = match from {
        Some(s) => parse_at_time(s, tz, now).map_err(param("from"))?,
        None => parse_at_time("-1d", tz, now).map_err(param("from"))?,
    };
    if from == until {
        return Err(TimeRangeError::Empty { at: from });
    }
    Ok(TimeRange {
        from: from.min(until),
        until: from.max(until),
        now,
    })
}

/// The input as quoted in error messages: at most [`QUOTE_LIMIT`] characters.
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests;
