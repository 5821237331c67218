//! Ingest throughput on lines shaped like `shared/bench/tool` writes them
//! (`host00042.disk.sda.write_bytes 123456789 1700000000`: 100 metrics per host, 85
//! integer values and 15 with two decimals).
//!
//! `cargo bench -p sumi-ingest --bench ingest` prints, for each stage, the median of
//! several runs in lines/s and MB/s:
//! - `parse`: [`parse_line`] alone over pre-split lines;
//! - `frame+parse+batch`: [`LineReader`] over the bytes in 64 KiB reads, points pushed
//!   into a reused [`Batch`] cleared every 8,192 points;
//! - `tcp ...`: the real listener on 127.0.0.1 with a no-op sink, a client thread
//!   writing the payload with blocking writes; lines per second of *server CPU time*
//!   (every thread of the process but the client's), so the figure is per core.
//!
//! Measured 2026-11-22 on the shared 2-core dev machine (load average ~9 from other
//! builds; CPU-time figures are robust to that), 1 M lines, 51.9 MB:
//!
//! | stage | M lines/s per core | MB/s |
//! | --- | --- | --- |
//! | parse | 13.99 | 727 |
//! | frame+parse+batch (memory) | 10.92 | 567 |
//! | tcp current_thread, inline, 64 KiB | 8.96 | 466 |
//! | tcp current_thread, inline, 256 KiB | 8.90 | 462 |
//! | tcp multi_thread(1), inline, 64 KiB | 8.45 | 439 |
//! | tcp multi_thread(1), block_in_place, 64 KiB | 8.10 | 421 |
//!
//! Set `SUMI_BENCH_HOSTS` (default 10,000 → 1 M lines) to change the size. Times are
//! CPU time of the working threads (from `/proc/.../schedstat`), so figures are per core
//! and hold on a busy machine.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sumi_ingest::frame::{Frame, LineReader};
use sumi_ingest::{parse_line, serve_tcp, AppendMode, IngestStats, PlaintextOptions};
use sumi_model::{AppendOutcome, Batch, Sink, SinkError};

const METRICS: [&str; 20] = [
    "cpu.user",
    "cpu.system",
    "loadavg.loadavg1",
    "memory.used",
    "memory.cached",
    "disk.sda.reads",
    "disk.sda.write_bytes",
    "disk.sdb.io_time",
    "filesystem.root.used",
    "filesystem.data.inodes_used",
    "interface.eth0.rx_bytes",
    "interface.eth1.tx_packets",
    "processes.running",
    "tcp.established",
    "custom.nginx.requests",
    "custom.mysql.errors",
    "custom.redis.latency_p99",
    "custom.app.connections",
    "custom.worker.queue03",
    "memory.swap_free",
];

