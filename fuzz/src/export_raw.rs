//! Fuzz target for the lines `sumi export --url` reads from a server
//! (`sumi_import::export_lines`): one `/render?format=raw` line,
//! `name,start,end,step|v,v,…`, then the series written in each format.
//!
//! The input (lossy UTF-8) is the line. Accepted outcomes, anything else panics:
//! - not a raw line: `None`, and then no `|`, or fewer than four comma-separated
//!   fields before the last `|`, or a start, end or step that is not an integer;
//! - a raw series: its name is the text before the last three commas of the head;
//!   plaintext and CSV write one line per value field that parses as a number, each
//!   with the timestamp `start + i * step` (saturated) and a value text that reads
//!   back to the same bits (checked for names without a line break); JSON writes one line that serde_json reads, with one
//!   datapoint per field and as many non-null values as finite numbers.

use sumi_import::export_lines::{Format, RawSeries};

/// One input.
pub fn export_raw(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    let Some(s) = RawSeries::parse(&line) else {
        if let Some((head, _)) = line.rsplit_once('|') {
            let f: Vec<&str> = head.rsplitn(4, ',').collect();
            let ints = f.len() == 4 && f[..3].iter().all(|x| x.parse::<i64>().is_ok());
            assert!(!ints, "a well-formed head refused: {line:?}");
        }
        return;
    };
    assert!(line.starts_with(s.name), "the name starts the line");
    let fields: Vec<&str> = s.values.split(',').filter(|v| !v.is_empty()).collect();
    let numbers: Vec<Option<f64>> = fields.iter().map(|v| v.parse::<f64>().ok()).collect();
    let known = numbers.iter().filter(|v| v.is_some()).count() as u64;

    let mut out = String::new();
    assert_eq!(s.write(Format::Plaintext, &mut out), known);
    // a name holding a line break (no stored series has one) breaks the lines apart
    let one_line = !s.name.contains(['\n', '\r']);
    let mut lines = out.lines();
    for (i, v) in numbers.iter().enumerate() {
        let Some(v) = v.filter(|_| one_line) else {
            continue;
        };
        let l = lines.next().expect("a line per number");
        let rest = l.strip_prefix(s.name).expect("the name first");
        let mut parts = rest.split(' ').filter(|p| !p.is_empty());
        let back: f64 = parts.next().expect("a value").parse().expect("a number");
        assert!(back.to_bits() == v.to_bits() || (back.is_nan() && v.is_nan()));
        let ts: i64 = parts.next().expect("a time").parse().expect("an integer");
        assert_eq!(
            ts,
            s.start.saturating_add((i as i64).saturating_mul(s.step))
        );
    }
    assert!(
        lines.next().is_none() || !one_line,
        "no more lines than numbers"
    );

    out.clear();
    assert_eq!(s.write(Format::Csv, &mut out), known);

    out.clear();
    let finite = numbers.iter().flatten().filter(|v| v.is_finite()).count() as u64;
    assert_eq!(s.write(Format::Json, &mut out), finite);
    assert!(out.ends_with("]}\n"));
    let v: serde_json::Value = serde_json::from_str(out.trim_end()).expect("JSON");
    assert_eq!(v["target"].as_str(), Some(s.name));
    let points = v["datapoints"].as_array().expect("datapoints");
    assert_eq!(points.len(), fields.len());
    let non_null = points.iter().filter(|p| !p[0].is_null()).count() as u64;
    assert_eq!(non_null, finite);
}
