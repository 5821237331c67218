//! Wall-clock times and instants in a time zone, with pytz's choices where the wall
//! clock is ambiguous or skipped.
//!
//! graphite-web builds a naive local date-time and calls pytz's `localize()` with its
//! default `is_dst=False`. When the local time occurs twice (the hour after a
//! fall-back transition) pytz keeps the standard-time (non-DST) reading, and failing
//! that the later instant; when it never occurs (the hour skipped by a spring-forward
//! transition) it takes the offset in force six hours earlier, so `02:30` on a
//! spring-forward day reads as `03:30` daylight time.

use chrono::{Datelike, NaiveDateTime, TimeZone};
use chrono_tz::{OffsetComponents, Tz};

/// Python's datetime covers years 1 to 9999; outside them graphite-web raises.
const MIN_YEAR: i32 = 1;
const MAX_YEAR: i32 = 9999;

/// A time zone by its IANA name, as `pytz.timezone()` finds it: exactly, else ignoring
/// ASCII case (`utc`, `europe/paris`). `None` when unknown; graphite-web then keeps its
/// default zone.
pub fn lookup_timezone(name: &str) -> Option<Tz> {
    if let Ok(tz) = name.parse::<Tz>() {
        return Some(tz);
    }
    chrono_tz::TZ_VARIANTS
        .iter()
        .copied()
        .find(|tz| tz.name().eq_ignore_ascii_case(name))
}

/// The wall-clock reading of an instant in `tz`, if it falls in years 1..=9999.
pub(crate) fn local_naive(tz: Tz, epoch: i64) -> Option<NaiveDateTime> {
    let utc = chrono::DateTime::from_timestamp(epoch, 0)?;
    let local = utc.with_timezone(&tz).naive_local();
    (MIN_YEAR..=MAX_YEAR)
        .contains(&local.year())
        .then_some(local)
}

/// The instant of a wall-clock reading in `tz`, chosen as pytz's
/// `localize(dt, is_dst=False)` chooses it.
pub(crate) fn localize(tz: Tz, naive: NaiveDateTime) -> Option<i64> {
    localize_depth(tz, naive, 0)
}

fn localize_depth(tz: Tz, naive: NaiveDateTime, depth: u8) -> Option<i64> {
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(dt) => Some(dt.timestamp()),
        chrono::LocalResult::Ambiguous(a, b) => {
            let standard: Vec<_> = [a, b]
                .into_iter()
                .filter(|d| d.offset().dst_offset().is_zero())
                .collect();
            match standard.as_slice() {
                [only] => Some(only.timestamp()),
                // neither or both are standard time: pytz takes the latest instant
                _ => Some(a.timestamp().max(b.timestamp())),
            }
        }
        chrono::LocalResult::None => {
            // pytz: localize(dt - 6h, is_dst=False) + 6h, i.e. the offset in force
            // before the gap applied to the skipped reading
            // (a gap can be a whole day: Pacific/Apia skipped 2011-12-30, hence a few
            // rounds; the tz database has nothing longer)
            if depth >= 8 {
                return None;
            }
            let earlier = naive.checked_sub_signed(chrono::Duration::hours(6))?;
            localize_depth(tz, earlier, depth + 1)?.checked_add(6 * 3600)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d)
            .and_then(|d| d.and_hms_opt(h, min, 0))
            .expect("valid date")
    }

    #[test]
    fn ambiguous_reading_takes_standard_time() {
        // 01:30 happens twice in Chicago on 2023-11-05; pytz picks CST (-06:00)
        let chicago = chrono_tz::America::Chicago;
        assert_eq!(
            localize(chicago, at(2023, 11, 5, 1, 30)),
            Some(1_699_169_400)
        );
    }

    #[test]
    fn skipped_reading_uses_the_offset_before_the_gap() {
        // 02:30 never happens in Chicago on 2023-03-12; pytz reads it with CST
        let chicago = chrono_tz::America::Chicago;
        assert_eq!(
            localize(chicago, at(2023, 3, 12, 2, 30)),
            Some(1_678_609_800)
        );
        // Sao Paulo skipped midnight on 2018-11-04
        let sp = chrono_tz::America::Sao_Paulo;
        assert_eq!(localize(sp, at(2018, 11, 4, 0, 0)), Some(1_541_300_400));
        assert_eq!(localize(sp, at(2018, 11, 4, 0, 30)), Some(1_541_302_200));
    }

    #[test]
    fn timezone_names_ignore_case() {
        assert_eq!(lookup_timezone("UTC"), Some(Tz::UTC));
        assert_eq!(lookup_timezone("utc"), Some(Tz::UTC));
        assert_eq!(
            lookup_timezone("america/chicago"),
            Some(chrono_tz::America::Chicago)
        );
        assert_eq!(lookup_timezone("Mars/Olympus"), None);
        assert_eq!(lookup_timezone(""), None);
    }

    #[test]
    fn python_year_range() {
        assert!(local_naive(Tz::UTC, 253_402_300_799).is_some());
        assert!(local_naive(Tz::UTC, 253_402_300_800).is_none());
        assert!(local_naive(Tz::UTC, i64::MAX).is_none());
    }
}
