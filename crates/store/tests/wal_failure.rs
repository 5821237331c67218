//! The `Sink` contract when the WAL write fails: nothing of the batch is visible or
//! counted, and the batch sent again is stored exactly once. The failures are the
//! store's error failpoints (`sumi_store::failpoint::ERROR_FAILPOINTS`), which are
//! process-wide and read when the first store opens: this file holds one test, so that
//! its process opens no other store.

mod common;

use common::*;
use sumi_model::{ManualClock, Sink, SinkError};
use sumi_store::Store;

const NOW: i64 = 1_700_000_000;

/// The values of `path` over the last hour, without the empty slots.
fn points(store: &Store, path: &str) -> Vec<f64> {
    store
        .fetch(path, NOW - 3600, NOW, NOW)
        .map(|f| f.values.into_iter().flatten().collect())
        .unwrap_or_default()
}

fn stored(store: &Store) -> f64 {
    metric(store, "sumi_points_stored_total")
}

#[test]
fn a_failed_wal_write_hides_its_batch_and_a_retry_stores_it_once() {
    // group writes, counted from the first: #2 fails as a full disk would (undone, the
    // store goes on), #4 fails as a failing disk would (the store is poisoned)
    std::env::set_var(
        sumi_store::failpoint::ENV,
        "wal:write_enospc@2,wal:write_eio@4",
    );
    let dir = TempDir::new("walfail");
    let clock = ManualClock::new(NOW);
    let opts = options(dir.path(), rules("10s:1h", ""));
    let store = open(&opts, &clock);
    let a = batch(&[("a.x", NOW - 100, 1.0), ("a.y", NOW - 100, 2.0)]);
    let b = batch(&[("b.x", NOW - 90, 3.0), ("b.x", NOW - 80, 4.0)]);
    let c = batch(&[("c.x", NOW - 70, 5.0), ("a.x", NOW - 60, 6.0)]);

    // #1
    assert_eq!(store.append(&a).unwrap().accepted, 2);
    assert_eq!(stored(&store), 2.0);

    // #2: no space; nothing of b is visible or counted
    let err = store.append(&b).unwrap_err();
    assert!(matches!(err, SinkError::Unavailable(_)), "{err}");
    assert!(
        store.is_healthy(),
        "a write undone for lack of space is not fatal"
    );
    assert_eq!(points(&store, "b.x"), Vec::<f64>::new());
    assert_eq!(stored(&store), 2.0);

    // #3: the retry stores b once
    assert_eq!(store.append(&b).unwrap().accepted, 2);
    assert_eq!(points(&store, "b.x"), [3.0, 4.0]);
    assert_eq!(stored(&store), 4.0);

    // #4: the write fails; c is not visible, and a.x keeps its value
    let err = store.append(&c).unwrap_err();
    assert!(matches!(err, SinkError::Unavailable(_)), "{err}");
    assert!(!store.is_healthy());
    assert_eq!(points(&store, "c.x"), Vec::<f64>::new());
    assert_eq!(points(&store, "a.x"), [1.0]);
    // a poisoned store refuses the retry too, and still shows nothing of c
    assert!(matches!(store.append(&c), Err(SinkError::Unavailable(_))));
    assert_eq!(points(&store, "c.x"), Vec::<f64>::new());
    assert_eq!(stored(&store), 4.0);
    drop(store);

    // reopened (the failure cleared): what was acknowledged is there, c is not; the
    // retry stores c once
    let store = open(&opts, &clock);
    assert_eq!(points(&store, "a.x"), [1.0]);
    assert_eq!(points(&store, "a.y"), [2.0]);
    assert_eq!(points(&store, "b.x"), [3.0, 4.0]);
    assert_eq!(points(&store, "c.x"), Vec::<f64>::new());
    assert_eq!(store.append(&c).unwrap().accepted, 2);
    assert_eq!(points(&store, "c.x"), [5.0]);
    assert_eq!(points(&store, "a.x"), [1.0, 6.0]);
    assert_eq!(stored(&store), 2.0, "counted since the reopen: c alone");
    // and once in parts as in the head
    store.run_maintenance().unwrap();
    assert_eq!(points(&store, "b.x"), [3.0, 4.0]);
    assert_eq!(points(&store, "c.x"), [5.0]);
    store.close().unwrap();
}
