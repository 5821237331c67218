//! One line of a graph ([`GraphSeries`]): its points and the options graphite-web's
//! graph-only functions set on it (`color`, `dashed`, `lineWidth`, `stacked`,
//! `secondYAxis`, `alpha`, `drawAsInfinite`, `areaBetween`), plus rrdtool's drawing
//! types for the GrowthForecast-style preset. Also the consolidation of many points
//! into one per pixel column, as graphite-web's `TimeSeries.consolidate` does.

use std::str::FromStr;

use sumi_query::series::TimeSeries;
use sumi_query::Consolidation;

use super::error::GraphError;

/// rrdtool's drawing types as GrowthForecast offers them per graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrawType {
    /// A filled area from zero (or from the series below when stacked).
    Area,
    /// A line one pixel wide.
    Line1,
    /// A line two pixels wide.
    Line2,
    /// A line three pixels wide.
    Line3,
}

impl FromStr for DrawType {
    type Err = GraphError;

    fn from_str(s: &str) -> Result<DrawType, GraphError> {
        match s.to_ascii_uppercase().as_str() {
            "AREA" => Ok(DrawType::Area),
            "LINE1" => Ok(DrawType::Line1),
            "LINE2" => Ok(DrawType::Line2),
            "LINE3" => Ok(DrawType::Line3),
            _ => Err(GraphError::param(
                "type",
                s,
                "expected AREA, LINE1, LINE2 or LINE3",
            )),
        }
    }
}

/// One series to draw. `values[i]` is the value at `start + i * step`; `None` is a
/// missing point. Options left at their defaults draw a plain line in the next colour
/// of the graph's `colorList`.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphSeries {
    /// The legend text (empty: no legend entry).
    pub name: String,
    /// Epoch seconds of the first value.
    pub start: i64,
    /// Seconds between values; must be positive.
    pub step: i64,
    pub values: Vec<Option<f64>>,
    /// How values merge when there are more of them than pixel columns
    /// (`consolidateBy`; average unless the target says otherwise).
    pub consolidation: Consolidation,
    /// Fraction of known values a merged point needs (graphite-web's xFilesFactor;
    /// 0 means one known value is enough).
    pub x_files_factor: f64,
    /// `color()`: a graphite colour name or hex code; `None` takes the next colour of
    /// `colorList`.
    pub color: Option<String>,
    /// `dashed()`: the length of dashes and gaps, in pixels.
    pub dashed: Option<f64>,
    /// `lineWidth()`: overrides the graph's `lineWidth` for this series.
    pub line_width: Option<f64>,
    /// graphite-web's `stacked` option (`stacked()`, `areaBetween()`, `areaMode`, or
    /// rrd's `AREA`): drawn as a filled area rather than a line.
    pub stacked: bool,
    /// rrd's `STACK`: the values are added on top of the previous such series before
    /// drawing. (graphite-web's `stacked()` function stacks the values itself; its
    /// `areaMode=stacked` sets this on every series.)
    pub stack: bool,
    /// `secondYAxis()`: scaled on a right-hand axis.
    pub second_y_axis: bool,
    /// `alpha()`: opacity of the line or area.
    pub alpha: Option<f64>,
    /// `drawAsInfinite()`: positive values are drawn as vertical lines across the
    /// whole plot.
    pub draw_as_infinite: bool,
    /// Drawn fully transparent (the lower edge of `areaBetween()`), yet still shapes
    /// the area above it.
    pub invisible: bool,
}

impl GraphSeries {
    /// A plain series with every graph option at its default.
    pub fn new(
        name: impl Into<String>,
        start: i64,
        step: i64,
        values: Vec<Option<f64>>,
    ) -> GraphSeries {
        GraphSeries {
            name: name.into(),
            start,
            step,
            values,
            consolidation: Consolidation::Average,
            x_files_factor: 0.0,
            color: None,
            dashed: None,
            line_width: None,
            stacked: false,
            stack: false,
            second_y_axis: false,
            alpha: None,
            draw_as_infinite: false,
            invisible: false,
        }
    }

    /// A query result as graphite-web's renderer sees it: its raw values (not the
    /// `maxDataPoints` view), its consolidation function and xFilesFactor, and the
    /// options its graph functions set (`color`, `alpha`, `lineWidth`, `dashed`,
    /// `stacked`, `areaBetween`, `secondYAxis`, `drawAsInfinite`).
    pub fn from_time_series(ts: &TimeSeries) -> GraphSeries {
        let o = &ts.options;
        GraphSeries {
            name: ts.name.clone(),
            start: ts.start,
            step: ts.step,
            values: ts.values.clone(),
            consolidation: ts.consolidation,
            x_files_factor: ts.x_files_factor,
            color: o.color.clone(),
            dashed: o.dashed,
            line_width: o.line_width,
            stacked: o.stacked,
            stack: false,
            second_y_axis: o.second_y_axis,
            alpha: o.alpha,
            draw_as_infinite: o.draw_as_infinite,
            invisible: o.invisible,
        }
    }

    /// Applies an rrdtool drawing type (GrowthForecast's `type`) and its `stack` flag.
    pub fn with_draw(mut self, draw: DrawType, stack: bool) -> GraphSeries {
        match draw {
            DrawType::Area => self.stacked = true,
            DrawType::Line1 => self.line_width = Some(1.0),
            DrawType::Line2 => self.line_width = Some(2.0),
            DrawType::Line3 => self.line_width = Some(3.0),
        }
        self.stack = stack;
        self
    }

