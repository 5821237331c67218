//! Configuration: `sumi.toml` (every key optional) overridden by command-line flags,
//! validated into one typed [`Config`] that the wiring hands down stage by stage.
//!
//! The file, with every key at its default:
//!
//! ```toml
//! # Where the embedded engine keeps its files.
//! data_dir = "./data"
//!
//! [carbon]
//! # Carbon plaintext, TCP and UDP on the same address. Loopback unless you open it
//! # ("0.0.0.0:2003" for every interface).
//! listen = "127.0.0.1:2003"
//! udp = true
//! # Carbon pickle (TCP).
//! pickle_listen = "127.0.0.1:2004"
//! # Longer lines are skipped and counted (carbon's own limit is 16 KiB).
//! max_line_bytes = 16384
//! # Concurrent TCP connections; more are refused and counted.
//! max_connections = 10000
//! # New series created per minute, over every ingest path (carbon's
//! # MAX_CREATES_PER_MINUTE, but nothing is dropped): over it, a batch that names new
//! # series waits, so its connection stops being read (TCP back-pressure) while other
//! # connections and existing series keep flowing; HTTP ingest answers 429. 0 is
//! # unlimited, the default: sumi creates a series in microseconds (no file per series),
//! # so the limit is a guard against a runaway client, sized by the operator.
//! max_new_series_per_minute = 0
//! # Networks (CIDR, IPv4 or IPv6) that may send to the carbon ports (plaintext TCP and
//! # UDP, pickle); others are refused and counted. Absent: every source.
//! # allow = ["10.0.0.0/8", "127.0.0.1/32"]
//!
//! [http]
//! # Graphite API, /metrics, /health, /ready.
//! listen = "127.0.0.1:8080"
//! # HTTPS: a PEM certificate chain and its private key (both or neither).
//! # tls_cert = "/etc/sumi/tls/cert.pem"
//! # tls_key = "/etc/sumi/tls/key.pem"
//! # Time zone for from/until and csv output when a request has no `tz`
//! # (graphite-web's TIME_ZONE setting).
//! timezone = "UTC"
//! # What one /render request may read, over all its targets and the fetches its
//! # functions make; a request over either limit is answered 422 with a message saying
//! # which limit, how much it asked for and how to narrow it, before any data is read.
//! # Points are slots: a series over 24 h at 10 s is 8,640 of them. Measured peak RSS
//! # above an idle server: 18 M points as plain paths +150 MB (8 bytes and a bit a
//! # point), through sumSeries() +430 MB (a function holds series, 16 bytes a point
//! # and a few hundred bytes a series). 20 M keeps one request near half a GB and
//! # admits a million series x 10 points, or 2,300 series over a day at 10 s.
//! max_points_per_query = 20000000
//! # 2 M: the million-series benchmark query (+280 MB as plain paths, +710 MB through
//! # sumSeries) fits with room to spare; twice that through a function is ~1.5 GB.
//! max_series_per_query = 2000000
//!
//! [storage]
//! # carbon's config files; without them the built-in rules apply (see README).
//! schemas = ""
//! aggregation = ""
//! # "always" (every batch), a period such as "1s", or "never".
//! fsync = "1s"
//! # Points further in the future than this are refused (seconds).
//! max_future_secs = 3600
//! # Writes are refused (clients held back) while the data disk has less free; they
//! # resume by themselves when space returns. 0 turns the guard off.
//! min_free_bytes = 268435456
//! # Maintenance pace (defaults shown); crash tests shorten them.
//! flush_interval = "10s"
//! maintenance_interval = "1s"
//! rollup_grace_secs = 600
//! # Write a coarser archive's rollup only just before the finer archive's retention
//! # drops its data (reads compute it until then); false rolls up as soon as a
//! # partition closes, storing recent data twice.
//! lazy_rollups = true
//! wal_segment_bytes = 67108864
//! # At most this many series; points of further new series are refused, counted
//! # (sumi_points_rejected_total{reason="series_limit"}) and logged, HTTP ingest
//! # answers 507. 0 is unlimited (the default). An index entry costs ~100 bytes plus
//! # the name, so memory is rarely the reason; a bounded cardinality is.
//! max_series = 0
//!
//! [auth]
//! # Bearer tokens (also accepted as the password of HTTP basic auth), per class of
//! # endpoint; a class without tokens is open (admin endpoints are open only when no
//! # token at all is set). Tokens may also be read from files, one per line, so that
//! # they stay out of this file.
//! read_tokens = []
//! write_tokens = []
//! admin_tokens = []
//! # read_token_file = "/etc/sumi/read.tokens"
//! # write_token_file = "/etc/sumi/write.tokens"
//! # admin_token_file = "/etc/sumi/admin.tokens"
//! # Prometheus /metrics needs no token even when reads do.
//! public_metrics = true
//!
//! [selfmon]
//! # sumi's own counters as series (like carbon.agents.<host>.*).
//! enabled = true
//! # carbon's CARBON_METRIC_INTERVAL.
//! interval_secs = 60
//! # {host} is this machine's name with dots as "_".
//! prefix = "sumi.agents.{host}"
//!
//! # A node of a cluster on Apache Kafka (docs/cluster.md); absent: a single node.
//! # [cluster]
//! # Kafka's bootstrap servers.
//! # brokers = "127.0.0.1:9092"
//! # topic = "sumi-points"
//! # Partitions of the topic (the unit of sharding, fixed for the topic's life): a
//! # series goes to FNV-1a-64(canonical name) mod partitions.
//! # partitions = 8
//! # Kafka replicas of each partition when this node creates the topic; 0: min(3, brokers).
//! # replication_factor = 0
//! # "ingest": every protocol is taken in and produced to the log, nothing is stored;
//! # "storage": the same, and the owned partitions are consumed into this node's engine.
//! # role = "ingest"
//! # node_id = 1
//! # owned_partitions = [0, 1, 2, 3]
//! # How long the producer gathers records (ms), and how long an append waits for
//! # Kafka's acknowledgement before the client is told to retry (ms).
//! # linger_ms = 5
//! # append_timeout_ms = 10000
//! # Most points of one carbon connection in one append (one produce request per
//! # partition it touches; the broker's CPU follows its requests). A single node's is 8192.
//! # ingest_batch_points = 65536
//! # Compression of the producer's record batches: "none", "lz4", "snappy" or "gzip"
//! # (not "zstd": the bundled librdkafka is built without it) (docs/cluster.md, "Throughput", has what each cost when measured; lz4 where
//! # bandwidth to Kafka is scarcer than CPU).
//! # compression = "none"
//! # The log record version written: 2 (front-coded names, short values, about a third
//! # of version 1's bytes) or 1 (for storage nodes of a release before version 2;
//! # storage nodes read both).
//! # record_version = 2
//! # Appends Kafka has not taken by then go to an on-disk spill (data_dir/cluster/spill),
//! # are acknowledged from there and delivered in order when Kafka is back: at most
//! # this many bytes (1 GiB); 0: no spill, the client is held back.
//! # spill_max_bytes = 1073741824
//! # Every storage node, this one included: with peers, reads (/render, /metrics/find,
//! # /metrics/expand, /tags/*, GrowthForecast) answer for the whole cluster, asking one
//! # live replica of each partition (how long for one peer before its replica: ms).
//! # read_timeout_ms = 5000
//! # Storage role: an owned partition without a consumed offset here (a node added, a
//! # partition moved here) is copied from a peer storing it, then caught up from the log
//! # from the offset the copy covers (docs/cluster.md, "Adding a node, moving a partition").
//! # copy_from_peers = false
//! # Storage role: at most this many points a second applied from the log (0: no cap).
//! # consume_max_points_per_sec = 0
//! # Storage role: more records than this behind the log end and a partition is asked
//! # for reads only when no other replica is left (0: only while replaying after a
//! # start; docs/cluster.md, "Reads").
//! # read_max_lag_records = 0
//! # [[cluster.peers]]
//! # node_id = 1
//! # http = "10.0.0.1:8080"
//! # partitions = [0, 1, 2, 3]
//!
//! # Anomaly detection on ingest (docs/anomaly.md). No table: no series is watched.
//! # Each table chooses series by glob and/or tag expressions (first match wins); its
//! # other keys override the detector's settings.
//! # [[anomaly]]
//! # match = "servers.*.cpu.total"
//! # tags = ["env=prod"]
//! # alarm = 0.6
//!
//! # Where anomaly events go, and how the detectors' state is kept.
//! # [anomaly_events]
//! # webhooks = []
//! # webhook_attempts = 5
//! # webhook_backoff = "500ms"
//! # webhook_timeout = "10s"
//! # save_interval = "5m"
//! # keep_events = 10000
//! # an open event whose series sends nothing for this long is closed
//! # close_quiet = "30m"
//!
//! [log]
//! # tracing filter, e.g. "info" or "sumi=debug,info"; RUST_LOG wins when set.
//! level = "info"
//! # "text" for people, "json" (one object a line) for log shippers.
//! format = "text"
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use sumi_http::auth::{Auth, AuthConfig};
use sumi_ingest::listen::SourceAllowlist;

