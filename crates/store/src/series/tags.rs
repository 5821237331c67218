//! The tag index: graphite-web's tag database (`graphite/tags/localdatabase.py`) kept
//! in memory for tagged series (`name;tag1=value1;tag2=value2`).
//!
//! Layout, built for millions of series:
//! - tag names and tag values are interned once each ([`Names`]) with dense ids in
//!   first-seen order, which are also the ids graphite-web's SQL tables would give them
//!   (`/tags` answers carry them);
//! - per tag, each value it takes has a sorted posting list of `u32` series ids (ids
//!   only grow, so creation appends). The `name` pseudo-tag is the part before the
//!   first `;`.
//!
//! A query ([`TagIndex::find`]) follows `LocalDatabaseTagDB._find_series`: expressions
//! whose condition holds for the empty value ("matches empty") only filter, the others
//! must be met by a value the series has, and at least one must be of that kind. The
//! regex of `=~`/`!=~` runs over a tag's distinct values, never over series. The
//! positive expression with the shortest postings gives the candidates. Every other
//! expression that a series meets only by holding one of a few values (at most
//! [`MERGED_LISTS`]) keeps the candidates found in those values' postings, walked with
//! galloping cursors (a few steps a candidate, however long the postings: `dc=dc3`
//! among ten million series); the others are checked per candidate by reading the
//! candidate's value out of its (canonical) name, which costs no memory and about as
//! much as a hash lookup.
//!
//! Removal from the index alone (graphite-web's `/tags/delSeries`, which leaves the
//! data) is persisted in `tags.log`: one line per act, `-id name` or `+id name`,
//! replayed at open over the index built from the series log (a line applies only while
//! the name still belongs to that id).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use parking_lot::Mutex;
use regex::Regex;
use sumi_model::tagged::parse_carbon;

use super::names::Names;
use crate::StoreError;

/// A tag expression's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagOp {
    /// `tag=value`
    Eq,
    /// `tag!=value`
    Ne,
    /// `tag=~regex`
    Match,
    /// `tag!=~regex`
    NotMatch,
}

/// One of graphite's tag expressions (`seriesByTag` arguments, `/tags/findSeries`'s
/// `expr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagExpr {
    pub tag: String,
    pub op: TagOp,
    pub spec: String,
}

/// Why a tag query could not run. Messages follow graphite-web's where it has one.
#[derive(Debug, thiserror::Error)]
pub enum TagQueryError {
    /// Not `tag<op>spec` (graphite-web's `parse_tagspec` regex).
    #[error("Invalid tagspec {0}")]
    Spec(String),
    /// Every expression also holds for series without the tag.
    #[error("At least one tagspec must not match the empty string")]
    AllMatchEmpty,
    /// A regex (`=~`, `!=~`, a filter) that does not compile.
    #[error("invalid regular expression {pattern:?}: {message}")]
    Regex { pattern: String, message: String },
}

impl TagExpr {
    /// Parses `tag=spec`, `tag!=spec`, `tag=~spec` or `tag!=~spec` as graphite-web's
    /// `parse_tagspec` (`^([^;!=]+)(!?=~?)([^;]*)$`).
    pub fn parse(text: &str) -> Result<TagExpr, TagQueryError> {
        let bad = || TagQueryError::Spec(text.to_string());
        let end = text.find([';', '!', '=']).ok_or_else(bad)?;
        let (tag, rest) = text.split_at(end);
        if tag.is_empty() {
            return Err(bad());
        }
        let (op, spec) = if let Some(s) = rest.strip_prefix("!=~") {
            (TagOp::NotMatch, s)
        } else if let Some(s) = rest.strip_prefix("!=") {
            (TagOp::Ne, s)
        } else if let Some(s) = rest.strip_prefix("=~") {
            (TagOp::Match, s)
        } else if let Some(s) = rest.strip_prefix('=') {
            (TagOp::Eq, s)
        } else {
            return Err(bad());
        };
        if spec.contains(';') {
            return Err(bad());
        }
        Ok(TagExpr {
            tag: tag.to_string(),
            op,
            spec: spec.to_string(),
        })
    }
}

/// graphite-web anchors a regex that does not start with `^` as `^(spec)`; the SQL
/// `REGEXP` then searches with it (Django's sqlite `REGEXP` is `re.search`).
pub(crate) fn anchored(spec: &str) -> String {
    if spec.starts_with('^') {
        spec.to_string()
    } else {
        format!("^({spec})")
    }
}

