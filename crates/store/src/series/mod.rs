//! The series index: dense `u32` ids, names interned in an arena with a hash table,
//! each series' retention class, aggregation method and xFilesFactor, the node tree
//! for `find`, all persisted in `series.log`.
//!
//! - [`names`]: interned byte strings (series names, tree node names).
//! - [`class`]: retention classes and their partition widths.
//! - [`tree`]: the metric tree and graphite-web's find.
//! - [`log`]: the append-only `series.log`.
//! - [`admin`]: deleting and renaming series.

pub(crate) mod admin;
pub(crate) mod class;
pub(crate) mod log;
pub(crate) mod names;
mod table;
pub(crate) mod tags;
pub(crate) mod tree;

use std::path::Path;
use std::sync::Arc;

use sumi_model::glob::PathPattern;
use sumi_model::{AggMethod, Retention, SeriesConfig};

use admin::DeletedSet;
pub use admin::Renamed;
pub(crate) use class::ClassInfo;
pub use class::MAX_LEVELS;
use log::{LogRecord, LogSync, SeriesLog};
use names::Names;
use tags::TagIndex;
use tree::Tree;

use crate::StoreError;

/// A node `find` returned: a full dotted path, and whether it is a series (leaf) or
/// has children (branch). A path that is both is returned twice.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FindEntry {
    pub path: String,
    pub is_leaf: bool,
}

/// Series names on their way from the log's loader to the thread building the tree.
#[derive(Default)]
struct NameChunk {
    ids: Vec<u32>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl NameChunk {
    /// Names a chunk.
    const LEN: usize = 4096;

    fn push(&mut self, id: u32, name: &str) {
        self.ids.push(id);
        self.bytes.extend_from_slice(name.as_bytes());
        self.ends.push(self.bytes.len());
    }

    fn iter(&self) -> impl Iterator<Item = (u32, &str)> + '_ {
        let mut start = 0;
        self.ids.iter().zip(&self.ends).map(move |(&id, &end)| {
            let b = self.bytes.get(start..end).unwrap_or_default();
            start = end;
            // pushed from a &str, cut at its own ends
            (id, std::str::from_utf8(b).unwrap_or_default())
        })
    }
}

/// What a series keeps from the rules it was created under.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SeriesMeta {
    pub(crate) class: u16,
    pub(crate) method: AggMethod,
    pub(crate) xff: f32,
}

pub(crate) struct SeriesIndex {
    names: Names,
    meta: Vec<SeriesMeta>,
    classes: Vec<Arc<ClassInfo>>,
    tree: Tree,
    /// The tree holds every live name (see [`tree_ready`](Self::tree_ready)).
    tree_ready: bool,
    /// The last created series' path in the tree, so that a series created after its
    /// sibling looks up only its own last node (cleared whenever nodes are removed).
    tree_cache: tree::PathCache,
    tags: TagIndex,
    log: SeriesLog,
    partitions_per_level: u32,
    /// Deleted ids; shared copy-on-write with compaction, which drops their rows.
    deleted: Arc<DeletedSet>,
}

/// True when a name can live in the tree: no empty node, not tagged (tagged series
/// get their own index later; graphite-web stores them outside the tree too).
fn tree_path(name: &str) -> bool {
    !name.is_empty() && !name.contains(';') && !name.split('.').any(str::is_empty)
}

impl SeriesIndex {
    /// Loads `series.log` from `dir` (cutting a torn tail) and opens it for appending.
    #[cfg(test)]
    pub(crate) fn open(
        dir: &Path,
        partitions_per_level: u32,
        repair: bool,
    ) -> Result<(SeriesIndex, log::LoadReport), StoreError> {
        let (mut idx, report) = Self::open_without_tree(dir, partitions_per_level, repair)?;
        if !idx.tree_ready() {
            let tree = idx.build_tree();
            idx.set_tree(tree);
        }
        Ok((idx, report))
    }

