//! Aligning series of different steps (graphite-web's `normalize` and `lcm`) and
//! graphite's `series.copy()`, which the Combine and Transform families build their
//! results with.

use crate::series::TimeSeries;

/// The interval series share once [`normalize`]d: graphite-web's `(start, end, step)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) step: i64,
}

/// graphite-web's `lcm`; `None` for a step that is not positive or a multiple beyond
/// `i64` (where graphite-web divides by zero or grows without bound).
pub(crate) fn lcm(a: i64, b: i64) -> Option<i64> {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if a <= 0 || b <= 0 {
        return None;
    }
    if a == b {
        return Some(a);
    }
    let (a, b) = if a < b { (b, a) } else { (a, b) };
    (a / gcd(a, b)).checked_mul(b)
}

/// graphite-web's `normalize`: the series are read at the least common multiple of
/// their steps (each gets `values_per_point = lcm / step`, so they consolidate), from
/// the earliest start to the latest end, the end trimmed to a whole number of steps
/// from the start. `None` when there is no series (graphite-web's
/// `NormalizeEmptyResultError`, after which a function returns no series) or a step
/// is not positive.
pub(crate) fn normalize(series: &mut [&mut TimeSeries]) -> Option<Span> {
    let (first, rest) = series.split_first()?;
    let mut step = first.step;
    let (mut start, mut end) = (first.start, first.end);
    for s in rest {
        step = lcm(step, s.step)?;
        start = start.min(s.start);
        end = end.max(s.end);
    }
    if step <= 0 {
        return None;
    }
    for s in series.iter_mut() {
        s.values_per_point = usize::try_from(step / s.step).unwrap_or(1);
    }
    end -= (end - start).rem_euclid(step);
    Some(Span { start, end, step })
}

/// [`normalize`] over one list.
pub(crate) fn normalize_list(series: &mut [TimeSeries]) -> Option<Span> {
    let mut refs: Vec<&mut TimeSeries> = series.iter_mut().collect();
    normalize(&mut refs)
}

/// graphite-web's `series.copy(name=…, values=…)`: a new series with the same
/// interval, tags, consolidation function and xFilesFactor; the path expression is the
/// new name, it is read unconsolidated, and drawing options are not carried over.
pub(crate) fn copy_of(series: &TimeSeries, name: String, values: Vec<Option<f64>>) -> TimeSeries {
    TimeSeries {
        path_expression: name.clone(),
        name,
        start: series.start,
        end: series.end,
        step: series.step,
        values,
        tags: series.tags.clone(),
        consolidation: series.consolidation,
        x_files_factor: series.x_files_factor,
        values_per_point: 1,
        options: crate::series::SeriesOptions::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(step: i64, start: i64, n: usize) -> TimeSeries {
        TimeSeries::new(
            "x",
            start,
            start + step * n as i64,
            step,
            vec![Some(1.0); n],
        )
    }

    #[test]
    fn normalize_like_graphite() {
        let mut list = vec![series(10, 100, 6), series(15, 90, 4), series(10, 110, 3)];
        let span = normalize_list(&mut list).unwrap();
        // lcm(10, 15) = 30; start 90, end max(160, 150, 140) = 160 trimmed to 150
        assert_eq!(
            span,
            Span {
                start: 90,
                end: 150,
                step: 30
            }
        );
        let vpp: Vec<usize> = list.iter().map(|s| s.values_per_point).collect();
        assert_eq!(vpp, vec![3, 2, 3]);
        assert_eq!(normalize_list(&mut []), None);
        assert_eq!(normalize_list(&mut [series(0, 0, 1)]), None);
        assert_eq!(lcm(4, 6), Some(12));
        assert_eq!(lcm(60, 60), Some(60));
        assert_eq!(lcm(i64::MAX, i64::MAX - 1), None);
    }
}