fn compile(pattern: &str) -> Result<Regex, TagQueryError> {
    Regex::new(pattern).map_err(|e| TagQueryError::Regex {
        pattern: pattern.to_string(),
        message: e.to_string(),
    })
}

/// A tag and its dense id, as `/tags` lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagInfo {
    /// 1-based, in order of first use (graphite-web's `tags_tag.id`).
    pub id: u32,
    pub tag: String,
}

/// A value of a tag, its id and how many series have it (`/tags/<tag>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagValueInfo {
    /// 1-based, in order of first use over all tags (`tags_tagvalue.id`).
    pub id: u32,
    pub value: String,
    pub count: u64,
}

/// The value of `tag` in a tagged name (the last segment naming it), without parsing
/// the rest.
fn value_in<'a>(name: &'a str, tag: &str) -> Option<&'a str> {
    let mut segments = name.split(';');
    let metric = segments.next().unwrap_or_default();
    if tag == "name" {
        return Some(metric.trim_start_matches('~'));
    }
    let mut found = None;
    for segment in segments {
        if let Some((t, v)) = segment.split_once('=') {
            if t == tag {
                found = Some(v);
            }
        }
    }
    found
}

/// One tag: the values it takes and their postings.
struct TagEntry {
    /// Global value id → index into `postings`.
    local: HashMap<u32, u32, foldhash::fast::FixedState>,
    /// (global value id, sorted series ids).
    postings: Vec<(u32, Vec<u32>)>,
    /// The local indexes of `postings` ordered by value, built by the first regex query
    /// with a literal prefix after a new value (4 bytes a value): the values a prefix
    /// allows are then one range of it, and the regex runs over that range only
    /// (`host=~host00[0-4].*` over 100,000 hosts tests 1,000 of them).
    sorted: Mutex<Option<Arc<Vec<u32>>>>,
}

impl TagEntry {
    fn new() -> TagEntry {
        TagEntry {
            local: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x7a6)),
            postings: Vec::new(),
            sorted: Mutex::new(None),
        }
    }

    /// [`sorted`](Self::sorted), built when missing.
    fn sorted(&self, values: &Names) -> Arc<Vec<u32>> {
        let mut cached = self.sorted.lock();
        if let Some(s) = &*cached {
            return Arc::clone(s);
        }
        let mut order: Vec<u32> = (0..self.postings.len() as u32).collect();
        let value = |l: &u32| {
            self.postings
                .get(*l as usize)
                .map_or(&[][..], |(g, _)| values.get_bytes(*g))
        };
        order.sort_unstable_by(|a, b| value(a).cmp(value(b)));
        let order = Arc::new(order);
        *cached = Some(Arc::clone(&order));
        order
    }
}

/// A literal every match of graphite's anchored `spec` starts with (possibly empty):
/// the characters before the first one with a meaning in a regex, less the last when
/// a quantifier follows it. Conservative: a `|` anywhere gives none.
fn literal_prefix(spec: &str) -> &str {
    let body = spec.strip_prefix('^').unwrap_or(spec);
    if body.contains('|') {
        return "";
    }
    let meta = |c: char| "\\.+*?()[]{}^$|".contains(c);
    let end = body.find(meta).unwrap_or(body.len());
    let quantified = body[end..].starts_with(['?', '*', '{']);
    let mut prefix = &body[..end];
    if quantified {
        // the quantifier applies to the last character only
        prefix = prefix
            .char_indices()
            .last()
            .map_or("", |(i, _)| &prefix[..i]);
    }
    prefix
}

/// The in-memory tag index (see the module documentation).
pub(crate) struct TagIndex {
    tags: Names,
    entries: Vec<TagEntry>,
    values: Names,
    /// The ids `/tags` shows, by interned tag and value id: graphite-web's SQLite
    /// `AUTOINCREMENT` ids, where every `INSERT OR IGNORE` row of a tagged series
    /// takes a number even when the tag or value exists (so a new tag gets the count
    /// of tag rows inserted so far).
    tag_ids: Vec<u32>,
    value_ids: Vec<u32>,
    tag_rows: u32,
    value_rows: u32,
    /// Series currently in the index.
    series: usize,
    log: Option<TagLog>,
}

