//! Request counts and latencies per route: a middleware that times every request
//! (refused ones included) and the Prometheus families it feeds:
//!
//! - `sumi_http_requests_total{route,status}`: requests answered, by status code;
//! - `sumi_http_request_seconds{route}`: a histogram of the time to the response
//!   head (`/render` and `/metrics/find` build their whole body before that, so for
//!   them it is the query latency).
//!
//! Routes are a fixed, small set ([`Route`]), so the label cannot grow with the URLs
//! clients send. Self-monitoring reads the same counters ([`HttpStats::snapshot`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use parking_lot::Mutex;

/// What a request was for: the `route` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Route {
    Render,
    Find,
    Expand,
    Index,
    Tags,
    Functions,
    Prometheus,
    Health,
    Ingest,
    GrowthForecast,
    Ui,
    Other,
}

impl Route {
    /// Every route, in exposition order.
    pub const ALL: [Route; 12] = [
        Route::Render,
        Route::Find,
        Route::Expand,
        Route::Index,
        Route::Tags,
        Route::Functions,
        Route::Prometheus,
        Route::Health,
        Route::Ingest,
        Route::GrowthForecast,
        Route::Ui,
        Route::Other,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Route::Render => "render",
            Route::Find => "find",
            Route::Expand => "expand",
            Route::Index => "index",
            Route::Tags => "tags",
            Route::Functions => "functions",
            Route::Prometheus => "prometheus",
            Route::Health => "health",
            Route::Ingest => "ingest",
            Route::GrowthForecast => "growthforecast",
            Route::Ui => "ui",
            Route::Other => "other",
        }
    }

    /// The route of a path (as routed: not decoded). `/metrics` is the Prometheus
    /// exposition for a request without a `query` parameter; with one, or as a `POST`
    /// (whose body may hold it), it is graphite-web's find.
    pub fn of(path: &str, is_post: bool, query: Option<&str>) -> Route {
        let p = path
            .strip_suffix('/')
            .filter(|p| !p.is_empty())
            .unwrap_or(path);
        let under = |prefix: &str| p == prefix || p.starts_with(&format!("{prefix}/"));
        match p {
            "/render" => Route::Render,
            "/metrics/find" => Route::Find,
            "/metrics" => {
                let has_query = query.is_some_and(|q| {
                    form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "query")
                });
                if is_post || has_query {
                    Route::Find
                } else {
                    Route::Prometheus
                }
            }
            "/metrics/expand" => Route::Expand,
            "/metrics/index.json" => Route::Index,
            "/health" | "/ready" => Route::Health,
            "/api/v0/tsdb" | "/api/v1/write" => Route::Ingest,
            "/version" => Route::Functions,
            "/" | "/browse" | "/add_complex" | "/favicon.ico" => Route::Ui,
            _ if under("/tags") => Route::Tags,
            _ if under("/functions") => Route::Functions,
            _ if ["/api", "/json", "/vrule", "/delete", "/delete_complex"]
                .iter()
                .any(|pre| under(pre)) =>
            {
                Route::GrowthForecast
            }
            _ if ["/graph", "/xport", "/summary", "/complex"]
                .iter()
                .any(|pre| under(pre)) =>
            {
                Route::GrowthForecast
            }
            _ if [
                "/list",
                "/view_graph",
                "/view_complex",
                "/edit",
                "/edit_complex",
                "/static",
            ]
            .iter()
            .any(|pre| under(pre)) =>
            {
                Route::Ui
            }
            _ => Route::Other,
        }
    }
}

/// Upper bounds of the latency histogram, in seconds: from a cached find (~1 ms) to a
/// render at its limits (tens of seconds).
pub const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Debug, Default)]
struct Timing {
    count: AtomicU64,
    micros: AtomicU64,
    /// Non-cumulative: `buckets[i]` counts requests in `(BUCKETS[i-1], BUCKETS[i]]`;
    /// the last slot is over the highest bound.
    buckets: [AtomicU64; BUCKETS.len() + 1],
}

/// Counts and times per route. One per server, shared by the middleware, `/metrics`
/// and self-monitoring.
#[derive(Debug)]
pub struct HttpStats {
    timings: [Timing; Route::ALL.len()],
    /// `(route, status) → requests`; a handful of entries, so a lock per request costs
    /// little next to the request itself.
    statuses: Mutex<BTreeMap<(Route, u16), u64>>,
}

impl Default for HttpStats {
    fn default() -> HttpStats {
        HttpStats {
            timings: std::array::from_fn(|_| Timing::default()),
            statuses: Mutex::new(BTreeMap::new()),
        }
    }
}

/// Totals of one route since start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RouteTotals {
    pub route: &'static str,
    pub requests: u64,
    pub seconds: f64,
    /// Answers with a 5xx status.
    pub server_errors: u64,
}

impl HttpStats {
    /// Counts one request.
    pub fn record(&self, route: Route, status: u16, elapsed_secs: f64) {
        let Some(t) = self.timings.get(route as usize) else {
            return;
        };
        t.count.fetch_add(1, Relaxed);
        t.micros
            .fetch_add((elapsed_secs * 1e6).round() as u64, Relaxed);
        let slot = BUCKETS
            .iter()
            .position(|b| elapsed_secs <= *b)
            .unwrap_or(BUCKETS.len());
        if let Some(b) = t.buckets.get(slot) {
            b.fetch_add(1, Relaxed);
        }
        *self.statuses.lock().entry((route, status)).or_insert(0) += 1;
    }

