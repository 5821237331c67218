//! What a streamed aggregate holds, measured by the allocator: the heap's high-water
//! mark while `sumSeries(…)` runs over tens of thousands of series, against what the
//! same aggregate holds when its list is materialised.
//!
//! The source generates its series as they are asked for (it holds nothing), so the
//! bytes counted are the query's own: the leaf names, one chunk of series, the
//! accumulators and the output. A streamed aggregate must hold the output plus the leaf
//! names plus a working set that does not grow with the number of series; the
//! materialised one holds every series.
//!
//! One test in this binary: the counter is process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use sumi_model::glob::PathPattern;
use sumi_query::attime::TimeRange;
use sumi_query::source::{FetchedRef, FetchedSeries, FindNode, SeriesSource, SourceError};
use sumi_query::{Evaluator, Registry, RequestContext};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

#[global_allocator]
static ALLOC: Counting = Counting;

const NOW: i64 = 1_700_000_000;
const STEP: i64 = 60;
const POINTS: i64 = 30;

/// `hHHHHH.cpu.mM` (9 in 10) and `hHHHHH.disk.sda.mM`, values made from the name.
/// With `ids`, it hands a streamed aggregate its leaves as indexes (4 bytes each, as
/// the store hands out series ids) and their paths a chunk at a time.
struct Generated {
    series: usize,
    ids: bool,
}

impl Generated {
    fn name(i: usize) -> String {
        if i % 10 == 9 {
            format!("h{:05}.disk.sda.m{}", i / 10, i % 10)
        } else {
            format!("h{:05}.cpu.m{}", i / 10, i % 10)
        }
    }

    fn values(path: &str, out: &mut Vec<Option<f64>>) {
        let seed = path
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31) ^ u64::from(b));
        out.clear();
        out.extend((0..POINTS).map(|k| {
            let x = seed.wrapping_add(k as u64 * 0x9e37_79b9) % 100;
            (x >= 5).then_some(x as f64 / 4.0)
        }));
    }
}

impl SeriesSource for Generated {
    fn find_leaf_ids(&self, pattern: &PathPattern) -> Result<Option<Vec<u32>>, SourceError> {
        if !self.ids {
            return Ok(None);
        }
        // index order is path order
        Ok(Some(
            (0..self.series)
                .filter(|&i| pattern.matches_path(&Generated::name(i)))
                .map(|i| i as u32)
                .collect(),
        ))
    }

    fn leaf_paths(&self, ids: &[u32]) -> Result<Vec<String>, SourceError> {
        Ok(ids.iter().map(|&i| Generated::name(i as usize)).collect())
    }

    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        let mut nodes: Vec<FindNode> = (0..self.series)
            .map(Generated::name)
            .filter(|n| pattern.matches_path(n))
            .map(|path| FindNode {
                path,
                is_leaf: true,
            })
            .collect();
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(nodes)
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        self.fetch_each(&refs, from, until, now, &mut |i, f| {
            out.push(FetchedSeries {
                path: paths[i].clone(),
                start: f.start,
                end: f.end,
                step: f.step,
                values: f.values.to_vec(),
            })
        })?;
        Ok(out)
    }

    fn fetch_each(
        &self,
        paths: &[&str],
        _from: i64,
        _until: i64,
        _now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        let mut values = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            Generated::values(path, &mut values);
            each(
                i,
                FetchedRef {
                    start: NOW - POINTS * STEP,
                    end: NOW,
                    step: STEP,
                    values: &values,
                },
            );
        }
        Ok(())
    }
}

