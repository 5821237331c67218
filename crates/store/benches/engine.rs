//! A load test of the store alone (no parsing): ingest of many series from several
//! threads, then point reads, many-series reads and finds. Prints one line per figure.
//!
//! `cargo bench -p sumi-store --bench engine` (release). Knobs (environment):
//! `SERIES` (default 1000000), `POINTS` per series (10), `THREADS` (2), `BATCH` points
//! per append (5000), `DIR` (a temporary directory).

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sumi_model::glob::PathPattern;
use sumi_model::Sink;
use sumi_model::{Batch, ManualClock, SeriesRules, StorageAggregation, StorageSchemas};
use sumi_store::{FsyncPolicy, Store, StoreOptions};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn cpu_secs() -> f64 {
    // SAFETY: getrusage fills the struct we pass; nothing else is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn thread_cpu_secs() -> f64 {
    // SAFETY: getrusage fills the struct we pass; nothing else is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

const METRICS: [&str; 10] = [
    "cpu.user",
    "cpu.system",
    "cpu.idle",
    "loadavg.1",
    "memory.used",
    "disk.sda.reads",
    "disk.sda.writes",
    "interface.eth0.rx_bytes",
    "interface.eth0.tx_bytes",
    "tcp.established",
];

fn name(i: usize) -> String {
    // 100 metrics a host, like the shared bench harness
    let host = i / 100;
    let m = i % 100;
    format!("host{host:05}.{}.m{}", METRICS[m % 10], m / 10)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let series = env("SERIES", 1_000_000);
    let points = env("POINTS", 10);
    let threads = env("THREADS", 2);
    let batch_pts = env("BATCH", 5000);
    let dir = std::env::var("DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::env::temp_dir().join(format!("sumi-engine-bench-{}", std::process::id()))
        });
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<String> = (0..series).map(name).collect();
    let rss_names = status("VmRSS:");

    let now0: i64 = 1_800_000_000;
    let clock = ManualClock::new(now0);
    let mut opts = StoreOptions::new(&dir);
    opts.rules = SeriesRules {
        schemas: StorageSchemas::parse(
            "bench",
            "[all]\npattern = .*\nretentions = 10s:1d,1m:7d,1h:1y\n",
        )
        .unwrap(),
        aggregation: StorageAggregation::builtin(),
    };
    opts.fsync = FsyncPolicy::Interval(Duration::from_secs(1));
    let store = Store::open(opts.clone(), Arc::new(clock.clone())).unwrap();

    // create phase: one point per series
    let t = Instant::now();
    let cpu = cpu_secs();
    ingest(&store, &names, 1, threads, batch_pts, now0 - 3600);
    let create = t.elapsed();
    println!(
        "create: {series} series in {:.2} s = {:.0} series/s, {:.2} CPU s",
        create.as_secs_f64(),
        series as f64 / create.as_secs_f64(),
        cpu_secs() - cpu
    );

    // main phase: POINTS per series, time ordered, 10 s apart
    let t = Instant::now();
    let cpu = cpu_secs();
    ingest(&store, &names, points, threads, batch_pts, now0 - 3600 + 10);
    let main = t.elapsed();
    let cpu_main = cpu_secs() - cpu;
    let total = (series * points) as f64;
    println!(
        "ingest: {} points in {:.2} s = {:.0} points/s; {:.2} CPU s = {:.0} points/CPU-s ({} threads, {} points a batch)",
        series * points,
        main.as_secs_f64(),
        total / main.as_secs_f64(),
        cpu_main,
        total / cpu_main,
        threads,
        batch_pts
    );
    let rss = status("VmRSS:");
    let hwm = status("VmHWM:");
    println!(
        "memory: RSS {} MiB, peak {} MiB; minus the bench's name table: {:.0} bytes/series (RSS), {:.0} (peak)",
        rss / 1024,
        hwm / 1024,
        (rss.saturating_sub(rss_names) * 1024) as f64 / series as f64,
        (hwm.saturating_sub(rss_names) * 1024) as f64 / series as f64
    );
    let t = Instant::now();
    store.run_maintenance().unwrap();
    println!(
        "flush + compaction of the head: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let mut page = String::new();
    store.write_prometheus(&mut page);
    for l in page.lines().filter(|l| {
        l.starts_with("sumi_part_bytes")
            || l.starts_with("sumi_parts{")
            || l.starts_with("sumi_wal_bytes_total")
            || l.starts_with("sumi_flush_seconds")
    }) {
        println!("  {l}");
    }

    if let Ok(pat) = std::env::var("FIND_LOOP") {
        // for profiling: find the pattern over and over
        let p = PathPattern::parse(&pat);
        let t = Instant::now();
        let c = thread_cpu_secs();
        for _ in 0..100 {
            std::hint::black_box(store.find(&p));
        }
        println!(
            "find {pat:?} x 100: {:?} wall, {:.2} ms CPU each",
            t.elapsed() / 100,
            (thread_cpu_secs() - c) * 10.0
        );
        return;
    }
    // one series over a day at 10 s: 8640 points, in parts
    let day_series = &names[..1000.min(series)];
    let day: Vec<(i64, usize)> = (0..8640)
        .map(|i| (now0 - 86_400 + 10 + i * 10, i as usize))
        .collect();
    for chunk in day.chunks(500) {
        let mut b = Batch::new();
        for &(ts, i) in chunk {
            for n in day_series {
                b.push(n, ts, (i % 97) as f64 * 0.25);
            }
        }
        store.append(&b).unwrap();
    }
    store.run_maintenance().unwrap();
    let mut times = Vec::new();
    let c = thread_cpu_secs();
    for i in 0..200 {
        let t = Instant::now();
        let f = store
            .fetch(&day_series[i % day_series.len()], now0 - 86_400, now0, now0)
            .unwrap();
        times.push(t.elapsed());
        assert_eq!(f.values.len(), 8640);
        assert!(f.values.iter().flatten().count() >= 8630);
    }
    println!(
        "fetch 1 series x 24 h at 10 s (8640 points, in parts): median {:?}, mean CPU {:.1} us",
        median(times),
        (thread_cpu_secs() - c) * 1e6 / 200.0
    );
    let paths: Vec<&str> = day_series.iter().map(String::as_str).collect();
    let mut times = Vec::new();
    for _ in 0..9 {
        let t = Instant::now();
        let r = store.fetch_many(&paths, now0 - 86_400, now0, now0);
        times.push(t.elapsed());
        assert_eq!(r.len(), paths.len());
    }
    println!(
        "fetch_many {} series x 24 h: median {:?}",
        paths.len(),
        median(times)
    );
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for p in &paths {
            let _ = store.fetch(p, now0 - 86_400, now0, now0);
        }
        times.push(t.elapsed());
    }
    println!(
        "fetch {} series x 24 h one by one: median {:?}",
        paths.len(),
        median(times)
    );
    // the same, fresh in the head
    let mut times = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        let f = store
            .fetch(&names[(i * 7919) % series], now0 - 3600, now0, now0)
            .unwrap();
        times.push(t.elapsed());
        assert!(!f.values.is_empty());
    }
    println!(
        "fetch 1 series x 1 h (in parts after maintenance): median {:?}",
        median(times)
    );

    for pat in [
        "host0000*.cpu.user.m0",
        "host*.cpu.user.m0",
        "host00042.*.*.*",
        "*.disk.*.reads.m3",
        "host01234.**",
    ] {
        let p = PathPattern::parse(pat);
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        let mut n = 0;
        for _ in 0..7 {
            let t = Instant::now();
            let c = thread_cpu_secs();
            n = store.find(&p).len();
            times.push(t.elapsed());
            cpu.push(Duration::from_secs_f64(thread_cpu_secs() - c));
        }
        println!(
            "find {pat:?} over {series} series: {n} nodes, median {:?} ({:?} CPU)",
            median(times),
            median(cpu)
        );
    }
    // a day later: every level-0 partition is closed, rolled up into level 1, dropped
    clock.set(now0 + 86_400 + 4 * 3600);
    let hwm0 = status("VmHWM:");
    let t = Instant::now();
    let cpu = cpu_secs();
    store.run_maintenance().unwrap();
    let mut page = String::new();
    store.write_prometheus(&mut page);
    let get = |name: &str| {
        page.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
            .unwrap_or_default()
    };
    println!(
        "rollup + retention + compaction a day later: {:.2} s, {:.2} CPU s; rollups {}, points {}, partitions dropped {}; peak RSS {} -> {} MiB",
        t.elapsed().as_secs_f64(),
        cpu_secs() - cpu,
        get("sumi_rollups_total "),
        get("sumi_rollup_points_total "),
        get("sumi_retention_drops_total "),
        hwm0 / 1024,
        status("VmHWM:") / 1024
    );
    let f = store
        .fetch(&names[0], now0 - 86_400, now0, now0 + 86_400 + 4 * 3600)
        .unwrap();
    println!(
        "  after: {} of {} one-minute slots known for {}",
        f.values.iter().flatten().count(),
        f.values.len(),
        names[0]
    );
    let t = Instant::now();
    store.close().unwrap();
    println!("close: {:.2} s", t.elapsed().as_secs_f64());
    drop(store);
    let t = Instant::now();
    let store = Store::open(opts, Arc::new(clock)).unwrap();
    println!(
        "reopen: {:.2} s ({} series)",
        t.elapsed().as_secs_f64(),
        store.series_count()
    );
    store.close().unwrap();
    let du = dir_size(&dir);
    println!("disk: {} MiB", du >> 20);
    let _ = std::fs::remove_dir_all(&dir);
}