use crate::selfmon::{self, SelfmonOptions};

/// The file as written: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    pub(crate) data_dir: Option<PathBuf>,
    #[serde(default)]
    pub(crate) carbon: CarbonSection,
    #[serde(default)]
    pub(crate) http: HttpSection,
    #[serde(default)]
    pub(crate) storage: StorageSection,
    #[serde(default)]
    pub(crate) auth: AuthSection,
    #[serde(default)]
    pub(crate) selfmon: SelfmonSection,
    #[serde(default)]
    pub(crate) log: LogSection,
    pub(crate) cluster: Option<sumi_cluster::ClusterConfig>,
    #[serde(default)]
    pub(crate) anomaly: Vec<crate::anomaly::rules::RuleTable>,
    #[serde(default)]
    pub(crate) anomaly_events: AnomalyEventsSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnomalyEventsSection {
    pub(crate) webhooks: Option<Vec<String>>,
    pub(crate) webhook_attempts: Option<u32>,
    pub(crate) webhook_backoff: Option<String>,
    pub(crate) webhook_timeout: Option<String>,
    pub(crate) save_interval: Option<String>,
    pub(crate) keep_events: Option<usize>,
    pub(crate) close_quiet: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CarbonSection {
    pub(crate) listen: Option<String>,
    pub(crate) udp: Option<bool>,
    pub(crate) pickle_listen: Option<String>,
    pub(crate) max_line_bytes: Option<usize>,
    pub(crate) max_connections: Option<usize>,
    pub(crate) max_new_series_per_minute: Option<u64>,
    pub(crate) allow: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HttpSection {
    pub(crate) listen: Option<String>,
    pub(crate) timezone: Option<String>,
    pub(crate) max_points_per_query: Option<u64>,
    pub(crate) max_series_per_query: Option<u64>,
    pub(crate) tls_cert: Option<PathBuf>,
    pub(crate) tls_key: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StorageSection {
    pub(crate) schemas: Option<PathBuf>,
    pub(crate) aggregation: Option<PathBuf>,
    pub(crate) fsync: Option<String>,
    pub(crate) max_future_secs: Option<i64>,
    pub(crate) min_free_bytes: Option<u64>,
    pub(crate) flush_interval: Option<String>,
    pub(crate) maintenance_interval: Option<String>,
    pub(crate) rollup_grace_secs: Option<i64>,
    pub(crate) lazy_rollups: Option<bool>,
    pub(crate) wal_segment_bytes: Option<u64>,
    pub(crate) max_series: Option<usize>,
    pub(crate) close_merge: Option<String>,
}

/// Store knobs from `[storage]` beyond the common ones; `None` keeps the store's
/// default. The intervals exist mostly so that crash tests can make seals,
/// compactions, rollups and retention drops happen every fraction of a second.
#[derive(Clone, Debug, Default)]
pub(crate) struct StorageTuning {
    pub(crate) min_free_bytes: Option<u64>,
    pub(crate) flush_interval: Option<std::time::Duration>,
    pub(crate) maintenance_interval: Option<std::time::Duration>,
    pub(crate) rollup_grace_secs: Option<i64>,
    pub(crate) lazy_rollups: Option<bool>,
    pub(crate) wal_segment_bytes: Option<u64>,
    pub(crate) max_series: Option<usize>,
    /// How long a stop may merge parts (`close_merge = "3500ms"`; `"0s"`: none).
    pub(crate) close_merge: Option<std::time::Duration>,
    /// From `[carbon]`, where operators look for carbon's `MAX_CREATES_PER_MINUTE`.
    pub(crate) max_new_series_per_minute: Option<u64>,
}

impl StorageTuning {
    fn from_section(s: &StorageSection) -> Result<StorageTuning> {
        let dur = |key: &str, v: &Option<String>| -> Result<Option<std::time::Duration>> {
            v.as_deref()
                .map(|t| match t.parse::<sumi_store::FsyncPolicy>() {
                    Ok(sumi_store::FsyncPolicy::Interval(d)) => Ok(d),
                    _ => bail!(
                        "storage.{key} = {t:?}: expected a duration such as \"500ms\" or \"10s\""
                    ),
                })
                .transpose()
        };
        if s.rollup_grace_secs.is_some_and(|g| g < 0) {
            bail!("storage.rollup_grace_secs must not be negative");
        }
        Ok(StorageTuning {
            min_free_bytes: s.min_free_bytes,
            flush_interval: dur("flush_interval", &s.flush_interval)?,
            maintenance_interval: dur("maintenance_interval", &s.maintenance_interval)?,
            rollup_grace_secs: s.rollup_grace_secs,
            lazy_rollups: s.lazy_rollups,
            wal_segment_bytes: s.wal_segment_bytes,
            max_series: s.max_series,
            close_merge: match s.close_merge.as_deref() {
                Some("0" | "0s" | "0ms") => Some(std::time::Duration::ZERO),
                _ => dur("close_merge", &s.close_merge)?,
            },
            max_new_series_per_minute: None,
        })
    }

    /// Sets the knobs that were given.
    pub(crate) fn apply(&self, o: &mut sumi_store::StoreOptions) {
        if let Some(v) = self.min_free_bytes {
            o.min_free_bytes = v;
        }
        if let Some(v) = self.flush_interval {
            o.flush_interval = v;
        }
        if let Some(v) = self.maintenance_interval {
            o.maintenance_interval = v;
        }
        if let Some(v) = self.rollup_grace_secs {
            o.rollup_grace_secs = v;
        }
        if let Some(v) = self.lazy_rollups {
            o.lazy_rollups = v;
        }
        if let Some(v) = self.wal_segment_bytes {
            o.wal_segment_bytes = v;
        }
        if let Some(v) = self.max_series {
            o.max_series = v;
        }
        if let Some(v) = self.close_merge {
            o.close_merge = v;
        }
        if let Some(v) = self.max_new_series_per_minute {
            o.max_new_series_per_minute = v;
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuthSection {
    pub(crate) read_tokens: Option<Vec<String>>,
    pub(crate) write_tokens: Option<Vec<String>>,
    pub(crate) admin_tokens: Option<Vec<String>>,
    pub(crate) read_token_file: Option<PathBuf>,
    pub(crate) write_token_file: Option<PathBuf>,
    pub(crate) admin_token_file: Option<PathBuf>,
    pub(crate) public_metrics: Option<bool>,
}

/// Tokens never reach a log line, not even through `Debug`.
impl std::fmt::Debug for AuthSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |l: &Option<Vec<String>>| l.as_ref().map_or(0, Vec::len);
        f.debug_struct("AuthSection")
            .field("read_tokens", &n(&self.read_tokens))
            .field("write_tokens", &n(&self.write_tokens))
            .field("admin_tokens", &n(&self.admin_tokens))
            .field("read_token_file", &self.read_token_file)
            .field("write_token_file", &self.write_token_file)
            .field("admin_token_file", &self.admin_token_file)
            .field("public_metrics", &self.public_metrics)
            .finish()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SelfmonSection {
    pub(crate) enabled: Option<bool>,
    pub(crate) interval_secs: Option<u64>,
    pub(crate) prefix: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogSection {
    pub(crate) level: Option<String>,
    pub(crate) format: Option<String>,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// One line per event for people (colours on a terminal).
    #[default]
    Text,
    /// One JSON object per line, event fields at the top level, for log shippers.
    Json,
}

/// The certificate chain and key of HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsFiles {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// Flags of `sumi serve` that override the file.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct ServeFlags {
    /// sumi.toml to read (default: ./sumi.toml when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Directory of the embedded engine [default: ./data].
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// Carbon plaintext address, TCP and UDP [default: 127.0.0.1:2003].
    #[arg(long, value_name = "ADDR")]
    pub(crate) carbon: Option<String>,
    /// Carbon pickle address [default: 127.0.0.1:2004].
    #[arg(long, value_name = "ADDR")]
    pub(crate) pickle: Option<String>,
    /// HTTP address (Graphite API, /metrics, /health) [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// carbon's storage-schemas.conf [default: built-in rules].
    #[arg(long, value_name = "FILE")]
    pub(crate) storage_schemas: Option<PathBuf>,
    /// carbon's storage-aggregation.conf [default: built-in rules].
    #[arg(long, value_name = "FILE")]
    pub(crate) storage_aggregation: Option<PathBuf>,
    /// Write the bound addresses as JSON to this file once serving (for scripts and
    /// tests that bind port 0).
    #[arg(long, value_name = "FILE")]
    pub(crate) ready_file: Option<PathBuf>,
    /// Do not record sumi's own series, whatever sumi.toml says (for comparisons with a
    /// server that has none).
    #[arg(long)]
    pub(crate) no_selfmon: bool,
}

impl ServeFlags {
    /// Only the config file and the data directory, as other subcommands (`sumi
    /// import`) take them; the rest from the file or the defaults.
    pub fn files(config: Option<PathBuf>, data_dir: Option<PathBuf>) -> ServeFlags {
        ServeFlags {
            config,
            data_dir,
            ..ServeFlags::default()
        }
    }
}

/// The validated configuration: [`Config::load`] for `sumi serve`,
/// [`Config::for_tests`] for a server run in-process.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) data_dir: PathBuf,
    pub(crate) carbon_addr: SocketAddr,
    pub(crate) carbon_udp: bool,
    pub(crate) pickle_addr: SocketAddr,
    pub(crate) http_addr: SocketAddr,
    pub(crate) max_line_bytes: usize,
    pub(crate) max_connections: usize,
    pub(crate) timezone: String,
    pub(crate) max_points_per_query: u64,
    pub(crate) max_series_per_query: u64,
    pub(crate) schemas_file: Option<PathBuf>,
    pub(crate) aggregation_file: Option<PathBuf>,
    pub(crate) fsync: String,
    pub(crate) max_future_secs: i64,
    pub(crate) storage_tuning: StorageTuning,
    pub(crate) log_level: String,
    pub(crate) log_format: LogFormat,
    pub(crate) ready_file: Option<PathBuf>,
    /// Sources allowed on the carbon ports (`None`: all).
    pub(crate) carbon_allow: Option<Arc<SourceAllowlist>>,
    /// HTTPS instead of HTTP when set.
    pub(crate) tls: Option<TlsFiles>,
    /// Tokens per class of endpoint (validated; `Debug` shows no token).
    pub(crate) auth: Arc<Auth>,
    pub(crate) selfmon: SelfmonOptions,
    /// Things worth saying once logging is up (such as a token file others can read).
    pub(crate) warnings: Vec<String>,
    /// A node of a cluster on Kafka (`[cluster]`); `None`: a single node.
    pub(crate) cluster: Option<sumi_cluster::ClusterConfig>,
    /// `[[anomaly]]` rules and `[anomaly_events]`.
    pub(crate) anomaly: crate::anomaly::AnomalyOptions,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            data_dir: PathBuf::from("./data"),
            carbon_addr: "127.0.0.1:2003".parse().expect("valid default"),
            carbon_udp: true,
            pickle_addr: "127.0.0.1:2004".parse().expect("valid default"),
            http_addr: "127.0.0.1:8080".parse().expect("valid default"),
            max_line_bytes: 16 * 1024,
            max_connections: 10_000,
            timezone: "UTC".into(),
            max_points_per_query: sumi_http::source::QueryLimits::DEFAULT_MAX_POINTS,
            max_series_per_query: sumi_http::source::QueryLimits::DEFAULT_MAX_SERIES,
            schemas_file: None,
            aggregation_file: None,
            fsync: "1s".into(),
            max_future_secs: 3600,
            storage_tuning: StorageTuning::default(),
            log_level: "info".into(),
            log_format: LogFormat::Text,
            ready_file: None,
            carbon_allow: None,
            tls: None,
            auth: Arc::new(Auth::disabled()),
            selfmon: SelfmonOptions::default(),
            warnings: Vec::new(),
            cluster: None,
            anomaly: crate::anomaly::AnomalyOptions::default(),
        }
    }
}

/// `[[anomaly]]` tables and `[anomaly_events]`, validated.
fn anomaly_from(
    tables: &[crate::anomaly::rules::RuleTable],
    ev: AnomalyEventsSection,
) -> Result<crate::anomaly::AnomalyOptions> {
    let mut o = crate::anomaly::AnomalyOptions {
        rules: crate::anomaly::rules::Rules::from_tables(tables)?,
        ..crate::anomaly::AnomalyOptions::default()
    };
    let dur = |key: &str, v: &Option<String>| -> Result<Option<Duration>> {
        v.as_deref()
            .map(|t| match t.parse::<sumi_store::FsyncPolicy>() {
                Ok(sumi_store::FsyncPolicy::Interval(d)) if !d.is_zero() => Ok(d),
                _ => bail!(
                    "anomaly_events.{key} = {t:?}: expected a duration such as \"500ms\" or \"5m\""
                ),
            })
            .transpose()
    };
    if let Some(urls) = ev.webhooks {
        for u in &urls {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                bail!("anomaly_events.webhooks: {u:?} is not an http:// or https:// URL");
            }
        }
        o.webhooks.urls = urls;
    }
    if let Some(n) = ev.webhook_attempts {
        if n == 0 {
            bail!("anomaly_events.webhook_attempts must be at least 1");
        }
        o.webhooks.attempts = n;
    }
    if let Some(d) = dur("webhook_backoff", &ev.webhook_backoff)? {
        o.webhooks.backoff = d;
    }
    if let Some(d) = dur("webhook_timeout", &ev.webhook_timeout)? {
        o.webhooks.timeout = d;
    }
    if let Some(d) = dur("save_interval", &ev.save_interval)? {
        o.save_interval = d;
    }
    if let Some(n) = ev.keep_events {
        o.keep_events = n;
    }
    if let Some(d) = dur("close_quiet", &ev.close_quiet)? {
        if d.is_zero() {
            bail!("anomaly_events.close_quiet must be above 0");
        }
        o.close_quiet = d;
    }
    Ok(o)
}

fn parse_addr(what: &str, s: &str) -> Result<SocketAddr> {
    s.parse()
        .with_context(|| format!("{what}: {s:?} is not an address such as 127.0.0.1:2003"))
}

fn non_empty(p: Option<PathBuf>) -> Option<PathBuf> {
    p.filter(|p| !p.as_os_str().is_empty())
}

impl Config {
    /// Reads the file named by `--config` (or `./sumi.toml` when present), then applies
    /// the flags on top.
    pub fn load(flags: &ServeFlags) -> Result<Config> {
        let file = match &flags.config {
            Some(path) => Some(read_file(path)?),
            None if Path::new("sumi.toml").exists() => Some(read_file(Path::new("sumi.toml"))?),
            None => None,
        };
        Config::from_parts(file.unwrap_or_default(), flags)
    }

    /// The defaults with the store in `data_dir` and every listener on a free
    /// loopback port (`127.0.0.1:0`), for a server run in-process by a test.
    pub fn for_tests(data_dir: &Path) -> Config {
        let any_port: SocketAddr = "127.0.0.1:0".parse().expect("valid address");
        Config {
            data_dir: data_dir.to_path_buf(),
            carbon_addr: any_port,
            pickle_addr: any_port,
            http_addr: any_port,
            ..Config::default()
        }
    }

    /// The store's directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// On a node of a cluster (`[cluster]`), its own HTTP address as a URL, where a
    /// command run beside it reaches it (an unspecified address as loopback); `None`
    /// on a single node.
    pub fn cluster_node_url(&self) -> Option<String> {
        self.cluster.as_ref()?;
        let mut addr = self.http_addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        Some(format!("http://{addr}"))
    }

    /// What the HTTP stage is built with.
    pub(crate) fn http_options(&self) -> sumi_http::HttpOptions {
        sumi_http::HttpOptions {
            timezone: self.timezone.clone(),
            limits: sumi_http::source::QueryLimits {
                max_points: self.max_points_per_query,
                max_series: self.max_series_per_query,
            },
            auth: self.auth.clone(),
            // a cluster node's is set when its metadata log is open (wire.rs)
            gf_log: None,
        }
    }

    pub(crate) fn from_parts(file: FileConfig, flags: &ServeFlags) -> Result<Config> {
        let mut c = Config::default();
        if let Some(d) = file.data_dir {
            c.data_dir = d;
        }
        if let Some(a) = &file.carbon.listen {
            c.carbon_addr = parse_addr("carbon.listen", a)?;
        }
        if let Some(u) = file.carbon.udp {
            c.carbon_udp = u;
        }
        if let Some(a) = &file.carbon.pickle_listen {
            c.pickle_addr = parse_addr("carbon.pickle_listen", a)?;
        }
        if let Some(n) = file.carbon.max_line_bytes {
            c.max_line_bytes = n;
        }
        if let Some(n) = file.carbon.max_connections {
            c.max_connections = n;
        }
        if let Some(a) = &file.http.listen {
            c.http_addr = parse_addr("http.listen", a)?;
        }
        if let Some(tz) = file.http.timezone {
            c.timezone = tz;
        }
        if let Some(n) = file.http.max_points_per_query {
            c.max_points_per_query = n;
        }
        if let Some(n) = file.http.max_series_per_query {
            c.max_series_per_query = n;
        }
        c.storage_tuning = StorageTuning::from_section(&file.storage)?;
        c.storage_tuning.max_new_series_per_minute = file.carbon.max_new_series_per_minute;
        c.schemas_file = non_empty(file.storage.schemas);
        c.aggregation_file = non_empty(file.storage.aggregation);
        if let Some(f) = file.storage.fsync {
            c.fsync = f;
        }
        if let Some(s) = file.storage.max_future_secs {
            c.max_future_secs = s;
        }
        if let Some(l) = file.log.level {
            c.log_level = l;
        }
        c.log_format = match file.log.format.as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => bail!("log.format = {other:?}: expected \"text\" or \"json\""),
        };
        if let Some(list) = &file.carbon.allow {
            let allow = SourceAllowlist::parse(list).context("carbon.allow")?;
            c.carbon_allow = Some(Arc::new(allow));
        }
        c.tls = match (non_empty(file.http.tls_cert), non_empty(file.http.tls_key)) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => bail!("http.tls_cert and http.tls_key go together: set both or neither"),
        };
        c.auth = Arc::new(auth_from(file.auth, &mut c.warnings)?);
        c.selfmon = selfmon_from(file.selfmon)?;
        if let Some(cluster) = file.cluster {
            cluster.validate().map_err(anyhow::Error::msg)?;
            c.cluster = Some(cluster);
        }
        c.anomaly = anomaly_from(&file.anomaly, file.anomaly_events)?;

        if let Some(d) = &flags.data_dir {
            c.data_dir = d.clone();
        }
        if let Some(a) = &flags.carbon {
            c.carbon_addr = parse_addr("--carbon", a)?;
        }
        if let Some(a) = &flags.pickle {
            c.pickle_addr = parse_addr("--pickle", a)?;
        }
        if let Some(a) = &flags.http {
            c.http_addr = parse_addr("--http", a)?;
        }
        if let Some(p) = &flags.storage_schemas {
            c.schemas_file = Some(p.clone());
        }
        if let Some(p) = &flags.storage_aggregation {
            c.aggregation_file = Some(p.clone());
        }
        c.ready_file = flags.ready_file.clone();
        if flags.no_selfmon {
            c.selfmon.enabled = false;
        }

        if c.max_line_bytes < 64 {
            bail!(
                "carbon.max_line_bytes = {} is too small (at least 64)",
                c.max_line_bytes
            );
        }
        if c.max_connections == 0 {
            bail!("carbon.max_connections must be at least 1");
        }
        if c.max_future_secs < 0 {
            bail!("storage.max_future_secs must not be negative");
        }
        if c.max_points_per_query == 0 || c.max_series_per_query == 0 {
            bail!("http.max_points_per_query and http.max_series_per_query must be at least 1");
        }
        Ok(c)
    }
}

