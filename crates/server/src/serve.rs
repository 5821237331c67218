//! `sumi serve`: open the store, bind, serve, and shut down in a fixed order.
//!
//! Shutdown order (each step logged with its duration): stop accepting and drain the
//! ingest listeners (every byte already read is appended), close the store (head flushed
//! to parts, WAL synced, manifest written), then stop HTTP. Reads keep working until the
//! store is closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use sumi_ingest::{IngestStats, PlaintextOptions};
use sumi_model::{SeriesRules, StorageAggregation, StorageSchemas, SystemClock};
use sumi_store::{FsyncPolicy, Store, StoreOptions};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::Config;

pub(crate) fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

/// Runs the server until SIGINT or SIGTERM.
pub(crate) fn run_until_signal(config: Config) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("sumi-io")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            let _ = tx.send(true);
        });
        run(config, rx).await
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

/// The rules for new series: carbon's files when given, the built-in ones otherwise.
pub(crate) fn load_rules(config: &Config) -> Result<SeriesRules> {
    let mut rules = SeriesRules::builtin();
    if let Some(path) = &config.schemas_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        rules.schemas = StorageSchemas::parse(&path.display().to_string(), &text)?;
    }
    if let Some(path) = &config.aggregation_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        rules.aggregation = StorageAggregation::parse(&path.display().to_string(), &text)?;
    }
    Ok(rules)
}

fn warn_if_open(what: &str, addr: SocketAddr) {
    if !addr.ip().is_loopback() {
        info!(%addr, "{what} listens beyond loopback");
    }
}

/// Opens the store, binds every listener and serves until `shutdown` turns true.
pub(crate) async fn run(config: Config, mut shutdown: watch::Receiver<bool>) -> Result<()> {
    let t0 = Instant::now();
    let rules = load_rules(&config)?;
    let mut opts = StoreOptions::new(config.data_dir.clone());
    opts.rules = rules;
    opts.fsync = config
        .fsync
        .parse::<FsyncPolicy>()
        .map_err(|e| anyhow::anyhow!("storage.fsync: {e}"))?;
    opts.max_future_secs = config.max_future_secs;
    // Series of GrowthForecast graphs roll up by average with xFilesFactor 0.
    let gf_series = sumi_http::growthforecast::SeriesRegistry::new();
    opts.rules.aggregation = opts
        .rules
        .aggregation
        .with_override(gf_series.aggregation_override());
    let store = tokio::task::spawn_blocking(move || Store::open(opts, Arc::new(SystemClock)))
        .await
        .context("opening the store")?
        .with_context(|| format!("opening the store in {}", config.data_dir.display()))?;
    info!(
        dir = %config.data_dir.display(),
        series = store.series_count(),
        secs = t0.elapsed().as_secs_f64(),
        "store open"
    );

    let carbon = TcpListener::bind(config.carbon_addr)
        .await
        .with_context(|| format!("binding carbon plaintext TCP {}", config.carbon_addr))?;
    let carbon_addr = carbon.local_addr()?;
    let udp = if config.carbon_udp {
        Some(
            UdpSocket::bind(carbon_addr)
                .await
                .with_context(|| format!("binding carbon plaintext UDP {carbon_addr}"))?,
        )
    } else {
        None
    };
    let pickle = TcpListener::bind(config.pickle_addr)
        .await
        .with_context(|| format!("binding carbon pickle {}", config.pickle_addr))?;
    let pickle_addr = pickle.local_addr()?;
    let http = TcpListener::bind(config.http_addr)
        .await
        .with_context(|| format!("binding HTTP {}", config.http_addr))?;
    let http_addr = http.local_addr()?;
    for (what, addr) in [
        ("carbon", carbon_addr),
        ("pickle", pickle_addr),
        ("http", http_addr),
    ] {
        warn_if_open(what, addr);
    }

    let stats = Arc::new(IngestStats::default());
    let plain_opts = PlaintextOptions {
        max_line_bytes: config.max_line_bytes,
        max_connections: config.max_connections as u64,
        ..PlaintextOptions::default()
    };
    let sink: Arc<dyn sumi_ingest::Sink> = store.clone();
    let (ingest_stop_tx, ingest_stop) = watch::channel(false);
    let mut ingest_tasks = Vec::new();
    ingest_tasks.push(tokio::spawn(sumi_ingest::serve_tcp(
        carbon,
        sink.clone(),
        plain_opts.clone(),
        stats.clone(),
        ingest_stop.clone(),
    )));
    if let Some(udp) = udp {
        ingest_tasks.push(tokio::spawn(sumi_ingest::serve_udp(
            udp,
            sink.clone(),
            plain_opts.clone(),
            stats.clone(),
            ingest_stop.clone(),
        )));
    }
    ingest_tasks.push(tokio::spawn(sumi_ingest::serve_pickle(
        pickle,
        sink.clone(),
        sumi_ingest::PickleOptions {
            listener: plain_opts.clone(),
            ..sumi_ingest::PickleOptions::default()
        },
        stats.clone(),
        ingest_stop.clone(),
    )));

    let mut state = sumi_http::AppState::new(
        store.clone(),
        stats.clone(),
        &config.timezone,
        &config.data_dir,
        gf_series,
    )?;
    state.limits = sumi_http::source::QueryLimits {
        max_points: config.max_points_per_query,
        max_series: config.max_series_per_query,
    };
    let state = Arc::new(state);
    let (http_stop_tx, mut http_stop) = watch::channel(false);
    let http_task = tokio::spawn(async move {
        let app = sumi_http::router(state);
        axum::serve(http, app)
            .with_graceful_shutdown(async move {
                let _ = http_stop.wait_for(|stop| *stop).await;
            })
            .await
    });

    info!(
        carbon = %carbon_addr,
        udp = config.carbon_udp,
        pickle = %pickle_addr,
        http = %http_addr,
        "sumi serving"
    );
    if let Some(path) = &config.ready_file {
        let json = format!(
            "{{\"carbon\":\"{carbon_addr}\",\"pickle\":\"{pickle_addr}\",\"http\":\"{http_addr}\",\"pid\":{}}}\n",
            std::process::id()
        );
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, json)
            .and_then(|()| std::fs::rename(&tmp, path))
            .with_context(|| format!("writing ready file {}", path.display()))?;
    }

    let _ = shutdown.wait_for(|stop| *stop).await;

    let step = Instant::now();
    let _ = ingest_stop_tx.send(true);
    for task in ingest_tasks {
        if let Err(e) = task.await {
            warn!("ingest listener task failed: {e}");
        }
    }
    info!(secs = step.elapsed().as_secs_f64(), "ingest drained");

    let step = Instant::now();
    let closing = store.clone();
    tokio::task::spawn_blocking(move || closing.close())
        .await
        .context("closing the store")?
        .context("closing the store")?;
    info!(secs = step.elapsed().as_secs_f64(), "store closed");

    let step = Instant::now();
    let _ = http_stop_tx.send(true);
    match http_task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn!("http server ended with an error: {e}"),
        Err(e) => warn!("http task failed: {e}"),
    }
    info!(secs = step.elapsed().as_secs_f64(), "http stopped");
    Ok(())
}
