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
struct Generated {
    series: usize,
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
    let source = Generated { series: 60_000 };
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
}
