//! Shared helpers for the store's integration tests: a temp dir, a store on a manual
//! clock, batch building, metric reading.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sumi_model::{AppendOutcome, Sink};
use sumi_model::{Batch, ManualClock, SeriesRules, StorageAggregation, StorageSchemas};
use sumi_store::{Store, StoreOptions};

static N: AtomicU64 = AtomicU64::new(0);

pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("sumi-store-it-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Rules with one retention for every series and the given aggregation config text.
pub fn rules(retentions: &str, aggregation: &str) -> SeriesRules {
    let schemas = StorageSchemas::parse(
        "test-schemas",
        &format!("[all]\npattern = .*\nretentions = {retentions}\n"),
    )
    .unwrap();
    let aggregation = if aggregation.is_empty() {
        StorageAggregation::builtin()
    } else {
        StorageAggregation::parse("test-aggregation", aggregation).unwrap()
    };
    SeriesRules {
        schemas,
        aggregation,
    }
}

pub fn options(dir: &Path, rules: SeriesRules) -> StoreOptions {
    let mut o = StoreOptions::for_tests(dir);
    o.rules = rules;
    o.rollup_grace_secs = 0;
    o
}

pub fn open(opts: &StoreOptions, clock: &ManualClock) -> Arc<Store> {
    Store::open(opts.clone(), Arc::new(clock.clone())).unwrap()
}

pub fn batch(points: &[(&str, i64, f64)]) -> Batch {
    let mut b = Batch::new();
    for &(n, t, v) in points {
        b.push(n, t, v);
    }
    b
}

pub fn append(store: &Store, points: &[(&str, i64, f64)]) -> AppendOutcome {
    store.append(&batch(points)).unwrap()
}

/// The value of a metric line `name` (labels included) on the Prometheus page.
pub fn metric(store: &Store, name: &str) -> f64 {
    let mut s = String::new();
    store.write_prometheus(&mut s);
    s.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("metric {name} missing in\n{s}"))
}

/// `fetch` as `(start, step, values)` with values as bits, for exact comparisons.
pub fn fetch_bits(
    store: &Store,
    path: &str,
    from: i64,
    until: i64,
    now: i64,
) -> Option<(i64, i64, i64, Vec<Option<u64>>)> {
    store.fetch(path, from, until, now).map(|f| {
        (
            f.start,
            f.end,
            f.step,
            f.values.iter().map(|v| v.map(f64::to_bits)).collect(),
        )
    })
}
