//! The time axis: graphite-web's `xAxisConfigs` table (itself taken from rrdtool),
//! which picks grid and label spacing and the label format from the seconds one
//! pixel covers and the whole span, and the tick instants in the graph's time zone.

use std::fmt::Write as _;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use chrono_tz::Tz;

/// The unit of a grid or label spacing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Sec,
    Min,
    Hour,
    Day,
}

impl Unit {
    fn seconds(self) -> i64 {
        match self {
            Unit::Sec => 1,
            Unit::Min => 60,
            Unit::Hour => 3600,
            Unit::Day => 86_400,
        }
    }
}

/// One row of the table: used when a pixel covers at least `seconds` and the span
/// is at most `max_interval`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct XConfig {
    seconds: f64,
    pub(crate) minor: (Unit, f64),
    pub(crate) major: (Unit, f64),
    pub(crate) label: (Unit, f64),
    pub(crate) format: &'static str,
    max_interval: Option<i64>,
}

const MIN: i64 = 60;
const HOUR: i64 = 3600;
const DAY: i64 = 86_400;

const fn row(
    seconds: f64,
    minor: (Unit, f64),
    major: (Unit, f64),
    label: (Unit, f64),
    format: &'static str,
    max_interval: Option<i64>,
) -> XConfig {
    XConfig {
        seconds,
        minor,
        major,
        label,
        format,
        max_interval,
    }
}

use Unit::{Day as D, Hour as H, Min as M, Sec as S};

/// graphite-web 1.1's `xAxisConfigs`, with its `DATE_FORMAT` of `%m/%d`.
const CONFIGS: [XConfig; 23] = [
    row(
        0.00,
        (S, 5.0),
        (M, 1.0),
        (S, 5.0),
        "%H:%M:%S",
        Some(10 * MIN),
    ),
    row(
        0.07,
        (S, 10.0),
        (M, 1.0),
        (S, 10.0),
        "%H:%M:%S",
        Some(20 * MIN),
    ),
    row(
        0.14,
        (S, 15.0),
        (M, 1.0),
        (S, 15.0),
        "%H:%M:%S",
        Some(30 * MIN),
    ),
    row(0.27, (S, 30.0), (M, 2.0), (M, 1.0), "%H:%M", Some(2 * HOUR)),
    row(0.5, (M, 1.0), (M, 2.0), (M, 1.0), "%H:%M", Some(2 * HOUR)),
    row(1.2, (M, 1.0), (M, 4.0), (M, 2.0), "%H:%M", Some(3 * HOUR)),
    row(2.0, (M, 1.0), (M, 10.0), (M, 5.0), "%H:%M", Some(6 * HOUR)),
    row(
        5.0,
        (M, 2.0),
        (M, 10.0),
        (M, 10.0),
        "%H:%M",
        Some(12 * HOUR),
    ),
    row(10.0, (M, 5.0), (M, 20.0), (M, 20.0), "%H:%M", Some(DAY)),
    row(30.0, (M, 10.0), (H, 1.0), (H, 1.0), "%H:%M", Some(2 * DAY)),
    row(60.0, (M, 30.0), (H, 2.0), (H, 2.0), "%H:%M", Some(2 * DAY)),
    row(
        100.0,
        (H, 2.0),
        (H, 4.0),
        (H, 4.0),
        "%a %H:%M",
        Some(6 * DAY),
    ),
    row(
        255.0,
        (H, 6.0),
        (H, 12.0),
        (H, 12.0),
        "%m/%d %H:%M",
        Some(10 * DAY),
    ),
    row(600.0, (H, 6.0), (D, 1.0), (D, 1.0), "%m/%d", Some(14 * DAY)),
    row(
        1000.0,
        (H, 12.0),
        (D, 1.0),
        (D, 1.0),
        "%m/%d",
        Some(365 * DAY),
    ),
    row(
        2000.0,
        (D, 1.0),
        (D, 2.0),
        (D, 2.0),
        "%m/%d",
        Some(365 * DAY),
    ),
    row(
        4000.0,
        (D, 2.0),
        (D, 4.0),
        (D, 4.0),
        "%m/%d",
        Some(365 * DAY),
    ),
    row(
        8000.0,
        (D, 3.5),
        (D, 7.0),
        (D, 7.0),
        "%m/%d",
        Some(365 * DAY),
    ),
    row(
        16000.0,
        (D, 7.0),
        (D, 14.0),
        (D, 14.0),
        "%m/%d",
        Some(365 * DAY),
    ),
    row(
        32000.0,
        (D, 15.0),
        (D, 30.0),
        (D, 30.0),
        "%m/%d",
        Some(365 * DAY),
    ),
    row(64000.0, (D, 30.0), (D, 60.0), (D, 60.0), "%m/%d %Y", None),
    row(
        100000.0,
        (D, 60.0),
        (D, 120.0),
        (D, 120.0),
        "%m/%d %Y",
        None,
    ),
    row(
        120000.0,
        (D, 120.0),
        (D, 240.0),
        (D, 240.0),
        "%m/%d %Y",
        None,
    ),
];

