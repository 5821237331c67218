//! End-to-end behaviour of the store: placement, last-write-wins, refusals, restart,
//! crash recovery, corruption handling, find.

mod common;

use common::*;
use sumi_model::glob::PathPattern;
use sumi_model::ManualClock;
use sumi_model::Sink;
use sumi_store::{Fetched, FindEntry, Store};

const NOW: i64 = 1_700_000_000; // a multiple of 10 and of 60... and 3600? no: 1_700_000_000 % 3600 = 800

fn vals(
    store: &Store,
    path: &str,
    from: i64,
    until: i64,
    now: i64,
) -> (i64, i64, Vec<Option<f64>>) {
    let f = store.fetch(path, from, until, now).expect("fetch answers");
    (f.start, f.step, f.values)
}

#[test]
fn round_trip_at_every_level() {
    let dir = TempDir::new("levels");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h,1m:1d,10m:30d", ""));
    let store = open(&opts, &clock);
    // level 0 (fresh), level 1 (2 h old), level 2 (5 days old)
    let out = append(
        &store,
        &[
            ("a.b", NOW - 25, 1.5),
            ("a.b", NOW - 7200 + 5, 2.5),
            ("a.b", NOW - 5 * 86400 + 7, 3.5),
        ],
    );
    assert_eq!(out.accepted, 3);
    for round in 0..2 {
        // level 0: the last hour at 10 s
        let (start, step, v) = vals(&store, "a.b", NOW - 3600, NOW, NOW);
        assert_eq!(step, 10);
        let i = ((NOW - 30 - start) / 10) as usize;
        assert_eq!(v[i], Some(1.5), "round {round}");
        assert_eq!(v.iter().flatten().count(), 1);
        // level 1: the last day at 1 min; the fresh point rolls up (average of one of six
        // slots is below xff 0.5, so None), the direct write is there
        let (start, step, v) = vals(&store, "a.b", NOW - 86400, NOW, NOW);
        assert_eq!(step, 60);
        let slot = NOW - 7200 + 5 - (NOW - 7200 + 5).rem_euclid(60);
        assert_eq!(v[((slot - start) / 60) as usize], Some(2.5));
        assert_eq!(v.iter().flatten().count(), 1, "round {round}: {v:?}");
        // level 2: 30 days at 10 min; the 1 min direct write is 1 of 10 slots: below xff
        let (start, step, v) = vals(&store, "a.b", NOW - 30 * 86400, NOW, NOW);
        assert_eq!(step, 600);
        let slot = NOW - 5 * 86400 + 7 - (NOW - 5 * 86400 + 7).rem_euclid(600);
        assert_eq!(v[((slot - start) / 600) as usize], Some(3.5));
        assert_eq!(v.iter().flatten().count(), 1);
        // the same answers once everything is in parts and rolled up
        store.run_maintenance().unwrap();
    }
    assert!(metric(&store, "sumi_flushes_total") >= 1.0);
    store.close().unwrap();
}

#[test]
fn last_write_wins_within_and_across_batches() {
    let dir = TempDir::new("lww");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h", ""));
    let store = open(&opts, &clock);
    let t = NOW - 100;
    append(
        &store,
        &[
            ("x", t, 1.0),
            ("x", t + 3, 2.0),
            ("y", t, 7.0),
            ("x", t + 1, 3.0),
        ],
    );
    let (start, _, v) = vals(&store, "x", NOW - 3600, NOW, NOW);
    let i = ((t - t.rem_euclid(10) - start) / 10) as usize;
    assert_eq!(
        v[i],
        Some(3.0),
        "last in arrival order, not the latest timestamp"
    );
    store.run_maintenance().unwrap();
    append(&store, &[("x", t + 9, 4.0)]);
    assert_eq!(
        vals(&store, "x", NOW - 3600, NOW, NOW).2[i],
        Some(4.0),
        "head beats parts"
    );
    store.run_maintenance().unwrap();
    assert_eq!(
        vals(&store, "x", NOW - 3600, NOW, NOW).2[i],
        Some(4.0),
        "newer part beats older"
    );
    append(&store, &[("x", t, 5.0)]);
    store.run_maintenance().unwrap();
    // compaction merged parts; the newest still wins
    assert_eq!(vals(&store, "x", NOW - 3600, NOW, NOW).2[i], Some(5.0));
    assert_eq!(vals(&store, "y", NOW - 3600, NOW, NOW).2[i], Some(7.0));
    store.close().unwrap();
}

