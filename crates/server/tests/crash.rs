//! `kill -9` in the middle of a load: after restart, every point that reached the WAL
//! is there.
//!
//! Points go over one connection in a known order, and the store appends batches of one
//! connection in order, so what reached the WAL is a prefix of what was sent. Before the
//! kill, `sumi_points_stored_total` says how long a prefix is certainly in the WAL; after
//! the restart the stored points must form a prefix at least that long, with no hole.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{now, scratch, Sumi};

const SERIES: i64 = 200;
const STEPS: i64 = 300;

fn line(seq: i64, t0: i64) -> String {
    let (step, s) = (seq / SERIES, seq % SERIES);
    format!("crash.s{s:03}.v {seq} {}\n", t0 + step * 10)
}

#[test]
fn kill_9_mid_load_loses_nothing_that_reached_the_wal() {
    let dir = scratch();
    let data = dir.path().join("data");
    for round in 0..3 {
        let mut sumi = Sumi::start(&data, &[]);
        let t0 = now() - now() % 10 - STEPS * 10 - 60;
        let prefix = format!("r{round}");
        let stop = Arc::new(AtomicBool::new(false));
        let sender = {
            let stop = stop.clone();
            let addr = sumi.carbon;
            let prefix = prefix.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                for seq in 0..SERIES * STEPS {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let l = format!("{prefix}.{}", line(seq, t0));
                    if s.write_all(l.as_bytes()).is_err() {
                        break;
                    }
                }
            })
        };
        // kill somewhere in the middle of the load
        let target = (SERIES * STEPS / 4 * (round + 1)) as f64;
        sumi.wait_metric(
            "sumi_points_stored_total",
            target.min((SERIES * STEPS / 2) as f64),
        );
        let acknowledged = sumi.metric("sumi_points_stored_total") as i64;
        sumi.kill9();
        stop.store(true, Ordering::Relaxed);
        sender.join().unwrap();

        let sumi = Sumi::start(&data, &[]);
        let json = sumi.get_json(&format!(
            "/render?target={prefix}.crash.*.v&from={}&until={}&format=json",
            t0 - 1,
            t0 + STEPS * 10
        ));
        let mut present: Vec<i64> = Vec::new();
        for series in json.as_array().unwrap() {
            for p in series["datapoints"].as_array().unwrap() {
                if let Some(v) = p[0].as_f64() {
                    present.push(v as i64);
                }
            }
        }
        present.sort_unstable();
        let n = present.len() as i64;
        assert!(
            n >= acknowledged,
            "round {round}: {n} points after restart, {acknowledged} were acknowledged before the kill"
        );
        for (i, v) in present.iter().enumerate() {
            assert_eq!(
                *v, i as i64,
                "round {round}: hole in the stored prefix at {i}"
            );
        }
        drop(sumi);
    }
}
