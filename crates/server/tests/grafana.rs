//! What Grafana's Graphite data source sends, replayed against the real server: its
//! render POST (targets wrapped in `aliasSub(…, "(^.*$)", "\1 <refId>")`, form-encoded,
//! `format=json`, `maxDataPoints`, `cacheTimeout`), its `/metrics/find` POST (`query`
//! in the body, `from`/`until` in the query string), `/version` and `/functions`
//! (read before its query editor offers functions), and its health check
//! (`constantLine(100)` over the last hour, 300 points). Fields are read the way
//! Grafana reads them (grafana/grafana public/app/plugins/datasource/graphite).

mod common;

use common::{now, points_of, scratch, Sumi};

/// Ten-second points for two hosts, 20 each.
fn feed(sumi: &Sumi) -> i64 {
    let t = now() - now() % 10 - 300;
    let mut text = String::new();
    for i in 0..20 {
        let ts = t + i * 10;
        text.push_str(&format!("servers.web01.cpu.user {} {ts}\n", i as f64 * 1.5));
        text.push_str(&format!("servers.web02.cpu.user {} {ts}\n", 100 - i));
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(40);
    t
}

/// Grafana's `refId`: the text after the last space of the series name.
fn ref_id(name: &str) -> &str {
    name.rsplit(' ').next().unwrap_or("")
}

#[test]
fn render_post_as_grafana_sends_it() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let t = feed(&sumi);
    let (from, until) = ((t - 1).to_string(), (t + 190).to_string());
    let (status, body) = sumi.post_form(
        "/render",
        &[
            (
                "target",
                r#"aliasSub(servers.*.cpu.user, "(^.*$)", "\1 A")"#,
            ),
            (
                "target",
                r#"aliasSub(movingAverage(servers.web01.cpu.user,3), "(^.*$)", "\1 B")"#,
            ),
            ("from", &from),
            ("until", &until),
            ("format", "json"),
            ("maxDataPoints", "1000"),
            ("cacheTimeout", "60"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let series = json.as_array().unwrap();
    let names: Vec<&str> = series
        .iter()
        .map(|s| s["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "servers.web01.cpu.user A",
            "servers.web02.cpu.user A",
            "movingAverage(servers.web01.cpu.user,3) B"
        ]
    );
    assert_eq!(
        names.iter().map(|n| ref_id(n)).collect::<Vec<_>>(),
        ["A", "A", "B"]
    );
    // the tags Grafana shows: unchanged by the alias
    assert_eq!(series[0]["tags"]["name"], "servers.web01.cpu.user");
    assert_eq!(series[2]["tags"]["movingAverage"], "3");
    let web01 = points_of(&json, 0);
    assert_eq!(web01.len(), 20, "{json}");
    assert_eq!(web01[19], (28.5, t + 190));
    // movingAverage over three points: (i-2 + i-1 + i) * 1.5 / 3
    let ma = points_of(&json, 2);
    assert_eq!(
        ma.last(),
        Some(&((17.0 + 18.0 + 19.0) * 1.5 / 3.0, t + 190))
    );

    // a narrow panel: maxDataPoints consolidates (graphite-web's nudged buckets)
    let (status, body) = sumi.post_form(
        "/render",
        &[
            (
                "target",
                r#"aliasSub(servers.web02.cpu.user, "(^.*$)", "\1 C")"#,
            ),
            ("from", &from),
            ("until", &until),
            ("format", "json"),
            ("maxDataPoints", "5"),
            ("cacheTimeout", "0"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let points = json[0]["datapoints"].as_array().unwrap();
    assert!(points.len() <= 6 && points.len() >= 4, "{json}");
    assert_eq!(ref_id(json[0]["target"].as_str().unwrap()), "C");
}

#[test]
fn metric_tree_as_grafana_browses_it() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    feed(&sumi);
    let (status, body) = sumi.post_form(
        "/metrics/find?from=-6h&until=now",
        &[("query", "servers.*")],
    );
    assert_eq!(status, 200, "{body}");
    let nodes: serde_json::Value = serde_json::from_str(&body).unwrap();
    let read: Vec<(&str, i64)> = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["text"].as_str().unwrap(),
                n["expandable"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(read, [("web01", 1), ("web02", 1)]);
    let (status, body) = sumi.post_form(
        "/metrics/find?from=-6h&until=now",
        &[("query", "servers.web01.cpu.*")],
    );
    assert_eq!(status, 200, "{body}");
    let leaves: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(leaves[0]["text"], "user");
    assert_eq!(leaves[0]["expandable"], 0);
    assert_eq!(leaves[0]["id"], "servers.web01.cpu.user");
}

#[test]
fn version_and_function_definitions() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let (status, version) = sumi.get("/version");
    assert_eq!(status, 200);
    assert_eq!(version, "1.1.10\n");
    // Grafana: semver of the text before any '-', and /functions only from 1.1 on
    let numbers: Vec<u64> = version
        .trim()
        .split('-')
        .next()
        .unwrap()
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        numbers.len() == 3 && (numbers[0], numbers[1]) >= (1, 1),
        "{version}"
    );

    let (status, body) = sumi.get("/functions");
    assert_eq!(status, 200);
    // graphite-web writes an infinite default as 1e9999, which JavaScript reads as
    // Infinity; serde_json refuses it, so read it as Grafana's own patch would
    let body = body.replace("1e9999", "1e308");
    let functions: serde_json::Value = serde_json::from_str(&body).expect("valid JSON");
    let functions = functions.as_object().unwrap();
    assert!(functions.len() >= 80, "{} functions", functions.len());
    for (name, def) in functions {
        // what Grafana's gfunc.ts reads from each definition
        assert_eq!(def["name"], name.as_str());
        assert!(
            def["group"].is_string() && def["description"].is_string(),
            "{name}"
        );
        for p in def["params"].as_array().unwrap() {
            assert!(
                p["name"].is_string() && p["type"].is_string(),
                "{name}: {p}"
            );
            if let Some(options) = p.get("options") {
                assert!(
                    options.as_array().unwrap().iter().all(|o| o.is_string()),
                    "{name}"
                );
            }
        }
    }
    let ma = &functions["movingAverage"];
    assert_eq!(ma["group"], "Calculate");
    assert_eq!(ma["params"][1]["name"], "windowSize");
    assert_eq!(ma["params"][1]["type"], "intOrInterval");
    assert_eq!(ma["params"][1]["required"], true);
    assert_eq!(ma["params"][1]["suggestions"][3], "1min");
    assert!(functions.contains_key("aliasByNode") && functions.contains_key("highestMax"));

    let details = sumi.get_json("/functions/aliasSub");
    assert_eq!(details["function"], "aliasSub(seriesList, search, replace)");
    let (status, grouped) = sumi.get("/functions?grouped=true");
    assert_eq!(status, 200);
    let grouped: serde_json::Value =
        serde_json::from_str(&grouped.replace("1e9999", "1e308")).unwrap();
    assert!(grouped["Alias"]["alias"].is_object(), "{grouped}");
    let (status, body) = sumi.get("/functions/noSuchFunction");
    assert_eq!(status, 404);
    assert_eq!(body, r#"{"error": "Function not found: noSuchFunction"}"#);
    let (status, _) = sumi.post_form("/functions", &[("x", "1")]);
    assert_eq!(status, 405);
}

#[test]
fn health_check_on_an_empty_server() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let json = sumi.get_json(
        "/render?target=constantLine(100)&from=-1h&until=now&format=json&maxDataPoints=300",
    );
    let series = json.as_array().unwrap();
    assert_eq!(series.len(), 1, "{json}");
    assert_eq!(series[0]["target"], "100.0");
    let points = points_of(&json, 0);
    assert_eq!(points.len(), 3, "{json}");
    assert!(points.iter().all(|p| p.0 == 100.0));
    assert_eq!(points[2].1 - points[0].1, 3600, "{json}");
}
