//! Pure helpers of the waiting loops: when a wait has stalled, and how often to poll.

use std::time::{Duration, Instant};

/// Shortest time between two polls of the server.
pub const MIN_POLL: Duration = Duration::from_millis(100);

/// Notices when a monotonic progress figure stops moving for too long.
#[derive(Clone, Debug)]
pub struct StallWatch {
    best: u64,
    last_change: Instant,
    timeout: Duration,
}

impl StallWatch {
    /// A watch starting at `now` with nothing seen yet.
    pub fn new(timeout: Duration, now: Instant) -> StallWatch {
        StallWatch {
            best: 0,
            last_change: now,
            timeout,
        }
    }

    /// Records `value` at `now`; returns true when it has not grown for the timeout.
    pub fn observe(&mut self, value: u64, now: Instant) -> bool {
        if value > self.best {
            self.best = value;
            self.last_change = now;
            return false;
        }
        now.saturating_duration_since(self.last_change) >= self.timeout
    }

    /// When the figure last grew.
    pub fn last_change(&self) -> Instant {
        self.last_change
    }
}

/// Time to the next poll after one that took `cost`: at least [`MIN_POLL`], and at least
/// twice the cost, so a slow server spends at most a third of its time answering polls.
pub fn poll_interval(cost: Duration) -> Duration {
    MIN_POLL.max(cost.saturating_mul(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_resets_the_timer_and_standstill_trips_it() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let mut w = StallWatch::new(Duration::from_secs(10), t0);
        assert!(!w.observe(0, s(5)));
        assert!(w.observe(0, s(10)), "nothing for 10 s");
        assert!(!w.observe(5, s(11)));
        assert_eq!(w.last_change(), s(11));
        assert!(!w.observe(5, s(20)));
        // A value going down (a counter reset) is not progress.
        assert!(!w.observe(3, s(20)));
        assert!(w.observe(3, s(21)));
        assert!(!w.observe(6, s(22)));
    }

    #[test]
    fn polls_back_off_for_slow_answers() {
        assert_eq!(poll_interval(Duration::ZERO), MIN_POLL);
        assert_eq!(poll_interval(Duration::from_millis(30)), MIN_POLL);
        assert_eq!(
            poll_interval(Duration::from_millis(400)),
            Duration::from_millis(800)
        );
    }
}
