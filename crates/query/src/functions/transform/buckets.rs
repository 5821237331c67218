//! Transform functions that regroup points into buckets of a fixed interval:
//! `summarize`, `smartSummarize` and `hitcount`.
//!
//! `summarize` aligns its buckets to whole intervals since the epoch (or to the
//! series' start with `alignToFrom`); `smartSummarize` starts them at the request's
//! `from`, optionally rounded down to a calendar unit (`alignTo`), and fetches again
//! from there; `hitcount` treats values as rates per second and spreads each point's
//! hits over the buckets its step overlaps.
//!
//! Deliberate differences: an interval that is not positive is refused as bad input
//! (graphite-web divides by zero, or for a negative interval never returns). Calendar
//! alignment uses the request's time zone at the request's start (graphite-web does the
//! same through `datetime`, with `pytz`'s offset of that instant).

use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};

use crate::attime::parse_time_offset;
use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::{row, AggFunc};
use crate::functions::align::copy_of;
use crate::functions::args::{eval_first_arg, input_error, take_series};
use crate::functions::Invocation;
use crate::series::TimeSeries;

type Output = Result<Value, QueryError>;

/// The most buckets one series may be cut into (graphite-web has no limit; a 1 s
/// interval over a year would hold tens of millions of them).
const MAX_BUCKETS: i64 = 10_000_000;

fn too_many(function: &str) -> QueryError {
    input_error(
        function,
        format!("the interval cuts a series into more than {MAX_BUCKETS} buckets"),
    )
}

/// graphite-web's `_summarizeValues(series, func, interval, newStart, newEnd)`: the
/// values from `new_start` up to `new_end` in buckets of `interval` seconds, each the
/// aggregate of the points from the bucket's start (a point exactly there, or the last
/// one before it for the first bucket) to its end, or `None` when fewer than
/// xFilesFactor of the bucket's points are known. Also returns where the last bucket
/// ends. `None` when the interval or step is not positive, or the buckets would be
/// more than [`MAX_BUCKETS`].
pub(crate) fn summarize_values(
    series: &TimeSeries,
    func: AggFunc,
    interval: i64,
    new_start: i64,
    new_end: i64,
) -> Option<(Vec<Option<f64>>, i64)> {
    if interval <= 0 || series.step <= 0 || (new_end - new_start) / interval > MAX_BUCKETS {
        return None;
    }
    let points = row(series);
    let timestamps =
        usize::try_from((series.end - series.start + series.step - 1).div_euclid(series.step))
            .unwrap_or(0);
    let count = timestamps.min(points.len());
    let ts = |i: usize| series.start + i as i64 * series.step;
    let interval_points = interval as f64 / series.step as f64;
    let mut values = Vec::new();
    let mut i = 0usize;
    let mut t = new_start;
    while t < new_end {
        let mut s = i;
        let mut known = 0usize;
        while i < count && ts(i) < t + interval {
            if ts(i) <= t {
                s = i;
            }
            if ts(i) >= t && points[i].is_some() {
                known += 1;
            }
            i += 1;
        }
        let enough = known > 0 && known as f64 / interval_points >= series.x_files_factor;
        values.push(if enough {
            func.apply(&points[s..i])
        } else {
            None
        });
        t += interval;
    }
    Some((values, t))
}

/// The interval parameter in seconds (`Interval`-typed, so it parses), positive.
fn interval(inv: &Invocation<'_>, i: usize) -> Result<(String, i64), QueryError> {
    let text = inv.args.str(i).unwrap_or("").to_string();
    let seconds = parse_time_offset(&text).map_err(|e| input_error(inv.name, e.to_string()))?;
    if seconds <= 0 {
        return Err(input_error(
            inv.name,
            format!("the interval {text:?} must be positive"),
        ));
    }
    Ok((text, seconds))
}

/// The aggregation function parameter (`summarize` accepts only the plain names).
fn func(inv: &Invocation<'_>, i: usize) -> Result<(String, AggFunc), QueryError> {
    let name = inv.args.str(i).unwrap_or("sum").to_string();
    let f = AggFunc::from_name(&name).ok_or_else(|| {
        input_error(
            inv.name,
            format!("unsupported aggregation function: {name}"),
        )
    })?;
    Ok((name, f))
}

