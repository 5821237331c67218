//! Shared by the Kafka cluster tests (`#[path = "common/kafka.rs"] mod kafka;`): a
//! cluster started by the repository's own scripts (`scripts/cluster-up.sh`) in a
//! scratch directory and stopped by `scripts/cluster-down.sh` however the test ends,
//! and the HTTP and carbon helpers the tests read it with.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn script(name: &str) -> PathBuf {
    repo().join("scripts").join(name)
}

/// Fails (never skips) when a command the scripts need is missing.
pub fn require(cmd: &str, package: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`{cmd}` not found: the Kafka cluster tests need it (apt-get install {package}; .ci/run does)"
    );
}

/// Java and Maven, which the scripts start Kafka with.
pub fn require_kafka() {
    require("java", "default-jre-headless");
    require("mvn", "maven");
}

/// The cluster, stopped by scripts/cluster-down.sh however the test ends.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub env: BTreeMap<String, String>,
}

impl Cluster {
    /// `cluster-up.sh` in a new scratch directory (`prefix`), with `--no-selfmon` and,
    /// when given, `--storage-schemas` of the text `schemas`, and the environment
    /// `vars` (SUMI_CLUSTER_PARTITIONS, ...).
    pub fn up(prefix: &str, schemas: Option<&str>, vars: &[(&str, String)]) -> Cluster {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        let mut serve_args = "--no-selfmon".to_string();
        if let Some(text) = schemas {
            let path = dir.path().join("schemas.conf");
            std::fs::write(&path, text).unwrap();
            serve_args.push_str(&format!(" --storage-schemas {}", path.display()));
        }
        Self::up_in(dir, &serve_args, vars)
    }

    /// `cluster-up.sh` in a new scratch directory (`prefix`), with `--no-selfmon` and
    /// carbon's rules as the texts `schemas` (`--storage-schemas`) and `aggregation`
    /// (`--storage-aggregation`).
    pub fn up_with_rules(prefix: &str, schemas: &str, aggregation: &str) -> Cluster {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        let (s, a) = (
            dir.path().join("storage-schemas.conf"),
            dir.path().join("storage-aggregation.conf"),
        );
        std::fs::write(&s, schemas).unwrap();
        std::fs::write(&a, aggregation).unwrap();
        let serve_args = format!(
            "--no-selfmon --storage-schemas {} --storage-aggregation {}",
            s.display(),
            a.display()
        );
        Self::up_in(dir, &serve_args, &[])
    }

    /// `cluster-up.sh` in `dir` with `SUMI_SERVE_ARGS=serve_args`.
    pub fn up_in(dir: tempfile::TempDir, serve_args: &str, vars: &[(&str, String)]) -> Cluster {
        let mut c = Cluster {
            dir,
            env: BTreeMap::new(),
        };
        let out = Command::new(script("cluster-up.sh"))
            .arg(c.dir.path())
            .env("SUMI_BIN", env!("CARGO_BIN_EXE_sumi"))
            .env("SUMI_SERVE_ARGS", serve_args)
            .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .unwrap();
        c.reload();
        assert!(
            out.status.success(),
            "cluster-up.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        c
    }

    /// Reads `cluster.env` and `kafka.env` again.
    pub fn reload(&mut self) {
        let mut env = BTreeMap::new();
        for f in ["cluster.env", "kafka.env"] {
            let text = std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
            env.extend(
                text.lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
        }
        self.env = env;
    }

    pub fn get(&self, key: &str) -> String {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("{key} not in cluster.env: {:?}", self.env))
            .clone()
    }

    /// The partitions storage node `n` owns (`NODE<n>_PARTITIONS`).
    pub fn partitions_of(&self, n: u32) -> Vec<u32> {
        self.get(&format!("NODE{n}_PARTITIONS"))
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap())
            .collect()
    }

