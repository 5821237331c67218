//! Interned byte strings with dense `u32` ids: all bytes in one arena, an
//! open-addressing table of ids keyed by the bytes' hash. No allocation per name.
//!
//! Each table entry holds its id and 32 bits of its name's hash: a probe compares
//! those bits before it reads the name from the arena, and growing the table rehashes
//! from them without reading any name (at millions of names, each read is a cache
//! miss). The hash the table sees is built from those 32 bits alone ([`table_hash`]).
//!
//! Used for full series names (id = series id) and for tree node names.
//!
//! A series can be forgotten ([`Names::remove`], after a delete) or given another name
//! ([`Names::rename`]): its id keeps its place and a small side table holds its new
//! bytes (not the arena: a name's start is the previous name's end there).

use std::collections::HashMap;
use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use super::table::IdTable;
use crate::prefetch::prefetch_at;

/// A fixed seed keeps hashing deterministic across runs (nothing hashed here comes
/// from an adversary that could exploit a known seed more than a random one: names
/// are interned once and bounded in length).
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

pub(crate) struct Names {
    arena: Vec<u8>,
    /// `ends[i]` is the end of name `i` in `arena`; it starts at `ends[i - 1]` (or 0).
    ends: Vec<u64>,
    /// `(hash bits << 32) | id`, see [`table_hash`].
    table: IdTable,
    state: FixedState,
    /// Renamed ids and their current bytes. Renames are rare administrative acts, so a
    /// side table costs nothing on the common path.
    moved: HashMap<u32, Box<[u8]>>,
}

impl Default for Names {
    fn default() -> Self {
        Names {
            arena: Vec::new(),
            ends: Vec::new(),
            table: IdTable::default(),
            state: FixedState::with_seed(SEED),
            moved: HashMap::new(),
        }
    }
}

fn slice<'a>(
    arena: &'a [u8],
    ends: &[u64],
    moved: &'a HashMap<u32, Box<[u8]>>,
    id: u32,
) -> &'a [u8] {
    if !moved.is_empty() {
        if let Some(b) = moved.get(&id) {
            return b;
        }
    }
    let i = id as usize;
    let end = ends.get(i).copied().unwrap_or(0) as usize;
    let start = if i == 0 {
        0
    } else {
        ends.get(i - 1).copied().unwrap_or(0) as usize
    };
    arena.get(start..end).unwrap_or_default()
}

/// An odd constant: multiplying by it is a bijection of `u64`.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
/// `SPREAD`'s inverse modulo 2^64, to take the kept bits back out of a table hash.
const UNSPREAD: u64 = {
    // Newton's iteration doubles the correct low bits each step (3 → 6 → ... → 96)
    let mut x = SPREAD;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(SPREAD.wrapping_mul(x)));
        i += 1;
    }
    x
};

/// The hash the table places an entry by, from the 32 hash bits the entry keeps: a
/// multiplication by an odd constant, so that the table's slot (the top bits) depends
/// on all of them.
#[inline]
fn table_hash(bits: u32) -> u64 {
    u64::from(bits).wrapping_mul(SPREAD)
}

/// The hash bits an entry keeps, from a [`Names::hash`] (the inverse of [`table_hash`]).
#[inline]
fn bits_of(hash: u64) -> u32 {
    hash.wrapping_mul(UNSPREAD) as u32
}

#[inline]
fn entry(hash: u64, id: u32) -> u64 {
    (u64::from(bits_of(hash)) << 32) | u64::from(id)
}

#[inline]
fn entry_id(e: u64) -> u32 {
    e as u32
}

#[inline]
fn entry_hash(e: u64) -> u64 {
    table_hash((e >> 32) as u32)
}

impl Names {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The hash [`find_hashed`](Self::find_hashed) and [`push_hashed`](Self::push_hashed)
    /// take: only its 32 bits are kept ([`table_hash`]).
    pub(crate) fn hash(&self, name: &[u8]) -> u64 {
        table_hash((self.state.hash_one(name) >> 32) as u32)
    }

