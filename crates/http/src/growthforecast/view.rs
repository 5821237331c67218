//! What a GrowthForecast graph shows, as Graphite targets over its one stored series.
//!
//! GrowthForecast's workers wrote each graph's current number into RRD files every
//! 5 minutes (and every minute for the `s` ranges), plus a second data source with the
//! difference from the previous sample. sumi stores one point per post and derives the
//! same views when they are read, with Graphite functions:
//!
//! | view | target (before limits and adjust) |
//! | --- | --- |
//! | gauge, count, modified | `summarize(keepLastValue(S), R, avg)`: the number holds until the next post |
//! | derive | `summarize(scaleToSeconds(derivative(keepLastValue(interpolate(S))), 1), R, avg)`: the counter's rate, spread over the time between posts as RRD's DERIVE does |
//! | subtract | `summarize(summarize(derivative(keepLastValue(S)), B, sum), R, avg)`: the change per B (5 min, or 1 min for `s` ranges), averaged over R |
//! | subtract of a range read from an archive coarser than B | `summarize(scaleToSeconds(derivative(keepLastValue(S)), B), R, avg)`: the change per archive step, scaled to B seconds, averaged over R |
//!
//! The two subtract targets agree where both apply: averaged over `R`, the sums of
//! the changes in each B and the changes per step scaled to B are both the change
//! over `R` times `B / R`. But summing per B needs a value in every B (a coarse
//! archive has one per step, so each sum would be a whole step's change, `step / B`
//! times too much), and averaging the scaled changes needs every step known (a B or
//! `R` holding the first step of a range or of a graph would count its known changes
//! as if they spanned all of it), so the view picks by the archive's step
//! ([`data_step`]).
//!
//! `R` is the resolution GrowthForecast's title promises for the range (`Day (5min
//! avg)`: 5 minutes; week: 30 minutes; month: 2 hours; year: a day). Then
//! `removeAboveValue`/`removeBelowValue` apply `ulimit`/`llimit` (`sulimit`/`sllimit`
//! for subtract) and `scale` applies `adjust`/`adjustval`, in RRD's order.
//!
//! `keepLastValue` cannot see a post made before the range starts, so the graphs read
//! through [`SeededSource`], which puts the last value before the range into the first
//! slot (for a `derive` counter, the value interpolated at that time).

use std::collections::HashSet;

use chrono::{NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use sumi_model::glob::PathPattern;
use sumi_query::source::{FetchedSeries, FindNode, SeriesSource, SourceError};

use super::db::Graph;
use crate::params::Params;

/// What a graph of one data source draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gmode {
    Gauge,
    Subtract,
}

impl Gmode {
    /// `gauge` or `subtract`.
    pub fn parse(s: &str) -> Option<Gmode> {
        match s {
            "gauge" => Some(Gmode::Gauge),
            "subtract" => Some(Gmode::Subtract),
            _ => None,
        }
    }

    /// The name in URLs and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Gmode::Gauge => "gauge",
            Gmode::Subtract => "subtract",
        }
    }
}

/// The consolidation function (`cf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cf {
    Average,
    Max,
}

/// A request parameter GrowthForecast would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?}: {reason}")]
pub struct ParamError {
    pub name: &'static str,
    pub value: String,
    pub reason: &'static str,
}

fn bad(name: &'static str, value: &str, reason: &'static str) -> ParamError {
    ParamError {
        name,
        value: value.chars().take(64).collect(),
        reason,
    }
}

/// The range of a graph: GrowthForecast's `t` (with `from`/`to` for `c` and `sc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    /// The `t` it came from.
    pub term: String,
    pub title: String,
    pub from: i64,
    pub until: i64,
    /// Seconds per drawn value (`R`).
    pub resolution: i64,
    /// The interval a subtract is a difference over (`B`): 300, or 60 for `s` terms.
    pub base: i64,
}

/// Every `t` GrowthForecast accepts.
pub const TERMS: &[&str] = &[
    "y", "m", "w", "3d", "s3d", "d", "sd", "8h", "s8h", "4h", "s4h", "h", "sh", "n", "sn", "c",
    "sc",
];

const HOUR: i64 = 3600;
const DAY: i64 = 86400;

