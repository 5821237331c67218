//! Throughput of `sumi relay` against Debian's `carbon-c-relay` on the same input, in
//! one run, alternating: each relay in front of the same two carbon plaintext sinks
//! (in this process, counting lines), consistent hashing (`carbon_ch`) over both.
//!
//! ```sh
//! cargo build --release -p sumi -p sumi-relay --examples
//! target/release/examples/relay_bench --sumi target/release/sumi --points 5000000 --runs 5
//! ```
//!
//! Prints, per relay, the median over the runs of points per second (wall time from
//! the first byte sent to the last line counted by the sinks) and points per
//! CPU-second of the relay process alone (utime + stime from `/proc/PID/stat`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    sumi: PathBuf,
    points: usize,
    names: usize,
    conns: usize,
    runs: usize,
}

fn args() -> Args {
    let mut a = Args {
        sumi: PathBuf::from("target/release/sumi"),
        points: 5_000_000,
        names: 100_000,
        conns: 4,
        runs: 5,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    for w in v.chunks(2) {
        let val = w.get(1).cloned().unwrap_or_default();
        match w[0].as_str() {
            "--sumi" => a.sumi = val.into(),
            "--points" => a.points = val.parse().expect("--points N"),
            "--names" => a.names = val.parse().expect("--names N"),
            "--conns" => a.conns = val.parse().expect("--conns N"),
            "--runs" => a.runs = val.parse().expect("--runs N"),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

fn sink(counter: Arc<AtomicU64>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let counter = counter.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let lines = memchr::memchr_iter(b'\n', &buf[..n]).count();
                            counter.fetch_add(lines as u64, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    port
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(") ").map_or("", |x| x.1);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn wait_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "relay not listening on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start_sumi(sumi: &Path, dir: &Path, port: u16, sinks: [u16; 2]) -> Child {
    let config = dir.join("relay.toml");
    std::fs::write(
        &config,
        format!(
            "queue_dir = \"queue\"\n[listen]\nplaintext = [\"127.0.0.1:{port}\"]\n\
             [[destination]]\naddress = \"127.0.0.1:{}:a\"\nprotocol = \"plaintext\"\n\
             [[destination]]\naddress = \"127.0.0.1:{}:b\"\nprotocol = \"plaintext\"\n",
            sinks[0], sinks[1]
        ),
    )
    .unwrap();
    let child = Command::new(sumi)
        .args(["relay", "--config"])
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start sumi relay");
    wait_port(port);
    child
}

fn start_c_relay(dir: &Path, port: u16, sinks: [u16; 2]) -> Child {
    let config = dir.join("c-relay.conf");
    std::fs::write(
        &config,
        format!(
            "cluster c carbon_ch replication 1\n    127.0.0.1:{}=a\n    127.0.0.1:{}=b\n    ;\n\
             match * send to c stop;\n",
            sinks[0], sinks[1]
        ),
    )
    .unwrap();
    let child = Command::new("carbon-c-relay")
        .arg("-f")
        .arg(&config)
        .args([
            "-p",
            &port.to_string(),
            "-w",
            "2",
            "-s",
            "-q",
            "2000000",
            "-l",
        ])
        .arg(dir.join("c-relay.log"))
        .stdout(Stdio::null())
        .spawn()
        .expect("start carbon-c-relay");
    // It binds before it is ready to accept: wait for its own word.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(dir.join("c-relay.log"))
        .unwrap_or_default()
        .contains("startup sequence complete")
    {
        assert!(Instant::now() < deadline, "carbon-c-relay did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_port(port);
    child
}

/// One run: (points/s, points per CPU-second of the relay).
fn run(which: &str, a: &Args, input: &[Vec<u8>]) -> (f64, f64) {
    let dir = std::env::temp_dir().join(format!("relay-bench-{which}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let counter = Arc::new(AtomicU64::new(0));
    let sinks = [sink(counter.clone()), sink(counter.clone())];
    let port = free_port();
    let mut child = match which {
        "sumi" => start_sumi(&a.sumi, &dir, port, sinks),
        _ => start_c_relay(&dir, port, sinks),
    };
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(300));
    let cpu0 = cpu_secs(pid);
    let t0 = Instant::now();
    let senders: Vec<_> = input
        .iter()
        .cloned()
        .map(|chunk| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.write_all(&chunk).unwrap();
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while counter.load(Ordering::Relaxed) < a.points as u64 {
        if Instant::now() > deadline {
            panic!(
                "{which}: {} of {} points arrived in 300 s",
                counter.load(Ordering::Relaxed),
                a.points
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs(pid) - cpu0;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let got = counter.load(Ordering::Relaxed);
    assert_eq!(got, a.points as u64, "{which}: duplicates arrived");
    (a.points as f64 / wall, a.points as f64 / cpu)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a = args();
    let ts = 1_700_000_000u64;
    let mut lines: Vec<Vec<u8>> = vec![Vec::new(); a.conns];
    for i in 0..a.points {
        let n = i % a.names;
        let chunk = &mut lines[i % a.conns];
        let _ = writeln!(
            chunk,
            "bench.host{}.cpu{}.metric{} {}.{} {}",
            n % 1000,
            n % 7,
            n,
            i % 1000,
            i % 97,
            ts + (i / a.names) as u64 * 10
        );
    }
    let bytes: usize = lines.iter().map(Vec::len).sum();
    println!(
        "input: {} points, {} names, {} bytes, {} connections",
        a.points, a.names, bytes, a.conns
    );
    let mut res: std::collections::BTreeMap<&str, (Vec<f64>, Vec<f64>)> = Default::default();
    for r in 0..a.runs {
        for which in ["sumi", "carbon-c-relay"] {
            let (pps, ppc) = run(which, &a, &lines);
            println!("run {r} {which:15} {pps:>12.0} points/s {ppc:>12.0} points/CPU-s");
            let e = res.entry(which).or_default();
            e.0.push(pps);
            e.1.push(ppc);
        }
    }
    for (which, (pps, ppc)) in res {
        println!(
            "median {which:15} {:>12.0} points/s {:>12.0} points/CPU-s",
            median(pps),
            median(ppc)
        );
    }
}
