//! `sumi export`: the series matching a glob (or all of them) over a time range, read
//! from a running server through its Graphite API (or from a data directory opened
//! directly, `--data-dir`), written to stdout as carbon plaintext, CSV or JSON lines,
//! one series at a time (streamed: nothing waits for the whole export).
//!
//! Names come from `/metrics/expand?leavesOnly=1` (the glob, `**` for everything) and,
//! for everything, tagged series from `/tags/findSeries`; values from `/render` with
//! `format=raw`, a batch of targets a request. `raw` carries Python's `repr` of each
//! value, which parses to the very same `f64`; values are written in Rust's shortest
//! form that reads back to that `f64`, so an export fed to an empty sumi over carbon
//! plaintext and exported again is byte-identical.
//!
//! Formats (nulls are skipped in all three but JSON, where they stay `null`):
//! - `plaintext`: `name value timestamp`, carbon's line protocol;
//! - `csv`: `name,timestamp,value` (timestamp in epoch seconds; a name holding `,`,
//!   `"`, CR or LF is quoted, quotes doubled);
//! - `json`: one object a line, `{"target": name, "datapoints": [[value, ts], …]}`,
//!   as graphite-web's `format=json` holds one series (non-finite values as `null`).
//!
//! The lines themselves (parsing a raw answer, writing a series) are
//! [`sumi_import::export_lines`], where they are fuzzed.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sumi_import::export_lines::{self, write_series, RawSeries};
use sumi_model::glob::PathPattern;
use sumi_model::SystemClock;
use sumi_server::config::{Config, ServeFlags};
use sumi_store::{Store, TagExpr};

/// Output formats of `sumi export`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `name value timestamp` lines (carbon plaintext).
    Plaintext,
    /// `name,timestamp,value` rows.
    Csv,
    /// One JSON object a line: `{"target": …, "datapoints": [[value, ts], …]}`.
    Json,
}

impl From<Format> for export_lines::Format {
    fn from(f: Format) -> export_lines::Format {
        match f {
            Format::Plaintext => export_lines::Format::Plaintext,
            Format::Csv => export_lines::Format::Csv,
            Format::Json => export_lines::Format::Json,
        }
    }
}

/// `sumi export`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct ExportFlags {
    /// The running sumi to read, such as http://127.0.0.1:8080.
    #[arg(long, value_name = "URL", required_unless_present = "data_dir")]
    url: Option<String>,
    /// A file holding a read (or admin) token for --url, when the server asks for one.
    #[arg(long, value_name = "FILE", requires = "url")]
    token_file: Option<PathBuf>,
    /// Read a data directory directly instead, with no server running on it.
    #[arg(long, value_name = "DIR", conflicts_with = "url")]
    data_dir: Option<PathBuf>,
    /// sumi.toml to read with --data-dir, for the storage settings.
    #[arg(long, value_name = "FILE", requires = "data_dir")]
    config: Option<PathBuf>,
    /// Series to export, a Graphite glob (`cpu.*.user`, `{a,b}.**`) or a tagged
    /// series' full name [default: every series, tagged ones included].
    #[arg(long = "match", value_name = "GLOB")]
    glob: Option<String>,
    /// Start of the range, in Graphite's time syntax (`-7d`, `20260101`) or epoch
    /// seconds, passed to /render as it is.
    #[arg(long, value_name = "TIME", default_value = "-24h")]
    from: String,
    /// End of the range, as --from.
    #[arg(long, value_name = "TIME", default_value = "now")]
    until: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "plaintext")]
    format: Format,
    /// Series a /render request.
    #[arg(long, value_name = "N", default_value_t = 100)]
    batch: usize,
}

/// Runs `sumi export`; returns the exit status (0 done, 2 failed).
pub(crate) fn run(flags: &ExportFlags) -> i32 {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = export(flags, &mut out).and_then(|n| {
        out.flush().context("writing stdout")?;
        Ok(n)
    });
    match result {
        Ok((series, points)) => {
            eprintln!("sumi export: {series} series, {points} points");
            0
        }
        Err(e) => {
            let _ = out.flush();
            eprintln!("sumi export: {e:#}");
            2
        }
    }
}

struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    fn call(&self, req: ureq::Request, form: &[(&str, &str)]) -> Result<ureq::Response> {
        let url = req.url().to_string();
        let req = match &self.token {
            Some(t) => req.set("Authorization", &format!("Bearer {t}")),
            None => req,
        };
        match req.send_form(form) {
            Ok(r) => Ok(r),
            Err(ureq::Error::Status(code @ (401 | 403), resp)) => bail!(
                "{url} answered {code} ({}): pass a read or admin token with --token-file",
                resp.into_string().unwrap_or_default().trim()
            ),
            Err(ureq::Error::Status(code, resp)) => bail!(
                "{url} answered {code}: {}",
                resp.into_string().unwrap_or_default().trim()
            ),
            Err(e) => bail!("{e}"),
        }
    }

    fn post(&self, path: &str, form: &[(&str, &str)]) -> Result<ureq::Response> {
        self.call(self.agent.post(&format!("{}{path}", self.base)), form)
    }

    fn json(&self, path: &str, form: &[(&str, &str)]) -> Result<serde_json::Value> {
        let resp = self.post(path, form)?;
        serde_json::from_reader(resp.into_reader())
            .with_context(|| format!("{}{path}: not a JSON answer", self.base))
    }

    /// The names of the series to export, sorted.
    fn names(&self, glob: Option<&str>) -> Result<Vec<String>> {
        let query = glob.unwrap_or("**");
        let v = self.json("/metrics/expand", &[("query", query), ("leavesOnly", "1")])?;
        let mut names: Vec<String> = v["results"]
            .as_array()
            .context("/metrics/expand: no results")?
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        if glob.is_none() {
            let tagged = self.json("/tags/findSeries", &[("expr", "name=~.")])?;
            names.extend(
                tagged
                    .as_array()
                    .context("/tags/findSeries: not a list")?
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_string)),
            );
        }
        names.sort();
        names.dedup();
        Ok(names)
    }
}

/// Exports to `out`; returns (series, points written).
fn export(flags: &ExportFlags, out: &mut impl Write) -> Result<(u64, u64)> {
    let Some(url) = &flags.url else {
        return export_offline(flags, out);
    };
    let token = crate::import::token_from_file(flags.token_file.as_deref())?;
    let client = Client {
        base: url.trim_end_matches('/').to_string(),
        token,
        agent: ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(300))
            .build(),
    };
    let names = client.names(flags.glob.as_deref())?;
    let (mut series, mut points) = (0u64, 0u64);
    let mut line = String::new();
    for batch in names.chunks(flags.batch.max(1)) {
        let mut form: Vec<(&str, &str)> = vec![
            ("format", "raw"),
            ("from", &flags.from),
            ("until", &flags.until),
        ];
        form.extend(batch.iter().map(|n| ("target", n.as_str())));
        let resp = client.post("/render", &form)?;
        let reader = io::BufReader::new(resp.into_reader());
        for raw in io::BufRead::lines(reader) {
            let raw = raw.context("reading /render")?;
            if raw.is_empty() {
                continue;
            }
            let s = RawSeries::parse(&raw)
                .with_context(|| format!("/render: not a raw series: {:.200}", raw.as_str()))?;
            line.clear();
            points += s.write(flags.format.into(), &mut line);
            out.write_all(line.as_bytes()).context("writing stdout")?;
            series += 1;
        }
    }
    Ok((series, points))
}

/// The same from a data directory opened directly (its lock keeps a server off it);
/// `--from` and `--until` are read as /render reads them, dates in UTC.
fn export_offline(flags: &ExportFlags, out: &mut impl Write) -> Result<(u64, u64)> {
    use sumi_query::attime::parse_at_time;
    let config = Config::load(&ServeFlags::files(
        flags.config.clone(),
        flags.data_dir.clone(),
    ))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let tz = chrono_tz::UTC;
    let from = parse_at_time(&flags.from, tz, now)
        .map_err(|e| anyhow::anyhow!("--from {}: {e}", flags.from))?;
    let until = parse_at_time(&flags.until, tz, now)
        .map_err(|e| anyhow::anyhow!("--until {}: {e}", flags.until))?;
    let opts = sumi_server::store_options(&config)?;
    let store = Store::open(opts, Arc::new(SystemClock))
        .with_context(|| format!("opening the store in {}", config.data_dir().display()))?;
    let result = (|| -> Result<(u64, u64)> {
        let mut names: Vec<String> = match &flags.glob {
            Some(g) => {
                PathPattern::check(g).map_err(|e| anyhow::anyhow!("--match {g}: {e}"))?;
                store
                    .find(&PathPattern::parse(g))
                    .into_iter()
                    .filter(|e| e.is_leaf)
                    .map(|e| e.path)
                    .collect()
            }
            None => {
                let mut n: Vec<String> = store
                    .find(&PathPattern::parse("**"))
                    .into_iter()
                    .filter(|e| e.is_leaf)
                    .map(|e| e.path)
                    .collect();
                let expr = TagExpr::parse("name=~.")
                    .map_err(|e| anyhow::anyhow!("listing tagged series: {e}"))?;
                n.extend(
                    store
                        .find_tagged(std::slice::from_ref(&expr))
                        .map_err(|e| anyhow::anyhow!("listing tagged series: {e}"))?,
                );
                n
            }
        };
        names.sort();
        names.dedup();
        let (mut series, mut points) = (0u64, 0u64);
        let mut line = String::new();
        for name in &names {
            let Some(f) = store.fetch(name, from, until, now) else {
                continue;
            };
            line.clear();
            points += write_series(
                flags.format.into(),
                name,
                f.start,
                f.step,
                f.values.into_iter(),
                &mut line,
            );
            out.write_all(line.as_bytes()).context("writing stdout")?;
            series += 1;
        }
        Ok((series, points))
    })();
    store.close().context("closing the store")?;
    result
}
