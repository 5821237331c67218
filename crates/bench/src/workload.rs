//! The workload: series named like a server agent's metrics, with realistic values.
//!
//! Every host reports the same 100 metrics (cpu, loadavg, memory, disk, filesystem,
//! interface, processes, tcp, application counters), as the shared benchmark harness's
//! `benchtool gen` does, so figures from `sumi bench` and from the harness describe the
//! same kind of data. Series `i` is metric `i % 100` of host `i / 100`; a series count
//! that is not a multiple of 100 gives the last host fewer metrics.
//!
//! Values follow one of five models ([`Kind`]): percentages and load averages are random
//! walks with 2 decimals, big gauges are integer random walks around a base, counters only
//! grow, small gauges move by a few units. Each host has its own random stream derived
//! from the seed, so the payload of a seed is the same whatever the number of connections
//! it is split across, and hosts can be generated in parallel.

use std::fmt::Write as _;

use crate::rng::Rng;

/// Metrics reported by each host.
pub const METRICS_PER_HOST: u64 = 100;

/// How a metric's value moves from one point to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A percentage: random walk reflected into `[0, 100]`, 2 decimals.
    Percent,
    /// A large integer gauge (bytes): random walk around a base, never negative.
    Gauge,
    /// A monotonic integer counter growing at a per-series rate.
    Counter,
    /// A small integer gauge (process or connection counts): moves by -2..=2, never negative.
    Small,
    /// A load average: float random walk, never negative, 2 decimals.
    Load,
}

/// One metric of a host: its path below the host node and its value model.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDef {
    /// Path below `<prefix>.hostNNNNN.`, e.g. `cpu.user`.
    pub name: String,
    /// Value model.
    pub kind: Kind,
    /// Typical magnitude: gauge base, counter rate per second, or small-gauge ceiling.
    pub base: f64,
}

/// The 100 metrics of a host, in a fixed order: 80 system metrics and 20 application
/// metrics (4 applications × requests, errors, two latency percentiles, connections).
pub fn host_metrics() -> Vec<MetricDef> {
    let mut m = Vec::with_capacity(METRICS_PER_HOST as usize);
    let mut add = |name: String, kind: Kind, base: f64| m.push(MetricDef { name, kind, base });
    for c in [
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
    ] {
        add(format!("cpu.{c}"), Kind::Percent, 0.0);
    }
    for l in ["loadavg1", "loadavg5", "loadavg15"] {
        add(format!("loadavg.{l}"), Kind::Load, 0.0);
    }
    for x in [
        "total",
        "used",
        "free",
        "buffers",
        "cached",
        "available",
        "active",
        "inactive",
        "dirty",
        "swap_total",
        "swap_free",
        "swap_cached",
    ] {
        add(format!("memory.{x}"), Kind::Gauge, 8e9);
    }
    for d in ["sda", "sdb"] {
        for x in [
            "reads",
            "writes",
            "read_bytes",
            "write_bytes",
            "read_time",
            "write_time",
            "io_time",
            "weighted_io_time",
        ] {
            add(format!("disk.{d}.{x}"), Kind::Counter, 1e4);
        }
    }
    for f in ["root", "var", "data"] {
        for x in ["size", "used", "avail", "inodes_used"] {
            add(format!("filesystem.{f}.{x}"), Kind::Gauge, 5e10);
        }
    }
    for i in ["eth0", "eth1"] {
        for x in [
            "rx_bytes",
            "tx_bytes",
            "rx_packets",
            "tx_packets",
            "rx_errors",
            "tx_errors",
            "rx_dropped",
            "tx_dropped",
        ] {
            add(format!("interface.{i}.{x}"), Kind::Counter, 1e6);
        }
    }
    for x in ["running", "sleeping", "zombie", "blocked", "total", "forks"] {
        add(format!("processes.{x}"), Kind::Small, 200.0);
    }
    for x in [
        "established",
        "time_wait",
        "close_wait",
        "listen",
        "syn_sent",
    ] {
        add(format!("tcp.{x}"), Kind::Small, 100.0);
    }
    for app in ["nginx", "mysql", "redis", "app"] {
        add(format!("custom.{app}.requests"), Kind::Counter, 500.0);
        add(format!("custom.{app}.errors"), Kind::Counter, 500.0);
        add(format!("custom.{app}.latency_p50"), Kind::Percent, 0.0);
        add(format!("custom.{app}.latency_p99"), Kind::Percent, 0.0);
        add(format!("custom.{app}.connections"), Kind::Small, 50.0);
    }
    m
}

/// What to generate: how many series, which timestamps, which names.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Number of series (hosts × 100, the last host possibly partial).
    pub series: u64,
    /// Points per series.
    pub points: u32,
    /// Seconds between two points of a series.
    pub step_secs: i64,
    /// Timestamp of the last point.
    pub last_ts: i64,
    /// Seed of every random stream.
    pub seed: u64,
    /// First node of every name (`bench` gives `bench.host00000.cpu.user`).
    pub prefix: String,
    /// The first this many series are sent in Graphite's tagged form instead
    /// ([`Workload::tagged_name`]); 0: none.
    pub tagged: u64,
}

