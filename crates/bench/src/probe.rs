//! Latency probes, run once the load is stored and queryable:
//!
//! - **visibility**: a brand-new series gets one point over a carbon connection that is
//!   already open; the clock runs from the write until both `/metrics/find` and
//!   `/render` show it (polled every 2 ms);
//! - **render**: one sampled series over the whole loaded range (up to a day at 10 s);
//! - **find**: globs evaluated over every loaded name;
//! - **tagged** (opt-in, `--tagged N`): N tagged series sent, then `seriesByTag`
//!   renders and `/tags/findSeries` timed over them.
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
    // relative to now, as a dashboard asks ("the last 24 h"): back to the first point,
    // but no further than the load's span or a day, whichever is longer. An absolute
    // `from` at the first point of a day-long load is older than the finest archive's
    // retention (a day by default) by the time the load is in, and whisper then
    // answers from the next, coarser archive.
    let span = w.last_ts - w.first_ts() + w.step_secs;
    let back = (crate::soak::feed::unix_now() - w.first_ts() + w.step_secs).min(span.max(86_400));
    let path = format!("/render?target={name}&from=-{back}s&format=json");
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

/// Cores a host in the tagged probe's series.
const TAGGED_CORES: u64 = 100;
/// Data centres in the tagged probe's series.
const TAGGED_DCS: u64 = 10;

/// The `i`-th series of the tagged probe: host-major, so the last host comes last.
fn tagged_name(i: u64) -> String {
    let host = i / TAGGED_CORES;
    format!(
        "cpu.usage;core={};dc=dc{};host=h{host}",
        i % TAGGED_CORES,
        host % TAGGED_DCS
    )
}

/// Percent-encodes a query parameter value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Sends `count` tagged series (one point each) over carbon, waits until the last
/// host's series are in the tag index, then times `seriesByTag` renders and
/// `/tags/findSeries` over them.
pub fn tagged(
    carbon: &str,
    http_addr: &str,
    count: u64,
    runs: usize,
) -> Result<Vec<Timing>, BenchError> {
    let carbon_err = |e: std::io::Error| BenchError::Http {
        addr: carbon.to_string(),
        path: "carbon".to_string(),
        reason: e.to_string(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut stream = TcpStream::connect(carbon).map_err(carbon_err)?;
    let mut buf = String::with_capacity(1 << 20);
    for i in 0..count {
        buf.push_str(&tagged_name(i));
        buf.push_str(&format!(" 1 {now}\n"));
        if buf.len() > 1 << 20 {
            stream.write_all(buf.as_bytes()).map_err(carbon_err)?;
            buf.clear();
        }
    }
    stream.write_all(buf.as_bytes()).map_err(carbon_err)?;
    drop(stream);
    // the last series sent is the last host's last core
    let last = count.saturating_sub(1);
    let wait = format!(
        "/tags/findSeries?expr={}&expr={}",
        encode(&format!("host=h{}", last / TAGGED_CORES)),
        encode(&format!("core={}", last % TAGGED_CORES)),
    );
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let body = get_ok(http_addr, &wait)?;
        if serde_json::from_slice::<Vec<String>>(&body).is_ok_and(|v| !v.is_empty()) {
            break;
        }
        if Instant::now() > deadline {
            return Err(BenchError::Http {
                addr: http_addr.to_string(),
                path: wait,
                reason: format!("{count} tagged series not indexed after 600 s"),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let exprs = ["name=cpu.usage", "dc=dc3", "host=~h12.*"];
    let target = format!(
        "seriesByTag({})",
        exprs
            .iter()
            .map(|e| format!("'{e}'"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let render = format!("/render?target={}&from=-10min&format=json", encode(&target));
    let find = format!(
        "/tags/findSeries?{}",
        exprs
            .iter()
            .map(|e| format!("expr={}", encode(e)))
            .collect::<Vec<_>>()
            .join("&")
    );
    let mut out = Vec::new();
    for (what, path) in [(target.clone(), render), (find.clone(), find)] {
        let mut ms = Vec::with_capacity(runs);
        let mut size = 0;
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            let body = get_ok(http_addr, &path)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            size = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.as_array().map(Vec::len))
                .unwrap_or(0);
        }
        out.push(summarize(
            format!("{what} over {count} tagged series"),
            ms,
            size,
        ));
    }
    Ok(out)
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
    fn tagged_names_are_unique_and_host_major() {
        assert_eq!(tagged_name(0), "cpu.usage;core=0;dc=dc0;host=h0");
        assert_eq!(tagged_name(123), "cpu.usage;core=23;dc=dc1;host=h1");
        assert_eq!(encode("a=~b c"), "a%3D%7Eb%20c");
    }

    #[test]
    fn non_null_points_are_counted() {
        let body = br#"[{"target":"a","datapoints":[[null,1],[2.0,2]]},{"target":"b","datapoints":[[1.5,1]]}]"#;
        assert_eq!(count_non_null(body), 2);
        assert_eq!(count_non_null(b"not json"), 0);
    }
}
