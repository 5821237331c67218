//! Timings of the Calculate/Filter/Sort/Alias/Special functions on many series, for
//! the numbers quoted in reports. Ignored by default; run in release mode:
//!
//! ```text
//! cargo test -p sumi-query --release --lib -- --ignored --nocapture perf_
//! ```
//!
//! Each target is evaluated against a [`MemorySource`] of `SERIES` minutely series of
//! one day (`POINTS` points, 5% nulls); the plain fetch of the same glob is timed too,
//! so that what the function adds can be read off.

use std::time::{Duration, Instant};

use crate::attime::TimeRange;
use crate::eval::{Evaluator, RequestContext};
use crate::functions::Registry;
use crate::memory::MemorySource;

const NOW: i64 = 1_700_006_400;
const SERIES: usize = 1000;
const POINTS: i64 = 1440;

fn source() -> MemorySource {
    let mut m = MemorySource::new();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let start = NOW - 8 * 86_400;
    for s in 0..SERIES {
        // eight days, so that windows and Holt-Winters find their bootstrap data
        let values: Vec<Option<f64>> = (0..8 * POINTS)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state % 100) >= 5).then_some((state % 10_000) as f64 / 100.0)
            })
            .collect();
        m.add(
            &format!("perf.host{s:04}.cpu"),
            60,
            10 * 86_400,
            start,
            &values,
        );
    }
    m
}

fn time(source: &MemorySource, registry: &Registry, target: &str, from: i64) -> (Duration, usize) {
    let ctx = RequestContext::new(
        TimeRange {
            from: NOW - from,
            until: NOW,
            now: NOW,
        },
        chrono_tz::UTC,
    );
    let evaluator = Evaluator::new(source, registry);
    let mut best = Duration::MAX;
    let mut count = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let series = evaluator.evaluate_targets(&ctx, &[target]).expect(target);
        best = best.min(t.elapsed());
        count = series.len();
    }
    (best, count)
}

#[test]
#[ignore = "timing, not a check: cargo test -p sumi-query --release -- --ignored perf_functions --nocapture"]
fn perf_functions_on_a_thousand_series() {
    let source = source();
    let registry = Registry::standard();
    let day = 86_400;
    let cases: &[(&str, i64)] = &[
        ("perf.*.cpu", day),
        ("movingAverage(perf.*.cpu,60)", day),
        ("movingAverage(perf.*.cpu,'1h')", day),
        ("movingMedian(perf.*.cpu,30)", day),
        ("movingMax(perf.*.cpu,'10min')", day),
        ("exponentialMovingAverage(perf.*.cpu,60)", day),
        ("stdev(perf.*.cpu,60)", day),
        ("nPercentile(perf.*.cpu,95)", day),
        ("linearRegression(perf.*.cpu)", day),
        ("highestMax(perf.*.cpu,10)", day),
        ("sortByMaxima(perf.*.cpu)", day),
        ("mostDeviant(perf.*.cpu,5)", day),
        ("removeBelowValue(perf.*.cpu,50)", day),
        ("aliasByNode(perf.*.cpu,1)", day),
        ("aliasSub(perf.*.cpu,'host(\\d+)','h\\1')", day),
        ("cactiStyle(perf.*.cpu,'si')", day),
        ("holtWintersForecast(perf.host000*.cpu)", day),
        ("holtWintersConfidenceBands(perf.host000*.cpu)", day),
    ];
    println!("{SERIES} series x {POINTS} points, best of 3");
    for (target, from) in cases {
        let (elapsed, n) = time(&source, &registry, target, *from);
        println!(
            "{:>9.1} ms  {n:>5} series  {target}",
            elapsed.as_secs_f64() * 1e3
        );
    }
}