/// What a compiled expression accepts: per value of its tag (by local index) and for
/// series without the tag.
struct Accept {
    tag: Option<u32>,
    ok: Vec<bool>,
    missing_ok: bool,
}

impl TagIndex {
    /// An empty index that persists nothing (tests, and before [`open_log`]).
    ///
    /// [`open_log`]: Self::open_log
    pub(crate) fn new() -> TagIndex {
        TagIndex {
            tags: Names::default(),
            entries: Vec::new(),
            values: Names::default(),
            tag_ids: Vec::new(),
            value_ids: Vec::new(),
            tag_rows: 0,
            value_rows: 0,
            series: 0,
            log: None,
        }
    }

    /// Replays `tags.log` in `dir` over the index (built from the series log) with
    /// `lookup` giving the id of a series name, and keeps the log open for appending.
    pub(crate) fn open_log(
        &mut self,
        dir: &Path,
        lookup: impl Fn(&str) -> Option<u32>,
    ) -> Result<(), StoreError> {
        let path = dir.join("tags.log");
        match fs::read(&path) {
            Ok(bytes) => {
                for line in bytes.split(|&b| b == b'\n') {
                    // a torn last line (or a foreign byte) is skipped, not fatal: the
                    // worst case is a series shown that a delSeries had hidden
                    let Ok(line) = std::str::from_utf8(line) else {
                        continue;
                    };
                    let (add, rest) = match line.as_bytes().first() {
                        Some(b'+') => (true, &line[1..]),
                        Some(b'-') => (false, &line[1..]),
                        _ => continue,
                    };
                    let Some((id, name)) = rest
                        .split_once(' ')
                        .and_then(|(id, name)| Some((id.parse::<u32>().ok()?, name)))
                    else {
                        continue;
                    };
                    // only for the series it was written for: a name deleted and sent
                    // again is a new series, with a new id, and tagged
                    if lookup(name) == Some(id) {
                        if add {
                            self.register(id, name);
                        } else {
                            self.remove(id, name);
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("read", &path, e)),
        }
        self.log = Some(TagLog { path });
        self.shrink();
        Ok(())
    }

    /// Gives back the growth slack of posting lists (after a bulk build).
    pub(crate) fn shrink(&mut self) {
        for e in &mut self.entries {
            for (_, p) in &mut e.postings {
                p.shrink_to_fit();
            }
        }
    }

    /// Adds series `id` named `name` when it is tagged (holds `;`) and carbon would
    /// accept it; true when it was not indexed before.
    pub(crate) fn insert(&mut self, id: u32, name: &str) -> bool {
        name.contains(';') && self.register(id, name)
    }

    /// [`insert`](Self::insert) for any name carbon accepts, tagged or not
    /// (`/tags/tagSeries` takes untagged names too, as graphite-web does).
    pub(crate) fn register(&mut self, id: u32, name: &str) -> bool {
        let Some(tags) = parse_carbon(name) else {
            return false;
        };
        if self.contains(id, &tags) {
            return false;
        }
        let mut added = false;
        for (tag, value) in tags {
            self.tag_rows = self.tag_rows.saturating_add(1);
            self.value_rows = self.value_rows.saturating_add(1);
            let tid = self.tags.intern(tag.as_bytes()) as usize;
            if self.tag_ids.len() <= tid {
                self.tag_ids.resize(tid + 1, self.tag_rows);
            }
            while self.entries.len() <= tid {
                self.entries.push(TagEntry::new());
            }
            let gid = self.values.intern(value.as_bytes());
            if self.value_ids.len() <= gid as usize {
                self.value_ids.resize(gid as usize + 1, self.value_rows);
            }
            let Some(entry) = self.entries.get_mut(tid) else {
                continue;
            };
            let next = entry.postings.len() as u32;
            let local = *entry.local.entry(gid).or_insert(next);
            if local == next {
                entry.postings.push((gid, Vec::new()));
                *entry.sorted.get_mut() = None;
            }
            let Some((_, list)) = entry.postings.get_mut(local as usize) else {
                continue;
            };
            match list.last() {
                Some(&last) if last >= id => {
                    if let Err(at) = list.binary_search(&id) {
                        list.insert(at, id);
                        added = true;
                    }
                }
                _ => {
                    list.push(id);
                    added = true;
                }
            }
        }
        if added {
            self.series += 1;
        }
        added
    }

    /// Whether series `id` is indexed (under its first tag's value).
    fn contains(&self, id: u32, tags: &[(&str, &str)]) -> bool {
        let Some(&(tag, value)) = tags.first() else {
            return false;
        };
        let (Some(tid), Some(gid)) = (
            self.tags.find(tag.as_bytes()),
            self.values.find(value.as_bytes()),
        ) else {
            return false;
        };
        self.entries
            .get(tid as usize)
            .and_then(|e| e.local.get(&gid).and_then(|&l| e.postings.get(l as usize)))
            .is_some_and(|(_, list)| list.binary_search(&id).is_ok())
    }

    /// Takes series `id` named `name` out of the index; true when it was in it.
    pub(crate) fn remove(&mut self, id: u32, name: &str) -> bool {
        let Some(tags) = parse_carbon(name) else {
            return false;
        };
        let mut removed = false;
        for (tag, value) in tags {
            let (Some(tid), Some(gid)) = (
                self.tags.find(tag.as_bytes()),
                self.values.find(value.as_bytes()),
            ) else {
                continue;
            };
            let Some(entry) = self.entries.get_mut(tid as usize) else {
                continue;
            };
            let Some(&local) = entry.local.get(&gid) else {
                continue;
            };
            if let Some((_, list)) = entry.postings.get_mut(local as usize) {
                if let Ok(at) = list.binary_search(&id) {
                    list.remove(at);
                    removed = true;
                }
            }
        }
        if removed {
            self.series = self.series.saturating_sub(1);
        }
        removed
    }

    /// Appends `+id name` (tagged again) or `-id name` (untagged) to `tags.log`.
    pub(crate) fn persist(&self, add: bool, id: u32, name: &str) -> Result<(), StoreError> {
        match &self.log {
            Some(log) => log.append(add, id, name),
            None => Ok(()),
        }
    }

    /// Series in the index.
    pub(crate) fn series(&self) -> usize {
        self.series
    }

    fn str_of(names: &Names, id: u32) -> &str {
        std::str::from_utf8(names.get_bytes(id)).unwrap_or_default()
    }

    /// Compiles one expression against the tag's values.
    fn accept(&self, e: &TagExpr) -> Result<Accept, TagQueryError> {
        let tag = self.tags.find(e.tag.as_bytes());
        let entry = tag.and_then(|t| self.entries.get(t as usize));
        let values = entry.map(|en| en.postings.as_slice()).unwrap_or_default();
        let value = |gid: u32| Self::str_of(&self.values, gid);
        // `=` and `!=` single out one value: looked up, not compared with every value
        let single = |spec: &str| {
            let gid = self.values.find(spec.as_bytes());
            entry.zip(gid).and_then(|(en, g)| en.local.get(&g).copied())
        };
        let (missing_ok, ok): (bool, Vec<bool>) = match e.op {
            TagOp::Eq | TagOp::Ne => {
                let spec = e.spec.as_str();
                let eq = e.op == TagOp::Eq;
                let mut ok = vec![!eq; values.len()];
                if let Some(slot) = single(spec).and_then(|l| ok.get_mut(l as usize)) {
                    *slot = eq;
                }
                (spec.is_empty() == eq, ok)
            }
            TagOp::Match | TagOp::NotMatch => {
                let spec = anchored(&e.spec);
                // the SQL path searches with the anchored spec, the Python filter path
                // matches at the start (`re.match`)
                let search = compile(&spec)?;
                let at_start = compile(&format!("^(?:{spec})"))?;
                let empty = at_start.is_match("");
                let negate = e.op == TagOp::NotMatch;
                let missing_ok = empty != negate;
                let re = if missing_ok { &at_start } else { &search };
                let prefix = literal_prefix(&e.spec);
                let mut ok = vec![negate; values.len()];
                match entry {
                    // only the values starting with the prefix can match: one range
                    // of the values in order
                    Some(en) if !prefix.is_empty() => {
                        let order = en.sorted(&self.values);
                        let bytes = |l: u32| {
                            values
                                .get(l as usize)
                                .map_or(&[][..], |&(g, _)| self.values.get_bytes(g))
                        };
                        let from = order.partition_point(|&l| bytes(l) < prefix.as_bytes());
                        for &l in order.get(from..).unwrap_or_default() {
                            let v = bytes(l);
                            if !v.starts_with(prefix.as_bytes()) {
                                break;
                            }
                            if let Some(slot) = ok.get_mut(l as usize) {
                                *slot = re.is_match(std::str::from_utf8(v).unwrap_or_default())
                                    != negate;
                            }
                        }
                    }
                    _ => {
                        for (slot, &(g, _)) in ok.iter_mut().zip(values) {
                            *slot = re.is_match(value(g)) != negate;
                        }
                    }
                }
                (missing_ok, ok)
            }
        };
        Ok(Accept {
            tag,
            ok,
            missing_ok,
        })
    }

    /// Whether a series named `name` passes `a` (checked on its name).
    fn passes(&self, a: &Accept, e: &TagExpr, name: &str) -> bool {
        let Some(v) = value_in(name, &e.tag) else {
            return a.missing_ok;
        };
        let local = a
            .tag
            .and_then(|t| self.entries.get(t as usize))
            .zip(self.values.find(v.as_bytes()))
            .and_then(|(en, gid)| en.local.get(&gid).copied());
        local
            .and_then(|l| a.ok.get(l as usize).copied())
            .unwrap_or(false)
    }

    /// Ids of the series matching every expression, unordered (graphite-web's
    /// `find_series` before its `ORDER BY path`). `name_of` gives a series' name.
    pub(crate) fn find<'n>(
        &self,
        exprs: &[TagExpr],
        name_of: impl Fn(u32) -> &'n str,
    ) -> Result<Vec<u32>, TagQueryError> {
        let accepts = exprs
            .iter()
            .map(|e| self.accept(e))
            .collect::<Result<Vec<_>, _>>()?;
        // the positive expression with the fewest postings gives the candidates
        let mut best: Option<(usize, usize)> = None;
        for (i, a) in accepts.iter().enumerate() {
            if a.missing_ok {
                continue;
            }
            let cost = self.cost(a);
            if best.is_none_or(|(_, c)| cost < c) {
                best = Some((i, cost));
            }
        }
        let Some((first, _)) = best else {
            return Err(TagQueryError::AllMatchEmpty);
        };
        let mut ids = self.union(&accepts[first]);
        for (i, (a, e)) in accepts.iter().zip(exprs).enumerate() {
            if i == first || ids.is_empty() {
                continue;
            }
            // a series must hold one of a few accepted values: the candidates (sorted)
            // are looked up in their sorted postings, a few steps each, rather than
            // read out of every candidate's name
            let lists: Vec<&[u32]> = self.postings_of(a).map(Vec::as_slice).collect();
            if !a.missing_ok && lists.len() <= MERGED_LISTS {
                keep_listed(&mut ids, &lists);
            } else {
                ids.retain(|&id| self.passes(a, e, name_of(id)));
            }
        }
        Ok(ids)
    }

    fn postings_of<'a>(&'a self, a: &'a Accept) -> impl Iterator<Item = &'a Vec<u32>> + 'a {
        let entry = a.tag.and_then(|t| self.entries.get(t as usize));
        entry
            .map(|en| en.postings.as_slice())
            .unwrap_or_default()
            .iter()
            .zip(&a.ok)
            .filter(|(_, &ok)| ok)
            .map(|((_, list), _)| list)
    }

    fn cost(&self, a: &Accept) -> usize {
        self.postings_of(a).map(Vec::len).sum()
    }

    /// The series having one of the accepted values (a series has one value per tag,
    /// so the lists are disjoint).
    fn union(&self, a: &Accept) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.cost(a));
        let mut lists = 0;
        for list in self.postings_of(a) {
            out.extend_from_slice(list);
            lists += 1;
        }
        if lists > 1 {
            out.sort_unstable();
        }
        out
    }

    /// Every tag (also those whose series were all removed, as graphite-web's
    /// `tags_tag` keeps them), sorted, those matching `filter`, at most `limit`.
    pub(crate) fn list_tags(
        &self,
        filter: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<TagInfo>, TagQueryError> {
        let re = filter
            .filter(|f| !f.is_empty())
            .map(|f| compile(&anchored(f)))
            .transpose()?;
        let mut out: Vec<TagInfo> = (0..self.entries.len() as u32)
            .map(|id| TagInfo {
                id: self.tag_ids.get(id as usize).copied().unwrap_or(0),
                tag: Self::str_of(&self.tags, id).to_string(),
            })
            .filter(|t| re.as_ref().is_none_or(|r| r.is_match(&t.tag)))
            .collect();
        out.sort_unstable_by(|a, b| a.tag.cmp(&b.tag));
        if let Some(n) = limit {
            out.truncate(n);
        }
        Ok(out)
    }

    /// The values of `tag` that some series has, sorted, with their counts; `None`
    /// for a tag never seen.
    pub(crate) fn list_values(
        &self,
        tag: &str,
        filter: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Option<(u32, Vec<TagValueInfo>)>, TagQueryError> {
        let re = filter
            .filter(|f| !f.is_empty())
            .map(|f| compile(&anchored(f)))
            .transpose()?;
        let Some(tid) = self.tags.find(tag.as_bytes()) else {
            return Ok(None);
        };
        let Some(entry) = self.entries.get(tid as usize) else {
            return Ok(None);
        };
        let mut out: Vec<TagValueInfo> = entry
            .postings
            .iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(gid, list)| TagValueInfo {
                id: self.value_ids.get(*gid as usize).copied().unwrap_or(0),
                value: Self::str_of(&self.values, *gid).to_string(),
                count: list.len() as u64,
            })
            .filter(|v| re.as_ref().is_none_or(|r| r.is_match(&v.value)))
            .collect();
        out.sort_unstable_by(|a, b| a.value.cmp(&b.value));
        if let Some(n) = limit {
            out.truncate(n);
        }
        let id = self.tag_ids.get(tid as usize).copied().unwrap_or(0);
        Ok(Some((id, out)))
    }

    /// Approximate heap bytes (for the memory gauge and the bench report).
    pub(crate) fn heap_bytes(&self) -> usize {
        let mut n = self.tags.heap_bytes() + self.values.heap_bytes();
        for e in &self.entries {
            n += e.local.capacity() * 12;
            n += e.postings.capacity() * std::mem::size_of::<(u32, Vec<u32>)>();
            n += e
                .postings
                .iter()
                .map(|(_, l)| l.capacity() * 4)
                .sum::<usize>();
            n += e.sorted.lock().as_ref().map_or(0, |s| s.capacity() * 4);
        }
        n
    }
}

