//! Real clients forwarding to the real server: collectd's `write_graphite`, Debian's
//! carbon-c-relay (both carbon plaintext over TCP) and carbon 1.1.10's own `carbon-relay`
//! (pickle). Every test checks that *all* the points a client sent arrive with their
//! exact values and timestamps, not merely that some do.
//!
//! The clients are not Rust: collectd and carbon-c-relay come from Debian packages
//! (`.ci/run` installs them), carbon-relay from PyPI into a venv under the target
//! directory (built on first use, pinned below). A missing client fails the test with
//! the package to install; it is never skipped.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use common::{now, points_of, scratch, Sumi};

/// One-second slots for everything: collectd reports every second, and the relays'
/// points are one second apart, so no point may overwrite another.
const SCHEMAS: &str = "[all]\npattern = .*\nretentions = 1s:1h\n";

/// A client process killed when the test ends, however it ends.
struct Client {
    child: Child,
    name: &'static str,
    log: PathBuf,
}

impl Client {
    fn spawn(name: &'static str, cmd: &mut Command, log: PathBuf) -> Client {
        let out = std::fs::File::create(&log).expect("client log file");
        let err = out.try_clone().expect("client log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        Client { child, name, log }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test if the client has exited.
    fn check_alive(&mut self) {
        if let Some(status) = self.child.try_wait().expect("wait client") {
            panic!("{} exited ({status}):\n{}", self.name, self.log_text());
        }
    }

    /// SIGTERM, then a bounded wait for the exit (collectd flushes its writers then).
    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().expect("wait client").is_none() {
            assert!(
                Instant::now() < deadline,
                "{} still running 20 s after SIGTERM:\n{}",
                self.name,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (bounded) until something accepts TCP connections on `port`.
    fn wait_listening(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            self.check_alive();
            assert!(
                Instant::now() < deadline,
                "{} not listening on port {port} after 30 s:\n{}",
                self.name,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `path` if it is there, or a failure naming the Debian package that provides it.
fn require(path: &str, package: &str) -> PathBuf {
    let p = PathBuf::from(path);
    assert!(
        p.is_file(),
        "{path} is missing: install it with \
         `apt-get install --no-install-recommends {package}` (.ci/run does)"
    );
    p
}

/// A loopback port nobody listens on right now (for clients that need a fixed port).
/// A loopback port for a client program's own listener (it cannot be told port 0).
/// Taken below the kernel's ephemeral range (32768 and up), which is where every
/// port-0 bind of a parallel test lands, so the probe-then-bind gap cannot lose the
/// port to one of them; each call takes the next port, so two calls never agree.
fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 1_000) as u16 * 10;
    for _ in 0..2_700 {
        let port = base + NEXT.fetch_add(1, Ordering::Relaxed) % 2_700;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {base}..{}", base + 2_700);
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The target selecting exactly the series `name`: the name itself, or for a tagged
/// name (`metric;k=v;...`) a `seriesByTag` of its metric and every tag.
fn target_for(name: &str) -> String {
    match name.split_once(';') {
        None => name.to_string(),
        Some((metric, tags)) => {
            let mut exprs = vec![format!("'name={metric}'")];
            exprs.extend(tags.split(';').map(|t| format!("'{t}'")));
            format!("seriesByTag({})", exprs.join(","))
        }
    }
}

/// The non-null points of `name` between `from` and `until`.
fn render(sumi: &Sumi, name: &str, from: i64, until: i64) -> Vec<(f64, i64)> {
    let json = sumi.get_json(&format!(
        "/render?target={}&from={from}&until={until}&format=json",
        encode(&target_for(name))
    ));
    match json.as_array().map(Vec::len) {
        Some(0) => Vec::new(),
        Some(1) => {
            assert_eq!(json[0]["target"], name.to_string(), "{json}");
            points_of(&json, 0)
        }
        _ => panic!("render of {name} gave {json}"),
    }
}

/// Waits (bounded) until every series in `want` renders exactly its points, values
/// within `tolerance` (0 for exact), and fails with the differences otherwise.
fn wait_all_points(sumi: &Sumi, want: &BTreeMap<String, Vec<(f64, i64)>>, tolerance: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut wrong = Vec::new();
        for (name, points) in want {
            let from = points.iter().map(|p| p.1).min().unwrap_or(0) - 5;
            let until = points.iter().map(|p| p.1).max().unwrap_or(0) + 5;
            let mut expect = points.clone();
            expect.sort_by_key(|p| p.1);
            let got = render(sumi, name, from, until);
            let same = got.len() == expect.len()
                && got.iter().zip(&expect).all(|(g, e)| {
                    g.1 == e.1
                        && (g.0 == e.0 || (g.0 - e.0).abs() <= tolerance * e.0.abs().max(1.0))
                });
            if !same {
                wrong.push(format!("{name}: got {got:?}, want {expect:?}"));
            }
        }
        if wrong.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} series differ after 30 s:\n{}\nsumi log:\n{}",
            wrong.len(),
            want.len(),
            wrong.join("\n"),
            sumi.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The names `/metrics/find` lists under `query`.
fn find(sumi: &Sumi, query: &str) -> Vec<String> {
    let json = sumi.get_json(&format!("/metrics/find?query={}", encode(query)));
    let mut names: Vec<String> = json
        .as_array()
        .unwrap_or_else(|| panic!("find {query}: {json}"))
        .iter()
        .map(|n| n["id"].as_str().expect("id").to_string())
        .collect();
    names.sort();
    names
}

/// Starts sumi with one-second slots everywhere.
fn start_sumi(dir: &Path) -> Sumi {
    let schemas = dir.join("storage-schemas.conf");
    std::fs::write(&schemas, SCHEMAS).expect("write schemas");
    Sumi::start(
        &dir.join("data"),
        &["--storage-schemas", schemas.to_str().expect("utf-8 path")],
    )
}

// ---------------------------------------------------------------- collectd

/// collectd's csv output: graphite name → points. A file
/// `<host>/<plugin[-inst]>/<type[-inst]>-YYYY-MM-DD` with header `epoch,ds1,ds2,...`
/// becomes `collectd.<host>.<plugin[-inst]>.<type[-inst]>`, with `.<ds>` appended when
/// the type has more than one data source (`AlwaysAppendDS false`); timestamps are
/// rounded to seconds, as write_graphite sends them.
fn csv_points(root: &Path) -> BTreeMap<String, Vec<(f64, i64)>> {
    let mut out: BTreeMap<String, Vec<(f64, i64)>> = BTreeMap::new();
    if !root.exists() {
        return out; // nothing written yet
    }
    for host in std::fs::read_dir(root).expect("csv dir") {
        let host = host.expect("csv entry").path();
        for plugin in std::fs::read_dir(&host).expect("csv host dir") {
            let plugin = plugin.expect("csv entry").path();
            for file in std::fs::read_dir(&plugin).expect("csv plugin dir") {
                let file = file.expect("csv entry").path();
                let fname = file.file_name().unwrap().to_str().unwrap().to_string();
                // strip "-YYYY-MM-DD"
                let type_part = &fname[..fname.len() - 11];
                let base = format!(
                    "collectd.{}.{}.{}",
                    host.file_name().unwrap().to_str().unwrap(),
                    plugin.file_name().unwrap().to_str().unwrap(),
                    type_part
                );
                let text = std::fs::read_to_string(&file).expect("read csv");
                // complete lines only: collectd may be writing the file
                let text = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
                let mut lines = text.lines();
                let Some(header) = lines.next() else {
                    continue; // created, header not written yet
                };
                let header: Vec<&str> = header.split(',').collect();
                assert_eq!(header[0], "epoch", "{}", file.display());
                for line in lines {
                    let fields: Vec<&str> = line.split(',').collect();
                    assert_eq!(fields.len(), header.len(), "{line}");
                    // write_graphite rounds collectd's time to the nearest second
                    // (CDTIME_T_TO_TIME_T); csv prints it to the millisecond, so a
                    // time within half a millisecond of .5 could round either way (a
                    // one-in-a-thousand chance; such a run fails loudly, not silently)
                    let ts = fields[0].parse::<f64>().expect("csv epoch").round() as i64;
                    for (ds, v) in header[1..].iter().zip(&fields[1..]) {
                        let name = if header.len() > 2 {
                            format!("{base}.{ds}")
                        } else {
                            base.clone()
                        };
                        let v: f64 = v.parse().expect("csv value");
                        out.entry(name).or_default().push((v, ts));
                    }
                }
            }
        }
    }
    out
}

/// Sends `PUTVAL` commands over collectd's unix socket, each answered `0 Success`.
fn putval(socket: &Path, commands: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let stream = loop {
        match UnixStream::connect(socket) {
            Ok(s) => break s,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "collectd's socket {}: {e}",
                    socket.display()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut reader = BufReader::new(stream.try_clone().expect("clone socket"));
    let mut writer = stream;
    for c in commands {
        writeln!(writer, "{c}").expect("write PUTVAL");
        let mut answer = String::new();
        reader.read_line(&mut answer).expect("read answer");
        assert!(answer.starts_with("0 "), "{c} → {answer}");
    }
}

#[test]
fn collectd_write_graphite_delivers_every_point() {
    let collectd = require("/usr/sbin/collectd", "collectd-core");
    require("/usr/share/collectd/types.db", "collectd-core");
    let dir = scratch();
    let sumi = start_sumi(dir.path());
    let csv = dir.path().join("csv");
    let socket = dir.path().join("collectd.sock");
    let conf = dir.path().join("collectd.conf");
    // One write thread: collectd's value cache drops a value older than the last one
    // of its series, and several threads could reorder our PUTVALs.
    std::fs::write(
        &conf,
        format!(
            r#"Hostname "sumitest"
FQDNLookup false
Interval 1
WriteThreads 1
BaseDir "{base}"
PIDFile "{base}/collectd.pid"
TypesDB "/usr/share/collectd/types.db"
AutoLoadPlugin false
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File STDERR
</Plugin>
LoadPlugin load
LoadPlugin memory
LoadPlugin unixsock
<Plugin unixsock>
  SocketFile "{socket}"
</Plugin>
LoadPlugin csv
<Plugin csv>
  DataDir "{csv}"
</Plugin>
LoadPlugin write_graphite
<Plugin write_graphite>
  <Node "sumi">
    Host "127.0.0.1"
    Port "{port}"
    Protocol "tcp"
    Prefix "collectd."
    EscapeCharacter "_"
    AlwaysAppendDS false
  </Node>
</Plugin>
"#,
            base = dir.path().display(),
            socket = socket.display(),
            csv = csv.display(),
            port = sumi.carbon.port(),
        ),
    )
    .expect("write collectd.conf");
    let mut client = Client::spawn(
        "collectd",
        Command::new(&collectd).arg("-f").arg("-C").arg(&conf),
        dir.path().join("collectd.log"),
    );

    // Values of our own with known timestamps, through the unix socket; the read
    // plugins report the machine's load and memory every second meanwhile.
    let t0 = now() - 120;
    let exact: Vec<(&str, f64)> = vec![
        ("sumitest/exact/gauge-a", 1.5),
        ("sumitest/exact/gauge-a", -2.0),
        ("sumitest/exact/gauge-a", 123456.789),
        ("sumitest/exact/gauge-a", 0.1),
        ("sumitest/exact-two/gauge-b", 1e20),
        ("sumitest/exact-two/gauge-b", 0.0),
    ];
    let commands: Vec<String> = exact
        .iter()
        .enumerate()
        .map(|(i, (id, v))| format!("PUTVAL \"{id}\" interval=1 {}:{v}", t0 + i as i64))
        .collect();
    putval(&socket, &commands);
    // until collectd has written our values and read the load twice (its csv shows it)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        client.check_alive();
        let all = csv_points(&csv);
        let load = all.get("collectd.sumitest.load.load.shortterm");
        let ours = |name: &str| all.get(name).map_or(0, Vec::len);
        if load.is_some_and(|p| p.len() >= 2)
            && ours("collectd.sumitest.exact.gauge-a") == 4
            && ours("collectd.sumitest.exact-two.gauge-b") == 2
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "collectd's csv after 30 s: {:?}\n{}",
            all.keys().collect::<Vec<_>>(),
            client.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // collectd flushes write_graphite on the way out
    client.terminate();

    let want_exact: BTreeMap<String, Vec<(f64, i64)>> = [
        (
            "collectd.sumitest.exact.gauge-a".to_string(),
            vec![
                (1.5, t0),
                (-2.0, t0 + 1),
                (123456.789, t0 + 2),
                (0.1, t0 + 3),
            ],
        ),
        (
            "collectd.sumitest.exact-two.gauge-b".to_string(),
            vec![(1e20, t0 + 4), (0.0, t0 + 5)],
        ),
    ]
    .into_iter()
    .collect();
    wait_all_points(&sumi, &want_exact, 0.0);

    // Everything collectd wrote to csv arrived too; csv prints six decimals.
    let all = csv_points(&csv);
    let load = "collectd.sumitest.load.load.shortterm";
    assert!(
        all.get(load).is_some_and(|p| p.len() >= 2),
        "collectd read load fewer than twice: {:?}\n{}",
        all.keys().collect::<Vec<_>>(),
        client.log_text()
    );
    assert!(all
        .keys()
        .any(|k| k.starts_with("collectd.sumitest.memory.memory-")));
    for (name, points) in &want_exact {
        assert_eq!(all.get(name).map(Vec::len), Some(points.len()), "{name}");
    }
    // collectd's read plugins may report twice within one second (its csv keeps
    // sub-second times, the graphite line whole seconds): the later write of a slot
    // wins, as in whisper, so that is the value to render.
    let rendered: BTreeMap<String, Vec<(f64, i64)>> = all
        .iter()
        .map(|(name, points)| {
            let mut last: BTreeMap<i64, f64> = BTreeMap::new();
            for &(v, t) in points {
                last.insert(t, v);
            }
            (
                name.clone(),
                last.into_iter().map(|(t, v)| (v, t)).collect(),
            )
        })
        .collect();
    wait_all_points(&sumi, &rendered, 1e-6);

    assert_eq!(
        find(&sumi, "collectd.sumitest.*"),
        [
            "collectd.sumitest.exact",
            "collectd.sumitest.exact-two",
            "collectd.sumitest.load",
            "collectd.sumitest.memory"
        ]
    );
    assert_eq!(
        find(&sumi, "collectd.sumitest.load.load.*"),
        [
            "collectd.sumitest.load.load.longterm",
            "collectd.sumitest.load.load.midterm",
            "collectd.sumitest.load.load.shortterm"
        ]
    );
    let total: usize = all.values().map(Vec::len).sum();
    assert_eq!(
        sumi.metric("sumi_points_stored_total"),
        total as f64,
        "sumi stored exactly what collectd wrote"
    );
}

// ---------------------------------------------------------------- carbon-c-relay

/// `n` points over a few series, one second apart, with values that survive text.
fn known_points(prefix: &str, n: usize, t0: i64) -> BTreeMap<String, Vec<(f64, i64)>> {
    let mut out: BTreeMap<String, Vec<(f64, i64)>> = BTreeMap::new();
    for i in 0..n {
        let name = format!("{prefix}.m{}", i % 7);
        let v = (i as f64) * 0.25 - 10.0 + if i % 11 == 0 { 1e-3 } else { 0.0 };
        out.entry(name).or_default().push((v, t0 + i as i64));
    }
    out
}

/// The carbon plaintext of `points`, in time order.
fn plaintext(points: &BTreeMap<String, Vec<(f64, i64)>>) -> String {
    let mut lines: Vec<(i64, String)> = points
        .iter()
        .flat_map(|(name, ps)| {
            ps.iter()
                .map(move |(v, t)| (*t, format!("{name} {v} {t}\n")))
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

fn send_lines(port: u16, text: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect relay");
    s.write_all(text.as_bytes()).expect("write relay");
}

#[test]
fn carbon_c_relay_forwards_every_point() {
    let relay = require("/usr/bin/carbon-c-relay", "carbon-c-relay");
    let dir = scratch();
    let sumi = start_sumi(dir.path());
    let port = free_port();
    let conf = dir.path().join("relay.conf");
    std::fs::write(
        &conf,
        format!(
            "listen type linemode transport plain 127.0.0.1:{port} proto tcp;\n\
             cluster sumi forward 127.0.0.1:{} proto tcp;\n\
             match * send to sumi stop;\n",
            sumi.carbon.port()
        ),
    )
    .expect("write relay.conf");
    // -s: submission mode, no statistics of its own in the stream
    let mut client = Client::spawn(
        "carbon-c-relay",
        Command::new(&relay).arg("-s").arg("-f").arg(&conf),
        dir.path().join("relay.log"),
    );
    client.wait_listening(port);

    let t0 = now() - 600;
    let n = 500;
    let mut want = known_points("crelay", n, t0);
    let mut text = plaintext(&want);
    // tagged points, tags out of order: stored under carbon's canonical name
    text.push_str(&format!("crelay.tagged;host=a;dc=ams 7.5 {t0}\n"));
    text.push_str(&format!("crelay.tagged;host=a;dc=ams 8.5 {}\n", t0 + 1));
    text.push_str(&format!("crelay.tagged;dc=fra;host=b -1 {t0}\n"));
    // hostile lines between good ones: the relay or sumi drops them, nothing else
    text.push_str(&format!("crelay.bad notanumber {t0}\n"));
    text.push_str(&format!("crelay.bad nan {t0}\n"));
    text.push_str("crelay.bad\n\n \u{0}\u{7f}garbage\n");
    text.push_str(&format!("crelay.bad 1 {t0} extra\n"));
    // across two connections, half each
    let cut = text[..text.len() / 2].rfind('\n').expect("newline") + 1;
    send_lines(port, &text[..cut]);
    send_lines(port, &text[cut..]);

    want.insert(
        "crelay.tagged;dc=ams;host=a".to_string(),
        vec![(7.5, t0), (8.5, t0 + 1)],
    );
    want.insert("crelay.tagged;dc=fra;host=b".to_string(), vec![(-1.0, t0)]);
    wait_all_points(&sumi, &want, 0.0);
    client.check_alive();
    let total: usize = want.values().map(Vec::len).sum();
    assert_eq!(total, n + 3);
    assert_eq!(sumi.metric("sumi_points_stored_total"), total as f64);
    let names = find(&sumi, "crelay.*");
    assert!(
        names.iter().all(|n| !n.starts_with("crelay.bad")),
        "a hostile line made a series: {names:?}"
    );
    assert!(names.contains(&"crelay.m0".to_string()), "{names:?}");
}

// ---------------------------------------------------------------- carbon-relay

/// carbon 1.1.10 and what it needs, pinned to a set known to work on Python 3.11.
const CARBON_REQUIREMENTS: &str = "carbon==1.1.10\nwhisper==1.1.10\nTwisted==26.10.0\n\
txAMQP==0.8.2\ncachetools==8.0.1\nurllib3==2.8.0\nattrs==26.1.0\nAutomat==25.4.16\n\
constantly==23.10.4\nhyperlink==21.0.0\nidna==3.20\nIncremental==24.11.0\npackaging==26.3\n\
six==1.17.0\ntyping_extensions==4.16.0\nzope.interface==8.7\n";

/// A venv with carbon under the target directory, built once (about 30 s, from PyPI)
/// and reused while the pinned requirements stay the same.
fn carbon_venv() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("carbon-relay-venv");
    let stamp = venv.join(".sumi-requirements");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == CARBON_REQUIREMENTS) {
        return venv;
    }
    let python = std::env::var("SUMI_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let building = venv.with_extension(format!("building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    let run = |cmd: &mut Command, what: &str| {
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("{what}: {e} (is python3 installed?)"));
        assert!(
            out.status.success(),
            "{what} failed (needs python3-venv and network access to PyPI):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(
        Command::new(&python).arg("-m").arg("venv").arg(&building),
        "create the carbon venv",
    );
    let reqs = building.join("requirements.txt");
    std::fs::write(&reqs, CARBON_REQUIREMENTS).expect("write requirements");
    run(
        Command::new(building.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&reqs)
            // carbon installs into the venv, not /opt/graphite
            .env("GRAPHITE_NO_PREFIX", "1"),
        "pip install carbon==1.1.10",
    );
    std::fs::write(building.join(".sumi-requirements"), CARBON_REQUIREMENTS).expect("stamp");
    let _ = std::fs::remove_dir_all(&venv);
    // Moving a venv breaks its scripts' `#!` lines, not `bin/python` itself (it finds
    // its `pyvenv.cfg` beside it): carbon-relay.py is run through `bin/python`.
    std::fs::rename(&building, &venv).expect("move the venv in place");
    venv
}

/// Starts one carbon-relay with `method` forwarding pickle to sumi; returns it and its
/// line receiver's port.
fn start_carbon_relay(venv: &Path, root: &Path, sumi: &Sumi, method: &str) -> (Client, u16) {
    let conf_dir = root.join("conf");
    std::fs::create_dir_all(&conf_dir).expect("conf dir");
    let (line, pickle) = (free_port(), free_port());
    let dest = format!("127.0.0.1:{}", sumi.pickle.port());
    std::fs::write(
        conf_dir.join("carbon.conf"),
        format!(
            "[cache]\nSTORAGE_DIR = {storage}\n\n[relay]\n\
             LINE_RECEIVER_INTERFACE = 127.0.0.1\nLINE_RECEIVER_PORT = {line}\n\
             PICKLE_RECEIVER_INTERFACE = 127.0.0.1\nPICKLE_RECEIVER_PORT = {pickle}\n\
             RELAY_METHOD = {method}\nREPLICATION_FACTOR = 1\nDESTINATIONS = {dest}\n\
             DESTINATION_PROTOCOL = pickle\nMAX_QUEUE_SIZE = 100000\n\
             USE_FLOW_CONTROL = True\n",
            storage = root.join("storage").display(),
        ),
    )
    .expect("write carbon.conf");
    // carbon refuses to start without it, even as a relay
    std::fs::write(conf_dir.join("storage-schemas.conf"), "").expect("schemas");
    std::fs::write(
        conf_dir.join("relay-rules.conf"),
        format!("[default]\ndefault = true\ndestinations = {dest}\n"),
    )
    .expect("write relay-rules.conf");
    let mut client = Client::spawn(
        "carbon-relay",
        Command::new(venv.join("bin/python"))
            .arg(venv.join("bin/carbon-relay.py"))
            .arg(format!(
                "--config={}",
                conf_dir.join("carbon.conf").display()
            ))
            .arg(format!(
                "--rules={}",
                conf_dir.join("relay-rules.conf").display()
            ))
            .args(["--debug", "start"])
            .env("GRAPHITE_ROOT", root),
        root.join("relay.log"),
    );
    client.wait_listening(line);
    (client, line)
}

#[test]
fn carbon_relay_pickles_every_point() {
    let venv = carbon_venv();
    let dir = scratch();
    let sumi = start_sumi(dir.path());
    let t0 = now() - 900;
    let mut want = BTreeMap::new();
    let mut relays = Vec::new();
    for (method, n) in [("consistent-hashing", 700), ("rules", 300)] {
        let root = dir.path().join(method);
        let (client, port) = start_carbon_relay(&venv, &root, &sumi, method);
        let prefix = format!("prelay.{}", method.replace('-', "_"));
        let points = known_points(&prefix, n, t0);
        send_lines(port, &plaintext(&points));
        want.extend(points);
        relays.push(client);
    }
    wait_all_points(&sumi, &want, 0.0);
    for r in &mut relays {
        r.check_alive();
    }
    assert_eq!(sumi.metric("sumi_points_stored_total"), 1000.0);
    assert_eq!(
        sumi.metric("sumi_points_rejected_total{reason=\"invalid_pickle\"}"),
        0.0
    );
    assert_eq!(
        find(&sumi, "prelay.*"),
        ["prelay.consistent_hashing", "prelay.rules"]
    );
}