    /// The bytes of `id` (empty for an unknown id).
    pub(crate) fn get_bytes(&self, id: u32) -> &[u8] {
        slice(&self.arena, &self.ends, &self.moved, id)
    }

    pub(crate) fn find(&self, name: &[u8]) -> Option<u32> {
        self.find_hashed(self.hash(name), name)
    }

    pub(crate) fn find_hashed(&self, hash: u64, name: &[u8]) -> Option<u32> {
        let (arena, ends, moved) = (&self.arena, &self.ends, &self.moved);
        let want = entry(hash, 0);
        self.table
            .find(hash, |e| {
                e >> 32 == want >> 32 && slice(arena, ends, moved, entry_id(e)) == name
            })
            .map(entry_id)
    }

    /// The id whose entry keeps `hash`'s bits, found without reading any name; `None`
    /// means the name is absent. Two names may share the bits: the caller checks the
    /// candidate with [`is_named`](Self::is_named) and falls back to
    /// [`find_hashed`](Self::find_hashed) when it is not the one.
    pub(crate) fn candidate(&self, hash: u64) -> Option<u32> {
        let want = u64::from(bits_of(hash));
        self.table.find(hash, |e| e >> 32 == want).map(entry_id)
    }

    /// Starts loading the table slot where [`candidate`](Self::candidate) of `hash`
    /// looks first.
    #[inline]
    pub(crate) fn prefetch_slot(&self, hash: u64) {
        self.table.prefetch(hash);
    }

    /// Starts loading where `id`'s bytes are found (its end and its start in `ends`).
    #[inline]
    pub(crate) fn prefetch_ends(&self, id: u32) {
        prefetch_at(&self.ends, (id as usize).wrapping_sub(1));
        prefetch_at(&self.ends, id as usize);
    }

    /// Starts loading `id`'s first bytes (reads its place in `ends`: call it after
    /// [`prefetch_ends`](Self::prefetch_ends) had time to work).
    #[inline]
    pub(crate) fn prefetch_bytes(&self, id: u32) {
        let i = id as usize;
        let start = if i == 0 {
            0
        } else {
            self.ends.get(i - 1).copied().unwrap_or(0) as usize
        };
        prefetch_at(&self.arena, start);
    }

    /// Whether `id` is named `name`.
    pub(crate) fn is_named(&self, id: u32, name: &[u8]) -> bool {
        self.get_bytes(id) == name
    }

    /// Adds a name known to be absent; returns its id.
    pub(crate) fn push(&mut self, name: &[u8]) -> u32 {
        self.push_hashed(self.hash(name), name)
    }

    /// [`push`](Self::push) of a name whose [`hash`](Self::hash) the caller has.
    pub(crate) fn push_hashed(&mut self, hash: u64, name: &[u8]) -> u32 {
        let id = self.ends.len() as u32;
        self.arena.extend_from_slice(name);
        self.ends.push(self.arena.len() as u64);
        self.table.insert(hash, entry(hash, id), entry_hash);
        id
    }

    /// Adds `name` unless it is present (one probe of the table for both); returns its
    /// new id, or `None` when the name was there already.
    pub(crate) fn push_absent(&mut self, name: &[u8]) -> Option<u32> {
        let id = self.ends.len() as u32;
        let hash = self.hash(name);
        let want = entry(hash, id);
        let (arena, ends, moved) = (&self.arena, &self.ends, &self.moved);
        let present = self.table.find(hash, |e| {
            e >> 32 == want >> 32 && slice(arena, ends, moved, entry_id(e)) == name
        });
        if present.is_some() {
            return None;
        }
        self.table.insert(hash, want, entry_hash);
        self.arena.extend_from_slice(name);
        self.ends.push(self.arena.len() as u64);
        Some(id)
    }

    /// Room for `names` more names of `bytes` bytes in all, so that a bulk load does
    /// not grow (and rehash) the table step by step.
    pub(crate) fn reserve(&mut self, names: usize, bytes: usize) {
        self.arena.reserve(bytes);
        self.ends.reserve(names);
        self.table.reserve(names, entry_hash);
    }

