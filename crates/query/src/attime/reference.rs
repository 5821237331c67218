//! The reference half of a time expression, graphite-web's `parseTimeReference`: a
//! time of day (`12:30`, `6pm`, `noon`, `midnight`, `teatime`) optionally followed by
//! a day (`yesterday`, `today`, `tomorrow`, `MM/DD/YY`, `YYYYMMDD`, `jan5`, `monday`).
//!
//! The pieces are consumed left to right exactly as graphite-web does, including its
//! quirks: `12am` is noon and `12pm` midnight (the hour is taken as written, `pm` adds
//! 12 modulo 24), a month name takes its day from its last one or two digits
//! (`january5`, `jan 05`), and a weekday means the most recent such day, today
//! included. Without a day the date is `now`'s, in the request's time zone.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime};
use chrono_tz::Tz;

use super::localize::{local_naive, localize};
use super::{quote, AtTimeError};
use crate::py;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Resolves a (cleaned, lower-cased) reference to an instant. `input` is the whole
/// original expression, for error messages.
pub(super) fn parse(reference: &[char], tz: Tz, now: i64, input: &str) -> Result<i64, AtTimeError> {
    let whole: String = reference.iter().collect();
    if whole.is_empty() || whole == "now" {
        return Ok(now);
    }
    let overflow = || AtTimeError::Overflow {
        input: quote(input),
    };
    let number = |text: &[char]| -> Result<i64, AtTimeError> {
        let s: String = text.iter().collect();
        py::int(&s).ok_or_else(|| AtTimeError::NotANumber {
            input: quote(input),
            text: quote(&s),
        })
    };
    let now_local = local_naive(tz, now).ok_or_else(overflow)?;

    let mut r = reference;
    let (mut hour, mut minute) = (0i64, 0i64);

    // HH:MM, optionally followed by am/pm
    if let Some(i) = find(r, ":") {
        if 0 < i && i < 3 {
            hour = number(&r[..i])?;
            minute = number(slice(r, i + 1, i + 3))?;
            r = slice(r, i + 3, r.len());
            if starts_with(r, "am") {
                r = &r[2..];
            } else if starts_with(r, "pm") {
                hour = (hour + 12).rem_euclid(24);
                r = &r[2..];
            }
        }
    }
    // Xam / XXam, then Xpm / XXpm
    if let Some(i) = find(r, "am") {
        if 0 < i && i < 3 {
            hour = number(&r[..i])?;
            r = &r[i + 2..];
        }
    }
    if let Some(i) = find(r, "pm") {
        if 0 < i && i < 3 {
            hour = (number(&r[..i])? + 12).rem_euclid(24);
            r = &r[i + 2..];
        }
    }
    if starts_with(r, "noon") {
        (hour, minute) = (12, 0);
        r = &r[4..];
    } else if starts_with(r, "midnight") {
        (hour, minute) = (0, 0);
        r = &r[8..];
    } else if starts_with(r, "teatime") {
        (hour, minute) = (16, 0);
        r = &r[7..];
    }

    // now.replace(hour=..., minute=..., second=0, microsecond=0)
    let out_of_range = |what, value| AtTimeError::OutOfRange {
        input: quote(input),
        what,
        value,
    };
    if !(0..24).contains(&hour) {
        return Err(out_of_range("hour", hour));
    }
    if !(0..60).contains(&minute) {
        return Err(out_of_range("minute", minute));
    }
    let (hour, minute) = (hour as u32, minute as u32);

    let rest: String = r.iter().collect();
    let today = now_local.date();
    let date = match rest.as_str() {
        "" | "today" => today,
        "yesterday" => today
            .checked_sub_signed(Duration::days(1))
            .ok_or_else(overflow)?,
        "tomorrow" => today
            .checked_add_signed(Duration::days(1))
            .ok_or_else(overflow)?,
        _ if r.iter().filter(|&&c| c == '/').count() == 2 => {
            let mut parts = r.split(|&c| c == '/');
            let mut next = || number(parts.next().unwrap_or_default());
            let (m, d, mut y) = (next()?, next()?, next()?);
            if y < 1900 {
                y += 1900;
            }
            if y < 1970 {
                y += 100;
            }
            make_date(y, m, d).map_err(|(what, v)| out_of_range(what, v))?
        }
        _ if r.len() == 8 && r.iter().all(char::is_ascii_digit) => {
            let (y, m, d) = (number(&r[..4])?, number(&r[4..6])?, number(&r[6..])?);
            make_date(y, m, d).map_err(|(what, v)| out_of_range(what, v))?
        }
        _ if MONTHS.iter().any(|m| starts3(r, m)) => {
            let month = MONTHS.iter().position(|m| starts3(r, m)).unwrap_or(0) as i64 + 1;
            let n = r.len();
            let day = if n >= 2 && r[n - 2..].iter().all(char::is_ascii_digit) {
                number(&r[n - 2..])?
            } else if r[n - 1].is_ascii_digit() {
                number(&r[n - 1..])?
            } else {
                return Err(AtTimeError::MissingDayOfMonth {
                    input: quote(input),
                });
            };
            make_date(i64::from(today.year()), month, day)
                .map_err(|(what, v)| out_of_range(what, v))?
        }
        _ if WEEKDAYS.iter().any(|w| starts3(r, w)) => {
            let target = WEEKDAYS.iter().position(|w| starts3(r, w)).unwrap_or(0) as i64;
            let current = i64::from(today.weekday().num_days_from_sunday());
            let back = (current - target).rem_euclid(7);
            today
                .checked_sub_signed(Duration::days(back))
                .ok_or_else(overflow)?
        }
        _ => {
            return Err(AtTimeError::UnknownReference {
                input: quote(input),
                reference: quote(&whole),
            })
        }
    };
    if !(1..=9999).contains(&date.year()) {
        return Err(overflow());
    }
    let naive: NaiveDateTime = date.and_hms_opt(hour, minute, 0).ok_or_else(overflow)?;
    localize(tz, naive).ok_or_else(overflow)
}

/// Python's `datetime(year, month, day)` checks, in its order.
fn make_date(y: i64, m: i64, d: i64) -> Result<NaiveDate, (&'static str, i64)> {
    if !(1..=9999).contains(&y) {
        return Err(("year", y));
    }
    if !(1..=12).contains(&m) {
        return Err(("month", m));
    }
    NaiveDate::from_ymd_opt(y as i32, m as u32, u32::try_from(d).unwrap_or(0)).ok_or(("day", d))
}

/// Python's `s[from:to]` with clamping.
fn slice(s: &[char], from: usize, to: usize) -> &[char] {
    let to = to.min(s.len());
    let from = from.min(to);
    &s[from..to]
}

/// Python's `s.find(needle)`, in characters.
fn find(s: &[char], needle: &str) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    s.windows(needle.len()).position(|w| w == needle.as_slice())
}

fn starts_with(s: &[char], prefix: &str) -> bool {
    let mut it = s.iter();
    prefix.chars().all(|p| it.next() == Some(&p))
}

/// Python's `s[:3] == name` for a three-letter name.
fn starts3(s: &[char], name: &str) -> bool {
    s.len() >= 3 && starts_with(s, name)
}