/// Data centres of the tagged series: host `h` is in `dc{h % TAGGED_DCS}`.
pub const TAGGED_DCS: u64 = 10;
/// Roles of the tagged series: host `h` has `ROLES[(h / 10) % 4]`.
pub const TAGGED_ROLES: [&str; 4] = ["web", "api", "db", "cache"];

impl Workload {
    /// Timestamp of the first point.
    pub fn first_ts(&self) -> i64 {
        self.last_ts - i64::from(self.points.saturating_sub(1)) * self.step_secs
    }

    /// Points over all series.
    pub fn total_points(&self) -> u64 {
        self.series.saturating_mul(u64::from(self.points))
    }

    /// Number of hosts (the last one may report fewer than 100 metrics).
    pub fn hosts(&self) -> u64 {
        self.series.div_ceil(METRICS_PER_HOST)
    }

    /// How many metrics host `host` reports.
    pub fn metrics_of_host(&self, host: u64) -> usize {
        let first = host * METRICS_PER_HOST;
        self.series.saturating_sub(first).min(METRICS_PER_HOST) as usize
    }

    /// The node naming a host, `<prefix>.hostNNNNN`.
    pub fn host_path(&self, host: u64) -> String {
        if self.prefix.is_empty() {
            format!("host{host:05}")
        } else {
            format!("{}.host{host:05}", self.prefix)
        }
    }

    /// The full name of series `index`.
    pub fn series_name(&self, index: u64, metrics: &[MetricDef]) -> String {
        let host = index / METRICS_PER_HOST;
        let metric = metrics
            .get((index % METRICS_PER_HOST) as usize)
            .map_or("unknown", |m| m.name.as_str());
        if index < self.tagged {
            return self.tagged_name(host, metric);
        }
        format!("{}.{metric}", self.host_path(host))
    }

    /// The tagged name of `metric` of host `host`, tags in canonical (sorted) order:
    /// `<prefix>.<metric>;dc=dcK;host=hostNNNNN;role=R`.
    pub fn tagged_name(&self, host: u64, metric: &str) -> String {
        let dot = if self.prefix.is_empty() { "" } else { "." };
        let role = TAGGED_ROLES[(host / 10 % TAGGED_ROLES.len() as u64) as usize];
        format!(
            "{}{dot}{metric};dc=dc{};host=host{host:05};role={role}",
            self.prefix,
            host % TAGGED_DCS
        )
    }

    /// Up to `n` distinct series names spread over the whole range (one per equal slice of
    /// the series, at a seeded position within it), for checking that data is queryable.
    pub fn sample_names(&self, n: u64, metrics: &[MetricDef]) -> Vec<String> {
        let n = n.min(self.series);
        let mut rng = Rng::new(self.seed, u64::MAX);
        (0..n)
            .map(|i| {
                let start = i * self.series / n;
                let end = (i + 1) * self.series / n;
                let index = start + rng.below(end - start);
                self.series_name(index, metrics)
            })
            .collect()
    }
}

/// The value state of one host's series and the random stream that moves them.
struct HostState {
    rng: Rng,
    values: Vec<f64>,
    /// Per-second growth of counters (0 for other kinds).
    rates: Vec<f64>,
}

impl HostState {
    fn new(seed: u64, host: u64, metrics: &[MetricDef]) -> HostState {
        let mut rng = Rng::new(seed, host);
        let mut values = Vec::with_capacity(metrics.len());
        let mut rates = Vec::with_capacity(metrics.len());
        for m in metrics {
            let (value, rate) = match m.kind {
                Kind::Percent => (rng.next_f64() * 60.0, 0.0),
                Kind::Gauge => (m.base * (0.2 + rng.next_f64()), 0.0),
                Kind::Counter => (
                    (rng.next_f64() * 1e9).floor(),
                    m.base * (0.1 + rng.next_f64()),
                ),
                Kind::Small => ((m.base * rng.next_f64()).floor(), 0.0),
                Kind::Load => (rng.next_f64() * 4.0, 0.0),
            };
            values.push(value);
            rates.push(rate);
        }
        HostState { rng, values, rates }
    }

    /// Moves every series one step forward.
    fn advance(&mut self, metrics: &[MetricDef], step_secs: f64) {
        for ((v, rate), m) in self.values.iter_mut().zip(&self.rates).zip(metrics) {
            *v = next_value(&mut self.rng, m, *v, *rate, step_secs);
        }
    }
}

/// The value after `v` for a series of metric `m`.
fn next_value(rng: &mut Rng, m: &MetricDef, v: f64, rate: f64, step_secs: f64) -> f64 {
    match m.kind {
        Kind::Percent => {
            let mut x = v + rng.normal() * 3.0;
            if x < 0.0 {
                x = -x;
            }
            if x > 100.0 {
                x = 200.0 - x;
            }
            // Adding 0.0 turns a -0.0 into 0.0.
            x.clamp(0.0, 100.0) + 0.0
        }
        Kind::Gauge => (v + rng.normal() * m.base * 0.005).max(0.0).floor(),
        Kind::Counter => v + (rate * step_secs * (0.5 + rng.next_f64())).floor(),
        Kind::Small => (v + rng.below(5) as f64 - 2.0).max(0.0),
        Kind::Load => (v + rng.normal() * 0.1).abs() + 0.0,
    }
}