    /// Takes `id` out of the hash table: [`find`](Self::find) no longer returns it
    /// (its bytes stay readable through [`get_bytes`](Self::get_bytes)). Returns
    /// whether it was there.
    pub(crate) fn remove(&mut self, id: u32) -> bool {
        let hash = self.hash(self.get_bytes(id));
        self.table.remove(hash, |e| entry_id(e) == id, entry_hash)
    }

    /// Gives `id` the name `name` (known to be absent): the old name no longer finds
    /// it, the new one does.
    pub(crate) fn rename(&mut self, id: u32, name: &[u8]) {
        self.remove(id);
        self.moved.insert(id, name.into());
        let hash = self.hash(name);
        self.table.insert(hash, entry(hash, id), entry_hash);
    }

    /// The id of `name`, interning it first when absent.
    pub(crate) fn intern(&mut self, name: &[u8]) -> u32 {
        match self.find(name) {
            Some(id) => id,
            None => self.push(name),
        }
    }

    /// Bytes held, for the memory gauges.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.arena.capacity()
            + self.ends.capacity() * 8
            + self.table.capacity() * 8
            + self.moved.values().map(|b| b.len() + 32).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intern_and_find() {
        let mut n = Names::default();
        assert_eq!(n.intern(b"a.b"), 0);
        assert_eq!(n.intern(b"c"), 1);
        assert_eq!(n.intern(b""), 2);
        assert_eq!(n.intern(b"a.b"), 0);
        assert_eq!(n.find(b"c"), Some(1));
        assert_eq!(n.find(b"a"), None);
        assert_eq!(n.get_bytes(0), b"a.b");
        assert_eq!(n.get_bytes(2), b"");
        assert_eq!(n.get_bytes(7), b"");
        for i in 0..10_000u32 {
            assert_eq!(n.intern(format!("x{i}").as_bytes()), i + 3);
        }
        assert_eq!(n.find(b"x9999"), Some(10_002));
        let h = n.hash(b"x9999");
        assert_eq!(n.candidate(h), Some(10_002));
        assert!(n.is_named(10_002, b"x9999"));
        assert!(!n.is_named(10_001, b"x9999"));
        assert_eq!(n.candidate(n.hash(b"absent")), None);
        assert_eq!(n.len(), 10_003);
    }

    #[test]
    fn table_hash_keeps_its_bits() {
        assert_eq!(SPREAD.wrapping_mul(UNSPREAD), 1);
        for b in [0u32, 1, 7, 0x8000_0000, u32::MAX, 0x1234_5678] {
            assert_eq!(bits_of(table_hash(b)), b);
        }
        let n = Names::default();
        let h = n.hash(b"some.name");
        assert_eq!(table_hash(bits_of(h)), h);
    }

    #[test]
    fn remove_and_rename() {
        let mut n = Names::default();
        for i in 0..100u32 {
            n.push(format!("s{i}").as_bytes());
        }
        assert!(n.remove(7));
        assert!(!n.remove(7));
        assert_eq!(n.find(b"s7"), None);
        assert_eq!(n.get_bytes(7), b"s7");
        n.rename(8, b"renamed.eight");
        assert_eq!(n.find(b"s8"), None);
        assert_eq!(n.find(b"renamed.eight"), Some(8));
        assert_eq!(n.get_bytes(8), b"renamed.eight");
        // names pushed after a rename are intact
        assert_eq!(n.push(b"after"), 100);
        assert_eq!(n.get_bytes(100), b"after");
        assert_eq!(n.find(b"after"), Some(100));
        assert_eq!(n.get_bytes(99), b"s99");
        // the table still finds everything else after growing past the renamed entry
        for i in 101..5_000u32 {
            assert_eq!(n.push(format!("s{i}").as_bytes()), i);
        }
        assert_eq!(n.find(b"renamed.eight"), Some(8));
        assert_eq!(n.find(b"s9"), Some(9));
        assert_eq!(n.find(b"s4999"), Some(4999));
        // a renamed id can be renamed again, back to its first name even
        n.rename(8, b"s8");
        assert_eq!(n.find(b"s8"), Some(8));
        assert_eq!(n.find(b"renamed.eight"), None);
    }
}
