//! Rollups: every aggregation method and xFilesFactor edge, read on the fly, from
//! materialised rollup parts, after the fine level is dropped and after a restart;
//! late points into rolled partitions; retention drops.

mod common;

use common::*;
use sumi_model::{AggMethod, ManualClock};
use sumi_store::Store;

const NOW: i64 = 1_800_000_000; // a multiple of 3600

fn coarse(store: &Store, path: &str, minute: i64, now: i64) -> Option<f64> {
    let f = store.fetch(path, now - 3600, now, now).expect("fetch");
    assert_eq!(f.step, 60);
    f.values
        .get(((minute - f.start) / 60) as usize)
        .copied()
        .flatten()
}

fn agg_conf(method: AggMethod, xff: f32) -> String {
    format!(
        "[all]\npattern = .*\nxFilesFactor = {xff}\naggregationMethod = {}\n",
        method.name()
    )
}

/// Fine values for one minute: `Some` slots are written.
type Minute = [Option<f64>; 6];

fn cases() -> Vec<(f32, Minute)> {
    let v = |xs: &[Option<f64>]| -> Minute { xs.try_into().unwrap() };
    vec![
        (
            0.5,
            v(&[Some(3.0), None, Some(-7.0), None, Some(1.5), None]),
        ), // 3/6 = xff: value
        (0.5, v(&[Some(3.0), None, None, None, Some(1.5), None])), // 2/6 < xff: none
        (0.0, v(&[None, None, None, Some(-2.5), None, None])),     // 1/6 >= 0: value
        (
            1.0,
            v(&[
                Some(1.0),
                Some(2.0),
                Some(3.0),
                Some(4.0),
                Some(5.0),
                Some(-6.0),
            ]),
        ),
        (
            1.0,
            v(&[Some(1.0), Some(2.0), None, Some(4.0), Some(5.0), Some(-6.0)]),
        ),
        (
            0.1,
            v(&[Some(0.1), Some(0.2), Some(0.3), None, Some(-0.3), None]),
        ),
    ]
}

fn expected(method: AggMethod, xff: f32, m: &Minute) -> Option<f64> {
    let known: Vec<f64> = m.iter().flatten().copied().collect();
    method.rollup(&known, 6, xff)
}

#[test]
fn every_method_and_xff_edge() {
    // hand-checked values for one case, so the oracle itself is pinned down
    let m = [Some(3.0), None, Some(-7.0), None, Some(1.5), None];
    assert_eq!(expected(AggMethod::Average, 0.5, &m), Some(-2.5 / 3.0));
    assert_eq!(expected(AggMethod::Sum, 0.5, &m), Some(-2.5));
    assert_eq!(expected(AggMethod::AvgZero, 0.5, &m), Some(-2.5 / 6.0));
    assert_eq!(expected(AggMethod::AbsMax, 0.5, &m), Some(-7.0));
    assert_eq!(expected(AggMethod::Last, 0.5, &m), Some(1.5));

    for method in AggMethod::ALL {
        for (case, (xff, minute)) in cases().into_iter().enumerate() {
            let dir = TempDir::new("methods");
            let clock = ManualClock::new(NOW);
            let mut opts = options(dir.path(), rules("10s:10m,1m:1h", &agg_conf(method, xff)));
            // every other case rolls eagerly, so "rolled" below reads a materialised
            // rollup; lazily it is still computed on the fly until level 0 expires
            opts.lazy_rollups = case % 2 == 1;
            let store = open(&opts, &clock);
            let base = NOW - 1200; // level 0 holds 10 min: write while fresh
            clock.set(base + 100);
            let pts: Vec<(&str, i64, f64)> = minute
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| ("m", base + i as i64 * 10 + 3, v)))
                .collect();
            append(&store, &pts);
            let want = expected(method, xff, &minute);
            let bits = |v: Option<f64>| v.map(f64::to_bits);
            let ctx = format!("{method} xff {xff} case {case}");
            let now = base + 100;
            assert_eq!(
                bits(coarse(&store, "m", base, now)),
                bits(want),
                "on the fly: {ctx}"
            );
            store.run_maintenance().unwrap();
            let rolled = metric(&store, "sumi_rollups_total");
            assert_eq!(rolled > 0.0, !opts.lazy_rollups, "{ctx}: {rolled} rollups");
            assert_eq!(
                bits(coarse(&store, "m", base, now)),
                bits(want),
                "rolled: {ctx}"
            );
            // level 0 expires and is dropped; the rollup remains
            clock.set(NOW);
            store.run_maintenance().unwrap();
            assert!(metric(&store, "sumi_retention_drops_total") >= 1.0, "{ctx}");
            assert_eq!(
                bits(coarse(&store, "m", base, NOW)),
                bits(want),
                "after the drop: {ctx}"
            );
            store.close().unwrap();
            drop(store);
            let store = open(&opts, &clock);
            assert_eq!(
                bits(coarse(&store, "m", base, NOW)),
                bits(want),
                "after restart: {ctx}"
            );
            store.close().unwrap();
        }
    }
}

