//! The metric tree for `find`: one node per distinct path prefix, node names interned,
//! children reachable both by a linked list (to scan for a wildcard) and by a hash of
//! `(parent, name)` (to look a literal name up without scanning).
//!
//! A node with many children also gets, the first time a wildcard scans it, a sorted
//! array of its children (by name), kept until its children change: a wildcard with a
//! literal prefix (`host0000*`) then visits only the children in that prefix's range
//! (binary search), and a lone `*` visits them in name order, so the answer comes out
//! already sorted.
//!
//! `find` follows graphite-web 1.1's `StandardFinder._find_paths` over a directory of
//! whisper files: a node with children is a directory (branch), a node that is a series
//! is a `.wsp` file (leaf); a path can be both and then yields both.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use parking_lot::Mutex;
use sumi_model::glob::{NodePattern, PathPattern};

use super::names::Names;

const NONE: u32 = u32::MAX;
const ROOT: u32 = 0;
/// Children a node needs before a wildcard scan sorts them into an array: below it the
/// linked list is as fast and the array is not worth its memory.
const SORTED_MIN: usize = 64;
/// Matches of a wildcard, at least this many, whose next pattern nodes are literal
/// (`bench.*.cpu.user`) have those literal children looked up a pattern node at a time
/// over all of them ([`Tree::enter_many`]) instead of one match after another: the
/// lookups are independent, so their cache misses overlap.
const BATCH_MIN: usize = 64;
/// Matches of a wildcard, at least this many, are split over two threads.
const SPLIT_MIN: usize = 16_384;

std::thread_local! {
    /// Set on both threads of a split find: a find is split once, not again inside.
    static SPLIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[derive(Clone, Copy, Debug)]
struct Node {
    sym: u32,
    first_child: u32,
    next_sibling: u32,
    /// The series stored at this path, if any.
    leaf: u32,
}

/// One node of a pattern, prepared for this tree.
enum Step<'p> {
    Globstar,
    /// Literal names (brace alternatives), as symbols of names the tree holds.
    Syms(Vec<u32>),
    /// Literal text and `*` only: matched on bytes without allocating.
    Stars(StarGlob),
    /// The general pattern and the literal text every name it matches starts with.
    Glob(&'p NodePattern, Vec<u8>),
}

/// The literal text every name matched by the node pattern `text` (backslashes
/// removed, as [`PathPattern`] parses it) starts with: everything before the first
/// `*`, `?`, `[` or `{`.
fn literal_prefix(text: &str) -> &[u8] {
    let end = text.find(['*', '?', '[', '{']).unwrap_or(text.len());
    text.as_bytes().get(..end).unwrap_or_default()
}

/// A node pattern made of literal runs separated by `*` (`host*`, `*`, `*_bytes`,
/// `web*01`): the common globs, matched here without the general fnmatch machinery.
/// Patterns with `?`, `[`, `{` or `\\` are left to [`NodePattern`].
#[derive(Debug, PartialEq, Eq)]
struct StarGlob {
    /// The literal runs between stars (possibly empty at either end).
    parts: Vec<Vec<u8>>,
}

impl StarGlob {
    fn parse(text: &str) -> Option<StarGlob> {
        if !text.contains('*') || text.contains(['?', '[', '{', '}', '\\']) || text == "**" {
            return None;
        }
        Some(StarGlob {
            parts: text.split('*').map(|p| p.as_bytes().to_vec()).collect(),
        })
    }

    /// The literal text before the first `*`.
    fn prefix(&self) -> &[u8] {
        self.parts.first().map_or(&[], Vec::as_slice)
    }

    fn matches(&self, name: &[u8]) -> bool {
        // a lone `*`, the most common node pattern, matches every name: answering
        // before any byte comparison made `find` of `host.*.*.*` over a million names
        // 2-3x faster (170 ms to 70 ms)
        if let [a, b] = self.parts.as_slice() {
            if a.is_empty() && b.is_empty() {
                return true;
            }
        }
        let Some((first, rest)) = self.parts.split_first() else {
            return true;
        };
        let Some(mut tail) = name.strip_prefix(first.as_slice()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            return tail.is_empty();
        };
        for m in middle {
            if m.is_empty() {
                continue;
            }
            match tail.windows(m.len()).position(|w| w == m.as_slice()) {
                Some(i) => tail = &tail[i + m.len()..],
                None => return false,
            }
        }
        tail.len() >= last.len() && tail.ends_with(last)
    }
}

/// The previous path given to [`Tree::insert_cached`] and its nodes: `(end of the
/// node's name in the path, node id)`, root first.
#[derive(Default)]
pub(crate) struct PathCache {
    path: Vec<u8>,
    nodes: Vec<(usize, u32)>,
}

pub(crate) struct Tree {
    nodes: Vec<Node>,
    /// `(parent, name symbol, child)`: the key sits in the table, so a lookup touches
    /// no node.
    children: HashTable<(u32, u32, u32)>,
    syms: Names,
    state: FixedState,
    /// Nodes unlinked by [`Tree::remove_many`]: their slots stay in `nodes` (ids are
    /// indexes) but no parent reaches them.
    dead: usize,
    /// The children of wide nodes (at least [`SORTED_MIN`]) sorted by name, built by the
    /// first wildcard scan of the node and dropped when its children change.
    sorted: Mutex<HashMap<u32, Arc<[u32]>>>,
    /// The fast paths: wide nodes get sorted children, small nodes are visited in name
    /// order, wide matches are looked up in batches and split over two threads (off:
    /// always the plain list scan, one node after another, the tests' reference).
    sort_wide: bool,
    /// [`BATCH_MIN`] and [`SPLIT_MIN`] (smaller in tests, to take those paths on small
    /// trees).
    batch_min: usize,
    split_min: usize,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![Node {
                sym: NONE,
                first_child: NONE,
                next_sibling: NONE,
                leaf: NONE,
            }],
            children: HashTable::new(),
            syms: Names::default(),
            state: FixedState::with_seed(0x7ee),
            dead: 0,
            sorted: Mutex::new(HashMap::new()),
            sort_wide: true,
            batch_min: BATCH_MIN,
            split_min: SPLIT_MIN,
        }
    }
}

impl Node {
    const EMPTY: Node = Node {
        sym: NONE,
        first_child: NONE,
        next_sibling: NONE,
        leaf: NONE,
    };
}

impl Tree {
    fn child_hash(state: &FixedState, parent: u32, sym: u32) -> u64 {
        state.hash_one((u64::from(parent) << 32) | u64::from(sym))
    }

