//! `sumi serve`: open the store, bind, serve, and shut down in a fixed order.
//!
//! Shutdown order (each step logged with its duration): `/ready` turns 503 and systemd
//! hears `STOPPING=1`, self-monitoring stops, then stop accepting and drain the ingest
//! listeners (every byte already read is appended), close the store (head flushed to
//! parts, WAL synced, manifest written), then stop HTTP. Reads keep working until the
//! store is closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use axum::serve::ListenerExt as _;
use sumi_ingest::{IngestStats, PlaintextOptions};
use sumi_model::{SeriesRules, StorageAggregation, StorageSchemas, SystemClock};
use sumi_store::{FsyncPolicy, Store, StoreOptions};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::{Config, LogFormat};
use crate::{notify, selfmon, tls};

/// Logs to stderr (the journal under systemd): text for people, or one JSON object a
/// line (event fields at the top level) for log shippers.
pub(crate) fn init_logging(level: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log line that cannot be written (stderr on a full disk) is dropped: by default
    // tracing-subscriber reports it with `eprintln!`, which panics when stderr fails,
    // and that panic ended whichever connection was logging (its client saw a reset).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .log_internal_errors(false)
        .with_writer(std::io::stderr);
    match format {
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

/// One line per listener: where it is bound, what guards it, and on loopback how to
/// open it.
fn log_listener(what: &str, addr: SocketAddr, key: &str, flag: &str, guard: &str) {
    let port = addr.port();
    if addr.ip().is_loopback() {
        info!(
            listener = what,
            %addr,
            "{what} listening on {addr} ({guard}), loopback only: to accept other hosts \
             set {key} = \"0.0.0.0:{port}\" in sumi.toml or pass {flag} 0.0.0.0:{port}"
        );
    } else {
        info!(listener = what, %addr, "{what} listening on {addr} ({guard})");
    }
}

/// What guards the carbon ports beyond loopback, for [`log_listener`].
fn carbon_guard(config: &Config) -> String {
    match &config.carbon_allow {
        Some(allow) => format!("sources allowed: {allow}"),
        None => "every source may send; restrict with carbon.allow".to_string(),
    }
}

/// What guards HTTP, for [`log_listener`]; warns when it is open to the network.
fn http_guard(config: &Config, addr: SocketAddr) -> String {
    let auth = &config.auth;
    let scheme = if config.tls.is_some() {
        "HTTPS"
    } else {
        "HTTP"
    };
    let beyond_loopback = !addr.ip().is_loopback();
    if beyond_loopback && !auth.is_enabled() {
        warn!(
            %addr,
            "HTTP is reachable beyond loopback without authentication: anyone who can \
             reach it may read, write and delete; set auth.read_tokens, \
             auth.write_tokens and auth.admin_tokens in sumi.toml"
        );
    } else if beyond_loopback && config.tls.is_none() {
        warn!(
            %addr,
            "HTTP tokens travel in clear text beyond loopback; set http.tls_cert and \
             http.tls_key, or put a TLS proxy in front"
        );
    }
    format!("{scheme}; {}", auth.summary())
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
    config.storage_tuning.apply(&mut opts);
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
    // read before serving: a bad certificate stops the start, not the first request
    let tls_config = match &config.tls {
        Some(files) => Some(tls::load(&files.cert, &files.key)?),
        None => None,
    };
    let carbon_what = if udp.is_some() {
        "carbon plaintext (TCP and UDP)"
    } else {
        "carbon plaintext (TCP)"
    };
    let carbon_guard = carbon_guard(&config);
    log_listener(
        carbon_what,
        carbon_addr,
        "carbon.listen",
        "--carbon",
        &carbon_guard,
    );
    log_listener(
        "carbon pickle",
        pickle_addr,
        "carbon.pickle_listen",
        "--pickle",
        &carbon_guard,
    );
    log_listener(
        if tls_config.is_some() {
            "HTTPS"
        } else {
            "HTTP"
        },
        http_addr,
        "http.listen",
        "--http",
        &http_guard(&config, http_addr),
    );
    for warning in &config.warnings {
        warn!("{warning}");
    }

    let stats = Arc::new(IngestStats::default());
    let plain_opts = PlaintextOptions {
        max_line_bytes: config.max_line_bytes,
        max_connections: config.max_connections as u64,
        allow: config.carbon_allow.clone(),
        ..PlaintextOptions::default()
    };
    let sink: Arc<dyn sumi_model::Sink> = store.clone();
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
    state.auth = config.auth.clone();
    let readiness = state.readiness.clone();
    let http_stats = state.http_stats.clone();
    let state = Arc::new(state);
    let (http_stop_tx, mut http_stop) = watch::channel(false);
    let app = sumi_http::router(state).into_make_service_with_connect_info::<SocketAddr>();
    let stopped = async move {
        let _ = http_stop.wait_for(|stop| *stop).await;
    };
    let http_task = match tls_config {
        None => {
            tokio::spawn(
                async move { axum::serve(http, app).with_graceful_shutdown(stopped).await },
            )
        }
        Some(tls_config) => tokio::spawn(async move {
            // `tap_io` also gives the listener axum's ConnectInfo<SocketAddr>
            let listener = tls::TlsListener::new(http, tls_config).tap_io(|tls| {
                let _ = tls.get_ref().0.set_nodelay(true);
            });
            axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await
        }),
    };

    let (selfmon_stop_tx, selfmon_stop) = watch::channel(false);
    let selfmon_task = config.selfmon.enabled.then(|| {
        let sources = selfmon::Sources {
            ingest: stats.clone(),
            store: store.clone(),
            http: http_stats,
        };
        tokio::spawn(selfmon::run(
            config.selfmon.clone(),
            sources,
            sink.clone(),
            selfmon_stop,
        ))
    });

    readiness.set_ready();
    info!(
        carbon = %carbon_addr,
        udp = config.carbon_udp,
        pickle = %pickle_addr,
        http = %http_addr,
        tls = config.tls.is_some(),
        auth = config.auth.is_enabled(),
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

    notify::notify("READY=1");

    let _ = shutdown.wait_for(|stop| *stop).await;
    readiness.set_stopping();
    notify::notify("STOPPING=1");
    let _ = selfmon_stop_tx.send(true);
    if let Some(task) = selfmon_task {
        if let Err(e) = task.await {
            warn!("self-monitoring task failed: {e}");
        }
    }

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
