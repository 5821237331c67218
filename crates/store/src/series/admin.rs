//! Deleting and renaming series in the index.
//!
//! A deleted series keeps its id (ids are dense and parts name series by id) but leaves
//! the name table and the tree at once, and its id goes into [`DeletedSet`]: the WAL
//! replay skips its points, compaction drops its rows. Points that arrive for the same
//! name afterwards create a fresh series with a new id. A renamed series keeps its id
//! and so its data; only the name changes. Both are logged in `series.log` (record
//! types 3 and 4) and fsynced before the call returns.

use sumi_model::glob::PathPattern;

use super::log::LogRecord;
use super::{tree, tree_path, SeriesIndex};
use crate::StoreError;

/// The ids of deleted series, as a bitmap indexed by id (a lookup costs a shift and a
/// mask on the append and read paths).
#[derive(Clone, Debug, Default)]
pub(crate) struct DeletedSet {
    bits: Vec<u64>,
    count: usize,
}

impl DeletedSet {
    pub(crate) fn contains(&self, id: u32) -> bool {
        let i = id as usize;
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Adds `id`; returns false when it was already there.
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        let i = id as usize;
        if self.bits.len() <= i / 64 {
            self.bits.resize(i / 64 + 1, 0);
        }
        let Some(w) = self.bits.get_mut(i / 64) else {
            return false;
        };
        let bit = 1u64 << (i % 64);
        if *w & bit != 0 {
            return false;
        }
        *w |= bit;
        self.count += 1;
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// One series a rename moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamed {
    /// The name before.
    pub from: String,
    /// The name after.
    pub to: String,
}

/// True when `name` is `prefix` itself or lies in the subtree below it.
fn under(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

impl SeriesIndex {
    /// The current name of series `id` (empty for an unknown id).
    pub(crate) fn name_of(&self, id: u32) -> &str {
        std::str::from_utf8(self.names.get_bytes(id)).unwrap_or_default()
    }

    /// The live series matching any of `patterns`, as `(id, name)` sorted by name
    /// without duplicates. A pattern with `;` names one tagged series exactly (tagged
    /// series are not in the tree); any other is a Graphite glob over the tree, whose
    /// leaves are the series (`a.**` is every series below `a`).
    pub(crate) fn matching(&self, patterns: &[&str]) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        for p in patterns {
            if p.contains(';') {
                if let Some(id) = self.lookup(p.as_bytes()) {
                    out.push((id, (*p).to_string()));
                }
                continue;
            }
            for (path, is_leaf) in self.tree.find(&PathPattern::parse(p)) {
                if !is_leaf {
                    continue;
                }
                if let Some(id) = self.lookup(path.as_bytes()) {
                    out.push((id, path));
                }
            }
        }
        out.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        out.dedup_by_key(|e| e.0);
        out
    }

    /// Deletes the live series among `ids`: logged and fsynced, then gone from the
    /// name table and the tree. Returns how many were deleted.
    pub(crate) fn delete(&mut self, ids: &[u32]) -> Result<usize, StoreError> {
        let mut live: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| (id as usize) < self.meta.len() && !self.deleted.contains(id))
            .collect();
        live.sort_unstable();
        live.dedup();
        if live.is_empty() {
            return Ok(0);
        }
        for &id in &live {
            self.log.push(&LogRecord::Delete { id });
        }
        self.write_log()?;
        self.log.sync_handle().sync()?;
        let names: Vec<(String, u32)> = live
            .iter()
            .map(|&id| (self.name_of(id).to_string(), id))
            .collect();
        let deleted = std::sync::Arc::make_mut(&mut self.deleted);
        for &id in &live {
            deleted.insert(id);
            self.names.remove(id);
        }
        for (name, id) in &names {
            self.tags.remove(*id, name);
        }
        // nodes may go: the creation path cache must not name them
        self.tree_cache = tree::PathCache::default();
        self.tree.remove_many(
            names
                .iter()
                .filter(|(n, _)| tree_path(n))
                .map(|(n, id)| (n.as_str(), *id)),
        );
        Ok(live.len())
    }

