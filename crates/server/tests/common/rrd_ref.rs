//! The rrdtool side of the RRD import tests (`import_rrd`, `kafka_import_rrd`):
//! `import_rrd_gen.py` (Debian's python3-rrdtool) writes RRD files as Munin and
//! collectd leave them and fetches each (data source, consolidation function) at each
//! of its resolutions over a range that RRA alone serves; these run it and compare
//! sumi's `/render` with rrdtool's rows.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the generator into `rrd_dir`: `{"t0", "dir", "fetches": [...]}`.
pub fn generate(rrd_dir: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_rrd_gen.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(rrd_dir)
        .output()
        .expect("run import_rrd_gen.py (apt-get install python3 python3-rrdtool rrdtool)");
    assert!(
        out.status.success(),
        "import_rrd_gen.py failed (apt-get install python3-rrdtool rrdtool):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from the generator")
}

/// Every fetch of `gen` against `/render` of its series over its range, read with
/// `get` (path → status and body; `extra` is appended to the query): at every row's
/// time the value rrdtool fetched, bit for bit, `null` where rrdtool has unknown.
pub fn check_fetches(get: impl Fn(&str) -> (u16, String), gen: &Value, extra: &str) {
    let t0 = gen["t0"].as_i64().unwrap();
    let fetches = gen["fetches"].as_array().unwrap();
    for f in fetches {
        let series = f["series"].as_str().unwrap();
        let (from, until) = (f["from"].as_i64().unwrap(), f["until"].as_i64().unwrap());
        let step = f["step"].as_i64().unwrap();
        // format=raw: the values as text (Python's repr), read back exactly
        let path =
            format!("/render?target={series}&from={from}&until={until}&now={t0}&format=raw{extra}");
        let (status, body) = get(&path);
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
}