/// `summarize(seriesList, intervalString, func='sum', alignToFrom=False)`.
pub(super) fn summarize(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (text, interval) = interval(&inv, 1)?;
    let (func_name, f) = func(&inv, 2)?;
    let align_to_from = inv.args.bool(3).unwrap_or(false);
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let (start, end) = if align_to_from {
            (s.start, s.end)
        } else {
            (
                s.start - s.start.rem_euclid(interval),
                s.end - s.end.rem_euclid(interval) + interval,
            )
        };
        let Some((values, aligned_end)) = summarize_values(&s, f, interval, start, end) else {
            return Err(too_many(inv.name));
        };
        s.tags.set("summarize", &text);
        s.tags.set("summarizeFunction", &func_name);
        let name = format!(
            "summarize({}, \"{text}\", \"{func_name}\"{})",
            s.name,
            if align_to_from { ", true" } else { "" }
        );
        let mut r = copy_of(&s, name, values);
        r.start = start;
        r.end = if align_to_from { aligned_end } else { end };
        r.step = interval;
        out.push(r);
    }
    Ok(Value::SeriesList(out))
}

/// The request's `from` rounded down to a calendar unit, with the UTC offset the time
/// zone has at `from` (graphite-web builds a `datetime` with that instant's `tzinfo`).
fn align_start(ctx: &RequestContext, unit: &str) -> Result<i64, String> {
    let offset = ctx
        .tz
        .offset_from_utc_datetime(
            &chrono::DateTime::from_timestamp(ctx.from, 0)
                .ok_or("the start is out of range")?
                .naive_utc(),
        )
        .fix()
        .local_minus_utc() as i64;
    let local = chrono::DateTime::from_timestamp(ctx.from + offset, 0)
        .ok_or("the start is out of range")?
        .naive_utc();
    let date = local.date();
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0);
    let aligned: Option<NaiveDateTime> = match unit_of(unit)? {
        Unit::Years => NaiveDate::from_ymd_opt(date.year(), 1, 1).and_then(midnight),
        Unit::Months => NaiveDate::from_ymd_opt(date.year(), date.month(), 1).and_then(midnight),
        Unit::Weeks => {
            let wanted = match unit.chars().last() {
                Some(c) if c.is_ascii_digit() => i64::from(c.to_digit(10).unwrap_or(1)),
                _ => 1,
            };
            let mut back = i64::from(date.weekday().number_from_monday()) - wanted;
            if back < 0 {
                back += 7;
            }
            midnight(date).map(|m| m - chrono::Duration::days(back))
        }
        Unit::Days => midnight(date),
        Unit::Hours => date.and_hms_opt(local.hour(), 0, 0),
        Unit::Minutes => date.and_hms_opt(local.hour(), local.minute(), 0),
        Unit::Seconds => Some(local),
    };
    let aligned = aligned.ok_or("the aligned start is out of range")?;
    Ok(aligned.and_utc().timestamp() - offset)
}

enum Unit {
    Seconds,
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
    Years,
}

/// graphite-web's `getUnitString`: a unit by its first letters.
fn unit_of(s: &str) -> Result<Unit, String> {
    Ok(if s.starts_with('s') {
        Unit::Seconds
    } else if s.starts_with("min") {
        Unit::Minutes
    } else if s.starts_with('h') {
        Unit::Hours
    } else if s.starts_with('d') {
        Unit::Days
    } else if s.starts_with('w') {
        Unit::Weeks
    } else if s.starts_with("mon") {
        Unit::Months
    } else if s.starts_with('y') {
        Unit::Years
    } else {
        return Err(format!("invalid offset unit {s:?}"));
    })
}