    /// Runs a script with the cluster's directory first; its stdout. Panics on failure.
    pub fn script(&mut self, name: &str, args: &[&str]) -> String {
        let out = Command::new(script(name))
            .arg(self.dir.path())
            .args(args)
            .output()
            .unwrap();
        self.reload();
        assert!(
            out.status.success(),
            "{name} {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `cluster-node.sh DIR cmd n`.
    pub fn node(&mut self, cmd: &str, n: u32) {
        self.node_with(cmd, n, &[]);
    }

    pub fn node_with(&mut self, cmd: &str, n: u32, extra: &[&str]) {
        let n = n.to_string();
        let mut args = vec![cmd, n.as_str()];
        args.extend_from_slice(extra);
        self.script("cluster-node.sh", &args);
    }

    /// `kafka-node.sh DIR cmd 1` (the single broker).
    pub fn kafka(&mut self, cmd: &str) {
        self.broker(cmd, 1);
    }

    /// `kafka-node.sh DIR cmd n`.
    pub fn broker(&mut self, cmd: &str, n: u32) {
        self.script("kafka-node.sh", &[cmd, &n.to_string()]);
    }

    /// A file of the cluster's directory (`node2/sumi.log`, `kafka1/kafka.log`).
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// Node `n`'s log.
    pub fn log(&self, n: u32) -> String {
        self.file(&format!("node{n}/sumi.log"))
    }

    /// Node `n`'s sumi.toml.
    pub fn config(&self, n: u32) -> PathBuf {
        self.dir.path().join(format!("node{n}/sumi.toml"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script("cluster-down.sh"))
            .arg(self.dir.path())
            .status();
    }
}

/// `GET` → (status, `X-Sumi-Partial`, body); panics only when there is no answer.
pub fn get(addr: &str, path: &str) -> (u16, Option<String>, String) {
    let url = format!("http://{addr}{path}");
    let resp = match ureq::get(&url).timeout(Duration::from_secs(30)).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {url}: {e}"),
    };
    let partial = resp.header("x-sumi-partial").map(str::to_string);
    (
        resp.status(),
        partial,
        resp.into_string().unwrap_or_default(),
    )
}

/// `POST`s a form → (status, `X-Sumi-Partial`, JSON answer); panics only when there is
/// no answer or it is not JSON.
pub fn post_form(
    addr: &str,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, Option<String>, serde_json::Value) {
    let resp = ureq::post(&format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(120))
        .send_form(form);
    let r = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {path} to {addr}: {e}"),
    };
    let status = r.status();
    let partial = r.header("x-sumi-partial").map(str::to_string);
    let body = r.into_string().unwrap();
    let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, partial, v)
}

/// Waits up to `secs` until `check` holds (it answers what it saw otherwise, which the
/// panic then names).
pub fn eventually(what: &str, secs: u64, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if std::time::Instant::now() > deadline => panic!("{what}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// `GET` that must succeed; the body.
pub fn http_get(addr: &str, path: &str) -> String {
    ureq::get(&format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(10))
        .call()
        .unwrap_or_else(|e| panic!("GET {path} on {addr}: {e}"))
        .into_string()
        .unwrap()
}

/// A metric line's value (`name` with its labels), 0 when absent.
pub fn metric(addr: &str, name: &str) -> f64 {
    http_get(addr, "/metrics")
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Waits up to `secs` for the ingest node at `addr` to have Kafka acknowledge `total`
/// points; the panic message ends with `context()` (a log, say).
pub fn wait_produced(addr: &str, total: f64, secs: u64, context: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let produced = metric(addr, "sumi_cluster_produce_points_total");
        if produced >= total {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the ingest node had Kafka acknowledge {produced} of {total} points{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sends carbon plaintext over one connection and waits until the server has read it
/// all (it closes its side after our shutdown).
pub fn send_carbon(addr: &str, text: &str) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = [0u8; 64];
    let _ = s.read(&mut buf);
}

/// series → ts → value.
pub type Points = BTreeMap<String, BTreeMap<i64, f64>>;

/// The non-null points of a `/render` JSON answer.
pub fn points_of(body: &str) -> Points {
    let v: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("not a render answer ({e}): {body:.200}"));
    let mut out = BTreeMap::new();
    for s in v.as_array().unwrap() {
        let mut pts = BTreeMap::new();
        for p in s["datapoints"].as_array().unwrap() {
            if let Some(val) = p[0].as_f64() {
                pts.insert(p[1].as_i64().unwrap(), val);
            }
        }
        if !pts.is_empty() {
            out.insert(s["target"].as_str().unwrap().to_string(), pts);
        }
    }
    out
}

/// Every non-null point of `load.*` a node stores itself (`local=1`), or, without
/// `local`, that the node answers for the whole cluster.
pub fn rendered(addr: &str, from: i64, until: i64, local: bool) -> Points {
    points_of(&http_get(
        addr,
        &format!(
            "/render?target=load.*&from={from}&until={until}&format=json{}",
            if local { "&local=1" } else { "" }
        ),
    ))
}

/// Points missing or wrong in `got` against `want`, and series in `got` not wanted.
pub fn diff(want: &Points, got: &Points) -> (usize, usize) {
    let missing = want
        .iter()
        .map(|(k, v)| {
            let g = got.get(k);
            v.iter()
                .filter(|(ts, val)| g.and_then(|g| g.get(ts)) != Some(val))
                .count()
        })
        .sum();
    let extra = got.keys().filter(|k| !want.contains_key(*k)).count();
    (missing, extra)
}

/// Waits up to `secs` for storage node `n` to hold exactly `want` of `load.*` itself.
pub fn wait_local(cluster: &Cluster, n: u32, want: &Points, from: i64, until: i64, secs: u64) {
    let addr = cluster.get(&format!("NODE{n}_HTTP"));
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let got = rendered(&addr, from, until, true);
        if diff(want, &got) == (0, 0) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node {n}: {:?} (missing, extra) points; its log:\n{}",
            diff(want, &got),
            cluster.log(n)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Now, in Unix seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
