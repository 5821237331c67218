//! Test doubles of the store and helpers shared by the socket tests.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sumi_ingest::IngestStats;
use sumi_model::{AppendOutcome, Batch, Sink, SinkError};
use tokio::sync::Notify;

/// One point as the sink saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rec {
    pub name: String,
    pub ts: i64,
    pub value: f64,
}

pub fn rec(name: &str, ts: i64, value: f64) -> Rec {
    Rec {
        name: name.to_string(),
        ts,
        value,
    }
}

/// An in-memory sink that records every batch. It can refuse the first `fail_first`
/// appends with `Unavailable`, or all of them while `down` is set.
#[derive(Default)]
pub struct RecordingSink {
    points: Mutex<Vec<Rec>>,
    batches: AtomicU64,
    attempts: AtomicU64,
    fail_first: AtomicU64,
    down: std::sync::atomic::AtomicBool,
    changed: Notify,
}

impl RecordingSink {
    pub fn new() -> Arc<RecordingSink> {
        Arc::new(RecordingSink::default())
    }

    pub fn failing_first(n: u64) -> Arc<RecordingSink> {
        let s = RecordingSink::default();
        s.fail_first.store(n, Ordering::SeqCst);
        Arc::new(s)
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub fn points(&self) -> Vec<Rec> {
        self.points.lock().clone()
    }

    pub fn len(&self) -> usize {
        self.points.lock().len()
    }

    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::SeqCst)
    }

    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Waits until the sink holds at least `n` points (panics after 10 s).
    pub async fn wait_for_points(&self, n: usize) -> Vec<Rec> {
        wait_until(&self.changed, || self.len() >= n, &format!("{n} points")).await;
        self.points()
    }

    /// Waits until `cond` holds, re-checking whenever the sink changes.
    pub async fn wait(&self, what: &str, cond: impl Fn() -> bool) {
        wait_until(&self.changed, cond, what).await;
    }
}

impl Sink for RecordingSink {
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .fail_first
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing || self.down.load(Ordering::SeqCst) {
            self.changed.notify_waiters();
            return Err(SinkError::Unavailable("test sink refuses".into()));
        }
        let mut points = self.points.lock();
        for (name, p) in batch.iter() {
            points.push(rec(name, p.ts, p.value));
        }
        drop(points);
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
        Ok(AppendOutcome {
            accepted: batch.len() as u64,
            ..Default::default()
        })
    }
}

/// Checks `cond` each time `notify` fires (and every 20 ms, for changes that do not
/// notify, such as counters), failing the test after 10 s.
async fn wait_until(notify: &Notify, cond: impl Fn() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let notified = notify.notified();
        if cond() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        let _ = tokio::time::timeout(Duration::from_millis(20), notified).await;
    }
}

/// Waits until a stats condition holds (panics after 10 s).
pub async fn wait_stats(
    stats: &IngestStats,
    what: &str,
    cond: impl Fn(&sumi_ingest::StatsSnapshot) -> bool,
) {
    let never = Notify::new();
    wait_until(&never, || cond(&stats.snapshot()), what).await;
}

/// Runs `fut` with a 20 s limit, so a hung listener fails the test instead of CI.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}