#[test]
fn late_and_out_of_order_points() {
    let dir = TempDir::new("late");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h,1m:1d", ""));
    let store = open(&opts, &clock);
    let ts: Vec<i64> = (0..30).map(|i| NOW - 300 + i * 10).collect();
    let mut pts: Vec<(&str, i64, f64)> = ts.iter().map(|&t| ("s", t, t as f64)).collect();
    pts.reverse();
    append(&store, &pts[..15]);
    store.run_maintenance().unwrap();
    clock.advance(4000); // now everything is older than level 0's hour
    append(&store, &pts[15..]); // these go to level 1 directly
    let now = NOW + 4000;
    let (start, step, v) = vals(&store, "s", now - 86400, now, now);
    assert_eq!(step, 60);
    // every minute from NOW-300 to NOW-10: the newest 15 points (at level 0) roll up where
    // they fill at least half a minute; the older ones are direct level-1 writes, the
    // last one written per minute winning
    for m in 0..5 {
        let slot = NOW - 300 + m * 60 - (NOW - 300 + m * 60).rem_euclid(60);
        let got = v[((slot - start) / step) as usize];
        assert!(got.is_some(), "minute {m}: {v:?}");
    }
    store.close().unwrap();
}

#[test]
fn too_old_and_too_new_are_refused_and_counted() {
    let dir = TempDir::new("refuse");
    let clock = ManualClock::new(NOW);
    let mut opts = options(dir.path(), rules("10s:1h,1m:1d", ""));
    opts.max_future_secs = 600;
    let store = open(&opts, &clock);
    let out = append(
        &store,
        &[
            ("r", NOW - 86400, 1.0),
            ("r", NOW - 86399, 2.0),
            ("r", NOW + 600, 3.0),
            ("r", NOW + 601, 4.0),
            ("r", i64::MIN, 5.0),
            ("r", i64::MAX, 6.0),
        ],
    );
    assert_eq!((out.accepted, out.too_old, out.too_new), (2, 2, 2));
    assert_eq!(
        metric(&store, "sumi_points_rejected_total{reason=\"too_old\"}"),
        2.0
    );
    assert_eq!(
        metric(&store, "sumi_points_rejected_total{reason=\"too_new\"}"),
        2.0
    );
    assert_eq!(metric(&store, "sumi_points_stored_total"), 2.0);
    // the future point is readable once its time has come
    clock.advance(700);
    let now = NOW + 700;
    let (start, _, v) = vals(&store, "r", now - 3600, now, now);
    let slot = NOW + 600;
    assert_eq!(v[((slot - start) / 10) as usize], Some(3.0));
    store.close().unwrap();
}

#[test]
fn fetch_edges_like_whisper() {
    let dir = TempDir::new("edges");
    let clock = ManualClock::new(NOW);
    let store = open(&options(dir.path(), rules("10s:1h", "")), &clock);
    append(&store, &[("e", NOW - 10, 1.0)]);
    assert!(store.fetch("nope", NOW - 100, NOW, NOW).is_none());
    assert!(
        store.fetch("e", NOW, NOW - 1, NOW).is_none(),
        "from > until"
    );
    assert!(
        store.fetch("e", NOW + 1, NOW + 100, NOW).is_none(),
        "from in the future"
    );
    assert!(
        store.fetch("e", NOW - 9000, NOW - 3601, NOW).is_none(),
        "until beyond retention"
    );
    let f = store.fetch("e", NOW - 10, NOW - 10, NOW).unwrap();
    assert_eq!(
        (f.start, f.end, f.values.len()),
        (NOW, NOW + 10, 1),
        "zero-length range: one slot"
    );
    let f = store.fetch("e", NOW - 20, NOW - 10, NOW).unwrap();
    assert_eq!(f.start, NOW - 10);
    assert_eq!(f.values, vec![Some(1.0)]);
    store.close().unwrap();
}