    /// The live series among `names` (exact names, no globs), as `(id, name)`.
    pub(crate) fn named(&self, names: &[&str]) -> Vec<(u32, String)> {
        names
            .iter()
            .filter_map(|n| Some((self.lookup(n.as_bytes())?, (*n).to_string())))
            .collect()
    }

    /// Renames the series `from` and every series below it (`from.…`) to the same
    /// names under `to`. Refused whole, changing nothing, when no series is there, when
    /// a new name is not a valid path or when it is taken by a live series.
    pub(crate) fn rename(&mut self, from: &str, to: &str) -> Result<Vec<Renamed>, StoreError> {
        let moves = self.plan_rename(from, to)?;
        self.apply_rename(&moves)?;
        Ok(moves.into_iter().map(|(_, m)| m).collect())
    }

    /// What [`rename`](Self::rename) would do, or why it refuses; changes nothing.
    pub(crate) fn plan_rename(
        &self,
        from: &str,
        to: &str,
    ) -> Result<Vec<(u32, Renamed)>, StoreError> {
        if from == to {
            return Err(StoreError::Admin(format!(
                "rename {from:?} onto itself does nothing"
            )));
        }
        let tagged = from.contains(';') || to.contains(';');
        let mut moves: Vec<(u32, Renamed)> = Vec::new();
        if tagged {
            if to.is_empty() || (!to.contains(';') && !tree_path(to)) {
                return Err(StoreError::Admin(format!(
                    "rename {from:?} to {to:?}: not a valid series name"
                )));
            }
            // a tagged name is one series: no subtree
            if let Some(id) = self.lookup(from.as_bytes()) {
                moves.push((
                    id,
                    Renamed {
                        from: from.to_string(),
                        to: to.to_string(),
                    },
                ));
            }
        } else {
            if !tree_path(from) || !tree_path(to) {
                return Err(StoreError::Admin(format!(
                    "rename {from:?} to {to:?}: a path needs non-empty dot-separated nodes"
                )));
            }
            if under(to, from) {
                return Err(StoreError::Admin(format!(
                    "rename {from:?} to {to:?}: cannot move a subtree into itself"
                )));
            }
            for (name, id) in self.tree.subtree_leaves(from) {
                let new = format!("{to}{}", name.get(from.len()..).unwrap_or_default());
                moves.push((
                    id,
                    Renamed {
                        from: name,
                        to: new,
                    },
                ));
            }
        }
        if moves.is_empty() {
            return Err(StoreError::NotFound(format!(
                "no series named {from:?} or below it"
            )));
        }
        if let Some((_, m)) = moves
            .iter()
            .find(|(_, m)| self.lookup(m.to.as_bytes()).is_some())
        {
            return Err(StoreError::Admin(format!(
                "rename {from:?} to {to:?} refused: series {:?} already exists (delete it first)",
                m.to
            )));
        }
        Ok(moves)
    }

