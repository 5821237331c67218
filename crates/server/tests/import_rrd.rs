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
#[path = "common/rrd_ref.rs"]
mod rrd_ref;

use std::process::Command;

use common::{scratch, Sumi};

#[test]
fn rrd_import_renders_what_rrdtool_fetches() {
    let dir = scratch();
    let rrd_dir = dir.path().join("rrd");
    let gen = rrd_ref::generate(&rrd_dir);
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
    rrd_ref::check_fetches(|p| sumi.get(p), &gen, "");
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
