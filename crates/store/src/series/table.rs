//! The open-addressing table under [`Names`](super::names::Names): one `u64` a slot
//! (the entry itself, [`Names`]' `(hash bits << 32) | id`), linear probing, no control
//! bytes. A lookup of a present name reads one cache line of the table in nearly every
//! case (eight slots a line), and that line's address is known from the hash alone, so
//! the write path can fetch it ahead ([`IdTable::prefetch`]) for a whole batch of names
//! before it probes any of them. (hashbrown's table, used before, keeps a control byte
//! per slot apart from the slots: two lines a lookup, and no way to name them ahead.)
//!
//! Removal shifts the following entries of the run back (no tombstones), so a probe
//! stops at the first empty slot whatever was removed before.

use crate::prefetch::prefetch_at;

/// An empty slot. No entry equals it: ids are below `u32::MAX` (`u32::MAX` is the write
/// path's "no series").
const EMPTY: u64 = u64::MAX;

/// The table grows when more than 13/16 (81 %) of its slots would be full.
const LOAD_NUM: usize = 13;
const LOAD_DEN: usize = 16;

#[derive(Default)]
pub(crate) struct IdTable {
    slots: Vec<u64>,
    len: usize,
    /// `64 - log2(slots.len())`: a hash's top bits are its home slot.
    shift: u32,
}

impl IdTable {
    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// Slots held (for the memory gauges).
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Starts loading the slot where a probe for `hash` begins.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        if !self.slots.is_empty() {
            prefetch_at(&self.slots, self.home(hash));
        }
    }

    /// The first entry of `hash`'s run that `eq` accepts.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(u64) -> bool) -> Option<u64> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(hash);
        loop {
            let e = *self.slots.get(i)?;
            if e == EMPTY {
                return None;
            }
            if eq(e) {
                return Some(e);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `entry` (not present), placed by `hash`; `rehash` gives any entry's hash,
    /// for growing.
    pub(crate) fn insert(&mut self, hash: u64, entry: u64, rehash: impl Fn(u64) -> u64) {
        debug_assert_ne!(entry, EMPTY);
        self.reserve(1, &rehash);
        self.place(hash, entry);
        self.len += 1;
    }

    fn place(&mut self, hash: u64, entry: u64) {
        let mask = self.mask();
        let mut i = self.home(hash);
        while let Some(s) = self.slots.get_mut(i) {
            if *s == EMPTY {
                *s = entry;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Room for `more` entries without growing.
    pub(crate) fn reserve(&mut self, more: usize, rehash: impl Fn(u64) -> u64) {
        let want = self.len.saturating_add(more);
        let mut cap = self.slots.len().max(16);
        while want.saturating_mul(LOAD_DEN) > cap.saturating_mul(LOAD_NUM) {
            cap *= 2;
        }
        if cap == self.slots.len() {
            return;
        }
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; cap]);
        self.shift = 64 - cap.trailing_zeros();
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.place(rehash(e), e);
        }
    }

    /// Removes the first entry of `hash`'s run that `eq` accepts; returns whether there
    /// was one. `rehash` gives any entry's hash (the entries after it move back).
    pub(crate) fn remove(
        &mut self,
        hash: u64,
        mut eq: impl FnMut(u64) -> bool,
        rehash: impl Fn(u64) -> u64,
    ) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let mask = self.mask();
        let mut hole = self.home(hash);
        loop {
            match self.slots.get(hole).copied() {
                None | Some(EMPTY) => return false,
                Some(e) if eq(e) => break,
                Some(_) => hole = (hole + 1) & mask,
            }
        }
        // shift back each later entry of the run whose home is not between the hole
        // and itself (cyclically), so that every entry stays reachable from its home
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let e = match self.slots.get(j).copied() {
                None | Some(EMPTY) => break,
                Some(e) => e,
            };
            let home = self.home(rehash(e));
            let dist_j = j.wrapping_sub(home) & mask;
            let dist_hole = hole.wrapping_sub(home) & mask;
            if dist_hole < dist_j {
                if let Some(s) = self.slots.get_mut(hole) {
                    *s = e;
                }
                hole = j;
            }
        }
        if let Some(s) = self.slots.get_mut(hole) {
            *s = EMPTY;
        }
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(e: u64) -> u64 {
        // a deliberately poor hash: many entries share a home, runs wrap around the end
        (e % 7).wrapping_mul(0x9e37_79b9_7f4a_7c15) | (e % 3) << 62
    }

    #[test]
    fn insert_find_remove_keep_every_entry_reachable() {
        let mut t = IdTable::default();
        let mut present = std::collections::BTreeSet::new();
        let mut x = 12345u64;
        for round in 0..10_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let e = (x >> 40) % 600;
            if present.contains(&e) {
                assert!(t.remove(h(e), |v| v == e, h));
                present.remove(&e);
            } else {
                t.insert(h(e), e, h);
                present.insert(e);
            }
            if round % 997 == 0 {
                for v in 0..600u64 {
                    assert_eq!(t.find(h(v), |w| w == v).is_some(), present.contains(&v));
                }
            }
        }
        assert_eq!(t.len, present.len());
        assert!(!t.remove(h(5000), |v| v == 5000, h));
    }
}
