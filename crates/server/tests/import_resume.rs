//! `sumi import whisper` killed half way (SIGKILL, nothing flushed) and run again: the
//! rerun skips the files the state file lists, imports the rest, and the server then
//! answers for every file what whisper's `fetch` answers (our reader, checked against
//! whisper 1.1.10 by sumi-import's `whisper_diff`), in the fine and the coarse archive.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{scratch, Sumi};
use sumi_import::whisper::Whisper;

const FILES: usize = 60;

/// A whisper file of `10s:1d,1m:7d`, method max, xFilesFactor 0.5, every slot known
/// as of `now` but every seventh, values from `seed`.
fn whisper_bytes(now: i64, seed: &mut u64) -> Vec<u8> {
    let archives: [(u32, u32); 2] = [(10, 8640), (60, 10080)];
    let mut b = Vec::new();
    b.extend_from_slice(&4u32.to_be_bytes()); // max
    b.extend_from_slice(&(60u32 * 10080).to_be_bytes());
    b.extend_from_slice(&0.5f32.to_be_bytes());
    b.extend_from_slice(&2u32.to_be_bytes());
    let mut offset: u32 = 16 + 12 * 2;
    for (step, points) in archives {
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&step.to_be_bytes());
        b.extend_from_slice(&points.to_be_bytes());
        offset += 12 * points;
    }
    for (step, points) in archives {
        let step = i64::from(step);
        let newest = now - now.rem_euclid(step);
        let oldest = newest - (i64::from(points) - 1) * step;
        for i in 0..i64::from(points) {
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let t = if i % 7 == 3 { 0 } else { oldest + i * step };
            b.extend_from_slice(&(t as u32).to_be_bytes());
            b.extend_from_slice(&(((*seed >> 33) % 100_000) as f64 / 100.0).to_be_bytes());
        }
    }
    b
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| {
            s.lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn killed_import_resumes_and_answers_like_whisper() {
    let dir = scratch();
    let tree = dir.path().join("whisper");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut seed = 7u64;
    for i in 0..FILES {
        let p = tree.join(format!("resume/g{}/s{i:02}.wsp", i % 3));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, whisper_bytes(now, &mut seed)).unwrap();
    }
    let data = dir.path().join("data");
    let state = dir.path().join("state");
    let args = |threads: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sumi"));
        c.args(["import", "whisper"])
            .arg(&tree)
            .arg("--data-dir")
            .arg(&data)
            .arg("--state")
            .arg(&state)
            .args(["--threads", threads]);
        c
    };

    // first run: killed once a few files are recorded
    let mut child = args("1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines(&state) < 3 {
        assert!(Instant::now() < deadline, "no progress in 60 s");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    let done = lines(&state);
    assert!(
        status.code().is_none() && (3..FILES).contains(&done),
        "the first run was killed half way ({status}, {done} of {FILES} files recorded)"
    );

    // second run: the rest
    let out = args("2").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!(
        "files: {FILES} ({} imported, {done} done by an earlier run, 0 skipped)",
        FILES - done
    );
    assert!(text.starts_with(&want), "want {want:?}, got:\n{text}");
    assert_eq!(lines(&state), FILES);

    let mut sumi = Sumi::start(&data, &["--no-selfmon"]);
    for i in 0..FILES {
        let rel = format!("resume/g{}/s{i:02}.wsp", i % 3);
        let name = rel.trim_end_matches(".wsp").replace('/', ".");
        let w = Whisper::open(tree.join(&rel)).unwrap();
        for (from, until) in [
            (now - 20 * 3600, now - 3600),
            (now - 5 * 86_400, now - 2 * 86_400),
        ] {
            let f = w.fetch(from, until, now).unwrap().unwrap();
            let path =
                format!("/render?target={name}&from={from}&until={until}&now={now}&format=raw");
            let (status, body) = sumi.get(&path);
            assert_eq!(status, 200, "{path}: {body}");
            let (head, values) = body.trim_end().split_once('|').unwrap();
            let h: Vec<&str> = head.rsplitn(4, ',').collect();
            assert_eq!(h[0].parse::<i64>().unwrap(), f.step, "{path}");
            assert_eq!(h[2].parse::<i64>().unwrap(), f.from, "{path}");
            let got: Vec<Option<f64>> = values.split(',').map(|v| v.parse().ok()).collect();
            assert_eq!(got, f.values, "{path}");
        }
    }
    sumi.stop();
}
