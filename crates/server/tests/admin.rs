//! Deleting and renaming series through the HTTP API, on the real binary: find and
//! render before and after, across a restart, the space coming back through
//! compaction, and GrowthForecast's graph delete taking the graph's data with it.

mod common;

use std::time::{Duration, Instant};

use common::{now, points_of, scratch, Sumi};

const CONFIG: &str = "[selfmon]\nenabled = false\n\
    [storage]\nflush_interval = \"200ms\"\nmaintenance_interval = \"200ms\"\n";

fn start(dir: &std::path::Path) -> Sumi {
    let config = dir.join("sumi.toml");
    std::fs::write(&config, CONFIG).unwrap();
    Sumi::start(&dir.join("data"), &["--config", config.to_str().unwrap()])
}

/// The paths `/metrics/find` returns for `query`, leaves as `path`, branches as `path/`.
fn find(sumi: &Sumi, query: &str) -> Vec<String> {
    let v = sumi.get_json(&format!("/metrics/find?format=completer&query={query}"));
    let mut out: Vec<String> = v["metrics"]
        .as_array()
        .unwrap_or_else(|| panic!("find {query}: {v}"))
        .iter()
        .map(|m| {
            let p = m["path"]
                .as_str()
                .unwrap()
                .trim_end_matches('.')
                .to_string();
            if m["is_leaf"].as_str() == Some("1") {
                p
            } else {
                format!("{p}/")
            }
        })
        .collect();
    out.sort();
    out
}