fn dir_size(p: &std::path::Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let m = e.metadata().unwrap();
            n += if m.is_dir() {
                dir_size(&e.path())
            } else {
                m.len()
            };
        }
    }
    n
}

/// Appends `points` points per series, time ordered (every series at t, then t + 10),
/// split by series range over `threads` threads like connections split by host.
fn ingest(
    store: &Arc<Store>,
    names: &[String],
    points: usize,
    threads: usize,
    batch_pts: usize,
    t0: i64,
) {
    let next = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for th in 0..threads {
            let store = store.clone();
            let next = next.clone();
            s.spawn(move || {
                let _ = next;
                let per = names.len().div_ceil(threads);
                let mine = &names[(th * per).min(names.len())..((th + 1) * per).min(names.len())];
                let mut b = Batch::with_capacity(batch_pts, batch_pts * 32);
                for p in 0..points {
                    let ts = t0 + p as i64 * 10;
                    for (i, n) in mine.iter().enumerate() {
                        b.push(n, ts, ((i + p) % 1000) as f64 * 0.5);
                        if b.len() >= batch_pts {
                            store.append(&b).unwrap();
                            b.clear();
                        }
                    }
                }
                if !b.is_empty() {
                    store.append(&b).unwrap();
                }
            });
        }
    });
}
