//! The soak's pictures and the server setup they need: sumi's self-monitoring series
//! (`[selfmon]`), rendered as PNG by sumi's own `/render`.
//!
//! A server the soak starts gets a config turning selfmon on under [`OWN_PREFIX`] at an
//! interval fitting the sampling period, and (unless `--storage-schemas` is given) a
//! schema whose step equals that interval for the own series, so no report overwrites
//! another. A running server is charted under whatever prefix `--soak-selfmon-prefix`
//! names (default `sumi.agents.*`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::BenchError;
use crate::http;

/// Where a started server's own series go.
pub const OWN_PREFIX: &str = "sumi.agents.soak";

/// The self-monitoring interval for a sampling period: a sixth of it, 1–10 s.
pub fn selfmon_interval(sample_secs: u64) -> u64 {
    (sample_secs / 6).clamp(1, 10)
}

/// `sumi.toml` for a started server: selfmon every `interval` seconds under [`OWN_PREFIX`].
pub fn server_config(interval: u64) -> String {
    format!("[selfmon]\nenabled = true\ninterval_secs = {interval}\nprefix = \"{OWN_PREFIX}\"\n")
}

/// `storage-schemas.conf` for a started server: own series at the selfmon interval,
/// the load at 10 s, two days of each.
pub fn server_schemas(interval: u64) -> String {
    format!(
        "[selfmon]\npattern = ^sumi\\.agents\\.\nretentions = {interval}s:2d\n\n\
         [soak]\npattern = .*\nretentions = 10s:2d\n"
    )
}

/// One chart: its file name, title and targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chart {
    /// File name in the output directory.
    pub file: &'static str,
    /// The render path (without the time range).
    pub path: String,
}

/// The three charts of a soak: resident memory, points received and stored per
/// interval, and the mean render and find latency.
pub fn charts(prefix: &str) -> Vec<Chart> {
    let chart = |file: &'static str, title: &str, targets: &[String]| {
        let mut path = format!(
            "/render?format=png&width=1000&height=400&title={}",
            http::encode_query_value(title)
        );
        for t in targets {
            path.push_str("&target=");
            path.push_str(&http::encode_query_value(t));
        }
        Chart { file, path }
    };
    let alias = |series: &str, label: &str| format!("alias({prefix}.{series},\"{label}\")");
    vec![
        chart(
            "soak-rss.png",
            "sumi soak: resident memory (bytes)",
            &[alias("memUsage", "RSS")],
        ),
        chart(
            "soak-points.png",
            "sumi soak: points per selfmon interval",
            &[
                alias("pointsReceived", "received"),
                alias("committedPoints", "stored"),
            ],
        ),
        chart(
            "soak-latency.png",
            "sumi soak: mean query latency (s)",
            &[
                alias("queries.render.avgSeconds", "render"),
                alias("queries.find.avgSeconds", "find"),
            ],
        ),
    ]
}

/// Fetches every chart over `[from, until]` into `dir`; the files written.
pub fn fetch_charts(
    http_addr: &str,
    prefix: &str,
    from: i64,
    until: i64,
    dir: &Path,
) -> Result<Vec<PathBuf>, BenchError> {
    let mut written = Vec::new();
    for c in charts(prefix) {
        let path = format!("{}&from={from}&until={until}", c.path);
        let r = http::get(http_addr, &path, Duration::from_secs(60))?;
        let fail = |reason: String| BenchError::Http {
            addr: http_addr.to_string(),
            path: path.clone(),
            reason,
        };
        if r.status != 200 {
            return Err(fail(format!(
                "status {}: {}",
                r.status,
                crate::procfs::truncate(&String::from_utf8_lossy(&r.body), 200)
            )));
        }
        if !r.body.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Err(fail(format!(
                "the answer ({} bytes) is not a PNG",
                r.body.len()
            )));
        }
        let file = dir.join(c.file);
        std::fs::write(&file, &r.body)
            .map_err(|e| BenchError::io(format!("write {}", file.display()), e))?;
        written.push(file);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selfmon_interval_fits_the_sampling_period() {
        assert_eq!(selfmon_interval(60), 10);
        assert_eq!(selfmon_interval(600), 10);
        assert_eq!(selfmon_interval(2), 1);
        assert_eq!(selfmon_interval(30), 5);
    }

    #[test]
    fn the_server_files_give_own_series_their_own_step() {
        let s = server_schemas(5);
        assert!(
            s.contains("pattern = ^sumi\\.agents\\.\nretentions = 5s:2d"),
            "{s}"
        );
        assert!(server_config(5).contains("interval_secs = 5\nprefix = \"sumi.agents.soak\""));
    }

    #[test]
    fn charts_plot_memory_points_and_latency() {
        let c = charts("sumi.agents.x");
        let files: Vec<&str> = c.iter().map(|c| c.file).collect();
        assert_eq!(
            files,
            ["soak-rss.png", "soak-points.png", "soak-latency.png"]
        );
        assert!(c[0].path.starts_with("/render?format=png&"));
        assert!(
            c[0].path
                .contains("&target=alias%28sumi.agents.x.memUsage%2C%22RSS%22%29"),
            "{}",
            c[0].path
        );
        assert_eq!(c[1].path.matches("&target=").count(), 2);
        assert!(c[2].path.contains("queries.render.avgSeconds"));
    }
}
