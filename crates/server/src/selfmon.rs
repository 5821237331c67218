//! Self-monitoring: every interval sumi appends its own numbers as series, as carbon
//! does under `carbon.agents.<host>.*`, so `/render?target=sumi.agents.*.pointsReceived`
//! charts sumi with the tools that chart everything else.
//!
//! The numbers come from the sources `/metrics` reads: [`IngestStats::snapshot`], the
//! store's Prometheus text (parsed back; it is the store's one public view of its
//! counters) and the HTTP middleware's [`HttpStats`]. Like carbon, counters are
//! written as the increase over the interval (carbon clears its stats every time it
//! records them), gauges as they are now:
//!
//! | series | what |
//! | --- | --- |
//! | `pointsReceived`, `metricsReceived` (carbon's name) | points that arrived (good or bad) |
//! | `committedPoints` | points stored (in the WAL and the head) |
//! | `pointsRejected`, `rejected.<reason>` | points refused, all and by reason |
//! | `creates` | new series |
//! | `newSeriesThrottled` | batches held back by `max_new_series_per_minute` |
//! | `errors` | batches the store refused whole, failures of background work |
//! | `activeConnections` (gauge), `connectionsRefused` | carbon TCP connections; refusals (limit, allowlist, UDP datagrams from outside the allowlist) |
//! | `cpuUsage` | CPU time used over the interval, in percent of one core (carbon's) |
//! | `memUsage` (gauge) | resident memory in bytes (carbon's) |
//! | `series`, `head.rows`, `head.bytes`, `parts`, `partBytes` (gauges) | the store's size |
//! | `wal.bytesWritten`, `wal.fsyncs`, `wal.fsyncSeconds` | WAL writes and fsync time |
//! | `flushes`, `flushSeconds`, `compactions`, `compactionSeconds`, `rollups` | background work |
//! | `queries.{render,find}.{count,seconds,avgSeconds,errors}` | HTTP queries: how many, total and mean time to answer, 5xx answers |
//!
//! The series go through the same [`Sink`] as any point, so they get the retention
//! and aggregation rules of their names: give `^sumi\.agents\.` a schema whose step
//! is no longer than the interval, or consecutive reports overwrite each other.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sumi_http::reqstats::HttpStats;
use sumi_ingest::IngestStats;
use sumi_model::Sink;
use sumi_model::{Batch, Clock, SystemClock};
use sumi_store::Store;
use tokio::sync::watch;

/// `[selfmon]` as validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SelfmonOptions {
    /// Whether to record at all.
    pub(crate) enabled: bool,
    /// How often. Default 60 s: carbon's `CARBON_METRIC_INTERVAL`.
    pub(crate) interval: Duration,
    /// Where the series go, without a trailing dot (`{host}` already replaced).
    pub(crate) prefix: String,
}

impl Default for SelfmonOptions {
    fn default() -> SelfmonOptions {
        SelfmonOptions {
            enabled: true,
            interval: Duration::from_secs(60),
            prefix: expand_prefix(DEFAULT_PREFIX),
        }
    }
}

/// The default prefix, with carbon's layout.
pub(crate) const DEFAULT_PREFIX: &str = "sumi.agents.{host}";

/// `prefix` with `{host}` replaced by this machine's name, dots turned into `_` as
/// carbon does (`web01.example.com` is one node, `web01_example_com`).
pub(crate) fn expand_prefix(prefix: &str) -> String {
    prefix.replace("{host}", &hostname().replace('.', "_"))
}

/// The kernel's host name, or `localhost` when it cannot be read.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

/// Why a prefix cannot name series.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    let clean = sumi_model::name::normalize(prefix.as_bytes())
        .map_err(|e| format!("selfmon.prefix {prefix:?}: {e}"))?;
    if clean.path != prefix || prefix.contains([';', ' ', '\t']) {
        return Err(format!(
            "selfmon.prefix {prefix:?} must be dot-separated nodes without spaces, empty \
             nodes or tags (such as \"sumi.agents.{{host}}\")"
        ));
    }
    Ok(())
}

