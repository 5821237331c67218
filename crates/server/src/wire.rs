//! Wiring: the configuration made into stages — the store opened, the ingest
//! listeners, HTTP and self-monitoring started on bound sockets — and held as one
//! [`Running`] server until [`Running::shutdown`] stops it in order.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use axum::serve::ListenerExt as _;
use sumi_cluster::{KafkaSink, Role, StorageConsumer};
use sumi_http::growthforecast::SeriesRegistry;
use sumi_http::ops::Readiness;
use sumi_ingest::{IngestStats, PlaintextOptions};
use sumi_model::{SeriesRules, StorageAggregation, StorageSchemas, SystemClock};
use sumi_store::{FsyncPolicy, Store, StoreOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::info;

use crate::bind::{Addrs, Listeners};
use crate::config::Config;
use crate::{notify, selfmon, tls};

/// A started server: the store, and each stage's task with the switch that stops it.
pub(crate) struct Running {
    pub(crate) store: Arc<Store>,
    pub(crate) readiness: Arc<Readiness>,
    pub(crate) selfmon: Option<JoinHandle<()>>,
    pub(crate) selfmon_stop: watch::Sender<bool>,
    pub(crate) ingest: Vec<JoinHandle<()>>,
    pub(crate) ingest_stop: watch::Sender<bool>,
    pub(crate) http: JoinHandle<std::io::Result<()>>,
    pub(crate) http_stop: watch::Sender<bool>,
    pub(crate) cluster: Option<ClusterNode>,
    /// The ingest-time anomaly detectors (`[[anomaly]]`), saved at shutdown.
    pub(crate) anomaly: Option<Arc<crate::anomaly::Engine>>,
    pub(crate) anomaly_saver: Option<JoinHandle<()>>,
    pub(crate) anomaly_stop: watch::Sender<bool>,
}

/// A cluster node's parts (`[cluster]`): the log producer every ingest path writes to,
/// and on a storage node the consumer of its owned partitions.
pub(crate) struct ClusterNode {
    pub(crate) sink: Arc<KafkaSink>,
    /// Started here, or by the joining thread once its copies are done.
    pub(crate) consumer: crate::cluster_join::ConsumerSlot,
    /// Owned partitions to copy from a peer before consuming (`copy_from_peers`).
    pub(crate) to_copy: Vec<u32>,
    /// The thread copying them and waiting for their catch-up, and its stop switch.
    pub(crate) joiner: Option<std::thread::JoinHandle<()>>,
    pub(crate) join_stop: Arc<std::sync::atomic::AtomicBool>,
    /// GrowthForecast's metadata log: where this node's mutations go, and the thread
    /// applying the log to this node's database (stopped by `join_stop`).
    pub(crate) gf_log: Arc<crate::gf_log::KafkaOpLog>,
    pub(crate) gf_applier: Option<std::thread::JoinHandle<()>>,
}

/// With `[cluster]`: makes sure the topic exists, creates the producer and, on a
/// storage node, starts consuming the owned partitions into `store`.
pub(crate) async fn open_cluster(
    config: &Config,
    store: &Arc<Store>,
    anomaly: Option<&Arc<crate::anomaly::Engine>>,
    gf_series: &SeriesRegistry,
) -> Result<Option<ClusterNode>> {
    let Some(cc) = config.cluster.clone() else {
        return Ok(None);
    };
    let t0 = Instant::now();
    let ensure = cc.clone();
    let data_dir = config.data_dir.clone();
    let auth = config.auth.peer_credential(sumi_http::auth::Access::Read);
    let log_starts = tokio::task::spawn_blocking(move || {
        sumi_cluster::ensure_topic(&ensure, std::time::Duration::from_secs(60))?;
        sumi_cluster::meta_log::ensure_meta_topic(&ensure, std::time::Duration::from_secs(60))?;
        // before growthforecast.db is opened: a copy of a peer's if the metadata log
        // no longer holds the ops it needs
        crate::gf_snapshot::restore_if_behind(&ensure, &data_dir, auth.as_deref())?;
        // a storage node checks that the log still holds what it has not applied
        Ok::<_, anyhow::Error>(match ensure.role {
            Role::Ingest => None,
            Role::Storage => {
                sumi_cluster::log_start_offsets(&ensure, std::time::Duration::from_secs(10))
                    .map_err(|e| tracing::warn!("reading the log's start offsets: {e:#}"))
                    .ok()
            }
        })
    })
    .await
    .context("checking the kafka topic")?
    .with_context(|| format!("kafka topic {} at {}", cc.topic, cc.brokers))?;
    let sink = Arc::new(
        KafkaSink::new(
            &cc,
            Arc::new(SystemClock),
            Some(&config.data_dir.join("cluster").join("spill")),
        )
        .context("creating the kafka producer")?,
    );
    let gf_log = Arc::new(crate::gf_log::KafkaOpLog::new(&cc)?);
    let to_copy = match cc.role {
        Role::Ingest => Vec::new(),
        Role::Storage => crate::cluster_join::partitions_to_copy(
            &cc,
            &config.data_dir,
            store,
            log_starts.as_deref(),
        )?,
    };
    // a node that copies partitions first starts its consumer once they are copied
    let consumer = match cc.role {
        Role::Storage if to_copy.is_empty() => Some(StorageConsumer::start(
            &cc,
            store.clone(),
            &config.data_dir,
            consumer_hooks(store, anomaly, gf_series),
        )?),
        _ => None,
    };
    info!(
        role = ?cc.role,
        topic = %cc.topic,
        partitions = cc.partitions,
        owned = ?cc.owned_partitions,
        to_copy = ?to_copy,
        secs = t0.elapsed().as_secs_f64(),
        "cluster node started"
    );
    Ok(Some(ClusterNode {
        sink,
        consumer: Arc::new(parking_lot::Mutex::new(consumer)),
        to_copy,
        joiner: None,
        join_stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        gf_log,
        gf_applier: None,
    }))
}

/// A storage node's hooks into its consumer: its detectors as the observer (none
/// without rules), and the registry of GrowthForecast series, which the store's
/// aggregation override reads, told of the series of flagged records.
pub(crate) fn consumer_hooks(
    store: &Arc<Store>,
    anomaly: Option<&Arc<crate::anomaly::Engine>>,
    gf_series: &SeriesRegistry,
) -> sumi_cluster::ConsumerHooks {
    let registry = gf_series.clone();
    sumi_cluster::ConsumerHooks {
        observer: anomaly.map(|engine| -> Arc<dyn sumi_cluster::ApplyObserver> {
            Arc::new(crate::anomaly::LogScorer {
                store: store.clone(),
                engine: engine.clone(),
            })
        }),
        graph_series: Some(Arc::new(move |name: &str| registry.insert(name))),
    }
}

/// The ingest-time anomaly detectors of `[[anomaly]]`, when any rule is given: on a
/// single node they score what ingest stores; on a cluster's storage node, what its
/// consumer applies from the log. A cluster's ingest node stores nothing to score
/// against: its rules are ignored, with a warning.
pub(crate) fn open_anomaly(
    config: &Config,
    store: &Arc<Store>,
) -> Result<Option<Arc<crate::anomaly::Engine>>> {
    if config.anomaly.rules.is_empty() {
        return Ok(None);
    }
    if config
        .cluster
        .as_ref()
        .is_some_and(|cc| cc.role == Role::Ingest)
    {
        tracing::warn!(
            "[[anomaly]] rules are ignored on a cluster's ingest node: the storage nodes \
             score what they apply (docs/anomaly.md)"
        );
        return Ok(None);
    }
    Ok(Some(Arc::new(crate::anomaly::Engine::open(
        &config.anomaly,
        store.clone(),
        &config.data_dir,
        config.max_future_secs,
    )?)))
}

/// With `[cluster]` peers: the fan-out that answers this node's reads for the whole
/// cluster.
fn fanout(config: &Config, store: &Arc<Store>) -> Option<sumi_http::fanout::Fanout> {
    let cc = config.cluster.as_ref()?;
    if cc.peers.is_empty() {
        return None;
    }
    let unplaced = cc.unplaced_partitions();
    if !unplaced.is_empty() {
        tracing::warn!(
            partitions = ?unplaced,
            "no peer in cluster.peers stores these partitions: every read will be partial"
        );
    }
    let opts = sumi_http::fanout::FanoutOptions {
        partitions: cc.partitions,
        peers: cc
            .peers
            .iter()
            .map(|p| sumi_http::fanout::Peer {
                node_id: p.node_id,
                http: p.http.clone(),
                partitions: p.partitions.clone(),
            })
            .collect(),
        node_id: cc.node_id,
        timeout: std::time::Duration::from_millis(u64::from(cc.read_timeout_ms.max(1))),
        placement: sumi_cluster::partition_for,
    };
    info!(
        peers = cc.peers.len(),
        "reads answered for the whole cluster"
    );
    Some(sumi_http::fanout::Fanout::new(opts, store.clone()))
}

/// The rules for new series: carbon's files when given, the built-in ones otherwise.
fn load_rules(config: &Config) -> Result<SeriesRules> {
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

/// The store's options from the configuration: the rules for new series, fsync,
/// `max_future_secs` and the storage tuning (what `sumi serve` opens the store with,
/// before GrowthForecast's aggregation override).
pub fn store_options(config: &Config) -> Result<StoreOptions> {
    let mut opts = StoreOptions::new(config.data_dir.clone());
    opts.rules = load_rules(config)?;
    opts.fsync = config
        .fsync
        .parse::<FsyncPolicy>()
        .map_err(|e| anyhow::anyhow!("storage.fsync: {e}"))?;
    opts.max_future_secs = config.max_future_secs;
    config.storage_tuning.apply(&mut opts);
    Ok(opts)
}

/// Opens the store with the configured rules, and the registry of GrowthForecast's
/// series, whose aggregation the store was opened with.
pub(crate) async fn open_store(config: &Config) -> Result<(Arc<Store>, SeriesRegistry)> {
    let t0 = Instant::now();
    let mut opts = store_options(config)?;
    // a storage node's retention judges by the log's time, which its consumer says
    // (sumi_cluster::log_time): a replica replaying late expires what the live one did
    opts.log_time_retention = config
        .cluster
        .as_ref()
        .is_some_and(|cc| cc.role == Role::Storage);
    // Series of GrowthForecast graphs roll up by average with xFilesFactor 0; anomaly
    // scores (`_anomaly.<name>`) by their maximum, so zoomed-out graphs keep the peaks.
    let gf_series = SeriesRegistry::new();
    let gf_override = gf_series.aggregation_override();
    let scores = sumi_query::functions::anomaly::SCORE_PREFIX;
    opts.rules.aggregation = opts
        .rules
        .aggregation
        .with_override(Arc::new(move |name: &str| {
            if name.starts_with(scores) {
                return Some((sumi_model::AggMethod::Max, 0.0));
            }
            gf_override(name)
        }));
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
    Ok((store, gf_series))
}

/// Starts every stage on `listeners` over an open store, then says the server is
/// ready (`/ready`, the ready file, systemd).
pub(crate) fn start(
    listeners: Listeners,
    config: &Config,
    store: Arc<Store>,
    gf_series: SeriesRegistry,
    cluster: Option<ClusterNode>,
    anomaly: Option<Arc<crate::anomaly::Engine>>,
) -> Result<Running> {
    let addrs = listeners.addrs()?;
    let Listeners {
        carbon,
        carbon_udp,
        pickle,
        http,
    } = listeners;
    // read before serving: a bad certificate stops the start, not the first request
    let tls_config = match &config.tls {
        Some(files) => Some(tls::load(&files.cert, &files.key)?),
        None => None,
    };
    let udp = carbon_udp.is_some();
    crate::bind::log_listeners(config, addrs, udp, tls_config.is_some());
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }

    let stats = Arc::new(IngestStats::default());
    let mut plain_opts = PlaintextOptions {
        max_line_bytes: config.max_line_bytes,
        max_connections: config.max_connections as u64,
        allow: config.carbon_allow.clone(),
        ..PlaintextOptions::default()
    };
    // a cluster node's append is one produce request per partition it touches, so its
    // carbon batches are larger (reads per wake-up in proportion, so that one can fill)
    if let (Some(cc), Some(_)) = (&config.cluster, &cluster) {
        let points = cc.ingest_batch_points;
        plain_opts.reads_per_wake = (points * plain_opts.reads_per_wake)
            .div_ceil(plain_opts.max_batch_points)
            .max(plain_opts.reads_per_wake);
        plain_opts.max_batch_points = points;
    }
    // a cluster node sends every point it takes in to the log; a single node stores it
    let sink: Arc<dyn sumi_model::Sink> = match &cluster {
        Some(c) => c.sink.clone(),
        None => store.clone(),
    };
    // watched series are scored once the store has their points: on a single node
    // at ingest, on a storage node as its consumer applies the log (`log_scorer`)
    let sink: Arc<dyn sumi_model::Sink> = match (&anomaly, &cluster) {
        (Some(engine), None) => Arc::new(crate::anomaly::AnomalySink {
            store: store.clone(),
            engine: engine.clone(),
        }),
        _ => sink,
    };
    let (anomaly_stop, anomaly_stopped) = watch::channel(false);
    let anomaly_saver = anomaly.as_ref().map(|engine| {
        info!(rules = config.anomaly.rules.0.len(), "anomaly detection on");
        tokio::spawn(crate::anomaly::save_periodically(
            engine.clone(),
            config.anomaly.save_interval,
            config.anomaly.close_quiet,
            anomaly_stopped,
        ))
    });
    let (ingest_stop, ingest_stopped) = watch::channel(false);
    let mut ingest = Vec::new();
    ingest.push(tokio::spawn(sumi_ingest::serve_tcp(
        carbon,
        sink.clone(),
        plain_opts.clone(),
        stats.clone(),
        ingest_stopped.clone(),
    )));
    if let Some(udp) = carbon_udp {
        ingest.push(tokio::spawn(sumi_ingest::serve_udp(
            udp,
            sink.clone(),
            plain_opts.clone(),
            stats.clone(),
            ingest_stopped.clone(),
        )));
    }
    ingest.push(tokio::spawn(sumi_ingest::serve_pickle(
        pickle,
        sink.clone(),
        sumi_ingest::PickleOptions {
            listener: plain_opts.clone(),
            ..sumi_ingest::PickleOptions::default()
        },
        stats.clone(),
        ingest_stopped.clone(),
    )));

    let mut http_options = config.http_options();
    if let Some(c) = &cluster {
        http_options.gf_log = Some(c.gf_log.clone());
    }
    let mut state = sumi_http::AppState::with_sink(
        store.clone(),
        sink.clone(),
        stats.clone(),
        &config.data_dir,
        gf_series.clone(),
        http_options,
    )?;
    let mut cluster = cluster;
    if let Some(c) = &mut cluster {
        if let Some(mut applier) = state.gf.take_applier() {
            let cc = config.cluster.clone().context("cluster config")?;
            if cc.role == Role::Storage {
                // deletes wait for the data topic (see OpMessage::data_ends)
                let slot = c.consumer.clone();
                applier.set_data_wait(crate::gf_log::data_wait(
                    move |p| {
                        let g = slot.lock();
                        let stats = g.as_ref()?.stats();
                        let pr = stats.partitions.get(&p)?;
                        Some(pr.next.load(std::sync::atomic::Ordering::Relaxed))
                    },
                    config.data_dir.join("cluster").join("offsets"),
                    cc.topic.clone(),
                    c.join_stop.clone(),
                ));
            }
            c.gf_applier = Some(crate::gf_log::start_applier(
                cc,
                applier,
                c.join_stop.clone(),
            )?);
        }
        let produce = c.sink.stats();
        state.extra_metrics.push(Arc::new(move |out: &mut String| {
            produce.write_prometheus(out)
        }));
        let is_storage = config
            .cluster
            .as_ref()
            .is_some_and(|cc| cc.role == Role::Storage);
        if is_storage {
            let slot = c.consumer.clone();
            state.extra_metrics.push(Arc::new(move |out: &mut String| {
                if let Some(consumer) = slot.lock().as_ref() {
                    consumer.stats().write_prometheus(out)
                }
            }));
        }
        if let Some(mut fanout) = fanout(config, &store) {
            fanout.anomalies = anomaly
                .clone()
                .map(|e| -> Arc<dyn sumi_http::anomaly_api::AnomalyFeed> { e });
            let reads = fanout.stats.clone();
            state.extra_metrics.push(Arc::new(move |out: &mut String| {
                reads.write_prometheus(out)
            }));
            let states = fanout.states().clone();
            // the consumer's progress, for the partition dumps this node gives
            let slot = c.consumer.clone();
            states.set_offsets(Arc::new(move |p| {
                let g = slot.lock();
                let stats = g.as_ref()?.stats();
                let pr = stats.partitions.get(&p)?;
                Some(pr.next.load(std::sync::atomic::Ordering::Relaxed))
            }));
            if is_storage {
                let cc = config.cluster.as_ref().context("cluster config")?;
                // the consumer's lag, against read_max_lag_records
                let slot = c.consumer.clone();
                states.set_lag(
                    Arc::new(move |p| {
                        let g = slot.lock();
                        let stats = g.as_ref()?.stats();
                        let pr = stats.partitions.get(&p)?;
                        let high = pr.high.load(std::sync::atomic::Ordering::Relaxed);
                        let next = pr.next.load(std::sync::atomic::Ordering::Relaxed);
                        Some((high - next).max(0))
                    }),
                    cc.read_max_lag_records,
                );
                let shown = states.clone();
                let owned = cc.owned_partitions.clone();
                state.extra_metrics.push(Arc::new(move |out: &mut String| {
                    shown.write_prometheus(out, &owned)
                }));
            }
            if !c.to_copy.is_empty() {
                // joining before the first request: never counted as a replica early
                for &p in &c.to_copy {
                    states.set_joining(p, sumi_http::handoff::Phase::Copying);
                }
                let join = crate::cluster_join::Join {
                    cc: config.cluster.clone().context("cluster config")?,
                    store: store.clone(),
                    data_dir: config.data_dir.clone(),
                    states,
                    consumer: c.consumer.clone(),
                    partitions: c.to_copy.clone(),
                    stop: c.join_stop.clone(),
                    auth: config.auth.peer_credential(sumi_http::auth::Access::Read),
                    hooks: consumer_hooks(&store, anomaly.as_ref(), &gf_series),
                };
                c.joiner = Some(
                    std::thread::Builder::new()
                        .name("sumi-join".into())
                        .spawn(move || join.run())
                        .context("starting the partition copy")?,
                );
            } else if is_storage {
                // behind the log after a restart: asked only when no caught-up
                // replica is left, until the consumer reaches the log end
                let cc = config.cluster.clone().context("cluster config")?;
                let replay = crate::cluster_join::Replay {
                    partitions: cc.owned_partitions.clone(),
                    cc,
                    states,
                    consumer: c.consumer.clone(),
                    stop: c.join_stop.clone(),
                };
                replay.mark();
                c.joiner = Some(
                    std::thread::Builder::new()
                        .name("sumi-replay".into())
                        .spawn(move || replay.run())
                        .context("starting the replay watch")?,
                );
            }
            state.fanout = Some(Arc::new(fanout));
        }
    }
    if let Some(engine) = &anomaly {
        state.anomalies = Some(engine.clone());
    }
    let readiness = state.readiness.clone();
    let http_stats = state.http_stats.clone();
    let (http_stop, mut http_stopped) = watch::channel(false);
    let app =
        sumi_http::router(Arc::new(state)).into_make_service_with_connect_info::<SocketAddr>();
    let stopped = async move {
        let _ = http_stopped.wait_for(|stop| *stop).await;
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

    let (selfmon_stop, selfmon_stopped) = watch::channel(false);
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
            selfmon_stopped,
        ))
    });

    let running = Running {
        store,
        readiness,
        selfmon: selfmon_task,
        selfmon_stop,
        ingest,
        ingest_stop,
        http: http_task,
        http_stop,
        cluster,
        anomaly,
        anomaly_saver,
        anomaly_stop,
    };
    running.readiness.set_ready();
    announce(config, addrs, udp)?;
    Ok(running)
}

/// Says where the server listens: the log, the ready file, systemd.
fn announce(config: &Config, addrs: Addrs, udp: bool) -> Result<()> {
    let Addrs {
        carbon,
        pickle,
        http,
    } = addrs;
    info!(
        carbon = %carbon,
        udp,
        pickle = %pickle,
        http = %http,
        tls = config.tls.is_some(),
        auth = config.auth.is_enabled(),
        "sumi serving"
    );
    if let Some(path) = &config.ready_file {
        let json = format!(
            "{{\"carbon\":\"{carbon}\",\"pickle\":\"{pickle}\",\"http\":\"{http}\",\"pid\":{}}}\n",
            std::process::id()
        );
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, json)
            .and_then(|()| std::fs::rename(&tmp, path))
            .with_context(|| format!("writing ready file {}", path.display()))?;
    }
    notify::notify("READY=1");
    Ok(())
}
