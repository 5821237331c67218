//! `sumi import rrd` against `rrdtool fetch` on the same files.
//!
//! `import_rrd_gen.py` (Debian's python3-rrdtool) writes RRD files as Munin and
//! collectd leave them, relative to the current time, and fetches each (data source,
//! consolidation function) at each of its resolutions over a range that RRA alone
//! serves. sumi imports the directory into an empty data directory and serves it;
//! `/render` of `<path>.<ds>.<cf>` over the same range gives, at every row's time
//! (the end of its interval, as rrdtool prints it), the value rrdtool fetched, bit for
//! bit, `null` where rrdtool has unknown.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::{scratch, Sumi};
use serde_json::Value;

#[test]
fn rrd_import_renders_what_rrdtool_fetches() {
    let dir = scratch();
    let rrd_dir = dir.path().join("rrd");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_rrd_gen.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(&rrd_dir)
        .output()
        .expect("run import_rrd_gen.py (apt-get install python3 python3-rrdtool rrdtool)");
    assert!(
        out.status.success(),
        "import_rrd_gen.py failed (apt-get install python3-rrdtool rrdtool):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gen: Value = serde_json::from_slice(&out.stdout).expect("JSON from the generator");
    let t0 = gen["t0"].as_i64().unwrap();

    let data = dir.path().join("data");
    let state = dir.path().join("state");
    let out = Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["import", "rrd"])
        .arg(&rrd_dir)
        .arg("--data-dir")
        .arg(&data)
        .arg("--state")
        .arg(&state)
        .output()
        .expect("run sumi import rrd");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("files: 3 (3 imported"), "{text}");
    assert!(text.contains("series: 14 (14 created)"), "{text}");

    let mut sumi = Sumi::start(&data, &["--no-selfmon"]);
    let fetches = gen["fetches"].as_array().unwrap();
    assert_eq!(fetches.len(), 19);
    for f in fetches {
        let series = f["series"].as_str().unwrap();
        let (from, until) = (f["from"].as_i64().unwrap(), f["until"].as_i64().unwrap());
        let step = f["step"].as_i64().unwrap();
        // format=raw: the values as text (Python's repr), read back exactly
        let path = format!("/render?target={series}&from={from}&until={until}&now={t0}&format=raw");
        let (status, body) = sumi.get(&path);
        assert_eq!(status, 200, "{path}: {body}");
        let (head, values) = body
            .trim_end()
            .split_once('|')
            .expect("name,start,end,step|values");
        let h: Vec<&str> = head.rsplitn(4, ',').collect();
        let (raw_step, start): (i64, i64) = (h[0].parse().unwrap(), h[2].parse().unwrap());
        assert_eq!(raw_step, step, "{series}: sumi's step is rrdtool's");
        let got: HashMap<i64, Option<f64>> = values
            .split(',')
            .enumerate()
            .map(|(i, v)| (start + i as i64 * raw_step, v.parse::<f64>().ok()))
            .collect();
        let rows = f["rows"].as_array().unwrap();
        let mut matched = 0;
        let mut known = 0;
        for r in rows {
            let t = r[0].as_i64().unwrap();
            let want = r[1]
                .as_str()
                .map(|h| f64::from_bits(u64::from_str_radix(h, 16).unwrap()));
            let Some(g) = got.get(&t) else { continue };
            matched += 1;
            known += usize::from(want.is_some());
            assert_eq!(
                g.map(f64::to_bits),
                want.map(f64::to_bits),
                "{series} at {t} (step {step}): sumi {g:?}, rrdtool {want:?}"
            );
        }
        // the window of each side differs at most by a row at either end
        assert!(
            matched + 2 >= rows.len() && known > rows.len() / 2,
            "{series} {from}..{until}: {matched} of {} rows compared ({known} known)",
            rows.len()
        );
    }
    sumi.stop();

    // into a running server that asks for a write token
    let toml = dir.path().join("sumi.toml");
    let token = "import-write-token-3b9e";
    std::fs::write(&toml, format!("[auth]\nwrite_tokens = [\"{token}\"]\n")).unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("# the write token\n{token}\n")).unwrap();
    let online = dir.path().join("online");
    let mut sumi = Sumi::start(
        &online,
        &["--no-selfmon", "--config", toml.to_str().unwrap()],
    );
    let url = format!("http://{}", sumi.http);
    let run = |extra: &[&str], state: &str| {
        Command::new(env!("CARGO_BIN_EXE_sumi"))
            .args(["import", "rrd"])
            .arg(&rrd_dir)
            .args(["--url", &url, "--state"])
            .arg(dir.path().join(state))
            .args(extra)
            .output()
            .expect("run sumi import rrd --url")
    };
    let out = run(&[], "no-token.state");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "refused without a token: {err}");
    assert!(err.contains("401"), "{err}");
    let out = run(
        &["--token-file", token_file.to_str().unwrap()],
        "token.state",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("series: 14 (14 created)"), "{text}");
    let f = &fetches[0];
    let path = format!(
        "/render?target={}&from={}&until={}&now={t0}&format=raw",
        f["series"].as_str().unwrap(),
        f["from"],
        f["until"]
    );
    let (status, body) = sumi.get(&path);
    assert_eq!(status, 200, "reads are open (no read tokens): {body}");
    let known = body.trim_end().split_once('|').map_or(0, |(_, v)| {
        v.split(',').filter(|x| x.parse::<f64>().is_ok()).count()
    });
    assert!(known > 50, "{path}: {body}");
    sumi.stop();
}
