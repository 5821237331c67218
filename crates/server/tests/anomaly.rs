//! Anomaly detection on ingest, end to end (docs/anomaly.md): a real `sumi` process
//! with `[[anomaly]]` rules, points over real carbon plaintext, scores read back with
//! `anomalyScore()` through `/render`, events through `/api/anomalies` and
//! `/events/get_data`, a webhook received by a real local HTTP server, and restarts
//! (clean, and SIGKILL without any saved state) that must not change a single score;
//! the anomalies page in headless Chromium.

mod browser;
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{now, scratch, Sumi};

const STEP: i64 = 10;

/// A deterministic, noisy, slowly varying series (no randomness between runs).
fn value(i: usize) -> f64 {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    let noise = (x % 1000) as f64 / 1000.0 - 0.5;
    100.0 + 5.0 * (i as f64 / 40.0).sin() + 2.0 * noise
}

/// `n` points ending a little before now, on the 10 s grid, with a spike at `spike`.
fn series(n: usize, spike: usize) -> (i64, Vec<(i64, f64)>) {
    let t0 = (now() - 60 - n as i64 * STEP) / STEP * STEP;
    let pts = (0..n)
        .map(|i| {
            let v = if i == spike { 400.0 } else { value(i) };
            (t0 + i as i64 * STEP, v)
        })
        .collect();
    (t0, pts)
}

fn lines(name: &str, pts: &[(i64, f64)]) -> String {
    pts.iter()
        .map(|(t, v)| format!("{name} {v} {t}\n"))
        .collect()
}

fn config(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("sumi.toml");
    let text =
        format!("[selfmon]\nenabled = false\n\n[[anomaly]]\nmatch = \"app.*.latency\"\n\n{extra}");
    std::fs::write(&path, text).unwrap();
    path
}

fn start(data: &std::path::Path, cfg: &std::path::Path) -> Sumi {
    Sumi::start(data, &["--config", cfg.to_str().unwrap()])
}

/// `(ts, score)` of every slot of the first series of a render answer (null = None).
fn scores(sumi: &Sumi, target: &str, from: i64) -> (String, Vec<(i64, Option<f64>)>) {
    let v = sumi.get_json(&format!(
        "/render?target={target}&from={from}&until={}&format=json",
        now() + 60
    ));
    let s = &v[0];
    let pts = s["datapoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no datapoints: {v}"))
        .iter()
        .map(|p| (p[1].as_i64().unwrap(), p[0].as_f64()))
        .collect();
    (s["target"].as_str().unwrap().to_string(), pts)
}

/// What the test's webhook receiver saw: every request body, in order.
#[derive(Default)]
struct Received {
    bodies: Vec<serde_json::Value>,
    refused: usize,
}

