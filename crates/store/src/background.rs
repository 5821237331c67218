//! The background threads: the flusher (head → parts, nothing else), the maintenance
//! thread (rollups, retention and merges, which share the maintenance lock), and under
//! the interval fsync policy the WAL syncer. Each sleeps on the
//! [`Workers`]' condvar and stops when `close` or `Drop` sets the stop flag. Failures are
//! logged and counted; the next round tries again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::store::Inner;
use crate::{FsyncPolicy, StoreError};

/// The background threads and what they sleep on: a stop flag and a condvar that
/// appends, deletes and `close` use to wake them.
pub(crate) struct Workers {
    stop: Mutex<bool>,
    /// When the stop flag was set.
    stopped_at: Mutex<Option<Instant>>,
    wake: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    pub(crate) fn new() -> Workers {
        Workers {
            stop: Mutex::new(false),
            stopped_at: Mutex::new(None),
            wake: Condvar::new(),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Wakes every thread (work is due, or the store is stopping).
    #[inline]
    pub(crate) fn wake(&self) {
        self.wake.notify_all();
    }

    /// Sleeps up to `d` (or until woken); returns true when the store is stopping.
    fn sleep(&self, d: Duration) -> bool {
        let mut stop = self.stop.lock();
        if *stop {
            return true;
        }
        self.wake.wait_for(&mut stop, d);
        *stop
    }

    pub(crate) fn stopping(&self) -> bool {
        *self.stop.lock()
    }

    /// Starts the threads of `inner`.
    pub(crate) fn start(inner: &Arc<Inner>) -> Result<(), StoreError> {
        let threads = spawn(inner)?;
        *inner.workers.threads.lock() = threads;
        Ok(())
    }

    /// When the stop flag was set, if it was.
    pub(crate) fn stopped_at(&self) -> Option<Instant> {
        *self.stopped_at.lock()
    }

    /// Sets the stop flag, wakes the threads and waits for them to end.
    pub(crate) fn stop(&self) {
        self.stopped_at.lock().get_or_insert_with(Instant::now);
        *self.stop.lock() = true;
        self.wake.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
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

fn spawn(inner: &Arc<Inner>) -> Result<Vec<JoinHandle<()>>, StoreError> {
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
            // only flushes: the maintenance lock is not taken here, so a long merge
            // never holds the head back (see `docs/storage.md`, "Back-pressure")
            let tick = i.opts.maintenance_interval.min(i.opts.flush_interval);
            while !i.workers.sleep(tick) {
                report(&i, "flush", i.flush_all(false));
            }
        }),
    )?);
    let i = inner.clone();
    out.push(spawn(
        "sumi-maint",
        Box::new(move || {
            // rollups, retention and merges share the maintenance lock, so they take
            // turns on this one thread; between two merges the rollup and retention
            // rounds come back once a maintenance interval
            let mut last_maint: Option<Instant> = None;
            while !i.workers.sleep(i.opts.maintenance_interval) {
                loop {
                    if last_maint.is_none_or(|t| t.elapsed() >= i.opts.maintenance_interval)
                        && !i.workers.stopping()
                    {
                        last_maint = Some(Instant::now());
                        report(&i, "rollup", i.roll_up());
                        report(&i, "retention", i.apply_retention());
                    }
                    match i.compact_once() {
                        Ok(true) if !i.workers.stopping() => continue,
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
                while !i.workers.sleep(d.saturating_sub(last.elapsed())) {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use sumi_model::{Batch, ManualClock};

    use crate::testutil::TempDir;
    use crate::{Store, StoreOptions};

    const NOW: i64 = 1_700_000_000;

    /// A merge holds the maintenance lock as long as it runs (tens of seconds at
    /// millions of series): the flusher must not wait for it, or the head fills up to
    /// its back-pressure limit and ingest stops until the merge ends.
    #[test]
    fn flushes_go_on_while_a_merge_holds_the_maintenance_lock() {
        let dir = TempDir::new("flush-maint");
        let mut opts = StoreOptions::for_tests(dir.path());
        opts.background = true;
        opts.flush_interval = Duration::from_millis(20);
        opts.maintenance_interval = Duration::from_millis(20);
        let store = Store::open(opts, Arc::new(ManualClock::new(NOW))).unwrap();
        let maint = store.inner.parts.lock_maint();
        for round in 0..4i64 {
            let mut batch = Batch::new();
            batch.push(&format!("a.b{round}"), NOW - 10 * round, 1.0);
            store.write(&batch).unwrap();
            let want = round as u64 + 1;
            let deadline = Instant::now() + Duration::from_secs(20);
            while store.inner.metrics.flushes.load(Ordering::Relaxed) < want {
                assert!(
                    Instant::now() < deadline,
                    "flush {want} did not happen while the maintenance lock was held"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            // past a maintenance interval, when rollups and retention are due
            std::thread::sleep(Duration::from_millis(60));
        }
        assert_eq!(store.inner.metrics.compactions.load(Ordering::Relaxed), 0);
        drop(maint);
        store.close().unwrap();
    }
}