#[test]
fn restart_keeps_everything() {
    let dir = TempDir::new("restart");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h,1m:1d", ""));
    let store = open(&opts, &clock);
    append(&store, &[("a.x", NOW - 10, 1.0), ("a.y", NOW - 7200, 2.0)]);
    store.run_maintenance().unwrap();
    append(&store, &[("a.x", NOW - 20, 3.0), ("b", NOW - 30, 4.0)]);
    let before: Vec<_> = ["a.x", "a.y", "b"]
        .iter()
        .map(|p| fetch_bits(&store, p, NOW - 86400, NOW, NOW))
        .collect();
    store.close().unwrap();
    store.close().unwrap(); // idempotent
    assert!(
        store.append(&batch(&[("a.x", NOW, 1.0)])).is_err(),
        "closed"
    );
    drop(store);
    let store = open(&opts, &clock);
    assert_eq!(store.series_count(), 3);
    let after: Vec<_> = ["a.x", "a.y", "b"]
        .iter()
        .map(|p| fetch_bits(&store, p, NOW - 86400, NOW, NOW))
        .collect();
    assert_eq!(before, after);
    assert_eq!(
        metric(&store, "sumi_wal_replayed_points_total"),
        0.0,
        "close flushed the head"
    );
    store.close().unwrap();
}

#[test]
fn crash_replays_the_wal_exactly_once() {
    let dir = TempDir::new("crash");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h,1m:1d", ""));
    let store = open(&opts, &clock);
    append(&store, &[("c", NOW - 100, 1.0), ("c", NOW - 90, 2.0)]);
    store.run_maintenance().unwrap(); // in parts, WAL truncated
    append(&store, &[("c", NOW - 100, 5.0), ("d", NOW - 50, 6.0)]); // only in WAL + head
    let before = fetch_bits(&store, "c", NOW - 3600, NOW, NOW);
    drop(store); // no close: a crash
    let store = open(&opts, &clock);
    assert_eq!(metric(&store, "sumi_wal_replayed_points_total"), 2.0);
    assert_eq!(fetch_bits(&store, "c", NOW - 3600, NOW, NOW), before);
    assert_eq!(
        vals(&store, "d", NOW - 3600, NOW, NOW)
            .2
            .iter()
            .flatten()
            .count(),
        1
    );
    // a second crash right away replays the same points again, with the same result
    drop(store);
    let store = open(&opts, &clock);
    assert_eq!(fetch_bits(&store, "c", NOW - 3600, NOW, NOW), before);
    store.run_maintenance().unwrap();
    assert_eq!(fetch_bits(&store, "c", NOW - 3600, NOW, NOW), before);
    store.close().unwrap();
}

fn last_wal_segment(dir: &std::path::Path) -> std::path::PathBuf {
    let mut segs: Vec<_> = std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 16)
        .collect();
    segs.sort();
    segs.pop().expect("a WAL segment with records")
}

