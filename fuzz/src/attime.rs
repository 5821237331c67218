//! Fuzz target for `from`/`until`/`now` expressions: [`attime`] reads the first byte as
//! the choice of time zone and reference time, the rest (as UTF-8, invalid bytes
//! replaced) as the expression, and runs `sumi_query::attime` on it.
//!
//! Accepted outcomes, anything else panics:
//! - `parse_at_time` gives an instant whose wall-clock reading in the zone lies in the
//!   years 1 to 9999 (Python's datetime range), or an `AtTimeError` with a message;
//! - the same text as a render request's `from` resolves to `from < until` or to a
//!   `TimeRangeError`;
//! - `parse_time_offset` on the raw text gives at most 999999999 days (a Python
//!   timedelta) or an error.

use chrono::{Datelike, TimeZone};
use chrono_tz::Tz;

use sumi_query::attime::{parse_at_time, parse_time_offset, resolve_range};

const ZONES: [Tz; 5] = [
    Tz::UTC,
    chrono_tz::America::Chicago,
    chrono_tz::Asia::Kolkata,
    chrono_tz::Pacific::Apia,
    chrono_tz::Australia::Lord_Howe,
];

/// Reference times: ordinary, at the epoch, negative, and at Python's limits.
const NOWS: [i64; 6] = [
    1_700_000_000,
    0,
    -86_400,
    253_402_300_799,
    -62_135_596_800,
    i64::MAX,
];

/// One time expression.
pub fn attime(data: &[u8]) {
    let (&choice, rest) = data.split_first().unwrap_or((&0, &[]));
    let tz = ZONES[usize::from(choice) % ZONES.len()];
    let now = NOWS[usize::from(choice) / ZONES.len() % NOWS.len()];
    let text = String::from_utf8_lossy(rest);

    match parse_at_time(&text, tz, now) {
        Ok(t) => {
            let local = tz
                .timestamp_opt(t, 0)
                .single()
                .unwrap_or_else(|| panic!("{text:?} gave {t}, not an instant"));
            assert!(
                (1..=9999).contains(&local.year()),
                "{text:?} gave year {}",
                local.year()
            );
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if let Ok(r) = resolve_range(Some(&text), None, None, tz, now) {
        assert!(
            r.from < r.until,
            "{text:?}: from {} not before until {}",
            r.from,
            r.until
        );
    }
    if let Ok(secs) = parse_time_offset(&text) {
        assert!(
            secs.unsigned_abs() < 1_000_000_000 * 86_400,
            "{text:?}: offset {secs}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass() {
        for seed in [
            &b"\x00-1d"[..],
            b"\x01noon yesterday",
            b"\x02 6pm+1h",
            b"\x07jan5",
            b"\x1320231114",
            b"\x1b9999999999999",
            b"\xff12:30_20231114",
            b"",
        ] {
            attime(seed);
        }
    }
}