/// A real HTTP server on a loopback port that refuses the first `refuse` requests
/// with 503 (so sumi must retry) and takes the rest.
fn webhook_receiver(refuse: usize) -> (String, Arc<Mutex<Received>>) {
    use axum::routing::post;
    let got = Arc::new(Mutex::new(Received::default()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let state = got.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/hook",
                post(move |headers: axum::http::HeaderMap, body: String| {
                    let state = state.clone();
                    async move {
                        let mut r = state.lock().unwrap();
                        if r.refused < refuse {
                            r.refused += 1;
                            return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                        }
                        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                        assert_eq!(
                            headers["x-sumi-event-id"].to_str().unwrap(),
                            v["id"].as_str().unwrap()
                        );
                        r.bodies.push(v);
                        axum::http::StatusCode::OK
                    }
                }),
            );
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (url, got)
}

#[test]
fn a_spike_scores_high_becomes_an_event_and_reaches_the_webhook() {
    let dir = scratch();
    let (url, received) = webhook_receiver(2);
    let cfg = config(
        dir.path(),
        &format!(
            "[anomaly_events]\nwebhooks = [\"{url}\"]\nwebhook_attempts = 5\nwebhook_backoff = \"50ms\"\n"
        ),
    );
    let sumi = start(&dir.path().join("data"), &cfg);
    let n = 300;
    let spike = 250;
    let (t0, pts) = series(n, spike);
    let mut text = lines("app.web.latency", &pts);
    text.push_str(&lines("other.web.latency", &pts));
    sumi.send_tcp(text.as_bytes());
    // warm-up: the first 32 points of the watched series get no score
    sumi.wait_metric("sumi_anomaly_points_scored_total", (n - 32) as f64);
    assert_eq!(sumi.metric("sumi_anomaly_points_unscored_total"), 32.0);
    assert_eq!(sumi.metric("sumi_anomaly_series_watched"), 1.0);

    let (name, s) = scores(&sumi, "anomalyScore(app.web.latency)", t0 - STEP);
    assert_eq!(name, "anomalyScore(app.web.latency)");
    let at = |ts: i64| s.iter().find(|(t, _)| *t == ts).and_then(|(_, v)| *v);
    let spike_ts = pts[spike].0;
    let spike_score = at(spike_ts).expect("the spike has a score");
    assert!(spike_score >= 0.6, "spike scored {spike_score}");
    assert!(at(pts[10].0).is_none(), "a warm-up point has a score");
    let scored: Vec<f64> = pts[32..].iter().filter_map(|(t, _)| at(*t)).collect();
    assert_eq!(scored.len(), n - 32);
    assert!(scored.iter().all(|v| (0.0..=1.0).contains(v)));
    // a score of 0 is not stored: anomalyScore answers 0 from the series' own point,
    // and only the scores above 0 were written
    let nonzero = scored.iter().filter(|v| **v > 0.0).count();
    assert!(
        nonzero < scored.len() / 2,
        "{nonzero} of {} scores above 0",
        scored.len()
    );
    assert_eq!(
        sumi.metric("sumi_anomaly_scores_stored_total"),
        nonzero as f64
    );
    let calm_max = pts[32..spike]
        .iter()
        .filter_map(|(t, _)| at(*t))
        .fold(0.0, f64::max);
    assert!(
        calm_max < spike_score,
        "calm max {calm_max} vs spike {spike_score}"
    );

    // read from the minute archive (a range past the 10 s archive's day), the scores
    // roll up by their maximum, so the spike's minute keeps the spike's score
    let v = sumi.get_json(&format!(
        "/render?target=anomalyScore(app.web.latency)&from={}&until={}&format=json",
        now() - 2 * 86_400,
        now() + 60
    ));
    let minute = v[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[1].as_i64() == Some(spike_ts - spike_ts % 60))
        .unwrap_or_else(|| panic!("no minute of the spike: {v}"));
    assert_eq!(minute[0].as_f64(), Some(spike_score));

    // an unwatched series: one series of nulls, still named after it
    let (name, s) = scores(&sumi, "anomalyScore(other.web.latency)", t0 - STEP);
    assert_eq!(name, "anomalyScore(other.web.latency)");
    assert!(!s.is_empty() && s.iter().all(|(_, v)| v.is_none()));

    // the score series stay out of the tree, globs and the index unless asked for
    let paths = |v: serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        paths(sumi.get_json("/metrics/find?query=*")),
        ["app", "other"]
    );
    assert_eq!(
        paths(sumi.get_json("/metrics/find?query=_anomaly.*")),
        ["_anomaly.app"]
    );
    let v = sumi.get_json("/metrics/index.json");
    assert_eq!(
        v,
        serde_json::json!(["app.web.latency", "other.web.latency"])
    );
    let v = sumi.get_json("/metrics/expand?query=*.web.latency&leavesOnly=1");
    assert_eq!(
        v["results"],
        serde_json::json!(["app.web.latency", "other.web.latency"])
    );
    let v = sumi.get_json("/metrics/expand?query=_anomaly.*.web.latency&leavesOnly=1");
    assert_eq!(
        v["results"],
        serde_json::json!(["_anomaly.app.web.latency"])
    );
    let render = |target: &str| {
        let v = sumi.get_json(&format!(
            "/render?target={target}&from={}&format=json",
            t0 - STEP
        ));
        v.as_array().unwrap().len()
    };
    assert_eq!(render("*.*.*.*"), 0);
    assert_eq!(render("_anomaly.*.*.*"), 1);

    // inside another function
    let (name, m) = scores(&sumi, "maxSeries(anomalyScore(app.*.latency))", t0 - STEP);
    // named as graphite-web names aggregates: after the path expressions of its inputs
    assert_eq!(name, "maxSeries(anomalyScore(app.web.latency))");
    let m_at = |ts: i64| m.iter().find(|(t, _)| *t == ts).and_then(|(_, v)| *v);
    assert_eq!(m_at(spike_ts), Some(spike_score));
    let v = sumi.get_json(&format!(
        "/render?target=highestMax(anomalyScore(app.*.latency),1)&from={}&format=json",
        t0 - STEP
    ));
    assert_eq!(v[0]["target"], "anomalyScore(app.web.latency)");

    // the event
    let v = sumi.get_json(&format!("/api/anomalies?from={}&match=app.*.latency", t0));
    let events = v["anomalies"].as_array().unwrap();
    let e = events
        .iter()
        .find(|e| e["start"] == spike_ts)
        .unwrap_or_else(|| panic!("no event at the spike: {v}"));
    assert_eq!(e["series"], "app.web.latency");
    assert_eq!(e["reason"], "spike");
    assert_eq!(e["peak"].as_f64(), Some(spike_score));
    assert!(e["end"].as_i64().unwrap() >= spike_ts);
    assert_eq!(e["target"], "anomalyScore(app.web.latency)");
    let id = e["id"].as_str().unwrap().to_string();
    let v = sumi.get_json(&format!("/api/anomalies?from={}&match=nothing.*", t0));
    assert_eq!(v["anomalies"].as_array().unwrap().len(), 0);

    // graphite-web's events API, as Grafana asks for annotations
    let v = sumi.get_json(&format!(
        "/events/get_data?from={}&until=now&tags=anomaly",
        t0
    ));
    let ev = v
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["when"] == spike_ts)
        .unwrap_or_else(|| panic!("no annotation: {v}"));
    assert_eq!(ev["what"], "spike on app.web.latency");
    let tags: Vec<&str> = ev["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tags, ["anomaly", "spike", "app.web.latency"]);
    let v = sumi.get_json(&format!("/events/get_data?from={}&tags=no-such-tag", t0));
    assert_eq!(v.as_array().unwrap().len(), 0);

    // the webhook: refused twice (503), retried, delivered once per event and status
    let deadline = Instant::now() + Duration::from_secs(30);
    while received.lock().unwrap().bodies.is_empty() {
        assert!(
            Instant::now() < deadline,
            "no webhook:\n{}",
            sumi.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = received.lock().unwrap();
    let opened: Vec<&serde_json::Value> = got
        .bodies
        .iter()
        .filter(|b| b["id"] == id.as_str() && b["status"] == "open")
        .collect();
    assert_eq!(opened.len(), 1, "{:?}", got.bodies);
    assert_eq!(opened[0]["series"], "app.web.latency");
    assert_eq!(opened[0]["start"], spike_ts);
    assert_eq!(opened[0]["peak"].as_f64(), Some(spike_score));
    assert_eq!(got.refused, 2);
    drop(got);
    assert!(sumi.metric("sumi_anomaly_webhook_retries_total") >= 2.0);
    assert!(sumi.metric("sumi_anomaly_webhooks_sent_total") >= 1.0);
    assert_eq!(sumi.metric("sumi_anomaly_webhooks_failed_total"), 0.0);
    assert!(sumi.metric("sumi_anomaly_events_opened_total") >= 1.0);
}

/// A series that stops sending in the middle of an incident: its open event closes
/// after `close_quiet` with the webhook's close notification; Graphite's `events()`
/// counts the event at its start, as `/events/get_data` lists it.
#[test]
fn an_open_event_closes_when_its_series_goes_quiet_and_events_counts_it() {
    let dir = scratch();
    let (url, received) = webhook_receiver(0);
    let cfg = config(
        dir.path(),
        &format!("[anomaly_events]\nwebhooks = [\"{url}\"]\nclose_quiet = \"1s\"\n"),
    );
    let sumi = start(&dir.path().join("data"), &cfg);
    let n = 200;
    let (t0, pts) = series(n, n - 1);
    let spike_ts = pts[n - 1].0;
    sumi.send_tcp(lines("app.quiet.latency", &pts).as_bytes());
    // the last point opens an event; nothing more arrives, so only the quiet time
    // can close it
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let v = sumi.get_json(&format!("/api/anomalies?from={t0}&match=app.quiet.latency"));
        let last = v["anomalies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["start"] == spike_ts)
            .cloned();
        if let Some(e) = last.filter(|e| e["open"] == false) {
            assert_eq!(e["end"], spike_ts);
            break e["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "not closed: {v}");
        std::thread::sleep(Duration::from_millis(50));
    };
    loop {
        let statuses: Vec<String> = received
            .lock()
            .unwrap()
            .bodies
            .iter()
            .filter(|b| b["id"] == id.as_str())
            .map(|b| b["status"].as_str().unwrap().to_string())
            .collect();
        if statuses.len() == 2 {
            assert_eq!(statuses, ["open", "closed"]);
            break;
        }
        assert!(Instant::now() < deadline, "webhooks {statuses:?}");
        std::thread::sleep(Duration::from_millis(20));
    }

    // events(): one point per second, the number of events starting in that second
    // with all the given tags, as /events/get_data lists them over the same interval
    let (from, until) = (t0, now() + 60);
    let listed = sumi.get_json(&format!("/events/get_data?from={from}&until={until}"));
    let listed: Vec<(i64, Vec<String>)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let tags = e["tags"].as_array().unwrap();
            let tags = tags.iter().map(|t| t.as_str().unwrap().to_string());
            (e["when"].as_i64().unwrap(), tags.collect())
        })
        .collect();
    assert!(listed.iter().any(|(w, _)| *w == spike_ts), "{listed:?}");
    for tags in [
        vec!["anomaly"],
        vec!["*"],
        vec!["anomaly", "spike"],
        vec!["app.quiet.latency"],
        vec!["anomaly", "no-such-tag"],
    ] {
        let mut want: Vec<(i64, f64)> = Vec::new();
        for (when, have) in &listed {
            let all = tags == ["*"] || tags.iter().all(|t| have.iter().any(|h| h == t));
            if all && (from..until).contains(when) {
                match want.iter_mut().find(|(w, _)| w == when) {
                    Some((_, n)) => *n += 1.0,
                    None => want.push((*when, 1.0)),
                }
            }
        }
        want.sort_by_key(|(w, _)| *w);
        let arg: Vec<String> = tags.iter().map(|t| format!("'{t}'")).collect();
        let v = sumi.get_json(&format!(
            "/render?target=events({})&from={from}&until={until}&format=json",
            arg.join(",")
        ));
        let points = v[0]["datapoints"].as_array().unwrap();
        assert_eq!(points.len() as i64, until - from, "{tags:?}");
        let counted: Vec<(i64, f64)> = points
            .iter()
            .filter_map(|p| Some((p[1].as_i64().unwrap(), p[0].as_f64()?)))
            .collect();
        assert_eq!(counted, want, "{tags:?}");
        if tags != ["anomaly", "no-such-tag"] {
            assert!(counted.contains(&(spike_ts, 1.0)), "{tags:?}: {counted:?}");
        }
    }
}

/// Scores of one series fed in two parts, with what happens between them.
fn scores_in_two_parts(between: &str, pts: &[(i64, f64)], split: usize) -> Vec<(i64, Option<f64>)> {
    scores_in_two_parts_with("", between, pts, split)
}

/// The same under the rule's extra settings `rule` (for example `block = 16`).
fn scores_in_two_parts_with(
    rule: &str,
    between: &str,
    pts: &[(i64, f64)],
    split: usize,
) -> Vec<(i64, Option<f64>)> {
    let dir = scratch();
    let cfg = config(dir.path(), rule);
    let data = dir.path().join("data");
    let mut sumi = start(&data, &cfg);
    sumi.send_tcp(lines("app.db.latency", &pts[..split]).as_bytes());
    sumi.wait_metric("sumi_anomaly_points_scored_total", (split - 32) as f64);
    match between {
        "none" => {}
        "restart" => {
            sumi.stop();
            sumi = start(&data, &cfg);
            assert_eq!(sumi.metric("sumi_anomaly_state_restored_total"), 1.0);
        }
        "kill" => {
            sumi.kill9();
            sumi = start(&data, &cfg);
            assert_eq!(sumi.metric("sumi_anomaly_state_restored_total"), 0.0);
        }
        // the name leaves its series id; the detector stays with the name
        "rename" => {
            let (status, body) = sumi.post_form(
                "/api/v1/series/rename",
                &[("from", "app.db.latency"), ("to", "app.old.latency")],
            );
            assert_eq!(status, 200, "{body}");
        }
        "delete" => {
            let (status, body) =
                sumi.post_form("/api/v1/series/delete", &[("target", "app.db.latency")]);
            assert_eq!(status, 200, "{body}");
        }
        _ => unreachable!(),
    }
    sumi.send_tcp(lines("app.db.latency", &pts[split..]).as_bytes());
    let scored_before = if matches!(between, "none" | "rename" | "delete") {
        split - 32
    } else {
        0
    };
    sumi.wait_metric(
        "sumi_anomaly_points_scored_total",
        (scored_before + pts.len() - split) as f64,
    );
    if between == "kill" {
        // nothing was saved: the detector learnt again from the stored points
        assert!(sumi.metric("sumi_anomaly_history_points_total") >= split as f64);
    }
    scores(&sumi, "anomalyScore(app.db.latency)", pts[0].0 - STEP).1
}

#[test]
fn scores_after_a_restart_equal_scores_without_one() {
    let n = 320;
    let (_, pts) = series(n, 250);
    let split = 200;
    let straight = scores_in_two_parts("none", &pts, split);
    let restarted = scores_in_two_parts("restart", &pts, split);
    let killed = scores_in_two_parts("kill", &pts, split);
    let of = |s: &[(i64, Option<f64>)]| -> Vec<(i64, Option<u64>)> {
        s.iter()
            .filter(|(t, _)| *t >= pts[0].0 && *t <= pts[n - 1].0)
            .map(|(t, v)| (*t, v.map(f64::to_bits)))
            .collect()
    };
    let a = of(&straight);
    assert_eq!(a.len(), n);
    assert_eq!(a.iter().filter(|(_, v)| v.is_some()).count(), n - 32);
    assert_eq!(a, of(&restarted), "clean restart changed the scores");
    assert_eq!(
        a,
        of(&killed),
        "SIGKILL without saved state changed the scores"
    );
}

/// The two-stage design (`block = 16` in the rule) through the server: the spike
/// alarms, and a clean restart (saved state, version 5) or a SIGKILL (relearnt from the
/// stored points) gives bit-identical scores, with the split inside a block.
#[test]
fn two_stage_scores_after_a_restart_equal_scores_without_one() {
    let n = 320;
    let (_, pts) = series(n, 250);
    let split = 203;
    let rule = "block = 16\npattern_weight = 0.1\n";
    let straight = scores_in_two_parts_with(rule, "none", &pts, split);
    let restarted = scores_in_two_parts_with(rule, "restart", &pts, split);
    let killed = scores_in_two_parts_with(rule, "kill", &pts, split);
    let of = |s: &[(i64, Option<f64>)]| -> Vec<(i64, Option<u64>)> {
        s.iter()
            .filter(|(t, _)| *t >= pts[0].0 && *t <= pts[n - 1].0)
            .map(|(t, v)| (*t, v.map(f64::to_bits)))
            .collect()
    };
    let a = of(&straight);
    assert_eq!(a.len(), n);
    assert_eq!(a.iter().filter(|(_, v)| v.is_some()).count(), n - 32);
    let spike = a[250].1.map(f64::from_bits).expect("spike scored");
    assert!(spike >= 0.6, "spike scored {spike}");
    assert_eq!(a, of(&restarted), "clean restart changed the scores");
    assert_eq!(
        a,
        of(&killed),
        "SIGKILL without saved state changed the scores"
    );
}

/// Detectors are kept by the store's series ids; a rename moves the id to another
/// name and a delete frees the name for a new id. The detector belongs to the name, as
/// it did when detectors were kept by name: the points sent to the name afterwards
/// score exactly as without the rename or the delete.
#[test]
fn a_detector_stays_with_its_name_across_a_rename_and_a_delete() {
    let n = 320;
    let (_, pts) = series(n, 250);
    let split = 200;
    let tail = |s: &[(i64, Option<f64>)]| -> Vec<(i64, Option<u64>)> {
        s.iter()
            .filter(|(t, _)| *t >= pts[split].0 && *t <= pts[n - 1].0)
            .map(|(t, v)| (*t, v.map(f64::to_bits)))
            .collect()
    };
    let straight = tail(&scores_in_two_parts("none", &pts, split));
    assert_eq!(straight.len(), n - split);
    assert!(straight
        .iter()
        .any(|(_, v)| v.is_some_and(|b| f64::from_bits(b) > 0.6)));
    for between in ["rename", "delete"] {
        let after = tail(&scores_in_two_parts(between, &pts, split));
        assert_eq!(straight, after, "{between} changed the scores");
    }
}

#[test]
fn the_anomalies_page_lists_the_event_and_links_to_its_shaded_graph() {
    let dir = scratch();
    let cfg = config(dir.path(), "");
    let sumi = start(&dir.path().join("data"), &cfg);
    let (_, pts) = series(300, 250);
    sumi.send_tcp(lines("app.api.latency", &pts).as_bytes());
    sumi.wait_metric("sumi_anomaly_events_opened_total", 1.0);
    let spike_ts = pts[250].0;

    let mut b = browser::Browser::start(1280, 900);
    b.open(&format!("http://{}/anomalies", sumi.http));
    let rows = b.eval(
        "Array.from(document.querySelectorAll('table.anomalies tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))",
    );
    let rows = rows.as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r[1] == "app.api.latency")
        .unwrap_or_else(|| panic!("no row for the series: {rows:?}"));
    assert_eq!(row[2], "spike");
    assert!(row[3].as_str().unwrap().parse::<f64>().unwrap() >= 0.6);
    b.screenshot("anomalies-list");

    b.click("table.anomalies a.series");
    b.wait_for(
        "document.querySelectorAll('img.anomaly-graph').length === 2",
        "the event's graphs",
    );
    b.wait_images();
    let imgs = b.images("img.anomaly-graph");
    assert_eq!(imgs.len(), 2, "{imgs:?}");
    for (src, w, h) in &imgs {
        assert_eq!((*w, *h), (900, 300), "{src} was not drawn");
        assert!(src.contains(&format!("shade={spike_ts}:")), "{src}");
    }
    assert!(imgs[1].0.contains("anomalyScore"), "{imgs:?}");
    b.screenshot("anomalies-graph");

    // a server without rules says how to watch series
    drop(sumi);
    let dir2 = scratch();
    let plain = Sumi::start(&dir2.path().join("data"), &[]);
    b.open(&format!("http://{}/anomalies", plain.http));
    assert_eq!(
        b.eval("document.querySelector('#no-detectors') !== null"),
        serde_json::json!(true)
    );
}
