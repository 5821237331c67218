//! `Store::import_series`: a series created with the source's config, every archive's
//! points read back where whisper would read them (fine and coarse ranges, before and
//! after flushes, rollups and a restart), fill semantics against live data.

mod common;

use std::sync::Arc;

use common::*;
use sumi_model::{AggMethod, ManualClock, Retention, SeriesConfig};

const NOW: i64 = 1_800_000_000; // a multiple of 3600

fn config(spec: &str, method: AggMethod, xff: f32) -> SeriesConfig {
    SeriesConfig {
        retention: Arc::new(Retention::parse(spec).unwrap()),
        method,
        xff,
    }
}

fn values(store: &sumi_store::Store, name: &str, from: i64, now: i64) -> (i64, Vec<Option<f64>>) {
    let f = store.fetch(name, from, now, now).expect("fetch");
    (f.step, f.values)
}

/// Fine points for the last hour; coarse points over the whole day that deliberately
/// differ from any rollup of the fine ones (as whisper's do at its fine archive's
/// retention edge).
fn source() -> (SeriesConfig, Vec<Vec<(i64, f64)>>) {
    let cfg = config("10s:1h,1m:1d", AggMethod::Max, 0.3);
    let fine: Vec<(i64, f64)> = (0..360)
        .filter(|i| i % 7 != 3)
        .map(|i| (NOW - 3590 + i * 10, i as f64 * 0.5))
        .collect();
    let coarse: Vec<(i64, f64)> = (0..1440)
        // gaps only where the fine archive is empty too (whisper's coarse archive
        // has a value wherever its fine one meets xFilesFactor)
        .filter(|i| i % 11 != 5 || *i >= 1379)
        .map(|i| (NOW - 86_340 + i * 60, 1000.0 + i as f64))
        .collect();
    (cfg, vec![fine, coarse])
}

fn check_source(store: &sumi_store::Store, name: &str, src: &[Vec<(i64, f64)>]) {
    // the last hour: the fine archive, exactly
    let (step, v) = values(store, name, NOW - 3600, NOW);
    assert_eq!(step, 10);
    let fine: std::collections::HashMap<i64, f64> = src[0].iter().copied().collect();
    let start = NOW - 3600 + 10;
    for (i, got) in v.iter().enumerate() {
        let t = start + i as i64 * 10;
        assert_eq!(*got, fine.get(&t).copied(), "fine slot {t}");
    }
    // the last day: the coarse archive, exactly, including the last hour
    let (step, v) = values(store, name, NOW - 86_400, NOW);
    assert_eq!(step, 60);
    let coarse: std::collections::HashMap<i64, f64> = src[1].iter().copied().collect();
    let start = NOW - 86_400 + 60;
    for (i, got) in v.iter().enumerate() {
        let t = start + i as i64 * 60;
        assert_eq!(*got, coarse.get(&t).copied(), "coarse slot {t}");
    }
}

#[test]
fn import_answers_every_archive_exactly() {
    let dir = TempDir::new("import-exact");
    let clock = ManualClock::new(NOW);
    // the store's own rules would give other archives: the source's config wins
    let opts = options(dir.path(), rules("1m:7d", ""));
    let store = open(&opts, &clock);
    let (cfg, src) = source();
    let out = store.import_series("a.b", &cfg, &src).unwrap();
    assert!(out.created);
    assert!(!out.other_archives);
    let total: usize = src.iter().map(Vec::len).sum();
    assert_eq!(out.written, total as u64);
    assert_eq!(out.present, 0);
    check_source(&store, "a.b", &src);
    store.run_maintenance().unwrap();
    check_source(&store, "a.b", &src);
    // importing again writes nothing
    let again = store.import_series("a.b", &cfg, &src).unwrap();
    assert!(!again.created);
    assert_eq!(again.written, 0);
    assert_eq!(again.present, total as u64);
    store.close().unwrap();
    drop(store);
    let store = open(&opts, &clock);
    check_source(&store, "a.b", &src);
    // later: the fine level drops out of retention, the coarse one still answers
    clock.set(NOW + 7200);
    store.run_maintenance().unwrap();
    let (step, v) = values(&store, "a.b", NOW + 7200 - 86_400, NOW + 7200);
    assert_eq!(step, 60);
    let coarse: std::collections::HashMap<i64, f64> = src[1].iter().copied().collect();
    let start = NOW + 7200 - 86_400 + 60;
    for (i, got) in v.iter().enumerate() {
        let t = start + i as i64 * 60;
        if t <= NOW {
            assert_eq!(*got, coarse.get(&t).copied(), "coarse slot {t} later");
        }
    }
}