    /// [`open`](Self::open) without the metric tree, which `find` needs: the caller
    /// builds it with [`build_tree`](Self::build_tree) (on another thread while it
    /// opens the parts and replays the WAL, which need the rest) and installs it with
    /// [`set_tree`](Self::set_tree) before anything is found.
    pub(crate) fn open_without_tree(
        dir: &Path,
        partitions_per_level: u32,
        repair: bool,
    ) -> Result<(SeriesIndex, log::LoadReport), StoreError> {
        let path = dir.join("series.log");
        let mut names = Names::default();
        let mut meta = Vec::new();
        let mut classes: Vec<Arc<ClassInfo>> = Vec::new();
        let mut deleted = DeletedSet::default();
        // a version-2 log spends about 12 bytes a series: room for that many names up
        // front spares the table its rehashes while millions load
        let guess = std::fs::metadata(&path).map_or(0, |m| m.len() / 12) as usize;
        names.reserve(guess, 0);
        meta.reserve(guess);
        let mut tagged = false;
        // the tree is built from the names as they load, on a thread of its own; a
        // delete or rename in the log makes it wrong (it holds every name logged), and
        // it is then built again from the live names once the log is read
        let mut edited = false;
        let (tx, rx) = std::sync::mpsc::sync_channel::<NameChunk>(8);
        let mut chunk = NameChunk::default();
        let (report, tree) = std::thread::scope(|s| {
            let builder = std::thread::Builder::new()
                .name("sumi-open-tree".into())
                .spawn_scoped(s, move || {
                    let mut tree = Tree::default();
                    tree.reserve(guess + guess / 16);
                    let mut cache = tree::PathCache::default();
                    for c in rx {
                        for (id, name) in c.iter() {
                            if tree_path(name) {
                                tree.insert_cached(name, id, &mut cache);
                            }
                        }
                    }
                    tree
                });
            let mut tx = builder.is_ok().then_some(tx);
            let report = log::load(&path, repair, |rec| match rec {
                LogRecord::Class {
                    id,
                    archives,
                    widths,
                } => {
                    if usize::from(id) != classes.len() {
                        return Err(format!(
                            "class id {id} out of order (expected {})",
                            classes.len()
                        ));
                    }
                    if archives.len() > MAX_LEVELS {
                        return Err(format!("class {id} has {} archives", archives.len()));
                    }
                    let r = Retention::new(archives).map_err(|e| format!("class {id}: {e}"))?;
                    classes.push(Arc::new(ClassInfo::new(id, Arc::new(r), &widths)));
                    Ok(())
                }
                LogRecord::Series {
                    id,
                    class,
                    method,
                    xff,
                    name,
                } => {
                    if id as usize != meta.len() {
                        return Err(format!(
                            "series id {id} out of order (expected {})",
                            meta.len()
                        ));
                    }
                    if usize::from(class) >= classes.len() {
                        return Err(format!("series {id} names unknown class {class}"));
                    }
                    if names.push_absent(name.as_bytes()).is_none() {
                        return Err(format!("series {name:?} logged twice"));
                    }
                    tagged |= name.contains(';');
                    meta.push(SeriesMeta { class, method, xff });
                    if let Some(t) = &tx {
                        chunk.push(id, name);
                        if chunk.ids.len() >= NameChunk::LEN {
                            let _ = t.send(std::mem::take(&mut chunk));
                        }
                    }
                    Ok(())
                }
                LogRecord::Delete { id } => {
                    if id as usize >= meta.len() || !deleted.insert(id) {
                        return Err(format!("delete of unknown or deleted series {id}"));
                    }
                    names.remove(id);
                    edited = true;
                    Ok(())
                }
                LogRecord::Rename { id, name } => {
                    if id as usize >= meta.len() || deleted.contains(id) {
                        return Err(format!("rename of unknown or deleted series {id}"));
                    }
                    if names.find(name.as_bytes()).is_some() {
                        return Err(format!("rename of series {id} onto existing {name:?}"));
                    }
                    names.rename(id, name.as_bytes());
                    tagged |= name.contains(';');
                    edited = true;
                    Ok(())
                }
            });
            if let Some(t) = tx.take() {
                if !chunk.ids.is_empty() {
                    let _ = t.send(std::mem::take(&mut chunk));
                }
            }
            let tree = builder.ok().and_then(|h| h.join().ok());
            (report, tree)
        });
        let report = report?;
        let tree = tree.filter(|_| !edited);
        let log = SeriesLog::open(&path)?;
        let mut tags = TagIndex::new();
        // a scan of every name only when one of them is tagged
        for id in (0..meta.len() as u32).filter(|_| tagged) {
            match std::str::from_utf8(names.get_bytes(id)) {
                Ok(name) if name.contains(';') && !deleted.contains(id) => {
                    tags.insert(id, name);
                }
                _ => {}
            }
        }
        tags.open_log(dir, |n| names.find(n.as_bytes()))?;
        Ok((
            SeriesIndex {
                names,
                meta,
                classes,
                tree_ready: tree.is_some(),
                tree: tree.unwrap_or_default(),
                tree_cache: tree::PathCache::default(),
                tags,
                log,
                partitions_per_level,
                deleted: Arc::new(deleted),
            },
            report,
        ))
    }

