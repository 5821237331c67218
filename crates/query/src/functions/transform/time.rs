//! Transform functions that move series in time: `timeShift`, `timeStack`, and
//! `timeSlice` (which blanks what lies outside a window).
//!
//! `timeShift` and `timeStack` evaluate their first argument again over the shifted
//! interval (so it must be written as the first positional argument, as graphite-web
//! requires) and lay the result over the original series' interval.
//!
//! Deliberate differences:
//! - `timeSlice` reads its bounds against the request's `now` and time zone
//!   (graphite-web reads them against the wall clock, so `-1h` there ignores `now=`);
//!   its window starts counting at the request's `from`, as graphite-web's does.
//! - `timeShift(…, alignDst=true)` asks whether the request's time zone is in daylight
//!   saving time (graphite-web asks the server's local zone, which the request cannot
//!   choose).
//! - An empty shift is refused as bad input (graphite-web fails indexing it).

use chrono::TimeZone;
use chrono_tz::OffsetComponents;

use crate::attime::{parse_at_time, parse_time_offset};
use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::row;
use crate::functions::args::{eval_first_arg, input_error, take_series};
use crate::functions::Invocation;

use super::pointwise::rename;

type Output = Result<Value, QueryError>;

/// The most shifted copies `timeStack` makes (each is a fetch; graphite-web has no
/// limit).
const MAX_SHIFTS: i64 = 1_000;

/// A shift as graphite-web reads it: a leading digit means "ago" (`1d` is `-1d`).
/// The text as it will appear in names and tags, and the seconds.
fn shift(inv: &Invocation<'_>, i: usize, default: &str) -> Result<(String, i64), QueryError> {
    let raw = inv.args.str(i).unwrap_or(default);
    let Some(first) = raw.chars().next() else {
        return Err(input_error(inv.name, "the shift is empty"));
    };
    let text = if first.is_ascii_digit() {
        format!("-{raw}")
    } else {
        raw.to_string()
    };
    let seconds = parse_time_offset(&text).map_err(|e| input_error(inv.name, e.to_string()))?;
    Ok((text, seconds))
}

/// Whether the request's time zone observes daylight saving time at `t`.
fn in_dst(ctx: &RequestContext, t: i64) -> bool {
    chrono::DateTime::from_timestamp(t, 0).is_some_and(|utc| {
        let offset = ctx.tz.offset_from_utc_datetime(&utc.naive_utc());
        !offset.dst_offset().is_zero()
    })
}

/// `timeShift(seriesList, timeShift, resetEnd=True, alignDst=False)`.
pub(super) fn time_shift(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (text, delta) = shift(&inv, 1, "")?;
    let reset_end = inv.args.bool(2).unwrap_or(true);
    let align_dst = inv.args.bool(3).unwrap_or(false);
    let (mut from, mut until) = (ctx.from + delta, ctx.until + delta);
    if align_dst {
        let request = (in_dst(ctx, ctx.from), in_dst(ctx, ctx.until));
        let shifted = (in_dst(ctx, from), in_dst(ctx, until));
        let adjust = match (request, shifted) {
            ((true, true), (false, false)) => 3_600,
            ((false, false), (true, true)) => -3_600,
            _ => 0,
        };
        from += adjust;
        until += adjust;
    }
    let series = take_series(&mut inv, 0);
    let Some(first) = series.first() else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    let (start, end) = (first.start, first.end);
    let mut shifted = eval_first_arg(session, &ctx.with_interval(from, until), &inv)?;
    for s in &mut shifted {
        s.tags.set("timeShift", &text);
        s.name = format!("timeShift({}, \"{text}\")", s.name);
        s.end = if reset_end {
            end
        } else {
            s.end - s.start + start
        };
        s.start = start;
    }
    Ok(Value::SeriesList(shifted))
}

/// `timeStack(seriesList, timeShiftUnit='1d', timeShiftStart=0, timeShiftEnd=7)`: the
/// series shifted by each multiple of the unit from start to end (excluded).
pub(super) fn time_stack(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (text, delta) = shift(&inv, 1, "1d")?;
    let from_n = inv.args.int(2).unwrap_or(0);
    let to_n = inv.args.int(3).unwrap_or(7);
    if to_n.saturating_sub(from_n) > MAX_SHIFTS {
        return Err(input_error(
            inv.name,
            format!("more than {MAX_SHIFTS} shifts"),
        ));
    }
    let series = take_series(&mut inv, 0);
    let Some(first) = series.first() else {
        return Ok(Value::SeriesList(Vec::new()));
    };
    let (start, end) = (first.start, first.end);
    let mut out = Vec::new();
    for n in from_n..to_n {
        let d = delta.saturating_mul(n);
        let shifted_ctx =
            ctx.with_interval(ctx.from.saturating_add(d), ctx.until.saturating_add(d));
        for mut s in eval_first_arg(session, &shifted_ctx, &inv)? {
            s.tags.set("timeShiftUnit", &text);
            s.tags.set("timeShift", &n.to_string());
            let name = format!("timeShift({}, {text}, {n})", s.name);
            rename(&mut s, name);
            s.start = start;
            s.end = end;
            out.push(s);
        }
    }
    Ok(Value::SeriesList(out))
}

/// A `date` parameter: a time expression (or an epoch given as a number).
fn date(
    inv: &Invocation<'_>,
    ctx: &RequestContext,
    i: usize,
    default: &str,
) -> Result<i64, QueryError> {
    let text = match inv.args.get(i) {
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Int(n)) => n.to_string(),
        Some(Value::Float(x)) => format!("{}", x.trunc()),
        _ => default.to_string(),
    };
    parse_at_time(&text, ctx.tz, ctx.now).map_err(|e| input_error(inv.name, e.to_string()))
}

/// `timeSlice(seriesList, startSliceAt, endSliceAt='now')`: values outside the window
/// (both ends included) become null.
pub(super) fn time_slice(
    _: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let start = date(&inv, ctx, 1, "now")?;
    let end = date(&inv, ctx, 2, "now")?;
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.tags.set("timeSliceStart", &start.to_string());
        s.tags.set("timeSliceEnd", &end.to_string());
        s.name = format!("timeSlice({}, {start}, {end})", s.name);
        let view = row(s).into_owned();
        let mut t = ctx.from;
        for (slot, v) in s.values.iter_mut().zip(view) {
            if v.is_none() || t < start || t > end {
                *slot = None;
            }
            t += s.step;
        }
    }
    Ok(Value::SeriesList(series))
}