/// What the numbers are read from.
#[derive(Clone)]
pub(crate) struct Sources {
    pub(crate) ingest: Arc<IngestStats>,
    pub(crate) store: Arc<Store>,
    pub(crate) http: Arc<HttpStats>,
}

/// The numbers at one moment: counters since start, gauges now.
#[derive(Clone, Debug, Default, PartialEq)]
struct Reading {
    counters: BTreeMap<String, f64>,
    gauges: BTreeMap<String, f64>,
    /// CPU seconds used by the process (NaN when unknown).
    cpu_secs: f64,
    /// Seconds since an arbitrary origin, for the CPU percentage.
    wall_secs: f64,
}

/// Samples of a Prometheus text exposition: `name{labels}` → value.
fn parse_prometheus(text: &str) -> BTreeMap<&str, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
        .collect()
}

/// The store's counters: series name → sample in its exposition.
const STORE_COUNTERS: [(&str, &str); 14] = [
    ("committedPoints", "sumi_points_stored_total"),
    ("creates", "sumi_series_created_total"),
    ("wal.bytesWritten", "sumi_wal_bytes_total"),
    ("wal.fsyncs", "sumi_wal_fsyncs_total"),
    ("wal.fsyncSeconds", "sumi_wal_fsync_seconds_total"),
    ("flushes", "sumi_flushes_total"),
    ("flushSeconds", "sumi_flush_seconds_total"),
    ("compactions", "sumi_compactions_total"),
    ("compactionSeconds", "sumi_compaction_seconds_total"),
    ("rollups", "sumi_rollups_total"),
    (
        "rejected.too_old",
        "sumi_points_rejected_total{reason=\"too_old\"}",
    ),
    (
        "rejected.too_new",
        "sumi_points_rejected_total{reason=\"too_new\"}",
    ),
    (
        "rejected.series_limit",
        "sumi_points_rejected_total{reason=\"series_limit\"}",
    ),
    ("newSeriesThrottled", "sumi_new_series_throttled_total"),
];

/// The store's gauges: series name → sample (or family, summed over its labels).
const STORE_GAUGES: [(&str, &str); 5] = [
    ("series", "sumi_series_active"),
    ("head.rows", "sumi_head_rows"),
    ("head.bytes", "sumi_head_bytes"),
    ("parts", "sumi_parts"),
    ("partBytes", "sumi_part_bytes"),
];

/// Reads every source. Blocking: the store computes its gauges under its locks.
fn read(src: &Sources, origin: Instant) -> Reading {
    let mut r = Reading {
        cpu_secs: cpu_seconds().unwrap_or(f64::NAN),
        wall_secs: origin.elapsed().as_secs_f64(),
        ..Reading::default()
    };
    let mut counter = |name: &str, v: f64| {
        r.counters.insert(name.to_string(), v);
    };

    let ingest = src.ingest.snapshot();
    counter("pointsReceived", ingest.points_received as f64);
    for (reason, n) in &ingest.rejected {
        counter(&format!("rejected.{}", reason.label()), *n as f64);
    }
    counter(
        "connectionsRefused",
        (ingest.connections_refused
            + ingest.connections_refused_allowlist
            + ingest.udp_refused_allowlist) as f64,
    );

    let mut text = String::with_capacity(8 * 1024);
    src.store.write_prometheus(&mut text);
    let store = parse_prometheus(&text);
    for (series, sample) in STORE_COUNTERS {
        counter(series, store.get(sample).copied().unwrap_or(0.0));
    }
    counter(
        "errors",
        [
            "sumi_store_append_errors_total",
            "sumi_store_background_errors_total",
        ]
        .iter()
        .filter_map(|s| store.get(s))
        .sum(),
    );
    for route in src.http.snapshot() {
        if route.route == "render" || route.route == "find" {
            let q = format!("queries.{}", route.route);
            counter(&format!("{q}.count"), route.requests as f64);
            counter(&format!("{q}.seconds"), route.seconds);
            counter(&format!("{q}.errors"), route.server_errors as f64);
        }
    }

    r.gauges
        .insert("activeConnections".into(), ingest.connections_open as f64);
    for (series, family) in STORE_GAUGES {
        let labelled = format!("{family}{{");
        let v: f64 = store
            .iter()
            .filter(|(k, _)| **k == family || k.starts_with(&labelled))
            .map(|(_, v)| v)
            .sum();
        r.gauges.insert(series.into(), v);
    }
    if let Some(rss) = resident_bytes() {
        r.gauges.insert("memUsage".into(), rss as f64);
    }
    r
}

