//! `sumi relay` as a real process in front of real destinations: two carbon
//! plaintext sinks in this test (TCP listeners that record every line in arrival
//! order) on carbon's consistent-hashing ring, and a real `sumi serve` receiving a
//! copy of everything over pickle.
//!
//! - placement: each sink receives exactly the names carbon's ring gives it (the
//!   ring itself is proven against carbon 1.1.10 in crates/relay/tests/carbon_diff.rs);
//! - a destination down: its points wait in its queue (seen in `/metrics`), and when
//!   it is back it receives them, all, in order;
//! - `SIGKILL` of the relay while a slow destination drains its backlog: the restarted
//!   relay delivers the rest; every accepted point arrives, in order.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{parse_metric, scratch, Sumi};
use sumi_relay::hashing::{Destination, HashRing, HashType};

/// A carbon plaintext destination that records lines in arrival order.
struct Sink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    /// Connections still being read.
    open: Arc<AtomicUsize>,
    /// While set, nothing is read: the kernel's buffers fill and the sender blocks.
    paused: Arc<AtomicBool>,
}

impl Sink {
    fn start(addr: &str, lines: Arc<Mutex<Vec<String>>>) -> Sink {
        let l = TcpListener::bind(addr).expect("bind sink");
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let open = Arc::new(AtomicUsize::new(0));
        let paused = Arc::new(AtomicBool::new(false));
        let (st, cs, ls, op) = (stop.clone(), conns.clone(), lines.clone(), open.clone());
        let pa = paused.clone();
        std::thread::spawn(move || {
            for c in l.incoming() {
                if st.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(c) = c else { continue };
                cs.lock().unwrap().push(c.try_clone().unwrap());
                let ls = ls.clone();
                let op = op.clone();
                let pa = pa.clone();
                op.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _done = Decrement(op);
                    let mut r = BufReader::with_capacity(4096, c);
                    let mut line = String::new();
                    loop {
                        while pa.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        line.clear();
                        match r.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line.ends_with('\n') => {
                                ls.lock().unwrap().push(line.trim_end().to_string());
                            }
                            Ok(_) => return,
                        }
                    }
                });
            }
        });
        Sink {
            addr,
            stop,
            conns,
            open,
            paused,
        }
    }

    /// Closes the listener and every connection, as a killed process would.
    fn kill(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

struct Decrement(Arc<AtomicUsize>);
impl Drop for Decrement {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Relay {
    child: Child,
    plaintext: SocketAddr,
    pickle: SocketAddr,
    http: SocketAddr,
    log: PathBuf,
}

impl Relay {
    fn start(config: &Path) -> Relay {
        let dir = config.parent().unwrap();
        let ready = dir.join("relay.ready.json");
        let _ = std::fs::remove_file(&ready);
        let log = dir.join("relay.log");
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_sumi"))
            .args(["relay", "--config"])
            .arg(config)
            .arg("--ready-file")
            .arg(&ready)
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("spawn sumi relay");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(text) = std::fs::read_to_string(&ready) {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                return Relay {
                    child,
                    plaintext: v["plaintext"][0].as_str().unwrap().parse().unwrap(),
                    pickle: v["pickle"][0].as_str().unwrap().parse().unwrap(),
                    http: v["http"].as_str().unwrap().parse().unwrap(),
                    log,
                };
            }
            if let Some(s) = child.try_wait().unwrap() {
                panic!(
                    "relay exited at start ({s}): {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "relay not ready in 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn metrics(&self) -> String {
        let url = format!("http://{}/metrics", self.http);
        ureq::get(&url)
            .timeout(Duration::from_secs(10))
            .call()
            .unwrap()
            .into_string()
            .unwrap()
    }

    fn metric(&self, sample: &str) -> f64 {
        parse_metric(&self.metrics(), sample)
    }

    fn wait_metric(&self, sample: &str, want: f64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.metric(sample);
            if got >= want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{sample} = {got}, want {want}\n{}",
                self.metrics()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&self, text: &[u8]) {
        let mut s = TcpStream::connect(self.plaintext).unwrap();
        s.write_all(text).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut b = [0u8; 1];
        let _ = s.read(&mut b);
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn wait_lines(lines: &Arc<Mutex<Vec<String>>>, want: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = lines.lock().unwrap().len();
        if n >= want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {n} lines of {want}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn relay_places_as_carbon_and_a_dead_destination_gets_its_backlog_in_order() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("sumi"), &[]);
    let a_lines = Arc::new(Mutex::new(Vec::new()));
    let b_lines = Arc::new(Mutex::new(Vec::new()));
    let a = Sink::start("127.0.0.1:0", a_lines.clone());
    let b = Sink::start("127.0.0.1:0", b_lines.clone());
    let dests = [format!("{}:a", a.addr), format!("{}:b", b.addr)];
    let config = dir.path().join("relay.toml");
    std::fs::write(
        &config,
        format!(
            "queue_dir = \"queue\"\n\
             [listen]\nplaintext = [\"127.0.0.1:0\"]\npickle = [\"127.0.0.1:0\"]\nhttp = \"127.0.0.1:0\"\n\
             [route]\nmethod = \"consistent-hashing\"\nreplication_factor = 1\n\
             [[destination]]\naddress = \"{}\"\nprotocol = \"plaintext\"\n\
             [[destination]]\naddress = \"{}\"\nprotocol = \"plaintext\"\n\
             [sumi]\naddress = \"{}\"\nprotocol = \"pickle\"\n",
            dests[0], dests[1], sumi.pickle
        ),
    )
    .unwrap();
    let relay = Relay::start(&config);

    let ring = HashRing::new(
        &dests
            .iter()
            .map(|d| Destination::parse(d).unwrap())
            .collect::<Vec<_>>(),
        HashType::CarbonCh,
    )
    .unwrap();
    let t0 = (common::now() - 3600) / 60 * 60;
    let round = |r: i64| -> (Vec<u8>, [Vec<String>; 2]) {
        let mut text = Vec::new();
        let mut want: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut out = Vec::new();
        for i in 0..500 {
            let name = format!("relay.test.host{}.m{}", i % 7, i);
            let line = format!("{name} {:?} {}", i as f64 + r as f64 / 4.0, t0 + r * 60);
            ring.place(name.as_bytes(), 1, true, &mut out);
            want[out[0]].push(line.clone());
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
        }
        (text, want)
    };
    let mut want_a = Vec::new();
    let mut want_b = Vec::new();
    let (text, want) = round(0);
    relay.send(&text);
    want_a.extend(want[0].clone());
    want_b.extend(want[1].clone());
    wait_lines(&a_lines, want_a.len(), "sink a");
    wait_lines(&b_lines, want_b.len(), "sink b");
    assert!(!want_a.is_empty() && !want_b.is_empty());
    assert_eq!(*a_lines.lock().unwrap(), want_a);
    assert_eq!(*b_lines.lock().unwrap(), want_b);

    // b goes down; three more rounds arrive at the relay.
    b.kill();
    std::thread::sleep(Duration::from_millis(100));
    for r in 1..4 {
        let (text, want) = round(r);
        relay.send(&text);
        want_a.extend(want[0].clone());
        want_b.extend(want[1].clone());
    }
    wait_lines(&a_lines, want_a.len(), "sink a while b is down");
    let b_label = format!("destination=\"{}\"", dests[1]);
    let queued_b = relay.metric(&format!("sumi_relay_queue_points{{{b_label}}}"));
    assert_eq!(
        queued_b as usize,
        want_b.len() - b_lines.lock().unwrap().len()
    );
    assert_eq!(
        relay.metric(&format!("sumi_relay_destination_up{{{b_label}}}")),
        0.0
    );

    // b is back on the same port: it gets the backlog, in order, nothing twice.
    let b2 = Sink::start(&b.addr.to_string(), b_lines.clone());
    wait_lines(&b_lines, want_b.len(), "sink b after restart");
    relay.wait_metric(
        &format!("sumi_relay_sent_points_total{{{b_label}}}"),
        want_b.len() as f64,
    );
    assert_eq!(*a_lines.lock().unwrap(), want_a);
    assert_eq!(*b_lines.lock().unwrap(), want_b);
    assert_eq!(
        relay.metric(&format!("sumi_relay_queue_points{{{b_label}}}")),
        0.0
    );
    assert_eq!(
        relay.metric(&format!("sumi_relay_dropped_points_total{{{b_label}}}")),
        0.0
    );

    // sumi got a copy of everything over pickle, values intact.
    sumi.wait_stored(2000);
    let json = sumi.get_json(&format!(
        "/render?target=relay.test.host3.m3&from={}&until={}&format=json",
        t0 - 60,
        t0 + 300
    ));
    let pts = common::points_of(&json, 0);
    assert_eq!(
        pts,
        (0..4)
            .map(|r| (3.0 + r as f64 / 4.0, t0 + r * 60))
            .collect::<Vec<_>>()
    );
    b2.kill();
    a.kill();
}

#[test]
fn sigkill_of_the_relay_loses_nothing_it_accepted() {
    let dir = scratch();
    let lines = Arc::new(Mutex::new(Vec::new()));
    // A slow destination: the relay holds a backlog while it drains. It is bound
    // before the relay is configured, so no other test can take its port.
    let sink = Sink::start("127.0.0.1:0", lines.clone());
    let sink_addr = sink.addr;
    let config = dir.path().join("relay.toml");
    std::fs::write(
        &config,
        format!(
            "queue_dir = \"queue\"\n\
             [listen]\nplaintext = [\"127.0.0.1:0\"]\npickle = [\"127.0.0.1:0\"]\nhttp = \"127.0.0.1:0\"\n\
             [[destination]]\naddress = \"{sink_addr}\"\nprotocol = \"plaintext\"\n"
        ),
    )
    .unwrap();
    let mut relay = Relay::start(&config);
    // Let a little through, then stall the destination so the relay holds a backlog.
    relay.send(b"kill.test.first 1 1700000000\n");
    wait_lines(&lines, 1, "first line");
    sink.paused.store(true, Ordering::SeqCst);
    let n = 300_000usize;
    let t0 = common::now() - 7200;
    let mut text = Vec::new();
    let mut want = vec!["kill.test.first 1.0 1700000000".to_string()];
    for i in 0..n {
        let line = format!(
            "kill.test.s{} {:?} {}",
            i % 50,
            i as f64,
            t0 + (i / 50) as i64
        );
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
        want.push(line);
    }
    // Half over plaintext, half over pickle (as carbon-relay would send it).
    let half = text.len() / 2;
    let cut = half + text[half..].iter().position(|&c| c == b'\n').unwrap() + 1;
    relay.send(&text[..cut]);
    let mut pickle = Vec::new();
    sumi_relay::wire::push_pickle(&mut pickle, &text[cut..]);
    let mut s = TcpStream::connect(relay.pickle).unwrap();
    s.write_all(&pickle).unwrap();
    drop(s);
    let label = format!("{{destination=\"{sink_addr}\"}}");
    relay.wait_metric(
        &format!("sumi_relay_queued_points_total{label}"),
        n as f64 + 1.0,
    );
    let sent = relay.metric(&format!("sumi_relay_sent_points_total{label}"));
    assert!(
        sent < n as f64 + 1.0,
        "the sink drained everything before the kill ({sent})"
    );
    relay.kill9();
    let log = relay.log.clone();
    drop(relay);
    sink.paused.store(false, Ordering::SeqCst);
    // What the killed relay had written into its socket still reaches the sink; let
    // that connection end first, so the sink sees one connection at a time.
    let deadline = Instant::now() + Duration::from_secs(60);
    while sink.open.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < deadline, "the old connection stays open");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = lines.lock().unwrap().len();
    assert!(before < n, "everything arrived before the restart");

    let relay = Relay::start(&config);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = lines.lock().unwrap().clone();
        let mut firsts = std::collections::HashSet::new();
        let unique: Vec<&String> = got.iter().filter(|l| firsts.insert(l.as_str())).collect();
        if unique.len() > n {
            // Every accepted point arrived, in the order sent; at most the batch in
            // flight at the kill came twice.
            if let Some(i) = (0..=n).find(|&i| *unique[i] != want[i]) {
                panic!("line {i}: got {:?}, want {:?}", unique[i], want[i]);
            }
            assert!(
                got.len() - n - 1 <= 50_000,
                "{} duplicates",
                got.len() - n - 1
            );
            // The restarted relay sent at least what was left in the queue.
            relay.wait_metric(
                &format!("sumi_relay_sent_points_total{label}"),
                n as f64 + 1.0 - sent,
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} lines after restart (had {before} before the kill)\n{}",
            unique.len(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    sink.kill();
}

/// `[queue] fsync = "batch"`: every append to a queue is forced to disk before the
/// relay counts it accepted (`sumi_relay_queue_fsyncs_total`), and delivery is as
/// without it: everything, in order.
#[test]
fn batch_fsync_forces_each_append_to_disk_and_delivers_in_order() {
    let dir = scratch();
    let lines = Arc::new(Mutex::new(Vec::new()));
    // bound before the relay is configured, so no other test can take its port
    let sink = Sink::start("127.0.0.1:0", lines.clone());
    let sink_addr = sink.addr;
    let config = dir.path().join("relay.toml");
    std::fs::write(
        &config,
        format!(
            "queue_dir = \"queue\"\n\
             [listen]\nplaintext = [\"127.0.0.1:0\"]\npickle = [\"127.0.0.1:0\"]\nhttp = \"127.0.0.1:0\"\n\
             [queue]\nfsync = \"batch\"\n\
             [[destination]]\naddress = \"{sink_addr}\"\nprotocol = \"plaintext\"\n"
        ),
    )
    .unwrap();
    let relay = Relay::start(&config);
    let n = 2000;
    let mut want = Vec::new();
    for round in 0..4 {
        let mut text = Vec::new();
        for i in 0..n / 4 {
            let line = format!("fsync.test.s{i} {:?} 1700000000", f64::from(round));
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
            want.push(line);
        }
        relay.send(&text);
    }
    wait_lines(&lines, n as usize, "every line");
    assert_eq!(*lines.lock().unwrap(), want);
    let label = format!("{{destination=\"{sink_addr}\"}}");
    let fsyncs = relay.metric(&format!("sumi_relay_queue_fsyncs_total{label}"));
    assert!(fsyncs >= 1.0, "no append was synced");
    assert!(
        fsyncs <= f64::from(n),
        "at most one sync an append: {fsyncs}"
    );
}