/// `[auth]`: inline tokens plus those of the token files, validated.
fn auth_from(section: AuthSection, warnings: &mut Vec<String>) -> Result<Auth> {
    let mut lists: [Vec<String>; 3] = [
        section.read_tokens.unwrap_or_default(),
        section.write_tokens.unwrap_or_default(),
        section.admin_tokens.unwrap_or_default(),
    ];
    let files = [
        ("auth.read_token_file", section.read_token_file),
        ("auth.write_token_file", section.write_token_file),
        ("auth.admin_token_file", section.admin_token_file),
    ];
    for (list, (key, file)) in lists.iter_mut().zip(files) {
        if let Some(path) = non_empty(file) {
            list.extend(read_token_file(key, &path, warnings)?);
        }
    }
    let [read_tokens, write_tokens, admin_tokens] = lists;
    Ok(Auth::new(&AuthConfig {
        read_tokens,
        write_tokens,
        admin_tokens,
        public_metrics: section.public_metrics.unwrap_or(true),
    })?)
}

/// Tokens of a file: one per line; blank lines and `#` comments skipped.
fn read_token_file(key: &str, path: &Path, warnings: &mut Vec<String>) -> Result<Vec<String>> {
    use std::os::unix::fs::PermissionsExt;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{key}: reading {}", path.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o007 != 0 {
            warnings.push(format!(
                "{key}: {} is readable by every user (mode {mode:03o}); chmod o-rwx it",
                path.display()
            ));
        }
    }
    let tokens: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if tokens.is_empty() {
        bail!("{key}: {} holds no token", path.display());
    }
    Ok(tokens)
}