#[test]
fn torn_wal_tail_is_cut_and_counted() {
    let dir = TempDir::new("torn");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h", ""));
    let store = open(&opts, &clock);
    append(&store, &[("t", NOW - 100, 1.0)]);
    append(&store, &[("t", NOW - 90, 2.0)]);
    drop(store);
    let seg = last_wal_segment(dir.path());
    let len = std::fs::metadata(&seg).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 4)
        .unwrap();
    let store = open(&opts, &clock);
    assert_eq!(metric(&store, "sumi_wal_corrupt_tail_total"), 1.0);
    assert_eq!(metric(&store, "sumi_wal_replayed_points_total"), 1.0);
    let v = vals(&store, "t", NOW - 3600, NOW, NOW).2;
    assert_eq!(v.iter().flatten().copied().collect::<Vec<_>>(), vec![1.0]);
    // garbage appended after the last record is cut the same way
    append(&store, &[("t", NOW - 80, 3.0)]);
    drop(store);
    let seg = last_wal_segment(dir.path());
    let mut data = std::fs::read(&seg).unwrap();
    data.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    std::fs::write(&seg, &data).unwrap();
    let store = open(&opts, &clock);
    assert_eq!(metric(&store, "sumi_wal_corrupt_tail_total"), 1.0);
    assert_eq!(
        vals(&store, "t", NOW - 3600, NOW, NOW)
            .2
            .iter()
            .flatten()
            .count(),
        2
    );
    store.close().unwrap();
}

#[test]
fn corrupt_part_is_skipped_with_an_error() {
    let dir = TempDir::new("corrupt");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h", ""));
    let store = open(&opts, &clock);
    append(&store, &[("p", NOW - 100, 1.0)]);
    store.run_maintenance().unwrap();
    append(&store, &[("q", NOW - 100, 2.0)]);
    store.close().unwrap();
    drop(store);
    // corrupt the first part's index (the byte before the footer)
    let mut parts: Vec<_> = std::fs::read_dir(dir.path().join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    parts.sort();
    let first = &parts[0];
    let mut data = std::fs::read(first).unwrap();
    let i = data.len() - 33;
    data[i] ^= 0xff;
    std::fs::write(first, &data).unwrap();
    let store = open(&opts, &clock);
    assert_eq!(metric(&store, "sumi_parts_corrupt_total"), 1.0);
    let name = first.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        std::fs::read_dir(dir.path().join("quarantine"))
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().starts_with(&name)),
        "set aside for a human, in quarantine/"
    );
    assert_eq!(
        vals(&store, "p", NOW - 3600, NOW, NOW)
            .2
            .iter()
            .flatten()
            .count(),
        0
    );
    assert_eq!(
        vals(&store, "q", NOW - 3600, NOW, NOW)
            .2
            .iter()
            .flatten()
            .count(),
        1
    );
    store.close().unwrap();
}

#[test]
fn find_follows_graphite_web() {
    let dir = TempDir::new("find");
    let clock = ManualClock::new(NOW);
    let store = open(&options(dir.path(), rules("10s:1h", "")), &clock);
    append(
        &store,
        &[
            ("servers.web01.cpu", NOW, 1.0),
            ("servers.web01.cpu.user", NOW, 1.0),
            ("servers.web02.cpu.user", NOW, 1.0),
            ("servers.db01.disk.sda.reads", NOW, 1.0),
            ("other", NOW, 1.0),
        ],
    );
    let f = |p: &str| -> Vec<(String, bool)> {
        store
            .find(&PathPattern::parse(p))
            .into_iter()
            .map(|FindEntry { path, is_leaf }| (path, is_leaf))
            .collect()
    };
    let e = |v: &[(&str, bool)]| -> Vec<(String, bool)> {
        v.iter().map(|(p, l)| (p.to_string(), *l)).collect()
    };
    assert_eq!(f("*"), e(&[("other", true), ("servers", false)]));
    assert_eq!(
        f("servers.web01.*"),
        e(&[("servers.web01.cpu", true), ("servers.web01.cpu", false)])
    );
    assert_eq!(
        f("servers.{web,db}0[12].cpu.user"),
        e(&[
            ("servers.web01.cpu.user", true),
            ("servers.web02.cpu.user", true)
        ])
    );
    assert_eq!(
        f("servers.**.user"),
        e(&[
            ("servers.web01.cpu.user", true),
            ("servers.web02.cpu.user", true)
        ])
    );
    assert_eq!(
        f("servers.*"),
        e(&[
            ("servers.db01", false),
            ("servers.web01", false),
            ("servers.web02", false)
        ])
    );
    assert_eq!(f("servers.web03.*"), e(&[]));
    store.close().unwrap();
}