/// A date and time as GrowthForecast's `from`/`to` take them (HTTP::Date's common
/// forms): epoch seconds, `2024/01/31 12:00[:00]`, `2024-01-31[ T]12:00[:00]`, a date
/// alone, or RFC 3339 with an offset. Times without an offset are in `tz`.
pub fn parse_datetime(s: &str, tz: Tz) -> Option<i64> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(dt.timestamp());
    }
    const FORMATS: &[&str] = &[
        "%Y/%m/%d %H:%M:%S",
        "%Y/%m/%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ];
    let naive = FORMATS
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .or_else(|| {
            ["%Y/%m/%d", "%Y-%m-%d"]
                .iter()
                .find_map(|f| NaiveDate::parse_from_str(s, f).ok())
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })?;
    tz.from_local_datetime(&naive)
        .earliest()
        .map(|dt| dt.timestamp())
}

fn resolution_for_span(span: i64) -> (i64, &'static str) {
    // The RRA GrowthForecast's files would answer from: the finest that covers it.
    if span <= 5 * DAY {
        (300, "5min")
    } else if span <= 21 * DAY {
        (1800, "30min")
    } else if span <= 112 * DAY {
        (7200, "2hour")
    } else {
        (DAY, "1day")
    }
}

impl Period {
    /// The period of `t` at `now`, as GrowthForecast's `calc_period`.
    pub fn parse(
        term: Option<&str>,
        from: Option<&str>,
        to: Option<&str>,
        now: i64,
        tz: Tz,
    ) -> Result<Period, ParamError> {
        let term = term.filter(|t| !t.is_empty()).unwrap_or("d");
        if !TERMS.contains(&term) {
            return Err(bad("t", term, "invalid drawing term"));
        }
        let short = term.starts_with('s');
        let (base, base_name) = if short { (60, "1min") } else { (300, "5min") };
        let fixed = |span: i64, name: &str, res: i64, res_name: &str| Period {
            term: term.to_string(),
            title: format!("{name} ({res_name} avg)"),
            from: now - span,
            until: now,
            resolution: res,
            base,
        };
        Ok(match term {
            "h" | "sh" => fixed(2 * HOUR, "Hour", base, base_name),
            "n" | "sn" => fixed(14 * HOUR, "Half Day", base, base_name),
            "4h" | "s4h" => fixed(4 * HOUR, "4 Hours", base, base_name),
            "8h" | "s8h" => fixed(8 * HOUR, "8 Hours", base, base_name),
            "3d" | "s3d" => fixed(3 * DAY, "3 Days", base, base_name),
            "w" => fixed(8 * DAY, "Week", 1800, "30min"),
            "m" => fixed(35 * DAY, "Month", 7200, "2hour"),
            "y" => fixed(400 * DAY, "Year", DAY, "1day"),
            "c" | "sc" => {
                let from_text = from.unwrap_or("");
                let start = parse_datetime(from_text, tz)
                    .ok_or_else(|| bad("from", from_text, "invalid From datetime"))?;
                let end = match to.filter(|t| !t.is_empty()) {
                    Some(t) => {
                        parse_datetime(t, tz).ok_or_else(|| bad("to", t, "invalid To datetime"))?
                    }
                    None => now,
                };
                if start >= end {
                    return Err(bad("from", from_text, "from is not before to"));
                }
                let (res, _) = if short {
                    (60, "1min")
                } else {
                    resolution_for_span(end - start)
                };
                Period {
                    term: term.to_string(),
                    title: format!(
                        "{} to {}",
                        from_text,
                        to.filter(|t| !t.is_empty()).unwrap_or("now")
                    ),
                    from: start,
                    until: end,
                    resolution: res,
                    base,
                }
            }
            _ => fixed(33 * HOUR, "Day", base, base_name),
        })
    }

    /// The same period read at a coarser resolution (at least `step` seconds a value,
    /// and at most `max_rows` values), for exports.
    pub fn with_limits(mut self, step: Option<i64>, max_rows: Option<i64>) -> Period {
        if let Some(s) = step.filter(|s| *s > 0) {
            self.resolution = s.max(1);
        }
        if let Some(rows) = max_rows.filter(|r| *r > 0) {
            let span = self.until - self.from;
            let needed = span / self.resolution;
            if needed > rows {
                let factor = (needed + rows - 1) / rows;
                self.resolution *= factor;
            }
        }
        self
    }
}

fn interval(secs: i64) -> String {
    format!("'{secs}s'")
}

