//! The running relay: listeners → parse → aggregate → route → one queue per
//! destination → one sender per destination; `/metrics` on the HTTP port.
//!
//! Threads: one per listener (accept), one per client connection (read, parse, route,
//! append), one per destination (read the queue, send, acknowledge), one for the
//! aggregator's clock, one for `/metrics`. A connection appends what one read brought
//! as one record per destination, so the queue is written in large pieces.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use sumi_ingest::pickle::{FrameReader, FrameStatus, PickleLimits, Unpickler};

use crate::aggregate::Aggregator;
use crate::config::{Config, Protocol, Routing};
use crate::hashing::{Destination, HashRing};
use crate::queue::{Batch, DiskQueue};
use crate::rules::RelayRule;
use crate::wire::{push_line, push_pickle};

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Queue(#[from] crate::queue::QueueError),
    #[error("{0}")]
    Config(String),
    #[error("cannot write the ready file {path}: {source}")]
    Ready {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Largest line read; a longer one is refused and counted (as sumi serve does).
const MAX_LINE_BYTES: usize = 64 * 1024;
/// Read size of a client connection.
const READ_BYTES: usize = 256 * 1024;
/// How much of a queue a sender takes per write.
const SEND_BATCH_BYTES: usize = 1 << 20;

struct Output {
    label: String,
    dest: Destination,
    protocol: Protocol,
    queue: DiskQueue,
    up: AtomicBool,
    send_errors: AtomicU64,
}

enum Router {
    Hash {
        ring: HashRing,
        replication_factor: usize,
        diverse: bool,
    },
    Rules(Vec<RelayRule>, Vec<Destination>),
}

#[derive(Default)]
struct Counters {
    received_plaintext: AtomicU64,
    received_pickle: AtomicU64,
    rejected: AtomicU64,
    unrouted: AtomicU64,
    aggregates: AtomicU64,
    queue_errors: AtomicU64,
}

struct Shared {
    outputs: Vec<Output>,
    /// How many of `outputs` the router places on (the sumi output, if any, is last).
    routed: usize,
    router: Router,
    aggregator: Option<Mutex<Aggregator>>,
    forward_all: bool,
    counters: Counters,
    shutdown: AtomicBool,
}

/// A started relay: its bound addresses, and a handle to stop it.
pub struct Relay {
    shared: Arc<Shared>,
    pub plaintext: Vec<String>,
    pub pickle: Vec<String>,
    pub http: Option<String>,
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn label_of(d: &Destination) -> String {
    d.to_string()
}

fn dir_name(prefix: &str, d: &Destination) -> String {
    let s: String = d
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}{s}")
}

impl Relay {
    /// Opens the queues, binds every listener and starts every thread.
    pub fn start(config: Config) -> Result<Relay, RelayError> {
        let mut outputs = Vec::new();
        for (d, p) in &config.destinations {
            outputs.push(Output {
                label: label_of(d),
                dest: d.clone(),
                protocol: *p,
                queue: DiskQueue::open(
                    &config.queue_dir.join(dir_name("dest-", d)),
                    config.queue.clone(),
                )?,
                up: AtomicBool::new(false),
                send_errors: AtomicU64::new(0),
            });
        }
        let routed = outputs.len();
        if let Some((d, p)) = &config.sumi {
            outputs.push(Output {
                label: format!("sumi {}", label_of(d)),
                dest: d.clone(),
                protocol: *p,
                queue: DiskQueue::open(
                    &config.queue_dir.join(dir_name("sumi-", d)),
                    config.queue.clone(),
                )?,
                up: AtomicBool::new(false),
                send_errors: AtomicU64::new(0),
            });
        }
        let router = match config.routing {
            Routing::ConsistentHashing {
                replication_factor,
                diverse_replicas,
                hash_type,
            } => {
                let dests: Vec<Destination> =
                    config.destinations.iter().map(|d| d.0.clone()).collect();
                Router::Hash {
                    ring: HashRing::new(&dests, hash_type).map_err(RelayError::Config)?,
                    replication_factor,
                    diverse: diverse_replicas,
                }
            }
            Routing::Rules(r) => {
                Router::Rules(r, config.destinations.iter().map(|d| d.0.clone()).collect())
            }
        };
        let aggregator = (!config.aggregation.is_empty())
            .then(|| Mutex::new(Aggregator::new(config.aggregation)));
        let shared = Arc::new(Shared {
            outputs,
            routed,
            router,
            aggregator,
            forward_all: config.forward_all,
            counters: Counters::default(),
            shutdown: AtomicBool::new(false),
        });

        let bind = |addr: &String| {
            TcpListener::bind(addr).map_err(|source| RelayError::Listen {
                addr: addr.clone(),
                source,
            })
        };
        let mut relay = Relay {
            shared: shared.clone(),
            plaintext: Vec::new(),
            pickle: Vec::new(),
            http: None,
        };
        let mut listeners = Vec::new();
        for a in &config.plaintext {
            let l = bind(a)?;
            relay.plaintext.push(local(&l));
            listeners.push((l, false));
        }
        for a in &config.pickle {
            let l = bind(a)?;
            relay.pickle.push(local(&l));
            listeners.push((l, true));
        }
        let http = config.http.as_ref().map(bind).transpose()?;
        relay.http = http.as_ref().map(local);

        for i in 0..shared.outputs.len() {
            let s = shared.clone();
            std::thread::Builder::new()
                .name(format!("relay-send-{i}"))
                .spawn(move || sender(&s, i))
                .map_err(|e| RelayError::Config(format!("cannot start a thread: {e}")))?;
        }
        for (l, pickle) in listeners {
            let s = shared.clone();
            std::thread::spawn(move || accept_loop(&s, l, pickle));
        }
        if let Some(l) = http {
            let s = shared.clone();
            std::thread::spawn(move || metrics_loop(&s, l));
        }
        if shared.aggregator.is_some() {
            let s = shared.clone();
            std::thread::spawn(move || aggregator_clock(&s));
        }
        if let Some(path) = &config.ready_file {
            let list = |v: &[String]| {
                v.iter()
                    .map(|a| format!("\"{a}\""))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let text = format!(
                "{{\"plaintext\":[{}],\"pickle\":[{}],\"http\":{}}}\n",
                list(&relay.plaintext),
                list(&relay.pickle),
                relay
                    .http
                    .as_ref()
                    .map_or("null".to_string(), |h| format!("\"{h}\""))
            );
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text)
                .and_then(|()| std::fs::rename(&tmp, path))
                .map_err(|source| RelayError::Ready {
                    path: path.clone(),
                    source,
                })?;
        }
        tracing::info!(
            plaintext = ?relay.plaintext, pickle = ?relay.pickle, http = ?relay.http,
            destinations = shared.outputs.len(), "relay running"
        );
        Ok(relay)
    }

    /// The `/metrics` text now.
    pub fn metrics_text(&self) -> String {
        metrics_text(&self.shared)
    }

    /// Stops the senders and listeners (what is queued stays queued for the next run).
    pub fn stop(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for o in &self.shared.outputs {
            o.queue.close();
        }
    }
}

fn local(l: &TcpListener) -> String {
    l.local_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string())
}

/// Names remembered per connection with their ring placement: a metric name comes
/// back every interval, and hashing it (MD5) was the largest cost of a point.
const PLACEMENT_CACHE_NAMES: usize = 1 << 18;

/// Up to 4 destination indices.
#[derive(Clone, Copy)]
struct Placement {
    len: u8,
    at: [u16; 4],
}

type PlacementCache = hashbrown::HashMap<Box<[u8]>, Placement, foldhash::fast::RandomState>;

/// Points on their way into the queues: one buffer per output.
struct Staging {
    bufs: Vec<(Vec<u8>, u32)>,
    place: Vec<usize>,
    line: Vec<u8>,
    cache: PlacementCache,
}

impl Staging {
    fn new(n: usize) -> Staging {
        Staging {
            bufs: (0..n).map(|_| (Vec::with_capacity(64 * 1024), 0)).collect(),
            place: Vec::with_capacity(8),
            line: Vec::with_capacity(256),
            cache: PlacementCache::default(),
        }
    }

    /// Routes one point (aggregating it first when rules are set).
    fn point(&mut self, s: &Shared, name: &str, ts: i64, value: f64) {
        if let Some(agg) = &s.aggregator {
            if !agg.lock().input(name, ts, value, now_secs()) || !s.forward_all {
                return;
            }
        }
        self.route(s, name, ts, value);
    }

    fn route(&mut self, s: &Shared, name: &str, ts: i64, value: f64) {
        self.line.clear();
        push_line(&mut self.line, name.as_bytes(), ts, value);
        match &s.router {
            Router::Hash {
                ring,
                replication_factor,
                diverse,
            } => {
                if let Some(p) = self.cache.get(name.as_bytes()) {
                    self.place.clear();
                    self.place
                        .extend(p.at[..usize::from(p.len)].iter().map(|&i| usize::from(i)));
                } else {
                    ring.place(
                        name.as_bytes(),
                        *replication_factor,
                        *diverse,
                        &mut self.place,
                    );
                    if self.place.len() <= 4 && self.place.iter().all(|&i| i <= 0xffff) {
                        if self.cache.len() >= PLACEMENT_CACHE_NAMES {
                            self.cache.clear();
                        }
                        let mut at = [0u16; 4];
                        for (a, &i) in at.iter_mut().zip(&self.place) {
                            *a = i as u16;
                        }
                        let p = Placement {
                            len: self.place.len() as u8,
                            at,
                        };
                        self.cache.insert(name.as_bytes().into(), p);
                    }
                }
            }
            Router::Rules(rules, known) => {
                crate::rules::route(rules, known, name.as_bytes(), &mut self.place)
            }
        }
        if self.place.is_empty() && s.routed > 0 {
            s.counters.unrouted.fetch_add(1, Ordering::Relaxed);
        }
        for &i in &self.place {
            let b = &mut self.bufs[i];
            b.0.extend_from_slice(&self.line);
            b.1 += 1;
        }
        if s.outputs.len() > s.routed {
            let b = &mut self.bufs[s.routed];
            b.0.extend_from_slice(&self.line);
            b.1 += 1;
        }
    }

    /// Appends what is staged to the queues; only now are the points accepted.
    fn flush(&mut self, s: &Shared) {
        for (o, (buf, n)) in s.outputs.iter().zip(self.bufs.iter_mut()) {
            if *n == 0 {
                continue;
            }
            if let Err(e) = o.queue.append(buf, *n) {
                s.counters
                    .queue_errors
                    .fetch_add(u64::from(*n), Ordering::Relaxed);
                o.queue
                    .stats
                    .dropped_points
                    .fetch_add(u64::from(*n), Ordering::Relaxed);
                tracing::error!(destination = %o.label, error = %e, "relay: cannot queue points; dropped");
            }
            buf.clear();
            *n = 0;
        }
    }
}

fn accept_loop(s: &Arc<Shared>, l: TcpListener, pickle: bool) {
    for conn in l.incoming() {
        if s.shutdown.load(Ordering::Relaxed) {
            return;
        }
        let Ok(conn) = conn else { continue };
        let s = s.clone();
        std::thread::spawn(move || {
            let r = if pickle {
                serve_pickle(&s, conn)
            } else {
                serve_plaintext(&s, conn)
            };
            if let Err(e) = r {
                tracing::debug!(error = %e, "relay: client connection ended");
            }
        });
    }
}

fn serve_plaintext(s: &Shared, mut conn: TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; READ_BYTES];
    let mut have = 0usize;
    let mut staging = Staging::new(s.outputs.len());
    let mut skipping = false;
    loop {
        if have == buf.len() {
            // A line longer than the buffer: refuse it and skip to its end.
            if !skipping {
                s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            }
            skipping = true;
            have = 0;
        }
        let n = conn.read(&mut buf[have..])?;
        let eof = n == 0;
        have += n;
        let now = now_secs();
        let mut start = 0;
        let mut received = 0u64;
        while let Some(nl) = memchr::memchr(b'\n', &buf[start..have]) {
            let line = &buf[start..start + nl];
            start += nl + 1;
            if skipping {
                skipping = false;
                continue;
            }
            plaintext_line(s, &mut staging, line, now, &mut received);
        }
        if eof && start < have && !skipping {
            let line = &buf[start..have];
            plaintext_line(s, &mut staging, line, now, &mut received);
            start = have;
        }
        s.counters
            .received_plaintext
            .fetch_add(received, Ordering::Relaxed);
        staging.flush(s);
        buf.copy_within(start..have, 0);
        have -= start;
        if eof {
            return Ok(());
        }
    }
}

