//! Starts the real `sumi` binary on ephemeral loopback ports and talks to it with the
//! real protocols: carbon plaintext over TCP/UDP and HTTP.

#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sumi {
    child: Option<Child>,
    pub carbon: SocketAddr,
    pub pickle: SocketAddr,
    pub http: SocketAddr,
    pub pid: u32,
    pub data_dir: PathBuf,
    pub log: PathBuf,
}

/// A scratch directory removed at the end of the test.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sumi-test-")
        .tempdir()
        .expect("temp dir")
}

impl Sumi {
    /// Starts `sumi serve` on `data_dir` with port 0 everywhere, plus `extra` flags, and
    /// waits (bounded) until it serves.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Sumi {
        std::fs::create_dir_all(data_dir).expect("data dir");
        let ready = data_dir.with_extension("ready.json");
        let _ = std::fs::remove_file(&ready);
        let log = data_dir.with_extension("log");
        let log_file = std::fs::File::create(&log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_sumi"))
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .args([
                "--carbon",
                "127.0.0.1:0",
                "--pickle",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
            ])
            .arg("--ready-file")
            .arg(&ready)
            .args(extra)
            // SUMI_TEST_LOG=debug (an EnvFilter) to see more of the server in a failure
            .env(
                "RUST_LOG",
                std::env::var("SUMI_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("spawn sumi");
        let pid = child.id();
        let mut sumi = Sumi {
            child: Some(child),
            carbon: "127.0.0.1:0".parse().unwrap(),
            pickle: "127.0.0.1:0".parse().unwrap(),
            http: "127.0.0.1:0".parse().unwrap(),
            pid,
            data_dir: data_dir.to_path_buf(),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(text) = std::fs::read_to_string(&ready) {
                let v: serde_json::Value = serde_json::from_str(&text).expect("ready file is JSON");
                sumi.carbon = v["carbon"].as_str().unwrap().parse().unwrap();
                sumi.pickle = v["pickle"].as_str().unwrap().parse().unwrap();
                sumi.http = v["http"].as_str().unwrap().parse().unwrap();
                break;
            }
            if let Some(status) = sumi.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "sumi exited during startup ({status}):\n{}",
                    sumi.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "sumi not ready in 60 s:\n{}",
                sumi.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        sumi
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends text over one carbon plaintext TCP connection and closes it.
    pub fn send_tcp(&self, text: &[u8]) {
        let mut s = TcpStream::connect(self.carbon).expect("connect carbon");
        s.write_all(text).expect("write carbon");
        s.shutdown(std::net::Shutdown::Write).ok();
        // wait for the server to close its side, so every byte has been read
        let mut buf = [0u8; 64];
        s.set_read_timeout(Some(Duration::from_secs(30))).ok();
        let _ = s.read(&mut buf);
    }

    pub fn send_udp(&self, datagram: &[u8]) {
        let s = UdpSocket::bind("127.0.0.1:0").expect("udp bind");
        s.send_to(datagram, self.carbon).expect("udp send");
    }

    /// `GET path` → (status, body).
    pub fn get(&self, path: &str) -> (u16, String) {
        let url = format!("http://{}{}", self.http, path);
        match ureq::get(&url).timeout(Duration::from_secs(30)).call() {
            Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
            Err(e) => panic!("GET {url}: {e}"),
        }
    }

    /// `POST path` with a form body → (status, body).
    pub fn post_form(&self, path: &str, form: &[(&str, &str)]) -> (u16, String) {
        let url = format!("http://{}{}", self.http, path);
        match ureq::post(&url)
            .timeout(Duration::from_secs(30))
            .send_form(form)
        {
            Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
            Err(e) => panic!("POST {url}: {e}"),
        }
    }

    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {body}"))
    }

    /// The value of one sample of `/metrics` (e.g. `sumi_points_stored_total` or
    /// `sumi_points_rejected_total{reason="too_old"}`); 0 when absent.
    pub fn metric(&self, sample: &str) -> f64 {
        let (status, body) = self.get("/metrics");
        assert_eq!(status, 200);
        parse_metric(&body, sample)
    }

    /// Waits until `sample` reaches at least `want`.
    pub fn wait_metric(&self, sample: &str, want: f64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.metric(sample);
            if got >= want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{sample} = {got}, want {want}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_stored(&self, want: u64) {
        self.wait_metric("sumi_points_stored_total", want as f64);
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait for a clean exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            send_sigterm(c.id());
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Some(status) = c.try_wait().unwrap() {
                    assert!(
                        status.success(),
                        "sumi exited with {status}:\n{}",
                        self.log_text()
                    );
                    return;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    panic!("sumi did not stop 60 s after SIGTERM:\n{}", self.log_text());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }
}

impl Drop for Sumi {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn send_sigterm(pid: u32) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    assert!(
        status.map(|s| s.success()).unwrap_or(false),
        "kill -TERM {pid}"
    );
}

pub fn parse_metric(body: &str, sample: &str) -> f64 {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(name, _)| *name == sample)
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .sum()
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The non-null `[value, ts]` pairs of the first series of a render JSON answer.
pub fn points_of(json: &serde_json::Value, series: usize) -> Vec<(f64, i64)> {
    json[series]["datapoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no datapoints in {json}"))
        .iter()
        .filter(|p| !p[0].is_null())
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_i64().unwrap()))
        .collect()
}
