//! A full data disk, on a 24 MiB tmpfs: with a ballast file leaving a little room
//! above `storage.min_free_bytes`, a plaintext load fills it. Then sumi must stop
//! accepting (the connection is no longer read: back-pressure; an HTTP write gets a
//! 503 that says why), log it once, keep answering `/render` and `/metrics/find`, and
//! — once the test deletes the ballast — resume by itself, ending with every point
//! sent stored exactly once, before and after a restart. No panic, no dead
//! background job.
//!
//! Needs to mount a tmpfs (root, or `CAP_SYS_ADMIN` in a container): without it the
//! test fails, saying so; it never passes untested. `.ci/run` checks the capability
//! first. Where it cannot be had, skip by name: `cargo test -- --skip full_disk`.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{now, Sumi};

const SERIES: i64 = 1000;
const STEPS: i64 = 1000;
const MIN_FREE: u64 = 6 << 20;

/// Unmounts the tmpfs when the test ends, failed or not.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn free_bytes(p: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}

/// A value that does not compress, so that the data fills the disk.
fn value(k: i64) -> f64 {
    let x = (k as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17);
    (x >> 24) as f64
}

fn line(k: i64, base: i64) -> String {
    format!(
        "fd.s{:04} {} {}\n",
        k % SERIES,
        value(k),
        base + (k / SERIES) * 10
    )
}

