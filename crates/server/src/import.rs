//! `sumi import whisper WHISPER_DIR` and `sumi import rrd FILE|DIR` (and `sumi import
//! growthforecast`, in `import_gf.rs`): history into a
//! data directory while no server runs on it (`--data-dir`, `--config`, as `sumi
//! serve` takes them; the store is opened directly, and its directory lock makes a
//! running server a clear error), or into a running server (`--url`, through `POST
//! /api/v0/import`).
//!
//! The work is [`sumi_import::job`] (files in parallel, the state file, progress, the
//! summary) over [`sumi_import::sources`]; this module is the command line and the two
//! targets. Exit status: 0 everything imported, 1 done but something skipped (listed
//! in the summary), 2 the import could not run or stopped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use sumi_http::import_api::{
    encode_values, ImportAnswer, ImportArchive, ImportRequest, ImportSeries,
};
use sumi_import::job::{self, JobOptions, SeriesData, Target, TargetError, Written};
use sumi_import::sources::{self, TaggedNames};
use sumi_model::SystemClock;
use sumi_server::config::{Config, ServeFlags};
use sumi_store::{Store, StoreError};

/// `sumi import`'s subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum ImportCommand {
    /// Import a carbon whisper tree: each .wsp file below WHISPER_DIR as the series
    /// carbon stored in it (tagged series under _tagged/ with their tags), with its
    /// archives, aggregation method and xFilesFactor.
    Whisper {
        /// The root of the whisper tree (carbon's LOCAL_DATA_DIR).
        whisper_dir: PathBuf,
        /// Names of tagged series, one per line, for files of carbon's hashed
        /// _tagged/ layout, whose path holds only a hash of the name.
        #[arg(long, value_name = "FILE")]
        tagged_names: Option<PathBuf>,
        #[command(flatten)]
        flags: ImportFlags,
    },
    /// Import RRD files (RRDtool 1.7): every data source and AVERAGE, MIN, MAX and
    /// LAST archive as the series <path>.<ds>.<cf> (docs/format/rrd.md).
    Rrd {
        /// An .rrd file, or a directory searched for them.
        path: PathBuf,
        #[command(flatten)]
        flags: ImportFlags,
    },
    /// Import a GrowthForecast server: the graphs, complex graphs and vertical rules
    /// of GF_DATA_DIR/gforecast.db with each graph's history from its RRD files
    /// (<md5>.rrd, <md5>_s.rrd), as sumi's GrowthForecast graphs at the same URLs.
    Growthforecast {
        /// The directory GrowthForecast ran with (its --data-dir), holding
        /// gforecast.db and the RRD files.
        gf_data_dir: PathBuf,
        /// Read the graphs from this mysqldump of GrowthForecast's MySQL database
        /// (its --mysql back end) instead of GF_DATA_DIR/gforecast.db [default: the
        /// one .sql file in GF_DATA_DIR when there is no gforecast.db].
        #[arg(long, value_name = "FILE")]
        mysql_dump: Option<PathBuf>,
        #[command(flatten)]
        flags: ImportFlags,
    },
}

/// Where the history goes, and how the job runs.
#[derive(clap::Args, Debug)]
pub(crate) struct ImportFlags {
    /// sumi.toml to read (default: ./sumi.toml when it exists), for the data directory
    /// and the storage settings.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Data directory to import into, with no server running on it [default: the
    /// config's, else ./data].
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// A running sumi to import into, such as http://127.0.0.1:8080 (instead of
    /// opening a data directory).
    #[arg(long, value_name = "URL", conflicts_with = "data_dir")]
    pub(crate) url: Option<String>,
    /// A file holding the write (or admin) token for --url, when the server asks for
    /// one.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub(crate) token_file: Option<PathBuf>,
    /// Worker threads [default: the number of CPUs].
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// The state file recording finished files, so that a rerun after an interrupt
    /// skips them [default: sumi-import-<kind>.state in the current directory].
    #[arg(long, value_name = "FILE")]
    pub(crate) state: Option<PathBuf>,
    /// Import every file again, ignoring (and replacing) the state file.
    #[arg(long)]
    pub(crate) restart: bool,
}

/// The store opened directly.
pub(crate) struct StoreTarget(pub(crate) Arc<Store>);

