//! `sumi import whisper` against graphite-web 1.1.10 reading the same whisper files.
//!
//! `import_whisper_gen.py` (run with the python of the graphite-diff venv, built by
//! `tests/graphite-diff/setup.sh`) writes whisper files with whisper 1.1.10 (several
//! schemas, every aggregation method, gaps, history older than the finest archive,
//! tagged series in both of carbon's layouts, one damaged file), asks graphite-web
//! `/render` questions with `now=T0` over ranges in the finest archive and ranges only
//! coarser archives cover, and prints its answers. Then:
//!
//! - `sumi import whisper` into an empty data directory, then `sumi serve` on it: the
//!   same JSON for every question; the damaged file skipped with its path and offset
//!   (exit status 1); a rerun skips what the state file lists and writes nothing.
//! - `sumi import whisper --url` into a running, empty server: the same answers.
//! - into a server holding live points for some of the series: every live point kept,
//!   the gaps filled from whisper.
//!
//! Never skipped: a machine without python3, its venv module or libcairo2 fails here.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{scratch, Sumi};
use serde_json::Value;

fn setup_venv() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/graphite-diff/setup.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("run tests/graphite-diff/setup.sh (is bash installed?)");
    assert!(
        out.status.success(),
        "setup.sh failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().unwrap_or_default().trim())
}

struct Reference {
    t0: i64,
    whisper_dir: PathBuf,
    tagged_names: PathBuf,
    damaged: PathBuf,
    queries: Vec<(String, Value)>,
}

fn reference(work: &Path) -> Reference {
    let venv = setup_venv();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_whisper_gen.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(&script)
        .arg(work)
        .output()
        .expect("run import_whisper_gen.py");
    assert!(
        out.status.success(),
        "import_whisper_gen.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the generator prints JSON");
    let s = |k: &str| PathBuf::from(v[k].as_str().expect("a path"));
    Reference {
        t0: v["t0"].as_i64().expect("t0"),
        whisper_dir: s("whisper_dir"),
        tagged_names: s("tagged_names"),
        damaged: s("damaged"),
        queries: v["queries"]
            .as_array()
            .expect("queries")
            .iter()
            .map(|q| (q["path"].as_str().unwrap().to_string(), q["answer"].clone()))
            .collect(),
    }
}

fn import(args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .arg("import")
        .args(args)
        .output()
        .expect("run sumi import");
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// The number on the summary line starting with `label` (the first number after it).
fn summary_number(text: &str, label: &str, nth: usize) -> u64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"));
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .nth(nth)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number {nth} in {line:?}"))
}

/// Where two render answers first differ, for the failure message.
fn first_difference(want: &Value, got: &Value) -> String {
    let (Some(w), Some(g)) = (want.as_array(), got.as_array()) else {
        return format!("  graphite-web: {want:.300}\n  sumi:         {got:.300}");
    };
    if w.len() != g.len() {
        return format!(
            "  {} series from graphite-web, {} from sumi",
            w.len(),
            g.len()
        );
    }
    for (ws, gs) in w.iter().zip(g) {
        if ws["target"] != gs["target"] || ws["tags"] != gs["tags"] {
            return format!("  series {} / {}", ws["target"], gs["target"]);
        }
        let (wp, gp) = (&ws["datapoints"], &gs["datapoints"]);
        let (Some(wp), Some(gp)) = (wp.as_array(), gp.as_array()) else {
            continue;
        };
        if wp.len() != gp.len() {
            return format!(
                "  {} points from graphite-web, {} from sumi",
                wp.len(),
                gp.len()
            );
        }
        if let Some((a, b)) = wp.iter().zip(gp).find(|(a, b)| a != b) {
            return format!("  graphite-web {a}, sumi {b}");
        }
    }
    "  (elsewhere)".to_string()
}

fn compare_all(sumi: &Sumi, r: &Reference, what: &str) {
    let mut bad = Vec::new();
    for (path, want) in &r.queries {
        let (status, body) = sumi.get(path);
        let got: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{what}: {path} answered {status} {body:?}: {e}"));
        if got != *want {
            bad.push(format!("{path}\n{}", first_difference(want, &got)));
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} of {} answers differ from graphite-web's:\n{}",
        bad.len(),
        r.queries.len(),
        bad.join("\n")
    );
}