#[test]
fn late_point_into_a_rolled_partition_is_rolled_again() {
    let dir = TempDir::new("dirty");
    let clock = ManualClock::new(NOW);
    let opts = options(
        dir.path(),
        rules("10s:10m,1m:1h", &agg_conf(AggMethod::Sum, 0.0)),
    );
    let store = open(&opts, &clock);
    let base = NOW - 540;
    append(&store, &[("d", base, 1.0), ("d", base + 10, 2.0)]);
    clock.set(NOW + 60); // the partition of `base` is closed
    let now = NOW + 60;
    store.run_maintenance().unwrap();
    let rolled = metric(&store, "sumi_rollups_total");
    assert!(rolled >= 1.0);
    assert_eq!(coarse(&store, "d", base, now), Some(3.0));
    // a late point, still inside level 0's retention, into the rolled partition
    append(&store, &[("d", base + 20, 4.0)]);
    assert_eq!(metric(&store, "sumi_rollup_dirty_partitions"), 1.0);
    assert_eq!(
        coarse(&store, "d", base, now),
        Some(7.0),
        "visible before the re-roll"
    );
    // a crash before the re-roll: the dirty mark is rebuilt from the WAL
    drop(store);
    let store = open(&opts, &clock);
    assert_eq!(
        coarse(&store, "d", base, now),
        Some(7.0),
        "visible after a crash"
    );
    store.run_maintenance().unwrap();
    assert_eq!(metric(&store, "sumi_rollup_dirty_partitions"), 0.0);
    assert_eq!(coarse(&store, "d", base, now), Some(7.0), "re-rolled");
    // once level 0 is gone the re-rolled value stays
    clock.set(NOW + 900);
    store.run_maintenance().unwrap();
    let f = store
        .fetch("d", NOW + 900 - 3600, NOW + 900, NOW + 900)
        .unwrap();
    let v = f.values[((base - f.start) / 60) as usize];
    assert_eq!(v, Some(7.0));
    store.close().unwrap();
}

#[test]
fn retention_drops_whole_partitions() {
    let dir = TempDir::new("retention");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:10m,1m:1h", ""));
    let store = open(&opts, &clock);
    let pts: Vec<(&str, i64, f64)> = (0..60)
        .map(|i| ("r", NOW - 590 + i * 10, i as f64))
        .collect();
    append(&store, &pts);
    store.run_maintenance().unwrap();
    let parts0 = metric(&store, "sumi_parts{level=\"0\"}");
    assert!(parts0 >= 1.0);
    clock.set(NOW + 1200);
    store.run_maintenance().unwrap();
    assert_eq!(
        metric(&store, "sumi_parts{level=\"0\"}"),
        0.0,
        "level 0 dropped"
    );
    assert!(
        metric(&store, "sumi_parts{level=\"1\"}") >= 1.0,
        "its rollups kept"
    );
    let now = NOW + 1200;
    let f = store.fetch("r", now - 3600, now, now).unwrap();
    assert_eq!(
        f.values.iter().flatten().count(),
        10,
        "ten full minutes survive as averages"
    );
    // past the longest retention nothing is left and fetch says so like whisper
    clock.set(NOW + 3 * 3600);
    store.run_maintenance().unwrap();
    assert_eq!(metric(&store, "sumi_parts{level=\"1\"}"), 0.0);
    let now = NOW + 3 * 3600;
    assert!(store.fetch("r", NOW - 600, NOW, now).is_none());
    store.close().unwrap();
}

/// Found by the whisper model test: a late level-0 point under a level-1 partition that
/// was already rolled into level 2 must change the level-2 answer at once.
#[test]
fn regression_dirty_fine_partition_dirties_the_coarser_ones() {
    let dir = TempDir::new("cascade");
    let clock = ManualClock::new(NOW);
    let conf = agg_conf(AggMethod::Average, 0.0);
    let opts = options(dir.path(), rules("10s:2m,1m:10m,5m:1h", &conf));
    let store = open(&opts, &clock);
    append(&store, &[("c", NOW - 601, 0.0)]); // a direct level-2 write
    store.run_maintenance().unwrap(); // every level rolled up to NOW
    append(&store, &[("c", NOW - 1, 8.0)]); // level 0, under rolled levels 1 and 2
    let f = store.fetch("c", NOW - 3600, NOW, NOW).unwrap();
    assert_eq!(f.step, 300);
    let slot = NOW - 300;
    assert_eq!(f.values[((slot - f.start) / 300) as usize], Some(8.0));
    store.run_maintenance().unwrap();
    let g = store.fetch("c", NOW - 3600, NOW, NOW).unwrap();
    assert_eq!(f, g, "the same after the re-rolls");
    assert_eq!(metric(&store, "sumi_rollup_dirty_partitions"), 0.0);
    store.close().unwrap();
}