impl Target for StoreTarget {
    fn import(&self, s: &SeriesData) -> Result<Written, TargetError> {
        let mut waited = Duration::ZERO;
        loop {
            match self.0.import_series(&s.name, &s.config, &s.archives) {
                Ok(o) => {
                    return Ok(Written {
                        created: o.created,
                        written: o.written,
                        present: o.present,
                        out_of_range: o.out_of_range,
                        covered: 0,
                    })
                }
                // flushes are behind: wait for them, as a carbon client would
                Err(StoreError::Backpressure(msg)) => {
                    if waited > Duration::from_secs(300) {
                        return Err(TargetError::Fatal(msg));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    waited += Duration::from_millis(20);
                }
                Err(e @ (StoreError::Admin(_) | StoreError::Options(_))) => {
                    return Err(TargetError::Series(e.to_string()))
                }
                Err(e) => return Err(TargetError::Fatal(e.to_string())),
            }
        }
    }
}

/// A running server, through `POST /api/v0/import`.
pub(crate) struct HttpTarget {
    pub(crate) url: String,
    pub(crate) token: Option<String>,
    pub(crate) agent: ureq::Agent,
}

/// The dense form of an archive's points: from the first to the last, `null` in gaps.
fn dense(step: u32, points: &[(i64, f64)]) -> (i64, Vec<Option<f64>>) {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return (0, Vec::new());
    };
    let step = i64::from(step.max(1));
    let n = ((last.0 - first.0) / step + 1) as usize;
    let mut values = vec![None; n];
    for &(t, v) in points {
        if let Some(slot) = values.get_mut(((t - first.0) / step) as usize) {
            *slot = Some(v);
        }
    }
    (first.0, values)
}

impl HttpTarget {
    /// An empty import first, so that an unreachable server, a missing or refused
    /// token or a server without the endpoint is one clear error before any file is
    /// read (a refusal of a large body can show as a broken pipe instead).
    pub(crate) fn check(&self) -> Result<()> {
        let mut r = self
            .agent
            .post(&self.url)
            .set("Content-Type", "application/json");
        if let Some(t) = &self.token {
            r = r.set("Authorization", &format!("Bearer {t}"));
        }
        match r.send_string(r#"{"series":[]}"#) {
            Ok(_) => Ok(()),
            Err(ureq::Error::Status(code @ (401 | 403), resp)) => bail!(
                "{} answered {code} ({}): pass a write or admin token with --token-file",
                self.url,
                resp.into_string().unwrap_or_default().trim()
            ),
            Err(ureq::Error::Status(code, resp)) => bail!(
                "{} answered {code}: {}",
                self.url,
                resp.into_string().unwrap_or_default().trim()
            ),
            Err(e) => bail!("{}: {e}", self.url),
        }
    }
}

