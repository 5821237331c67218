//! Retention classes: the distinct archive lists in use, each with the partition width
//! of every level. A part belongs to one class and one level, so all its slots share
//! one step.

use std::sync::Arc;

use sumi_model::{Archive, Retention};

/// At most this many archives per retention (the level is stored in 4 bits).
pub const MAX_LEVELS: usize = 16;

/// The widest partition, so that slot arithmetic never comes near `i64` overflow.
const MAX_WIDTH: i128 = 1 << 50;

/// One level (archive) of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LevelInfo {
    pub(crate) step: i64,
    pub(crate) retention: i64,
    /// Partition width: a multiple of this level's step, of the next level's step and
    /// (when it fits) of the previous level's width.
    pub(crate) width: i64,
}

/// A retention class.
#[derive(Debug, PartialEq)]
pub(crate) struct ClassInfo {
    pub(crate) id: u16,
    pub(crate) retention: Arc<Retention>,
    pub(crate) levels: Vec<LevelInfo>,
    pub(crate) max_retention: i64,
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: i128, b: i128) -> i128 {
    a / gcd(a, b) * b
}

/// Partition widths for `archives`: about `retention / per_level`, rounded to a
/// multiple of (previous width, own step, next step) so that a partition never
/// straddles a coarser slot and level k partitions nest in level k+1 partitions.
pub(crate) fn partition_widths(archives: &[Archive], per_level: u32) -> Vec<i64> {
    let mut widths = Vec::with_capacity(archives.len());
    let mut prev: i128 = 1;
    for (k, a) in archives.iter().enumerate() {
        let step = i128::from(a.step_secs.max(1));
        let next = archives
            .get(k + 1)
            .map_or(step, |n| i128::from(n.step_secs.max(1)));
        let mut unit = lcm(lcm(prev, step), next);
        if unit > MAX_WIDTH {
            // absurd step combinations: give up nesting, keep slot alignment
            unit = lcm(step, next).min(MAX_WIDTH / next * next).max(next);
        }
        let target = i128::from(a.retention_secs()) / i128::from(per_level.max(1));
        let mult = ((target + unit / 2) / unit).max(1);
        let mut w = unit.saturating_mul(mult);
        if w > MAX_WIDTH {
            w = (MAX_WIDTH / unit).max(1) * unit;
        }
        widths.push(w as i64);
        prev = w;
    }
    widths
}

impl ClassInfo {
    pub(crate) fn new(id: u16, retention: Arc<Retention>, widths: &[i64]) -> ClassInfo {
        let levels = retention
            .archives()
            .iter()
            .zip(widths)
            .map(|(a, &w)| LevelInfo {
                step: i64::from(a.step_secs),
                retention: a.retention_secs(),
                width: w,
            })
            .collect();
        let max_retention = retention.max_retention_secs();
        ClassInfo {
            id,
            retention,
            levels,
            max_retention,
        }
    }

    /// The level a point of this age is written to: the first whose retention covers
    /// it (future points, negative age, go to level 0). `None` when no level does.
    pub(crate) fn level_for_age(&self, age: i64) -> Option<usize> {
        self.levels.iter().position(|l| l.retention >= age)
    }

    /// The start of the partition of `slot` at `level`.
    pub(crate) fn partition_of(&self, level: usize, slot: i64) -> i64 {
        let w = self.levels.get(level).map_or(1, |l| l.width);
        slot - slot.rem_euclid(w)
    }

    pub(crate) fn width(&self, level: usize) -> i64 {
        self.levels.get(level).map_or(1, |l| l.width)
    }

    pub(crate) fn step(&self, level: usize) -> i64 {
        self.levels.get(level).map_or(1, |l| l.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_nest_and_align() {
        let r = Retention::parse("10s:1d,1m:30d,1h:5y").unwrap();
        let w = partition_widths(r.archives(), 8);
        assert_eq!(w[0], 3 * 3600);
        for (k, a) in r.archives().iter().enumerate() {
            assert_eq!(w[k] % i64::from(a.step_secs), 0);
            if let Some(n) = r.archives().get(k + 1) {
                assert_eq!(w[k] % i64::from(n.step_secs), 0);
            }
            if k > 0 {
                assert_eq!(w[k] % w[k - 1], 0, "level {k} nests level {}", k - 1);
            }
        }
        let r = Retention::parse("7s:1h").unwrap();
        let w = partition_widths(r.archives(), 8);
        assert_eq!(w[0] % 7, 0);
        assert!(w[0] > 0);
        // odd steps still give aligned widths
        let r = Retention::parse("3:100,21:1000,4410:100000").unwrap();
        let w = partition_widths(r.archives(), 8);
        assert_eq!(w[0] % 21, 0);
        assert_eq!(w[1] % 4410, 0);
    }

    #[test]
    fn level_for_age_like_whisper() {
        let r = Arc::new(Retention::parse("10s:1h,1m:1d").unwrap());
        let w = partition_widths(r.archives(), 8);
        let c = ClassInfo::new(0, r, &w);
        assert_eq!(c.level_for_age(-100), Some(0));
        assert_eq!(c.level_for_age(3600), Some(0));
        assert_eq!(c.level_for_age(3601), Some(1));
        assert_eq!(c.level_for_age(86400), Some(1));
        assert_eq!(c.level_for_age(86401), None);
        assert_eq!(c.partition_of(0, -1), -c.width(0));
    }
}