#[test]
fn import_answers_like_graphite_web() {
    let dir = scratch();
    let r = reference(dir.path());
    assert!(
        r.queries.len() > 50,
        "the generator asked {} questions",
        r.queries.len()
    );
    assert!(
        r.queries
            .iter()
            .filter(|(_, a)| a.as_array().is_some_and(|a| !a.is_empty()))
            .count()
            > 50
    );
    let wdir = r.whisper_dir.to_str().unwrap();
    let names = r.tagged_names.to_str().unwrap();

    // offline, into an empty data directory
    let data = dir.path().join("offline");
    let state = dir.path().join("offline.state");
    let args = [
        "whisper",
        wdir,
        "--data-dir",
        data.to_str().unwrap(),
        "--tagged-names",
        names,
        "--state",
        state.to_str().unwrap(),
        "--threads",
        "2",
    ];
    let (out, text) = import(&args);
    assert_eq!(out.status.code(), Some(1), "a file was skipped:\n{text}");
    let damaged = r.damaged.to_str().unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("skipped") && l.contains(damaged) && l.contains("at byte")),
        "the damaged file is reported with its path and offset:\n{text}"
    );
    let files = summary_number(&text, "files:", 0);
    assert_eq!(summary_number(&text, "files:", 1), files - 1, "{text}");
    assert_eq!(summary_number(&text, "series:", 0), files - 1, "{text}");
    let points = summary_number(&text, "points:", 0);
    assert!(points > 10_000, "{text}");
    assert_eq!(summary_number(&text, "points:", 1), points, "{text}");

    // a rerun skips the finished files and tries the damaged one again
    let (out, text) = import(&args);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(summary_number(&text, "files:", 2), files - 1, "{text}");
    assert_eq!(summary_number(&text, "points:", 1), 0, "{text}");

    // a second importer while a server holds the directory: a clear error
    let mut sumi = Sumi::start(&data, &["--no-selfmon"]);
    let other = dir.path().join("other.state");
    let (out, text) = import(&[
        "whisper",
        wdir,
        "--data-dir",
        data.to_str().unwrap(),
        "--state",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("another sumi"), "{text}");
    compare_all(&sumi, &r, "offline import");
    sumi.stop();

    // into a running server
    let online = dir.path().join("online");
    let mut sumi = Sumi::start(&online, &["--no-selfmon"]);
    let url = format!("http://{}", sumi.http);
    let state = dir.path().join("online.state");
    let (out, text) = import(&[
        "whisper",
        wdir,
        "--url",
        &url,
        "--tagged-names",
        names,
        "--state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // every point read is written; the oldest slots may have aged out of their archive's
    // retention since the offline import (whisper drops them when reading): a few slots
    // of each file, well under 5 % of the points
    let read = summary_number(&text, "points:", 0);
    assert_eq!(summary_number(&text, "points:", 1), read, "{text}");
    assert!(
        read <= points && read * 20 >= points * 19,
        "read {read} points over HTTP, {points} offline:\n{text}"
    );
    compare_all(&sumi, &r, "import over HTTP");
    sumi.stop();

    // live data first: the import fills the gaps and keeps every live point
    // (with carbon's rules for it, as the whisper file was made, so that the series the
    // live points create has the file's archives)
    let merged = dir.path().join("merged");
    let schemas = dir.path().join("storage-schemas.conf");
    let aggregation = dir.path().join("storage-aggregation.conf");
    std::fs::write(
        &schemas,
        "[imp]\npattern = ^imp\\.s1\\.\nretentions = 10s:1h,1m:1d,10m:7d\n",
    )
    .unwrap();
    std::fs::write(
        &aggregation,
        "[imp]\npattern = ^imp\\.s1\\.average$\nxFilesFactor = 0\naggregationMethod = average\n",
    )
    .unwrap();
    let mut sumi = Sumi::start(
        &merged,
        &[
            "--no-selfmon",
            "--storage-schemas",
            schemas.to_str().unwrap(),
            "--storage-aggregation",
            aggregation.to_str().unwrap(),
        ],
    );
    let name = "imp.s1.average";
    let fine = r
        .queries
        .iter()
        .find(|(p, _)| p.contains(&format!("target={name}&")))
        .expect("a fine-archive question");
    let mut want: Vec<(Option<f64>, i64)> = fine.1[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64(), p[1].as_i64().unwrap()))
        .collect();
    // live points on every third slot of the last 40 minutes, whisper's or not
    let mut lines = String::new();
    let mut live = 0;
    for (i, p) in want.iter_mut().enumerate() {
        if i % 3 == 0 && p.1 > r.t0 - 2400 {
            let v = 100_000.0 + i as f64;
            lines.push_str(&format!("{name} {v} {}\n", p.1));
            p.0 = Some(v);
            live += 1;
        }
    }
    sumi.send_tcp(lines.as_bytes());
    sumi.wait_stored(live);
    let state = dir.path().join("merged.state");
    let (out, text) = import(&[
        "whisper",
        wdir,
        "--url",
        &format!("http://{}", sumi.http),
        "--tagged-names",
        names,
        "--state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(summary_number(&text, "points:", 2) > 0, "{text}");
    let got = sumi.get_json(&fine.0);
    let got: Vec<(Option<f64>, i64)> = got[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64(), p[1].as_i64().unwrap()))
        .collect();
    assert_eq!(got, want, "live points kept, whisper's in the gaps");
    // history older than the live points: whisper's, exactly
    for (path, answer) in &r.queries {
        if path.contains(&format!("target={name}&")) && path.contains("until=") {
            let until: i64 = path
                .split("until=")
                .nth(1)
                .and_then(|s| s.split('&').next())
                .and_then(|s| s.parse().ok())
                .unwrap();
            if until < r.t0 - 3600 {
                assert_eq!(sumi.get_json(path), *answer, "{path}");
            }
        }
    }
    sumi.stop();
}