impl Target for HttpTarget {
    fn import(&self, s: &SeriesData) -> Result<Written, TargetError> {
        let archives = s
            .config
            .retention
            .archives()
            .iter()
            .zip(&s.archives)
            .map(|(a, pts)| {
                let (start, values) = dense(a.step_secs, pts);
                ImportArchive {
                    step: a.step_secs,
                    points: a.points,
                    start,
                    values: encode_values(&values),
                }
            })
            .collect();
        let req = ImportRequest {
            series: vec![ImportSeries {
                name: s.name.clone(),
                aggregation_method: s.config.method.name().to_string(),
                x_files_factor: s.config.xff,
                archives,
            }],
        };
        let body = serde_json::to_string(&req).map_err(|e| TargetError::Series(e.to_string()))?;
        let mut waited = Duration::ZERO;
        loop {
            let mut r = self
                .agent
                .post(&self.url)
                .set("Content-Type", "application/json");
            if let Some(t) = &self.token {
                r = r.set("Authorization", &format!("Bearer {t}"));
            }
            match r.send_string(&body) {
                Ok(resp) => {
                    let text = resp
                        .into_string()
                        .map_err(|e| TargetError::Fatal(format!("{}: {e}", self.url)))?;
                    let answer: ImportAnswer = serde_json::from_str(&text).map_err(|e| {
                        TargetError::Fatal(format!("{}: not an import answer: {e}", self.url))
                    })?;
                    let Some(one) = answer.series.into_iter().next() else {
                        return Err(TargetError::Fatal(format!("{}: empty answer", self.url)));
                    };
                    if let Some(e) = one.error {
                        return Err(TargetError::Series(e));
                    }
                    return Ok(Written {
                        created: one.created,
                        written: one.written,
                        present: one.present,
                        out_of_range: one.out_of_range,
                        covered: one.covered,
                    });
                }
                // the store cannot write now (flushes behind, disk reserve): retry
                Err(ureq::Error::Status(503, resp)) if waited < Duration::from_secs(300) => {
                    let _ = resp.into_string();
                    std::thread::sleep(Duration::from_millis(500));
                    waited += Duration::from_millis(500);
                }
                Err(ureq::Error::Status(400, resp)) => {
                    let text = resp.into_string().unwrap_or_default();
                    return Err(TargetError::Series(format!("refused: {text}")));
                }
                Err(ureq::Error::Status(code, resp)) => {
                    let text = resp.into_string().unwrap_or_default();
                    return Err(TargetError::Fatal(format!(
                        "{} answered {code}: {text}",
                        self.url
                    )));
                }
                Err(e) => return Err(TargetError::Fatal(format!("{}: {e}", self.url))),
            }
        }
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

pub(crate) fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Runs `sumi import …`; returns the exit status.
pub(crate) fn run(cmd: ImportCommand) -> i32 {
    if let ImportCommand::Growthforecast {
        gf_data_dir,
        mysql_dump,
        flags,
    } = &cmd
    {
        return match crate::import_gf::run(gf_data_dir, mysql_dump.as_deref(), flags) {
            Ok((summary, counts)) => {
                print!("{}{}", counts.to_text(), summary.to_text());
                i32::from(!summary.skipped.is_empty())
            }
            Err(e) => {
                eprintln!("sumi import: {e:#}");
                2
            }
        };
    }
    match run_inner(cmd) {
        Ok(summary) => {
            print!("{}", summary.to_text());
            i32::from(!summary.skipped.is_empty())
        }
        Err(e) => {
            eprintln!("sumi import: {e:#}");
            2
        }
    }
}

fn run_inner(cmd: ImportCommand) -> Result<job::Summary> {
    let (kind, root, flags, names) = match cmd {
        ImportCommand::Whisper {
            whisper_dir,
            tagged_names,
            flags,
        } => {
            let names = match tagged_names {
                Some(p) => {
                    let text = std::fs::read_to_string(&p)
                        .with_context(|| format!("reading {}", p.display()))?;
                    TaggedNames::parse(&text)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
                }
                None => TaggedNames::default(),
            };
            ("whisper", whisper_dir, flags, names)
        }
        ImportCommand::Rrd { path, flags } => ("rrd", path, flags, TaggedNames::default()),
        ImportCommand::Growthforecast { .. } => bail!("handled by import_gf"),
    };
    let ext = if kind == "whisper" { "wsp" } else { "rrd" };
    let files = job::list_files(&root, ext)?;
    if files.is_empty() {
        bail!("no .{ext} file under {}", root.display());
    }
    let opts = job_options(&flags, kind)?;
    let job_name = format!("{kind} {}", absolute(&root).display());
    let now = unix_now();
    let read = |path: &Path, rel: &Path| -> std::result::Result<Vec<SeriesData>, String> {
        if kind == "whisper" {
            sources::whisper_series(path, rel, now, &names)
        } else {
            sources::rrd_series(path, rel)
        }
    };
    let url = match &flags.url {
        Some(u) => Some(u.clone()),
        None => cluster_node_url(&flags, "points through the data topic")?,
    };
    let (target, store): (Box<dyn Target>, Option<Arc<Store>>) = match &url {
        Some(url) => {
            let token = token_from_file(flags.token_file.as_deref())?;
            let url = format!("{}/api/v0/import", url.trim_end_matches('/'));
            let agent = ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(300))
                .build();
            let target = HttpTarget { url, token, agent };
            target.check()?;
            (Box::new(target), None)
        }
        None => {
            let config = Config::load(&ServeFlags::files(
                flags.config.clone(),
                flags.data_dir.clone(),
            ))?;
            let opts = sumi_server::store_options(&config)?;
            let store = Store::open(opts, Arc::new(SystemClock)).with_context(|| {
                format!(
                    "opening the store in {} (import into a running server with --url)",
                    config.data_dir().display()
                )
            })?;
            (Box::new(StoreTarget(store.clone())), Some(store))
        }
    };
    let result = job::run(&root, &files, &job_name, read, target.as_ref(), &opts);
    drop(target);
    if let Some(store) = store {
        store
            .close()
            .context("closing the store (what was imported is in its WAL)")?;
    }
    Ok(result?)
}

/// With `--config` of a cluster node's `sumi.toml`: that node's own HTTP address,
/// through which the import goes (the running node's store and database are written
/// only from the cluster's logs), said on stderr with `what` goes where; `None` for a
/// single node's configuration or none.
pub(crate) fn cluster_node_url(flags: &ImportFlags, what: &str) -> Result<Option<String>> {
    if flags.config.is_none() {
        return Ok(None);
    }
    let config = Config::load(&ServeFlags::files(
        flags.config.clone(),
        flags.data_dir.clone(),
    ))?;
    let url = config.cluster_node_url();
    if let Some(url) = &url {
        eprintln!(
            "sumi import: the configuration is a cluster node's: importing through it at {url} \
             ({what})"
        );
    }
    Ok(url)
}

/// The token a `--token-file` holds for a client: its first line that is neither empty
/// nor a `#` comment, trimmed (the format of the server's token files).
/// The import job's options from the command's flags: its worker threads and its state
/// file (`sumi-import-<kind>.state` unless named), removed first with `--restart`.
pub(crate) fn job_options(flags: &ImportFlags, kind: &str) -> Result<JobOptions> {
    let state = flags
        .state
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("sumi-import-{kind}.state")));
    if flags.restart {
        match std::fs::remove_file(&state) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", state.display())),
        }
    }
    Ok(JobOptions {
        threads: flags
            .threads
            .unwrap_or(JobOptions::default().threads)
            .max(1),
        state: Some(state),
        ..JobOptions::default()
    })
}

pub(crate) fn token_from_file(path: Option<&Path>) -> Result<Option<String>> {
    let Some(p) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    Ok(Some(
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or_default()
            .to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_fills_gaps_with_null() {
        assert_eq!(dense(10, &[]), (0, vec![]));
        assert_eq!(
            dense(10, &[(100, 1.0), (130, 2.0)]),
            (100, vec![Some(1.0), None, None, Some(2.0)])
        );
    }
}