    /// Epoch seconds just past the last value (graphite-web's `end`).
    pub(crate) fn end(&self) -> i64 {
        let len = i64::try_from(self.values.len()).unwrap_or(i64::MAX);
        self.start.saturating_add(len.saturating_mul(self.step))
    }
}

/// graphite-web's consolidating reader: groups of `per_point` values, each reduced
/// by `how`, or `None` when the group has no known value or a known fraction below
/// `xff`. NaN counts as missing. A short last group still counts against the full
/// group size.
pub(crate) fn consolidate(
    values: &[Option<f64>],
    per_point: usize,
    how: Consolidation,
    xff: f64,
) -> Vec<Option<f64>> {
    let clean = |v: &Option<f64>| v.filter(|x| !x.is_nan());
    if per_point <= 1 {
        return values.iter().map(clean).collect();
    }
    values
        .chunks(per_point)
        .map(|group| {
            let mut known = group.iter().filter_map(clean);
            let count = known.clone().count();
            if count == 0 || (count as f64 / per_point as f64) < xff {
                return None;
            }
            Some(match how {
                Consolidation::Average => known.sum::<f64>() / count as f64,
                Consolidation::AvgZero => known.sum::<f64>() / group.len() as f64,
                Consolidation::Sum => known.sum(),
                Consolidation::Min => known.fold(f64::INFINITY, f64::min),
                Consolidation::Max => known.fold(f64::NEG_INFINITY, f64::max),
                Consolidation::First => known.clone().next()?,
                Consolidation::Last => known.next_back()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consolidation_functions() {
        let v = [
            Some(1.0),
            None,
            Some(3.0),
            Some(5.0),
            Some(f64::NAN),
            None,
            Some(2.0),
        ];
        assert_eq!(
            consolidate(&v, 3, Consolidation::Average, 0.0),
            vec![Some(2.0), Some(5.0), Some(2.0)]
        );
        assert_eq!(
            consolidate(&v, 3, Consolidation::Sum, 0.0),
            vec![Some(4.0), Some(5.0), Some(2.0)]
        );
        assert_eq!(
            consolidate(&v, 3, Consolidation::Min, 0.0),
            vec![Some(1.0), Some(5.0), Some(2.0)]
        );
        assert_eq!(
            consolidate(&v, 3, Consolidation::Max, 0.0),
            vec![Some(3.0), Some(5.0), Some(2.0)]
        );
        assert_eq!(
            consolidate(&v, 3, Consolidation::First, 0.0),
            vec![Some(1.0), Some(5.0), Some(2.0)]
        );
        assert_eq!(
            consolidate(&v, 3, Consolidation::Last, 0.0),
            vec![Some(3.0), Some(5.0), Some(2.0)]
        );
        // avg_zero divides by the group's length, including its missing values.
        let az = consolidate(&v, 3, Consolidation::AvgZero, 0.0);
        assert_eq!(az[0], Some(4.0 / 3.0));
        assert_eq!(az[1], Some(5.0 / 3.0));
    }

    #[test]
    fn x_files_factor_counts_against_full_group() {
        let v = [Some(1.0), None, None, None, Some(2.0)];
        // The short last group (one of two known) needs 0.5 of 2 slots: 1/2 passes.
        assert_eq!(
            consolidate(&v, 2, Consolidation::Average, 0.5),
            vec![Some(1.0), None, Some(2.0)]
        );
        assert_eq!(
            consolidate(&v, 2, Consolidation::Average, 0.6),
            vec![None, None, None]
        );
    }

    #[test]
    fn no_consolidation_turns_nan_into_none() {
        assert_eq!(
            consolidate(&[Some(f64::NAN), Some(1.0)], 1, Consolidation::Average, 0.0),
            vec![None, Some(1.0)]
        );
    }

    #[test]
    fn from_a_query_result() {
        let mut ts = TimeSeries::new("a.b", 60, 240, 60, vec![Some(1.0), None, Some(3.0)]);
        ts.consolidation = Consolidation::Max;
        ts.options.color = Some("red".into());
        ts.options.second_y_axis = true;
        ts.options.dashed = Some(5.0);
        let g = GraphSeries::from_time_series(&ts);
        assert_eq!((g.name.as_str(), g.start, g.step), ("a.b", 60, 60));
        assert_eq!(g.values, ts.values);
        assert_eq!(g.consolidation, Consolidation::Max);
        assert_eq!(g.color.as_deref(), Some("red"));
        assert!(g.second_y_axis && !g.stacked);
        assert_eq!(g.dashed, Some(5.0));
        assert_eq!(g.end(), 240);
    }

    #[test]
    fn names_parse() {
        assert_eq!("line2".parse::<DrawType>().unwrap(), DrawType::Line2);
        assert!("line9".parse::<DrawType>().is_err());
        let s = GraphSeries::new("a", 0, 60, vec![]).with_draw(DrawType::Area, true);
        assert!(s.stacked && s.stack);
        assert_eq!(GraphSeries::new("a", 100, 60, vec![None; 3]).end(), 280);
    }
}
