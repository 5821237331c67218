//! Points per CPU-second of each way in, on the same points: carbon plaintext (the
//! reference), carbon pickle, the JSON bulk body and Prometheus remote write.
//!
//! The points are those of `benches/ingest.rs` (`host00042.disk.sda.write_bytes12`,
//! 100 metrics per host, 85 integer values and 15 with two decimals, one timestamp),
//! written the way each client writes them:
//! - plaintext: `name value ts\n` lines, read in 64 KiB pieces;
//! - pickle: carbon-relay's messages, `pickle.dumps(list, protocol=2)` of
//!   `(str, (int, float))` tuples, 500 per message (`MAX_DATAPOINTS_PER_MESSAGE`),
//!   each behind its 4-byte length;
//! - JSON: Mackerel's `[{"name","time","value"}]`, 10,000 per body, plain and gzip;
//! - remote write: one series per point (`disk_sda_write_bytes12{instance="host00042",
//!   job="node"}`, one sample, as a scrape sends them), 2,000 samples per request
//!   (`max_samples_per_send`), snappy. Its names carry two tags, so it does more work
//!   per point than the others.
//!
//! `cargo bench -p sumi-ingest --bench protocols` prints, per stage, the median of 7
//! runs (5 for TCP) in points per CPU-second of the thread (memory stages) or of the
//! server's threads (TCP stages), and the ratio to plaintext. `SUMI_BENCH_HOSTS`
//! (default 10,000 → 1 M points) changes the size; arguments pick stages by name.
//!
//! Measured 2026-11-22 on the shared 2-core dev machine (load average 6 to 12 from
//! other builds; CPU-time figures hold on a busy machine), 1 M points:
//!
//! | stage | M points per CPU-s | of plaintext |
//! | --- | --- | --- |
//! | plaintext: frame + parse + batch | 11.36 | 1 |
//! | pickle: frame + unpickle + batch | 12.73 | 1.12 |
//! | JSON bulk: parse + names + batch | 6.58 | 0.58 |
//! | JSON bulk, gzip: inflate + parse + names + batch | 4.09 | 0.36 |
//! | remote write: snappy + protobuf + tagged names + batch | 4.53 | 0.40 |
//! | TCP listener, plaintext (no-op sink) | 8.71 | 1 |
//! | TCP listener, pickle (no-op sink) | 9.84 | 1.13 |
//!
//! Pickle is faster than plaintext: its numbers are binary and its names come with
//! their length. JSON pays for its bigger text and number syntax; gzip adds inflate
//! (~850 MB/s of output with flate2's default backend); remote write builds a tagged
//! name (escape checks, canonical sort) for every series.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sumi_ingest::frame::{Frame, LineReader};
use sumi_ingest::pickle::{FrameReader, FrameStatus, PickleLimits, Unpickler};
use sumi_ingest::{
    decode_remote_write, parse_json_bulk, parse_line, serve_pickle, serve_tcp, AppendMode,
    BulkLimits, IngestStats, LocalCounts, PickleOptions, PlaintextOptions, WriteLimits,
};
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

const TS: i64 = 1_700_000_000;

/// One point: host, metric, value, and the value's text as plaintext writes it.
struct Pt {
    host: String,
    metric: String,
    value: f64,
    text: String,
}

fn points(hosts: usize) -> Vec<Pt> {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut out = Vec::with_capacity(hosts * 100);
    for h in 0..hosts {
        for j in 0..100 {
            let r = next();
            let text = if j < 15 {
                format!("{}.{:02}", r % 100, (r >> 8) % 100)
            } else {
                format!("{}", r % 10_000_000_000)
            };
            out.push(Pt {
                host: format!("host{h:05}"),
                metric: format!("{}{j}", METRICS[j % METRICS.len()]),
                value: text.parse().unwrap_or(0.0),
                text,
            });
        }
    }
    out
}

fn plaintext(pts: &[Pt]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pts {
        let _ = writeln!(out, "{}.{} {} {TS}", p.host, p.metric, p.text);
    }
    out
}