/// A number as a target argument (Rust's shortest round-trip form).
fn arg(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else if x > 0.0 {
        "1e308".into()
    } else {
        "-1e308".into()
    }
}

/// The target of one graph's view over `p`. `step` is the step of the archive the
/// graph's series is read from over `p` ([`data_step`]); it matters to the subtract
/// view only.
pub fn target(g: &Graph, gmode: Gmode, p: &Period, cf: Cf, step: i64) -> String {
    let s = &g.series;
    let agg = match cf {
        Cf::Average => "'avg'",
        Cf::Max => "'max'",
    };
    let res = interval(p.resolution);
    let (body, lo, hi) = match gmode {
        Gmode::Gauge => {
            let raw = if g.derive {
                format!("scaleToSeconds(derivative(keepLastValue(interpolate({s}))),1)")
            } else {
                format!("keepLastValue({s})")
            };
            (format!("summarize({raw},{res},{agg})"), g.llimit, g.ulimit)
        }
        Gmode::Subtract => {
            let diff = if step > p.base {
                // one value per step, coarser than B: its change is the change over
                // the step, of which B's share is what GrowthForecast's RRA averaged
                format!("scaleToSeconds(derivative(keepLastValue({s})),{})", p.base)
            } else {
                format!(
                    "summarize(derivative(keepLastValue({s})),{},'sum')",
                    interval(p.base)
                )
            };
            let body = if p.resolution == p.base {
                diff
            } else {
                format!("summarize({diff},{res},{agg})")
            };
            (body, g.sllimit, g.sulimit)
        }
    };
    let limited = format!(
        "removeBelowValue(removeAboveValue({body},{}),{})",
        arg(hi),
        arg(lo)
    );
    match adjust_factor(g) {
        Some(f) => format!("scale({limited},{})", arg(f)),
        None => limited,
    }
}

/// The step of the archive `series` is read from over `p` (whisper picks it by the
/// age of `p.from`), or `None` when the source has nothing for it. Asks for at most
/// two days from `p.from`: the archive is the same, and the coarsest step
/// GrowthForecast kept (a day) still has a slot in it.
pub fn data_step(
    source: &dyn SeriesSource,
    series: &str,
    p: &Period,
    now: i64,
) -> Result<Option<i64>, SourceError> {
    let until = p.until.min(p.from + 2 * DAY);
    let got = source.fetch(&[series.to_string()], p.from, until, now)?;
    Ok(got.first().map(|f| f.step))
}

/// The factor `adjust`/`adjustval` multiply by, unless it is 1 (or unusable).
fn adjust_factor(g: &Graph) -> Option<f64> {
    let v: f64 = g
        .adjustval
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v != 0.0)?;
    let f = if g.adjust == "/" { 1.0 / v } else { v };
    (f != 1.0).then_some(f)
}

/// The graph parameters GrowthForecast's `/graph` and `/xport` take (those that
/// change what sumi draws; the rest of rrdgraph's colours and fonts are ignored).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphParams {
    pub period: Period,
    /// `gmode` of the request (for a single graph without `gmode`, the graph's own).
    pub gmode: Option<Gmode>,
    pub width: u32,
    pub height: u32,
    pub graph_only: bool,
    pub logarithmic: bool,
    pub legend: bool,
    pub no_title: bool,
    pub vertical_label: Option<String>,
    pub upper_limit: Option<f64>,
    pub lower_limit: Option<f64>,
    pub rigid: bool,
    pub sumup: Option<bool>,
    pub step: Option<i64>,
    pub cf: Cf,
    pub background: Option<String>,
    pub font_color: Option<String>,
    pub vrule_legend: bool,
    /// sumi's extension: `format=svg`.
    pub svg: bool,
}

fn flag(p: &Params, name: &'static str, default: bool) -> Result<bool, ParamError> {
    match p.get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(v) => Err(bad(name, v, "expected 0 or 1")),
    }
}

fn natural(p: &Params, name: &'static str, default: u32) -> Result<u32, ParamError> {
    match p.get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=4000).contains(n))
            .ok_or_else(|| bad(name, v, "expected a whole number of pixels from 1 to 4000")),
    }
}

fn number(p: &Params, name: &'static str) -> Result<Option<f64>, ParamError> {
    match p.get(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| bad(name, v, "expected a number")),
    }
}

