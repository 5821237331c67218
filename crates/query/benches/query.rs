//! Query throughput: `cargo bench -p sumi-query --bench query`. Times are the
//! benchmark thread's CPU time, robust to a busy machine.
//!
//! - `parse`: a typical dashboard target.
//! - `attime`: `from=-7d`, `until=noon yesterday`.
//! - `evaluate servers.*.cpu`: a glob over 1,000 series of 8,640 points (a day at 10 s),
//!   from a source that hands over prepared answers, so the figure is the evaluator's
//!   own cost: find, batch fetch, building and sorting the series.
//! - `consolidate`: reading the same 8.64 M points 10 to a point (average).

use std::hint::black_box;
use std::sync::Mutex;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sumi_model::glob::PathPattern;
use sumi_query::series::{Consolidated, Consolidation};
use sumi_query::{
    parse, parse_at_time, Evaluator, FetchedSeries, FindNode, Registry, RequestContext,
    SeriesSource, SourceError, TimeRange,
};

const SERIES: usize = 1_000;
const POINTS: usize = 8_640;
const NOW: i64 = 1_700_000_000;

/// Answers `fetch` once with prepared series (moved out, not copied).
struct Prepared {
    names: Vec<String>,
    answers: Mutex<Vec<FetchedSeries>>,
}

impl SeriesSource for Prepared {
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        Ok(self
            .names
            .iter()
            .filter(|n| pattern.matches_path(n))
            .map(|n| FindNode {
                path: n.clone(),
                is_leaf: true,
            })
            .collect())
    }

    fn fetch(
        &self,
        _: &[String],
        _: i64,
        _: i64,
        _: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        Ok(std::mem::take(
            &mut *self
                .answers
                .lock()
                .map_err(|_| SourceError::Storage("poisoned".into()))?,
        ))
    }
}

fn answers() -> Vec<FetchedSeries> {
    let start = NOW - 86_400;
    (0..SERIES)
        .map(|s| FetchedSeries {
            path: format!("servers.host{s:04}.cpu"),
            start,
            end: NOW,
            step: 10,
            values: (0..POINTS)
                .map(|i| (i % 97 != 0).then_some((i * s) as f64 * 0.5))
                .collect(),
        })
        .collect()
}

fn bench(c: &mut Criterion<ThreadCpu>) {
    let mut g = c.benchmark_group("query");
    g.sample_size(10);
    let target = "aliasByNode(sumSeries(servers.web*.cpu.{user,system}), 1) | scale(0.5) | alias('cpu \"total\"')";
    g.bench_function("parse", |b| b.iter(|| black_box(parse(black_box(target)))));
    g.bench_function("attime", |b| {
        b.iter(|| {
            black_box(parse_at_time(black_box("-7d"), chrono_tz::Tz::UTC, NOW)).ok();
            black_box(parse_at_time(
                black_box("noon yesterday"),
                chrono_tz::America::Chicago,
                NOW,
            ))
            .ok();
        })
    });

    let prepared = answers();
    let names: Vec<String> = prepared.iter().map(|a| a.path.clone()).collect();
    let range = TimeRange {
        from: NOW - 86_400,
        until: NOW,
        now: NOW,
    };
    let ctx = RequestContext::new(range, chrono_tz::Tz::UTC);
    let registry = Registry::standard();
    g.throughput(Throughput::Elements((SERIES * POINTS) as u64));
    g.bench_function("evaluate servers.*.cpu (1000 x 8640)", |b| {
        b.iter_batched(
            || Prepared {
                names: names.clone(),
                answers: Mutex::new(prepared.clone()),
            },
            |source| {
                let series = Evaluator::new(&source, &registry)
                    .evaluate_targets(&ctx, &["servers.*.cpu"])
                    .expect("evaluates");
                assert_eq!(series.len(), SERIES);
                series
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("consolidate 10:1 average (1000 x 8640)", |b| {
        b.iter(|| {
            let mut known = 0usize;
            for a in &prepared {
                known += Consolidated::new(&a.values, 10, Consolidation::Average, 0.5)
                    .filter(Option::is_some)
                    .count();
            }
            black_box(known)
        })
    });
    g.finish();
}

/// Criterion measurement of this thread's CPU time (from `/proc/thread-self/schedstat`),
/// so that figures hold on a machine busy with other work.
struct ThreadCpu(criterion::measurement::WallTime);

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

impl criterion::measurement::Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = std::time::Duration;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }

    fn end(&self, start: u64) -> std::time::Duration {
        std::time::Duration::from_nanos(thread_cpu_ns().saturating_sub(start))
    }

    fn add(&self, a: &std::time::Duration, b: &std::time::Duration) -> std::time::Duration {
        *a + *b
    }

    fn zero(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    fn to_f64(&self, value: &std::time::Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn criterion::measurement::ValueFormatter {
        self.0.formatter()
    }
}

fn cpu_criterion() -> Criterion<ThreadCpu> {
    Criterion::default().with_measurement(ThreadCpu(criterion::measurement::WallTime))
}

criterion_group! {
    name = benches;
    config = cpu_criterion();
    targets = bench
}
criterion_main!(benches);