/// carbon-relay's stream: protocol 2 pickles of 500 `(name, (ts, value))` tuples,
/// opcode for opcode what CPython writes for them.
fn pickle_stream(pts: &[Pt]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in pts.chunks(500) {
        let mut m: Vec<u8> = vec![0x80, 2, b']', b'q', 0];
        let mut memo: u32 = 1;
        let mut put = |m: &mut Vec<u8>| {
            if memo < 256 {
                m.extend_from_slice(&[b'q', memo as u8]);
            } else {
                m.push(b'r');
                m.extend_from_slice(&memo.to_le_bytes());
            }
            memo += 1;
        };
        for batch in chunk.chunks(1000) {
            m.push(b'(');
            for p in batch {
                let name = format!("{}.{}", p.host, p.metric);
                m.push(b'X');
                m.extend_from_slice(&(name.len() as u32).to_le_bytes());
                m.extend_from_slice(name.as_bytes());
                put(&mut m);
                m.push(b'J');
                m.extend_from_slice(&(TS as i32).to_le_bytes());
                m.push(b'G');
                m.extend_from_slice(&p.value.to_be_bytes());
                m.push(0x86);
                put(&mut m);
                m.push(0x86);
                put(&mut m);
            }
            m.push(b'e');
        }
        m.push(b'.');
        out.extend_from_slice(&(m.len() as u32).to_be_bytes());
        out.extend_from_slice(&m);
    }
    out
}

fn json_bodies(pts: &[Pt]) -> Vec<Vec<u8>> {
    pts.chunks(10_000)
        .map(|chunk| {
            let mut b = b"[".to_vec();
            for (i, p) in chunk.iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                let _ = write!(
                    b,
                    r#"{{"name":"{}.{}","time":{TS},"value":{}}}"#,
                    p.host, p.metric, p.text
                );
            }
            b.push(b']');
            b
        })
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn pb_bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn remote_write_requests(pts: &[Pt]) -> Vec<Vec<u8>> {
    pts.chunks(2000)
        .map(|chunk| {
            let mut req = Vec::new();
            for p in chunk {
                let mut series = Vec::new();
                for (k, v) in [
                    ("__name__", p.metric.replace('.', "_")),
                    ("instance", p.host.clone()),
                    ("job", "node".to_string()),
                ] {
                    let mut l = Vec::new();
                    pb_bytes(&mut l, 1, k.as_bytes());
                    pb_bytes(&mut l, 2, v.as_bytes());
                    pb_bytes(&mut series, 1, &l);
                }
                let mut s = vec![0x09];
                s.extend_from_slice(&p.value.to_bits().to_le_bytes());
                s.push(0x10);
                varint(&mut s, (TS * 1000) as u64);
                pb_bytes(&mut series, 2, &s);
                pb_bytes(&mut req, 1, &series);
            }
            snap::raw::Encoder::new()
                .compress_vec(&req)
                .unwrap_or_default()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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

fn thread_cpu() -> Duration {
    schedstat(Path::new("/proc/thread-self/schedstat"))
}

fn process_cpu() -> Duration {
    std::fs::read_dir("/proc/self/task")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| schedstat(&e.path().join("schedstat")))
                .sum()
        })
        .unwrap_or_default()
}

/// Runs `f` (which returns the points it produced) 7 times on this thread; points per
/// CPU-second, median.
fn measure(mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut rates = Vec::new();
    let mut n = 0;
    for _ in 0..7 {
        let t0 = thread_cpu();
        n = f();
        let secs = (thread_cpu() - t0).as_secs_f64().max(1e-9);
        rates.push(n as f64 / secs);
    }
    (median(rates), n)
}

fn report(stage: &str, rate: f64, points: usize, bytes: usize, reference: Option<f64>) {
    let ratio = reference.map_or(String::new(), |r| {
        format!("  {:>5.2} of plaintext", rate / r)
    });
    println!(
        "{stage:<46} {:>6.2} M points/CPU-s{ratio}   ({points} points, {:.1} MB)",
        rate / 1e6,
        bytes as f64 / 1e6
    );
}

fn bench_plaintext(data: &[u8]) -> f64 {
    let (rate, n) = measure(|| {
        let mut reader = LineReader::new(64 * 1024, 16 * 1024);
        let mut batch = Batch::with_capacity(8192, 8192 * 40);
        let mut rest = data;
        let mut n = 0;
        while !rest.is_empty() {
            let space = reader.read_space();
            let k = space.len().min(rest.len());
            space[..k].copy_from_slice(&rest[..k]);
            reader.commit(k);
            rest = &rest[k..];
            while let Some(Frame::Line(l)) = reader.next_frame() {
                if let Ok(p) = parse_line(l, 0) {
                    batch.push(&p.name, p.ts, p.value);
                    n += 1;
                    if batch.len() >= 8192 {
                        std::hint::black_box(batch.len());
                        batch.clear();
                    }
                }
            }
        }
        n
    });
    report("plaintext: frame+parse+batch", rate, n, data.len(), None);
    rate
}