/// The series of one report: counters as their increase since `prev`, derived
/// values, gauges. Names are relative to the prefix.
fn report(prev: &Reading, cur: &Reading) -> Vec<(String, f64)> {
    let delta = |name: &str| {
        let now = cur.counters.get(name).copied().unwrap_or(0.0);
        let before = prev.counters.get(name).copied().unwrap_or(0.0);
        // a counter never goes back; if one did (a restarted source), count from zero
        if now >= before {
            now - before
        } else {
            now
        }
    };
    let mut out: Vec<(String, f64)> = cur
        .counters
        .keys()
        .map(|name| (name.clone(), delta(name)))
        .collect();
    out.push(("metricsReceived".into(), delta("pointsReceived")));
    let rejected: f64 = cur
        .counters
        .keys()
        .filter(|k| k.starts_with("rejected."))
        .map(|k| delta(k))
        .sum();
    out.push(("pointsRejected".into(), rejected));
    for q in ["render", "find"] {
        let n = delta(&format!("queries.{q}.count"));
        if n > 0.0 {
            let secs = delta(&format!("queries.{q}.seconds"));
            out.push((format!("queries.{q}.avgSeconds"), secs / n));
        }
    }
    let wall = cur.wall_secs - prev.wall_secs;
    let cpu = cur.cpu_secs - prev.cpu_secs;
    if wall > 0.0 && cpu.is_finite() {
        out.push(("cpuUsage".into(), cpu.max(0.0) / wall * 100.0));
    }
    out.extend(cur.gauges.iter().map(|(k, v)| (k.clone(), *v)));
    out
}

/// CPU seconds (user and system) the process has used: `getrusage`, as carbon.
fn cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the `rusage` the pointer designates, which is valid,
    // aligned and zero-initialised; RUSAGE_SELF is a valid `who`. No faster way exists
    // to read the CPU time of every thread of the process.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: zeroed (a valid rusage: plain integers) and filled by the call.
    let usage = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// Resident set size from `/proc/self/status` (Linux), as carbon's `memUsage`.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Records every `opts.interval` until `stop`. Counters start from zero, as carbon's