#[test]
fn fetch_many_matches_fetch() {
    let dir = TempDir::new("many");
    let clock = ManualClock::new(NOW);
    let store = open(&options(dir.path(), rules("10s:1h", "")), &clock);
    let names: Vec<String> = (0..300).map(|i| format!("m.s{i}")).collect();
    let pts: Vec<(&str, i64, f64)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), NOW - 10 * (i as i64 % 50), i as f64))
        .collect();
    append(&store, &pts);
    let mut paths: Vec<&str> = names.iter().map(String::as_str).collect();
    paths.push("missing");
    let many = store.fetch_many(&paths, NOW - 3600, NOW, NOW);
    assert_eq!(many.len(), paths.len());
    for (p, got) in paths.iter().zip(&many) {
        assert_eq!(got, &store.fetch(p, NOW - 3600, NOW, NOW), "{p}");
    }
    assert!(many.last().unwrap().is_none());
    let mut buf = vec![Some(1.0); 3];
    let got = store
        .fetch_into("m.s7", NOW - 3600, NOW, NOW, &mut buf)
        .unwrap();
    let want = store.fetch("m.s7", NOW - 3600, NOW, NOW).unwrap();
    assert_eq!(got, (want.start, want.end, want.step));
    assert_eq!(buf, want.values);
    assert!(store
        .fetch_into("missing", NOW - 3600, NOW, NOW, &mut buf)
        .is_none());
    store.close().unwrap();
}

/// Every path's answer through `plan`, in path order.
fn read_all(store: &Store, plan: &sumi_store::FetchPlan, n: usize) -> Vec<Option<Fetched>> {
    let mut out = vec![None; n];
    store.read_plan(plan, |i, f| {
        out[i] = Some(Fetched {
            start: f.start,
            end: f.end,
            step: f.step,
            values: f.values.to_vec(),
        });
    });
    out
}

/// The series a find noted are the ones the fetch reads, whatever order and chunks
/// the paths come in, with series deleted or created again since the find.
#[test]
fn a_find_hands_its_series_to_the_fetch() {
    let dir = TempDir::new("hint");
    let clock = ManualClock::new(NOW);
    let store = open(&options(dir.path(), rules("10s:1h", "")), &clock);
    let names: Vec<String> = (0..3000).map(|i| format!("h.s{i:04}")).collect();
    let pts: Vec<(&str, i64, f64)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), NOW - 10 * (i as i64 % 50), i as f64))
        .chain([("g.x", NOW, 1.0), ("h.t", NOW, 2.0)])
        .collect();
    append(&store, &pts);
    let mut hint = sumi_store::LeafHint::default();
    let found = store.find_hinted(&PathPattern::parse("h.*"), &mut hint);
    assert_eq!(found, store.find(&PathPattern::parse("h.*")));
    assert_eq!(found.len(), 3001);
    let small = store.find_hinted(&PathPattern::parse("g.*"), &mut hint);
    assert_eq!(small.len(), 1);
    let check = |paths: &[&str], hint: &mut sumi_store::LeafHint, what: &str| {
        let plan = store.plan_fetch_hinted(paths, NOW - 3600, NOW, NOW, hint);
        let got = read_all(&store, &plan, paths.len());
        for (p, g) in paths.iter().zip(&got) {
            assert_eq!(g, &store.fetch(p, NOW - 3600, NOW, NOW), "{what}: {p}");
        }
        assert_eq!(plan.series(), got.iter().flatten().count(), "{what}");
    };
    let all: Vec<&str> = found.iter().map(|e| e.path.as_str()).collect();
    // in order, a chunk at a time
    for chunk in all.chunks(700) {
        check(chunk, &mut hint, "chunks");
    }
    assert_eq!(hint.hits(), 3001);
    // a second pass, then every other path, then backwards, with other names mixed in
    check(&all, &mut hint, "second pass");
    assert_eq!(hint.hits(), 2 * 3001);
    let sparse: Vec<&str> = all
        .iter()
        .step_by(2)
        .copied()
        .chain(["g.x", "nope"])
        .collect();
    check(&sparse, &mut hint, "sparse");
    let back: Vec<&str> = all.iter().rev().copied().collect();
    check(&back, &mut hint, "backwards");
    // deleted since the find; one created again under a new id
    store
        .delete_series_named(&["h.s0005", "h.s0006", "h.t"])
        .unwrap();
    append(&store, &[("h.s0006", NOW, 66.0)]);
    check(&all, &mut hint, "after deletes");
    let again = store.fetch("h.s0006", NOW - 3600, NOW, NOW).unwrap();
    assert_eq!(
        again.values.iter().flatten().copied().collect::<Vec<_>>(),
        [66.0]
    );
    store.close().unwrap();
}