    fn apply_rename(&mut self, moves: &[(u32, Renamed)]) -> Result<(), StoreError> {
        for (id, m) in moves {
            self.log.push(&LogRecord::Rename {
                id: *id,
                name: &m.to,
            });
        }
        self.write_log()?;
        self.log.sync_handle().sync()?;
        // nodes may go: the creation path cache must not name them
        self.tree_cache = tree::PathCache::default();
        self.tree.remove_many(
            moves
                .iter()
                .filter(|(_, m)| tree_path(&m.from))
                .map(|(id, m)| (m.from.as_str(), *id)),
        );
        for (id, m) in moves {
            self.tags.remove(*id, &m.from);
            self.tags.insert(*id, &m.to);
            self.names.rename(*id, m.to.as_bytes());
            if tree_path(&m.to) {
                self.tree.insert(&m.to, *id);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;
    use sumi_model::SeriesRules;

    fn index(dir: &TempDir, names: &[&str]) -> SeriesIndex {
        let rules = SeriesRules::builtin();
        let (mut idx, _) = SeriesIndex::open(dir.path(), 8, false).unwrap();
        for n in names {
            idx.create(n, &rules.config_for(n)).unwrap();
        }
        idx.write_log().unwrap();
        idx
    }

    fn paths(idx: &SeriesIndex, pat: &str) -> Vec<String> {
        idx.find(&PathPattern::parse(pat))
            .into_iter()
            .map(|e| format!("{}{}", e.path, if e.is_leaf { "" } else { "/" }))
            .collect()
    }

    #[test]
    fn deleted_set_bits() {
        let mut d = DeletedSet::default();
        assert!(!d.contains(0) && d.is_empty());
        assert!(d.insert(130));
        assert!(!d.insert(130));
        assert!(d.insert(0));
        assert!(d.contains(130) && d.contains(0) && !d.contains(129) && !d.contains(1 << 30));
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn delete_prunes_the_tree_and_survives_reopen() {
        let dir = TempDir::new("admin-del");
        {
            let mut idx = index(&dir, &["a.b.c", "a.b.d", "a.x", "t;k=v"]);
            let m = idx.matching(&["a.b.*", "t;k=v", "nothing.*"]);
            assert_eq!(
                m.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(),
                ["a.b.c", "a.b.d", "t;k=v"]
            );
            let ids: Vec<u32> = m.iter().map(|e| e.0).collect();
            assert_eq!(idx.delete(&ids).unwrap(), 3);
            assert_eq!(idx.delete(&ids).unwrap(), 0, "deleting twice does nothing");
            assert_eq!(
                paths(&idx, "a.*"),
                ["a.x"],
                "the emptied branch a.b is gone"
            );
            assert_eq!(idx.lookup(b"a.b.c"), None);
            assert_eq!(idx.meta(0), None);
            assert_eq!(idx.live_len(), 1);
            // the same name again is a new series
            let cfg = SeriesRules::builtin().config_for("a.b.c");
            assert_eq!(idx.create("a.b.c", &cfg).unwrap(), 4);
            idx.write_log().unwrap();
        }
        let (idx, report) = SeriesIndex::open(dir.path(), 8, false).unwrap();
        assert_eq!(report.cut_bytes, 0);
        assert_eq!(idx.lookup(b"a.b.c"), Some(4));
        assert_eq!(idx.lookup(b"a.b.d"), None);
        assert_eq!(idx.lookup(b"t;k=v"), None);
        assert_eq!(idx.meta(1), None);
        assert!(idx.meta(4).is_some());
        assert_eq!(idx.live_len(), 2);
        assert_eq!(paths(&idx, "a.b.*"), ["a.b.c"]);
        assert_eq!(idx.deleted_ids().len(), 3);
    }

    #[test]
    fn rename_subtree_keeps_ids_and_refuses_collisions() {
        let dir = TempDir::new("admin-ren");
        {
            let mut idx = index(&dir, &["web.a", "web.a.cpu", "web.a.mem", "web.ab", "db.x"]);
            let r = idx.rename("web.a", "old.web").unwrap();
            assert_eq!(
                r.iter().map(|m| m.to.as_str()).collect::<Vec<_>>(),
                ["old.web", "old.web.cpu", "old.web.mem"],
                "web.ab is a sibling, not below web.a"
            );
            assert_eq!(idx.lookup(b"old.web.cpu"), Some(1));
            assert_eq!(idx.lookup(b"web.a.cpu"), None);
            assert_eq!(paths(&idx, "web.*"), ["web.ab"]);
            assert_eq!(paths(&idx, "old.*"), ["old.web", "old.web/"]);
            let err = idx.rename("db.x", "web.ab").unwrap_err();
            assert!(err.to_string().contains("already exists"), "{err}");
            let err = idx.rename("nope", "x").unwrap_err();
            assert!(matches!(err, StoreError::NotFound(_)), "{err}");
            let err = idx.rename("db", "db.sub").unwrap_err();
            assert!(err.to_string().contains("into itself"), "{err}");
            assert!(idx.rename("db", "d..b").is_err());
        }
        let (idx, _) = SeriesIndex::open(dir.path(), 8, false).unwrap();
        assert_eq!(idx.lookup(b"old.web.mem"), Some(2));
        assert_eq!(idx.lookup(b"web.a"), None);
        assert_eq!(idx.lookup(b"db.x"), Some(4));
        assert_eq!(paths(&idx, "*"), ["db/", "old/", "web/"]);
    }
}
