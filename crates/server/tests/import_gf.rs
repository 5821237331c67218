//! `sumi import growthforecast` against GrowthForecast's own files.
//!
//! `import_gf_gen.py` leaves a directory as a GrowthForecast server leaves its
//! --data-dir: `gforecast.db` with GrowthForecast's schema and rows (services,
//! sections, graphs of the modes gauge, count, modified and derive with colours,
//! descriptions, sort, limits and `meta`; a complex graph; vertical rules), and each
//! graph's `<md5>.rrd` and `<md5>_s.rrd` written by Debian's rrdtool with the data
//! sources and RRAs GrowthForecast creates, by a simulated worker; plus a row with
//! broken `meta` and a cut RRD file. It prints `rrdtool fetch` of each file.
//!
//! sumi imports the directory into a data directory and then into a running server,
//! and serves the graphs at GrowthForecast's URLs: their settings through
//! GrowthForecast's JSON API, their values through `/xport` for the ranges `sd`
//! (1-minute file), `w`, `m` and `y` (the 30-minute, 2-hour and 1-day archives), the
//! same values rrdtool fetches (after the graph's limits and adjust), and `d` the
//! 5-minute averages of the 1-minute samples; and the subtract view of a count graph
//! over `w`, `m` and `y` against rrdtool's fetch of the `sub` data source.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use common::{scratch, Sumi};
use serde_json::Value;

const UU: &str = "/json/graph/web/access/uu";
const JP: &str = "%E3%83%A6%E3%83%BC%E3%82%B6%E3%83%BC/load%20avg/50%25";

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `(t, value)` of fetched rows (time, IEEE bits in hex or null).
fn rows(v: &Value) -> Vec<(i64, Option<f64>)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_i64().unwrap(),
                r[1].as_str()
                    .map(|h| f64::from_bits(u64::from_str_radix(h, 16).unwrap())),
            )
        })
        .collect()
}

/// `(t, value)` of an `/xport` answer's one column.
fn xport(sumi: &Sumi, path: &str) -> HashMap<i64, Option<f64>> {
    let x = sumi.get_json(path);
    let start = x["start_timestamp"].as_i64().unwrap();
    let step = x["step"].as_i64().unwrap();
    x["rows"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, r)| (start + i as i64 * step, r[0].as_f64()))
        .collect()
}

/// Equal to rounding: `tol` relative (a counter of 1e10 rebuilt from rates keeps
/// them to about 1e-8 of a rate of 100 per second).
fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// Checks the `/xport` of `t` against `want` (time → value): at every time both
/// have, the same value; and most of `want`'s known rows are compared.
fn check_view(sumi: &Sumi, g: &Value, t: &str, want: &[(i64, Option<f64>)]) {
    let path = format!("/xport/{}?t={t}&width=4000", graph_path(g));
    let got = xport(sumi, &path);
    // a rate has no value at the first point of the range (none before it to differ
    // from), so the first row or two of a rate graph hold less than a whole step
    let first = got.keys().min().copied().unwrap_or_default();
    let step = got
        .keys()
        .filter(|&&t| t > first)
        .min()
        .map_or(0, |t| t - first);
    let (mut compared, mut known) = (0, 0);
    for &(ts, w) in want {
        let Some(w) = w else { continue };
        known += 1;
        let Some(&gv) = got.get(&ts) else { continue };
        // the first row may also cover less than its whole step (the range starts
        // inside it, seconds after the fetch's did)
        if ts == first || (g["derive"] == true && ts <= first + step) {
            continue;
        }
        let gv = gv.unwrap_or_else(|| panic!("{path} at {ts}: null, rrdtool {w}"));
        let tol = if g["derive"] == true { 1e-6 } else { 1e-12 };
        assert!(close(gv, w, tol), "{path} at {ts}: sumi {gv}, rrdtool {w}");
        compared += 1;
    }
    // the windows differ by the seconds between the fetch and the request
    assert!(
        known > 50 && compared + 3 >= known,
        "{path}: {compared} of {known} rows compared"
    );
}

fn graph_path(g: &Value) -> String {
    if g["service"] == "ユーザー" {
        return JP.to_string();
    }
    format!(
        "{}/{}/{}",
        g["service"].as_str().unwrap(),
        g["section"].as_str().unwrap(),
        g["graph"].as_str().unwrap()
    )
}

/// The graph's limits and adjust, as rrdgraph's CDEF applies them.
fn shown(g: &Value, v: Option<f64>) -> Option<f64> {
    let v = v?;
    if g["id"] == 3 {
        return (0.0..=900.0).contains(&v).then_some(v / 1000.0);
    }
    Some(v)
}