/// The last row whose `seconds` fits `seconds_per_pixel` and whose `max_interval`
/// covers the span; the coarsest row if none does.
pub(crate) fn choose(seconds_per_pixel: f64, time_range: i64) -> &'static XConfig {
    CONFIGS
        .iter()
        .rev()
        .find(|c| c.seconds <= seconds_per_pixel && c.max_interval.is_none_or(|m| m >= time_range))
        .unwrap_or(&CONFIGS[CONFIGS.len() - 1])
}

/// The most ticks one call returns, whatever the span.
const MAX_TICKS: usize = 5000;

/// Instants from `start` (inclusive) to `end` (exclusive) at multiples of
/// `step × unit` in `tz`'s wall clock: seconds, minutes and hours counted within the
/// minute, hour and day, days from local midnight (calendar days, so midnight stays
/// midnight across daylight saving changes).
pub(crate) fn ticks(start: i64, end: i64, (unit, step): (Unit, f64), tz: Tz) -> Vec<i64> {
    let Some(local) = tz.timestamp_opt(start, 0).earliest() else {
        return Vec::new();
    };
    let naive = local.naive_local();
    let whole = step.trunc() as u32;
    let aligned = match unit {
        Unit::Sec => naive.with_second(naive.second() - naive.second() % whole.max(1)),
        Unit::Min => naive
            .with_second(0)
            .and_then(|n| n.with_minute(n.minute() - n.minute() % whole.max(1))),
        Unit::Hour => naive
            .with_second(0)
            .and_then(|n| n.with_minute(0))
            .and_then(|n| n.with_hour(n.hour() - n.hour() % whole.max(1))),
        Unit::Day => naive.date().and_hms_opt(0, 0, 0),
    };
    let Some(aligned) = aligned else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if unit == Unit::Day && step.fract() == 0.0 && whole > 0 {
        let mut date = aligned.date();
        while out.len() < MAX_TICKS {
            let Some(t) = local_midnight(date, tz, &local) else {
                break;
            };
            if t >= end {
                break;
            }
            if t >= start {
                out.push(t);
            }
            let Some(next) = date.checked_add_signed(Duration::days(i64::from(whole))) else {
                break;
            };
            date = next;
        }
        return out;
    }
    let delta = ((unit.seconds() as f64) * step).round() as i64;
    if delta <= 0 {
        return out;
    }
    let Some(mut t) = to_epoch(aligned, tz, &local) else {
        return out;
    };
    if t < start {
        let steps = (start.saturating_sub(t).saturating_add(delta - 1)) / delta;
        t = t.saturating_add(steps.saturating_mul(delta));
    }
    while t < end && out.len() < MAX_TICKS {
        out.push(t);
        let Some(next) = t.checked_add(delta) else {
            break;
        };
        t = next;
    }
    out
}

/// Local wall time as epoch seconds: the earlier instant when the clock repeats,
/// the start's offset when the wall time does not exist.
fn to_epoch(naive: NaiveDateTime, tz: Tz, reference: &DateTime<Tz>) -> Option<i64> {
    match tz.from_local_datetime(&naive).earliest() {
        Some(dt) => Some(dt.timestamp()),
        None => {
            let offset = reference.naive_local() - reference.naive_utc();
            Some(naive.checked_sub_signed(offset)?.and_utc().timestamp())
        }
    }
}