/// The payload: `hosts * 100` lines at one timestamp.
fn payload(hosts: usize) -> Vec<u8> {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut out = Vec::with_capacity(hosts * 100 * 52);
    for h in 0..hosts {
        for j in 0..100 {
            let name = METRICS[j % METRICS.len()];
            let r = next();
            let _ = if j % 100 < 15 {
                writeln!(
                    out,
                    "host{h:05}.{name}{j} {}.{:02} 1700000000",
                    r % 100,
                    (r >> 8) % 100
                )
            } else {
                writeln!(
                    out,
                    "host{h:05}.{name}{j} {} 1700000000",
                    r % 10_000_000_000
                )
            };
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn report(stage: &str, lines: usize, bytes: usize, secs: &[f64]) {
    let s = median(secs.to_vec());
    println!(
        "{stage:<44} {:>7.2} M lines/s {:>8.1} MB/s   (median of {}, {lines} lines, {:.1} MB)",
        lines as f64 / s / 1e6,
        bytes as f64 / s / 1e6,
        secs.len(),
        bytes as f64 / 1e6
    );
}

fn bench_parse(data: &[u8]) {
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut secs = Vec::new();
    for _ in 0..7 {
        let start = thread_cpu();
        let mut sum = 0.0;
        let mut ok = 0usize;
        for l in &lines {
            if let Ok(p) = parse_line(l, 0) {
                sum += p.value;
                ok += p.name.len();
            }
        }
        secs.push((thread_cpu() - start).as_secs_f64());
        std::hint::black_box((sum, ok));
    }
    report("parse (parse_line)", lines.len(), data.len(), &secs);
}

fn bench_frame_parse_batch(data: &[u8]) {
    let mut secs = Vec::new();
    let mut lines = 0;
    for _ in 0..7 {
        let start = thread_cpu();
        let mut reader = LineReader::new(64 * 1024, 16 * 1024);
        let mut batch = Batch::with_capacity(8192, 8192 * 40);
        let mut rest = data;
        lines = 0;
        while !rest.is_empty() {
            let space = reader.read_space();
            let n = space.len().min(rest.len());
            space[..n].copy_from_slice(&rest[..n]);
            reader.commit(n);
            rest = &rest[n..];
            while let Some(Frame::Line(l)) = reader.next_frame() {
                if let Ok(p) = parse_line(l, 0) {
                    batch.push(&p.name, p.ts, p.value);
                    lines += 1;
                    if batch.len() >= 8192 {
                        std::hint::black_box(batch.len());
                        batch.clear();
                    }
                }
            }
        }
        secs.push((thread_cpu() - start).as_secs_f64());
    }
    report("frame+parse+batch (memory)", lines, data.len(), &secs);
}

/// Counts points and does nothing else.
#[derive(Default)]
struct NoopSink {
    points: AtomicU64,
}

impl Sink for NoopSink {
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        self.points.fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(AppendOutcome {
            accepted: batch.len() as u64,
            ..Default::default()
        })
    }
}

/// CPU time on a core of one thread, from its `schedstat` (ns).
fn schedstat(path: &Path) -> Duration {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    Duration::from_nanos(
        s.split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0),
    )
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    schedstat(Path::new("/proc/thread-self/schedstat"))
}

/// CPU time of the threads of this process alive now (threads that ended are not
/// counted: the client thread reports its own).
fn process_cpu() -> Duration {
    std::fs::read_dir("/proc/self/task")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| schedstat(&e.path().join("schedstat")))
                .sum()
        })
        .unwrap_or_default()
}

fn bench_tcp(data: &Arc<Vec<u8>>, label: &str, multi_thread: bool, opts: PlaintextOptions) {
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u64;
    let mut secs = Vec::new();
    for _ in 0..5 {
        let rt = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .expect("runtime");
        let sink = Arc::new(NoopSink::default());
        let stats = Arc::new(IngestStats::default());
        let (stop, rx) = tokio::sync::watch::channel(false);
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = rt.spawn(serve_tcp(listener, sink.clone(), opts.clone(), stats, rx));
        let payload = Arc::clone(data);
        let cpu0 = process_cpu();
        let client = std::thread::spawn(move || {
            let t0 = thread_cpu();
            let mut c = std::net::TcpStream::connect(addr).expect("connect");
            c.write_all(&payload).expect("write");
            drop(c);
            thread_cpu() - t0
        });
        let sink2 = sink.clone();
        rt.block_on(async move {
            while sink2.points.load(Ordering::Relaxed) < lines {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        });
        let _client_cpu = client.join().expect("client");
        let server_cpu = process_cpu().saturating_sub(cpu0);
        let _ = stop.send(true);
        rt.block_on(server).expect("server");
        // per core: CPU seconds of the server side
        secs.push(server_cpu.as_secs_f64().max(1e-6));
    }
    report(label, lines as usize, data.len(), &secs);
}

fn main() {
    // `cargo bench` passes `--bench`; other arguments pick stages by name.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wants =
        |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    let hosts = std::env::var("SUMI_BENCH_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let data = Arc::new(payload(hosts));
    if wants("parse") {
        bench_parse(&data);
    }
    if wants("frame") {
        bench_frame_parse_batch(&data);
    }
    if wants("tcp") {
        let inline = PlaintextOptions {
            append_mode: AppendMode::Inline,
            ..PlaintextOptions::default()
        };
        bench_tcp(
            &data,
            "tcp current_thread, inline, 64 KiB",
            false,
            inline.clone(),
        );
        let big = PlaintextOptions {
            read_buffer_bytes: 256 * 1024,
            ..inline.clone()
        };
        bench_tcp(&data, "tcp current_thread, inline, 256 KiB", false, big);
        bench_tcp(&data, "tcp multi_thread(1), inline, 64 KiB", true, inline);
        bench_tcp(
            &data,
            "tcp multi_thread(1), block_in_place, 64 KiB",
            true,
            PlaintextOptions::default(),
        );
    }
}
