//! The command line of `sumi bench` and its validation into a [`Plan`].

use std::path::PathBuf;
use std::time::Duration;

use crate::error::BenchError;
use crate::workload::Workload;

/// `sumi bench`: send carbon plaintext to a server and measure how it copes.
///
/// By default a server is started from this executable (`serve` on free loopback ports,
/// data in a temporary directory); `--carbon` and `--http` target a running one instead.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// Number of series, 100 per host (`<prefix>.hostNNNNN.cpu.user`, ...).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub series: u64,
    /// Points per series.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    pub points: u32,
    /// Seconds between two points of a series.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub step: u32,
    /// Parallel TCP connections; the payload is split among them by host.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub connections: u16,
    /// Send at most this many points a second over all connections (default: unlimited).
    #[arg(long, value_name = "POINTS_PER_SEC", value_parser = clap::value_parser!(u64).range(1..))]
    pub rate: Option<u64>,
    /// Seed of the generated values (the same seed gives the same payload).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Timestamp of the last point (default: now - 600 s, aligned down to the step).
    #[arg(long, value_name = "TS")]
    pub end: Option<i64>,
    /// First node of every series name.
    #[arg(long, default_value = "bench")]
    pub prefix: String,
    /// How many series to check through /render for "time until queryable".
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub sample: u64,
    /// Latency probes after the load: this many new series timed until find and render
    /// show them, and this many timed renders of one loaded series and finds of two
    /// globs over every loaded name (0: none).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub probes: u64,
    /// Send the series in Graphite's tagged form (carbon plaintext
    /// `<prefix>.<metric>;dc=dcK;host=hostNNNNN;role=R`, 10 data centres, 4 roles, the
    /// same points and values as the plain names), then time `seriesByTag` with three
    /// expressions (`name=<prefix>.cpu.user`, `dc=dc3`, `host=~host00[0-4].*`) as a
    /// render and as `/tags/findSeries`, and check the answers hold exactly the series
    /// the workload says. `--tagged` alone tags every series; `--tagged N` the first N
    /// (the rest keep their plain names and the find probes); 0: none.
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        default_missing_value = "all",
        value_parser = parse_tagged
    )]
    pub tagged: Option<u64>,
    /// No progress bars; a status line on stderr every 10 s instead (for CI and logs).
    #[arg(long)]
    pub no_progress: bool,
    /// Print the result as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Give up when neither the points sent nor the points stored move for this long.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub stall_timeout: u64,
    /// Give up when the server does not answer GET /health with 200 within this long.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub ready_timeout: u64,
    /// Seconds between SIGTERM and SIGKILL when stopping the server the bench started.
    #[arg(long, value_name = "SECS", default_value_t = 20)]
    pub stop_timeout: u64,

    /// Carbon plaintext address of a running server (instead of starting one).
    #[arg(long, value_name = "ADDR", requires = "http")]
    pub carbon: Option<String>,
    /// HTTP address (`/health`, `/metrics`, `/render`) of the running server.
    #[arg(long, value_name = "ADDR", requires = "carbon")]
    pub http: Option<String>,
    /// PID of the running server, for its CPU time and peak RSS.
    #[arg(long, requires = "carbon")]
    pub pid: Option<u32>,
    /// Data directory of the running server, for its bytes on disk.
    #[arg(long, value_name = "DIR", requires = "carbon")]
    pub data_dir: Option<PathBuf>,

    /// storage-schemas.conf passed to the started server.
    #[arg(long, value_name = "FILE", conflicts_with = "carbon")]
    pub storage_schemas: Option<PathBuf>,
    /// storage-aggregation.conf passed to the started server.
    #[arg(long, value_name = "FILE", conflicts_with = "carbon")]
    pub storage_aggregation: Option<PathBuf>,
    /// An extra argument for the started server's `serve` (repeat for several).
    #[arg(
        long = "server-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        conflicts_with = "carbon"
    )]
    pub server_args: Vec<String>,
    /// Server executable to start (default: this executable).
    #[arg(long, value_name = "PATH", conflicts_with = "carbon")]
    pub server_bin: Option<PathBuf>,
    /// Keep the started server's temporary directory (data and log) instead of removing it.
    #[arg(long, conflicts_with = "carbon")]
    pub keep: bool,

    /// Soak instead of a bench: feed `--rate` points a second over `--series` (plus new
    /// series) with queries in parallel for this many minutes, a CSV row every
    /// `--soak-sample-secs`, charts of the server's self-metrics at the end.
    #[arg(
        long,
        value_name = "MIN",
        conflicts_with = "soak_seconds",
        requires = "rate"
    )]
    pub soak_minutes: Option<f64>,
    /// The soak's length in seconds (for short runs; see `--soak-minutes`).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..), requires = "rate")]
    pub soak_seconds: Option<u64>,
    /// Seconds between two soak rows (RSS, CPU, points/s, query latency, errors).
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub soak_sample_secs: u64,
    /// Directory for the soak's CSV, charts and the started server's config.
    #[arg(long, value_name = "DIR", default_value = "soak")]
    pub soak_out: PathBuf,
    /// New series a minute during a soak (a slow trickle on top of the fixed set).
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub soak_new_series: u64,
    /// Query threads during a soak.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(0..=64))]
    pub soak_query_threads: u16,
    /// Milliseconds each soak query thread waits between two queries.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub soak_query_pause_ms: u64,
    /// Prefix of the server's own series to chart (default: the one the soak sets on a
    /// server it starts, `sumi.agents.*` on a running one).
    #[arg(long, value_name = "PREFIX")]
    pub soak_selfmon_prefix: Option<String>,
}

