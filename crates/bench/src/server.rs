//! The server under test: one the bench starts and stops itself, or one already running.
//!
//! A started server runs `<bin> serve --data-dir <tmp>/data --carbon 127.0.0.1:<free>
//! --pickle 127.0.0.1:<free> --http 127.0.0.1:<free>` with its output in `<tmp>/server.log`;
//! it is stopped with SIGTERM, then SIGKILL after a bound, and the temporary directory is
//! removed unless asked to keep it. [`OwnServer::stop`] does this and says how it went;
//! `Drop` is only a backstop that kills the process on an early return.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::args::BenchArgs;
use crate::error::BenchError;
use crate::http;

/// Where the server under test listens and what can be measured of it.
#[derive(Debug)]
pub struct Target {
    /// Carbon plaintext `host:port`.
    pub carbon: String,
    /// HTTP `host:port`.
    pub http: String,
    /// Process to read CPU and RSS from, when known.
    pub pid: Option<u32>,
    /// Directory to measure bytes on disk of, when known.
    pub data_dir: Option<PathBuf>,
    /// The server the bench started, if it did.
    pub own: Option<OwnServer>,
}

impl Target {
    /// The running server named by `--carbon`, `--http`, `--pid` and `--data-dir`.
    pub fn external(
        carbon: String,
        http: String,
        pid: Option<u32>,
        data_dir: Option<PathBuf>,
    ) -> Target {
        Target {
            carbon,
            http,
            pid,
            data_dir,
            own: None,
        }
    }

    /// Starts a server from `args` (see the module doc).
    pub fn start(args: &BenchArgs) -> Result<Target, BenchError> {
        let own = OwnServer::start(args)?;
        Ok(Target {
            carbon: own.carbon.clone(),
            http: own.http.clone(),
            pid: Some(own.pid),
            data_dir: Some(own.data_dir.clone()),
            own: Some(own),
        })
    }

    /// Fails if the server the bench started has exited (always fine for an external one).
    pub fn check_alive(&mut self, phase: &'static str) -> Result<(), BenchError> {
        match &mut self.own {
            Some(own) => own.check_alive(phase),
            None => Ok(()),
        }
    }