fn local_midnight(date: NaiveDate, tz: Tz, reference: &DateTime<Tz>) -> Option<i64> {
    to_epoch(date.and_hms_opt(0, 0, 0)?, tz, reference)
}

/// `ts` in `tz` formatted with strftime `format`; `None` when the format is invalid or
/// the instant is out of range.
pub(crate) fn label(ts: i64, format: &str, tz: Tz) -> Option<String> {
    let dt = tz.timestamp_opt(ts, 0).earliest()?;
    let mut out = String::new();
    write!(out, "{}", dt.format(format)).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_choice_follows_graphite() {
        // A day on ~300 pixels: 288 s per pixel → "%m/%d %H:%M" every 12 hours? No:
        // the span (1 day) fits row 255 (max 10 days).
        let c = choose(288.0, DAY);
        assert_eq!(c.format, "%m/%d %H:%M");
        assert_eq!(c.label, (Unit::Hour, 12.0));
        // An hour on 800 pixels: 4.5 s per pixel.
        let c = choose(4.5, HOUR);
        assert_eq!(c.format, "%H:%M");
        assert_eq!(c.label, (Unit::Min, 5.0));
        // A day on 800 pixels: 108 s per pixel.
        assert_eq!(choose(108.0, DAY).format, "%a %H:%M");
        // Two years: the coarse rows without a span limit.
        assert_eq!(choose(90_000.0, 730 * DAY).format, "%m/%d %Y");
        // Nothing fits (tiny span, large pixels): the last row.
        assert_eq!(choose(1e9, 10).format, "%m/%d %Y");
    }

    #[test]
    fn minute_ticks_align_to_the_hour() {
        // 2024-01-01 10:07:30 UTC .. +1h, every 20 minutes: 10:20, 10:40, 11:00.
        let start = 1_704_103_650;
        let t = ticks(start, start + HOUR, (Unit::Min, 20.0), Tz::UTC);
        let labels: Vec<String> = t
            .iter()
            .map(|&x| label(x, "%H:%M", Tz::UTC).unwrap())
            .collect();
        assert_eq!(labels, vec!["10:20", "10:40", "11:00"]);
    }

    #[test]
    fn hour_ticks_in_a_time_zone() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let start = 1_704_103_650; // 19:07:30 in Tokyo
        let t = ticks(start, start + 6 * HOUR, (Unit::Hour, 2.0), tz);
        let labels: Vec<String> = t.iter().map(|&x| label(x, "%H:%M", tz).unwrap()).collect();
        assert_eq!(labels, vec!["20:00", "22:00", "00:00"]);
    }

    #[test]
    fn day_ticks_stay_at_midnight_across_dst() {
        let tz: Tz = "Europe/Berlin".parse().unwrap();
        // 2024-03-29 12:00 UTC, for four days over the switch to summer time (31 March).
        let start = 1_711_713_600;
        let t = ticks(start, start + 4 * DAY, (Unit::Day, 1.0), tz);
        let labels: Vec<String> = t
            .iter()
            .map(|&x| label(x, "%m/%d %H:%M", tz).unwrap())
            .collect();
        assert_eq!(
            labels,
            vec!["03/30 00:00", "03/31 00:00", "04/01 00:00", "04/02 00:00"]
        );
    }

    #[test]
    fn fractional_days_and_seconds() {
        let t = ticks(0, 10 * DAY, (Unit::Day, 3.5), Tz::UTC);
        assert_eq!(t, vec![0, 302_400, 604_800]);
        let t = ticks(7, 40, (Unit::Sec, 15.0), Tz::UTC);
        assert_eq!(t, vec![15, 30]);
    }

    #[test]
    fn out_of_range_times_give_no_ticks() {
        assert!(ticks(i64::MAX - 10, i64::MAX, (Unit::Hour, 1.0), Tz::UTC).is_empty());
        assert_eq!(label(i64::MAX, "%H", Tz::UTC), None);
        assert_eq!(label(0, "%Q", Tz::UTC), None);
    }
}
