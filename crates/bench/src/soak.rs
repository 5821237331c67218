//! `sumi bench --soak-minutes N`: a long run at a steady ingest rate with queries in
//! parallel, watched every sampling period, to show that memory stays within the working
//! set and nothing fails (issue 6: 30 minutes at half the measured peak rate).
//!
//! The run: start a server (or target a running one), with self-monitoring on; feed it
//! `--rate` points a second over the fixed `--series` plus a trickle of new series
//! ([`feed`]); ask it a dashboard's queries, a short pause
//! between two queries of a thread ([`queries`]); every
//! `--soak-sample-secs` append a row to `<out>/soak.csv` and print it: the server's RSS
//! and CPU, points sent and stored per second, query count and latency p50/p99/max, and
//! errors ([`window`]). At the end fetch the server's own charts of its self-metrics as
//! PNG ([`plot`]) next to the CSV, stop the server, and summarise.

pub mod feed;
pub mod plot;
pub mod queries;
pub mod window;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::args::{BenchArgs, Plan};
use crate::error::BenchError;
use crate::http;
use crate::procfs;
use crate::prom;
use crate::server::Target;
use feed::{unix_now, Feed, FeedPlan};
use queries::QueryLoop;
use window::{Latencies, Row, CSV_HEADER};

/// Counter of points the server stored, read from `/metrics`.
const STORED_METRIC: &str = "sumi_points_stored_total";

/// What a soak was asked to do, validated.
#[derive(Clone, Debug)]
pub struct SoakPlan {
    /// How long to feed and query.
    pub duration: Duration,
    /// Sampling period (one CSV row each).
    pub sample: Duration,
    /// Output directory (CSV, PNGs, the started server's config).
    pub out: PathBuf,
    /// New series a minute.
    pub new_per_min: u64,
    /// Parallel query threads.
    pub query_threads: usize,
    /// Pause between two queries of a thread.
    pub query_pause: Duration,
    /// Prefix of the server's own series to chart.
    pub selfmon_prefix: String,
}

impl SoakPlan {
    /// The soak `args` ask for, or `None` when they ask for an ordinary bench.
    pub fn from_args(args: &BenchArgs) -> Result<Option<SoakPlan>, BenchError> {
        let duration = match (args.soak_minutes, args.soak_seconds) {
            (None, None) => return Ok(None),
            (Some(m), _) if !(m.is_finite() && m > 0.0 && m <= 60.0 * 24.0 * 31.0) => {
                return Err(BenchError::Args(format!(
                    "--soak-minutes {m} must be above 0 and at most a month"
                )))
            }
            (Some(m), _) => Duration::from_secs_f64(m * 60.0),
            (None, Some(s)) => Duration::from_secs(s),
        };
        if args.rate.is_none() {
            return Err(BenchError::Args(
                "a soak needs --rate (points a second; issue 6 asks for half the measured peak)"
                    .into(),
            ));
        }
        let selfmon_prefix = match (&args.soak_selfmon_prefix, &args.carbon) {
            (Some(p), _) => p.clone(),
            (None, Some(_)) => "sumi.agents.*".to_string(),
            (None, None) => plot::OWN_PREFIX.to_string(),
        };
        Ok(Some(SoakPlan {
            duration,
            sample: Duration::from_secs(args.soak_sample_secs),
            out: args.soak_out.clone(),
            new_per_min: args.soak_new_series,
            query_threads: usize::from(args.soak_query_threads),
            query_pause: Duration::from_millis(args.soak_query_pause_ms),
            selfmon_prefix,
        }))
    }
}

/// How a soak went.
#[derive(Clone, Debug, Default)]
pub struct SoakReport {
    /// One row per sampling period.
    pub rows: Vec<Row>,
    /// The CSV written.
    pub csv: PathBuf,
    /// The charts written.
    pub charts: Vec<PathBuf>,
    /// Points sent in all.
    pub sent_points: u64,
    /// Growth of the server's stored-points counter over the soak.
    pub stored_points: Option<f64>,
    /// New series sent.
    pub new_series: u64,
    /// Queries answered.
    pub queries: u64,
    /// Failed queries and failed `/metrics` reads.
    pub errors: u64,
    /// The first of those failures.
    pub first_error: Option<String>,
    /// RSS at the end against the first third's peak, percent.
    pub rss_growth_percent: Option<f64>,
    /// Why the soak stopped early or could not finish, if it did.
    pub error: Option<String>,
}