    /// The metric tree of the live names as they are now (after the log's renames and
    /// deletes), in id order.
    pub(crate) fn build_tree(&self) -> Tree {
        let mut tree = Tree::default();
        // about a node a series (the leaf; its parents are shared), and a few more
        tree.reserve(self.meta.len() + self.meta.len() / 16);
        let mut cache = tree::PathCache::default();
        for id in 0..self.meta.len() as u32 {
            if self.deleted.contains(id) {
                continue;
            }
            if let Ok(name) = std::str::from_utf8(self.names.get_bytes(id)) {
                if tree_path(name) {
                    tree.insert_cached(name, id, &mut cache);
                }
            }
        }
        tree
    }

    /// True when the tree was built as the log loaded (no delete or rename in it):
    /// [`build_tree`](Self::build_tree) is then not needed.
    pub(crate) fn tree_ready(&self) -> bool {
        self.tree_ready
    }

    /// Installs the tree [`build_tree`](Self::build_tree) made.
    pub(crate) fn set_tree(&mut self, tree: Tree) {
        self.tree = tree;
        self.tree_ready = true;
        self.tree_cache = tree::PathCache::default();
    }

    /// Ids handed out, deleted series included.
    pub(crate) fn len(&self) -> usize {
        self.meta.len()
    }

    /// Series not deleted.
    pub(crate) fn live_len(&self) -> usize {
        self.meta.len().saturating_sub(self.deleted.len())
    }

    /// The deleted ids, for compaction to drop their rows.
    pub(crate) fn deleted_ids(&self) -> Arc<DeletedSet> {
        self.deleted.clone()
    }

    pub(crate) fn lookup(&self, name: &[u8]) -> Option<u32> {
        self.names.find(name)
    }

    /// The hash [`lookup_hashed`](Self::lookup_hashed) and
    /// [`create_hashed`](Self::create_hashed) take, so that a series created by a
    /// write hashes its name once.
    pub(crate) fn name_hash(&self, name: &[u8]) -> u64 {
        self.names.hash(name)
    }

    pub(crate) fn lookup_hashed(&self, hash: u64, name: &[u8]) -> Option<u32> {
        self.names.find_hashed(hash, name)
    }

    /// A series that may be named by `hash`'s name, found without reading a name
    /// (see [`Names::candidate`]); `None`: the name is absent.
    pub(crate) fn lookup_candidate(&self, hash: u64) -> Option<u32> {
        self.names.candidate(hash)
    }

    /// Starts loading the name table's slot for `hash` (see [`crate::prefetch`]).
    #[inline]
    pub(crate) fn prefetch_slot(&self, hash: u64) {
        self.names.prefetch_slot(hash);
    }

    /// Starts loading where series `id`'s name is found.
    #[inline]
    pub(crate) fn prefetch_name_place(&self, id: u32) {
        self.names.prefetch_ends(id);
    }

    /// Starts loading series `id`'s name bytes and settings (after
    /// [`prefetch_name_place`](Self::prefetch_name_place)).
    #[inline]
    pub(crate) fn prefetch_name_and_meta(&self, id: u32) {
        self.names.prefetch_bytes(id);
        crate::prefetch::prefetch_at(&self.meta, id as usize);
    }

    /// Whether series `id` is named `name`.
    pub(crate) fn is_named(&self, id: u32, name: &[u8]) -> bool {
        self.names.is_named(id, name)
    }

    /// The rules of a live series; `None` for an unknown or deleted id (so the WAL
    /// replay skips a deleted series' points).
    pub(crate) fn meta(&self, id: u32) -> Option<SeriesMeta> {
        if self.deleted.contains(id) {
            return None;
        }
        self.meta.get(id as usize).copied()
    }

    pub(crate) fn metas(&self) -> &[SeriesMeta] {
        &self.meta
    }

    pub(crate) fn class(&self, id: u16) -> Option<&Arc<ClassInfo>> {
        self.classes.get(usize::from(id))
    }

    pub(crate) fn classes(&self) -> &[Arc<ClassInfo>] {
        &self.classes
    }

    /// The name of series `id` (empty for an unknown id).
    pub(crate) fn name_bytes(&self, id: u32) -> &[u8] {
        self.names.get_bytes(id)
    }

    #[cfg(test)]
    pub(crate) fn name(&self, id: u32) -> &str {
        std::str::from_utf8(self.names.get_bytes(id)).unwrap_or_default()
    }

    pub(crate) fn log_sync(&self) -> LogSync {
        self.log.sync_handle()
    }

    pub(crate) fn log_bytes(&self) -> u64 {
        self.log.bytes()
    }

