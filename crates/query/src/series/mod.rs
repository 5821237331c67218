//! A series as graphite-web's functions and renderers see it (`datalib.TimeSeries`),
//! and its consolidation into fewer, wider points.
//!
//! Values sit in one contiguous `Vec<Option<f64>>`, slot `i` at `start + i * step`;
//! `None` is a missing point (graphite-web's `None`), distinct from a stored NaN.
//! `values_per_point > 1` makes every reader see consolidated values, as graphite-web's
//! `TimeSeries.__iter__` does; [`TimeSeries::consolidated`] is that view.
//!
//! - [`fetched`]: series fetched in bulk, held compactly ([`FetchedSet`]).
//! - [`answer`]: a request's series in order, built lazily from such a set
//!   ([`Answer`]), for renderers.

mod answer;
pub(crate) mod fetched;
mod options;
mod tags;

pub use answer::{Answer, AnswerSeries};
pub use fetched::FetchedSet;
pub use options::SeriesOptions;
pub use tags::Tags;

use std::fmt;
use std::str::FromStr;

/// How `values_per_point` slots become one point (`consolidateBy`, and the JSON
/// renderer's `maxDataPoints`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Consolidation {
    #[default]
    Average,
    Sum,
    Min,
    Max,
    First,
    Last,
    /// The average with missing slots counted as zero.
    AvgZero,
}

impl Consolidation {
    /// The name graphite-web uses (`consolidationFunc`).
    pub fn name(self) -> &'static str {
        match self {
            Consolidation::Average => "average",
            Consolidation::Sum => "sum",
            Consolidation::Min => "min",
            Consolidation::Max => "max",
            Consolidation::First => "first",
            Consolidation::Last => "last",
            Consolidation::AvgZero => "avg_zero",
        }
    }
}

impl fmt::Display for Consolidation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A consolidation function name graphite-web does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid consolidation function {0:?} (expected sum, average, avg, avg_zero, min, max, first or last)")]
pub struct UnknownConsolidation(pub String);

impl FromStr for Consolidation {
    type Err = UnknownConsolidation;

    /// The names graphite-web accepts, with its alias `avg`.
    fn from_str(s: &str) -> Result<Consolidation, UnknownConsolidation> {
        Ok(match s {
            "average" | "avg" => Consolidation::Average,
            "sum" => Consolidation::Sum,
            "min" => Consolidation::Min,
            "max" => Consolidation::Max,
            "first" => Consolidation::First,
            "last" => Consolidation::Last,
            "avg_zero" => Consolidation::AvgZero,
            _ => return Err(UnknownConsolidation(s.to_string())),
        })
    }
}

/// One series: graphite-web's `TimeSeries`.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    pub name: String,
    /// Epoch seconds of the first slot.
    pub start: i64,
    /// Epoch seconds just past the last slot (as whisper reports it).
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
    /// The target text this series came from (the path pattern for fetched series);
    /// functions use it to name their results.
    pub path_expression: String,
    pub tags: Tags,
    pub consolidation: Consolidation,
    /// Fraction of known slots a consolidated point needs; below it the point is `None`.
    pub x_files_factor: f64,
    /// Slots per point when read; 1 means unconsolidated.
    pub values_per_point: usize,
    /// Drawing options set by graph functions (graphite-web's `options` and `color`).
    pub options: SeriesOptions,
}

impl TimeSeries {
    /// Whether graphite-web's name of this series is Python's `None` rather than a
    /// string (`verticalLine()` without a label): renderers write `null` (JSON), `None`
    /// (pickle, msgpack) or an empty field (csv) for it. Functions that format the
    /// name into another (`"%s" % None`) get `None`, which the name holds; a series
    /// renamed since keeps its new name.
    pub fn name_is_none(&self) -> bool {
        self.options.unnamed && self.name == "None"
    }

    /// A series named `name` with graphite-web's defaults: path expression = name,
    /// tags parsed from the name, average consolidation, xFilesFactor 0, one value per
    /// point.
    pub fn new(
        name: impl Into<String>,
        start: i64,
        end: i64,
        step: i64,
        values: Vec<Option<f64>>,
    ) -> TimeSeries {
        let name = name.into();
        TimeSeries::with_path_expression(name.clone(), name, start, end, step, values)
    }

