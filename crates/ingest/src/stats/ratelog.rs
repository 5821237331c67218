//! The rate-limited log of bad input: at most one line per reason (and per listener
//! event) per interval, each with a sample of the offending bytes made safe to print.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::{Reason, REASONS};

/// How much of a bad line a log message shows (carbon shows 400 characters).
pub(super) const SAMPLE_BYTES: usize = 400;

/// Rate-limiter slots after the per-reason ones.
pub(super) const SLOT_REFUSED: usize = REASONS;
pub(super) const SLOT_LISTENER: usize = REASONS + 1;
pub(super) const SLOT_ALLOWLIST: usize = REASONS + 2;
const SLOTS: usize = REASONS + 3;

/// At most one log line per reason (and per listener event kind) per interval.
#[derive(Debug)]
pub(super) struct RateLimiter {
    start: Instant,
    interval_ms: u64,
    /// Per slot (reasons, then `SLOT_*`): the earliest time (ms since `start`) of the
    /// next log line, plus 1 so that 0 means "never logged".
    next: [AtomicU64; SLOTS],
    suppressed: [AtomicU64; SLOTS],
}

impl RateLimiter {
    pub(super) fn new(interval: Duration) -> RateLimiter {
        RateLimiter {
            start: Instant::now(),
            interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
            next: std::array::from_fn(|_| AtomicU64::new(0)),
            suppressed: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    pub(super) fn allow(&self, reason: Reason, now: Instant) -> Option<u64> {
        self.allow_slot(reason.index(), now)
    }

    /// `Some(lines suppressed since the last one)` when this one may be logged.
    pub(super) fn allow_slot(&self, slot: usize, now: Instant) -> Option<u64> {
        let (next, suppressed) = (self.next.get(slot)?, self.suppressed.get(slot)?);
        let now_ms = u64::try_from(now.saturating_duration_since(self.start).as_millis())
            .unwrap_or(u64::MAX - 1)
            + 1;
        let due = next.load(Relaxed);
        if (due == 0 || now_ms >= due)
            && next
                .compare_exchange(
                    due,
                    now_ms.saturating_add(self.interval_ms),
                    Relaxed,
                    Relaxed,
                )
                .is_ok()
        {
            return Some(suppressed.swap(0, Relaxed));
        }
        suppressed.fetch_add(1, Relaxed);
        None
    }
}

/// A bad line made safe for a log: at most `max` bytes, printable UTF-8 kept, other
/// characters and invalid bytes escaped (`\n`, `\u{1b}`, `\xff`), `...` when cut.
pub fn escape_sample(line: &[u8], max: usize) -> String {
    let cut = line.len() > max;
    let line = line.get(..max).unwrap_or(line);
    let mut out = String::with_capacity(line.len() + 8);
    for chunk in line.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '"' {
                out.push_str("\\\"");
            } else {
                out.extend(c.escape_debug());
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    if cut {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_per_reason() {
        let rl = RateLimiter::new(Duration::from_secs(10));
        let t0 = rl.start;
        assert_eq!(rl.allow(Reason::NanValue, t0), Some(0));
        assert_eq!(
            rl.allow(Reason::NanValue, t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            rl.allow(Reason::NanValue, t0 + Duration::from_secs(9)),
            None
        );
        // another reason has its own budget
        assert_eq!(
            rl.allow(Reason::InvalidLine, t0 + Duration::from_secs(9)),
            Some(0)
        );
        // after the interval: allowed, reporting the two suppressed
        assert_eq!(
            rl.allow(Reason::NanValue, t0 + Duration::from_secs(11)),
            Some(2)
        );
        assert_eq!(
            rl.allow(Reason::NanValue, t0 + Duration::from_secs(12)),
            None
        );
        assert_eq!(rl.allow_slot(SLOT_REFUSED, t0), Some(0));
        assert_eq!(rl.allow_slot(SLOT_REFUSED, t0), None);
        assert_eq!(rl.allow_slot(SLOT_LISTENER, t0), Some(0));
    }

    #[test]
    fn samples_are_escaped_and_cut() {
        assert_eq!(escape_sample(b"a.b 1 2", 400), "a.b 1 2");
        assert_eq!(escape_sample(b"a\tb\r\n", 400), "a\\tb\\r\\n");
        assert_eq!(escape_sample(b"x\xff\x00\"", 400), "x\\xff\\0\\\"");
        assert_eq!(escape_sample("caf\u{e9}".as_bytes(), 400), "caf\u{e9}");
        assert_eq!(escape_sample(b"\x1b[31m", 400), "\\u{1b}[31m");
        assert_eq!(escape_sample(b"abcdef", 3), "abc...");
        // a cut in the middle of a character shows its bytes
        assert_eq!(
            escape_sample("\u{e9}\u{e9}".as_bytes(), 3),
            "\u{e9}\\xc3..."
        );
    }
}
