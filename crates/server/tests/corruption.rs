//! Damaged files on disk: each is detected by its checksum at restart, logged with the
//! file and offset, counted in `/metrics` (`sumi_corruptions_total{kind=...}`), moved
//! to `DATA/quarantine/` (never deleted), and everything else is served.
//!
//! (a) the WAL's last segment is cut mid-record and a byte of an earlier record in it
//!     flipped: the records before the flip replay, the rest is cut;
//! (b) one part is truncated and a block of another flipped: the first is
//!     quarantined, the second serves every series but those sharing the damaged
//!     block's index chunk (64 short series share one checksum);
//! (c) a corrupt manifest is quarantined and rebuilt from the part headers; a torn
//!     series-log tail is cut; a series log damaged in the middle stops the start with
//!     a message naming the file and offset (and `sumi check` reports it).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{now, points_of, scratch, Sumi};

/// More than one index chunk of a part (64 series) holds.
const SERIES: usize = 100;

fn config(dir: &Path) -> Vec<String> {
    let schemas = dir.join("schemas.conf");
    fs::write(
        &schemas,
        "[all]\npattern = .*\nretentions = 10s:2d,1m:30d\n",
    )
    .unwrap();
    let toml = dir.join("sumi.toml");
    // no timed flushes: the tests decide what is in parts (a clean stop) and what is
    // only in the WAL (kill -9)
    fs::write(
        &toml,
        "[storage]\nflush_interval = \"1h\"\nfsync = \"always\"\n",
    )
    .unwrap();
    vec![
        "--config".into(),
        toml.display().to_string(),
        "--storage-schemas".into(),
        schemas.display().to_string(),
        "--no-selfmon".into(),
    ]
}

fn start(data: &Path, flags: &[String]) -> Sumi {
    let f: Vec<&str> = flags.iter().map(String::as_str).collect();
    Sumi::start(data, &f)
}

fn lines(group: &str, ts: i64, value: f64) -> String {
    (0..SERIES)
        .map(|i| format!("{group}.s{i:02} {value} {ts}\n"))
        .collect()
}

fn part_files(data: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(data.join("parts")) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "part"))
        .collect();
    v.sort();
    v
}