#[test]
fn import_fills_gaps_and_never_overwrites() {
    let dir = TempDir::new("import-fill");
    let clock = ManualClock::new(NOW);
    let opts = options(
        dir.path(),
        rules(
            "10s:1h,1m:1d",
            "[all]\npattern = .*\nxFilesFactor = 0.3\naggregationMethod = max\n",
        ),
    );
    let store = open(&opts, &clock);
    // live data: the last ten minutes, every 10 s, negative values
    let live: Vec<(&str, i64, f64)> = (0..60)
        .map(|i| ("a.b", NOW - 590 + i * 10, -(i as f64) - 1.0))
        .collect();
    append(&store, &live);
    store.run_maintenance().unwrap();
    let (cfg, src) = source();
    let out = store.import_series("a.b", &cfg, &src).unwrap();
    assert!(!out.created);
    assert!(out.present > 0);
    let (_, v) = values(&store, "a.b", NOW - 3600, NOW);
    let fine: std::collections::HashMap<i64, f64> = src[0].iter().copied().collect();
    let live_map: std::collections::HashMap<i64, f64> =
        live.iter().map(|&(_, t, v)| (t, v)).collect();
    for (i, got) in v.iter().enumerate() {
        let t = NOW - 3590 + i as i64 * 10;
        let want = live_map.get(&t).or(fine.get(&t)).copied();
        assert_eq!(*got, want, "fine slot {t}");
    }
    // coarse: the minutes live data covers were not empty: they keep the rollup of
    // the fine level (live points, imported ones where live had none)
    let (_, v) = values(&store, "a.b", NOW - 86_400, NOW);
    let coarse: std::collections::HashMap<i64, f64> = src[1].iter().copied().collect();
    for (i, got) in v.iter().enumerate() {
        let t = NOW - 86_340 + i as i64 * 60;
        if t >= NOW - 600 {
            // the merged fine level: live points, imported ones in the gaps
            let m: Vec<f64> = (0..6)
                .filter_map(|j| live_map.get(&(t + j * 10)).or(fine.get(&(t + j * 10))))
                .copied()
                .collect();
            let want = if m.len() as f32 / 6.0 >= 0.3 {
                Some(m.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            } else {
                // below xFilesFactor the slot was empty: the import filled it
                coarse.get(&t).copied()
            };
            assert_eq!(*got, want, "live minute {t}");
        } else {
            assert_eq!(*got, coarse.get(&t).copied(), "imported minute {t}");
        }
    }
}

#[test]
fn import_into_other_archives_places_by_age() {
    let dir = TempDir::new("import-other");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("1m:2h,1h:2d", ""));
    let store = open(&opts, &clock);
    append(&store, &[("x", NOW - 60, 5.0)]);
    let (cfg, src) = source();
    let out = store.import_series("x", &cfg, &src).unwrap();
    assert!(out.other_archives);
    assert!(out.written > 0);
    // the live point stays
    let (step, v) = values(&store, "x", NOW - 3600, NOW);
    assert_eq!(step, 60);
    assert_eq!(v[v.len() - 2], Some(5.0));
    // an hour and a half ago: the source's coarse archive, placed in the 1m level
    let t = NOW - 5400;
    let want = src[1].iter().find(|p| p.0 == t).map(|p| p.1);
    let f = store.fetch("x", NOW - 7000, NOW, NOW).unwrap();
    assert_eq!(f.step, 60);
    assert_eq!(f.values[((t - f.start) / 60) as usize], want);
}