#[test]
fn metrics_page_has_the_required_names() {
    let dir = TempDir::new("metrics");
    let clock = ManualClock::new(NOW);
    let store = open(&options(dir.path(), rules("10s:1h", "")), &clock);
    append(&store, &[("m", NOW, 1.0), ("n", NOW, 1.0)]);
    store.run_maintenance().unwrap();
    for name in [
        "sumi_points_stored_total",
        "sumi_series_active",
        "sumi_series_created_total",
        "sumi_wal_bytes_total",
        "sumi_wal_fsyncs_total",
        "sumi_wal_fsync_seconds_total",
        "sumi_head_rows",
        "sumi_head_bytes",
        "sumi_compactions_total",
        "sumi_rollups_total",
        "sumi_retention_drops_total",
        "sumi_wal_replayed_points_total",
        "sumi_wal_corrupt_tail_total",
        "sumi_parts{level=\"0\"}",
        "sumi_part_bytes{level=\"0\"}",
    ] {
        let _ = metric(&store, name);
    }
    assert_eq!(metric(&store, "sumi_series_active"), 2.0);
    assert_eq!(metric(&store, "sumi_series_created_total"), 2.0);
    assert_eq!(metric(&store, "sumi_head_rows"), 0.0);
    assert!(metric(&store, "sumi_wal_bytes_total") > 0.0);
    store.close().unwrap();
}

mod extremes {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

        /// Timestamps, clocks and fetch ranges anywhere in i64: typed refusals or answers,
        /// never a panic.
        #[test]
        fn any_times_never_panic(
            now in prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), any::<i64>(), Just(NOW)],
            pts in proptest::collection::vec((any::<i64>(), any::<f64>()), 1..20),
            ranges in proptest::collection::vec((any::<i64>(), any::<i64>(), any::<i64>()), 1..10),
        ) {
            let dir = TempDir::new("extremes");
            let clock = ManualClock::new(now);
            let store = open(&options(dir.path(), rules("10s:1h,1m:1d", "")), &clock);
            let b: Vec<(&str, i64, f64)> = pts.iter().map(|&(t, v)| ("x", t, v)).collect();
            let out = append(&store, &b);
            prop_assert_eq!(out.accepted + out.too_old + out.too_new, pts.len() as u64);
            for &(from, until, at) in &ranges {
                let _ = store.fetch("x", from, until, at);
                let _ = store.fetch("x", from, until, now);
            }
            store.run_maintenance().unwrap();
            for &(from, until, at) in &ranges {
                let _ = store.fetch("x", from, until, at);
            }
            store.close().unwrap();
        }
    }
}