/// `smartSummarize(seriesList, intervalString, func='sum', alignTo=None)`.
pub(super) fn smart_summarize(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (text, interval) = interval(&inv, 1)?;
    let (func_name, f) = func(&inv, 2)?;
    // a boolean is the deprecated alignToFrom, which graphite-web ignores
    let align_to = inv.args.str(3).map(str::to_string);
    let series = match align_to {
        Some(unit) => {
            let from = align_start(ctx, &unit).map_err(|e| input_error(inv.name, e))?;
            let aligned = ctx.with_interval(from, ctx.until);
            eval_first_arg(session, &aligned, &inv)?
        }
        None => take_series(&mut inv, 0),
    };
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let Some((values, aligned_end)) = summarize_values(&s, f, interval, s.start, s.end) else {
            return Err(too_many(inv.name));
        };
        s.tags.set("smartSummarize", &text);
        s.tags.set("smartSummarizeFunction", &func_name);
        let name = format!("smartSummarize({}, \"{text}\", \"{func_name}\")", s.name);
        let mut r = copy_of(&s, name, values);
        r.end = aligned_end;
        r.step = interval;
        out.push(r);
    }
    Ok(Value::SeriesList(out))
}

/// `hitcount(seriesList, intervalString, alignToInterval=False)`.
pub(super) fn hitcount(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (text, interval) = interval(&inv, 1)?;
    let align = inv.args.bool(2).unwrap_or(false);
    let series = if align {
        let unit = if interval >= 86_400 {
            "days"
        } else if interval >= 3_600 {
            "hours"
        } else if interval >= 60 {
            "minutes"
        } else {
            "seconds"
        };
        let from = align_start(ctx, unit).map_err(|e| input_error(inv.name, e))?;
        let mut series = eval_first_arg(session, &ctx.with_interval(from, ctx.until), &inv)?;
        for s in &mut series {
            let count = (s.end - s.start).div_euclid(interval);
            s.end = s.start + count * interval + interval;
        }
        series
    } else {
        take_series(&mut inv, 0)
    };
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let step = s.step;
        let buckets_len = ((s.end - s.start) as f64 / interval as f64).ceil();
        let buckets_len = if buckets_len > 0.0 {
            buckets_len as i64
        } else {
            0
        };
        let new_start = s.end - buckets_len * interval;
        if buckets_len > MAX_BUCKETS {
            return Err(too_many(inv.name));
        }
        // each bucket's sum, added to in the order graphite-web appends to its list
        let mut buckets: Vec<Option<f64>> = vec![None; usize::try_from(buckets_len).unwrap_or(0)];
        {
            let mut put = |b: i64, x: f64| {
                if let Some(bucket) = usize::try_from(b).ok().and_then(|b| buckets.get_mut(b)) {
                    *bucket = Some(bucket.unwrap_or(0.0) + x);
                }
            };
            for (i, v) in row(&s).iter().enumerate() {
                let Some(v) = *v else {
                    continue;
                };
                let start_time = s.start + i as i64 * step;
                let (start_bucket, start_mod) = (
                    (start_time - new_start).div_euclid(interval),
                    (start_time - new_start).rem_euclid(interval),
                );
                let end_time = start_time + step;
                let (mut end_bucket, mut end_mod) = (
                    (end_time - new_start).div_euclid(interval),
                    (end_time - new_start).rem_euclid(interval),
                );
                if end_bucket >= buckets_len {
                    end_bucket = buckets_len - 1;
                    end_mod = interval;
                }
                if start_bucket == end_bucket {
                    if start_bucket >= 0 {
                        put(start_bucket, v * (end_mod - start_mod) as f64);
                    }
                } else {
                    if start_bucket >= 0 {
                        put(start_bucket, v * (interval - start_mod) as f64);
                    }
                    let hits = v * interval as f64;
                    for j in start_bucket + 1..end_bucket {
                        put(j, hits);
                    }
                    if end_mod > 0 {
                        put(end_bucket, v * end_mod as f64);
                    }
                }
            }
        }
        let values = buckets;
        s.tags.set("hitcount", &text);
        let name = format!(
            "hitcount({}, \"{text}\"{})",
            s.name,
            if align { ", true" } else { "" }
        );
        let mut r = copy_of(&s, name, values);
        r.start = new_start;
        r.step = interval;
        out.push(r);
    }
    Ok(Value::SeriesList(out))
}
