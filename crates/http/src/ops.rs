//! Operations endpoints: `/metrics` in Prometheus text format, `/health` (the store
//! takes writes) and `/ready` (the server is up and not shutting down).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::AppState;

/// Every stage's counters in one exposition. Stages may write samples of the same
/// family (ingest and the store both reject points, for different reasons), so the
/// texts are merged family by family: one HELP/TYPE each, samples grouped.
pub fn prometheus(state: &AppState) -> Response {
    let mut text = String::with_capacity(8 * 1024);
    state.ingest.write_prometheus(&mut text);
    state.store.write_prometheus(&mut text);
    for write in &state.extra_metrics {
        write(&mut text);
    }
    if let Some(feed) = &state.anomalies {
        feed.write_prometheus(&mut text);
    }
    if let Some(gf_log) = state.gf.log_stats() {
        gf_log.write_prometheus(&mut text);
    }
    state.http_stats.write_prometheus(&mut text);
    state.auth.write_prometheus(&mut text);
    text.push_str("# TYPE sumi_uptime_seconds gauge\n");
    text.push_str(&format!(
        "sumi_uptime_seconds {:.3}\n",
        state.started.elapsed().as_secs_f64()
    ));
    let out = merge_families(&text);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}

/// 200 while the store takes writes, 503 (with the reason) otherwise.
pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    if state.store.is_healthy() {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "store is not accepting writes\n",
        )
            .into_response()
    }
}

/// Where the server is in its life, for `/ready`.
#[derive(Debug, Default)]
pub struct Readiness(AtomicU8);

const STARTING: u8 = 0;
const READY: u8 = 1;
const STOPPING: u8 = 2;

impl Readiness {
    /// The store is open and every listener is up.
    pub fn set_ready(&self) {
        // never back from stopping
        let _ = self
            .0
            .compare_exchange(STARTING, READY, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Shutdown has begun: load balancers should send traffic elsewhere.
    pub fn set_stopping(&self) {
        self.0.store(STOPPING, Ordering::SeqCst);
    }

    /// Whether `/ready` answers 200.
    #[cfg(test)]
    fn is_ready(&self) -> bool {
        self.0.load(Ordering::SeqCst) == READY
    }
}

/// 200 once the server has started (store open, listeners up) while the store takes
/// writes; 503 before, while shutting down, or when the store refuses writes.
pub async fn ready(State(state): State<Arc<AppState>>) -> Response {
    let why = match state.readiness.0.load(Ordering::SeqCst) {
        STARTING => "starting",
        STOPPING => "shutting down",
        _ if !state.store.is_healthy() => "store is not accepting writes",
        _ => return (StatusCode::OK, "ready\n").into_response(),
    };
    (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response()
}

/// The family a sample or comment line belongs to (`name` of `name{labels} value`,
/// `# TYPE name type`, `# HELP name text`).
fn family_of(line: &str) -> Option<&str> {
    if let Some(rest) = line
        .strip_prefix("# TYPE ")
        .or_else(|| line.strip_prefix("# HELP "))
    {
        return rest.split_whitespace().next();
    }
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let end = line.find(['{', ' ']).unwrap_or(line.len());
    Some(&line[..end])
}

/// Regroups an exposition so that each family appears once, in first-seen order, with
/// its first HELP and TYPE lines and all of its samples.
fn merge_families(text: &str) -> String {
    struct Family<'a> {
        help: Option<&'a str>,
        kind: Option<&'a str>,
        samples: Vec<&'a str>,
    }
    let mut order: Vec<&str> = Vec::new();
    let mut families: std::collections::HashMap<&str, Family<'_>> =
        std::collections::HashMap::new();
    for line in text.lines() {
        let Some(name) = family_of(line) else {
            continue;
        };
        let fam = families.entry(name).or_insert_with(|| {
            order.push(name);
            Family {
                help: None,
                kind: None,
                samples: Vec::new(),
            }
        });
        if line.starts_with("# HELP ") {
            fam.help.get_or_insert(line);
        } else if line.starts_with("# TYPE ") {
            fam.kind.get_or_insert(line);
        } else {
            fam.samples.push(line);
        }
    }
    let mut out = String::with_capacity(text.len());
    for name in order {
        let fam = &families[name];
        for line in fam
            .help
            .iter()
            .chain(fam.kind.iter())
            .chain(fam.samples.iter())
        {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_goes_one_way() {
        let r = Readiness::default();
        assert!(!r.is_ready());
        r.set_ready();
        assert!(r.is_ready());
        r.set_stopping();
        assert!(!r.is_ready());
        r.set_ready();
        assert!(!r.is_ready(), "stopping is final");
    }

    #[test]
    fn families_are_merged_once() {
        let text = "# TYPE a counter\na 1\n# TYPE r counter\nr{reason=\"x\"} 2\n# HELP b help\n# TYPE b gauge\nb 3\n# HELP r refused\n# TYPE r counter\nr{reason=\"y\"} 4\n";
        assert_eq!(
            merge_families(text),
            "# TYPE a counter\na 1\n# HELP r refused\n# TYPE r counter\nr{reason=\"x\"} 2\nr{reason=\"y\"} 4\n# HELP b help\n# TYPE b gauge\nb 3\n"
        );
    }
}