    /// Every route's totals, in [`Route::ALL`] order.
    pub fn snapshot(&self) -> Vec<RouteTotals> {
        let statuses = self.statuses.lock().clone();
        Route::ALL
            .iter()
            .zip(self.timings.iter())
            .map(|(route, t)| RouteTotals {
                route: route.label(),
                requests: t.count.load(Relaxed),
                seconds: t.micros.load(Relaxed) as f64 / 1e6,
                server_errors: statuses
                    .range((*route, 500)..=(*route, 599))
                    .map(|(_, n)| n)
                    .sum(),
            })
            .collect()
    }

    /// The two families in Prometheus text format. Routes never requested are left
    /// out of the status counter; the histogram lists every route (zeros included) so
    /// rates start at zero.
    pub fn write_prometheus(&self, out: &mut String) {
        out.push_str("# HELP sumi_http_requests_total HTTP requests answered, by route and status.\n# TYPE sumi_http_requests_total counter\n");
        for ((route, status), n) in self.statuses.lock().iter() {
            let _ = writeln!(
                out,
                "sumi_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}",
                route.label()
            );
        }
        out.push_str("# HELP sumi_http_request_seconds Time to the response head, by route.\n# TYPE sumi_http_request_seconds histogram\n");
        for (route, t) in Route::ALL.iter().zip(self.timings.iter()) {
            let label = route.label();
            let mut cumulative = 0;
            for (i, b) in t.buckets.iter().enumerate() {
                cumulative += b.load(Relaxed);
                let le = BUCKETS
                    .get(i)
                    .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
                let _ = writeln!(
                    out,
                    "sumi_http_request_seconds_bucket{{route=\"{label}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "sumi_http_request_seconds_sum{{route=\"{label}\"}} {}\nsumi_http_request_seconds_count{{route=\"{label}\"}} {}",
                t.micros.load(Relaxed) as f64 / 1e6,
                t.count.load(Relaxed)
            );
        }
    }
}

/// The middleware: times the inner service and records the answer's status.
pub async fn record(State(stats): State<Arc<HttpStats>>, req: Request, next: Next) -> Response {
    let route = Route::of(
        req.uri().path(),
        req.method() == axum::http::Method::POST,
        req.uri().query(),
    );
    let started = Instant::now();
    let resp = next.run(req).await;
    stats.record(
        route,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_few_routes() {
        let r = |p: &str| Route::of(p, false, None);
        assert_eq!(r("/render"), Route::Render);
        assert_eq!(r("/render/"), Route::Render);
        assert_eq!(r("/metrics/find/"), Route::Find);
        assert_eq!(r("/metrics"), Route::Prometheus);
        assert_eq!(Route::of("/metrics", false, Some("query=a.*")), Route::Find);
        assert_eq!(Route::of("/metrics", true, None), Route::Find);
        assert_eq!(r("/metrics/expand"), Route::Expand);
        assert_eq!(r("/tags/autoComplete/tags"), Route::Tags);
        assert_eq!(r("/functions/sumSeries"), Route::Functions);
        assert_eq!(r("/ready"), Route::Health);
        assert_eq!(r("/api/v1/write"), Route::Ingest);
        assert_eq!(r("/api/svc/sec/graph"), Route::GrowthForecast);
        assert_eq!(r("/graph/svc/sec/graph"), Route::GrowthForecast);
        assert_eq!(r("/static/sumi.css"), Route::Ui);
        assert_eq!(r("/"), Route::Ui);
        assert_eq!(r("/renderer"), Route::Other);
        assert_eq!(r("/apix"), Route::Other);
        for route in Route::ALL {
            assert_eq!(Route::ALL[route as usize], route);
        }
    }

    #[test]
    fn counts_sums_and_buckets() {
        let s = HttpStats::default();
        s.record(Route::Render, 200, 0.004);
        s.record(Route::Render, 200, 0.3);
        s.record(Route::Render, 503, 20.0);
        s.record(Route::Find, 400, 0.001);
        let snap = s.snapshot();
        let render = snap.iter().find(|r| r.route == "render").unwrap();
        assert_eq!(render.requests, 3);
        assert_eq!(render.server_errors, 1);
        assert!((render.seconds - 20.304).abs() < 1e-9, "{}", render.seconds);
        let mut out = String::new();
        s.write_prometheus(&mut out);
        for want in [
            "sumi_http_requests_total{route=\"render\",status=\"200\"} 2\n",
            "sumi_http_requests_total{route=\"render\",status=\"503\"} 1\n",
            "sumi_http_requests_total{route=\"find\",status=\"400\"} 1\n",
            "sumi_http_request_seconds_bucket{route=\"render\",le=\"0.001\"} 0\n",
            "sumi_http_request_seconds_bucket{route=\"render\",le=\"0.005\"} 1\n",
            "sumi_http_request_seconds_bucket{route=\"render\",le=\"0.5\"} 2\n",
            "sumi_http_request_seconds_bucket{route=\"render\",le=\"10\"} 2\n",
            "sumi_http_request_seconds_bucket{route=\"render\",le=\"+Inf\"} 3\n",
            "sumi_http_request_seconds_count{route=\"render\"} 3\n",
            "sumi_http_request_seconds_bucket{route=\"find\",le=\"0.001\"} 1\n",
            "sumi_http_request_seconds_count{route=\"ui\"} 0\n",
        ] {
            assert!(out.contains(want), "{want} missing in:\n{out}");
        }
        assert!(!out.contains("route=\"ui\",status"));
    }
}
