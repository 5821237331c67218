//! `sumi check [--data-dir DIR] [--repair]` on a real data directory: clean → 0;
//! refused beside a running server → 8; damage → 4 with a report naming file and
//! offset; `--repair` → 1 with the damaged files quarantined; clean again → 0, and the
//! server serves what was not damaged.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::{now, points_of, scratch, Sumi};

fn check(data: &Path, repair: bool) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sumi"));
    c.args(["check", "--data-dir"]).arg(data);
    if repair {
        c.arg("--repair");
    }
    let out: Output = c.output().expect("run sumi check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn check_reports_repairs_and_exits_like_fsck() {
    let dir = scratch();
    let data = dir.path().join("data");
    let toml = dir.path().join("sumi.toml");
    fs::write(&toml, "[storage]\nflush_interval = \"1h\"\n").unwrap();
    let flags = ["--config", toml.to_str().unwrap(), "--no-selfmon"];
    let t = now() - now() % 60 - 3 * 3600;
    let mut text = String::new();
    // more series than one index chunk holds (64): a damaged short block costs its
    // chunk's series (they share one checksum), the other chunk's read on
    for i in 0..100 {
        text.push_str(&format!("chk.s{i:02} {i} {t}\n"));
    }
    let mut sumi = Sumi::start(&data, &flags);
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(100);
    let (code, out) = check(&data, false);
    assert_eq!(code, 8, "refuses beside a running server: {out}");
    assert!(out.contains("lock"), "{out}");
    sumi.stop();

    let (code, out) = check(&data, false);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("100 series") && out.contains("0 damaged"),
        "{out}"
    );

    // flip a byte in the first block of the part
    let part = fs::read_dir(data.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "part"))
        .expect("a part");
    let mut b = fs::read(&part).unwrap();
    b[66] ^= 0x10;
    fs::write(&part, &b).unwrap();

    let (code, out) = check(&data, false);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("DAMAGE")
            && out.contains("block crc mismatch")
            && out.contains("at offset 64"),
        "{out}"
    );
    assert!(out.contains("--repair would"), "{out}");

    let (code, out) = check(&data, true);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("REPAIRED") && out.contains("0 left"), "{out}");
    assert!(!part.exists(), "the damaged part is quarantined");
    assert_eq!(fs::read_dir(data.join("quarantine")).unwrap().count(), 1);

    let (code, out) = check(&data, false);
    assert_eq!(code, 0, "{out}");

    let sumi = Sumi::start(&data, &flags);
    let json = sumi.get_json(&format!(
        "/render?target=chk.*&from={}&until={}&format=json",
        t - 60,
        t + 60
    ));
    let with_points: Vec<&str> = (0..json.as_array().unwrap().len())
        .filter(|&i| !points_of(&json, i).is_empty())
        .map(|i| json[i]["target"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (64..100).map(|i| format!("chk.s{i:02}")).collect();
    assert_eq!(
        with_points, want,
        "all but the damaged block's chunk (the first 64 series): {json}"
    );

    let (code, out) = check(&dir.path().join("nowhere"), false);
    assert_eq!(code, 8, "{out}");
}