    fn class_for(&mut self, retention: &Arc<Retention>) -> Result<u16, StoreError> {
        if let Some(c) = self.classes.iter().find(|c| *c.retention == **retention) {
            return Ok(c.id);
        }
        if retention.archives().len() > MAX_LEVELS {
            return Err(StoreError::Options(format!(
                "retention {retention} has more than {MAX_LEVELS} archives"
            )));
        }
        let id = u16::try_from(self.classes.len())
            .map_err(|_| StoreError::Options("more than 65536 distinct retentions".into()))?;
        let widths = class::partition_widths(retention.archives(), self.partitions_per_level);
        self.log.push(&LogRecord::Class {
            id,
            archives: retention.archives().to_vec(),
            widths: widths.clone(),
        });
        self.classes
            .push(Arc::new(ClassInfo::new(id, retention.clone(), &widths)));
        Ok(id)
    }

    /// Creates a series (the caller checked it is absent); its records are queued in the
    /// log until [`write_log`](Self::write_log).
    pub(crate) fn create(&mut self, name: &str, cfg: &SeriesConfig) -> Result<u32, StoreError> {
        self.create_hashed(name, self.name_hash(name.as_bytes()), cfg)
    }

    /// [`create`](Self::create) with the name's [`name_hash`](Self::name_hash).
    pub(crate) fn create_hashed(
        &mut self,
        name: &str,
        hash: u64,
        cfg: &SeriesConfig,
    ) -> Result<u32, StoreError> {
        let class = self.class_for(&cfg.retention)?;
        let id = u32::try_from(self.meta.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or_else(|| StoreError::Options("series id space exhausted".into()))?;
        self.log.push(&LogRecord::Series {
            id,
            class,
            method: cfg.method,
            xff: cfg.xff,
            name,
        });
        self.names.push_hashed(hash, name.as_bytes());
        self.meta.push(SeriesMeta {
            class,
            method: cfg.method,
            xff: cfg.xff,
        });
        if tree_path(name) {
            self.tree.insert_cached(name, id, &mut self.tree_cache);
        }
        if name.contains(';') {
            self.tags.insert(id, name);
        }
        Ok(id)
    }

    /// Writes the queued log records (one `write`).
    pub(crate) fn write_log(&mut self) -> Result<(), StoreError> {
        self.log.write_pending()
    }

    /// Nodes matching `pattern`, sorted by path, leaf before branch for one path.
    ///
    /// A pattern holding `;` (and not starting with `_tagged.`) names one tagged
    /// series, as graphite-web 1.1.10's standard finder reads it: no globbing, the
    /// series stored under exactly that name (carbon stores the canonical form, and the
    /// finder hashes the pattern as written, so tags in another order find nothing),
    /// answered as a leaf under the pattern itself.
    pub(crate) fn find(&self, pattern: &PathPattern) -> Vec<FindEntry> {
        self.find_noting(pattern, &mut Vec::new())
    }

    /// [`find`](Self::find) that appends the series of each leaf to `ids`, in the
    /// answer's order: one list of entries, built in place from the tree's answer,
    /// plus 4 bytes a leaf.
    pub(crate) fn find_noting(&self, pattern: &PathPattern, ids: &mut Vec<u32>) -> Vec<FindEntry> {
        let raw = pattern.as_str();
        if raw.contains(';') && !raw.starts_with("_tagged.") {
            return self
                .lookup(raw.as_bytes())
                .filter(|&id| self.meta(id).is_some())
                .map(|id| {
                    ids.push(id);
                    FindEntry {
                        path: raw.to_string(),
                        is_leaf: true,
                    }
                })
                .into_iter()
                .collect();
        }
        self.tree
            .find_ids(pattern)
            .into_iter()
            .map(|(path, leaf)| {
                ids.extend(leaf);
                FindEntry {
                    path,
                    is_leaf: leaf.is_some(),
                }
            })
            .collect()
    }

    /// The series of the leaves [`find`](Self::find) would answer, in its order (by
    /// path, each once), without building their paths: a leaf's path is its series'
    /// name.
    pub(crate) fn find_leaf_ids(&self, pattern: &PathPattern) -> Vec<u32> {
        let raw = pattern.as_str();
        if raw.contains(';') && !raw.starts_with("_tagged.") {
            return self
                .lookup(raw.as_bytes())
                .filter(|&id| self.meta(id).is_some())
                .into_iter()
                .collect();
        }
        let mut ids = self.tree.find_leaves(pattern);
        let name = |id: &u32| self.name_bytes(*id);
        if !ids.is_sorted_by(|a, b| name(a) <= name(b)) {
            ids.sort_unstable_by(|a, b| name(a).cmp(name(b)));
        }
        ids.dedup();
        ids
    }

    pub(crate) fn tree_nodes(&self) -> usize {
        self.tree.node_count()
    }

    /// Approximate heap bytes of the index, for the memory gauge.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.names.heap_bytes()
            + self.meta.capacity() * std::mem::size_of::<SeriesMeta>()
            + self.tree.heap_bytes()
            + self.tags.heap_bytes()
    }