/// A validated benchmark: the workload and the bounds of every wait.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What to send.
    pub workload: Workload,
    /// Connections actually used (never more than hosts).
    pub connections: usize,
    /// Points a second, when paced.
    pub rate: Option<u64>,
    /// Series checked through /render.
    pub sample: u64,
    /// Repetitions of each latency probe.
    pub probes: usize,
    /// No progress change for this long ends the run.
    pub stall_timeout: Duration,
    /// Bound of the wait for /health.
    pub ready_timeout: Duration,
    /// SIGTERM → SIGKILL delay.
    pub stop_timeout: Duration,
}

impl Plan {
    /// Checks `args` and fills in defaults; `now` (Unix seconds) places the default end.
    pub fn new(args: &BenchArgs, now: i64) -> Result<Plan, BenchError> {
        check_prefix(&args.prefix)?;
        if args.series.checked_mul(u64::from(args.points)).is_none() {
            return Err(BenchError::Args(format!(
                "{} series x {} points overflows",
                args.series, args.points
            )));
        }
        let step = i64::from(args.step);
        let last_ts = args
            .end
            .unwrap_or_else(|| (now - 600).div_euclid(step) * step);
        let span = i64::from(args.points - 1) * step;
        if last_ts - span <= 0 {
            return Err(BenchError::Args(format!(
                "--end {last_ts} leaves the first point ({}) before 1970",
                last_ts - span
            )));
        }
        let workload = Workload {
            series: args.series,
            points: args.points,
            step_secs: step,
            last_ts,
            seed: args.seed,
            prefix: args.prefix.clone(),
            tagged: args.tagged.unwrap_or(0).min(args.series),
        };
        let connections = usize::from(args.connections)
            .min(usize::try_from(workload.hosts()).unwrap_or(usize::MAX));
        Ok(Plan {
            workload,
            connections,
            rate: args.rate,
            sample: args.sample,
            probes: usize::try_from(args.probes).unwrap_or(0),
            stall_timeout: Duration::from_secs(args.stall_timeout),
            ready_timeout: Duration::from_secs(args.ready_timeout),
            stop_timeout: Duration::from_secs(args.stop_timeout),
        })
    }
}

/// `--tagged`'s value: a count of series, or `all` (the flag without a value).
fn parse_tagged(v: &str) -> Result<u64, String> {
    if v == "all" {
        return Ok(u64::MAX);
    }
    v.parse::<u64>()
        .map_err(|e| format!("{v:?} is not a count of series: {e}"))
}

