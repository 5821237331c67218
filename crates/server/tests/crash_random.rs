//! `kill -9` at random moments, many times, with maintenance running flat out; then
//! every named failpoint (`SUMI_FAILPOINT`) once, so that dying mid-WAL-write,
//! mid-seal, mid-compaction and mid-retention-drop is each proven, not hoped for.
//!
//! The store is tuned so that seals happen every 300 ms, compactions, rollups and
//! retention every 200 ms (level 0 keeps 30 s), and segments rotate every 64 KiB.
//! Each cycle: three connections send their own series (value = sequence number,
//! time = a function of it) while `/metrics` is polled for
//! `sumi_points_stored_total` (points the WAL accepted); the process dies (SIGKILL
//! at a random moment, or a failpoint's `abort()`); the restarted server must hold,
//! per connection, exactly the prefix of what was sent (no hole, no stale or
//! duplicated value, each at its time), at least as many points as were acknowledged,
//! and answer queries over the older, rolled and dropped data.
//!
//! The log's `op started` / `op done` lines (debug, `sumi_store::failpoint`) show
//! which operations a random kill interrupted; the report is printed.
//!
//! The kill times come from a seeded generator; the seed is printed first, and
//! `SUMI_CRASH_SEED=<seed>` replays the same sequence of kill times (the moments the
//! server reaches in between still depend on the machine's speed).

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CONNS: usize = 3;
const SERIES: i64 = 60;
/// Steps of one second, all in the past (a render ends at now) and inside level 0.
const STEPS: i64 = 10;
/// The environment variable that replays a run's kill times.
const SEED_ENV: &str = "SUMI_CRASH_SEED";

