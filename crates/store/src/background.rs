//! The background threads: the flusher (head → parts, then rollups and retention), the
//! compactor, and under the interval fsync policy the WAL syncer. Each sleeps on the
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
            let tick = i.opts.maintenance_interval.min(i.opts.flush_interval);
            let mut last_maint = Instant::now();
            while !i.workers.sleep(tick) {
                report(&i, "flush", i.flush_all(false));
                if last_maint.elapsed() >= i.opts.maintenance_interval && !i.workers.stopping() {
                    last_maint = Instant::now();
                    report(&i, "rollup", i.roll_up());
                    report(&i, "retention", i.apply_retention());
                }
            }
        }),
    )?);
    let i = inner.clone();
    out.push(spawn(
        "sumi-compact",
        Box::new(move || {
            while !i.workers.sleep(i.opts.maintenance_interval) {
                loop {
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
