//! The background threads: the flusher (head → parts, then rollups and retention), the
//! compactor, and under the interval fsync policy the WAL syncer. Each sleeps on the
//! store's condvar and stops when `close` or `Drop` sets the stop flag. Failures are
//! logged and counted; the next round tries again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::store::Inner;
use crate::{FsyncPolicy, StoreError};

/// Sleeps up to `d` (or until woken); returns true when the store is stopping.
fn sleep(inner: &Inner, d: Duration) -> bool {
    let mut stop = inner.stop.lock();
    if *stop {
        return true;
    }
    inner.wake.wait_for(&mut stop, d);
    *stop
}

fn stopping(inner: &Inner) -> bool {
    *inner.stop.lock()
}

fn report(inner: &Inner, what: &str, r: Result<(), StoreError>) {
    if let Err(e) = r {
        inner
            .metrics
            .background_errors
            .fetch_add(1, Ordering::Relaxed);
        tracing::error!(error = %e, "background {what} failed");
    }
}

pub(crate) fn spawn(inner: &Arc<Inner>) -> Result<Vec<JoinHandle<()>>, StoreError> {
    let mut out = Vec::new();
    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(f)
            .map_err(|e| StoreError::io("spawn thread", name, e))
    };
    let i = inner.clone();
    out.push(spawn(
        "sumi-flush",
        Box::new(move || {
            let tick = i.opts.maintenance_interval.min(i.opts.flush_interval);
            let mut last_maint = Instant::now();
            while !sleep(&i, tick) {
                report(&i, "flush", i.flush_all(false));
                if last_maint.elapsed() >= i.opts.maintenance_interval && !stopping(&i) {
                    last_maint = Instant::now();
                    report(&i, "rollup", crate::rollup::run(&i));
                    report(&i, "retention", crate::retention::run(&i));
                }
            }
        }),
    )?);
    let i = inner.clone();
    out.push(spawn(
        "sumi-compact",
        Box::new(move || {
            while !sleep(&i, i.opts.maintenance_interval) {
                loop {
                    match crate::compact::run_once(&i) {
                        Ok(true) if !stopping(&i) => continue,
                        Ok(_) => break,
                        Err(e) => {
                            report(&i, "compaction", Err(e));
                            break;
                        }
                    }
                }
            }
        }),
    )?);
    if let FsyncPolicy::Interval(d) = inner.opts.fsync {
        let i = inner.clone();
        out.push(spawn(
            "sumi-wal-sync",
            Box::new(move || {
                let mut last = Instant::now();
                while !sleep(&i, d.saturating_sub(last.elapsed())) {
                    if last.elapsed() >= d {
                        last = Instant::now();
                        report(&i, "wal sync", i.wal.sync());
                    }
                }
            }),
        )?);
    }
    Ok(out)
}