fn wait_for(what: &str, sumi: &Sumi, f: impl Fn(&Sumi) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f(sumi) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{}",
            sumi.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Appends refused in a row, with nothing stored in between, that tell a full disk from
/// a short episode ended by a flush freeing WAL segments: with the sender's retry backoff
/// (10 ms, doubling up to 1 s) about two seconds of refusals.
const REFUSED_IN_A_ROW: f64 = 8.0;

/// Waits until the store holds the sender back: `REFUSED_IN_A_ROW` appends refused
/// (`sumi_store_append_errors_total`) since `sumi_points_stored_total` last moved, and
/// with the guard on, `sumi_disk_full` set. Returns the points stored by then.
fn wait_held_back(sumi: &Sumi, guard: bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let sample = || {
        let (status, body) = sumi.get("/metrics");
        assert_eq!(status, 200, "{body}");
        (
            common::parse_metric(&body, "sumi_points_stored_total"),
            common::parse_metric(&body, "sumi_store_append_errors_total"),
            common::parse_metric(&body, "sumi_disk_full"),
        )
    };
    let (mut stored, mut refused_before, _) = sample();
    loop {
        let (now_stored, refused, full) = sample();
        if now_stored != stored {
            (stored, refused_before) = (now_stored, refused);
        } else if (!guard || full == 1.0) && refused - refused_before >= REFUSED_IN_A_ROW {
            return stored;
        }
        assert!(
            Instant::now() < deadline,
            "writes never stopped ({stored} points stored, {} appends refused since):\n{}",
            refused - refused_before,
            sumi.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every point sent is there, with its value, once (in tenths: ureq caps a body at
/// 10 MB).
fn verify(sumi: &Sumi, base: i64) {
    let mut n = 0;
    for tenth in 0..10 {
        let json = sumi.get_json(&format!(
            "/render?target=fd.s0{tenth}*&from={}&until={}&format=json",
            base - 1,
            base + STEPS * 10
        ));
        for s in json.as_array().unwrap() {
            let id: i64 = s["target"].as_str().unwrap()[4..].parse().unwrap();
            for p in s["datapoints"].as_array().unwrap() {
                if let Some(v) = p[0].as_f64() {
                    let step = (p[1].as_i64().unwrap() - base) / 10;
                    assert_eq!(v, value(step * SERIES + id), "fd.s{id:04} step {step}");
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, SERIES * STEPS, "every point sent is stored");
}

#[test]
fn full_disk_holds_clients_back_serves_reads_and_resumes_alone() {
    run(MIN_FREE);
}

/// The guard off: the WAL itself hits ENOSPC, undoes the partial write and tells the
/// client to retry; flushes and compactions fail and are retried. Same promises.
#[test]
fn enospc_in_the_wal_is_undone_and_the_store_resumes() {
    run(0);
}

fn run(min_free: u64) {
    let guard = min_free > 0;
    let dir = common::scratch();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=24m", "tmpfs"])
        .arg(&mnt)
        .output();
    match mounted {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "full_disk needs to mount a tmpfs (root, or CAP_SYS_ADMIN in a container), \
             and mount failed: {}; skip it by name with `cargo test -- --skip full_disk`",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!(
            "full_disk needs to mount a tmpfs, and `mount` cannot run: {e}; \
             skip it by name with `cargo test -- --skip full_disk`"
        ),
    }
    let _guard = Mount(mnt.clone());
    // the server's log (`data.log`, beside the data) is on the full disk too, as
    // /var/log often shares a disk with /var/lib: a log line that cannot be written
    // once reset the connection that was logging (see `init_logging`)
    let data = mnt.join("data");
    let schemas = dir.path().join("schemas.conf");
    std::fs::write(&schemas, "[all]\npattern = .*\nretentions = 10s:2d\n").unwrap();
    let toml = dir.path().join("sumi.toml");
    std::fs::write(
        &toml,
        format!(
            "[storage]\nmin_free_bytes = {min_free}\nflush_interval = \"500ms\"\n\
             maintenance_interval = \"200ms\"\nwal_segment_bytes = 1048576\n"
        ),
    )
    .unwrap();
    let flags = [
        "--config",
        toml.to_str().unwrap(),
        "--storage-schemas",
        schemas.to_str().unwrap(),
        "--no-selfmon",
    ];
    let mut sumi = Sumi::start(&data, &flags);

    // ballast: leave 2 MiB above the reserve
    let ballast = mnt.join("ballast");
    let room = free_bytes(&mnt).saturating_sub(min_free + (2 << 20));
    let mut f = std::fs::File::create(&ballast).unwrap();
    let chunk = vec![0x55u8; 1 << 20];
    let mut left = room;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    f.sync_all().unwrap();
    drop(f);

    let base = now() - now() % 10 - 20 * 3600;
    let addr = sumi.carbon;
    let sender = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut buf = String::new();
        for k in 0..SERIES * STEPS {
            buf.push_str(&line(k, base));
            if buf.len() > 64 << 10 {
                s.write_all(buf.as_bytes()).unwrap();
                buf.clear();
            }
        }
        s.write_all(buf.as_bytes()).unwrap();
    });

    // full: writes refused, counted, logged once
    if guard {
        wait_for("the disk to fill", &sumi, |s| {
            s.metric("sumi_disk_full") == 1.0
        });
    }
    // flushes free WAL segments, so the first episodes may be short; a full disk is
    // one where the sender's retries are refused again and again with nothing stored
    let stored = wait_held_back(&sumi, guard);
    assert!(
        stored < (SERIES * STEPS) as f64,
        "the disk filled before the load ended"
    );
    assert!(
        !sender.is_finished(),
        "the sender is held back ({stored} points stored):\n{}",
        sumi.log_text()
    );
    // reads go on
    let (status, body) = sumi.get(&format!(
        "/render?target=fd.s0001&from={}&until={}&format=json",
        base - 1,
        base + STEPS * 10
    ));
    assert_eq!(status, 200, "{body}");
    let (status, body) = sumi.get("/metrics/find?query=fd.*");
    assert_eq!(status, 200, "{body}");
    // an HTTP write is told why
    let url = format!("http://{}/api/v0/tsdb", sumi.http);
    let payload = format!(
        "[{{\"name\":\"fd.http\",\"time\":{},\"value\":1}}]",
        now() - 60
    );
    match ureq::post(&url)
        .set("Content-Type", "application/json")
        .send_string(&payload)
    {
        Err(ureq::Error::Status(code, r)) => {
            let text = r.into_string().unwrap_or_default();
            assert_eq!(code, 503, "{text}");
            let why = if guard {
                "disk full"
            } else {
                "lack of disk space"
            };
            assert!(text.contains(why), "{text}");
        }
        // without the guard a one-point write may still fit in the last free page
        Ok(r) if !guard => assert_eq!(r.status(), 200),
        other => panic!("HTTP write while full: {other:?}"),
    }
    let log = sumi.log_text();
    let episodes = sumi.metric("sumi_disk_full_episodes_total");
    assert_eq!(episodes >= 1.0, guard);
    assert_eq!(
        log.matches("data disk full").count() as f64,
        episodes,
        "logged once per episode:\n{log}"
    );
    if guard {
        assert!(sumi.metric("sumi_disk_full_refusals_total") > 0.0);
    } else {
        assert!(log.contains("WAL write failed and was undone"), "{log}");
        assert_eq!(sumi.metric("sumi_store_healthy"), 1.0, "not poisoned");
    }

    // space returns: resumes by itself
    std::fs::remove_file(&ballast).unwrap();
    wait_for("the load to complete", &sumi, |s| {
        s.metric("sumi_points_stored_total") >= (SERIES * STEPS) as f64
    });
    sender.join().unwrap();
    assert_eq!(sumi.metric("sumi_disk_full"), 0.0);
    verify(&sumi, base);
    let log = sumi.log_text();
    assert_eq!(log.contains("data disk has space again"), guard, "{log}");
    assert!(!log.contains("panicked"), "{log}");
    assert!(sumi.is_running());
    sumi.stop();

    let sumi = Sumi::start(&data, &flags);
    verify(&sumi, base);
    drop(sumi);
}