/// The heap bytes the evaluation of `target` held at most above what was live before
/// it, with the number of output series and the length of the first one's name.
fn held(source: &Generated, target: &str) -> (usize, usize, usize) {
    let registry = Registry::standard();
    let ctx = RequestContext::new(
        TimeRange {
            from: NOW - POINTS * STEP,
            until: NOW,
            now: NOW,
        },
        chrono_tz::UTC,
    );
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let out = Evaluator::new(source, &registry)
        .evaluate_targets(&ctx, &[target])
        .unwrap_or_else(|e| panic!("{target}: {e}"));
    let peak = PEAK.load(Ordering::SeqCst) - before;
    let name_len = out.first().map_or(0, |s| s.name.len());
    assert!(
        out.iter().all(|s| s.values.iter().any(Option::is_some)),
        "{target}"
    );
    (peak, out.len(), name_len)
}

#[test]
fn streamed_aggregates_hold_the_output_and_the_names_only() {
    const MIB: usize = 1 << 20;
    let source = Generated {
        series: 60_000,
        ids: false,
    };
    // what the leaf names cost as the engine holds them (a `String` each)
    let names: usize = (0..source.series)
        .map(|i| std::mem::size_of::<String>() + Generated::name(i).len())
        .sum();

    // the output is one series of 30 points: names plus a fixed working set
    let (streamed, n, _) = held(&source, "sumSeries(h*.*.*)");
    let (materialised, _, _) = held(&source, "sumSeries(group(h*.*.*))");
    println!(
        "sumSeries(h*.*.*): streamed {streamed} B, materialised {materialised} B, names {names} B"
    );
    assert_eq!(n, 1);
    assert!(
        streamed <= 2 * names + 8 * MIB,
        "streamed {streamed} B, names {names} B"
    );
    assert!(
        materialised > 3 * streamed,
        "materialised {materialised} B, streamed {streamed} B"
    );

    // several lists (the benchmark harness's count), each series under isNonNull: the
    // output's name lists every series (graphite-web's), so the output is as long as
    // the names; what is held beyond it and the names must not grow with the series
    for (streamed_t, materialised_t) in [
        (
            "sumSeries(isNonNull(h*.*.*),isNonNull(h*.*.*.*))",
            "sumSeries(group(isNonNull(h*.*.*)),group(isNonNull(h*.*.*.*)))",
        ),
        (
            "countSeries(h*.cpu.*,offset(h*.disk.*.*,1))",
            "countSeries(group(h*.cpu.*),group(offset(h*.disk.*.*,1)))",
        ),
    ] {
        let (streamed, n, name_len) = held(&source, streamed_t);
        let (materialised, _, _) = held(&source, materialised_t);
        println!(
            "{streamed_t}: streamed {streamed} B, materialised {materialised} B, \
             names {names} B, output name {name_len} B"
        );
        assert_eq!(n, 1);
        assert!(
            streamed <= 2 * names + 4 * name_len + 8 * MIB,
            "{streamed_t}: streamed {streamed} B, names {names} B, name {name_len} B"
        );
        assert!(
            materialised > 2 * streamed,
            "{streamed_t}: materialised {materialised} B, streamed {streamed} B"
        );
    }

    // leaves held as 4-byte handles (the paths asked for a chunk at a time): what is
    // held grows by the handles only, not by the paths, when the glob matches three
    // times the series
    let growth = |ids: bool| {
        let small = Generated {
            series: 40_000,
            ids,
        };
        let large = Generated {
            series: 120_000,
            ids,
        };
        let (a, n, _) = held(&small, "sumSeries(h*.*.*)");
        let (b, m, _) = held(&large, "sumSeries(h*.*.*)");
        assert_eq!((n, m), (1, 1));
        println!("sumSeries(h*.*.*) with ids {ids}: {a} B at 40,000 series, {b} B at 120,000");
        b.saturating_sub(a) as f64 / 80_000.0
    };
    let by_id = growth(true);
    let by_path = growth(false);
    println!("held per extra series: {by_id:.1} B by id, {by_path:.1} B by path");
    // a 4-byte handle in a vector that doubles as it is collected
    assert!(by_id <= 16.0, "{by_id} B a series held with handles");
    assert!(
        by_path >= 2.0 * by_id.max(16.0),
        "{by_path} B a series held with paths"
    );
}
