//! What readers see besides the head: the live parts of every partition, as one
//! immutable value swapped whole.
//! Also the roll state: which partitions of each level have their rollup materialised.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::part::{Kind, Part};
use crate::series::ClassInfo;

/// A part and its precedence: for one slot, the part with the higher order wins.
#[derive(Clone, Debug)]
pub(crate) struct PartRef {
    pub(crate) part: Arc<Part>,
    pub(crate) order: u64,
}

/// The parts of one partition, each list sorted by order (oldest first).
#[derive(Clone, Debug, Default)]
pub(crate) struct Partition {
    pub(crate) direct: Vec<PartRef>,
    pub(crate) rollup: Vec<PartRef>,
}

impl Partition {
    pub(crate) fn list(&self, kind: Kind) -> &[PartRef] {
        match kind {
            Kind::Direct => &self.direct,
            Kind::Rollup => &self.rollup,
        }
    }

    pub(crate) fn list_mut(&mut self, kind: Kind) -> &mut Vec<PartRef> {
        match kind {
            Kind::Direct => &mut self.direct,
            Kind::Rollup => &mut self.rollup,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.direct.is_empty() && self.rollup.is_empty()
    }
}

/// Partitions by start, per `[class][level]`.
pub(crate) type LevelParts = BTreeMap<i64, Partition>;

#[derive(Clone, Default)]
pub(crate) struct Version {
    pub(crate) levels: Vec<Vec<LevelParts>>,
}

impl Version {
    pub(crate) fn level(&self, class: u16, level: usize) -> Option<&LevelParts> {
        self.levels.get(usize::from(class))?.get(level)
    }

    pub(crate) fn level_mut(&mut self, class: u16, level: usize) -> &mut LevelParts {
        let c = usize::from(class);
        if self.levels.len() <= c {
            self.levels.resize_with(c + 1, Vec::new);
        }
        let lv = &mut self.levels[c];
        if lv.len() <= level {
            lv.resize_with(level + 1, BTreeMap::new);
        }
        &mut lv[level]
    }

    /// Adds a part at its sorted place.
    pub(crate) fn add(&mut self, p: PartRef) {
        let h = p.part.header;
        let list = self
            .level_mut(h.class, usize::from(h.level))
            .entry(h.partition)
            .or_default()
            .list_mut(h.kind);
        let at = list.partition_point(|x| x.order <= p.order);
        list.insert(at, p);
    }

    /// Removes the parts with these file ids; returns them.
    pub(crate) fn remove(&mut self, file_ids: &[u64]) -> Vec<PartRef> {
        let mut out = Vec::new();
        for levels in &mut self.levels {
            for parts in levels.iter_mut() {
                parts.retain(|_, p| {
                    for list in [&mut p.direct, &mut p.rollup] {
                        list.retain(|r| {
                            if file_ids.contains(&r.part.header.file_id) {
                                out.push(r.clone());
                                false
                            } else {
                                true
                            }
                        });
                    }
                    !p.is_empty()
                });
            }
        }
        out
    }

    /// Every live part.
    pub(crate) fn parts(&self) -> impl Iterator<Item = &PartRef> + '_ {
        self.levels
            .iter()
            .flatten()
            .flat_map(|m| m.values())
            .flat_map(|p| p.direct.iter().chain(&p.rollup))
    }
}

/// The roll state of one level of one class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LevelRoll {
    /// Partitions ending at or before this have their rollup into the next level in a
    /// part (unless dirty).
    pub(crate) installed: i64,
    /// Partitions ending at or before this have had a rollup started: a write into one
    /// of them marks it dirty.
    pub(crate) horizon: i64,
    /// Rolled partitions that received writes since, by start, with a write counter.
    pub(crate) dirty: BTreeMap<i64, u64>,
}

impl Default for LevelRoll {
    fn default() -> Self {
        LevelRoll {
            installed: i64::MIN,
            horizon: i64::MIN,
            dirty: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RollState {
    pub(crate) classes: Vec<Vec<LevelRoll>>,
}

impl RollState {
    pub(crate) fn get(&self, class: u16, level: usize) -> Option<&LevelRoll> {
        self.classes.get(usize::from(class))?.get(level)
    }

    pub(crate) fn get_mut(&mut self, class: u16, level: usize) -> &mut LevelRoll {
        let c = usize::from(class);
        if self.classes.len() <= c {
            self.classes.resize_with(c + 1, Vec::new);
        }
        let lv = &mut self.classes[c];
        if lv.len() <= level {
            lv.resize_with(level + 1, LevelRoll::default);
        }
        &mut lv[level]
    }

    /// The horizon of `(class, level)`: writes to slots below it mark their partition dirty.
    pub(crate) fn horizon(&self, class: u16, level: usize) -> i64 {
        self.get(class, level).map_or(i64::MIN, |l| l.horizon)
    }

    /// True when the rollup of partition `[start, end)` at `level` into `level + 1` is
    /// materialised and current, so readers of `level + 1` can use it.
    pub(crate) fn rolled_clean(&self, class: u16, level: usize, start: i64, end: i64) -> bool {
        self.get(class, level)
            .is_some_and(|l| l.installed >= end && !l.dirty.contains_key(&start))
    }

    /// Records a write at `(level, slot)`: when its partition's rollup has started it
    /// becomes dirty, and so does every coarser partition above it whose rollup has
    /// started (their values derive from it). Returns whether anything changed.
    pub(crate) fn mark_write(&mut self, class: &ClassInfo, level: usize, slot: i64) -> bool {
        let mut changed = false;
        for l in level..class.levels.len() {
            if slot >= self.horizon(class.id, l) {
                break;
            }
            let ps = class.partition_of(l, slot);
            *self.get_mut(class.id, l).dirty.entry(ps).or_insert(0) += 1;
            changed = true;
        }
        changed
    }

    pub(crate) fn dirty_count(&self) -> usize {
        self.classes.iter().flatten().map(|l| l.dirty.len()).sum()
    }
}