impl SoakReport {
    /// The summary as one JSON object.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "csv": self.csv.display().to_string(),
            "charts": self.charts.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "rows": self.rows.len(),
            "sent_points": self.sent_points,
            "stored_points": self.stored_points,
            "new_series": self.new_series,
            "queries": self.queries,
            "errors": self.errors,
            "first_error": self.first_error,
            "max_rss_bytes": self.rows.iter().filter_map(|r| r.rss_bytes).max(),
            "last_rss_bytes": self.rows.iter().rev().find_map(|r| r.rss_bytes),
            "rss_growth_percent": self.rss_growth_percent,
            "max_query_p99_ms": self.rows.iter().filter_map(|r| r.p99_ms).reduce(f64::max),
            "error": self.error,
        })
        .to_string()
    }

    /// The summary for a human.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "soak: {} rows in {}\n  sent {} points ({} new series), stored {}\n  \
             queries {} answered, {} errors{}\n  RSS growth after warm-up: {}\n",
            self.rows.len(),
            self.csv.display(),
            self.sent_points,
            self.new_series,
            self.stored_points
                .map_or("?".to_string(), |s| format!("{s:.0}")),
            self.queries,
            self.errors,
            self.first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})")),
            self.rss_growth_percent
                .map_or("n/a (fewer than 3 rows)".to_string(), |g| format!(
                    "{g:+.1}%"
                )),
        );
        for c in &self.charts {
            s.push_str(&format!("  chart {}\n", c.display()));
        }
        if let Some(e) = &self.error {
            s.push_str(&format!("  FAILED: {e}\n"));
        }
        s
    }
}

/// Runs the soak: see the module doc. Errors before the load starts are returned; a
/// failure during the run ends it early and is set in the report's `error`.
pub fn execute_soak(args: &BenchArgs, soak: &SoakPlan) -> Result<SoakReport, BenchError> {
    let plan = Plan::new(args, unix_now())?;
    let rate = plan.rate.unwrap_or(1);
    std::fs::create_dir_all(&soak.out)
        .map_err(|e| BenchError::io(format!("create {}", soak.out.display()), e))?;
    let mut target = match (&args.carbon, &args.http) {
        (Some(carbon), Some(http)) => Target::external(
            carbon.clone(),
            http.clone(),
            args.pid,
            args.data_dir.clone(),
        ),
        _ => Target::start(&own_server_args(args, soak)?)?,
    };
    target.wait_ready(plan.ready_timeout)?;
    let csv_path = soak.out.join("soak.csv");
    let mut csv = std::fs::File::create(&csv_path)
        .map_err(|e| BenchError::io(format!("create {}", csv_path.display()), e))?;
    writeln!(csv, "{CSV_HEADER}")
        .map_err(|e| BenchError::io(format!("write {}", csv_path.display()), e))?;
    println!(
        "soak: {} s at {rate} points/s over {} series (+{}/min new), {} query threads; rows \
         every {} s in {}",
        soak.duration.as_secs(),
        plan.workload.series,
        soak.new_per_min,
        soak.query_threads,
        soak.sample.as_secs(),
        csv_path.display()
    );

    let mut report = SoakReport {
        csv: csv_path.clone(),
        ..SoakReport::default()
    };
    let start_unix = unix_now();
    let stored_before = stored_total(&target.http).ok().flatten();
    let latencies = Arc::new(Latencies::default());
    let feed = Feed::start(&FeedPlan {
        addr: target.carbon.clone(),
        connections: plan.connections,
        rate,
        workload: plan.workload.clone(),
        new_per_min: soak.new_per_min,
    })?;
    let query_loop = QueryLoop::start(
        &target.http,
        queries::query_paths(&plan.workload),
        soak.query_threads,
        soak.query_pause,
        Arc::clone(&latencies),
    )?;

    let mut sampler = Sampler::new(target.pid, &feed, stored_before);
    let start = Instant::now();
    let end = start + soak.duration;
    let mut next = start + soak.sample.min(soak.duration);
    loop {
        let now = Instant::now();
        if now >= next {
            let mut row = sampler
                .row(&target.http, &feed, start.elapsed())
                .with_latencies(latencies.take_noting(&mut report));
            row.elapsed_secs = start.elapsed().as_secs_f64();
            write_row(&mut csv, &csv_path, &row)?;
            println!("{}", row.to_line());
            report.errors += row.errors;
            report.queries += row.queries;
            report.rows.push(row);
            if next >= end {
                break;
            }
            next = (next + soak.sample).min(end);
        }
        if feed.ended_early() {
            report.error = Some("a carbon connection failed (see below)".into());
            break;
        }
        if let Err(e) = target.check_alive("soak") {
            report.error = Some(e.to_string());
            break;
        }
        std::thread::sleep(
            next.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(200)),
        );
    }
    report.sent_points = feed.sent();
    report.new_series = feed.new_series();
    if let Err(e) = feed.stop() {
        report.error = Some(e.to_string());
    }
    query_loop.stop();
    report.stored_points = match (stored_before, stored_total(&target.http).ok().flatten()) {
        (Some(a), Some(b)) => Some(b - a),
        (None, Some(b)) => Some(b),
        _ => None,
    };
    report.rss_growth_percent = window::rss_growth_percent(&report.rows);

    if report.error.is_none() {
        // let the last self-monitoring report land before charting it
        let interval = plot::selfmon_interval(soak.sample.as_secs());
        std::thread::sleep(Duration::from_secs(interval + 1));
        match plot::fetch_charts(
            &target.http,
            &soak.selfmon_prefix,
            start_unix - 1,
            unix_now(),
            &soak.out,
        ) {
            Ok(files) => report.charts = files,
            Err(e) => report.error = Some(format!("fetch the charts: {e}")),
        }
    }
    if let Some(own) = target.own.as_mut() {
        own.stop(plan.stop_timeout)?;
        own.remove_dir()?;
    }
    Ok(report)
}

