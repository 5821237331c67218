//! Admission: what decides, before the WAL or the head see a batch, whether the store
//! takes it — the closed flag, the free-space guard, `max_new_series_per_minute`'s
//! token bucket — and the rate limit on the warning about refused series. One per
//! store: two stores in a process budget and log independently.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::diskspace::DiskGuard;
use crate::metrics::Metrics;
use crate::{StoreError, StoreOptions};

pub(crate) struct Admission {
    closed: AtomicBool,
    /// `max_new_series_per_minute`'s token bucket (taken under the index write lock).
    create_budget: Mutex<CreateBudget>,
    /// Refuses writes while the data disk is below `min_free_bytes`.
    disk: DiskGuard,
    series_limit: SeriesLimitLog,
}

impl Admission {
    pub(crate) fn new(opts: &StoreOptions) -> Admission {
        Admission {
            closed: AtomicBool::new(false),
            create_budget: Mutex::new(CreateBudget::new(opts.max_new_series_per_minute)),
            disk: DiskGuard::new(&opts.data_dir, opts.min_free_bytes),
            series_limit: SeriesLimitLog::new(),
        }
    }

    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Refuses every later write.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// `Err(Backpressure)` while the disk is below the reserve.
    #[inline]
    pub(crate) fn check_disk(&self, metrics: &Metrics) -> Result<(), StoreError> {
        self.disk.check(metrics)
    }

    /// Takes one series creation from the budget; when it is spent, `Err` with the time
    /// until it lets one through.
    #[inline]
    pub(crate) fn take_create(&self, now: Instant) -> Result<(), Duration> {
        let mut budget = self.create_budget.lock();
        if budget.take(now) {
            Ok(())
        } else {
            Err(budget.retry_after())
        }
    }

    /// Logs refused new series, at most once per 10 s; returns whether it logged.
    pub(crate) fn log_series_limit(&self, max: usize, refused: u64) -> bool {
        let logged = self.series_limit.due();
        if logged {
            tracing::warn!(
                max_series = max,
                refused,
                "new series refused: the store holds max_series series \
                 (counted in sumi_points_rejected_total{{reason=\"series_limit\"}})"
            );
        }
        logged
    }
}

/// `max_new_series_per_minute` as a token bucket: full at the start, refilled evenly
/// (limit / 60 a second), so a burst of up to a minute's budget passes at once.
pub(crate) struct CreateBudget {
    per_minute: u64,
    tokens: f64,
    at: Instant,
}

impl CreateBudget {
    pub(crate) fn new(per_minute: u64) -> CreateBudget {
        CreateBudget {
            per_minute,
            tokens: per_minute as f64,
            at: Instant::now(),
        }
    }

    /// Takes one creation from the budget; false when it is spent.
    fn take(&mut self, now: Instant) -> bool {
        if self.per_minute == 0 {
            return true;
        }
        let cap = self.per_minute as f64;
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.tokens = (self.tokens + dt * cap / 60.0).min(cap);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// How long until [`take`](Self::take) succeeds again, from its last call.
    fn retry_after(&self) -> Duration {
        if self.per_minute == 0 {
            return Duration::ZERO;
        }
        let missing = (1.0 - self.tokens).max(0.0);
        Duration::from_secs_f64(missing * 60.0 / self.per_minute as f64)
    }
}

/// When the series-limit warning was last logged, so that a flood of refused names
/// logs once per 10 s.
struct SeriesLimitLog {
    start: Instant,
    /// Seconds since `start`, plus 10, of the last warning (0: never).
    last: AtomicU64,
}

impl SeriesLimitLog {
    fn new() -> SeriesLimitLog {
        SeriesLimitLog {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    /// True when the warning is due now (and records it as given).
    fn due(&self) -> bool {
        let now = self.start.elapsed().as_secs() + 10;
        let last = self.last.load(Ordering::Relaxed);
        now >= last + 10
            && self
                .last
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sumi_model::{Batch, ManualClock};

    use super::*;
    use crate::testutil::TempDir;
    use crate::Store;

    const NOW: i64 = 1_700_000_000;

    #[test]
    fn create_budget_refills_evenly() {
        let t0 = Instant::now();
        let mut b = CreateBudget::new(60);
        b.at = t0;
        for _ in 0..60 {
            assert!(b.take(t0));
        }
        assert!(!b.take(t0), "a minute's budget is spent");
        assert!(!b.take(t0 + std::time::Duration::from_millis(500)));
        assert!(b.take(t0 + std::time::Duration::from_millis(1100)));
        assert!(!b.take(t0 + std::time::Duration::from_millis(1100)));
        // never more than a minute's worth, however long it rested
        let later = t0 + std::time::Duration::from_secs(3600);
        assert_eq!((0..100).filter(|_| b.take(later)).count(), 60);
        let mut unlimited = CreateBudget::new(0);
        assert!((0..10_000).all(|_| unlimited.take(t0)));
        assert_eq!(unlimited.retry_after(), std::time::Duration::ZERO);
    }

    #[test]
    fn create_budget_says_when_the_next_series_passes() {
        let t0 = Instant::now();
        let mut b = CreateBudget::new(120);
        b.at = t0;
        for _ in 0..120 {
            assert!(b.take(t0));
        }
        assert!(!b.take(t0));
        // one token every 0.5 s
        assert_eq!(b.retry_after(), std::time::Duration::from_millis(500));
        let later = t0 + std::time::Duration::from_millis(200);
        assert!(!b.take(later));
        let left = b.retry_after().as_secs_f64();
        assert!((left - 0.3).abs() < 1e-9, "{left}");
        assert!(b.take(later + b.retry_after()));
    }

    #[test]
    fn series_limit_warning_is_rate_limited_per_store() {
        let a = SeriesLimitLog::new();
        let b = SeriesLimitLog::new();
        assert!(a.due(), "the first refusal logs");
        assert!(!a.due(), "a second one within 10 s does not");
        assert!(b.due(), "another store's first refusal logs all the same");
        assert!(!b.due());
    }

    #[test]
    fn two_stores_limit_and_log_series_independently() {
        let open = |dir: &TempDir| {
            let mut opts = StoreOptions::for_tests(dir.path());
            opts.max_series = 1;
            Store::open(opts, Arc::new(ManualClock::new(NOW))).unwrap()
        };
        let (da, db) = (TempDir::new("admission-a"), TempDir::new("admission-b"));
        let (a, b) = (open(&da), open(&db));
        let mut batch = Batch::new();
        batch.push("x.one", NOW, 1.0);
        batch.push("x.two", NOW, 2.0);
        let out = a.write(&batch).unwrap();
        assert_eq!((out.accepted, out.series_limit), (1, 1));
        assert_ne!(
            a.inner.admission.series_limit.last.load(Ordering::Relaxed),
            0
        );
        assert_eq!(
            b.inner.admission.series_limit.last.load(Ordering::Relaxed),
            0,
            "one store's warning is not another's"
        );
        // the other store still has its own limit and logs its own first refusal
        let out = b.write(&batch).unwrap();
        assert_eq!((out.accepted, out.series_limit), (1, 1));
        assert_ne!(
            b.inner.admission.series_limit.last.load(Ordering::Relaxed),
            0
        );
        a.close().unwrap();
        b.close().unwrap();
    }
}
