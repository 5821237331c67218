//! Consolidation cases checked against graphite-web 1.1.10's `TimeSeries` (Python 3.11).

use super::*;

fn series(values: &[Option<f64>], vpp: usize, func: Consolidation, xff: f64) -> TimeSeries {
    let mut s = TimeSeries::new(
        "a.b",
        100,
        100 + 10 * values.len() as i64,
        10,
        values.to_vec(),
    );
    s.consolidation = func;
    s.x_files_factor = xff;
    s.consolidate(vpp);
    s
}

fn read(s: &TimeSeries) -> Vec<Option<f64>> {
    s.consolidated().collect()
}

const N: Option<f64> = None;

#[test]
fn functions_like_graphite() {
    let v = [Some(1.0), N, Some(3.0), Some(-2.0), N, N, Some(5.0)];
    let cases = [
        (
            Consolidation::Average,
            vec![Some(2.0), Some(-2.0), Some(5.0)],
        ),
        (Consolidation::Sum, vec![Some(4.0), Some(-2.0), Some(5.0)]),
        (Consolidation::Min, vec![Some(1.0), Some(-2.0), Some(5.0)]),
        (Consolidation::Max, vec![Some(3.0), Some(-2.0), Some(5.0)]),
        (Consolidation::First, vec![Some(1.0), Some(-2.0), Some(5.0)]),
        (Consolidation::Last, vec![Some(3.0), Some(-2.0), Some(5.0)]),
        // missing slots count as zeros; the short last group divides by its own length
        (
            Consolidation::AvgZero,
            vec![Some(4.0 / 3.0), Some(-2.0 / 3.0), Some(5.0)],
        ),
    ];
    for (func, want) in cases {
        assert_eq!(read(&series(&v, 3, func, 0.0)), want, "{func}");
    }
}

#[test]
fn x_files_factor_counts_against_the_full_group() {
    let v = [Some(1.0), N, N, N, Some(2.0), N, Some(3.0)];
    // 1/3 known in each full group, and the last short group also counts 1/3
    assert_eq!(
        read(&series(&v, 3, Consolidation::Average, 0.34)),
        vec![N, N, N]
    );
    assert_eq!(
        read(&series(&v, 3, Consolidation::Average, 0.33)),
        vec![Some(1.0), Some(2.0), Some(3.0)]
    );
    // nothing known is None whatever the factor
    assert_eq!(read(&series(&[N, N], 2, Consolidation::Sum, 0.0)), vec![N]);
}

#[test]
fn sums_start_from_python_zero() {
    // Python: sum([-0.0]) == 0.0 and (0.1 + 0.2) + 0.3 left to right
    let s = series(&[Some(-0.0), N], 2, Consolidation::Sum, 0.0);
    assert_eq!(read(&s)[0].map(f64::to_bits), Some(0.0f64.to_bits()));
    let s = series(
        &[Some(0.1), Some(0.2), Some(0.3)],
        3,
        Consolidation::Sum,
        0.0,
    );
    assert_eq!(read(&s), vec![Some((0.1 + 0.2) + 0.3)]);
}

#[test]
fn nan_handling_follows_python_max() {
    let s = series(&[Some(f64::NAN), Some(1.0)], 2, Consolidation::Max, 0.0);
    assert!(read(&s)[0].is_some_and(f64::is_nan));
    let s = series(&[Some(1.0), Some(f64::NAN)], 2, Consolidation::Max, 0.0);
    assert_eq!(read(&s), vec![Some(1.0)]);
}

#[test]
fn datapoints_use_the_consolidated_step() {
    let s = series(
        &[Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0)],
        2,
        Consolidation::Sum,
        0.0,
    );
    // start 100, end 150, step 10 * 2: timestamps 100, 120, 140
    let points: Vec<_> = s.datapoints().collect();
    assert_eq!(
        points,
        vec![(Some(3.0), 100), (Some(7.0), 120), (Some(5.0), 140)]
    );
    let plain = TimeSeries::new("x", 0, 60, 60, vec![Some(1.0)]);
    assert_eq!(plain.datapoints().collect::<Vec<_>>(), vec![(Some(1.0), 0)]);
    // timestamps stop at end (inclusive) even when values run longer
    let short = TimeSeries::new("x", 0, 60, 60, vec![Some(1.0), Some(2.0), Some(3.0)]);
    assert_eq!(short.datapoints().count(), 2);
    let broken = TimeSeries::new("x", 0, 60, 0, vec![Some(1.0)]);
    assert_eq!(broken.datapoints().count(), 0);
}

#[test]
fn defaults_like_graphite() {
    let s = TimeSeries::new("a.b;dc=x", 0, 10, 10, vec![None]);
    assert_eq!(s.path_expression, "a.b;dc=x");
    assert_eq!(s.tags.get("dc"), Some("x"));
    assert_eq!(s.tags.get("name"), Some("a.b"));
    assert_eq!(s.consolidation, Consolidation::Average);
    assert_eq!(s.values_per_point, 1);
    assert_eq!("avg".parse::<Consolidation>(), Ok(Consolidation::Average));
    assert!("median".parse::<Consolidation>().is_err());
}
