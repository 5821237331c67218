//! The relay's TOML configuration (documented with an example in docs/relay.md).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::aggregate::{parse_aggregation_rules, AggregationRule};
use crate::hashing::{Destination, HashType};
use crate::queue::{QueueFsync, QueueOptions};
use crate::rules::{parse_relay_rules, RelayRule};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Where each destination's queue lives (one subdirectory per destination).
    pub queue_dir: PathBuf,
    #[serde(default)]
    pub listen: ListenFile,
    #[serde(default)]
    pub route: RouteFile,
    #[serde(default)]
    pub queue: QueueFile,
    #[serde(default, rename = "destination")]
    pub destinations: Vec<DestinationFile>,
    /// Everything is also sent here, whatever the route says.
    pub sumi: Option<DestinationFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenFile {
    #[serde(default)]
    pub plaintext: Vec<String>,
    #[serde(default)]
    pub pickle: Vec<String>,
    /// `/metrics` (Prometheus text).
    pub http: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteFile {
    #[serde(default = "default_method")]
    pub method: Method,
    #[serde(default = "one")]
    pub replication_factor: usize,
    #[serde(default = "yes")]
    pub diverse_replicas: bool,
    #[serde(default = "carbon_ch")]
    pub hash_type: HashType,
    /// `relay-rules.conf`, for `method = "rules"`.
    pub rules: Option<PathBuf>,
    /// carbon-aggregator's `aggregation-rules.conf`: matching points are aggregated
    /// and the aggregates routed like any point.
    pub aggregation_rules: Option<PathBuf>,
    /// With aggregation rules: also forward the points that were aggregated
    /// (carbon-aggregator's `FORWARD_ALL`, default true there too).
    #[serde(default = "yes")]
    pub forward_all: bool,
}

impl Default for RouteFile {
    fn default() -> Self {
        RouteFile {
            method: Method::ConsistentHashing,
            replication_factor: 1,
            diverse_replicas: true,
            hash_type: HashType::CarbonCh,
            rules: None,
            aggregation_rules: None,
            forward_all: true,
        }
    }
}

fn default_method() -> Method {
    Method::ConsistentHashing
}
fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn carbon_ch() -> HashType {
    HashType::CarbonCh
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Method {
    #[serde(rename = "consistent-hashing")]
    ConsistentHashing,
    #[serde(rename = "rules")]
    Rules,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueFile {
    pub max_bytes: Option<u64>,
    pub segment_bytes: Option<u64>,
    /// `"never"` (default) or `"batch"`: see [`QueueFsync`].
    pub fsync: Option<QueueFsync>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationFile {
    /// `host:port[:instance]`.
    pub address: String,
    #[serde(default = "pickle")]
    pub protocol: Protocol,
}

fn pickle() -> Protocol {
    Protocol::Pickle
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Plaintext,
    Pickle,
}

/// How points are placed.
#[derive(Debug)]
pub enum Routing {
    ConsistentHashing {
        replication_factor: usize,
        diverse_replicas: bool,
        hash_type: HashType,
    },
    Rules(Vec<RelayRule>),
}

/// A validated configuration.
#[derive(Debug)]
pub struct Config {
    pub queue_dir: PathBuf,
    pub plaintext: Vec<String>,
    pub pickle: Vec<String>,
    pub http: Option<String>,
    /// The routed destinations, in the order given (the ring's order).
    pub destinations: Vec<(Destination, Protocol)>,
    pub sumi: Option<(Destination, Protocol)>,
    pub routing: Routing,
    pub aggregation: Vec<AggregationRule>,
    pub forward_all: bool,
    pub queue: QueueOptions,
    /// Written once listening: JSON of the bound addresses.
    pub ready_file: Option<PathBuf>,
}

impl Config {
    /// Reads and checks `path`; relative rule files are relative to it.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let file: ConfigFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::from_file(file, base)
    }

    pub fn from_file(file: ConfigFile, base: &Path) -> Result<Config, String> {
        let dest = |d: &DestinationFile| -> Result<(Destination, Protocol), String> {
            Ok((Destination::parse(&d.address)?, d.protocol))
        };
        let destinations = file
            .destinations
            .iter()
            .map(dest)
            .collect::<Result<Vec<_>, _>>()?;
        let sumi = file.sumi.as_ref().map(dest).transpose()?;
        if destinations.is_empty() && sumi.is_none() {
            return Err("no [[destination]] and no [sumi]: nowhere to send".into());
        }
        if file.listen.plaintext.is_empty() && file.listen.pickle.is_empty() {
            return Err("[listen] has neither plaintext nor pickle addresses".into());
        }
        let read = |p: &Path| {
            let p = base.join(p);
            std::fs::read_to_string(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))
        };
        let routing = match file.route.method {
            Method::ConsistentHashing => {
                // The ring refuses a duplicate (host, instance), as carbon does.
                let only: Vec<Destination> = destinations.iter().map(|d| d.0.clone()).collect();
                crate::hashing::HashRing::new(&only, file.route.hash_type)?;
                Routing::ConsistentHashing {
                    replication_factor: file.route.replication_factor,
                    diverse_replicas: file.route.diverse_replicas,
                    hash_type: file.route.hash_type,
                }
            }
            Method::Rules => {
                let p = file
                    .route
                    .rules
                    .as_deref()
                    .ok_or("method = \"rules\" needs route.rules = \"relay-rules.conf\"")?;
                Routing::Rules(
                    parse_relay_rules(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?,
                )
            }
        };
        let aggregation = match &file.route.aggregation_rules {
            Some(p) => {
                parse_aggregation_rules(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?
            }
            None => Vec::new(),
        };
        let mut queue = QueueOptions::default();
        if let Some(b) = file.queue.max_bytes {
            queue.max_bytes = b;
        }
        if let Some(b) = file.queue.segment_bytes {
            queue.segment_bytes = b;
        }
        if let Some(f) = file.queue.fsync {
            queue.fsync = f;
        }
        Ok(Config {
            queue_dir: base.join(file.queue_dir),
            plaintext: file.listen.plaintext,
            pickle: file.listen.pickle,
            http: file.listen.http,
            destinations,
            sumi,
            routing,
            aggregation,
            forward_all: file.route.forward_all,
            queue,
            ready_file: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(queue: &str) -> Result<Config, String> {
        let text = format!(
            "queue_dir = \"q\"\n[listen]\nplaintext = [\"127.0.0.1:0\"]\n[queue]\n{queue}\n\
             [[destination]]\naddress = \"127.0.0.1:2004:a\"\n"
        );
        let file: ConfigFile = toml::from_str(&text).map_err(|e| e.to_string())?;
        Config::from_file(file, Path::new("."))
    }

    #[test]
    fn queue_fsync_is_never_unless_asked() {
        assert_eq!(parse("").unwrap().queue.fsync, QueueFsync::Never);
        assert_eq!(
            parse("fsync = \"never\"").unwrap().queue.fsync,
            QueueFsync::Never
        );
        assert_eq!(
            parse("fsync = \"batch\"").unwrap().queue.fsync,
            QueueFsync::Batch
        );
        let err = parse("fsync = \"always\"").unwrap_err();
        assert!(err.contains("always") && err.contains("batch"), "{err}");
    }
}
