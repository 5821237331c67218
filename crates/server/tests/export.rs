//! `sumi export`: export, feed the plaintext into an empty sumi, export again:
//! byte-identical; CSV and JSON carry the same points.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{now, scratch, Sumi};

fn export(s: &Sumi, args: &[&str]) -> String {
    export_with(&["--url", &format!("http://{}", s.http)], args)
}

fn export_with(source: &[&str], args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .arg("export")
        .args(source)
        .args(args)
        .output()
        .expect("run sumi export");
    assert!(
        out.status.success(),
        "sumi export {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 export")
}

/// (name, timestamp) → value bits of plaintext lines.
fn plaintext_points(text: &str) -> BTreeMap<(String, i64), u64> {
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 3, "plaintext line {l:?}");
            let v: f64 = f[1].parse().unwrap();
            ((f[0].to_string(), f[2].parse().unwrap()), v.to_bits())
        })
        .collect()
}

#[test]
fn export_import_export_is_identical() {
    let dir = scratch();
    let a = Sumi::start(&dir.path().join("a"), &[]);
    let t0 = (now() / 60) * 60 - 3600;
    let values = [0.1, 72.0, -3.25, 1.0 / 3.0, 1e300, 1.5e-7, 123456.789, 0.0];
    let names = [
        "exp.web01.cpu",
        "exp.web02.cpu",
        "exp.db.load",
        "other.x",
        "exp.tagged;dc=eu;host=web01",
    ];
    let mut sent = String::new();
    let mut count = 0u64;
    for (k, name) in names.iter().enumerate() {
        for (i, v) in values.iter().enumerate() {
            if (i + k) % 5 == 4 {
                continue; // gaps
            }
            sent.push_str(&format!("{name} {v:e} {}\n", t0 + 60 * i as i64));
            count += 1;
        }
    }
    a.send_tcp(sent.as_bytes());
    a.wait_stored(count);

    let from = (t0 - 60).to_string();
    let until = (t0 + 60 * values.len() as i64).to_string();
    let range = ["--from", from.as_str(), "--until", until.as_str()];
    let first = export(&a, &range);
    let points = plaintext_points(&first);
    assert_eq!(
        points.len() as u64,
        count,
        "every sent point, once:\n{first}"
    );
    for line in sent.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let v: f64 = f[1].parse().unwrap();
        assert_eq!(
            points.get(&(f[0].to_string(), f[2].parse().unwrap())),
            Some(&v.to_bits()),
            "{line} in the export:\n{first}"
        );
    }

    // into an empty sumi, over carbon plaintext, and out again
    let b = Sumi::start(&dir.path().join("b"), &[]);
    b.send_tcp(first.as_bytes());
    b.wait_stored(count);
    let second = export(&b, &range);
    assert_eq!(first, second, "export after import differs");

    // a glob
    let glob = export(&a, &[&range[..], &["--match", "exp.*.cpu"]].concat());
    let want: String = first
        .lines()
        .filter(|l| l.starts_with("exp.web0"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(glob, want);

    // CSV: name,timestamp,value, the same points
    let csv = export(&a, &[&range[..], &["--format", "csv"]].concat());
    let from_csv: BTreeMap<(String, i64), u64> = csv
        .lines()
        .map(|l| {
            let (rest, v) = l.rsplit_once(',').unwrap();
            let (name, ts) = rest.rsplit_once(',').unwrap();
            let v: f64 = v.parse().unwrap();
            ((name.to_string(), ts.parse().unwrap()), v.to_bits())
        })
        .collect();
    assert_eq!(from_csv, points);

    // JSON lines: one object a series, nulls in the gaps
    let json = export(&b, &[&range[..], &["--format", "json"]].concat());
    let mut from_json = BTreeMap::new();
    let mut nulls = 0;
    for l in json.lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
        let name = v["target"].as_str().unwrap().to_string();
        for p in v["datapoints"].as_array().unwrap() {
            let ts = p[1].as_i64().unwrap();
            if p[0].is_null() {
                nulls += 1;
                continue;
            }
            // serde_json's default float parser may be one ulp off; compare through
            // Rust's exact parser of the same text
            let x: f64 = p[0].to_string().parse().unwrap();
            from_json.insert((name.clone(), ts), x.to_bits());
        }
    }
    assert_eq!(json.lines().count(), names.len());
    assert!(nulls > 0, "gaps show as null:\n{json}");
    assert_eq!(from_json.len(), points.len());
    for (k, v) in &from_json {
        let want = f64::from_bits(points[k]);
        let got = f64::from_bits(*v);
        assert!(
            (got - want).abs() <= want.abs() * 1e-15,
            "{k:?}: {got} vs {want}"
        );
    }

    // offline, from the data directory of the stopped server: the same lines
    let mut a = a;
    a.stop();
    let dir_a = a.data_dir.to_str().unwrap().to_string();
    let offline = export_with(&["--data-dir", &dir_a], &range);
    assert_eq!(offline, first, "--data-dir export differs from --url");
}