#[test]
fn the_new_series_budget_throttles_with_a_retry_hint() {
    let dir = TempDir::new("throttle");
    let clock = ManualClock::new(NOW);
    let mut opts = options(dir.path(), rules("10s:1h", ""));
    opts.max_new_series_per_minute = 2;
    let store = open(&opts, &clock);
    let b = batch(&[
        ("t.a", NOW - 10, 1.0),
        ("t.b", NOW - 10, 2.0),
        ("t.c", NOW - 10, 3.0),
    ]);
    match store.append(&b) {
        Err(sumi_model::SinkError::Throttled {
            retry_after,
            reason,
        }) => {
            // two a minute: the third series may come within 30 s
            assert!(
                retry_after > std::time::Duration::ZERO
                    && retry_after <= std::time::Duration::from_secs(30),
                "{retry_after:?}"
            );
            assert!(reason.starts_with("new series limit: "), "{reason}");
        }
        other => panic!("expected a throttled batch, got {other:?}"),
    }
    // nothing of the batch is visible, the series created so far stay
    assert!(store
        .fetch("t.a", NOW - 3600, NOW, NOW)
        .is_none_or(|f| f.values.iter().all(Option::is_none)));
    assert_eq!(metric(&store, "sumi_points_stored_total"), 0.0);
}

/// Three flushes over the same series and partition, the second with a gap (every
/// seventh series left out).
fn flush_three_rounds(store: &Store, names: &[String]) {
    for round in 0..3i64 {
        let pts: Vec<(&str, i64, f64)> = names
            .iter()
            .enumerate()
            .filter(|(i, _)| round != 1 || i % 7 != 0)
            .map(|(i, n)| {
                (
                    n.as_str(),
                    NOW - 600 + round * 10,
                    (i as i64 * 3 + round) as f64,
                )
            })
            .collect();
        append(store, &pts);
        store.run_maintenance().unwrap();
    }
}

#[test]
fn close_merges_each_partition_into_one_part() {
    let dir = TempDir::new("close-merge");
    let clock = ManualClock::new(NOW);
    let mut opts = options(dir.path(), rules("10s:1d", ""));
    opts.close_merge = std::time::Duration::from_secs(30);
    let names: Vec<String> = (0..300)
        .map(|i| format!("h{}.m{}", i / 10, i % 10))
        .collect();
    let store = open(&opts, &clock);
    flush_three_rounds(&store, &names);
    append(&store, &[("h0.m0", NOW - 600, -1.0)]); // the last write of a slot wins
    let before: Vec<_> = names
        .iter()
        .map(|p| fetch_bits(&store, p, NOW - 3600, NOW, NOW))
        .collect();
    assert!(metric(&store, "sumi_parts{level=\"0\"}") >= 3.0);
    store.close().unwrap();
    drop(store);
    let parts = std::fs::read_dir(dir.path().join("parts"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "part"))
        })
        .count();
    assert_eq!(parts, 1, "one partition, one part after close");
    let store = open(&opts, &clock);
    assert_eq!(metric(&store, "sumi_parts{level=\"0\"}"), 1.0);
    let after: Vec<_> = names
        .iter()
        .map(|p| fetch_bits(&store, p, NOW - 3600, NOW, NOW))
        .collect();
    assert_eq!(before, after);
    let (_, _, v) = vals(&store, "h0.m0", NOW - 610, NOW - 600, NOW);
    assert_eq!(v, vec![Some(-1.0)]);
    store.close().unwrap();
}

/// What [`fetch_bits`] gives back.
type FetchedBits = Option<(i64, i64, i64, Vec<Option<u64>>)>;

/// Every series' points of the last hour, bit for bit.
fn read_last_hour(store: &Store, names: &[String]) -> Vec<FetchedBits> {
    names
        .iter()
        .map(|p| fetch_bits(store, p, NOW - 3600, NOW, NOW))
        .collect()
}