/// The bench arguments for a started server: selfmon config and, unless given, schemas
/// written into the output directory.
fn own_server_args(args: &BenchArgs, soak: &SoakPlan) -> Result<BenchArgs, BenchError> {
    let interval = plot::selfmon_interval(soak.sample.as_secs());
    let mut a = args.clone();
    let config = soak.out.join("sumi-soak.toml");
    write_file(&config, &plot::server_config(interval))?;
    a.server_args
        .extend(["--config".to_string(), config.display().to_string()]);
    if a.storage_schemas.is_none() {
        let schemas = soak.out.join("storage-schemas.conf");
        write_file(&schemas, &plot::server_schemas(interval))?;
        a.storage_schemas = Some(schemas);
    }
    Ok(a)
}

fn write_file(path: &Path, text: &str) -> Result<(), BenchError> {
    std::fs::write(path, text).map_err(|e| BenchError::io(format!("write {}", path.display()), e))
}

fn write_row(csv: &mut std::fs::File, path: &Path, row: &Row) -> Result<(), BenchError> {
    writeln!(csv, "{}", row.to_csv())
        .and_then(|()| csv.flush())
        .map_err(|e| BenchError::io(format!("write {}", path.display()), e))
}

impl Latencies {
    /// [`Latencies::take`], keeping the soak's first error in `report`.
    fn take_noting(&self, report: &mut SoakReport) -> window::Collected {
        let c = self.take();
        if report.first_error.is_none() {
            report.first_error.clone_from(&c.first_error);
        }
        c
    }
}

/// The figures of the previous sample, to turn counters into rates.
struct Sampler {
    pid: Option<String>,
    hz: u64,
    at: Instant,
    cpu: Option<procfs::CpuTicks>,
    sent: u64,
    new_series: u64,
    stored: Option<f64>,
}

impl Sampler {
    fn new(pid: Option<u32>, feed: &Feed, stored: Option<f64>) -> Sampler {
        let pid = pid.map(|p| p.to_string());
        Sampler {
            cpu: pid.as_deref().and_then(|p| procfs::read_cpu(p).ok()),
            pid,
            hz: procfs::ticks_per_sec(),
            at: Instant::now(),
            sent: feed.sent(),
            new_series: feed.new_series(),
            stored,
        }
    }

