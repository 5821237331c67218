//! Many appenders, readers and the background threads at once: every acknowledged
//! point is readable during the run, after a close, and after a crash.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use sumi_model::glob::PathPattern;
use sumi_model::Sink;
use sumi_model::{Batch, ManualClock};

const NOW: i64 = 1_800_000_000;

#[test]
fn appenders_readers_and_background_work() {
    let dir = TempDir::new("concurrent");
    let clock = ManualClock::new(NOW);
    let mut opts = options(dir.path(), rules("10s:1h,1m:1d", ""));
    opts.background = true;
    opts.flush_interval = Duration::from_millis(20);
    opts.maintenance_interval = Duration::from_millis(10);
    opts.flush_bytes = 64 << 10;
    opts.max_parts_per_partition = 3;
    opts.fsync = "5ms".parse().unwrap();
    opts.shards = 3;
    let store = open(&opts, &clock);
    let writers = 3;
    let series_per_writer = 40;
    let rounds = 60;
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let store = store.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut reads = 0u64;
            loop {
                let last = stop.load(Ordering::Relaxed);
                for w in 0..writers {
                    let name = format!("w{w}.s0");
                    if let Some(f) = store.fetch(&name, NOW - 3600, NOW, NOW) {
                        // points only ever get added: the count never goes down
                        assert!(f.values.iter().flatten().count() <= rounds);
                        reads += 1;
                    }
                }
                let _ = store.find(&PathPattern::parse("w*.s1*"));
                if last {
                    break;
                }
            }
            reads
        })
    };
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                for r in 0..rounds {
                    let mut b = Batch::new();
                    for s in 0..series_per_writer {
                        // round r writes slot r; the value says who wrote what
                        b.push(
                            &format!("w{w}.s{s}"),
                            NOW - 3590 + r as i64 * 10,
                            (w * 1000 + s) as f64 + r as f64 / 100.0,
                        );
                    }
                    let out = store.append(&b).unwrap();
                    assert_eq!(out.accepted, series_per_writer as u64);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let total = (writers * series_per_writer * rounds) as f64;
    assert_eq!(metric(&store, "sumi_points_stored_total"), total);
    let check = |store: &sumi_store::Store| {
        for w in 0..writers {
            for s in 0..series_per_writer {
                let f = store
                    .fetch(&format!("w{w}.s{s}"), NOW - 3600, NOW, NOW)
                    .unwrap();
                let got: Vec<f64> = f.values.iter().flatten().copied().collect();
                let want: Vec<f64> = (0..rounds)
                    .map(|r| (w * 1000 + s) as f64 + r as f64 / 100.0)
                    .collect();
                assert_eq!(got, want, "w{w}.s{s}");
            }
        }
    };
    check(&store);
    // the background flusher runs every 20 ms (bounded wait for slow machines)
    let t = std::time::Instant::now();
    while metric(&store, "sumi_head_rows") > 0.0 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(metric(&store, "sumi_flushes_total") >= 1.0);
    assert_eq!(metric(&store, "sumi_store_background_errors_total"), 0.0);
    check(&store);
    // crash: whatever the background threads had done, nothing is lost or doubled
    drop(store);
    let store = open(&opts, &clock);
    check(&store);
    assert_eq!(store.series_count(), writers * series_per_writer);
    store.close().unwrap();
    drop(store);
    let store = open(&opts, &clock);
    check(&store);
    assert_eq!(metric(&store, "sumi_wal_replayed_points_total"), 0.0);
    store.close().unwrap();
}
