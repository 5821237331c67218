//! Latency probes, run once the load is stored and queryable:
//!
//! - **visibility**: a brand-new series gets one point over a carbon connection that is
//!   already open; the clock runs from the write until both `/metrics/find` and
//!   `/render` show it (polled every 2 ms);
//! - **render**: one sampled series over the whole loaded range (up to a day at 10 s);
//! - **find**: globs evaluated over every loaded name.
//!
//! Each probe is repeated and reported as a median (and max): the machine is shared.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::BenchError;
use crate::http;
use crate::workload::Workload;

/// One probe's repetitions, in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timing {
    /// What was asked.
    pub what: String,
    pub runs: usize,
    pub median_ms: f64,
    pub max_ms: f64,
    /// Series or nodes in the answer (for render: non-null points of the series).
    pub answer_size: usize,
}

fn summarize(what: String, mut ms: Vec<f64>, answer_size: usize) -> Timing {
    ms.sort_by(f64::total_cmp);
    let median = if ms.is_empty() {
        0.0
    } else if ms.len() % 2 == 1 {
        ms[ms.len() / 2]
    } else {
        (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0
    };
    Timing {
        what,
        runs: ms.len(),
        median_ms: median,
        max_ms: ms.last().copied().unwrap_or(0.0),
        answer_size,
    }
}

const TIMEOUT: Duration = Duration::from_secs(10);

fn get_ok(addr: &str, path: &str) -> Result<Vec<u8>, BenchError> {
    let r = http::get(addr, path, TIMEOUT)?;
    if r.status != 200 {
        return Err(BenchError::Http {
            addr: addr.to_string(),
            path: path.to_string(),
            reason: format!("status {}", r.status),
        });
    }
    Ok(r.body)
}

/// Time from one point of a new series to its visibility in find and render.
pub fn visibility(
    carbon: &str,
    http_addr: &str,
    prefix: &str,
    runs: usize,
) -> Result<Timing, BenchError> {
    let mut stream = TcpStream::connect(carbon).map_err(|e| BenchError::Http {
        addr: carbon.to_string(),
        path: "carbon".to_string(),
        reason: e.to_string(),
    })?;
    stream.set_nodelay(true).ok();
    let tag = std::process::id();
    let mut ms = Vec::with_capacity(runs);
    for i in 0..runs {
        let name = format!("{prefix}.probe.p{tag}x{i}.value");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let find = format!("/metrics/find?query={name}");
        let render = format!("/render?target={name}&from=-5min&format=json");
        let t = Instant::now();
        stream
            .write_all(format!("{name} {i} {now}\n").as_bytes())
            .map_err(|e| BenchError::Http {
                addr: carbon.to_string(),
                path: "carbon".to_string(),
                reason: e.to_string(),
            })?;
        let deadline = t + TIMEOUT;
        let (mut found, mut rendered) = (false, false);
        while !(found && rendered) {
            if Instant::now() > deadline {
                return Err(BenchError::Http {
                    addr: http_addr.to_string(),
                    path: render,
                    reason: format!("new series {name} not visible after {TIMEOUT:?}"),
                });
            }
            if !found {
                found = String::from_utf8_lossy(&get_ok(http_addr, &find)?).contains("\"leaf\": 1");
            }
            if found && !rendered {
                let body = get_ok(http_addr, &render)?;
                rendered = count_non_null(&body) >= 1;
            }
            if !(found && rendered) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(summarize(
        "new series visible to /metrics/find and /render".to_string(),
        ms,
        1,
    ))
}

fn count_non_null(body: &[u8]) -> usize {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return 0;
    };
    v.as_array()
        .map(|all| {
            all.iter()
                .filter_map(|s| s["datapoints"].as_array())
                .flatten()
                .filter(|p| !p[0].is_null())
                .count()
        })
        .unwrap_or(0)
}

/// `/render` of one loaded series over the whole loaded range, repeated.
pub fn render_one(
    http_addr: &str,
    w: &Workload,
    name: &str,
    runs: usize,
) -> Result<Timing, BenchError> {
    let path = format!(
        "/render?target={name}&from={}&until={}&format=json",
        w.first_ts() - 1,
        w.last_ts
    );
    let mut size = 0;
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let body = get_ok(http_addr, &path)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        size = count_non_null(&body);
    }
    let hours = (w.last_ts - w.first_ts()) as f64 / 3600.0;
    Ok(summarize(
        format!("/render of one series over {hours:.1} h"),
        ms,
        size,
    ))
}

/// `/metrics/find` of `glob` (treejson, Grafana's default), repeated; the answer size is
/// the number of nodes matched.
pub fn find(http_addr: &str, glob: &str, runs: usize) -> Result<Timing, BenchError> {
    let path = format!("/metrics/find?query={glob}");
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        get_ok(http_addr, &path)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // treejson merges nodes of the same name; format=json lists every node
    let listed = get_ok(http_addr, &format!("{path}&format=json"))?;
    let size = serde_json::from_slice::<serde_json::Value>(&listed)
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(0);
    Ok(summarize(format!("/metrics/find?query={glob}"), ms, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_max() {
        let t = summarize("x".into(), vec![3.0, 1.0, 2.0], 5);
        assert_eq!(
            (t.runs, t.median_ms, t.max_ms, t.answer_size),
            (3, 2.0, 3.0, 5)
        );
        let t = summarize("x".into(), vec![4.0, 1.0, 2.0, 3.0], 0);
        assert_eq!(t.median_ms, 2.5);
        assert_eq!(summarize("x".into(), vec![], 0).median_ms, 0.0);
    }

    #[test]
    fn non_null_points_are_counted() {
        let body = br#"[{"target":"a","datapoints":[[null,1],[2.0,2]]},{"target":"b","datapoints":[[1.5,1]]}]"#;
        assert_eq!(count_non_null(body), 2);
        assert_eq!(count_non_null(b"not json"), 0);
    }
}