/// Accepted values up to which the candidates of a query are looked up in the values'
/// postings instead of checked on their names.
const MERGED_LISTS: usize = 8;

/// Keeps the ids (sorted) found in one of `lists` (each sorted): each list is walked
/// once with a cursor that gallops forward, so a list much longer than the ids costs
/// a few steps an id.
fn keep_listed(ids: &mut Vec<u32>, lists: &[&[u32]]) {
    let mut cursors = vec![0usize; lists.len()];
    ids.retain(|&id| {
        let mut found = false;
        for (list, at) in lists.iter().zip(cursors.iter_mut()) {
            *at = gallop(list, *at, id);
            found |= list.get(*at) == Some(&id);
        }
        found
    });
}

/// The first index at or after `from` whose value is at least `id` (`list.len()` when
/// there is none), found by doubling steps and a binary search.
fn gallop(list: &[u32], from: usize, id: u32) -> usize {
    let mut lo = from;
    let mut step = 1;
    let mut hi = from;
    while hi < list.len() && list.get(hi).is_some_and(|&v| v < id) {
        lo = hi + 1;
        hi = hi.saturating_add(step);
        step *= 2;
    }
    let hi = hi.min(list.len());
    lo + list
        .get(lo..hi)
        .map_or(0, |s| s.partition_point(|&v| v < id))
}

/// `tags.log`: removals from (and returns to) the tag index, one line each.
struct TagLog {
    path: PathBuf,
}

impl TagLog {
    fn append(&self, add: bool, id: u32, name: &str) -> Result<(), StoreError> {
        if name.contains('\n') {
            return Err(StoreError::Options(format!(
                "series name {name:?} holds a newline and cannot be untagged"
            )));
        }
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| StoreError::io("open", &self.path, e))?;
        let line = format!("{}{id} {name}\n", if add { '+' } else { '-' });
        f.write_all(line.as_bytes())
            .and_then(|()| f.sync_data())
            .map_err(|e| StoreError::io("append to", &self.path, e))
    }
}

#[cfg(test)]
mod tests;
