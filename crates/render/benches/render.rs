//! Rendering throughput: `cargo bench -p sumi-render --bench render`. Times are the
//! benchmark thread's CPU time, robust to a busy machine.
//!
//! 10 series × 10,000 points (100,000 points) of gauge-like values (two decimals, a
//! missing point in 50), rendered as graphite-web's json, csv and raw; json also with
//! `maxDataPoints=1000`. Reported as points per second.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sumi_query::TimeSeries;
use sumi_render::{render_csv, render_json, render_raw, JsonOptions};

const SERIES: usize = 10;
const POINTS: usize = 10_000;

fn data() -> Vec<TimeSeries> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..SERIES)
        .map(|s| {
            let values = (0..POINTS)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (i % 50 != 7).then(|| (state % 1_000_000) as f64 / 100.0)
                })
                .collect();
            let start = 1_700_000_000 - 10 * POINTS as i64;
            TimeSeries::new(
                format!("servers.host{s:03}.cpu.user"),
                start,
                1_700_000_000,
                10,
                values,
            )
        })
        .collect()
}

fn bench(c: &mut Criterion<ThreadCpu>) {
    let series = data();
    let mut g = c.benchmark_group("render");
    g.throughput(Throughput::Elements((SERIES * POINTS) as u64));
    g.sample_size(20);
    g.bench_function("json", |b| {
        b.iter(|| black_box(render_json(&series, &JsonOptions::default())))
    });
    let mdp = JsonOptions {
        max_data_points: Some(1000),
        ..JsonOptions::default()
    };
    g.bench_function("json maxDataPoints=1000", |b| {
        b.iter(|| black_box(render_json(&series, &mdp)))
    });
    g.bench_function("csv", |b| {
        b.iter(|| black_box(render_csv(&series, chrono_tz::Tz::UTC)))
    });
    g.bench_function("raw", |b| b.iter(|| black_box(render_raw(&series))));
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