/// How many part files the store in `dir` has.
fn part_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("parts"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "part"))
        })
        .count()
}

/// A stop whose merge time is up before the merge could end leaves the parts as they
/// are: every point reads back after the restart, and compaction merges the parts once
/// the partition is closed.
#[test]
fn a_close_merge_cut_short_keeps_every_point_and_merges_later() {
    let dir = TempDir::new("close-merge-short");
    let clock = ManualClock::new(NOW);
    let mut opts = options(dir.path(), rules("10s:1d", ""));
    // not zero (that skips the merge outright): the close tries and finds no time left
    opts.close_merge = std::time::Duration::from_nanos(1);
    let names: Vec<String> = (0..300)
        .map(|i| format!("h{}.m{}", i / 10, i % 10))
        .collect();
    let store = open(&opts, &clock);
    flush_three_rounds(&store, &names);
    append(&store, &[("h0.m0", NOW - 600, -1.0)]); // in the head at the stop
    let read_all = |store: &Store| read_last_hour(store, &names);
    let before = read_all(&store);
    store.close().unwrap();
    drop(store);
    let count_parts = || part_files(dir.path());
    assert_eq!(count_parts(), 4, "three flushes and the stop's, unmerged");
    let store = open(&opts, &clock);
    assert_eq!(read_all(&store), before);
    let (_, _, v) = vals(&store, "h0.m0", NOW - 610, NOW - 600, NOW);
    assert_eq!(v, vec![Some(-1.0)]);
    store.close().unwrap();
    drop(store);
    // once the partition is closed, compaction merges what the stop left
    let later = ManualClock::new(NOW + 86_400 / 2);
    let store = open(&opts, &later);
    store.run_maintenance().unwrap();
    assert_eq!(read_all(&store), before);
    store.close().unwrap();
    drop(store);
    assert_eq!(count_parts(), 1);
}

/// A big merge at a stop is cut into series ranges merged on every core (here every
/// merge counts as big): one part per range, each series in one of them, the values as
/// before; the parts of one merge are not merged again, by a later stop or by
/// compaction once the partition is closed.
#[test]
fn a_big_close_merge_runs_on_every_core() {
    let dir = TempDir::new("close-merge-split");
    let clock = ManualClock::new(NOW);
    let mut opts = options(dir.path(), rules("10s:1d", ""));
    opts.close_merge = std::time::Duration::from_secs(30);
    opts.close_merge_split_bytes = 1;
    let names: Vec<String> = (0..3000)
        .map(|i| format!("h{}.m{}", i / 10, i % 10))
        .collect();
    let store = open(&opts, &clock);
    flush_three_rounds(&store, &names);
    append(
        &store,
        &[("h0.m0", NOW - 600, -1.0), ("h299.m9", NOW - 580, -2.0)],
    );
    let read_all = |store: &Store| read_last_hour(store, &names);
    let before = read_all(&store);
    store.close().unwrap();
    drop(store);
    let count_parts = || part_files(dir.path());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    assert_eq!(count_parts(), cores, "one part per core's range");
    let store = open(&opts, &clock);
    assert_eq!(read_all(&store), before);
    let (_, _, v) = vals(&store, "h299.m9", NOW - 590, NOW - 580, NOW);
    assert_eq!(v, vec![Some(-2.0)]);
    store.close().unwrap();
    drop(store);
    assert_eq!(count_parts(), cores, "a stop does not merge them again");
    // a day later the partition is closed: compaction leaves the ranges alone too
    let later = ManualClock::new(NOW + 86_400 / 2);
    let store = open(&opts, &later);
    store.run_maintenance().unwrap();
    assert_eq!(count_parts(), cores);
    assert_eq!(
        names
            .iter()
            .map(|p| fetch_bits(&store, p, NOW - 3600, NOW, NOW))
            .collect::<Vec<_>>(),
        before
    );
    store.close().unwrap();
}