    /// Polls `GET /health` until it answers 200, within `timeout`.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), BenchError> {
        let start = Instant::now();
        loop {
            self.check_alive("startup")?;
            let last = match http::get(&self.http, "/health", Duration::from_secs(2)) {
                Ok(r) if r.status == 200 => return Ok(()),
                Ok(r) => format!(
                    "status {}: {}",
                    r.status,
                    crate::procfs::truncate(&String::from_utf8_lossy(&r.body), 200)
                ),
                Err(e) => e.to_string(),
            };
            if start.elapsed() >= timeout {
                self.check_alive("startup")?;
                return Err(BenchError::NotReady {
                    addr: self.http.clone(),
                    secs: timeout.as_secs(),
                    last,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// How stopping the started server went.
#[derive(Clone, Copy, Debug)]
pub struct Stopped {
    /// Seconds from SIGTERM to exit.
    pub secs: f64,
    /// Whether it needed SIGKILL.
    pub killed: bool,
}

/// A server process the bench started, with its temporary directory.
#[derive(Debug)]
pub struct OwnServer {
    child: Child,
    /// The executable started.
    pub bin: PathBuf,
    /// Its process id.
    pub pid: u32,
    /// Carbon plaintext `127.0.0.1:port`.
    pub carbon: String,
    /// HTTP `127.0.0.1:port`.
    pub http: String,
    /// The temporary directory holding `data/` and `server.log`.
    pub root: PathBuf,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// Where its stdout and stderr go.
    pub log_path: PathBuf,
    keep: bool,
    exited: bool,
    removed: bool,
}

impl OwnServer {
    fn start(args: &BenchArgs) -> Result<OwnServer, BenchError> {
        let bin = match &args.server_bin {
            Some(b) => b.clone(),
            None => {
                std::env::current_exe().map_err(|e| BenchError::io("find this executable", e))?
            }
        };
        let root = make_temp_dir()?;
        let data_dir = root.join("data");
        let log_path = root.join("server.log");
        let cleanup_on_error = |e: BenchError| {
            if !args.keep {
                let _ = std::fs::remove_dir_all(&root);
            }
            e
        };
        std::fs::create_dir(&data_dir)
            .map_err(|e| BenchError::io(format!("create {}", data_dir.display()), e))
            .map_err(cleanup_on_error)?;
        let [carbon, pickle, http] = free_ports().map_err(cleanup_on_error)?;
        let log = File::create(&log_path)
            .map_err(|e| BenchError::io(format!("create {}", log_path.display()), e))
            .map_err(cleanup_on_error)?;
        let log_err = log
            .try_clone()
            .map_err(|e| BenchError::io(format!("reopen {}", log_path.display()), e))
            .map_err(cleanup_on_error)?;
        let mut cmd = Command::new(&bin);
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--carbon")
            .arg(&carbon)
            .arg("--pickle")
            .arg(&pickle)
            .arg("--http")
            .arg(&http);
        if let Some(f) = &args.storage_schemas {
            cmd.arg("--storage-schemas").arg(f);
        }
        if let Some(f) = &args.storage_aggregation {
            cmd.arg("--storage-aggregation").arg(f);
        }
        cmd.args(&args.server_args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = cmd
            .spawn()
            .map_err(|e| BenchError::io(format!("start {} serve", bin.display()), e))
            .map_err(cleanup_on_error)?;
        Ok(OwnServer {
            bin,
            pid: child.id(),
            child,
            carbon,
            http,
            root,
            data_dir,
            log_path,
            keep: args.keep,
            exited: false,
            removed: false,
        })
    }

    fn check_alive(&mut self, phase: &'static str) -> Result<(), BenchError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                self.exited = true;
                Err(BenchError::ServerExited {
                    phase,
                    status: status.to_string(),
                    log_path: self.log_path.display().to_string(),
                    log_tail: log_tail(&self.log_path, 20),
                })
            }
            Err(e) => Err(BenchError::io(
                format!("wait for server pid {}", self.pid),
                e,
            )),
        }
    }

    /// Sends SIGTERM, waits up to `timeout` for the exit, then sends SIGKILL.
    pub fn stop(&mut self, timeout: Duration) -> Result<Stopped, BenchError> {
        let start = Instant::now();
        if self.exited {
            return Ok(Stopped {
                secs: 0.0,
                killed: false,
            });
        }
        let pid = libc::pid_t::try_from(self.pid)
            .map_err(|_| BenchError::Args(format!("pid {} out of range", self.pid)))?;
        // SAFETY: kill only sends a signal; `pid` is our own child, not yet reaped (reaping
        // happens below through `Child`), so the id cannot have been reused.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(BenchError::io(
                format!("send SIGTERM to server pid {}", self.pid),
                e,
            ));
        }
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => {
                    self.exited = true;
                    return Ok(Stopped {
                        secs: start.elapsed().as_secs_f64(),
                        killed: false,
                    });
                }
                Ok(None) if start.elapsed() < timeout => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(BenchError::io(
                        format!("wait for server pid {}", self.pid),
                        e,
                    ))
                }
            }
        }
        let kill = self.child.kill();
        let wait = self.child.wait();
        self.exited = true;
        kill.map_err(|e| BenchError::io(format!("kill server pid {}", self.pid), e))?;
        wait.map_err(|e| BenchError::io(format!("wait for server pid {}", self.pid), e))?;
        Ok(Stopped {
            secs: start.elapsed().as_secs_f64(),
            killed: true,
        })
    }

    /// Removes the temporary directory unless `--keep`; returns the kept path if kept.
    pub fn remove_dir(&mut self) -> Result<Option<PathBuf>, BenchError> {
        if self.keep {
            return Ok(Some(self.root.clone()));
        }
        self.removed = true;
        std::fs::remove_dir_all(&self.root)
            .map_err(|e| BenchError::io(format!("remove {}", self.root.display()), e))?;
        Ok(None)
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        if !self.exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if !self.keep && !self.removed {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// A new directory `sumi-bench-<pid>-<nanos>` under the system temporary directory.
fn make_temp_dir() -> Result<PathBuf, BenchError> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!(
            "sumi-bench-{}-{nanos}-{attempt}",
            std::process::id()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(BenchError::io(format!("create {}", dir.display()), e)),
        }
    }
    Err(BenchError::io(
        format!("create a directory under {}", base.display()),
        std::io::Error::new(std::io::ErrorKind::AlreadyExists, "100 names taken"),
    ))
}