/// `[selfmon]`, validated.
fn selfmon_from(section: SelfmonSection) -> Result<SelfmonOptions> {
    let mut opts = SelfmonOptions::default();
    if let Some(e) = section.enabled {
        opts.enabled = e;
    }
    if let Some(secs) = section.interval_secs {
        if secs == 0 {
            bail!("selfmon.interval_secs must be at least 1 (set selfmon.enabled = false to turn it off)");
        }
        opts.interval = Duration::from_secs(secs);
    }
    if let Some(p) = section.prefix {
        opts.prefix = selfmon::expand_prefix(&p);
    }
    selfmon::check_prefix(&opts.prefix).map_err(anyhow::Error::msg)?;
    Ok(opts)
}

fn read_file(path: &Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("in config file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_design() {
        let c = Config::from_parts(FileConfig::default(), &ServeFlags::default()).unwrap();
        assert_eq!(c.data_dir, PathBuf::from("./data"));
        assert_eq!(c.carbon_addr.to_string(), "127.0.0.1:2003");
        assert_eq!(c.pickle_addr.to_string(), "127.0.0.1:2004");
        assert_eq!(c.http_addr.to_string(), "127.0.0.1:8080");
        assert!(c.carbon_udp);
    }

    #[test]
    fn flags_override_file() {
        let file: FileConfig = toml::from_str(
            "data_dir = \"/var/lib/sumi\"\n[carbon]\nlisten = \"0.0.0.0:2003\"\n[http]\nlisten = \"0.0.0.0:80\"\n",
        )
        .unwrap();
        let flags = ServeFlags {
            http: Some("127.0.0.1:9090".into()),
            ..ServeFlags::default()
        };
        let c = Config::from_parts(file, &flags).unwrap();
        assert_eq!(c.data_dir, PathBuf::from("/var/lib/sumi"));
        assert_eq!(c.carbon_addr.to_string(), "0.0.0.0:2003");
        assert_eq!(c.http_addr.to_string(), "127.0.0.1:9090");
    }

    #[test]
    fn anomaly_sections_parsed_and_checked() {
        let c = Config::from_parts(FileConfig::default(), &ServeFlags::default()).unwrap();
        assert!(c.anomaly.rules.is_empty(), "nothing is watched by default");
        let file: FileConfig = toml::from_str(
            "[[anomaly]]\nmatch = \"a.*\"\nalarm = 0.7\n[[anomaly]]\ntags = [\"dc=eu\"]\n\
             [anomaly_events]\nwebhooks = [\"http://127.0.0.1:9/x\"]\nwebhook_attempts = 3\n\
             webhook_backoff = \"2s\"\nsave_interval = \"1m\"\nkeep_events = 50\n\
             close_quiet = \"90s\"\n",
        )
        .unwrap();
        let c = Config::from_parts(file, &ServeFlags::default()).unwrap();
        let a = &c.anomaly;
        assert_eq!(a.rules.0.len(), 2);
        assert_eq!(a.rules.0[0].config.alarm, 0.7);
        assert_eq!(a.rules.rule_for("x.y;dc=eu"), Some(1));
        assert_eq!(a.webhooks.urls, vec!["http://127.0.0.1:9/x".to_string()]);
        assert_eq!(a.webhooks.attempts, 3);
        assert_eq!(a.webhooks.backoff, Duration::from_secs(2));
        assert_eq!(a.save_interval, Duration::from_secs(60));
        assert_eq!(a.keep_events, 50);
        assert_eq!(a.close_quiet, Duration::from_secs(90));
        for (text, says) in [
            (
                "[anomaly_events]\nwebhooks = [\"ftp://x\"]\n",
                "not an http",
            ),
            ("[anomaly_events]\nwebhook_attempts = 0\n", "at least 1"),
            (
                "[anomaly_events]\nsave_interval = \"soon\"\n",
                "save_interval",
            ),
            ("[[anomaly]]\nmatch = \"a\"\nwindow = \"x\"\n", "table 1"),
        ] {
            let file: FileConfig = toml::from_str(text).unwrap();
            let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{text}: {e:#}");
        }
    }

    #[test]
    fn cluster_section_parsed_and_checked() {
        let c = Config::from_parts(FileConfig::default(), &ServeFlags::default()).unwrap();
        assert!(c.cluster.is_none());
        let file: FileConfig = toml::from_str(
            "[cluster]\nbrokers = \"127.0.0.1:9092\"\npartitions = 4\nrole = \"storage\"\nnode_id = 2\nowned_partitions = [1, 3]\n",
        )
        .unwrap();
        let c = Config::from_parts(file, &ServeFlags::default()).unwrap();
        let cl = c.cluster.unwrap();
        assert_eq!(cl.role, sumi_cluster::Role::Storage);
        assert_eq!(cl.topic, "sumi-points");
        assert_eq!((cl.partitions, cl.node_id), (4, 2));
        assert_eq!(cl.owned_partitions, vec![1, 3]);
        assert_eq!(cl.compression, "none");
        assert_eq!(cl.record_version, 2);
        assert_eq!(cl.ingest_batch_points, 65_536);
        for (text, says) in [
            (
                "brokers = \"b:1\"\nrole = \"storage\"\n",
                "owned_partitions is empty",
            ),
            (
                "brokers = \"b:1\"\npartitions = 2\nrole = \"storage\"\nowned_partitions = [2]\n",
                "names 2",
            ),
            (
                "brokers = \"b:1\"\nrole = \"ingest\"\nowned_partitions = [0]\n",
                "owns none",
            ),
            (
                "brokers = \"b:1\"\nrole = \"ingest\"\npartitions = 0\n",
                "partitions is 0",
            ),
            (
                "brokers = \"b:1\"\nrole = \"ingest\"\ncompression = \"brotli\"\n",
                "cluster.compression",
            ),
            (
                "brokers = \"b:1\"\nrole = \"ingest\"\ncompression = \"zstd\"\n",
                "has no zstd",
            ),
            (
                "brokers = \"b:1\"\nrole = \"ingest\"\nrecord_version = 3\n",
                "cluster.record_version is 3",
            ),
            (
                "brokers = \"b:1\"\nrole = \"ingest\"\ningest_batch_points = 0\n",
                "cluster.ingest_batch_points is 0",
            ),
        ] {
            let file: FileConfig = toml::from_str(&format!("[cluster]\n{text}")).unwrap();
            let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
            assert!(e.to_string().contains(says), "{text}: {e}");
        }
        assert!(
            toml::from_str::<FileConfig>("[cluster]\nbrokers = \"b:1\"\nrole = \"relay\"\n")
                .is_err()
        );
    }

    #[test]
    fn cluster_peers_parsed_and_checked() {
        let base = "[cluster]\nbrokers = \"b:1\"\npartitions = 4\nrole = \"storage\"\nnode_id = 1\nowned_partitions = [0, 1]\nread_timeout_ms = 700\n";
        let peers = "[[cluster.peers]]\nnode_id = 1\nhttp = \"127.0.0.1:81\"\npartitions = [1, 0]\n[[cluster.peers]]\nnode_id = 2\nhttp = \"127.0.0.1:82\"\npartitions = [2]\n";
        let file: FileConfig = toml::from_str(&format!("{base}{peers}")).unwrap();
        let cl = Config::from_parts(file, &ServeFlags::default())
            .unwrap()
            .cluster
            .unwrap();
        assert_eq!(cl.read_timeout_ms, 700);
        assert_eq!(cl.peers.len(), 2);
        assert_eq!(cl.peers[1].http, "127.0.0.1:82");
        assert_eq!(cl.unplaced_partitions(), vec![3]);
        for (extra, says) in [
            (
                "[[cluster.peers]]\nnode_id = 1\nhttp = \"h:1\"\npartitions = [0]\n",
                "owned_partitions are [0, 1]",
            ),
            (
                "[[cluster.peers]]\nnode_id = 3\nhttp = \"h:1\"\npartitions = [4]\n",
                "names partition 4",
            ),
            (
                "[[cluster.peers]]\nnode_id = 3\nhttp = \"h:1\"\npartitions = [2]\n[[cluster.peers]]\nnode_id = 3\nhttp = \"h:2\"\npartitions = [3]\n",
                "node 3 twice",
            ),
        ] {
            let file: FileConfig = toml::from_str(&format!("{base}{extra}")).unwrap();
            let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
            assert!(e.to_string().contains(says), "{extra}: {e}");
        }
    }

    #[test]
    fn copy_from_peers_needs_peers() {
        let base = "[cluster]\nbrokers = \"b:1\"\npartitions = 4\nrole = \"storage\"\nnode_id = 1\nowned_partitions = [0]\ncopy_from_peers = true\n";
        let file: FileConfig = toml::from_str(base).unwrap();
        let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
        assert!(e.to_string().contains("copy_from_peers needs"), "{e}");
        let peers = "[[cluster.peers]]\nnode_id = 1\nhttp = \"h:1\"\npartitions = [0]\n";
        let file: FileConfig = toml::from_str(&format!("{base}{peers}")).unwrap();
        let cl = Config::from_parts(file, &ServeFlags::default())
            .unwrap()
            .cluster
            .unwrap();
        assert!(cl.copy_from_peers);
    }

    #[test]
    fn query_limits_from_the_file() {
        let c = Config::from_parts(FileConfig::default(), &ServeFlags::default()).unwrap();
        assert_eq!(c.max_points_per_query, 20_000_000);
        assert_eq!(c.max_series_per_query, 2_000_000);
        let file: FileConfig =
            toml::from_str("[http]\nmax_points_per_query = 5000\nmax_series_per_query = 10\n")
                .unwrap();
        let c = Config::from_parts(file, &ServeFlags::default()).unwrap();
        assert_eq!((c.max_points_per_query, c.max_series_per_query), (5000, 10));
        let file: FileConfig = toml::from_str("[http]\nmax_series_per_query = 0\n").unwrap();
        let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
        assert!(e.to_string().contains("max_series_per_query"), "{e}");
    }

    #[test]
    fn storage_tuning_reaches_the_store_options() {
        let mut o = sumi_store::StoreOptions::new("d");
        assert!(o.lazy_rollups, "lazy by default");
        let file: FileConfig =
            toml::from_str("[storage]\nlazy_rollups = false\nrollup_grace_secs = 5\n").unwrap();
        let c = Config::from_parts(file, &ServeFlags::default()).unwrap();
        c.storage_tuning.apply(&mut o);
        assert!(!o.lazy_rollups);
        assert_eq!(o.rollup_grace_secs, 5);
        for (text, want) in [("\"8s\"", 8_000), ("\"500ms\"", 500), ("\"0s\"", 0)] {
            let file: FileConfig =
                toml::from_str(&format!("[storage]\nclose_merge = {text}\n")).unwrap();
            let c = Config::from_parts(file, &ServeFlags::default()).unwrap();
            c.storage_tuning.apply(&mut o);
            assert_eq!(o.close_merge, Duration::from_millis(want), "{text}");
        }
        let file: FileConfig = toml::from_str("[storage]\nclose_merge = \"soon\"\n").unwrap();
        assert!(Config::from_parts(file, &ServeFlags::default()).is_err());
    }

    #[test]
    fn operations_sections() {
        let c = Config::from_parts(FileConfig::default(), &ServeFlags::default()).unwrap();
        assert!(!c.auth.is_enabled());
        assert!(c.carbon_allow.is_none() && c.tls.is_none());
        assert_eq!(c.log_format, LogFormat::Text);
        assert!(c.selfmon.enabled);
        assert_eq!(c.selfmon.interval, Duration::from_secs(60));
        assert!(c.selfmon.prefix.starts_with("sumi.agents."));

        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("admin.tokens");
        std::fs::write(
            &tokens,
            "# ops team
\nadmin-token-from-a-file-01
",
        )
        .unwrap();
        std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let text = format!(
            "[carbon]\nallow = [\"10.0.0.0/8\", \"::1\"]\n\
             [http]\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n\
             [auth]\nread_tokens = [\"read-token-0123456789\"]\nadmin_token_file = {:?}\n\
             [selfmon]\ninterval_secs = 5\nprefix = \"ops.{{host}}.sumi\"\n\
             [log]\nformat = \"json\"\n",
            tokens.display().to_string()
        );
        let file: FileConfig = toml::from_str(&text).unwrap();
        assert!(
            !format!("{file:?}").contains("read-token"),
            "Debug shows no token"
        );
        let c = Config::from_parts(file, &ServeFlags::default()).unwrap();
        let allow = c.carbon_allow.as_ref().unwrap();
        assert!(allow.permits("10.1.2.3".parse().unwrap()));
        assert!(!allow.permits("127.0.0.1".parse().unwrap()));
        assert_eq!(c.tls.as_ref().unwrap().key, PathBuf::from("k.pem"));
        assert!(c.auth.is_enabled());
        assert!(!format!("{c:?}").contains("token-from-a-file"));
        assert_eq!(c.selfmon.interval, Duration::from_secs(5));
        assert!(c.selfmon.prefix.starts_with("ops.") && c.selfmon.prefix.ends_with(".sumi"));
        assert_eq!(c.log_format, LogFormat::Json);
        assert!(c.selfmon.enabled);
        let flags = ServeFlags {
            no_selfmon: true,
            ..ServeFlags::default()
        };
        let file: FileConfig = toml::from_str("[selfmon]\nenabled = true\n").unwrap();
        assert!(!Config::from_parts(file, &flags).unwrap().selfmon.enabled);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("auth.admin_token_file"));

        for (text, key) in [
            ("[carbon]\nallow = [\"10.0.0.1/8\"]\n", "carbon.allow"),
            ("[carbon]\nallow = []\n", "carbon.allow"),
            ("[http]\ntls_cert = \"c.pem\"\n", "tls_key"),
            ("[auth]\nwrite_tokens = [\"short\"]\n", "auth.write_tokens"),
            (
                "[auth]\nread_token_file = \"/nonexistent/sumi.tokens\"\n",
                "auth.read_token_file",
            ),
            ("[selfmon]\ninterval_secs = 0\n", "selfmon.interval_secs"),
            ("[selfmon]\nprefix = \"a..b\"\n", "selfmon.prefix"),
            ("[log]\nformat = \"xml\"\n", "log.format"),
        ] {
            let file: FileConfig = toml::from_str(text).unwrap();
            let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
            assert!(format!("{e:#}").contains(key), "{text}: {e:#}");
        }
    }

    #[test]
    fn errors_name_the_key() {
        let file: FileConfig = toml::from_str("[carbon]\nlisten = \"nowhere\"\n").unwrap();
        let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
        assert!(e.to_string().contains("carbon.listen"), "{e}");
        let e = toml::from_str::<FileConfig>("[carbon]\nlisen = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("lisen"), "{e}");
    }
}