/// The values of `target` over the last 10 minutes (empty when it is unknown).
fn values(sumi: &Sumi, target: &str) -> Vec<f64> {
    let v = sumi.get_json(&format!("/render?target={target}&from=-10min&format=json"));
    if v.as_array().is_none_or(|a| a.is_empty()) {
        return Vec::new();
    }
    points_of(&v, 0).into_iter().map(|p| p.0).collect()
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn part_points(sumi: &Sumi) -> f64 {
    let (_, body) = sumi.get("/metrics");
    body.lines()
        .filter(|l| l.starts_with("sumi_part_points{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

fn wait_for(what: &str, sumi: &Sumi, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{}",
            sumi.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn delete_and_rename_through_the_api_survive_a_restart() {
    let dir = scratch();
    let mut sumi = start(dir.path());
    let ts = now() - 60;
    sumi.send_tcp(
        format!("a.b.c 1 {ts}\na.b.d 2 {ts}\na.e 3 {ts}\nx.y 4 {ts}\nx.z.w 5 {ts}\nq.r 6 {ts}\n")
            .as_bytes(),
    );
    sumi.wait_stored(6);
    assert_eq!(find(&sumi, "a.*"), ["a.b/", "a.e"]);
    assert_eq!(values(&sumi, "a.b.c"), [1.0]);

    // a dry run lists and changes nothing
    let (st, body) = sumi.post_form(
        "/api/v1/series/delete",
        &[("target", "a.b.*"), ("target", "q.r"), ("dryRun", "1")],
    );
    assert_eq!(st, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["matched"], 3);
    assert_eq!(v["deleted"], 0);
    assert_eq!(v["series"], serde_json::json!(["a.b.c", "a.b.d", "q.r"]));
    assert_eq!(find(&sumi, "a.b.*"), ["a.b.c", "a.b.d"]);

    let (st, body) = sumi.post_form(
        "/api/v1/series/delete",
        &[("target", "a.b.*"), ("target", "q.r")],
    );
    assert_eq!(st, 200, "{body}");
    assert_eq!(json(&body)["deleted"], 3);
    assert_eq!(
        find(&sumi, "a.*"),
        ["a.e"],
        "the emptied branch a.b is gone"
    );
    assert!(find(&sumi, "q").is_empty());
    assert!(values(&sumi, "a.b.c").is_empty());
    assert!(values(&sumi, "a.b.*").is_empty());
    assert_eq!(values(&sumi, "a.e"), [3.0]);

    // a missing target is a 400, a GET is not a delete
    let (st, _) = sumi.post_form("/api/v1/series/delete", &[]);
    assert_eq!(st, 400);
    let (st, _) = sumi.get("/api/v1/series/delete?target=a.e");
    assert_eq!(st, 405);
    assert_eq!(values(&sumi, "a.e"), [3.0]);

    // rename a subtree: the data moves with it
    let (st, body) = sumi.post_form("/api/v1/series/rename", &[("from", "x"), ("to", "moved.x")]);
    assert_eq!(st, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["renamed"], 2);
    assert_eq!(
        v["series"][1],
        serde_json::json!({"from": "x.z.w", "to": "moved.x.z.w"})
    );
    assert_eq!(values(&sumi, "moved.x.y"), [4.0]);
    assert_eq!(values(&sumi, "moved.x.z.w"), [5.0]);
    assert!(values(&sumi, "x.y").is_empty());
    assert!(find(&sumi, "x").is_empty());
    // onto an existing series: refused, nothing moves
    let (st, body) = sumi.post_form(
        "/api/v1/series/rename",
        &[("from", "a.e"), ("to", "moved.x.y")],
    );
    assert_eq!(st, 409, "{body}");
    assert!(body.contains("already exists"), "{body}");
    assert_eq!(values(&sumi, "a.e"), [3.0]);
    let (st, _) = sumi.post_form("/api/v1/series/rename", &[("from", "nope"), ("to", "n")]);
    assert_eq!(st, 404);

    // points for a deleted name after the delete start a fresh series
    let ts2 = now() - 30;
    sumi.send_tcp(format!("a.b.c 7 {ts2}\n").as_bytes());
    sumi.wait_stored(7);
    assert_eq!(values(&sumi, "a.b.c"), [7.0]);

    // SIGKILL: the WAL still holds the deleted series' points; replay must skip them
    sumi.kill9();
    let sumi = start(dir.path());
    assert_eq!(values(&sumi, "a.b.c"), [7.0]);
    assert!(values(&sumi, "a.b.d").is_empty());
    assert!(values(&sumi, "q.r").is_empty());
    assert_eq!(values(&sumi, "moved.x.y"), [4.0]);
    assert!(values(&sumi, "x.y").is_empty());
    assert_eq!(find(&sumi, "*"), ["a/", "moved/"]);
}

#[test]
fn deleted_data_leaves_the_parts() {
    let dir = scratch();
    let sumi = start(dir.path());
    let ts = now() - 60;
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&format!("big.h{i}.cpu {i} {ts}\n"));
    }
    text.push_str(&format!("keep.me 1 {ts}\n"));
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(401);
    wait_for("the points to reach parts", &sumi, || {
        part_points(&sumi) >= 401.0
    });
    let (st, body) = sumi.post_form("/api/v1/series/delete", &[("target", "big.**")]);
    assert_eq!(st, 200, "{body}");
    assert_eq!(json(&body)["deleted"], 400);
    wait_for("compaction to drop the deleted rows", &sumi, || {
        part_points(&sumi) < 10.0
    });
    assert_eq!(values(&sumi, "keep.me"), [1.0]);
    assert_eq!(sumi.metric("sumi_series_active"), 1.0);
}

#[test]
fn growthforecast_graph_delete_removes_its_data() {
    let dir = scratch();
    let sumi = start(dir.path());
    let (st, body) = sumi.post_form("/api/svc/sec/g1", &[("number", "5")]);
    assert_eq!(st, 200, "{body}");
    let (st, body) = sumi.post_form("/api/svc/sec/g2", &[("number", "8")]);
    assert_eq!(st, 200, "{body}");
    sumi.wait_stored(2);
    assert_eq!(values(&sumi, "svc.sec.g1"), [5.0]);

    let (st, body) = sumi.post_form("/delete/svc/sec/g1", &[]);
    assert_eq!(st, 200, "{body}");
    assert!(values(&sumi, "svc.sec.g1").is_empty());
    assert_eq!(find(&sumi, "svc.sec.*"), ["svc.sec.g2"]);

    // created again, the graph starts empty
    let (st, body) = sumi.post_form("/api/svc/sec/g1", &[("number", "9")]);
    assert_eq!(st, 200, "{body}");
    assert_eq!(values(&sumi, "svc.sec.g1"), [9.0]);

    // a whole section
    let (st, body) = sumi.post_form("/delete/svc/sec", &[]);
    assert_eq!(st, 200, "{body}");
    assert!(find(&sumi, "svc.*").is_empty());
}

#[test]
fn deleted_tagged_series_leave_the_tag_index() {
    let dir = scratch();
    let sumi = start(dir.path());
    let ts = now() - 60;
    sumi.send_tcp(format!("cpu;host=a 1 {ts}\ncpu;host=b 2 {ts}\n").as_bytes());
    sumi.wait_stored(2);
    let by_tag = |sumi: &Sumi| -> usize {
        let v =
            sumi.get_json("/render?target=seriesByTag(%27name%3Dcpu%27)&from=-10min&format=json");
        v.as_array().map_or(0, Vec::len)
    };
    assert_eq!(by_tag(&sumi), 2);
    let (st, body) = sumi.post_form("/api/v1/series/delete", &[("target", "cpu;host=a")]);
    assert_eq!(st, 200, "{body}");
    assert_eq!(json(&body)["deleted"], 1);
    assert_eq!(by_tag(&sumi), 1);
    // renaming a tagged series moves it in the tag index too
    let (st, body) = sumi.post_form(
        "/api/v1/series/rename",
        &[("from", "cpu;host=b"), ("to", "cpu;host=c")],
    );
    assert_eq!(st, 200, "{body}");
    let v = sumi.get_json("/render?target=seriesByTag(%27host%3Dc%27)&from=-10min&format=json");
    assert_eq!(v[0]["target"], "cpu;host=c", "{v}");
    assert_eq!(points_of(&v, 0)[0].0, 2.0);
}
