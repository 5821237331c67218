//! A report on the block codec: compression (bytes a point by value kind and block length,
//! next to the entropy of each kind's model) and speed (values a second, single core) on the
//! benchmark workload and on smoother data.
//!
//! `cargo bench -p sumi-store --bench codec_report` prints two tables. Speed is given two
//! ways that stay meaningful on a machine shared with other jobs (where a wall-clock mean,
//! criterion's `--bench codec`, mostly measures the time slices lost to them): "best" sums
//! each block's best time over many passes; "cpu" divides the values of repeated passes by
//! the thread's on-CPU time.

use std::hint::black_box;
use std::time::{Duration, Instant};
use sumi_store::codec::{self, workload};
use workload::{Kind, Rng};

const POINTS: usize = 8640;
const BLOCK_LENS: [usize; 5] = [1, 10, 360, 1440, 8640];
const STEP: u32 = 10;

fn slots(n: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| 1_700_000_000 + i * i64::from(STEP))
        .collect()
}

/// Bytes of `values` cut in blocks of `block_len`, each checked to round-trip.
fn encoded_len(slots: &[i64], values: &[f64], block_len: usize) -> usize {
    let mut total = 0;
    let mut block = Vec::new();
    for (s, v) in slots.chunks(block_len).zip(values.chunks(block_len)) {
        block.clear();
        codec::encode(STEP, s, v, &mut block);
        total += block.len();
        // A size is worthless if it loses data.
        let (mut ds, mut dv) = (Vec::new(), Vec::new());
        codec::decode(&block, &mut ds, &mut dv).expect("decodes");
        assert_eq!(ds, s);
        assert!(dv.iter().zip(v).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    total
}

struct Row {
    label: String,
    entropy_bits: f64,
    points: usize,
    bytes: [usize; BLOCK_LENS.len()],
}

impl Row {
    fn new(label: &str) -> Row {
        Row {
            label: label.to_string(),
            entropy_bits: 0.0,
            points: 0,
            bytes: [0; BLOCK_LENS.len()],
        }
    }
    fn add(&mut self, other: &Row) {
        self.entropy_bits += other.entropy_bits;
        self.points += other.points;
        for (a, b) in self.bytes.iter_mut().zip(other.bytes) {
            *a += b;
        }
    }
    fn print(&self) {
        let n = self.points as f64;
        print!("{:<18} {:>8.3}", self.label, self.entropy_bits / 8.0 / n);
        for b in self.bytes {
            print!(" {:>8.3}", b as f64 / n);
        }
        println!();
    }
}

fn generate(metrics: &[(Kind, f64)], seed: u64) -> Vec<(Kind, workload::Series)> {
    let mut rng = Rng::new(seed);
    metrics
        .iter()
        .map(|&(kind, base)| (kind, workload::series(kind, base, STEP, POINTS, &mut rng)))
        .collect()
}

fn size_table(label: &str, data: &[(Kind, workload::Series)]) {
    let slots = slots(POINTS);
    let mut total = Row::new(label);
    let mut by_kind: Vec<(Kind, Row)> = Vec::new();
    for (kind, s) in data {
        let mut row = Row::new(kind.name());
        row.entropy_bits = s.entropy_bits * POINTS as f64;
        row.points = POINTS;
        for (b, &len) in row.bytes.iter_mut().zip(&BLOCK_LENS) {
            *b = encoded_len(&slots, &s.values, len);
        }
        total.add(&row);
        match by_kind.iter_mut().find(|(k, _)| k == kind) {
            Some((_, r)) => r.add(&row),
            None => by_kind.push((*kind, row)),
        }
    }
    for (_, row) in &by_kind {
        row.print();
    }
    total.print();
}

/// Time of `f` over every item, each item's time being its best over passes that total
/// about `budget`. Items are short (a block: tens of microseconds), so most passes of an
/// item run without being preempted on a machine shared with other jobs.
fn best_per_item<T>(items: &[T], budget: Duration, mut f: impl FnMut(&T)) -> Duration {
    let mut best = vec![Duration::MAX; items.len()];
    let start = Instant::now();
    let mut passes = 0;
    while passes < 3 || start.elapsed() < budget {
        for (item, b) in items.iter().zip(&mut best) {
            let t = Instant::now();
            f(item);
            *b = (*b).min(t.elapsed());
        }
        passes += 1;
    }
    best.iter().sum()
}

fn speed(label: &str, data: &[(Kind, workload::Series)], block_len: usize) {
    let slots = slots(POINTS);
    let mut raw = Vec::new();
    for (_, s) in data {
        for (sl, vl) in slots.chunks(block_len).zip(s.values.chunks(block_len)) {
            raw.push((sl, vl));
        }
    }
    let points: usize = raw.iter().map(|(s, _)| s.len()).sum();
    let blocks: Vec<Vec<u8>> = raw
        .iter()
        .map(|(s, v)| {
            let mut b = Vec::new();
            codec::encode(STEP, s, v, &mut b);
            b
        })
        .collect();
    let mut out = Vec::with_capacity(POINTS * 3);
    let enc = best_per_item(&raw, Duration::from_secs(2), |(s, v)| {
        out.clear();
        codec::encode(STEP, s, v, &mut out);
        black_box(out.len());
    });
    let (mut s, mut v) = (Vec::with_capacity(block_len), Vec::with_capacity(block_len));
    let dec = best_per_item(&blocks, Duration::from_secs(2), |b| {
        s.clear();
        v.clear();
        codec::decode(b, &mut s, &mut v).expect("decodes");
        black_box((&s, &v));
    });
    let enc_cpu = per_cpu_second(&raw, points, Duration::from_secs(2), |(s, v)| {
        out.clear();
        codec::encode(STEP, s, v, &mut out);
        black_box(out.len());
    });
    let dec_cpu = per_cpu_second(&blocks, points, Duration::from_secs(2), |b| {
        s.clear();
        v.clear();
        codec::decode(b, &mut s, &mut v).expect("decodes");
        black_box((&s, &v));
    });
    let mps = |d: Duration| points as f64 / d.as_secs_f64() / 1e6;
    let cpu = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.0}", r / 1e6));
    println!(
        "{label:<10} {block_len:>6} {:>12.0} {:>12.0} {:>12} {:>12}",
        mps(enc),
        mps(dec),
        cpu(enc_cpu),
        cpu(dec_cpu)
    );
}

/// Nanoseconds this thread has spent on a CPU (Linux `schedstat`), if known.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Items a CPU-second over repeated passes totalling about `budget` of wall time: the
/// sustained rate, with time slices lost to other jobs not counted (caches they disturb
/// still are).
fn per_cpu_second<T>(
    items: &[T],
    per_pass: usize,
    budget: Duration,
    mut f: impl FnMut(&T),
) -> Option<f64> {
    let start = Instant::now();
    let cpu0 = thread_cpu_ns()?;
    let mut passes = 0;
    while passes < 3 || start.elapsed() < budget {
        items.iter().for_each(&mut f);
        passes += 1;
    }
    let cpu = thread_cpu_ns()?.checked_sub(cpu0)?;
    Some((passes * per_pass) as f64 / (cpu as f64 / 1e9))
}

fn main() {
    let host: Vec<(Kind, f64)> = workload::host_metrics()
        .iter()
        .map(|m| (m.kind, m.base))
        .collect();
    let smooth: Vec<(Kind, f64)> = Kind::SMOOTH
        .iter()
        .map(|&k| (k, workload::smooth_base(k)))
        .collect();
    let host = generate(&host, 42);
    let smooth = generate(&smooth, 43);

    print!("{:<18} {:>8}", "bytes/point", "entropy");
    for len in BLOCK_LENS {
        print!(" {:>8}", format!("@{len}"));
    }
    println!();
    size_table("workload (100)", &host);
    size_table("smooth (4)", &smooth);

    println!(
        "\n{:<10} {:>6} {:>12} {:>12} {:>12} {:>12}",
        "M values/s", "block", "encode best", "decode best", "encode cpu", "decode cpu"
    );
    for block_len in [360, 8640] {
        speed("workload", &host, block_len);
        speed("smooth", &smooth, block_len);
    }
}