fn bench_pickle(data: &[u8], plain: f64) {
    let (rate, n) = measure(|| {
        let mut frames = FrameReader::new(64 * 1024, 1 << 20);
        let mut vm = Unpickler::new(PickleLimits::default());
        let mut batch = Batch::with_capacity(8192, 8192 * 40);
        let mut counts = LocalCounts::default();
        let mut rest = data;
        while !rest.is_empty() {
            let space = frames.read_space();
            let k = space.len().min(rest.len());
            space[..k].copy_from_slice(&rest[..k]);
            frames.commit(k);
            rest = &rest[k..];
            while frames.status() == FrameStatus::Ready {
                let _ = vm.decode_into(frames.frame(), 0, &mut batch, &mut counts);
                frames.consume();
                if batch.len() >= 8192 {
                    std::hint::black_box(batch.len());
                    batch.clear();
                }
            }
        }
        counts.received as usize
    });
    report(
        "pickle: frame+unpickle+batch",
        rate,
        n,
        data.len(),
        Some(plain),
    );
}

fn bench_json(bodies: &[Vec<u8>], encoding: Option<&str>, label: &str, plain: f64) {
    let limits = BulkLimits::default();
    let bytes = bodies.iter().map(Vec::len).sum();
    let (rate, n) = measure(|| {
        let mut batch = Batch::with_capacity(10_000, 10_000 * 40);
        let mut n = 0;
        for b in bodies {
            batch.clear();
            n += parse_json_bulk(b, encoding, 0, &mut batch, &limits).map_or(0, |o| o.points);
        }
        n
    });
    report(label, rate, n, bytes, Some(plain));
}

fn bench_remote_write(reqs: &[Vec<u8>], plain: f64) {
    let limits = WriteLimits::default();
    let bytes = reqs.iter().map(Vec::len).sum();
    let (rate, n) = measure(|| {
        let mut batch = Batch::with_capacity(2000, 2000 * 60);
        let mut n = 0;
        for r in reqs {
            batch.clear();
            n += decode_remote_write(r, &mut batch, &limits).map_or(0, |o| o.points);
        }
        n
    });
    report(
        "remote write: snappy+protobuf+names+batch",
        rate,
        n,
        bytes,
        Some(plain),
    );
}

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

/// The real listener on 127.0.0.1 (current-thread runtime, inline appends), a client
/// thread writing the stream; points per CPU-second of the server's threads.
fn bench_tcp(data: &Arc<Vec<u8>>, points: u64, pickle: bool) -> (f64, usize) {
    let mut rates = Vec::new();
    for _ in 0..5 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let sink = Arc::new(NoopSink::default());
        let stats = Arc::new(IngestStats::default());
        let (stop, rx) = tokio::sync::watch::channel(false);
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let common = PlaintextOptions {
            append_mode: AppendMode::Inline,
            ..PlaintextOptions::default()
        };
        let server = if pickle {
            let opts = PickleOptions {
                listener: common,
                ..PickleOptions::default()
            };
            rt.spawn(serve_pickle(listener, sink.clone(), opts, stats, rx))
        } else {
            rt.spawn(serve_tcp(listener, sink.clone(), common, stats, rx))
        };
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
            while sink2.points.load(Ordering::Relaxed) < points {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        });
        // The client thread has ended: the live threads are the server's.
        let _client_cpu = client.join().expect("client");
        let server_cpu = process_cpu().saturating_sub(cpu0);
        let _ = stop.send(true);
        rt.block_on(server).expect("server");
        rates.push(points as f64 / server_cpu.as_secs_f64().max(1e-9));
    }
    (median(rates), points as usize)
}

fn main() {
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
    let pts = points(hosts);
    let plain = plaintext(&pts);
    let pickled = pickle_stream(&pts);
    let reference = bench_plaintext(&plain);
    if wants("pickle") {
        bench_pickle(&pickled, reference);
    }
    if wants("json") {
        let bodies = json_bodies(&pts);
        bench_json(&bodies, None, "json: parse+names+batch", reference);
        let gz: Vec<Vec<u8>> = bodies.iter().map(|b| gzip(b)).collect();
        bench_json(
            &gz,
            Some("gzip"),
            "json gzip: inflate+parse+names+batch",
            reference,
        );
    }
    if wants("remote") {
        bench_remote_write(&remote_write_requests(&pts), reference);
    }
    if wants("tcp") {
        let n = pts.len() as u64;
        let (plain_tcp, _) = bench_tcp(&Arc::new(plain.clone()), n, false);
        report(
            "tcp plaintext (listener, no-op sink)",
            plain_tcp,
            n as usize,
            plain.len(),
            None,
        );
        let (pickle_tcp, _) = bench_tcp(&Arc::new(pickled.clone()), n, true);
        report(
            "tcp pickle (listener, no-op sink)",
            pickle_tcp,
            n as usize,
            pickled.len(),
            Some(plain_tcp),
        );
    }
}