    /// [`new`](Self::new) with its path expression given (the glob it was fetched for)
    /// rather than copied from the name: one allocation less a series when a glob's
    /// millions of series are read.
    pub fn with_path_expression(
        name: String,
        path_expression: String,
        start: i64,
        end: i64,
        step: i64,
        values: Vec<Option<f64>>,
    ) -> TimeSeries {
        TimeSeries {
            tags: Tags::from_name(&name),
            path_expression,
            name,
            start,
            end,
            step,
            values,
            consolidation: Consolidation::Average,
            x_files_factor: 0.0,
            values_per_point: 1,
            options: SeriesOptions::default(),
        }
    }

    /// Sets `values_per_point` (graphite-web's `consolidate()`).
    #[cfg(test)]
    pub(crate) fn consolidate(&mut self, values_per_point: usize) {
        self.values_per_point = values_per_point;
    }

    /// The values as readers see them: consolidated when `values_per_point > 1`.
    pub fn consolidated(&self) -> Consolidated<'_> {
        Consolidated::new(
            &self.values,
            self.values_per_point,
            self.consolidation,
            self.x_files_factor,
        )
    }

    /// `(value, timestamp)` pairs as graphite-web's `datapoints()`: consolidated values
    /// against `start, start + step * values_per_point, …` up to `end` inclusive, as
    /// many as both run. A series with no positive step has none (graphite-web raises).
    pub fn datapoints(&self) -> impl Iterator<Item = (Option<f64>, i64)> + '_ {
        let stride = self
            .step
            .saturating_mul(self.values_per_point.max(1) as i64);
        let count = if stride > 0 && self.end >= self.start {
            ((self.end - self.start) / stride + 1) as usize
        } else {
            0
        };
        self.consolidated()
            .take(count)
            .enumerate()
            .map(move |(i, v)| (v, self.start + i as i64 * stride))
    }
}

/// graphite-web's `__consolidatingGenerator`: groups of `values_per_point` slots, each
/// reduced by the consolidation function, or `None` when the group has no known slot
/// or fewer than `x_files_factor` of them. A short last group still counts against
/// the full group size. Sums run left to right from `0.0`, as Python's `sum` does.
#[derive(Clone, Debug)]
pub struct Consolidated<'a> {
    values: &'a [Option<f64>],
    per_point: usize,
    func: Consolidation,
    xff: f64,
}

impl<'a> Consolidated<'a> {
    pub fn new(
        values: &'a [Option<f64>],
        per_point: usize,
        func: Consolidation,
        xff: f64,
    ) -> Consolidated<'a> {
        Consolidated {
            values,
            per_point: per_point.max(1),
            func,
            xff,
        }
    }
}

impl Iterator for Consolidated<'_> {
    type Item = Option<f64>;

    fn next(&mut self) -> Option<Option<f64>> {
        if self.values.is_empty() {
            return None;
        }
        let take = self.per_point.min(self.values.len());
        let (group, rest) = self.values.split_at(take);
        self.values = rest;
        if self.per_point == 1 {
            return Some(group[0]);
        }
        Some(reduce(group, self.per_point, self.func, self.xff))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.values.len().div_ceil(self.per_point);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Consolidated<'_> {}

fn reduce(group: &[Option<f64>], per_point: usize, func: Consolidation, xff: f64) -> Option<f64> {
    let known = group.iter().filter(|v| v.is_some()).count();
    if known == 0 || (known as f64 / per_point as f64) < xff {
        return None;
    }
    let mut known_values = group.iter().filter_map(|v| *v);
    Some(match func {
        Consolidation::Sum => known_values.fold(0.0, |acc, v| acc + v),
        Consolidation::Average => known_values.fold(0.0, |acc, v| acc + v) / known as f64,
        // missing slots are zeros and count in the length
        Consolidation::AvgZero => {
            group.iter().fold(0.0, |acc, v| acc + v.unwrap_or(0.0)) / group.len() as f64
        }
        // Python's max()/min(): replace only when strictly greater/smaller
        Consolidation::Max => {
            let first = known_values.next()?;
            known_values.fold(first, |m, v| if v > m { v } else { m })
        }
        Consolidation::Min => {
            let first = known_values.next()?;
            known_values.fold(first, |m, v| if v < m { v } else { m })
        }
        Consolidation::First => known_values.next()?,
        Consolidation::Last => known_values.next_back()?,
    })
}

#[cfg(test)]
mod tests;
