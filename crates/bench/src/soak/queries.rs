//! The soak's query loop: threads asking the server what a dashboard would, in turn,
//! for as long as the soak lasts, each answer's latency (or failure) recorded.
//!
//! The mix ([`query_paths`]): a render of one host's cpu metrics, a render of one metric
//! over a glob of hosts, a `sumSeries` over every host, and finds of the top level and of
//! one host — all over the last 10 minutes, which the feed keeps filling.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::BenchError;
use crate::http;
use crate::soak::window::Latencies;
use crate::workload::Workload;

/// Bound of one query: a slower answer counts as an error.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// The paths asked, in order, for the series of `w`.
pub fn query_paths(w: &Workload) -> Vec<String> {
    let host0 = w.host_path(0);
    let top = if w.prefix.is_empty() {
        "*".to_string()
    } else {
        format!("{}.*", w.prefix)
    };
    // hosts 0-9 when there are that many: `host0000*`
    let some_hosts = format!("{}*", &host0[..host0.len() - 1]);
    let every_host = format!("{top}.cpu.user");
    let render = |target: &str| {
        format!(
            "/render?target={}&from=-10min&format=json",
            http::encode_query_value(target)
        )
    };
    let find = |q: &str| format!("/metrics/find?query={}", http::encode_query_value(q));
    vec![
        render(&format!("{host0}.cpu.*")),
        render(&format!("{some_hosts}.loadavg.loadavg1")),
        render(&format!("sumSeries({every_host})")),
        find(&top),
        find(&format!("{host0}.*")),
    ]
}

/// The running query threads.
pub struct QueryLoop {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl QueryLoop {
    /// Starts `threads` threads asking `paths` of the server at `http_addr` in turn, with
    /// `pause` between two queries of a thread, recording into `into`.
    pub fn start(
        http_addr: &str,
        paths: Vec<String>,
        threads: usize,
        pause: Duration,
        into: Arc<Latencies>,
    ) -> Result<QueryLoop, BenchError> {
        let stop = Arc::new(AtomicBool::new(false));
        let paths = Arc::new(paths);
        let mut handles = Vec::with_capacity(threads);
        for n in 0..threads {
            let (stop, paths, into) = (Arc::clone(&stop), Arc::clone(&paths), Arc::clone(&into));
            let addr = http_addr.to_string();
            let handle = std::thread::Builder::new()
                .name(format!("soak-query-{n}"))
                .spawn(move || {
                    // threads start at different queries of the mix
                    let mut i = n;
                    while !stop.load(Ordering::Relaxed) && !paths.is_empty() {
                        let path = &paths[i % paths.len()];
                        i += 1;
                        let t = Instant::now();
                        match http::get(&addr, path, QUERY_TIMEOUT) {
                            Ok(r) if r.status == 200 => into.ok(t.elapsed()),
                            Ok(r) => into.error(format!(
                                "GET {path}: status {}: {}",
                                r.status,
                                crate::procfs::truncate(&String::from_utf8_lossy(&r.body), 200)
                            )),
                            Err(e) => into.error(e.to_string()),
                        }
                        std::thread::sleep(pause);
                    }
                })
                .map_err(|e| BenchError::io("start a soak query thread", e))?;
            handles.push(handle);
        }
        Ok(QueryLoop {
            stop,
            threads: handles,
        })
    }

    /// Stops the threads and waits for them (each finishes its query in flight).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_renders_globs_and_a_sum_and_finds() {
        let w = Workload {
            series: 1000,
            points: 1,
            step_secs: 10,
            last_ts: 0,
            seed: 1,
            prefix: "bench".into(),
            tagged: 0,
        };
        let p = query_paths(&w);
        assert_eq!(p.len(), 5);
        assert_eq!(
            p[0],
            "/render?target=bench.host00000.cpu.%2A&from=-10min&format=json"
        );
        assert!(
            p[1].contains("=bench.host0000%2A.loadavg.loadavg1&"),
            "{}",
            p[1]
        );
        assert!(
            p[2].contains("=sumSeries%28bench.%2A.cpu.user%29&"),
            "{}",
            p[2]
        );
        assert_eq!(p[3], "/metrics/find?query=bench.%2A");
        assert_eq!(p[4], "/metrics/find?query=bench.host00000.%2A");
    }
}