    /// The row for the interval since the last call (latencies filled in by the caller).
    fn row(&mut self, http_addr: &str, feed: &Feed, elapsed: Duration) -> Row {
        let now = Instant::now();
        let secs = now.duration_since(self.at).as_secs_f64().max(1e-3);
        let mut row = Row {
            elapsed_secs: elapsed.as_secs_f64(),
            interval_secs: secs,
            ..Row::default()
        };
        if let Some(pid) = &self.pid {
            row.rss_bytes = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|t| procfs::parse_status_kib(&t, "VmRSS").ok());
            let cpu = procfs::read_cpu(pid).ok();
            if let (Some(before), Some(after)) = (self.cpu, cpu) {
                row.cpu_percent = Some(after.since(before, self.hz).total() * 100.0 / secs);
            }
            self.cpu = cpu;
        }
        let (sent, fresh) = (feed.sent(), feed.new_series());
        row.sent_per_sec = sent.saturating_sub(self.sent) as f64 / secs;
        row.new_series = fresh.saturating_sub(self.new_series);
        (self.sent, self.new_series) = (sent, fresh);
        match stored_total(http_addr) {
            Ok(Some(stored)) => {
                if let Some(before) = self.stored {
                    row.stored_per_sec = Some((stored - before) / secs);
                }
                self.stored = Some(stored);
            }
            Ok(None) => {}
            Err(_) => row.errors += 1,
        }
        self.at = now;
        row
    }
}

/// `GET /metrics` and the value of [`STORED_METRIC`] (`None` when not exposed yet).
fn stored_total(http_addr: &str) -> Result<Option<f64>, BenchError> {
    let r = http::get(http_addr, "/metrics", Duration::from_secs(10))?;
    if r.status != 200 {
        return Err(BenchError::Http {
            addr: http_addr.to_string(),
            path: "/metrics".to_string(),
            reason: format!("status {}", r.status),
        });
    }
    prom::sum_metric(&String::from_utf8_lossy(&r.body), STORED_METRIC)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn a_soak_is_asked_for_by_length_and_needs_a_rate() {
        let plain = parse(&[]).expect("valid");
        assert!(SoakPlan::from_args(&plain).expect("valid").is_none());
        assert!(parse(&["--soak-minutes", "30"]).is_err(), "no --rate");
        assert!(parse(&["--soak-seconds", "0", "--rate", "5"]).is_err());
        assert!(parse(&["--soak-minutes", "1", "--soak-seconds", "60", "--rate", "5"]).is_err());

        let a = parse(&["--soak-minutes", "0.5", "--rate", "1000"]).expect("valid");
        let p = SoakPlan::from_args(&a).expect("valid").expect("a soak");
        assert_eq!(p.duration, Duration::from_secs(30));
        assert_eq!(p.sample, Duration::from_secs(60));
        assert_eq!(p.selfmon_prefix, plot::OWN_PREFIX);
        assert_eq!((p.query_threads, p.new_per_min), (2, 60));

        for bad in ["-1", "0", "NaN", "inf", "1e9"] {
            let flag = format!("--soak-minutes={bad}");
            let a = parse(&[&flag, "--rate", "5"]).expect("a float");
            assert!(SoakPlan::from_args(&a).is_err(), "--soak-minutes {bad}");
        }
        let ext = parse(&[
            "--soak-seconds",
            "5",
            "--rate",
            "5",
            "--carbon",
            "a:1",
            "--http",
            "b:2",
        ])
        .expect("valid");
        let p = SoakPlan::from_args(&ext).expect("valid").expect("a soak");
        assert_eq!(
            p.selfmon_prefix, "sumi.agents.*",
            "a running server's own prefix"
        );
    }

    #[test]
    fn the_summary_carries_every_figure() {
        let r = SoakReport {
            rows: vec![Row {
                rss_bytes: Some(5 << 20),
                p99_ms: Some(12.5),
                ..Row::default()
            }],
            csv: PathBuf::from("/x/soak.csv"),
            sent_points: 10,
            stored_points: Some(12.0),
            errors: 1,
            first_error: Some("GET /render: status 500".into()),
            ..SoakReport::default()
        };
        let j: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        assert_eq!(j["sent_points"], 10);
        assert_eq!(j["max_rss_bytes"], 5 << 20);
        assert_eq!(j["max_query_p99_ms"], 12.5);
        assert_eq!(j["errors"], 1);
        assert_eq!(j["error"], serde_json::Value::Null);
        let text = r.to_text();
        assert!(
            text.contains("1 errors (first: GET /render: status 500)"),
            "{text}"
        );
    }
}
