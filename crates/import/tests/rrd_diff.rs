//! sumi's RRD reader against RRDtool 1.7 itself (Debian's `rrdtool` and
//! `python3-rrdtool`), on files rrdtool wrote.
//!
//! `rrd_gen.py` (beside this file) runs with the system python (`/usr/bin/python3`,
//! where Debian installs the `rrdtool` module): it creates files with every data source
//! type (and so format versions 0003, 0004 and 0005), RRAs of AVERAGE, MIN, MAX and LAST
//! (and Holt-Winters ones) of several steps and row counts, fills them with gaps,
//! unknowns, counter resets and fractional times, and dumps `rrdtool info` and thousands
//! of `rrdtool fetch` answers. Every definition, fetch window and value must match,
//! floats bit for bit (NaN where rrdtool says unknown), and the requests rrdtool
//! refuses must be refused.
//!
//! Nothing is skipped: without rrdtool or its python module the test fails saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sumi_import::rrd::{Cf, Dst, FetchError, Rrd};

/// Runs the generator into `dir`; its JSON dump.
fn generate(dir: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rrd_gen.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run /usr/bin/python3: {e} (apt-get install python3)"));
    assert!(
        out.status.success(),
        "rrd_gen.py failed (needs Debian's rrdtool and python3-rrdtool: \
         apt-get install rrdtool python3-rrdtool):\nexit: {}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("rrd_gen.py prints JSON")
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A float as the dump writes it: null for NaN, else its bits in hex.
fn bits(v: f64) -> Value {
    if v.is_nan() {
        Value::Null
    } else {
        Value::String(format!("{:016x}", v.to_bits()))
    }
}

/// `v` against what `rrdtool info` printed with 10 decimals (null for NaN).
fn printed(v: f64, want: &Value, what: &str) {
    match want.as_f64() {
        None => assert!(v.is_nan(), "{what}: {v}, rrdtool NaN"),
        Some(w) => assert!(
            (v - w).abs() <= 1e-10 * w.abs().max(1.0),
            "{what}: {v}, rrdtool {w}"
        ),
    }
}

#[test]
fn rrd_files_read_as_rrdtool_fetches_them() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rrd-diff");
    let dump = generate(&dir);
    assert!(
        dump["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.7")),
        "rrdtool {}",
        dump["version"]
    );
    let files = dump["files"].as_array().expect("files");
    assert!(files.len() >= 6, "{} files", files.len());
    let (mut fetches, mut refusals, mut values) = (0, 0, 0);
    let mut versions = std::collections::BTreeSet::new();
    for file in files {
        let name = file["file"].as_str().expect("file name");
        let r = Rrd::open(dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
        let info = &file["info"];
        assert_eq!(r.header().version, info["version"], "{name}");
        versions.insert(r.header().version.clone());
        assert_eq!(r.header().pdp_step as i64, int(&info["step"]), "{name}");
        assert_eq!(r.last_update(), int(&info["last_update"]), "{name}");
        let ds = info["ds"].as_array().expect("ds");
        assert_eq!(r.ds().len(), ds.len(), "{name}");
        for (got, want) in r.ds().iter().zip(ds) {
            let what = format!("{name}: data source {}", got.name);
            assert_eq!(got.name, want[0], "{what}");
            assert_eq!(got.dst.name(), want[1], "{what}");
            if got.dst != Dst::Compute {
                assert_eq!(got.heartbeat as i64, int(&want[2]), "{what}");
                printed(got.min, &want[3], &what);
                printed(got.max, &want[4], &what);
            }
        }
        let rras = info["rra"].as_array().expect("rra");
        assert_eq!(r.rras().len(), rras.len(), "{name}");
        for (i, (got, want)) in r.rras().iter().zip(rras).enumerate() {
            assert_eq!(got.cf.name(), want[0], "{name} RRA {i}");
            assert_eq!(got.rows as i64, int(&want[1]), "{name} RRA {i}");
            assert_eq!(got.pdp_count as i64, int(&want[2]), "{name} RRA {i}");
            if got.cf.is_plain() {
                printed(got.xff, &want[3], &format!("{name} RRA {i} xff"));
            }
            assert_eq!(got.cur_row as i64, int(&want[4]), "{name} RRA {i}");
        }

        for case in file["fetches"].as_array().expect("fetches") {
            let cf_name = case["cf"].as_str().expect("cf");
            let cf = Cf::parse(cf_name).expect("a CF rrdtool knows");
            let (start, end, res) = (
                int(&case["start"]),
                int(&case["end"]),
                int(&case["resolution"]),
            );
            let what = format!("{name}: fetch {cf_name} -s {start} -e {end} -r {res}");
            let got = r.fetch(cf, start, end, res);
            match &case["result"] {
                Value::String(msg) => {
                    let e = got.expect_err(&what);
                    let ok = match e {
                        FetchError::EndBeforeStart { .. } => msg.contains("should be less than"),
                        FetchError::NoMatchingRra { .. } => {
                            msg.contains("does not contain an RRA matching")
                        }
                        _ => false,
                    };
                    assert!(ok, "{what}: rrdtool says {msg:?}, sumi {e}");
                    refusals += 1;
                }
                want => {
                    let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(got.start, int(&want[0]), "{what}");
                    assert_eq!(got.end, int(&want[1]), "{what}");
                    assert_eq!(got.step, int(&want[2]), "{what}");
                    let names: Vec<Value> =
                        r.ds().iter().map(|d| Value::from(d.name.clone())).collect();
                    assert_eq!(&Value::from(names), &want[3], "{what}");
                    let rows: Vec<Value> = got
                        .rows
                        .iter()
                        .map(|row| Value::from(row.iter().map(|v| bits(*v)).collect::<Vec<_>>()))
                        .collect();
                    let want_rows = want[4].as_array().expect("rows");
                    assert_eq!(rows.len(), want_rows.len(), "{what}");
                    for (k, (a, b)) in rows.iter().zip(want_rows).enumerate() {
                        assert_eq!(
                            a,
                            b,
                            "{what}: row {k} (ending {})",
                            got.start + (k as i64 + 1) * got.step
                        );
                    }
                    values += rows
                        .iter()
                        .flat_map(|r| r.as_array().expect("row"))
                        .filter(|v| !v.is_null())
                        .count();
                    fetches += 1;
                }
            }
        }
    }
    assert_eq!(
        versions.into_iter().collect::<Vec<_>>(),
        ["0003", "0004", "0005"],
        "format versions met"
    );
    assert!(fetches >= 2_000, "{fetches} fetches");
    assert!(refusals >= 100, "{refusals} refusals");
    assert!(values >= 50_000, "{values} known values compared");
}
