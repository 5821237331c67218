//! The graphite side of the whisper import tests (`import_whisper`,
//! `kafka_import_whisper`): `import_whisper_gen.py` writes whisper files with whisper
//! 1.1.10 and records graphite-web 1.1.10's answers over them; these run it and compare
//! sumi's answers with graphite-web's.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn setup_venv() -> PathBuf {
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

pub struct Reference {
    pub t0: i64,
    pub whisper_dir: PathBuf,
    pub tagged_names: PathBuf,
    pub damaged: PathBuf,
    pub queries: Vec<(String, Value)>,
}

pub fn reference(work: &Path) -> Reference {
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

pub fn import(args: &[&str]) -> (Output, String) {
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
pub fn summary_number(text: &str, label: &str, nth: usize) -> u64 {
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
pub fn first_difference(want: &Value, got: &Value) -> String {
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

/// Every question's answer from `get` (path → status and body) against graphite-web's;
/// the differences, one entry per question that differs.
pub fn differences(get: impl Fn(&str) -> (u16, String), r: &Reference, what: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for (path, want) in &r.queries {
        let (status, body) = get(path);
        let got: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{what}: {path} answered {status} {body:?}: {e}"));
        if got != *want {
            bad.push(format!("{path}\n{}", first_difference(want, &got)));
        }
    }
    bad
}

/// [`differences`], none allowed.
pub fn compare_all(get: impl Fn(&str) -> (u16, String), r: &Reference, what: &str) {
    let bad = differences(get, r, what);
    assert!(
        bad.is_empty(),
        "{what}: {} of {} answers differ from graphite-web's:\n{}",
        bad.len(),
        r.queries.len(),
        bad.join("\n")
    );
}