struct Server {
    child: Child,
    carbon: SocketAddr,
    http: SocketAddr,
    log: PathBuf,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn setup(dir: &Path) -> Vec<String> {
    let schemas = dir.join("schemas.conf");
    std::fs::write(&schemas, "[all]\npattern = .*\nretentions = 1s:30s,5s:5m\n").unwrap();
    let aggr = dir.join("aggregation.conf");
    std::fs::write(
        &aggr,
        "[all]\npattern = .*\nxFilesFactor = 0\naggregationMethod = max\n",
    )
    .unwrap();
    let toml = dir.join("sumi.toml");
    std::fs::write(
        &toml,
        "[storage]\nflush_interval = \"300ms\"\nmaintenance_interval = \"200ms\"\n\
         rollup_grace_secs = 0\nwal_segment_bytes = 65536\n",
    )
    .unwrap();
    [
        "--config",
        toml.to_str().unwrap(),
        "--storage-schemas",
        schemas.to_str().unwrap(),
        "--storage-aggregation",
        aggr.to_str().unwrap(),
        "--no-selfmon",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn start(data: &Path, flags: &[String], failpoint: Option<&str>, n: usize) -> Server {
    std::fs::create_dir_all(data).unwrap();
    let ready = data.with_extension("ready.json");
    let _ = std::fs::remove_file(&ready);
    let log = data.with_extension(format!("{n}.log"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sumi"));
    cmd.arg("serve")
        .arg("--data-dir")
        .arg(data)
        .args(["--carbon", "127.0.0.1:0", "--pickle", "127.0.0.1:0"])
        .args(["--http", "127.0.0.1:0", "--ready-file"])
        .arg(&ready)
        .args(flags)
        .env("RUST_LOG", "info,sumi_store::failpoint=debug")
        .env_remove("SUMI_FAILPOINT")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    if let Some(fp) = failpoint {
        cmd.env("SUMI_FAILPOINT", fp);
    }
    let mut child = cmd.spawn().expect("spawn sumi");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(&ready) {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            return Server {
                child,
                carbon: v["carbon"].as_str().unwrap().parse().unwrap(),
                http: v["http"].as_str().unwrap().parse().unwrap(),
                log,
            };
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!(
                "sumi exited during startup ({st}):\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "sumi not ready in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Server {
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let url = format!("http://{}{}", self.http, path);
        match ureq::get(&url).timeout(Duration::from_secs(30)).call() {
            Ok(r) => Some((r.status(), r.into_string().unwrap_or_default())),
            Err(ureq::Error::Status(c, r)) => Some((c, r.into_string().unwrap_or_default())),
            Err(_) => None,
        }
    }

    fn metrics(&self) -> Option<String> {
        self.get("/metrics").map(|(_, b)| b)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn metric(body: &str, name: &str) -> f64 {
    body.lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(n, _)| *n == name)
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .sum()
}

/// The series and time of sequence number `k` of a connection.
fn place(k: i64, base: i64) -> (i64, i64) {
    (k % SERIES, base + k / SERIES)
}

/// The connections of one cycle's senders, opened before the clock starts. A server
/// that refuses them fails the test, unless it has already died of its armed failpoint
/// (a maintenance failpoint can fire before any load): then there is nothing to send.
fn connect_senders(srv: &mut Server, failpoint: bool) -> Vec<TcpStream> {
    let mut conns = Vec::new();
    for c in 0..CONNS {
        match TcpStream::connect(srv.carbon) {
            Ok(s) => conns.push(s),
            Err(e) => {
                let exited = srv.child.try_wait().unwrap();
                assert!(
                    failpoint && exited.is_some(),
                    "sender {c} cannot connect to {} (server exited: {exited:?}): {e}\n{}",
                    srv.carbon,
                    srv.log_text()
                );
                return Vec::new();
            }
        }
    }
    conns
}

/// Runs one cycle's load until the server dies (failpoint) or `kill_after` passes
/// (then SIGKILL). Returns the acknowledged points and the maintenance counters seen.
fn load_and_die(
    srv: &mut Server,
    prefix: &str,
    base: i64,
    kill_after: Option<Duration>,
    failpoint: bool,
) -> (f64, BTreeMap<&'static str, f64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let senders: Vec<_> = connect_senders(srv, failpoint)
        .into_iter()
        .enumerate()
        .map(|(c, mut s)| {
            let stop = stop.clone();
            let prefix = prefix.to_string();
            std::thread::spawn(move || {
                for step in 0..STEPS {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let mut chunk = String::new();
                    for j in 0..SERIES {
                        let k = step * SERIES + j;
                        let (series, ts) = place(k, base);
                        chunk.push_str(&format!("{prefix}.c{c}.s{series:02} {k} {ts}\n"));
                    }
                    if s.write_all(chunk.as_bytes()).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut acked = 0.0;
    let mut counters = BTreeMap::new();
    let limit = kill_after.unwrap_or(Duration::from_secs(10));
    loop {
        if srv.child.try_wait().unwrap().is_some() {
            break; // a failpoint fired
        }
        if t0.elapsed() >= limit {
            let _ = srv.child.kill();
            let _ = srv.child.wait();
            break;
        }
        if let Some(body) = srv.metrics() {
            acked = metric(&body, "sumi_points_stored_total");
            for (k, name) in [
                ("seals", "sumi_flushes_total"),
                ("compactions", "sumi_compactions_total"),
                ("rollups", "sumi_rollups_total"),
                ("retention_drops", "sumi_retention_drops_total"),
            ] {
                counters.insert(k, metric(&body, name));
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        let _ = s.join();
    }
    (acked, counters)
}

/// Checks a killed cycle after restart: per connection, exactly a prefix of what was
/// sent, each value at its time; together at least `acked` points.
fn verify(srv: &Server, prefix: &str, base: i64, acked: f64, what: &str) {
    let mut total = 0i64;
    for c in 0..CONNS {
        let (status, body) = srv
            .get(&format!(
                "/render?target={prefix}.c{c}.*&from={}&until={}&format=json",
                base - 1,
                base + STEPS + 1
            ))
            .expect("render answers");
        assert_eq!(status, 200, "{what}: {body}");
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let mut present: Vec<i64> = Vec::new();
        for s in json.as_array().unwrap() {
            let name = s["target"].as_str().unwrap();
            let series: i64 = name.rsplit_once(".s").unwrap().1.parse().unwrap();
            for p in s["datapoints"].as_array().unwrap() {
                if let Some(v) = p[0].as_f64() {
                    let k = v as i64;
                    let ts = p[1].as_i64().unwrap();
                    assert_eq!(
                        place(k, base),
                        (series, ts),
                        "{what}: value {k} found in {name} at {ts}: stale or misplaced"
                    );
                    present.push(k);
                }
            }
        }
        present.sort_unstable();
        for (i, k) in present.iter().enumerate() {
            assert_eq!(
                *k, i as i64,
                "{what}: connection {c}: hole or duplicate at {i}"
            );
        }
        total += present.len() as i64;
    }
    assert!(
        total as f64 >= acked,
        "{what}: {total} points after restart, {acked} were acknowledged"
    );
}

/// Operations started and not finished in a killed instance's log.
fn interrupted(log: &str) -> Vec<String> {
    let mut open: BTreeMap<String, i64> = BTreeMap::new();
    for l in log.lines() {
        let Some(op) = l.split("op=\"").nth(1).and_then(|r| r.split('"').next()) else {
            continue;
        };
        let op = op.to_string();
        if l.contains("op started") {
            *open.entry(op).or_default() += 1;
        } else if l.contains("op done") {
            *open.entry(op).or_default() -= 1;
        }
    }
    open.into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(op, _)| op)
        .collect()
}

#[test]
fn random_kills_and_every_failpoint_lose_nothing_the_wal_accepted() {
    let dir = tempfile::Builder::new()
        .prefix("sumi-crash-random-")
        .tempdir()
        .unwrap();
    let data = dir.path().join("data");
    let flags = setup(dir.path());
    let seed = match std::env::var(SEED_ENV) {
        Ok(v) => v
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("{SEED_ENV}={v:?}: {e}")),
        Err(_) => rand::random(),
    };
    eprintln!("crash_random: seed {seed} (replay the kill times with {SEED_ENV}={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    let t_start = Instant::now();
    let mut n = 0usize;
    let mut hit_ops: BTreeMap<String, u32> = BTreeMap::new();
    let mut totals: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut cycles = 0;

    // random kills, for about 30 s (long enough for level-0 data to be rolled up and
    // dropped by retention while kills keep coming)
    while t_start.elapsed() < Duration::from_secs(30) {
        let mut srv = start(&data, &flags, None, n);
        n += 1;
        let prefix = format!("r{cycles}");
        let base = now() - STEPS - 2;
        let kill = Duration::from_millis(rng.gen_range(50..1200));
        let (acked, counters) = load_and_die(&mut srv, &prefix, base, Some(kill), false);
        for op in interrupted(&srv.log_text()) {
            *hit_ops.entry(op).or_default() += 1;
        }
        for (k, v) in counters {
            *totals.entry(k).or_default() += v;
        }
        drop(srv);
        let srv = start(&data, &flags, None, n);
        n += 1;
        verify(
            &srv,
            &prefix,
            base,
            acked,
            &format!("random cycle {cycles}"),
        );
        // older data (rolled up, partly dropped) still answers
        let (status, body) = srv
            .get("/render?target=r*.c0.s00&from=-10min&format=json")
            .unwrap();
        assert_eq!(status, 200, "{body}");
        drop(srv);
        cycles += 1;
    }
    eprintln!(
        "crash_random: {cycles} random kills in {:.1} s; maintenance seen before the kills: {totals:?}; operations interrupted: {hit_ops:?}",
        t_start.elapsed().as_secs_f64()
    );
    assert!(cycles >= 10, "only {cycles} cycles");
    assert!(
        totals.get("seals").copied().unwrap_or(0.0) > 0.0
            && totals.get("compactions").copied().unwrap_or(0.0) > 0.0,
        "maintenance ran during the load: {totals:?}"
    );

    // every failpoint, once each
    let mut fired = Vec::new();
    for (i, fp) in sumi_store::failpoint::FAILPOINTS.iter().enumerate() {
        let mut srv = start(&data, &flags, Some(fp), n);
        n += 1;
        let prefix = format!("f{i}");
        let base = now() - STEPS - 2;
        let (acked, _) = load_and_die(&mut srv, &prefix, base, Some(Duration::from_secs(8)), true);
        let log = srv.log_text();
        if log.contains(&format!("sumi failpoint {fp} fired")) {
            fired.push(*fp);
        }
        drop(srv);
        let srv = start(&data, &flags, None, n);
        n += 1;
        verify(&srv, &prefix, base, acked, &format!("failpoint {fp}"));
        drop(srv);
    }
    eprintln!("crash_random: failpoints fired: {fired:?}");
    assert_eq!(
        fired,
        sumi_store::failpoint::FAILPOINTS.to_vec(),
        "every failpoint was reached and recovered from"
    );
}
