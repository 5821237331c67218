//! Reads: whisper's fetch window arithmetic, and the values of one series at one level
//! over a window, merged from the head, the parts and (for coarse levels) the rollups
//! of the level below, materialised or computed on the fly.
//!
//! Precedence for one slot at level `k`: the newest direct write (head, then parts
//! newest first); else, for `k > 0`, the rollup of level `k - 1` over the slot —
//! read from rollup parts when the level `k - 1` partition holding the slot is rolled
//! and clean, computed from level `k - 1` otherwise.
//!
//! [`bulk`]: many series in one pass (a plan of windows, then the series read in id
//! order with the parts' indexes merge-joined).

pub(crate) mod bulk;

use crate::head::{key_level, key_slot};
use crate::metrics::Metrics;
use crate::part::lookup::IndexLookup;
use crate::part::{Entry, Kind, Part};
use crate::series::{ClassInfo, SeriesMeta};
use crate::version::{RollState, Version};
use foldhash::fast::FixedState;
use hashbrown::HashMap;
use std::sync::atomic::Ordering;

/// What whisper's `fetch` returns: values for `start, start + step, ..., end - step`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
}

/// The archive and slots whisper would read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) level: usize,
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) step: i64,
}

impl Window {
    pub(crate) fn len(&self) -> usize {
        ((self.end - self.start) / self.step.max(1)) as usize
    }
}

/// whisper 1.1's `file_fetch` + `__archive_fetch` window: `None` where whisper returns
/// `None` (range in the future or beyond retention) or raises (`from > until`).
pub(crate) fn whisper_window(class: &ClassInfo, from: i64, until: i64, now: i64) -> Option<Window> {
    if from > until {
        return None;
    }
    let oldest = now.checked_sub(class.max_retention)?;
    if from > now || until < oldest {
        return None;
    }
    let from = from.max(oldest);
    let until = until.min(now);
    let diff = now.checked_sub(from)?;
    let level = class
        .levels
        .iter()
        .position(|l| l.retention >= diff)
        .unwrap_or(class.levels.len().checked_sub(1)?);
    let step = class.step(level);
    let start = (from - from.rem_euclid(step)).checked_add(step)?;
    let mut end = (until - until.rem_euclid(step)).checked_add(step)?;
    if start == end {
        end = end.checked_add(step)?;
    }
    Some(Window {
        level,
        start,
        end,
        step,
    })
}

/// Reusable buffers for decoding blocks.
#[derive(Default)]
pub(crate) struct Scratch {
    slots: Vec<i64>,
    values: Vec<f64>,
    known: Vec<f64>,
    /// For bulk reads (series in ascending id order): a lookup position per part,
    /// keyed by the part's address. Valid only while the parts are: the caller clears
    /// it whenever it reads from another version.
    lookups: Option<HashMap<usize, IndexLookup, FixedState>>,
}

impl Scratch {
    /// Scratch for reading many series in ascending id order.
    pub(crate) fn bulk() -> Scratch {
        Scratch {
            lookups: Some(HashMap::with_hasher(FixedState::default())),
            ..Scratch::default()
        }
    }

    /// Forgets the lookup positions (the parts they point into may be gone).
    pub(crate) fn forget_parts(&mut self) {
        if let Some(l) = &mut self.lookups {
            l.clear();
        }
    }

    /// The index entry of `series` in `part`.
    fn entry(&mut self, part: &Part, series: u32) -> Option<Entry> {
        match &mut self.lookups {
            Some(l) => l
                .entry(std::ptr::from_ref(part) as usize)
                .or_default()
                .entry(part, series),
            None => part.entry(series),
        }
    }
}

/// Everything needed to read one series.
pub(crate) struct SeriesView<'a> {
    pub(crate) series: u32,
    pub(crate) class: &'a ClassInfo,
    pub(crate) meta: SeriesMeta,
    /// The series' head rows, newest first.
    pub(crate) head: &'a [(u64, f64)],
    pub(crate) version: &'a Version,
    pub(crate) roll: &'a RollState,
    pub(crate) metrics: &'a Metrics,
}