/// Checks the subtract view of `t` (read from the archive of `r` seconds, GrowthForecast's
/// RRA of the same step) against rrdtool's fetch of `sub` from that RRA, for a `count`
/// graph.
///
/// GrowthForecast's row at T is the mean of the 5-minute differences of its samples E
/// in (T-r, T]: `(E(T) - E(T-r)) / n` with `n = r / 300`. sumi has only the mean of the
/// samples, `num(T)` (the imported `num` row), so its row is
/// `(num(T) - num(T-r)) / n`. The number of a count graph never falls, so
/// `E(T-r) <= num(T) <= E(T)`, which bounds each row, `0 <= sumi <= gf(T) + gf(T-r)`,
/// and a run of rows T1..T2, whose sums telescope:
/// `-gf(T1-r) <= sum(gf) - sum(sumi) <= gf(T2)`. A view that summed the changes in each
/// 5 minutes would show a whole row's change, n times these.
fn check_subtract(sumi: &Sumi, g: &Value, t: &str, r: i64, gf: &[(i64, Option<f64>)]) {
    let path = format!("/xport/{}?t={t}&width=4000&gmode=subtract", graph_path(g));
    let got = xport(sumi, &path);
    let gf: HashMap<i64, f64> = gf.iter().filter_map(|&(t, v)| v.map(|v| (t, v))).collect();
    let gf_max = gf.values().copied().fold(0.0, f64::max);
    let mut times: Vec<i64> = got.keys().copied().collect();
    times.sort_unstable();
    let (mut sum_gf, mut sum_sumi, mut run) = (0.0, 0.0, Vec::new());
    for ts in times {
        let (Some(&Some(v)), Some(&want)) = (got.get(&ts), gf.get(&ts)) else {
            continue;
        };
        let before = gf.get(&(ts - r)).copied().unwrap_or(gf_max);
        assert!(
            v >= -1e-9 && v <= want + before + 1e-9,
            "{path} at {ts}: sumi {v}, rrdtool {want} (and {before} before)"
        );
        if let Some(&last) = run.last() {
            assert_eq!(ts, last + r, "{path}: rows compared are not contiguous");
        }
        run.push(ts);
        sum_gf += want;
        sum_sumi += v;
    }
    assert!(run.len() > 300, "{path}: {} rows compared", run.len());
    let first_before = gf.get(&(run[0] - r)).copied().unwrap_or(gf_max);
    let last = gf[run.last().unwrap()];
    let d = sum_gf - sum_sumi;
    assert!(
        -first_before - 1e-6 <= d && d <= last + 1e-6,
        "{path}: rrdtool's rows add up to {sum_gf}, sumi's to {sum_sumi}"
    );
}

fn check_values(sumi: &Sumi, gen: &Value) {
    for g in gen["graphs"].as_array().unwrap() {
        let f = &g["fetch"];
        if g["mode"] == "count" {
            for (t, r) in [("w", 1800), ("m", 7200), ("y", 86400)] {
                check_subtract(sumi, g, t, r, &rows(&f[format!("sub{r}")]));
            }
        }
        let minute = rows(&f["60"]);
        let apply = |r: Vec<(i64, Option<f64>)>| -> Vec<(i64, Option<f64>)> {
            r.into_iter().map(|(t, v)| (t, shown(g, v))).collect()
        };
        check_view(sumi, g, "sd", &apply(minute.clone()));
        for (t, step) in [("w", "1800"), ("m", "7200"), ("y", "86400")] {
            check_view(sumi, g, t, &apply(rows(&f[step])));
        }
        // the day view: each 5 minutes [T, T+300) the mean of its minute samples
        let by_t: HashMap<i64, Option<f64>> = minute.iter().copied().collect();
        let mut fives = Vec::new();
        for &(t, _) in &minute {
            if t % 300 != 0 {
                continue;
            }
            let vals: Option<Vec<f64>> = (0..5)
                .map(|k| by_t.get(&(t + 60 * k)).copied().flatten())
                .collect();
            if let Some(v) = vals {
                fives.push((t, shown(g, Some(v.iter().sum::<f64>() / 5.0))));
            }
        }
        check_view(sumi, g, "d", &fives);
    }
}