/// do when it starts, so the first report (one interval after the call; nothing at
/// time zero, like carbon) also counts what arrived before this task ran.
pub(crate) async fn run(
    opts: SelfmonOptions,
    src: Sources,
    sink: Arc<dyn Sink>,
    mut stop: watch::Receiver<bool>,
) {
    let origin = Instant::now();
    let mut prev = Reading {
        cpu_secs: cpu_seconds().unwrap_or(f64::NAN),
        ..Reading::default()
    };
    tracing::info!(
        prefix = %opts.prefix,
        interval_secs = opts.interval.as_secs_f64(),
        "self-monitoring records {}.*",
        opts.prefix
    );
    let start = tokio::time::Instant::now() + opts.interval;
    let mut tick = tokio::time::interval_at(start, opts.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            _ = tick.tick() => {}
        }
        let (src, sink, prefix) = (src.clone(), sink.clone(), opts.prefix.clone());
        let last = prev.clone();
        let work = move || {
            let cur = read(&src, origin);
            let now = SystemClock.now();
            let values = report(&last, &cur);
            let mut batch = Batch::with_capacity(values.len(), values.len() * 48);
            for (name, value) in &values {
                if value.is_finite() {
                    batch.push(&format!("{prefix}.{name}"), now, *value);
                }
            }
            let outcome = sink.append(&batch);
            (cur, outcome)
        };
        match tokio::task::spawn_blocking(work).await {
            Ok((cur, outcome)) => {
                prev = cur;
                if let Err(e) = outcome {
                    tracing::warn!("self-monitoring points not stored: {e}");
                }
            }
            Err(e) => tracing::warn!("self-monitoring report failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(counters: &[(&str, f64)], gauges: &[(&str, f64)], cpu: f64, wall: f64) -> Reading {
        Reading {
            counters: counters.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            gauges: gauges.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            cpu_secs: cpu,
            wall_secs: wall,
        }
    }

    fn get(values: &[(String, f64)], name: &str) -> Option<f64> {
        values.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    #[test]
    fn counters_become_increases_and_gauges_stay() {
        let prev = reading(
            &[
                ("pointsReceived", 100.0),
                ("rejected.nan_value", 2.0),
                ("rejected.too_old", 1.0),
                ("queries.render.count", 4.0),
                ("queries.render.seconds", 1.0),
                ("queries.find.count", 7.0),
                ("queries.find.seconds", 0.5),
            ],
            &[("head.rows", 10.0)],
            1.0,
            0.0,
        );
        let cur = reading(
            &[
                ("pointsReceived", 160.0),
                ("rejected.nan_value", 5.0),
                ("rejected.too_old", 1.0),
                ("queries.render.count", 6.0),
                ("queries.render.seconds", 1.5),
                ("queries.find.count", 7.0),
                ("queries.find.seconds", 0.5),
            ],
            &[("head.rows", 3.0)],
            1.5,
            2.0,
        );
        let r = report(&prev, &cur);
        assert_eq!(get(&r, "pointsReceived"), Some(60.0));
        assert_eq!(get(&r, "metricsReceived"), Some(60.0));
        assert_eq!(get(&r, "rejected.nan_value"), Some(3.0));
        assert_eq!(get(&r, "rejected.too_old"), Some(0.0));
        assert_eq!(get(&r, "pointsRejected"), Some(3.0));
        assert_eq!(get(&r, "queries.render.count"), Some(2.0));
        assert_eq!(get(&r, "queries.render.avgSeconds"), Some(0.25));
        // no find in the interval: no average (rather than 0/0)
        assert_eq!(get(&r, "queries.find.avgSeconds"), None);
        assert_eq!(get(&r, "queries.find.count"), Some(0.0));
        assert_eq!(get(&r, "head.rows"), Some(3.0));
        // 0.5 CPU seconds over 2 s of wall time
        assert_eq!(get(&r, "cpuUsage"), Some(25.0));
        let names: std::collections::HashSet<_> = r.iter().map(|(k, _)| k).collect();
        assert_eq!(names.len(), r.len(), "a name twice in {r:?}");
    }

    #[test]
    fn a_counter_that_went_back_counts_from_zero() {
        let prev = reading(&[("creates", 50.0)], &[], f64::NAN, 0.0);
        let cur = reading(&[("creates", 4.0)], &[], f64::NAN, 1.0);
        let r = report(&prev, &cur);
        assert_eq!(get(&r, "creates"), Some(4.0));
        assert_eq!(get(&r, "cpuUsage"), None, "unknown CPU time is left out");
    }

    #[test]
    fn prometheus_samples_and_proc_status_are_read() {
        let text = "# HELP a x\n# TYPE a counter\na 3\nsumi_parts{level=\"0\"} 2\nsumi_parts{level=\"1\"} 5\nbad line\nb NaN\n";
        let m = parse_prometheus(text);
        assert_eq!(m.get("a"), Some(&3.0));
        assert_eq!(m.get("sumi_parts{level=\"1\"}"), Some(&5.0));
        assert!(m.get("b").is_some_and(|v| v.is_nan()));
        assert!(!m.contains_key("bad"));
        assert_eq!(
            parse_vm_rss("Name:\tsumi\nVmPeak:\t  9 kB\nVmRSS:\t    1234 kB\n"),
            Some(1234 * 1024)
        );
        assert_eq!(parse_vm_rss("Name:\tsumi\n"), None);
        assert!(cpu_seconds().is_some_and(|s| s >= 0.0));
        assert!(resident_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn prefixes() {
        let p = expand_prefix(DEFAULT_PREFIX);
        assert!(p.starts_with("sumi.agents."), "{p}");
        assert_eq!(p.matches('.').count(), 2, "host dots become _: {p}");
        check_prefix(&p).unwrap();
        check_prefix("ops.sumi").unwrap();
        for bad in ["", "a..b", "a.b.", "a b", "a;x=y", "a\n"] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
        }
    }
}