/// A prefix must make valid metric paths: dot-separated non-empty nodes of printable
/// characters without spaces (it may be empty: names then start at the host).
fn check_prefix(prefix: &str) -> Result<(), BenchError> {
    if prefix.is_empty() {
        return Ok(());
    }
    let bad_char = prefix.chars().find(|c| c.is_whitespace() || c.is_control());
    if let Some(c) = bad_char {
        return Err(BenchError::Args(format!(
            "--prefix {prefix:?} contains {c:?}"
        )));
    }
    if prefix.split('.').any(str::is_empty) {
        return Err(BenchError::Args(format!(
            "--prefix {prefix:?} has an empty node"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn defaults_match_the_issue() {
        let a = parse(&[]).expect("no arguments needed");
        assert_eq!(
            (a.series, a.points, a.step, a.connections),
            (100_000, 60, 10, 2)
        );
        assert_eq!(a.rate, None);
        assert_eq!(a.prefix, "bench");
        assert_eq!(a.stall_timeout, 60);
        assert!(a.carbon.is_none() && !a.json && !a.no_progress);
        assert_eq!(a.tagged, None);
        let plan = Plan::new(&a, 1_700_000_123).expect("valid");
        assert_eq!(plan.workload.last_ts, 1_699_999_520);
        assert_eq!(plan.workload.first_ts(), 1_699_999_520 - 590);
        assert_eq!(plan.connections, 2);
    }

    #[test]
    fn external_mode_needs_both_addresses_and_excludes_own_server_flags() {
        assert!(parse(&["--carbon", "127.0.0.1:2003"]).is_err());
        assert!(parse(&["--http", "127.0.0.1:8080"]).is_err());
        assert!(parse(&["--pid", "5"]).is_err());
        let a = parse(&[
            "--carbon",
            "127.0.0.1:2003",
            "--http",
            "127.0.0.1:8080",
            "--pid",
            "5",
        ])
        .expect("valid");
        assert_eq!(a.pid, Some(5));
        assert!(parse(&["--carbon", "a:1", "--http", "b:2", "--keep"]).is_err());
        assert!(parse(&["--carbon", "a:1", "--http", "b:2", "--storage-schemas", "x"]).is_err());
    }

    #[test]
    fn server_args_may_look_like_flags() {
        let a = parse(&["--server-arg", "--wal-fsync", "--server-arg", "never"]).expect("valid");
        assert_eq!(a.server_args, vec!["--wal-fsync", "never"]);
    }

    #[test]
    fn tagged_is_a_switch_or_a_count() {
        let plan = |argv: &[&str]| {
            Plan::new(&parse(argv).expect("valid"), 1_700_000_000)
                .expect("valid")
                .workload
                .tagged
        };
        assert_eq!(plan(&["--series", "500"]), 0);
        assert_eq!(plan(&["--series", "500", "--tagged"]), 500);
        assert_eq!(plan(&["--tagged", "--series", "500"]), 500);
        assert_eq!(plan(&["--series", "500", "--tagged", "200"]), 200);
        assert_eq!(plan(&["--series", "500", "--tagged", "900"]), 500);
        assert_eq!(plan(&["--series", "500", "--tagged", "0"]), 0);
        assert!(parse(&["--tagged", "x"]).is_err());
    }

    #[test]
    fn zero_knobs_are_refused() {
        for flag in [
            "--series",
            "--points",
            "--step",
            "--connections",
            "--rate",
            "--stall-timeout",
        ] {
            assert!(parse(&[flag, "0"]).is_err(), "{flag} 0 accepted");
        }
    }

    #[test]
    fn plan_checks_what_clap_cannot() {
        let base = parse(&[]).expect("valid");
        let with = |f: &dyn Fn(&mut BenchArgs)| {
            let mut a = base.clone();
            f(&mut a);
            Plan::new(&a, 1_700_000_000)
        };
        assert!(with(&|a| a.prefix = "a b".into()).is_err());
        assert!(with(&|a| a.prefix = "a..b".into()).is_err());
        assert!(with(&|a| a.prefix = ".a".into()).is_err());
        assert!(with(&|a| a.prefix = String::new()).is_ok());
        assert!(with(&|a| a.prefix = "team.bench".into()).is_ok());
        assert!(with(&|a| a.end = Some(100)).is_err());
        assert!(with(&|a| {
            a.series = u64::MAX;
            a.points = 2;
        })
        .is_err());
        let explicit = with(&|a| a.end = Some(1_600_000_005)).expect("valid");
        assert_eq!(
            explicit.workload.last_ts, 1_600_000_005,
            "an explicit end is kept as given"
        );
        let few_hosts = with(&|a| {
            a.series = 150;
            a.connections = 8;
        })
        .expect("valid");
        assert_eq!(few_hosts.connections, 2, "no more connections than hosts");
    }
}
