//! Speed of the block codec on the benchmark workload (100 metrics of one host, 10 s step),
//! in blocks of 360 points (an hour) and 8,640 points (a day), single core.
//!
//! `cargo bench -p sumi-store --bench codec`; throughput is in points (values) a second.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use sumi_store::codec::{self, workload};

/// (slots, values) of every block of the host's 100 metrics, cut in `block_len`.
fn blocks(kinds: &[(workload::Kind, f64)], block_len: usize) -> Vec<(Vec<i64>, Vec<f64>)> {
    let mut rng = workload::Rng::new(42);
    let points = 8640;
    let slots: Vec<i64> = (0..points as i64).map(|i| 1_700_000_000 + i * 10).collect();
    let mut out = Vec::new();
    for &(kind, base) in kinds {
        let s = workload::series(kind, base, 10, points, &mut rng);
        for (sl, vl) in slots.chunks(block_len).zip(s.values.chunks(block_len)) {
            out.push((sl.to_vec(), vl.to_vec()));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let workload: Vec<_> = workload::host_metrics()
        .iter()
        .map(|m| (m.kind, m.base))
        .collect();
    let smooth: Vec<_> = workload::Kind::SMOOTH
        .iter()
        .map(|&k| (k, workload::smooth_base(k)))
        .collect();
    for (name, kinds) in [("workload", &workload), ("smooth", &smooth)] {
        for block_len in [360, 8640] {
            let raw = blocks(kinds, block_len);
            let points: usize = raw.iter().map(|(s, _)| s.len()).sum();
            let encoded: Vec<Vec<u8>> = raw
                .iter()
                .map(|(s, v)| {
                    let mut b = Vec::new();
                    codec::encode(10, s, v, &mut b);
                    b
                })
                .collect();
            let mut g = c.benchmark_group(format!("codec/{name}"));
            g.throughput(Throughput::Elements(points as u64));
            g.bench_function(BenchmarkId::new("encode", block_len), |b| {
                let mut out = Vec::with_capacity(points * 4);
                b.iter(|| {
                    out.clear();
                    for (s, v) in &raw {
                        codec::encode(10, s, v, &mut out);
                    }
                    black_box(out.len())
                })
            });
            g.bench_function(BenchmarkId::new("decode", block_len), |b| {
                let (mut s, mut v) = (Vec::with_capacity(block_len), Vec::with_capacity(block_len));
                b.iter(|| {
                    let mut total = 0;
                    for block in &encoded {
                        s.clear();
                        v.clear();
                        codec::decode(block, &mut s, &mut v).expect("valid block");
                        total += v.len();
                    }
                    black_box(total)
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