    /// The tag index (tagged series only).
    pub(crate) fn tags(&self) -> &TagIndex {
        &self.tags
    }

    /// The tag index, to add or remove series (`/tags/tagSeries`, `/tags/delSeries`,
    /// series deletion).
    pub(crate) fn tags_mut(&mut self) -> &mut TagIndex {
        &mut self.tags
    }

    /// A series' name (empty for an id never given out).
    pub(crate) fn name_str(&self, id: u32) -> &str {
        std::str::from_utf8(self.names.get_bytes(id)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;
    use sumi_model::SeriesRules;

    /// The tree built while the log loads (names sent in chunks to its thread) finds
    /// what the tree built by the creations found.
    #[test]
    fn tree_built_while_loading_finds_the_same() {
        let dir = TempDir::new("index-chunks");
        let rules = SeriesRules::builtin();
        let names: Vec<String> = (0..10_000)
            .map(|i| format!("h{}.cpu.m{}", i / 7, i % 7))
            .chain(["tagged;k=v".to_string(), "lone".to_string()])
            .collect();
        let pats = [
            "h1*.cpu.m3",
            "*",
            "h99.*.*",
            "h1428.cpu.*",
            "lone",
            "*.*.m6",
        ];
        let before: Vec<_> = {
            let (mut idx, _) = SeriesIndex::open(dir.path(), 8, false).unwrap();
            for n in &names {
                idx.create(n, &rules.config_for(n)).unwrap();
            }
            idx.write_log().unwrap();
            pats.iter()
                .map(|p| idx.find(&PathPattern::parse(p)))
                .collect()
        };
        let (idx, _) = SeriesIndex::open_without_tree(dir.path(), 8, false).unwrap();
        assert!(idx.tree_ready());
        assert_eq!(idx.tree_nodes(), 1 + 1 + 1429 + 1429 + 7 * 1429 - 3);
        let after: Vec<_> = pats
            .iter()
            .map(|p| idx.find(&PathPattern::parse(p)))
            .collect();
        assert_eq!(after, before);
        assert_eq!(after[0].len(), 1 + 10 + 100 + 429); // h1, h1x, h1xx, h1000..h1428
    }

    #[test]
    fn create_reload_find() {
        let dir = TempDir::new("index");
        let rules = SeriesRules::builtin();
        {
            let (mut idx, _) = SeriesIndex::open(dir.path(), 8, false).unwrap();
            for n in ["a.b.c", "a.b", "x.count", "tagged;k=v"] {
                let id = idx.create(n, &rules.config_for(n)).unwrap();
                assert_eq!(idx.lookup(n.as_bytes()), Some(id));
            }
            idx.write_log().unwrap();
        }
        let (idx, report) = SeriesIndex::open(dir.path(), 8, false).unwrap();
        assert_eq!(report.records, 5); // one class + four series
        assert_eq!(idx.len(), 4);
        assert_eq!(idx.lookup(b"a.b"), Some(1));
        assert_eq!(idx.name(2), "x.count");
        assert_eq!(idx.meta(2).unwrap().method, AggMethod::Sum);
        assert_eq!(idx.meta(0).unwrap().method, AggMethod::Average);
        assert_eq!(idx.classes().len(), 1);
        let found = idx.find(&PathPattern::parse("a.*"));
        assert_eq!(
            found,
            vec![
                FindEntry {
                    path: "a.b".into(),
                    is_leaf: true
                },
                FindEntry {
                    path: "a.b".into(),
                    is_leaf: false
                },
            ]
        );
        // tagged series are fetchable by name but stay out of the tree
        assert_eq!(idx.lookup(b"tagged;k=v"), Some(3));
        assert!(idx
            .find(&PathPattern::parse("*"))
            .iter()
            .all(|e| !e.path.contains(';')));
        // ... and found by their exact name, as graphite-web's standard finder does
        assert_eq!(
            idx.find(&PathPattern::parse("tagged;k=v")),
            vec![FindEntry {
                path: "tagged;k=v".into(),
                is_leaf: true
            }]
        );
        assert!(idx.find(&PathPattern::parse("tagged;k=*")).is_empty());
        assert!(idx.find(&PathPattern::parse("tagged;k=w")).is_empty());
    }
}