    fn child(&self, parent: u32, sym: u32) -> Option<u32> {
        let h = Self::child_hash(&self.state, parent, sym);
        self.children
            .find(h, |&(p, s, _)| p == parent && s == sym)
            .map(|&(_, _, c)| c)
    }

    fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.get(id as usize)
    }

    /// Room for `nodes` more nodes, so that a bulk load does not grow (and rehash) the
    /// child table step by step.
    pub(crate) fn reserve(&mut self, nodes: usize) {
        self.nodes.reserve(nodes);
        let state = &self.state;
        self.children
            .reserve(nodes, |&(p, s, _)| Self::child_hash(state, p, s));
    }

    /// Adds the path of series `series` (dot-separated, no empty node).
    pub(crate) fn insert(&mut self, path: &str, series: u32) {
        let mut cur = ROOT;
        for part in path.split('.') {
            cur = self.child_or_new(cur, part);
        }
        if let Some(n) = self.nodes.get_mut(cur as usize) {
            n.leaf = series;
        }
    }

    /// [`insert`](Self::insert) for a bulk load: the nodes of the previous path's
    /// leading nodes that this path shares (byte for byte) are taken from `cache`
    /// instead of being looked up. Series logged one after another mostly share all
    /// but their last node (`host.cpu.user`, `host.cpu.system`), so opening a store of
    /// millions of series hashes about one node per series instead of all of them.
    /// `cache` is valid only while nothing but this method changes the tree.
    pub(crate) fn insert_cached(&mut self, path: &str, series: u32, cache: &mut PathCache) {
        let b = path.as_bytes();
        let common = b
            .iter()
            .zip(&cache.path)
            .take_while(|(x, y)| x == y)
            .count();
        // leading nodes of the cached path that end inside the common prefix, at a
        // node boundary of this path too
        let mut keep = 0;
        for &(end, _) in &cache.nodes {
            let boundary = end < common || (end == common && (b.len() == end || b[end] == b'.'));
            if !boundary {
                break;
            }
            keep += 1;
        }
        cache.nodes.truncate(keep);
        let (mut cur, mut start) = match cache.nodes.last() {
            Some(&(end, node)) => (node, end + 1),
            None => (ROOT, 0),
        };
        while start <= b.len() {
            let end = b[start..]
                .iter()
                .position(|&c| c == b'.')
                .map_or(b.len(), |i| start + i);
            cur = self.child_or_new(cur, &path[start..end]);
            cache.nodes.push((end, cur));
            start = end + 1;
        }
        cache.path.clear();
        cache.path.extend_from_slice(b);
        if let Some(n) = self.nodes.get_mut(cur as usize) {
            n.leaf = series;
        }
    }

    /// The child of `cur` named `part`, created when absent.
    fn child_or_new(&mut self, cur: u32, part: &str) -> u32 {
        let sym = self.syms.intern(part.as_bytes());
        if let Some(c) = self.child(cur, sym) {
            return c;
        }
        self.children_changed(cur);
        let id = self.nodes.len() as u32;
        let first = self.nodes.get(cur as usize).map_or(NONE, |n| n.first_child);
        self.nodes.push(Node {
            sym,
            first_child: NONE,
            next_sibling: first,
            leaf: NONE,
        });
        if let Some(p) = self.nodes.get_mut(cur as usize) {
            p.first_child = id;
        }
        let h = Self::child_hash(&self.state, cur, sym);
        let state = &self.state;
        self.children
            .insert_unique(h, (cur, sym, id), |&(p, s, _)| {
                Self::child_hash(state, p, s)
            });
        id
    }

    /// Drops the sorted children of `id`, which are about to change.
    fn children_changed(&mut self, id: u32) {
        let sorted = self.sorted.get_mut();
        if !sorted.is_empty() {
            sorted.remove(&id);
        }
    }

    /// The children of `id` sorted by name (a node with at least [`SORTED_MIN`]).
    fn sorted_children(&self, id: u32) -> Arc<[u32]> {
        if let Some(s) = self.sorted.lock().get(&id) {
            return Arc::clone(s);
        }
        let mut named: Vec<(&[u8], u32)> = self
            .children_of(id)
            .map(|c| (self.name_of(c).as_bytes(), c))
            .collect();
        // names are distinct among siblings
        named.sort_unstable();
        let s: Arc<[u32]> = named.into_iter().map(|(_, c)| c).collect();
        self.sorted.lock().insert(id, Arc::clone(&s));
        s
    }

    /// The children of `cur` whose names start with `prefix`, in name order when the
    /// node is wide enough to have them sorted (then found by binary search), else in
    /// list order.
    fn children_with_prefix(&self, cur: u32, prefix: &[u8], each: &mut dyn FnMut(u32)) {
        // the first children, walked once: most nodes have fewer
        let mut first = [NONE; SORTED_MIN];
        let mut n = 0;
        let mut list = self.children_of(cur);
        for (slot, c) in first.iter_mut().zip(&mut list) {
            *slot = c;
            n += 1;
        }
        let wide = n == SORTED_MIN && list.next().is_some();
        if !wide {
            let few = first.get_mut(..n).unwrap_or_default();
            // in name order, so that a find's answer mostly comes out sorted already
            if self.sort_wide && few.len() > 1 {
                few.sort_unstable_by(|&a, &b| self.name_of(a).cmp(self.name_of(b)));
            }
            for &c in few.iter() {
                each(c);
            }
        } else if !self.sort_wide {
            for c in self.children_of(cur) {
                each(c);
            }
        } else {
            let sorted = self.sorted_children(cur);
            let name = |c: &u32| self.name_of(*c).as_bytes();
            let start = sorted.partition_point(|c| name(c) < prefix);
            let rest = sorted.get(start..).unwrap_or_default();
            let len = rest.partition_point(|c| name(c).starts_with(prefix));
            for &c in rest.get(..len).unwrap_or_default() {
                each(c);
            }
        }
    }

    fn children_of(&self, id: u32) -> impl Iterator<Item = u32> + '_ {
        let mut c = self.node(id).map_or(NONE, |n| n.first_child);
        std::iter::from_fn(move || {
            if c == NONE {
                return None;
            }
            let out = c;
            c = self.node(c).map_or(NONE, |n| n.next_sibling);
            Some(out)
        })
    }

    fn is_branch(&self, id: u32) -> bool {
        self.node(id).is_some_and(|n| n.first_child != NONE)
    }

    fn name_of(&self, id: u32) -> &str {
        let sym = self.node(id).map_or(NONE, |n| n.sym);
        std::str::from_utf8(self.syms.get_bytes(sym)).unwrap_or_default()
    }

    /// The series id stored at a node, if it is a leaf.
    pub(crate) fn leaf_of(&self, id: u32) -> Option<u32> {
        self.node(id).map(|n| n.leaf).filter(|&l| l != NONE)
    }

    /// Nodes matching `pattern` as `(path, is_leaf)`, sorted by path with the leaf
    /// first when a path is both, without duplicates.
    pub(crate) fn find(&self, pattern: &PathPattern) -> Vec<(String, bool)> {
        self.find_ids(pattern)
            .into_iter()
            .map(|(path, leaf)| (path, leaf.is_some()))
            .collect()
    }

    /// [`find`](Self::find) with each leaf's series: `(path, Some(series))` for a
    /// leaf, `(path, None)` for a branch.
    pub(crate) fn find_ids(&self, pattern: &PathPattern) -> Vec<(String, Option<u32>)> {
        let mut out = Vec::new();
        self.walk(pattern, &mut |path, leaf| {
            out.push((path.to_string(), leaf))
        });
        // a leaf before the branch of the same path; names visited in name order mostly
        // give paths in order already (not always: `a.b.x` sorts after `a.b-c`)
        let order = |a: &(String, Option<u32>), b: &(String, Option<u32>)| {
            a.0.cmp(&b.0).then(b.1.is_some().cmp(&a.1.is_some()))
        };
        if !out.is_sorted_by(|a, b| order(a, b).is_le()) {
            out.sort_unstable_by(order);
        }
        out.dedup();
        out
    }

    /// The series of the leaves matching `pattern`, in the order the walk meets them
    /// (mostly sorted by path, possibly twice under a globstar), without building a
    /// path for each.
    pub(crate) fn find_leaves(&self, pattern: &PathPattern) -> Vec<u32> {
        let mut out = Vec::new();
        self.walk(pattern, &mut |_, leaf| out.extend(leaf));
        out
    }

    /// Hands every node matching `pattern` to `out` as `(path, series of a leaf or
    /// None for a branch)`.
    fn walk(&self, pattern: &PathPattern, out: &mut dyn FnMut(&str, Option<u32>)) {
        // resolve literal node names to symbols once: a name the tree never saw matches
        // nothing, and lookups need no string hashing per visited node
        // the text of each node, as PathPattern::parse cut it (backslashes removed)
        let clean: String = pattern.as_str().chars().filter(|&c| c != '\\').collect();
        let texts: Vec<&str> = clean.split('.').collect();
        let compiled: Vec<Step<'_>> = pattern
            .nodes()
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let text = texts.get(i).copied().unwrap_or_default();
                if p.is_globstar() {
                    Step::Globstar
                } else if let Some(lits) = p.literals() {
                    Step::Syms(
                        lits.iter()
                            .filter_map(|l| self.syms.find(l.as_bytes()))
                            .collect(),
                    )
                } else if let Some(stars) = StarGlob::parse(text) {
                    Step::Stars(stars)
                } else {
                    Step::Glob(p, literal_prefix(text).to_vec())
                }
            })
            .collect();
        let mut prefix = String::new();
        self.find_from(ROOT, &compiled, &mut prefix, out);
    }

    /// graphite-web's `_find_paths(current_dir, patterns)`; `prefix` is the path of
    /// `cur` (empty for the root).
    fn find_from(
        &self,
        cur: u32,
        pats: &[Step<'_>],
        prefix: &mut String,
        out: &mut dyn FnMut(&str, Option<u32>),
    ) {
        let Some((pat, rest)) = pats.split_first() else {
            return;
        };
        // a wildcard followed by a literal: its matches go to enter_many together
        let batch = self.sort_wide && matches!(rest.first(), Some(Step::Syms(_)));
        match pat {
            Step::Globstar => {
                // every directory below cur (cur included) gets the remaining patterns; a
                // terminal ** becomes "*" in each of them, i.e. every node below cur
                if rest.is_empty() {
                    self.emit_descendants(cur, prefix, out);
                } else {
                    self.find_from(cur, rest, prefix, out);
                    self.globstar_dirs(cur, rest, prefix, out);
                }
            }
            Step::Syms(syms) => {
                for &sym in syms {
                    if let Some(c) = self.child(cur, sym) {
                        self.enter(c, rest, prefix, out);
                    }
                }
            }
            Step::Stars(g) if batch => {
                let mut matched = Vec::new();
                self.children_with_prefix(cur, g.prefix(), &mut |c| {
                    if g.matches(self.name_of(c).as_bytes()) {
                        matched.push(c);
                    }
                });
                self.enter_many(&matched, rest, prefix, out);
            }
            Step::Glob(p, lit) if batch => {
                let mut matched = Vec::new();
                self.children_with_prefix(cur, lit, &mut |c| {
                    if p.matches(self.name_of(c)) {
                        matched.push(c);
                    }
                });
                self.enter_many(&matched, rest, prefix, out);
            }
            Step::Stars(g) => {
                self.children_with_prefix(cur, g.prefix(), &mut |c| {
                    if g.matches(self.name_of(c).as_bytes()) {
                        self.enter(c, rest, prefix, out);
                    }
                });
            }
            Step::Glob(p, lit) => {
                self.children_with_prefix(cur, lit, &mut |c| {
                    if p.matches(self.name_of(c)) {
                        self.enter(c, rest, prefix, out);
                    }
                });
            }
        }
    }

    /// The matched child `c` of the node at `prefix`: emitted when the pattern ends
    /// here, else searched with the remaining patterns `rest`.
    fn enter(
        &self,
        c: u32,
        rest: &[Step<'_>],
        prefix: &mut String,
        out: &mut dyn FnMut(&str, Option<u32>),
    ) {
        let base = prefix.len();
        if base > 0 {
            prefix.push('.');
        }
        prefix.push_str(self.name_of(c));
        if rest.is_empty() {
            self.emit(c, prefix, out);
        } else if self.is_branch(c) {
            self.find_from(c, rest, prefix, out);
        }
        prefix.truncate(base);
    }

    /// [`enter`](Self::enter) for each of `matched` (children of the node at `prefix`,
    /// in order) when `rest` starts with literal names: what the calls would hand to
    /// `out`, in the same order. Many matches (`bench.*.cpu.user` at 100,000 hosts)
    /// look up the first literal for all of them, then the next literal for all
    /// those found, and so on: each lookup is a cache miss in the child table, and
    /// lookups that do not wait for each other overlap, where one match after another
    /// waits for each miss in turn. Very many matches are also split over two threads.
    fn enter_many(
        &self,
        matched: &[u32],
        rest: &[Step<'_>],
        prefix: &mut String,
        out: &mut dyn FnMut(&str, Option<u32>),
    ) {
        if matched.len() < self.batch_min {
            for &c in matched {
                self.enter(c, rest, prefix, out);
            }
            return;
        }
        if matched.len() >= self.split_min
            && !SPLIT.get()
            && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
        {
            if let Some(()) = self.split(matched, rest, prefix, out) {
                return;
            }
        }
        // levels[k][i] = (index in the previous level, symbol, node): the nodes found
        // for the k-th literal, in the order the plain walk would meet them
        let lits: Vec<&[u32]> = rest
            .iter()
            .map_while(|s| match s {
                Step::Syms(syms) => Some(syms.as_slice()),
                _ => None,
            })
            .collect();
        let after = rest.get(lits.len()..).unwrap_or_default();
        let mut levels: Vec<Vec<(u32, u32, u32)>> = Vec::with_capacity(lits.len());
        let mut up: Vec<(u32, u32, u32)> = matched
            .iter()
            .enumerate()
            .map(|(i, &c)| (i as u32, NONE, c))
            .collect();
        for syms in &lits {
            let mut found = Vec::with_capacity(up.len() * syms.len());
            for (i, &(_, _, parent)) in up.iter().enumerate() {
                for &sym in *syms {
                    // a node without children has no entry in the table: no need to
                    // read the node to know it is a leaf
                    if let Some(c) = self.child(parent, sym) {
                        found.push((i as u32, sym, c));
                    }
                }
            }
            levels.push(std::mem::replace(&mut up, found));
        }
        // the matched children's names and the found nodes, each read in a loop of
        // independent reads (their misses overlap too) before the paths are built
        let tops: Vec<u32> = matched
            .iter()
            .map(|&c| self.node(c).map_or(NONE, |n| n.sym))
            .collect();
        let found: Vec<Node> = up
            .iter()
            .map(|&(_, _, c)| self.node(c).copied().unwrap_or(Node::EMPTY))
            .collect();
        let base = prefix.len();
        // the literal names from the matched child down to a found node, deepest first
        let mut names: Vec<u32> = Vec::with_capacity(lits.len() + 1);
        for (&(i, sym, c), node) in up.iter().zip(&found) {
            names.clear();
            names.push(sym);
            let mut i = i;
            for level in levels.iter().skip(1).rev() {
                let Some(&(j, s, _)) = level.get(i as usize) else {
                    break;
                };
                names.push(s);
                i = j;
            }
            // i is now the index in `matched`
            names.push(tops.get(i as usize).copied().unwrap_or(NONE));
            for (k, &s) in names.iter().rev().enumerate() {
                if base > 0 || k > 0 {
                    prefix.push('.');
                }
                prefix.push_str(std::str::from_utf8(self.syms.get_bytes(s)).unwrap_or_default());
            }
            if after.is_empty() {
                if node.leaf != NONE {
                    out(prefix, Some(node.leaf));
                }
                if node.first_child != NONE {
                    out(prefix, None);
                }
            } else if node.first_child != NONE {
                self.find_from(c, after, prefix, out);
            }
            prefix.truncate(base);
        }
    }

    /// [`enter_many`](Self::enter_many) over two threads: the second half of
    /// `matched` on a new thread into a buffer, the first half here, then the buffer.
    /// `None` when no thread could be started (nothing was handed to `out` then).
    fn split(
        &self,
        matched: &[u32],
        rest: &[Step<'_>],
        prefix: &mut String,
        out: &mut dyn FnMut(&str, Option<u32>),
    ) -> Option<()> {
        struct Unsplit;
        impl Drop for Unsplit {
            fn drop(&mut self) {
                SPLIT.set(false);
            }
        }
        let (mine, theirs) = matched.split_at(matched.len() / 2);
        let start = prefix.clone();
        // the other half's answer: all paths in one buffer, (end, series) each
        let (text, ends) = std::thread::scope(|s| {
            let other = std::thread::Builder::new()
                .name("find-split".into())
                .spawn_scoped(s, move || {
                    SPLIT.set(true);
                    let mut prefix = start;
                    let mut text = String::new();
                    let mut ends: Vec<(usize, Option<u32>)> = Vec::new();
                    self.enter_many(theirs, rest, &mut prefix, &mut |path, leaf| {
                        text.push_str(path);
                        ends.push((text.len(), leaf));
                    });
                    (text, ends)
                })
                .ok()?;
            SPLIT.set(true);
            let _unsplit = Unsplit;
            self.enter_many(mine, rest, prefix, out);
            match other.join() {
                Ok(v) => Some(v),
                Err(e) => std::panic::resume_unwind(e),
            }
        })?;
        let mut from = 0;
        for (end, leaf) in ends {
            out(text.get(from..end).unwrap_or_default(), leaf);
            from = end;
        }
        Some(())
    }

    /// For `a.**.rest`: matches `rest` from every branch strictly below `cur`.
    fn globstar_dirs(
        &self,
        cur: u32,
        rest: &[Step<'_>],
        prefix: &mut String,
        out: &mut dyn FnMut(&str, Option<u32>),
    ) {
        let base = prefix.len();
        for c in self.children_of(cur) {
            if !self.is_branch(c) {
                continue;
            }
            if base > 0 {
                prefix.push('.');
            }
            prefix.push_str(self.name_of(c));
            self.find_from(c, rest, prefix, out);
            self.globstar_dirs(c, rest, prefix, out);
            prefix.truncate(base);
        }
    }

    /// Every node below `cur`, each as leaf and/or branch.
    fn emit_descendants(
        &self,
        cur: u32,
        prefix: &mut String,
        out: &mut dyn FnMut(&str, Option<u32>),
    ) {
        let base = prefix.len();
        for c in self.children_of(cur) {
            if base > 0 {
                prefix.push('.');
            }
            prefix.push_str(self.name_of(c));
            self.emit(c, prefix, out);
            if self.is_branch(c) {
                self.emit_descendants(c, prefix, out);
            }
            prefix.truncate(base);
        }
    }

    fn emit(&self, c: u32, path: &str, out: &mut dyn FnMut(&str, Option<u32>)) {
        if let Some(series) = self.leaf_of(c) {
            out(path, Some(series));
        }
        if self.is_branch(c) {
            out(path, None);
        }
    }

    /// The node at `path`, if the tree has it.
    fn node_at(&self, path: &str) -> Option<u32> {
        let mut cur = ROOT;
        for part in path.split('.') {
            cur = self.child(cur, self.syms.find(part.as_bytes())?)?;
        }
        Some(cur)
    }

    /// The series at `path` and below it, as `(path, series)` sorted by path.
    pub(crate) fn subtree_leaves(&self, path: &str) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        let Some(node) = self.node_at(path) else {
            return out;
        };
        let mut stack = vec![(node, path.to_string())];
        while let Some((n, p)) = stack.pop() {
            if let Some(series) = self.leaf_of(n) {
                out.push((p.clone(), series));
            }
            for c in self.children_of(n) {
                stack.push((c, format!("{p}.{}", self.name_of(c))));
            }
        }
        out.sort_unstable();
        out
    }

    /// Takes series off the tree: each `(path, series)` clears the leaf at `path` when
    /// it holds `series`; then every node left with neither a series nor children is
    /// unlinked, so emptied branches vanish from `find`. Each affected child list is
    /// rebuilt once, deepest first, so removing a whole subtree costs its size, not its
    /// size squared. Returns how many leaves were cleared.
    pub(crate) fn remove_many<'a>(
        &mut self,
        paths: impl IntoIterator<Item = (&'a str, u32)>,
    ) -> usize {
        // (depth, node) of every parent along the removed paths
        let mut parents: Vec<(usize, u32)> = Vec::new();
        let mut cleared = 0;
        for (path, series) in paths {
            let mut cur = ROOT;
            let mut chain = Vec::new();
            let mut found = true;
            for (depth, part) in path.split('.').enumerate() {
                match self
                    .syms
                    .find(part.as_bytes())
                    .and_then(|sym| self.child(cur, sym))
                {
                    Some(c) => {
                        chain.push((depth, cur));
                        cur = c;
                    }
                    None => {
                        found = false;
                        break;
                    }
                }
            }
            if !found {
                continue;
            }
            match self.nodes.get_mut(cur as usize) {
                Some(n) if n.leaf == series => n.leaf = NONE,
                _ => continue,
            }
            cleared += 1;
            parents.extend(chain);
        }
        parents.sort_unstable_by(|a, b| b.cmp(a));
        parents.dedup();
        for (_, p) in parents {
            self.prune_children(p);
        }
        cleared
    }

    /// Unlinks the children of `p` that hold no series and have no children.
    fn prune_children(&mut self, p: u32) {
        self.children_changed(p);
        let children: Vec<u32> = self.children_of(p).collect();
        let mut kept = Vec::with_capacity(children.len());
        for c in children {
            let Some(&n) = self.node(c) else { continue };
            if n.leaf != NONE || n.first_child != NONE {
                kept.push(c);
                continue;
            }
            let h = Self::child_hash(&self.state, p, n.sym);
            if let Ok(e) = self
                .children
                .find_entry(h, |&(pp, s, _)| pp == p && s == n.sym)
            {
                e.remove();
            }
            self.dead += 1;
        }
        let mut next = NONE;
        for &c in kept.iter().rev() {
            if let Some(n) = self.nodes.get_mut(c as usize) {
                n.next_sibling = next;
            }
            next = c;
        }
        if let Some(n) = self.nodes.get_mut(p as usize) {
            n.first_child = next;
        }
    }

    /// Nodes reachable from the root (the root included).
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len() - self.dead
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.children.capacity() * 13
            + self.syms.heap_bytes()
            + self
                .sorted
                .lock()
                .values()
                .map(|s| s.len() * 4 + 16 + 24)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(paths: &[&str]) -> Tree {
        let mut t = Tree::default();
        for (i, p) in paths.iter().enumerate() {
            t.insert(p, i as u32);
        }
        t
    }

    fn find(t: &Tree, pat: &str) -> Vec<(String, bool)> {
        t.find(&PathPattern::parse(pat))
    }

    fn s(v: &[(&str, bool)]) -> Vec<(String, bool)> {
        v.iter().map(|(p, l)| (p.to_string(), *l)).collect()
    }

    /// A bulk load through the path cache builds the same tree as plain inserts,
    /// whatever the previous path shares with the next (whole nodes, part of a node,
    /// a longer or shorter path).
    #[test]
    fn cached_inserts_build_the_same_tree() {
        let paths = [
            "a.b.c",
            "a.b.d",
            "a.bc.d",
            "a.b",
            "a.b.c.e",
            "ab.c",
            "a.c",
            "a",
            "x.y.z",
            "a.b.d.f",
            "a.bb",
            "a.b.e",
            "h1.cpu.user",
            "h1.cpu.sys",
            "h10.cpu.user",
            "h1.cpux.user",
            "h1.cpu.user.x",
        ];
        let plain = tree(&paths);
        let mut cached = Tree::default();
        let mut cache = PathCache::default();
        for (i, p) in paths.iter().enumerate() {
            cached.insert_cached(p, i as u32, &mut cache);
        }
        assert_eq!(cached.node_count(), plain.node_count());
        for pat in [
            "*",
            "*.*",
            "*.*.*",
            "*.*.*.*",
            "**",
            "a.b.*",
            "h1*.cpu*.*",
            "a.b",
        ] {
            assert_eq!(find(&cached, pat), find(&plain, pat), "{pat}");
        }
        for (i, p) in paths.iter().enumerate() {
            let node = cached.node_at(p).unwrap();
            assert_eq!(cached.leaf_of(node), Some(i as u32), "{p}");
        }
    }

    #[test]
    fn leaf_and_branch() {
        let t = tree(&["a.b", "a.b.c", "a.d"]);
        assert_eq!(
            find(&t, "a.*"),
            s(&[("a.b", true), ("a.b", false), ("a.d", true)])
        );
        assert_eq!(find(&t, "a.b"), s(&[("a.b", true), ("a.b", false)]));
        assert_eq!(find(&t, "a"), s(&[("a", false)]));
        assert_eq!(find(&t, "a.b.c"), s(&[("a.b.c", true)]));
        assert_eq!(find(&t, "a.x"), s(&[]));
        assert_eq!(find(&t, "*.*.*"), s(&[("a.b.c", true)]));
        assert_eq!(t.leaf_of(4), Some(2));
    }

    #[test]
    fn globstar_like_graphite() {
        let t = tree(&["a.b.c", "a.b.d.z", "a.z", "b.z", "a.q.r.z"]);
        assert_eq!(
            find(&t, "a.**.z"),
            s(&[("a.b.d.z", true), ("a.q.r.z", true), ("a.z", true)])
        );
        assert_eq!(
            find(&t, "a.**"),
            s(&[
                ("a.b", false),
                ("a.b.c", true),
                ("a.b.d", false),
                ("a.b.d.z", true),
                ("a.q", false),
                ("a.q.r", false),
                ("a.q.r.z", true),
                ("a.z", true),
            ])
        );
        assert_eq!(find(&t, "**.z").len(), 4);
    }

    #[test]
    fn star_globs_agree_with_fnmatch() {
        let names = [
            "", "a", "host01", "host", "xhost01", "web01.x", "aXbXc", "abc", "ab", "cpu_user",
            "éé*",
        ];
        for pat in [
            "*", "host*", "*01", "h*t*1", "a*b*c", "a*a", "*_*", "**x", "a**", "*é*",
        ] {
            let g = StarGlob::parse(pat).unwrap();
            let n = NodePattern::parse(pat);
            for name in names {
                assert_eq!(
                    g.matches(name.as_bytes()),
                    n.matches(name),
                    "{pat} vs {name}"
                );
            }
        }
        assert!(StarGlob::parse("a?").is_none());
        assert!(StarGlob::parse("{a,b}*").is_none());
        assert!(StarGlob::parse("abc").is_none());
    }

    #[test]
    fn remove_prunes_empty_branches_only() {
        let mut t = tree(&["a.b.c", "a.b", "a.d.e", "x.y"]);
        let before = t.node_count();
        // a path that is not there, or holds another series, is left alone
        assert_eq!(t.remove_many([("a.q", 0), ("a.b.c", 3)]), 0);
        assert_eq!(t.remove_many([("a.b.c", 0), ("a.d.e", 2)]), 2);
        assert_eq!(find(&t, "a.*"), s(&[("a.b", true)]));
        assert_eq!(find(&t, "a.**"), s(&[("a.b", true)]));
        assert_eq!(t.node_count(), before - 3);
        assert_eq!(t.remove_many([("x.y", 3)]), 1);
        assert_eq!(find(&t, "*"), s(&[("a", false)]));
        // a removed path can come back
        t.insert("a.d.e", 9);
        assert_eq!(find(&t, "a.d.*"), s(&[("a.d.e", true)]));
        assert_eq!(find(&t, "a.d.e"), s(&[("a.d.e", true)]));
        assert_eq!(find(&t, "a.{d,q}.e"), s(&[("a.d.e", true)]));
        assert_eq!(
            t.subtree_leaves("a"),
            vec![("a.b".to_string(), 1), ("a.d.e".to_string(), 9)]
        );
        assert!(t.subtree_leaves("zz").is_empty());
    }

    #[test]
    fn removing_a_wide_subtree_is_linear() {
        // Time against size, not against the clock: ten times the children must take
        // about ten times as long (a quadratic removal takes a hundred times). The
        // fastest of three rounds each, so a loaded machine does not decide it.
        fn removal(n: usize) -> std::time::Duration {
            let names: Vec<String> = (0..n).map(|i| format!("h.n{i}.cpu")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            (0..3)
                .map(|_| {
                    let mut t = tree(&refs);
                    let t0 = std::time::Instant::now();
                    let gone = t.remove_many(refs.iter().enumerate().map(|(i, p)| (*p, i as u32)));
                    let took = t0.elapsed();
                    assert_eq!(gone, n);
                    assert_eq!(t.node_count(), 1);
                    assert!(find(&t, "**").is_empty());
                    took
                })
                .min()
                .unwrap()
        }
        let small = removal(5_000);
        let large = removal(50_000);
        assert!(
            large < small * 35,
            "removing 50,000 children took {large:?}, 5,000 took {small:?}"
        );
    }

    /// Every node path of `paths` matching `pat` (no globstar) as `find` answers it, by
    /// filtering all of them.
    fn filtered(paths: &[String], pat: &str) -> Vec<(String, bool)> {
        let p = PathPattern::parse(pat);
        let mut out = Vec::new();
        for path in paths {
            let parts: Vec<&str> = path.split('.').collect();
            for depth in 1..=parts.len() {
                let node = parts[..depth].join(".");
                let hit = depth == p.nodes().len()
                    && p.nodes()
                        .iter()
                        .zip(&parts)
                        .all(|(n, part)| n.matches(part));
                if hit {
                    out.push((node, depth == parts.len()));
                }
            }
        }
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        out.dedup();
        out
    }

    /// The removal and re-add rounds of the tests comparing two trees: removes the
    /// paths `gone` picks (by position and name) from both, checks, re-adds every second
    /// removed path and the `new` ones, checks again.
    fn remove_and_readd(
        fast: &mut Tree,
        plain: &mut Tree,
        paths: &[String],
        gone: impl Fn(usize, &str) -> bool,
        new: &[&str],
        check: impl Fn(&Tree, &Tree, &[String], &str),
    ) {
        let gone: Vec<(String, u32)> = paths
            .iter()
            .enumerate()
            .filter(|(i, p)| gone(*i, p))
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
        let removals = || gone.iter().map(|(p, i)| (p.as_str(), *i));
        assert_eq!(fast.remove_many(removals()), gone.len());
        assert_eq!(plain.remove_many(removals()), gone.len());
        let live: Vec<String> = paths
            .iter()
            .filter(|p| !gone.iter().any(|(g, _)| g == *p))
            .cloned()
            .collect();
        check(fast, plain, &live, "removed");
        let mut back = live;
        for (k, (p, _)) in gone.iter().enumerate().filter(|(k, _)| k % 2 == 0) {
            fast.insert(p, 10_000 + k as u32);
            plain.insert(p, 10_000 + k as u32);
            back.push(p.clone());
        }
        for p in new {
            fast.insert(p, 20_000);
            plain.insert(p, 20_000);
            back.push(p.to_string());
        }
        check(fast, plain, &back, "re-added");
    }

    /// Finds through the sorted children of wide nodes answer what a plain scan of
    /// every child answers, and what filtering every path answers, also after removals
    /// and re-adds changed those children.
    #[test]
    fn sorted_children_find_what_a_filter_finds() {
        let mut paths: Vec<String> = Vec::new();
        for i in 0..300 {
            for m in ["cpu.user", "cpu.system", "mem.free"] {
                paths.push(format!("h{i:03}.{m}"));
            }
        }
        for odd in [
            "h",
            "h1x.cpu.user",
            "hé.cpu.user",
            "i.cpu",
            "g",
            "h0.cpu",
            "h00",
        ] {
            paths.push(odd.to_string());
        }
        // a wide second level too
        for i in 0..100 {
            paths.push(format!("w.n{i}"));
        }
        let mut fast = Tree::default();
        let mut plain = Tree {
            sort_wide: false,
            ..Tree::default()
        };
        for (i, p) in paths.iter().enumerate() {
            fast.insert(p, i as u32);
            plain.insert(p, i as u32);
        }
        let patterns = [
            "h0*.cpu.*",
            "h00*",
            "h1{0,1}*.cpu.user",
            "h[0-1]2*.*.*",
            "h?5.mem.*",
            "h2[!0-8]*.cpu.user",
            "*.cpu.user",
            "h*",
            "*",
            "h1*.*",
            "hé*.cpu.*",
            "h00{1,2}.cpu.*",
            "{h00,h01}*.mem.free",
            "h299*.*.*",
            "x*.*",
            "w.n1*",
            "w.*",
            "*.n9?",
        ];
        let globstars = ["**.user", "h01*.**", "**.n5*", "h**", "*.**.free"];
        let check = |fast: &Tree, plain: &Tree, live: &[String], round: &str| {
            for pat in patterns {
                let got = find(fast, pat);
                assert_eq!(got, find(plain, pat), "{round}: {pat}");
                assert_eq!(got, filtered(live, pat), "{round}: {pat}");
            }
            for pat in globstars {
                assert_eq!(find(fast, pat), find(plain, pat), "{round}: {pat}");
            }
        };
        check(&fast, &plain, &paths, "built");
        assert!(
            !fast.sorted.lock().is_empty(),
            "the wide nodes were not sorted"
        );
        // remove every fifth path (whole hosts go when all three of theirs do), then
        // find again through the sorted arrays built above; re-add some, and new names
        // inside the ranges already sorted
        remove_and_readd(
            &mut fast,
            &mut plain,
            &paths,
            |i, p| i % 5 == 0 || p.starts_with("h01"),
            &["h0005.cpu.user", "h01.cpu.user", "w.n1000", "h000a"],
            check,
        );
    }

    /// Small nodes visited in name order (and the find's sort skipped when the walk gave
    /// its answer in order) answer what a plain scan answers, and what filtering every
    /// path answers: nodes of 1 to 40 children, literal names and braces (a name twice
    /// too), names that sort before `.` (so paths do not come out in order),
    /// leaf-and-branch paths, and after removals and re-adds.
    #[test]
    fn walked_children_find_what_a_filter_finds() {
        let mut paths: Vec<String> = Vec::new();
        for i in 0..40 {
            // node `n{i}` has i + 1 children
            for k in 0..=i {
                paths.push(format!("n{i:02}.c{k:02}.user"));
                if k % 3 == 0 {
                    paths.push(format!("n{i:02}.c{k:02}.sys"));
                }
            }
            paths.push(format!("n{i:02}.c00-x.user"));
            paths.push(format!("n{i:02}.c00+y"));
        }
        paths.push("n05.c00".to_string());
        paths.push("n05.c01.user.deeper".to_string());
        let mut fast = Tree::default();
        let mut plain = Tree {
            sort_wide: false,
            ..Tree::default()
        };
        for (i, p) in paths.iter().enumerate() {
            fast.insert(p, i as u32);
            plain.insert(p, i as u32);
        }
        let patterns = [
            "*.c00.user",
            "*.c15.user",
            "*.c16.*",
            "*.c39.sys",
            "n3*.c3?.user",
            "*.{c01,c20,c00-x}.user",
            "*.{c02,c02}.{user,sys}",
            "n05.c00",
            "n05.c01.user",
            "n05.*",
            "n1[0-5].*.*",
            "*.c00+y",
            "*.nothing.user",
            "n0{1,7}.c0*",
            "*.*.user",
        ];
        let globstars = ["**.user", "n05.**", "*.c01.**.deeper"];
        let check = |fast: &Tree, plain: &Tree, live: &[String], round: &str| {
            for pat in patterns {
                let got = find(fast, pat);
                assert_eq!(got, find(plain, pat), "{round}: {pat}");
                assert_eq!(got, filtered(live, pat), "{round}: {pat}");
            }
            for pat in globstars {
                assert_eq!(find(fast, pat), find(plain, pat), "{round}: {pat}");
            }
        };
        check(&fast, &plain, &paths, "built");
        remove_and_readd(
            &mut fast,
            &mut plain,
            &paths,
            |i, p| i % 4 == 1 || p.starts_with("n07"),
            &["n07.c15.user", "n02.c99.user", "n02.c00-x.user.more"],
            check,
        );
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(literal_prefix("host0000*"), b"host0000");
        assert_eq!(literal_prefix("web{01,02}"), b"web");
        assert_eq!(literal_prefix("db[0-9]x"), b"db");
        assert_eq!(literal_prefix("a?c"), b"a");
        assert_eq!(literal_prefix("*x"), b"");
        assert_eq!(literal_prefix("plain"), b"plain");
    }

    /// Wildcards followed by literal names, looked up in batches (and split over two
    /// threads), find what the plain walk finds, in the same order (the leaves too),
    /// and what filtering every path finds, also after removals and re-adds.
    #[test]
    fn batched_finds_find_what_a_filter_finds() {
        let mut paths: Vec<String> = Vec::new();
        for i in 0..300 {
            let h = format!("h{i:03}");
            if i % 7 != 3 {
                paths.push(format!("{h}.cpu.user"));
            }
            if i % 2 == 0 {
                paths.push(format!("{h}.cpu.sys"));
            }
            if i % 5 == 0 {
                paths.push(format!("{h}.cpu.user.deeper"));
                paths.push(format!("{h}.cpu.sys.deeper"));
            }
            if i % 11 == 0 {
                paths.push(format!("{h}.cpu"));
            }
            paths.push(format!("{h}.mem.free"));
            for d in ["sda", "sdb"] {
                if (i + d.len()) % 3 != 0 {
                    paths.push(format!("{h}.disk.{d}.read"));
                }
            }
            if i % 4 == 0 {
                paths.push(format!("dc1.{h}.cpu.user"));
            }
        }
        paths.push("h0-x.cpu.user".to_string());
        paths.push("h+y.cpu.user".to_string());
        let build = |batch_min: usize, split_min: usize, sort_wide: bool, paths: &[String]| {
            let mut t = Tree {
                sort_wide,
                batch_min,
                split_min,
                ..Tree::default()
            };
            for (i, p) in paths.iter().enumerate() {
                t.insert(p, i as u32);
            }
            t
        };
        // the plain walk, the walk in name order one match at a time (the leaves'
        // order), then batches and splits at several sizes
        let mut trees = [
            build(BATCH_MIN, SPLIT_MIN, false, &paths),
            build(usize::MAX, usize::MAX, true, &paths),
            build(BATCH_MIN, SPLIT_MIN, true, &paths),
            build(2, usize::MAX, true, &paths),
            build(2, 4, true, &paths),
            build(40, 150, true, &paths),
        ];
        let patterns = [
            "*.cpu.user",
            "h*.cpu.{user,sys}",
            "h1*.{cpu,mem}.*",
            "*.disk.{sda,sdb}.read",
            "*.disk.{sdb,sda}.read",
            "*.cpu",
            "h0[0-4]?.cpu.user",
            "h[0-9]*.cpu.user",
            "*.{cpu,nothing}.user",
            "*.{cpu,cpu}.user",
            "*.cpu.user.deeper",
            "*.cpu.*.deeper",
            "*.cpu.*",
            "*.*.free",
            "*.*.cpu.user",
            "dc*.*.cpu.{user,sys}",
            "*.nothing.user",
            "h?0?.cpu.sys",
        ];
        let globstars = ["**.user", "h00*.**", "*.disk.**.read", "**.cpu.user"];
        let check = |trees: &[Tree], live: &[String], round: &str| {
            let [plain, one, fast @ ..] = trees else {
                unreachable!()
            };
            for pat in patterns.iter().chain(&globstars) {
                let p = PathPattern::parse(pat);
                let want = plain.find_ids(&p);
                assert_eq!(one.find_ids(&p), want, "{round}: {pat}");
                let leaves = one.find_leaves(&p);
                if !pat.contains("**") {
                    assert_eq!(find(plain, pat), filtered(live, pat), "{round}: {pat}");
                }
                for (k, t) in fast.iter().enumerate() {
                    assert_eq!(t.find_ids(&p), want, "{round}: {pat} (tree {k})");
                    assert_eq!(t.find_leaves(&p), leaves, "{round}: {pat} (tree {k})");
                }
            }
        };
        check(&trees, &paths, "built");
        let gone: Vec<(String, u32)> = paths
            .iter()
            .enumerate()
            .filter(|(i, p)| i % 4 == 1 || p.starts_with("h02"))
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
        for t in trees.iter_mut() {
            assert_eq!(
                t.remove_many(gone.iter().map(|(p, i)| (p.as_str(), *i))),
                gone.len()
            );
        }
        let live: Vec<String> = paths
            .iter()
            .filter(|p| !gone.iter().any(|(g, _)| g == *p))
            .cloned()
            .collect();
        check(&trees, &live, "removed");
        let mut back = live.clone();
        let again: Vec<String> = gone
            .iter()
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, (p, _))| p.clone())
            .chain(["h021.cpu.user.deeper", "h999.cpu.user", "h001.cpu.user.x.y"].map(String::from))
            .collect();
        for (k, p) in again.iter().enumerate() {
            for t in trees.iter_mut() {
                t.insert(p, 10_000 + k as u32);
            }
            back.push(p.clone());
        }
        check(&trees, &back, "re-added");
    }

    /// Not a check, a timing: `bench.*.cpu.user` over a tree of `sumi bench`'s names
    /// (`SUMI_FIND_SERIES`, default 1,000,000, 100 a host), one match after another,
    /// batched, and batched over two threads, alternating; medians of 20. Run with
    /// `cargo test --release -p sumi-store --lib find_timing -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check"]
    fn find_timing() {
        let series: usize = std::env::var("SUMI_FIND_SERIES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000_000);
        // 100 a host, as `sumi bench` names them (its first is `cpu.user`)
        let mut metrics: Vec<String> = Vec::new();
        let cpu = [
            "user",
            "nice",
            "system",
            "idle",
            "iowait",
            "irq",
            "softirq",
            "steal",
            "guest",
            "guest_nice",
        ];
        metrics.extend(cpu.map(|c| format!("cpu.{c}")));
        metrics.extend((1..=3).map(|l| format!("loadavg.loadavg{l}")));
        metrics.extend((0..12).map(|x| format!("memory.m{x}")));
        for d in ["sda", "sdb"] {
            metrics.extend((0..8).map(|x| format!("disk.{d}.x{x}")));
        }
        for f in ["root", "var", "data"] {
            metrics.extend((0..4).map(|x| format!("filesystem.{f}.x{x}")));
        }
        for i in ["eth0", "eth1"] {
            metrics.extend((0..8).map(|x| format!("interface.{i}.x{x}")));
        }
        metrics.extend((0..11).map(|x| format!("processes.p{x}")));
        for a in 0..4 {
            metrics.extend((0..5).map(|x| format!("app{a}.x{x}")));
        }
        assert_eq!(metrics.len(), 100);
        let mut t = Tree::default();
        let mut cache = PathCache::default();
        for id in 0..series {
            let path = format!("bench.host{:05}.{}", id / 100, metrics[id % 100]);
            t.insert_cached(&path, id as u32, &mut cache);
        }
        let p = PathPattern::parse("bench.*.cpu.user");
        let want = t.find_ids(&p);
        eprintln!(
            "{series} series, {} nodes, {} answers, tree {} B a series",
            t.node_count(),
            want.len(),
            t.heap_bytes() / series.max(1)
        );
        let ways = [
            ("one at a time", usize::MAX, usize::MAX),
            ("batched", BATCH_MIN, usize::MAX),
            ("batched, split", BATCH_MIN, SPLIT_MIN),
        ];
        let mut times = vec![Vec::new(); ways.len()];
        for _ in 0..20 {
            for (k, &(_, batch_min, split_min)) in ways.iter().enumerate() {
                t.batch_min = batch_min;
                t.split_min = split_min;
                let start = std::time::Instant::now();
                let got = t.find_ids(&p);
                times[k].push(start.elapsed().as_secs_f64() * 1e3);
                assert_eq!(got, want);
            }
        }
        for ((name, _, _), mut ms) in ways.into_iter().zip(times) {
            ms.sort_by(f64::total_cmp);
            eprintln!(
                "{name}: median {:.2} ms (min {:.2})",
                ms[ms.len() / 2],
                ms[0]
            );
        }
    }

    #[test]
    fn braces_and_sets() {
        let t = tree(&["web01.cpu", "web02.cpu", "db01.cpu", "web03.mem"]);
        assert_eq!(
            find(&t, "{web,db}0[1-2].cpu"),
            s(&[("db01.cpu", true), ("web01.cpu", true), ("web02.cpu", true)])
        );
        assert_eq!(
            find(&t, "{web01,db01}.cpu"),
            s(&[("db01.cpu", true), ("web01.cpu", true)])
        );
        assert_eq!(find(&t, "web0?.{cpu,mem}").len(), 3);
        assert_eq!(find(&t, "nothing.*"), s(&[]));
    }
}