fn plaintext_line(s: &Shared, staging: &mut Staging, line: &[u8], now: i64, received: &mut u64) {
    if line.len() > MAX_LINE_BYTES {
        s.counters.rejected.fetch_add(1, Ordering::Relaxed);
        return;
    }
    match sumi_ingest::parse_line(line, now) {
        Ok(p) => {
            *received += 1;
            staging.point(s, &p.name, p.ts, p.value);
        }
        Err(sumi_ingest::LineError::Blank) => {}
        Err(e) => {
            *received += 1;
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(error = %e, "relay: line refused");
        }
    }
}

fn serve_pickle(s: &Shared, mut conn: TcpStream) -> io::Result<()> {
    // carbon's receiver refuses messages over 1 MiB; allow sumi serve's limit.
    let mut frames = FrameReader::new(READ_BYTES, 64 << 20);
    let mut vm = Unpickler::new(PickleLimits::default());
    let mut staging = Staging::new(s.outputs.len());
    loop {
        let n = conn.read(frames.read_space())?;
        if n == 0 {
            if frames.pending_bytes() > 0 {
                s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(());
        }
        frames.commit(n);
        let now = now_secs();
        loop {
            match frames.status() {
                FrameStatus::NeedMore => break,
                FrameStatus::TooLong(len) => {
                    s.counters.rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(len, "relay: pickle message over the limit; closing");
                    staging.flush(s);
                    return Ok(());
                }
                FrameStatus::Ready => {
                    let msg = frames.frame();
                    match vm.load(msg) {
                        Ok(_) => {
                            for p in vm.points(msg, now) {
                                s.counters.received_pickle.fetch_add(1, Ordering::Relaxed);
                                match p {
                                    Ok(p) => staging.point(s, &p.name, p.ts, p.value),
                                    Err(_) => {
                                        s.counters.rejected.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(error = %e, "relay: pickle message refused");
                        }
                    }
                    frames.consume();
                }
            }
        }
        staging.flush(s);
    }
}

fn aggregator_clock(s: &Shared) {
    let Some(agg) = &s.aggregator else { return };
    let mut staging = Staging::new(s.outputs.len());
    while !s.shutdown.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let mut out = Vec::new();
        agg.lock()
            .compute(now_secs(), false, |m, t, v| out.push((m.to_string(), t, v)));
        s.counters
            .aggregates
            .fetch_add(out.len() as u64, Ordering::Relaxed);
        for (m, t, v) in out {
            staging.route(s, &m, t, v);
        }
        staging.flush(s);
    }
}

/// True when the destination has closed its end (it never sends us anything, so a
/// readable socket is a closed one), so a batch is not written into a dead socket.
fn peer_closed(c: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: a 1-byte buffer we own, on a socket we own; MSG_PEEK changes nothing.
    let n = unsafe {
        libc::recv(
            c.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n == 0 {
        return true;
    }
    if n < 0 {
        let e = io::Error::last_os_error();
        return !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        );
    }
    false
}

fn connect(d: &Destination) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for a in d.socket_addr().to_socket_addrs()? {
        match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
            Ok(c) => {
                c.set_nodelay(true)?;
                c.set_write_timeout(Some(Duration::from_secs(30)))?;
                return Ok(c);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn sender(s: &Shared, i: usize) {
    let o = &s.outputs[i];
    let mut batch = Batch::default();
    let mut wire = Vec::new();
    let mut conn: Option<TcpStream> = None;
    let mut backoff = Duration::from_millis(50);
    let mut pending = false;
    while !s.shutdown.load(Ordering::Relaxed) {
        if !pending {
            if let Err(e) = o
                .queue
                .read(SEND_BATCH_BYTES, Duration::from_millis(200), &mut batch)
            {
                tracing::error!(destination = %o.label, error = %e, "relay: cannot read the queue");
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
            if batch.data.is_empty() {
                continue;
            }
            wire.clear();
            match o.protocol {
                Protocol::Plaintext => wire.extend_from_slice(&batch.data),
                Protocol::Pickle => push_pickle(&mut wire, &batch.data),
            }
            pending = true;
        }
        if conn.as_ref().is_some_and(peer_closed) {
            conn = None;
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match connect(&o.dest) {
                Ok(c) => {
                    if !o.up.swap(true, Ordering::Relaxed) {
                        tracing::info!(destination = %o.label, "relay: connected");
                    }
                    backoff = Duration::from_millis(50);
                    conn.insert(c)
                }
                Err(e) => {
                    if o.up.swap(false, Ordering::Relaxed) {
                        tracing::warn!(destination = %o.label, error = %e, "relay: destination down; queueing");
                    }
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        match c.write_all(&wire) {
            Ok(()) => {
                o.queue.ack(&batch);
                pending = false;
            }
            Err(e) => {
                o.send_errors.fetch_add(1, Ordering::Relaxed);
                o.up.store(false, Ordering::Relaxed);
                tracing::warn!(destination = %o.label, error = %e, "relay: send failed; will resend from the queue");
                let _ = c.shutdown(Shutdown::Both);
                conn = None;
            }
        }
    }
}

/// A per-destination metric family: name, type, help, value.
type Family = (&'static str, &'static str, &'static str, fn(&Output) -> u64);

fn metrics_text(s: &Shared) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let c = &s.counters;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let _ = writeln!(out, "# HELP sumi_relay_received_points_total Points read from clients, by protocol (refused ones included).");
    let _ = writeln!(out, "# TYPE sumi_relay_received_points_total counter");
    let _ = writeln!(
        out,
        "sumi_relay_received_points_total{{protocol=\"plaintext\"}} {}",
        g(&c.received_plaintext)
    );
    let _ = writeln!(
        out,
        "sumi_relay_received_points_total{{protocol=\"pickle\"}} {}",
        g(&c.received_pickle)
    );
    let _ = writeln!(
        out,
        "# HELP sumi_relay_rejected_total Lines, elements or messages refused (not parseable)."
    );
    let _ = writeln!(out, "# TYPE sumi_relay_rejected_total counter");
    let _ = writeln!(out, "sumi_relay_rejected_total {}", g(&c.rejected));
    let _ = writeln!(
        out,
        "# HELP sumi_relay_unrouted_points_total Points no rule or ring placed anywhere."
    );
    let _ = writeln!(out, "# TYPE sumi_relay_unrouted_points_total counter");
    let _ = writeln!(out, "sumi_relay_unrouted_points_total {}", g(&c.unrouted));
    let _ = writeln!(
        out,
        "# HELP sumi_relay_aggregated_points_total Points made by aggregation rules."
    );
    let _ = writeln!(out, "# TYPE sumi_relay_aggregated_points_total counter");
    let _ = writeln!(
        out,
        "sumi_relay_aggregated_points_total {}",
        g(&c.aggregates)
    );
    let families: [Family; 8] = [
        ("sumi_relay_queue_points", "gauge", "Points queued on disk for the destination, not yet sent.", |o| o.queue.stats.backlog_points.load(Ordering::Relaxed)),
        ("sumi_relay_queue_bytes", "gauge", "Bytes of the destination's queue on disk not yet sent.", |o| o.queue.stats.backlog_bytes.load(Ordering::Relaxed)),
        ("sumi_relay_queued_points_total", "counter", "Points accepted into the destination's queue.", |o| o.queue.stats.appended_points.load(Ordering::Relaxed)),
        ("sumi_relay_sent_points_total", "counter", "Points written to the destination.", |o| o.queue.stats.delivered_points.load(Ordering::Relaxed)),
        ("sumi_relay_dropped_points_total", "counter", "Points dropped because the destination's queue was at its bound (or the disk refused them).", |o| o.queue.stats.dropped_points.load(Ordering::Relaxed)),
        ("sumi_relay_send_errors_total", "counter", "Writes to the destination that failed (the batch is sent again).", |o| o.send_errors.load(Ordering::Relaxed)),
        ("sumi_relay_queue_fsyncs_total", "counter", "Appends to the destination's queue forced to disk (queue fsync = \"batch\").", |o| o.queue.stats.fsyncs.load(Ordering::Relaxed)),
        ("sumi_relay_destination_up", "gauge", "1 when the last connection attempt or write succeeded.", |o| u64::from(o.up.load(Ordering::Relaxed))),
    ];
    for (name, kind, help, f) in families {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for o in &s.outputs {
            let _ = writeln!(
                out,
                "{name}{{destination=\"{}\"}} {}",
                o.label.replace('"', "\\\""),
                f(o)
            );
        }
    }
    out
}

fn metrics_loop(s: &Shared, l: TcpListener) {
    for conn in l.incoming() {
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let mut req = Vec::new();
        let mut buf = [0u8; 1024];
        while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 16 * 1024 {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => req.extend_from_slice(&buf[..n]),
            }
        }
        let first = req.split(|&c| c == b'\n').next().unwrap_or_default();
        let (status, body) = if first.starts_with(b"GET /metrics") {
            ("200 OK", metrics_text(s))
        } else {
            ("404 Not Found", "only /metrics here\n".to_string())
        };
        let _ = write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

/// Runs the relay until SIGINT or SIGTERM. What is queued stays on disk for the next
/// run.
pub fn run_until_signal(config: Config) -> Result<(), RelayError> {
    // Block the signals in every thread (they inherit the mask), then wait for them.
    // SAFETY: plain libc calls on a sigset we own.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let relay = Relay::start(config)?;
    let mut sig: libc::c_int = 0;
    // SAFETY: waits on the set blocked above.
    unsafe { libc::sigwait(&set, &mut sig) };
    tracing::info!(signal = sig, "relay stopping; queued points stay on disk");
    relay.stop();
    Ok(())
}