fn hex_color(p: &Params, name: &'static str) -> Result<Option<String>, ParamError> {
    match p.get(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => {
            let h = v.trim_start_matches('#');
            if (h.len() == 6 || h.len() == 8) && h.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(Some(h.to_string()))
            } else {
                Err(bad(name, v, "expected a colour such as f3f3f3"))
            }
        }
    }
}

impl GraphParams {
    /// Reads the parameters of a `/graph`, `/xport` or `/summary` request.
    pub fn parse(p: &Params, now: i64, tz: Tz) -> Result<GraphParams, ParamError> {
        let period = Period::parse(p.get("t"), p.get("from"), p.get("to"), now, tz)?;
        let gmode = match p.get("gmode").filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => {
                Some(Gmode::parse(v).ok_or_else(|| bad("gmode", v, "invalid drawing data"))?)
            }
        };
        let cf = match p.get("cf").filter(|v| !v.is_empty()) {
            None | Some("AVERAGE") => Cf::Average,
            Some("MAX") => Cf::Max,
            Some(v) => return Err(bad("cf", v, "invalid consolidation function")),
        };
        let step = match p.get("step").filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => Some(
                v.parse::<i64>()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| bad("step", v, "invalid step size"))?,
            ),
        };
        let sumup = match p.get("sumup").filter(|v| !v.is_empty()) {
            None => None,
            Some(_) => Some(flag(p, "sumup", false)?),
        };
        Ok(GraphParams {
            period,
            gmode,
            width: natural(p, "width", 390)?,
            height: natural(p, "height", 110)?,
            graph_only: flag(p, "graphonly", false)?,
            logarithmic: flag(p, "logarithmic", false)?,
            legend: flag(p, "legend", true)?,
            no_title: flag(p, "notitle", false)?,
            vertical_label: p
                .get("vertical_label")
                .filter(|v| !v.is_empty())
                .map(str::to_string),
            upper_limit: number(p, "upper_limit")?,
            lower_limit: number(p, "lower_limit")?,
            rigid: flag(p, "rigid", false)?,
            sumup,
            step,
            cf,
            background: hex_color(p, "background_color")?,
            font_color: hex_color(p, "font_color")?,
            vrule_legend: flag(p, "vrule_legend", true)?,
            svg: p.get("format") == Some("svg"),
        })
    }
}

/// A source that fills the first slot of a series with the value it had when the
/// range started (the last point before it), so that `keepLastValue` draws a graph
/// posted before the range from its first pixel.
pub struct SeededSource<'a> {
    inner: &'a dyn SeriesSource,
    /// Counters: the seed is interpolated between the points around the start.
    interpolate: HashSet<String>,
}

impl<'a> SeededSource<'a> {
    /// Seeds fetches from `inner`; `counters` are the series whose seed is interpolated.
    pub fn new(
        inner: &'a dyn SeriesSource,
        counters: impl IntoIterator<Item = String>,
    ) -> SeededSource<'a> {
        SeededSource {
            inner,
            interpolate: counters.into_iter().collect(),
        }
    }

    /// The last known `(time, value)` before `from`, looking back further each time.
    fn last_before(
        &self,
        path: &str,
        from: i64,
        span: i64,
        now: i64,
    ) -> Result<Option<(i64, f64)>, SourceError> {
        let paths = [path.to_string()];
        for lookback in [span.max(HOUR), 8 * DAY, 400 * DAY] {
            let got = self.inner.fetch(&paths, from - lookback, from, now)?;
            for f in got {
                let last = f
                    .values
                    .iter()
                    .enumerate()
                    .rev()
                    .find_map(|(i, v)| v.map(|v| (f.start + i as i64 * f.step, v)));
                if last.is_some() {
                    return Ok(last);
                }
            }
        }
        Ok(None)
    }
}

