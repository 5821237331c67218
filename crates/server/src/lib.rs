//! sumi's server as a library, under the thin `sumi` binary (`main.rs`): the stages
//! of the other crates wired into one process that serves until told to stop.
//!
//! - [`config`]: `sumi.toml` and the flags of `sumi serve`, validated into [`Config`].
//! - `bind.rs`: [`Listeners`], the sockets, bound from the configuration (or by a
//!   test, on port 0), and the log line of each.
//! - `wire.rs`: the store opened and every stage started on the listeners: carbon
//!   plaintext (TCP, UDP) and pickle into the store, HTTP, self-monitoring.
//! - `shutdown.rs`: the ordered stop of what `wire.rs` started.
//! - `anomaly/`: `[[anomaly]]` rules, the detectors on the ingest seam, their saved
//!   state, events and webhooks (docs/anomaly.md).
//! - `selfmon.rs`: sumi's own metrics, recorded as series; `tls.rs`: HTTPS;
//!   `notify.rs`: systemd's readiness protocol.
//!
//! [`run`] is the whole life of a server on bound listeners; [`run_until_signal`] is
//! what `sumi serve` does with it (bind from the configuration, stop on SIGTERM or
//! SIGINT). Tests bind port 0 themselves and run the real server in-process.

mod cluster_join;
pub mod cluster_status;
pub mod config;
mod gf_log;
mod gf_snapshot;

mod anomaly;
mod bind;
mod notify;
mod selfmon;
mod shutdown;
mod tls;
mod wire;

use std::future::Future;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tracing::{info, warn};

pub use bind::{Addrs, Listeners};
pub use config::Config;
pub use wire::store_options;

use config::LogFormat;

/// Serves on `listeners` until `shutdown` completes, then stops in order (see
/// `shutdown.rs`): opens the store in `config.data_dir`, starts ingest, HTTP and
/// self-monitoring, marks the server ready, waits for `shutdown`, then drains ingest,
/// closes the store and stops HTTP. An error is a failure to start, or the store's
/// failure to close.
pub async fn run(
    listeners: Listeners,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let (store, gf_series) = wire::open_store(&config).await?;
    let anomaly = wire::open_anomaly(&config, &store)?;
    let cluster = wire::open_cluster(&config, &store, anomaly.as_ref(), &gf_series).await?;
    let running = wire::start(listeners, &config, store, gf_series, cluster, anomaly)?;
    shutdown.await;
    running.shutdown().await
}

/// `sumi serve`: starts the async runtime, binds the configured addresses and runs
/// the server until SIGINT or SIGTERM.
pub fn run_until_signal(config: Config) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("sumi-io")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        // the handlers are installed now, so that a signal during start-up (the store
        // may take a while to open) is a clean shutdown once serving, not a kill
        let (tx, mut rx) = watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            let _ = tx.send(true);
        });
        let signalled = async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let listeners = Listeners::bind(&config).await?;
        run(listeners, config, signalled).await
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        warn!("cannot install signal handlers; stop sumi with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => info!("SIGTERM received, shutting down"),
        _ = int.recv() => info!("SIGINT received, shutting down"),
    }
}

/// Logs to stderr (the journal under systemd) as `config` says: text for people, or
/// one JSON object a line (event fields at the top level) for log shippers.
pub fn init_logging(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&config.log_level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log line that cannot be written (stderr on a full disk) is dropped: by default
    // tracing-subscriber reports it with `eprintln!`, which panics when stderr fails,
    // and that panic ended whichever connection was logging (its client saw a reset).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .log_internal_errors(false)
        .with_writer(std::io::stderr);
    match config.log_format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}