fn wal_files(data: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(data.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn quarantined(data: &Path) -> Vec<String> {
    match fs::read_dir(data.join("quarantine")) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Non-null values per series of `target` over `[from, until]`.
fn values(sumi: &Sumi, target: &str, from: i64, until: i64) -> Vec<(String, Vec<(f64, i64)>)> {
    let json = sumi.get_json(&format!(
        "/render?target={target}&from={from}&until={until}&format=json"
    ));
    let n = json.as_array().map_or(0, Vec::len);
    (0..n)
        .map(|i| {
            (
                json[i]["target"].as_str().unwrap_or("").to_string(),
                points_of(&json, i),
            )
        })
        .collect()
}

/// Writes one group in its own partition, stops cleanly (the close flushes it into
/// parts) and returns the part files it added.
fn group_in_parts(data: &Path, flags: &[String], group: &str, ts: i64) -> Vec<PathBuf> {
    let before = part_files(data);
    let mut sumi = start(data, flags);
    sumi.send_tcp(lines(group, ts, 1.0).as_bytes());
    sumi.wait_metric("sumi_points_stored_total", SERIES as f64);
    sumi.stop();
    part_files(data)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect()
}

fn flip(path: &Path, at: u64) {
    let mut b = fs::read(path).unwrap();
    let i = at as usize;
    assert!(i < b.len(), "{} has {} bytes", path.display(), b.len());
    b[i] ^= 0x5a;
    fs::write(path, b).unwrap();
}

fn truncate(path: &Path, len: u64) {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn damaged_wal_and_parts_are_detected_quarantined_and_the_rest_served() {
    let dir = scratch();
    let data = dir.path().join("data");
    let flags = config(dir.path());
    let t = now();
    let (ta, tb, tc, td) = (t - 40 * 3600, t - 30 * 3600, t - 20 * 3600, t - 3600);
    let ta = ta - ta % 10;
    let tb = tb - tb % 10;
    let tc = tc - tc % 10;
    let td = td - td % 10;
    let pa = group_in_parts(&data, &flags, "a", ta);
    let pb = group_in_parts(&data, &flags, "b", tb);
    let pc = group_in_parts(&data, &flags, "c", tc);
    assert_eq!(
        (pa.len(), pb.len(), pc.len()),
        (1, 1, 1),
        "one part per group"
    );

    // three WAL records of group d (one per connection), then kill -9: WAL only
    let mut sumi = start(&data, &flags);
    for (k, v) in [1.0, 2.0, 3.0].iter().enumerate() {
        sumi.send_tcp(lines("d", td + 10 * k as i64, *v).as_bytes());
        sumi.wait_metric("sumi_points_stored_total", (SERIES * (k + 1)) as f64);
    }
    sumi.kill9();

    // (a) WAL: cut the last segment mid-record, flip a byte in its second record
    let seg = wal_files(&data)
        .into_iter()
        .rfind(|p| fs::metadata(p).unwrap().len() > 16)
        .expect("a WAL segment with records");
    let seg_len = fs::metadata(&seg).unwrap().len();
    let rec_len = (seg_len - 16) / 3;
    truncate(&seg, seg_len - rec_len / 2);
    flip(&seg, 16 + rec_len + rec_len / 2);
    // (b) parts: truncate a's part, flip a byte in the first block of b's part
    let a_len = fs::metadata(&pa[0]).unwrap().len();
    truncate(&pa[0], a_len - 7);
    flip(&pb[0], 64 + 2);

    let sumi = start(&data, &flags);
    let log = sumi.log_text();
    // logged with file and offset
    assert!(
        log.contains(&pa[0].file_name().unwrap().to_string_lossy().to_string()),
        "the truncated part is named in the log:\n{log}"
    );
    assert!(
        log.contains("corrupt WAL record") && log.contains("offset"),
        "the WAL cut is logged with its offset:\n{log}"
    );

    // c: untouched, all there
    let c = values(&sumi, "c.*", tc - 60, tc + 60);
    assert_eq!(c.len(), SERIES);
    assert!(c.iter().all(|(_, v)| v == &vec![(1.0, tc)]), "{c:?}");
    // a: quarantined, answers empty without error
    let a = values(&sumi, "a.*", ta - 60, ta + 60);
    assert!(a.iter().all(|(_, v)| v.is_empty()), "{a:?}");
    // b: every series but those of the damaged block's chunk (the part's first 64)
    let b = values(&sumi, "b.*", tb - 60, tb + 60);
    let intact = b.iter().filter(|(_, v)| v == &vec![(1.0, tb)]).count();
    let lost: Vec<&str> = b
        .iter()
        .filter(|(_, v)| v.is_empty())
        .map(|(n, _)| n.as_str())
        .collect();
    let first_chunk: Vec<String> = (0..64).map(|i| format!("b.s{i:02}")).collect();
    assert_eq!(
        (intact, lost),
        (
            SERIES - 64,
            first_chunk.iter().map(String::as_str).collect()
        ),
        "{b:?}"
    );
    // d: the first record replays, the flipped one and everything after it is cut
    let d = values(&sumi, "d.*", td - 60, td + 60);
    assert_eq!(d.len(), SERIES);
    assert!(d.iter().all(|(_, v)| v == &vec![(1.0, td)]), "{d:?}");

    let metric = |k: &str| sumi.metric(&format!("sumi_corruptions_total{{kind=\"{k}\"}}"));
    assert_eq!(metric("wal"), 1.0);
    assert_eq!(metric("part"), 1.0);
    assert!(metric("block") >= 1.0, "the bad block is counted when read");
    assert_eq!(metric("manifest"), 0.0);

    let q = quarantined(&data);
    let a_name = pa[0].file_name().unwrap().to_string_lossy().to_string();
    let seg_name = seg.file_name().unwrap().to_string_lossy().to_string();
    assert!(q.iter().any(|n| n.starts_with(&a_name)), "{q:?}");
    assert!(q.iter().any(|n| n.starts_with(&seg_name)), "{q:?}");
    assert!(!pa[0].exists(), "the bad part was moved aside");
    drop(sumi);
}

#[test]
fn corrupt_manifest_is_rebuilt_and_series_log_damage_is_reported() {
    let dir = scratch();
    let data = dir.path().join("data");
    let flags = config(dir.path());
    let t = now();
    let ta = t - 30 * 3600 - t % 10;
    let tb = t - 10 * 3600 - t % 10;
    group_in_parts(&data, &flags, "a", ta);
    group_in_parts(&data, &flags, "b", tb);

    // (c) the manifest: flip a byte in the middle
    let manifest = data.join("MANIFEST");
    let mlen = fs::metadata(&manifest).unwrap().len();
    flip(&manifest, mlen / 2);
    let mut sumi = start(&data, &flags);
    assert_eq!(
        sumi.metric("sumi_corruptions_total{kind=\"manifest\"}"),
        1.0
    );
    for (g, ts) in [("a", ta), ("b", tb)] {
        let v = values(&sumi, &format!("{g}.*"), ts - 60, ts + 60);
        assert_eq!(v.len(), SERIES);
        assert!(v.iter().all(|(_, p)| p == &vec![(1.0, ts)]), "{g}: {v:?}");
    }
    assert!(quarantined(&data).iter().any(|n| n.starts_with("MANIFEST")));
    let log = sumi.log_text();
    assert!(log.contains("manifest is corrupt"), "{log}");
    sumi.stop();

    // a torn series-log tail: the last series' record is cut, the rest serves
    let slog = data.join("series.log");
    let slen = fs::metadata(&slog).unwrap().len();
    truncate(&slog, slen - 3);
    let mut sumi = start(&data, &flags);
    assert_eq!(
        sumi.metric("sumi_corruptions_total{kind=\"series_log\"}"),
        1.0
    );
    let v = values(&sumi, "a.*", ta - 60, ta + 60);
    assert_eq!(v.len(), SERIES);
    assert_eq!(sumi.metric("sumi_series_active"), (2 * SERIES - 1) as f64);
    sumi.stop();

    // damage in the middle of the series log: refusing beats attaching data to the
    // wrong names; the message says where
    flip(&slog, 40);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["serve", "--data-dir"])
        .arg(&data)
        .args([
            "--carbon",
            "127.0.0.1:0",
            "--pickle",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ])
        .args(&flags)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("series.log") && err.contains("offset"),
        "names the file and the offset: {err}"
    );
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_sumi"))
        .args(["check", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(4), "{report}");
    assert!(report.contains("restore series.log"), "{report}");
}