/// Appends `v` as carbon would receive it from an agent: percentages and load averages
/// with at most 2 decimals (no trailing zeros), everything else as an integer.
fn push_value(out: &mut Vec<u8>, kind: Kind, v: f64) {
    let mut s = String::with_capacity(24);
    match kind {
        Kind::Percent | Kind::Load => {
            let cents = (v * 100.0).round() as i64;
            let (whole, frac) = (cents / 100, (cents % 100).abs());
            let sign = if cents < 0 && whole == 0 { "-" } else { "" };
            let _ = match frac {
                0 => write!(s, "{sign}{whole}"),
                f if f % 10 == 0 => write!(s, "{sign}{whole}.{}", f / 10),
                f => write!(s, "{sign}{whole}.{f:02}"),
            };
        }
        Kind::Gauge | Kind::Counter | Kind::Small => {
            let _ = write!(s, "{}", v as i64);
        }
    }
    out.extend_from_slice(s.as_bytes());
}

/// The generated plaintext, one buffer per connection, and the points in each.
#[derive(Debug, Default)]
pub struct Payload {
    /// `<name> <value> <ts>\n` lines, time-ordered within each buffer.
    pub buffers: Vec<Vec<u8>>,
    /// Number of lines in each buffer.
    pub points: Vec<u64>,
}

impl Payload {
    /// Bytes over all buffers.
    pub fn bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.len() as u64).sum()
    }
}

/// Generates the whole workload into `connections` buffers, host `h` going to buffer
/// `h % connections`, one thread per buffer. Within a buffer the lines are time-ordered:
/// every series of its hosts at `t`, then every series at `t + step`.
pub fn generate(w: &Workload, connections: usize) -> Payload {
    let connections = connections.max(1);
    let metrics = host_metrics();
    let mut out = Payload {
        buffers: vec![Vec::new(); connections],
        points: vec![0; connections],
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..connections)
            .map(|c| {
                let metrics = &metrics;
                scope.spawn(move || generate_connection(w, metrics, c as u64, connections as u64))
            })
            .collect();
        for (c, handle) in handles.into_iter().enumerate() {
            // A generator thread has no failure path; a panic there is a bug and is
            // propagated as one.
            let (buffer, points) = match handle.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            out.buffers[c] = buffer;
            out.points[c] = points;
        }
    });
    out
}

/// The buffer of connection `conn` of `conns`: the hosts `h` with `h % conns == conn`.
fn generate_connection(
    w: &Workload,
    metrics: &[MetricDef],
    conn: u64,
    conns: u64,
) -> (Vec<u8>, u64) {
    let hosts: Vec<u64> = (conn..w.hosts()).step_by(conns as usize).collect();
    // `<host path>.<metric> ` for every series of these hosts, built once.
    let mut names: Vec<Vec<Vec<u8>>> = Vec::with_capacity(hosts.len());
    let mut states: Vec<HostState> = Vec::with_capacity(hosts.len());
    let mut names_len = 0usize;
    let mut series = 0u64;
    for &h in &hosts {
        let n = w.metrics_of_host(h);
        let host_path = w.host_path(h);
        let first = h * METRICS_PER_HOST;
        let host_names: Vec<Vec<u8>> = metrics[..n]
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if first + (i as u64) < w.tagged {
                    format!("{} ", w.tagged_name(h, &m.name)).into_bytes()
                } else {
                    format!("{host_path}.{} ", m.name).into_bytes()
                }
            })
            .collect();
        names_len += host_names.iter().map(Vec::len).sum::<usize>();
        series += n as u64;
        names.push(host_names);
        states.push(HostState::new(w.seed, h, &metrics[..n]));
    }
    // Names, plus about 12 bytes of value and 12 of timestamp and newline per line.
    let estimate = (names_len as u64 + series * 24) * u64::from(w.points);
    let mut buf = Vec::with_capacity(usize::try_from(estimate).unwrap_or(0));
    let mut lines = 0u64;
    let step = w.step_secs as f64;
    for p in 0..w.points {
        let ts = format!(" {}\n", w.first_ts() + i64::from(p) * w.step_secs);
        for (state, host_names) in states.iter_mut().zip(&names) {
            let n = host_names.len();
            state.advance(&metrics[..n], step);
            for ((name, m), v) in host_names.iter().zip(metrics).zip(&state.values) {
                buf.extend_from_slice(name);
                push_value(&mut buf, m.kind, *v);
                buf.extend_from_slice(ts.as_bytes());
                lines += 1;
            }
        }
    }
    (buf, lines)
}

#[cfg(test)]
mod tests;