impl SeriesSource for SeededSource<'_> {
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        self.inner.find(pattern)
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        let mut out = self.inner.fetch(paths, from, until, now)?;
        for f in &mut out {
            if f.values.first().is_none_or(|v| v.is_some()) {
                continue;
            }
            let Some((t0, v0)) = self.last_before(&f.path, f.start, until - from, now)? else {
                continue;
            };
            let seed = if self.interpolate.contains(&f.path) {
                // the value of the counter at the first slot, on the line to the next point
                let next = f
                    .values
                    .iter()
                    .enumerate()
                    .find_map(|(i, v)| v.map(|v| (f.start + i as i64 * f.step, v)));
                match next {
                    Some((t1, v1)) if t1 > t0 => {
                        v0 + (v1 - v0) * (f.start - t0) as f64 / (t1 - t0) as f64
                    }
                    _ => v0,
                }
            } else {
                v0
            };
            if let Some(first) = f.values.first_mut() {
                *first = Some(seed);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growthforecast::json::tests::graph;
    use sumi_query::memory::MemorySource;

    #[test]
    fn periods_as_growthforecast() {
        let now = 1_700_000_000;
        let p = Period::parse(None, None, None, now, Tz::UTC).unwrap();
        assert_eq!(
            (p.title.as_str(), p.from, p.resolution),
            ("Day (5min avg)", now - 33 * 3600, 300)
        );
        let p = Period::parse(Some("sh"), None, None, now, Tz::UTC).unwrap();
        assert_eq!(
            (p.title.as_str(), p.from, p.resolution, p.base),
            ("Hour (1min avg)", now - 7200, 60, 60)
        );
        let p = Period::parse(Some("y"), None, None, now, Tz::UTC).unwrap();
        assert_eq!(
            (p.title.as_str(), p.resolution, p.base),
            ("Year (1day avg)", 86400, 300)
        );
        let p = Period::parse(
            Some("c"),
            Some("2023/11/01 00:00:00"),
            Some("2023-11-20"),
            now,
            Tz::UTC,
        )
        .unwrap();
        assert_eq!(
            (p.from, p.until, p.resolution),
            (1_698_796_800, 1_698_796_800 + 19 * 86400, 1800)
        );
        assert_eq!(p.title, "2023/11/01 00:00:00 to 2023-11-20");
        assert!(Period::parse(Some("x"), None, None, now, Tz::UTC).is_err());
        assert!(Period::parse(Some("c"), Some("soon"), None, now, Tz::UTC).is_err());
        assert!(Period::parse(
            Some("c"),
            Some("2023-11-20"),
            Some("2023-11-01"),
            now,
            Tz::UTC
        )
        .is_err());
    }

    #[test]
    fn datetimes() {
        assert_eq!(parse_datetime("1700000000", Tz::UTC), Some(1_700_000_000));
        assert_eq!(
            parse_datetime("2023-11-14T22:13:20Z", Tz::UTC),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_datetime("2023/11/14 22:13:20", Tz::UTC),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_datetime("2023/11/15 07:13:20", Tz::Asia__Tokyo),
            Some(1_700_000_000)
        );
        assert_eq!(parse_datetime("yesterday", Tz::UTC), None);
    }

    #[test]
    fn limits_for_exports() {
        let p = Period::parse(Some("d"), None, None, 1_700_000_000, Tz::UTC).unwrap();
        // 33 h at 5 min is 396 rows; 390 allowed doubles the step
        assert_eq!(p.clone().with_limits(None, Some(390)).resolution, 600);
        assert_eq!(p.clone().with_limits(Some(60), None).resolution, 60);
        assert_eq!(p.with_limits(None, Some(1000)).resolution, 300);
    }

    #[test]
    fn targets() {
        let p = Period::parse(Some("w"), None, None, 1_700_000_000, Tz::UTC).unwrap();
        let mut g = graph(1, "s", "t", "g");
        assert_eq!(
            target(&g, Gmode::Gauge, &p, Cf::Average, 60),
            "removeBelowValue(removeAboveValue(summarize(keepLastValue(s.t.g),'1800s','avg'),1000000000000000.0),-1000000000.0)"
        );
        g.adjust = "/".into();
        g.adjustval = "8".into();
        assert_eq!(
            target(&g, Gmode::Subtract, &p, Cf::Max, 60),
            "scale(removeBelowValue(removeAboveValue(summarize(summarize(derivative(keepLastValue(s.t.g)),'300s','sum'),'1800s','max'),100000.0),-100000.0),0.125)"
        );
        // read from a 30-minute archive (a graph imported from GrowthForecast)
        assert_eq!(
            target(&g, Gmode::Subtract, &p, Cf::Max, 1800),
            "scale(removeBelowValue(removeAboveValue(summarize(scaleToSeconds(derivative(keepLastValue(s.t.g)),300),'1800s','max'),100000.0),-100000.0),0.125)"
        );
        g.derive = true;
        g.adjustval = "1".into();
        assert!(target(&g, Gmode::Gauge, &p, Cf::Average, 60).contains(
            "summarize(scaleToSeconds(derivative(keepLastValue(interpolate(s.t.g))),1),'1800s','avg')"
        ));
    }

    #[test]
    fn subtract_of_a_coarse_archive_is_the_change_per_base() {
        // a count graph's number, every minute for ten hours, rising by 1 to 7 a
        // minute in the same pattern each hour (D an hour); once as stored (1-minute
        // archive), once as an hourly archive holds it (the mean of each hour)
        let now = 1_700_006_400; // a multiple of 2 hours
        let h0 = now - 12 * HOUR;
        let per_minute = |m: i64| (1 + m % 60 % 7) as f64;
        let hour_total: f64 = (0..60).map(per_minute).sum();
        let mut v = 0.0;
        let fine: Vec<Option<f64>> = (0..600)
            .map(|m| {
                v += per_minute(m);
                Some(v)
            })
            .collect();
        let coarse: Vec<Option<f64>> = fine
            .chunks(60)
            .map(|h| Some(h.iter().flatten().sum::<f64>() / 60.0))
            .collect();
        let mut mem = MemorySource::new();
        mem.add("a.fine.g", 60, 40 * DAY, h0, &fine);
        mem.add("a.coarse.g", HOUR, 40 * DAY, h0, &coarse);
        let p = Period::parse(Some("m"), None, None, now, Tz::UTC).unwrap();
        let registry = sumi_query::Registry::standard();
        let evaluator = sumi_query::Evaluator::new(&mem, &registry);
        let ctx = sumi_query::RequestContext::new(
            sumi_query::TimeRange {
                from: p.from,
                until: p.until,
                now,
            },
            Tz::UTC,
        );
        let mut views = Vec::new();
        for name in ["fine", "coarse"] {
            let g = graph(1, "a", name, "g");
            let step = data_step(&mem, &g.series, &p, now).unwrap().unwrap();
            assert_eq!(step, if name == "fine" { 60 } else { HOUR });
            let t = target(&g, Gmode::Subtract, &p, Cf::Average, step);
            let got = evaluator.evaluate_targets(&ctx, &[t]).unwrap();
            assert_eq!(got[0].step, 7200);
            views.push(got.into_iter().next().unwrap());
        }
        // each 2 hours after the first hour, up to the last: the mean change per 5
        // minutes is D / 12, from either archive (summing the coarse one's changes per
        // 5 minutes would make it D, a whole hour's)
        let mut checked = 0;
        for s in (h0 + 2 * HOUR..now - 2 * HOUR).step_by(7200) {
            for view in &views {
                let i = ((s - view.start) / view.step) as usize;
                let got = view.values[i].unwrap();
                assert!(
                    (got - hour_total / 12.0).abs() < 1e-9,
                    "{} at {s}: {got}",
                    view.name
                );
            }
            checked += 1;
        }
        assert_eq!(checked, 4);
    }

    #[test]
    fn seeds_the_first_slot() {
        let mut mem = MemorySource::new();
        // a gauge posted at 120 and 720; a counter at 120 (0) and 1320 (1200)
        let mut gauge = vec![None; 11];
        gauge[0] = Some(5.0);
        gauge[10] = Some(7.0);
        mem.add("a.b.gauge", 60, 86400, 120, &gauge);
        let mut counter = vec![None; 21];
        counter[0] = Some(0.0);
        counter[20] = Some(1200.0);
        mem.add("a.b.ctr", 60, 86400, 120, &counter);
        let seeded = SeededSource::new(&mem, ["a.b.ctr".to_string()]);
        let got = seeded
            .fetch(
                &["a.b.gauge".to_string(), "a.b.ctr".to_string()],
                339,
                1400,
                1400,
            )
            .unwrap();
        let gauge = got.iter().find(|f| f.path == "a.b.gauge").unwrap();
        assert_eq!(gauge.values[0], Some(5.0));
        let ctr = got.iter().find(|f| f.path == "a.b.ctr").unwrap();
        // the first slot is at 360: 240 s into a 1200 s climb of 1200
        assert_eq!(ctr.start, 360);
        assert_eq!(ctr.values[0], Some(240.0));
    }
}