/// Three distinct free loopback ports (`127.0.0.1:port`), found by binding port 0. The
/// listeners are closed before the server binds, so another process could take a port in
/// between; the server then fails to start and says so in its log.
fn free_ports() -> Result<[String; 3], BenchError> {
    let bind = || {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| Ok((l.local_addr()?, l)))
            .map_err(|e| BenchError::io("bind a free port on 127.0.0.1", e))
    };
    // All three are held at once, so they differ.
    let (a, _la) = bind()?;
    let (b, _lb) = bind()?;
    let (c, _lc) = bind()?;
    Ok([a.to_string(), b.to_string(), c.to_string()])
}

/// The last `lines` lines of the file at `path` (at most 64 KiB read), or why not.
fn log_tail(path: &Path, lines: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let read = || -> std::io::Result<String> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            let tail = &all[all.len().saturating_sub(lines)..];
            if tail.is_empty() {
                "(empty)".to_string()
            } else {
                tail.join("\n")
            }
        }
        Err(e) => format!("(cannot read it: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn args(argv: &[&str]) -> BenchArgs {
        Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied()))
            .expect("valid arguments")
            .args
    }

    /// A shell script standing in for the server binary.
    fn script(name: &str, body: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sumi-bench-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("server.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn free_ports_are_distinct_loopback_addresses() {
        let ports = free_ports().expect("ports");
        assert!(ports.iter().all(|p| p.starts_with("127.0.0.1:")));
        assert_ne!(ports[0], ports[1]);
        assert_ne!(ports[1], ports[2]);
        assert_ne!(ports[0], ports[2]);
    }

    #[test]
    fn a_server_that_exits_at_once_is_reported_with_its_log() {
        let bin = script("exits", "echo \"bad flag: $1 $2\" >&2\nexit 3");
        let a = args(&["--server-bin", bin.to_str().expect("utf-8 path")]);
        let mut target = Target::start(&a).expect("spawned");
        let root = target.own.as_ref().expect("own").root.clone();
        let err = target
            .wait_ready(Duration::from_secs(10))
            .expect_err("exits");
        let msg = err.to_string();
        assert!(matches!(err, BenchError::ServerExited { .. }), "{msg}");
        assert!(msg.contains("bad flag: serve --data-dir"), "{msg}");
        drop(target);
        assert!(!root.exists(), "temp dir removed");
        let _ = std::fs::remove_dir_all(bin.parent().expect("dir"));
    }

    #[test]
    fn a_server_that_never_answers_times_out_and_is_stopped() {
        // `exec` so that SIGTERM reaches sleep itself.
        let bin = script("silent", "exec sleep 30");
        let a = args(&["--server-bin", bin.to_str().expect("utf-8 path"), "--keep"]);
        let mut target = Target::start(&a).expect("spawned");
        let start = Instant::now();
        let err = target
            .wait_ready(Duration::from_millis(300))
            .expect_err("not ready");
        assert!(matches!(err, BenchError::NotReady { .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
        let own = target.own.as_mut().expect("own");
        let stopped = own.stop(Duration::from_secs(5)).expect("stops");
        assert!(!stopped.killed, "sleep dies of SIGTERM");
        let kept = own.remove_dir().expect("keep").expect("kept path");
        assert!(kept.join("data").is_dir() && kept.join("server.log").is_file());
        std::fs::remove_dir_all(kept).expect("cleanup");
        let _ = std::fs::remove_dir_all(bin.parent().expect("dir"));
    }

    #[test]
    fn a_server_ignoring_sigterm_is_killed_after_the_bound() {
        let bin = script(
            "stubborn",
            "trap '' TERM\ntouch \"$(dirname \"$0\")/trapped\"\nwhile :; do sleep 0.05; done",
        );
        let a = args(&["--server-bin", bin.to_str().expect("utf-8 path")]);
        let mut target = Target::start(&a).expect("spawned");
        // SIGTERM must come after the trap is in place.
        let marker = bin.with_file_name("trapped");
        let start = Instant::now();
        while !marker.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "script never ran"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let own = target.own.as_mut().expect("own");
        let stopped = own.stop(Duration::from_millis(300)).expect("stops");
        assert!(stopped.killed);
        own.remove_dir().expect("removed");
        let _ = std::fs::remove_dir_all(bin.parent().expect("dir"));
    }
}
