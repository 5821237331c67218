//! Latency probes, run once the load is stored and queryable:
//!
//! - **visibility**: a brand-new series gets one point over a carbon connection that is
//!   already open; the clock runs from the write until both `/metrics/find` and
//!   `/render` show it (polled every 2 ms);
//! - **render**: one sampled series over the whole loaded range (up to a day at 10 s);
//! - **find**: globs evaluated over every loaded name;
//! - **tagged** (with `--tagged`): `seriesByTag` with three expressions timed as a
//!   render and as `/tags/findSeries`, each answer checked against a plain filter of
//!   the workload's tagged names.
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

/// The three expressions of the tagged probe: one metric, one data centre of ten, the
/// hosts whose name starts `host000`..`host004` (a regex over every host value).
pub fn tagged_exprs(w: &Workload) -> [String; 3] {
    let dot = if w.prefix.is_empty() { "" } else { "." };
    [
        format!("name={}{dot}cpu.user", w.prefix),
        "dc=dc3".to_string(),
        "host=~host00[0-4].*".to_string(),
    ]
}

/// The names [`tagged_exprs`] must find, by a plain filter over the workload's tagged
/// series (metric 0 is `cpu.user`), sorted as graphite-web sorts them.
pub fn tagged_expected(w: &Workload) -> Vec<String> {
    let metrics = crate::workload::host_metrics();
    let mut out: Vec<String> = (0..w.tagged.div_ceil(crate::workload::METRICS_PER_HOST))
        .map(|host| host * crate::workload::METRICS_PER_HOST)
        .filter(|&i| i < w.tagged)
        .map(|i| w.series_name(i, &metrics))
        .filter(|name| {
            name.split(';').any(|t| t == "dc=dc3")
                && name.split(';').any(|t| {
                    t.strip_prefix("host=host00")
                        .and_then(|rest| rest.bytes().next())
                        .is_some_and(|d| (b'0'..=b'4').contains(&d))
                })
        })
        .collect();
    out.sort_unstable();
    out
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

/// The names in a `/render` JSON answer (`target`) or a `/tags/findSeries` answer
/// (strings), sorted.
fn answer_names(body: &[u8]) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let mut names: Vec<String> = v
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|x| x.as_str().or_else(|| x["target"].as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    names.sort_unstable();
    names
}

/// Times `seriesByTag` with [`tagged_exprs`] as a `/render` over the loaded range and
/// as `/tags/findSeries`, each `runs` times; an answer that differs from
/// [`tagged_expected`] is an error (the bench then says what it got).
pub fn tagged(http_addr: &str, w: &Workload, runs: usize) -> Result<Vec<Timing>, BenchError> {
    let exprs = tagged_exprs(w);
    let expected = tagged_expected(w);
    let target = format!(
        "seriesByTag({})",
        exprs
            .iter()
            .map(|e| format!("'{e}'"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let render = format!(
        "/render?target={}&from={}&until={}&format=json",
        encode(&target),
        // `from` is exclusive
        w.first_ts() - 1,
        w.last_ts
    );
    let find = format!(
        "/tags/findSeries?{}",
        exprs
            .iter()
            .map(|e| format!("expr={}", encode(e)))
            .collect::<Vec<_>>()
            .join("&")
    );
    let mut out = Vec::new();
    for (what, path) in [(target, render), (find.clone(), find)] {
        let mut ms = Vec::with_capacity(runs);
        let mut names = Vec::new();
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            let body = get_ok(http_addr, &path)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            names = answer_names(&body);
        }
        if names != expected {
            return Err(BenchError::Http {
                addr: http_addr.to_string(),
                path,
                reason: format!(
                    "{} series in the answer, {} expected (first answered {:?}, first expected {:?})",
                    names.len(),
                    expected.len(),
                    names.first(),
                    expected.first()
                ),
            });
        }
        out.push(summarize(
            format!("{what} over {} tagged series", w.tagged),
            ms,
            names.len(),
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
    fn tagged_expected_is_a_plain_filter() {
        let w = Workload {
            series: 60_000,
            points: 1,
            step_secs: 10,
            last_ts: 1_700_000_000,
            seed: 1,
            prefix: "bench".into(),
            tagged: 60_000,
        };
        let e = tagged_expected(&w);
        // hosts 0..600, in dc3 (h % 10 == 3) and numbered host000xx..host004xx: 3, 13, ..., 493
        assert_eq!(e.len(), 50);
        assert_eq!(e[0], "bench.cpu.user;dc=dc3;host=host00003;role=web");
        assert_eq!(e[49], "bench.cpu.user;dc=dc3;host=host00493;role=api");
        assert_eq!(tagged_exprs(&w)[0], "name=bench.cpu.user");
        assert!(
            tagged_expected(&Workload {
                tagged: 350,
                ..w.clone()
            })
            .len()
                == 1
        );
        assert!(tagged_expected(&Workload { tagged: 300, ..w }).is_empty());
        assert_eq!(encode("a=~b c"), "a%3D%7Eb%20c");
    }

    #[test]
    fn answer_names_read_render_and_find_series() {
        assert_eq!(
            answer_names(
                br#"[{"target":"b;x=1","datapoints":[]},{"target":"a;x=1","datapoints":[]}]"#
            ),
            ["a;x=1", "b;x=1"]
        );
        assert_eq!(answer_names(br#"["b;x=1","a;x=1"]"#), ["a;x=1", "b;x=1"]);
        assert!(answer_names(b"not json").is_empty());
    }

    #[test]
    fn non_null_points_are_counted() {
        let body = br#"[{"target":"a","datapoints":[[null,1],[2.0,2]]},{"target":"b","datapoints":[[1.5,1]]}]"#;
        assert_eq!(count_non_null(body), 2);
        assert_eq!(count_non_null(b"not json"), 0);
    }
}
