//! A token-bucket pacer that holds senders to `--rate` points per second.
//!
//! Senders ask for the points of their next write and sleep for the wait the pacer
//! returns. The bucket may go into debt: a write larger than the bucket is allowed at
//! once and the following ones wait until the debt is paid, so the long-run rate is
//! exact whatever the write size. Time is passed in, never read here, so tests drive it.

use std::time::{Duration, Instant};

/// A token bucket: `rate` tokens (points) a second, at most `burst` saved up.
#[derive(Clone, Debug)]
pub struct Pacer {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Pacer {
    /// A pacer allowing `rate_per_sec` points a second on average and `burst` points at
    /// once after an idle time. The bucket starts empty, so the first second is paced too.
    pub fn new(rate_per_sec: f64, burst: f64, now: Instant) -> Pacer {
        Pacer {
            rate: rate_per_sec.max(f64::MIN_POSITIVE),
            burst: burst.max(0.0),
            tokens: 0.0,
            last: now,
        }
    }

    /// Takes `points` tokens at `now` and returns how long the caller must wait before
    /// sending them (zero when the bucket held enough).
    pub fn reserve(&mut self, points: u64, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.tokens -= points as f64;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_sender_is_held_to_the_rate() {
        let t0 = Instant::now();
        let mut p = Pacer::new(1000.0, 100.0, t0);
        // A sender that sends 100 points, then sleeps as told, 50 times.
        let mut now = t0;
        for _ in 0..50 {
            now += p.reserve(100, now);
        }
        // The bucket starts empty: each batch of 100 waits 0.1 s, 5000 points take 5 s.
        let secs = now.duration_since(t0).as_secs_f64();
        assert!((secs - 5.0).abs() < 1e-6, "{secs}");
    }

    #[test]
    fn saved_tokens_allow_a_burst_but_no_more() {
        let t0 = Instant::now();
        let mut p = Pacer::new(100.0, 50.0, t0);
        // After 10 idle seconds only the burst (50) is saved, not 1000.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(p.reserve(50, later), Duration::ZERO);
        let wait = p.reserve(100, later);
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-9, "{wait:?}");
    }

    #[test]
    fn a_large_write_is_paid_by_the_next_ones() {
        let t0 = Instant::now();
        let mut p = Pacer::new(10.0, 10.0, t0);
        let wait = p.reserve(100, t0);
        assert!((wait.as_secs_f64() - 10.0).abs() < 1e-9);
        // Half-way through the debt another point must wait the remaining 5 s and 0.1 s.
        let wait = p.reserve(1, t0 + Duration::from_secs(5));
        assert!((wait.as_secs_f64() - 5.1).abs() < 1e-9, "{wait:?}");
    }

    #[test]
    fn time_going_backwards_does_not_mint_tokens() {
        let t0 = Instant::now() + Duration::from_secs(5);
        let mut p = Pacer::new(10.0, 10.0, t0);
        let earlier = t0 - Duration::from_secs(3);
        let wait = p.reserve(10, earlier);
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-9, "{wait:?}");
    }
}
