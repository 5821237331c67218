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
//! # Carbon plaintext, TCP and UDP on the same address. Loopback unless you open it.
//! listen = "127.0.0.1:2003"
//! udp = true
//! # Carbon pickle (TCP).
//! pickle_listen = "127.0.0.1:2004"
//! # Longer lines are skipped and counted (carbon's own limit is 16 KiB).
//! max_line_bytes = 16384
//! # Concurrent TCP connections; more are refused and counted.
//! max_connections = 10000
//!
//! [http]
//! # Graphite API, /metrics, /health.
//! listen = "127.0.0.1:8080"
//! # Time zone for from/until and csv output when a request has no `tz`
//! # (graphite-web's TIME_ZONE setting).
//! timezone = "UTC"
//! # What one /render request may read, over all its targets and the fetches its
//! # functions make; a request over either limit is answered 422 with a message saying
//! # which limit, how much it asked for and how to narrow it. Points are slots: a
//! # series over 24 h at 10 s is 8,640 of them. 20 M points is about 160 MB held for
//! # plain paths and 320 MB of values when a function needs them as series; it
//! # admits a million series x 10 points, or 2,300 series over a day at 10 s.
//! max_points_per_query = 20000000
//! # A series costs a few hundred bytes besides its points when a function holds it.
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
//!
//! [log]
//! # tracing filter, e.g. "info" or "sumi=debug,info"; RUST_LOG wins when set.
//! level = "info"
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

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
    pub(crate) log: LogSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CarbonSection {
    pub(crate) listen: Option<String>,
    pub(crate) udp: Option<bool>,
    pub(crate) pickle_listen: Option<String>,
    pub(crate) max_line_bytes: Option<usize>,
    pub(crate) max_connections: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HttpSection {
    pub(crate) listen: Option<String>,
    pub(crate) timezone: Option<String>,
    pub(crate) max_points_per_query: Option<u64>,
    pub(crate) max_series_per_query: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StorageSection {
    pub(crate) schemas: Option<PathBuf>,
    pub(crate) aggregation: Option<PathBuf>,
    pub(crate) fsync: Option<String>,
    pub(crate) max_future_secs: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogSection {
    pub(crate) level: Option<String>,
}

/// Flags of `sumi serve` that override the file.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct ServeFlags {
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
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub(crate) struct Config {
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
    pub(crate) log_level: String,
    pub(crate) ready_file: Option<PathBuf>,
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
            log_level: "info".into(),
            ready_file: None,
        }
    }
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
    pub(crate) fn load(flags: &ServeFlags) -> Result<Config> {
        let file = match &flags.config {
            Some(path) => Some(read_file(path)?),
            None if Path::new("sumi.toml").exists() => Some(read_file(Path::new("sumi.toml"))?),
            None => None,
        };
        Config::from_parts(file.unwrap_or_default(), flags)
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
    fn errors_name_the_key() {
        let file: FileConfig = toml::from_str("[carbon]\nlisten = \"nowhere\"\n").unwrap();
        let e = Config::from_parts(file, &ServeFlags::default()).unwrap_err();
        assert!(e.to_string().contains("carbon.listen"), "{e}");
        let e = toml::from_str::<FileConfig>("[carbon]\nlisen = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("lisen"), "{e}");
    }
}