impl SeriesView<'_> {
    /// Fills the unset entries of `out` (slots `a, a + step, ...` of `level`, `a` and `b`
    /// multiples of the level's step) with this level's values.
    pub(crate) fn read_level(
        &self,
        level: usize,
        a: i64,
        b: i64,
        out: &mut [Option<f64>],
        sc: &mut Scratch,
    ) {
        let step = self.class.step(level);
        if b <= a || step <= 0 {
            return;
        }
        let lv = level as u8;
        for &(key, v) in self.head {
            if key_level(key) != lv {
                continue;
            }
            let s = key_slot(key);
            if s >= a && s < b {
                if let Some(o) = out.get_mut(((s - a) / step) as usize) {
                    if o.is_none() {
                        *o = Some(v);
                    }
                }
            }
        }
        self.fill_from_parts(level, Kind::Direct, a, b, out, None, sc);
        if level == 0 {
            return;
        }
        let lower = level - 1;
        let wl = self.class.width(lower);
        // ranges whose level-(k-1) partition is not rolled (or dirty): on the fly
        let mut fly: Vec<(i64, i64)> = Vec::new();
        let lr = self.roll.get(self.class.id, lower);
        let installed = lr.map_or(i64::MIN, |l| l.installed);
        if let Some(lr) = lr {
            let (lo, hi) = (a.saturating_sub(wl - 1), b.min(installed));
            if lo < hi {
                for (&d, _) in lr.dirty.range(lo..hi) {
                    fly.push((d.max(a), (d.saturating_add(wl)).min(b)));
                }
            }
        }
        if installed < b {
            fly.push((installed.max(a), b));
        }
        if fly.len() != 1 || fly.first() != Some(&(a, b)) {
            let mut mask = vec![true; out.len()];
            for &(fa, fb) in &fly {
                let (i, j) = (((fa - a) / step) as usize, ((fb - a) / step) as usize);
                if let Some(m) = mask.get_mut(i..j.min(out.len())) {
                    m.fill(false);
                }
            }
            self.fill_from_parts(level, Kind::Rollup, a, b, out, Some(&mask), sc);
        }
        let lstep = self.class.step(lower);
        let ratio = (step / lstep.max(1)).max(1) as usize;
        for (fa, fb) in fly {
            let (i, j) = (((fa - a) / step) as usize, ((fb - a) / step) as usize);
            let Some(range) = out.get(i..j) else { continue };
            if range.iter().all(Option::is_some) {
                continue;
            }
            let mut sub = vec![None; (j - i) * ratio];
            self.read_level(lower, fa, fb, &mut sub, sc);
            for (k, o) in out.get_mut(i..j).unwrap_or_default().iter_mut().enumerate() {
                if o.is_some() {
                    continue;
                }
                sc.known.clear();
                if let Some(fine) = sub.get(k * ratio..(k + 1) * ratio) {
                    sc.known.extend(fine.iter().flatten());
                }
                *o = self.meta.method.rollup(&sc.known, ratio, self.meta.xff);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fill_from_parts(
        &self,
        level: usize,
        kind: Kind,
        a: i64,
        b: i64,
        out: &mut [Option<f64>],
        mask: Option<&[bool]>,
        sc: &mut Scratch,
    ) {
        let Some(parts) = self.version.level(self.class.id, level) else {
            return;
        };
        let w = self.class.width(level);
        let step = self.class.step(level);
        let first = a - a.rem_euclid(w);
        for (_, p) in parts.range(first..b) {
            for r in p.list(kind).iter().rev() {
                self.fill_from_part(&r.part, a, b, step, out, mask, sc);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fill_from_part(
        &self,
        part: &Part,
        a: i64,
        b: i64,
        step: i64,
        out: &mut [Option<f64>],
        mask: Option<&[bool]>,
        sc: &mut Scratch,
    ) {
        let Some(e) = sc.entry(part, self.series) else {
            return;
        };
        if e.last_slot < a || e.first_slot >= b {
            return;
        }
        sc.slots.clear();
        sc.values.clear();
        if let Err(err) = part.read(&e, &mut sc.slots, &mut sc.values) {
            self.metrics.blocks_corrupt.fetch_add(1, Ordering::Relaxed);
            tracing::error!(part = %part.path().display(), %err, "skipping a corrupt block");
            return;
        }
        let lo = sc.slots.partition_point(|&s| s < a);
        for (&s, &v) in sc.slots[lo..].iter().zip(&sc.values[lo..]) {
            if s >= b {
                break;
            }
            let i = ((s - a) / step) as usize;
            if mask.is_some_and(|m| !m.get(i).copied().unwrap_or(false)) {
                continue;
            }
            if let Some(o) = out.get_mut(i) {
                if o.is_none() {
                    *o = Some(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::class::partition_widths;
    use std::sync::Arc;
    use sumi_model::Retention;

    fn class(spec: &str) -> ClassInfo {
        let r = Arc::new(Retention::parse(spec).unwrap());
        let w = partition_widths(r.archives(), 8);
        ClassInfo::new(0, r, &w)
    }

    #[test]
    fn window_like_whisper() {
        let c = class("10s:1h,1m:1d");
        let now = 100_000;
        // from > until, from in the future, until before the oldest
        assert_eq!(whisper_window(&c, 10, 5, now), None);
        assert_eq!(whisper_window(&c, now + 1, now + 10, now), None);
        assert_eq!(whisper_window(&c, 0, now - 86_401, now), None);
        // the last hour at 10 s: the slot holding `from` excluded, the one holding `until` included
        let w = whisper_window(&c, now - 3600, now, now).unwrap();
        assert_eq!((w.level, w.step), (0, 10));
        assert_eq!(w.start, now - 3600 - (now - 3600) % 10 + 10);
        assert_eq!(w.end, now - now % 10 + 10);
        assert_eq!(w.len(), 360);
        // one second more picks the coarse archive
        let w = whisper_window(&c, now - 3601, now, now).unwrap();
        assert_eq!((w.level, w.step), (1, 60));
        // clamped to the oldest point, zero-length ranges get one slot
        let w = whisper_window(&c, i64::MIN, now, now).unwrap();
        assert_eq!(w.start, now - 86_400 - (now - 86_400) % 60 + 60);
        let w = whisper_window(&c, now - 5, now - 5, now).unwrap();
        assert_eq!(w.len(), 1);
        // negative times use Python's modulo
        let w = whisper_window(&c, -25, -15, 0).unwrap();
        assert_eq!((w.start, w.end), (-20, -10));
        // extreme inputs give an answer or None, never a panic
        let _ = whisper_window(&c, 0, i64::MAX, i64::MAX);
        let _ = whisper_window(&c, i64::MIN, i64::MIN, i64::MIN);
    }
}