fn check_settings(sumi: &Sumi, same_ids: bool) {
    let list = sumi.get_json("/json/list/graph");
    assert_eq!(list.as_array().unwrap().len(), 8, "{list}");
    let uu = sumi.get_json(UU);
    for (k, want) in [
        ("color", "#3366cc"),
        ("description", "unique users (\"UU\"), it's daily"),
        ("gmode", "both"),
        ("type", "LINE1"),
        ("stype", "LINE2"),
        ("mode", "gauge"),
        ("service_name", "web"),
    ] {
        assert_eq!(uu[k], want, "{k} of {uu}");
    }
    assert_eq!(uu["sort"], 12, "{uu}");
    let p99 = sumi.get_json("/json/graph/web/latency/p99");
    assert_eq!(
        (
            &p99["adjust"],
            &p99["adjustval"],
            &p99["unit"],
            &p99["ulimit"],
            &p99["color"]
        ),
        (
            &Value::from("/"),
            &Value::from("1000"),
            &Value::from("s"),
            &Value::from(900),
            &Value::from("#cc3399")
        ),
        "{p99}"
    );
    let bytes = sumi.get_json("/json/graph/batch/jobs/bytes");
    assert_eq!(bytes["mode"], "derive", "{bytes}");
    assert_eq!(bytes["description"], "bytes copied", "{bytes}");
    let jp = sumi.get_json(&format!("/json/graph/{JP}"));
    assert_eq!(
        (&jp["sort"], &jp["graph_name"]),
        (&Value::from(19), &Value::from("50%")),
        "{jp}"
    );
    let never = sumi.get_json("/json/graph/batch/jobs/never");
    assert_eq!(never["section_name"], "jobs");
    let (status, _) = sumi.get("/json/graph/web/access/bad");
    assert_eq!(status, 404, "the row with broken meta is skipped");

    let c = sumi.get_json("/json/complex/web/access/overview");
    assert_eq!(c["complex"], true);
    assert_eq!(c["sumup"], true, "{c}");
    assert_eq!(c["sort"], 15, "{c}");
    assert_eq!(c["description"], "pv, uu and load", "{c}");
    let data = c["data"].as_array().unwrap();
    let ids: Vec<i64> = data
        .iter()
        .map(|d| d["graph_id"].as_i64().unwrap())
        .collect();
    let names: Vec<String> = ids
        .iter()
        .map(|id| {
            sumi.get_json(&format!("/json/graph/{id}"))["graph_name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["pv", "uu", "50%"], "{c}");
    if same_ids {
        assert_eq!(
            ids,
            [1, 2, 6],
            "GrowthForecast's ids are kept in an empty data dir"
        );
        assert_eq!(uu["id"], 2);
    }
    let types: Vec<&str> = data.iter().map(|d| d["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["AREA", "LINE1", "AREA"]);
    let gmodes: Vec<&str> = data.iter().map(|d| d["gmode"].as_str().unwrap()).collect();
    assert_eq!(gmodes, ["gauge", "subtract", "gauge"]);
    assert_eq!(data[2]["stack"], true);
    assert_eq!(data[1]["stack"], false);
    // the section's page lists the imported graphs by sort
    let (status, page) = sumi.get("/list/web/access");
    assert_eq!(status, 200);
    let (a, b) = (page.find("overview").unwrap(), page.find("/uu").unwrap());
    assert!(a < b, "complex (sort 15) before uu (sort 12)");

    let v = sumi.get_json("/vrule/summary/web");
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .any(|r| r["description"] == "deploy"),
        "{v}"
    );
    let v = sumi.get_json("/vrule/summary/batch/jobs/bytes");
    let r = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["description"] == "restart")
        .unwrap();
    assert_eq!(
        (&r["dashes"], &r["color"]),
        (&Value::from("2,4"), &Value::from("#0000FF"))
    );
}

fn check_summary(out: &Output, graphs: &str, vrules: &str) {
    let t = text(out);
    assert_eq!(out.status.code(), Some(1), "skips make status 1: {t}");
    assert!(t.contains(graphs), "{t}");
    assert!(t.contains(vrules), "{t}");
    // graph 8's 5-minute file is cut; row 9's meta is not JSON
    assert!(
        t.contains("skipped") && t.contains("c9f0f895fb98ab9159f51fd0297e236d.rrd: RRD file"),
        "{t}"
    );
    assert!(t.contains("graphs row 9: meta is not JSON"), "{t}");
}

#[test]
fn growthforecast_import_serves_the_same_graphs_and_values() {
    let dir = scratch();
    let gf_dir = dir.path().join("gf");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_gf_gen.py");
    let dump = dir.path().join("growthforecast.sql");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(&gf_dir)
        .arg(&dump)
        .output()
        .expect("run import_gf_gen.py (apt-get install python3 python3-rrdtool rrdtool)");
    assert!(
        out.status.success(),
        "import_gf_gen.py failed:\n{}",
        text(&out)
    );
    let gen: Value = serde_json::from_slice(&out.stdout).expect("JSON from the generator");
    assert_eq!(gen["graphs"].as_array().unwrap().len(), 6);

    // into a data directory, no server running
    let data = dir.path().join("data");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sumi"))
            .args(["import", "growthforecast"])
            .arg(&gf_dir)
            .args(args)
            .output()
            .expect("run sumi import growthforecast")
    };
    let state = dir.path().join("state");
    let out = run(&[
        "--data-dir",
        data.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    check_summary(
        &out,
        "graphs: 8 (8 created, 0 updated)",
        "vertical rules: 2 (2 added",
    );
    let t = text(&out);
    assert!(t.contains("complex graphs: 1 (1 created"), "{t}");
    assert!(t.contains("series: 6 (6 created)"), "{t}");

    let mut sumi = Sumi::start(&data, &["--no-selfmon"]);
    check_settings(&sumi, true);
    check_values(&sumi, &gen);
    // a graph's history is its series, as for a graph made by posts
    let uu = sumi.get_json(UU);
    assert_eq!(uu["series"], "web.access.uu");
    sumi.stop();

    // again: the history is done (state file), the settings are applied again
    let out = run(&[
        "--data-dir",
        data.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    check_summary(
        &out,
        "graphs: 8 (0 created, 8 updated)",
        "vertical rules: 2 (0 added, 2 already there)",
    );
    assert!(
        text(&out).contains("7 done by an earlier run"),
        "{}",
        text(&out)
    );

    // GrowthForecast on MySQL: the same tables from a mysqldump, into another data dir
    let mysql = dir.path().join("mysql");
    let out = run(&[
        "--mysql-dump",
        dump.to_str().unwrap(),
        "--data-dir",
        mysql.to_str().unwrap(),
        "--state",
        dir.path().join("mysql.state").to_str().unwrap(),
    ]);
    check_summary(
        &out,
        "graphs: 8 (8 created, 0 updated)",
        "vertical rules: 2 (2 added",
    );
    assert!(
        text(&out).contains("growthforecast.sql: graphs row 9"),
        "{}",
        text(&out)
    );
    let mut sumi = Sumi::start(&mysql, &["--no-selfmon"]);
    check_settings(&sumi, true);
    check_values(&sumi, &gen);
    sumi.stop();
    // found by itself when the directory holds a dump and no gforecast.db
    let db = gf_dir.join("gforecast.db");
    std::fs::rename(&db, dir.path().join("gforecast.db.away")).unwrap();
    let _ = std::fs::remove_file(gf_dir.join("gforecast.db-wal"));
    let _ = std::fs::remove_file(gf_dir.join("gforecast.db-shm"));
    std::fs::copy(&dump, gf_dir.join("growthforecast.sql")).unwrap();
    let found = dir.path().join("found");
    let out = run(&[
        "--data-dir",
        found.to_str().unwrap(),
        "--state",
        dir.path().join("found.state").to_str().unwrap(),
    ]);
    check_summary(
        &out,
        "graphs: 8 (8 created, 0 updated)",
        "vertical rules: 2 (2 added",
    );
    assert!(
        text(&out).contains("reading the mysqldump"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(gf_dir.join("growthforecast.sql")).unwrap();
    std::fs::rename(dir.path().join("gforecast.db.away"), &db).unwrap();

    // into a running server that asks for a write token, which already has one of the
    // graphs from the weeks of posting to both
    let toml = dir.path().join("sumi.toml");
    let token = "gf-import-token-71c2";
    std::fs::write(&toml, format!("[auth]\nwrite_tokens = [\"{token}\"]\n")).unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let online = dir.path().join("online");
    let sumi = Sumi::start(
        &online,
        &["--no-selfmon", "--config", toml.to_str().unwrap()],
    );
    let url = format!("http://{}", sumi.http);
    let posted = ureq::post(&format!("{url}/api/batch/jobs/state"))
        .set("Authorization", &format!("Bearer {token}"))
        .send_form(&[("number", "2"), ("mode", "modified")])
        .expect("a post before the import");
    assert_eq!(posted.status(), 200);
    let out = run(&[
        "--url",
        &url,
        "--state",
        dir.path().join("online.state").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "no token: {}", text(&out));
    let out = run(&[
        "--url",
        &url,
        "--token-file",
        token_file.to_str().unwrap(),
        "--state",
        dir.path().join("online.state").to_str().unwrap(),
    ]);
    check_summary(
        &out,
        "graphs: 8 (7 created, 1 updated)",
        "vertical rules: 2 (2 added",
    );
    check_settings(&sumi, false);
    // every graph made by the import has the history of its files
    let mut by_id: Vec<Value> = gen["graphs"].as_array().unwrap().clone();
    by_id.retain(|g| g["id"] != 5);
    check_values(&sumi, &serde_json::json!({"graphs": by_id}));
    // the graph that existed keeps its series and its number, and gets the history too
    let state = sumi.get_json("/json/graph/batch/jobs/state");
    assert_eq!(
        (&state["sort"], &state["number"]),
        (&Value::from(3), &Value::from(2)),
        "{state}"
    );
    let w = xport(&sumi, "/xport/batch/jobs/state?t=m&width=4000");
    assert!(w.values().filter(|v| v.is_some()).count() > 400, "{w:?}");
}
