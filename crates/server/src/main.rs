//! `sumi`: one binary, one subcommand per job.
//!
//! - `sumi serve`: the server (config → bind → open the store → serve → ordered
//!   shutdown), the library [`sumi_server`].
//! - `sumi bench`: a carbon plaintext load generator that measures a server.
//! - `sumi check`: verify (and repair) a data directory offline, see [`check`].
//! - `sumi relay`: a carbon-compatible relay with on-disk queues, [`sumi_relay`].
//! - `sumi import whisper|rrd|growthforecast`: history from whisper or RRD files or a
//!   GrowthForecast server, see [`import`] and [`import_gf`].
//! - `sumi export`: series of a server or data directory as carbon plaintext, CSV or JSON, see
//!   [`export`].

use anyhow::Result;
use clap::{Parser, Subcommand};

use sumi_server::config::{Config, ServeFlags};

mod check;
mod export;
mod import;
mod import_gf;

#[derive(Parser)]
#[command(
    name = "sumi",
    version,
    about = "A time-series database for server metrics that speaks Graphite"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server: carbon plaintext and pickle in, Graphite's HTTP API out.
    Serve(ServeFlags),
    /// Generate carbon plaintext load against a server and measure it.
    Bench(Box<sumi_bench::BenchArgs>),
    /// Verify every checksum of a data directory (no server running); --repair fixes
    /// what can be fixed. Exit status: 0 clean, 1 repaired, 4 damage left.
    Check(check::CheckFlags),
    /// Relay carbon plaintext and pickle to carbon destinations and sumi, placed as
    /// carbon places them, through an on-disk queue per destination (docs/relay.md).
    Relay(RelayFlags),
    /// Import history: whisper trees, RRD files, GrowthForecast. Exit status: 0 all imported, 1 some
    /// files or series skipped (listed at the end), 2 the import could not run.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Export the series of a running server (--url) or a data directory (--data-dir)
    /// matching a glob (default: all) over a time range to stdout, as carbon
    /// plaintext, CSV or JSON lines, streamed.
    /// Exit status: 0 done, 2 failed.
    Export(export::ExportFlags),
    /// A cluster on Kafka (docs/cluster.md). `status`: every storage node's health, and
    /// per partition its log end, its owners' offsets and lag. Exit status: 0 all up,
    /// 1 a node down or a partition without a live owner, 2 the status could not be read.
    #[command(subcommand)]
    Cluster(ClusterCommand),
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Partitions, owners, consumed and log-end offsets, lag, node health.
    Status(sumi_server::cluster_status::StatusFlags),
}

#[derive(clap::Args)]
struct RelayFlags {
    /// The relay's TOML configuration (docs/relay.md).
    #[arg(long)]
    config: std::path::PathBuf,
    /// Once listening, write the bound addresses here as JSON (for scripts and tests).
    #[arg(long)]
    ready_file: Option<std::path::PathBuf>,
}

/// glibc's allocator, chosen by measurement over jemalloc and mimalloc (500,000 series
/// x 10 points, four alternating runs each: points per CPU-second within 4% of each
/// other's medians, jemalloc +20% and mimalloc +47% peak RSS), tuned for renders: a
/// series of a day at 10 s is 138 KB of values, just over glibc's first mmap threshold,
/// and freed memory at the top of an arena went back to the kernel after every request,
/// so each render of a thousand series faulted its pages in again (a third of its
/// time). Large blocks stay in the arenas up to 4 MiB; the renders of big answers trim
/// explicitly (`malloc_trim` in sumi-http), so an idle server still gives memory back.
/// `sumSeries` over 1,000 series x 8,640 points: median 130 ms before, 95 ms after.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's tunables; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(flags) => {
            tune_malloc();
            let config = Config::load(&flags)?;
            sumi_server::init_logging(&config);
            sumi_server::run_until_signal(config)
        }
        Command::Bench(args) => sumi_bench::run(*args),
        Command::Check(flags) => std::process::exit(check::run(&flags)),
        Command::Relay(flags) => {
            let mut config = sumi_relay::Config::load(&flags.config).map_err(anyhow::Error::msg)?;
            config.ready_file = flags.ready_file;
            tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
                )
                .with_writer(std::io::stderr)
                .init();
            Ok(sumi_relay::run_until_signal(config)?)
        }
        Command::Import(cmd) => std::process::exit(import::run(cmd)),
        Command::Export(flags) => std::process::exit(export::run(&flags)),
        Command::Cluster(ClusterCommand::Status(flags)) => {
            std::process::exit(sumi_server::cluster_status::run(&flags))
        }
    }
}
