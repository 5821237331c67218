//! Carbon pickle: every fixture written by CPython's real pickler
//! (`tests/data/gen_pickles.py`) decoded as the interpreter decoded it, then the
//! listener over real TCP sockets on 127.0.0.1, with good and hostile streams.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use common::{rec, wait_stats, within, Rec, RecordingSink};
use serde_json::Value as Json;
use sumi_ingest::pickle::{PickleLimits, Unpickler};
use sumi_ingest::{serve_pickle, IngestStats, PickleOptions, Reason};
use sumi_model::ManualClock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The generator's fixed "now" for timestamps of -1.
const NOW: i64 = 1_700_000_500;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pickles")
}

/// What one fixture must give: an error, or per element a point or a reason label.
enum Want {
    Error,
    Elements(Vec<Result<(String, i64, u64), String>>),
}

fn fixtures() -> BTreeMap<String, Want> {
    let text = std::fs::read_to_string(data_dir().join("expected.json")).unwrap();
    let json: Json = serde_json::from_str(&text).unwrap();
    let mut out = BTreeMap::new();
    for (file, want) in json.as_object().unwrap() {
        let want = if want.get("error").is_some() {
            Want::Error
        } else {
            let points = want["points"].as_array().unwrap();
            Want::Elements(
                points
                    .iter()
                    .map(|p| match p[0].as_str().unwrap() {
                        "ok" => Ok((
                            p[1].as_str().unwrap().to_string(),
                            p[2].as_i64().unwrap(),
                            p[3].as_u64().unwrap(),
                        )),
                        _ => Err(p[1].as_str().unwrap().to_string()),
                    })
                    .collect(),
            )
        };
        out.insert(file.clone(), want);
    }
    out
}

fn read_fixture(file: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(file)).unwrap()
}

#[test]
fn every_python_pickle_decodes_as_python_decodes_it() {
    let fixtures = fixtures();
    assert!(fixtures.len() > 50, "fixtures missing: run gen_pickles.py");
    let mut u = Unpickler::new(PickleLimits::default());
    let mut points = 0;
    for (file, want) in &fixtures {
        let msg = read_fixture(file);
        match (u.load(&msg), want) {
            (Err(_), Want::Error) => {}
            (Err(e), Want::Elements(_)) => panic!("{file}: refused: {e}"),
            (Ok(n), Want::Error) => panic!("{file}: accepted {n} elements, CPython refused it"),
            (Ok(n), Want::Elements(elements)) => {
                assert_eq!(n, elements.len(), "{file}: element count");
                for (i, (got, want)) in u.points(&msg, NOW).zip(elements).enumerate() {
                    match (got, want) {
                        (Ok(p), Ok((name, ts, bits))) => {
                            assert_eq!(p.name, *name, "{file}[{i}] name");
                            assert_eq!(p.ts, *ts, "{file}[{i}] timestamp");
                            assert_eq!(p.value.to_bits(), *bits, "{file}[{i}] value {}", p.value);
                            points += 1;
                        }
                        (Err(e), Err(reason)) => {
                            assert_eq!(e.rejection().label(), reason, "{file}[{i}]: {e}")
                        }
                        (got, want) => panic!("{file}[{i}]: got {got:?}, want {want:?}"),
                    }
                }
            }
        }
    }
    assert!(points > 4000, "{points} points checked");
}

#[test]
fn each_protocol_of_the_same_points_agrees() {
    // The same Python objects pickled with protocols 0..5 give the same points.
    let mut u = Unpickler::new(PickleLimits::default());
    for case in [
        "relay", "numbers", "unicode", "lists", "bad", "shared", "tuple",
    ] {
        let mut first: Option<Vec<String>> = None;
        for p in 0..=5 {
            let msg = read_fixture(&format!("{case}.p{p}.pickle"));
            u.load(&msg).unwrap();
            let got: Vec<String> = u
                .points(&msg, NOW)
                .map(|r| match r {
                    Ok(p) => format!("{} {} {:x}", p.name, p.ts, p.value.to_bits()),
                    Err(e) => e.rejection().label().to_string(),
                })
                .filter(|s| !s.starts_with("bytes.value"))
                .collect();
            match &first {
                None => first = Some(got),
                Some(f) => assert_eq!(&got, f, "{case} protocol {p}"),
            }
        }
    }
}

/// `len` as carbon's clients frame it: `struct.pack("!L", len)`.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// The points a fixture must give, as the sink records them.
fn want_points(file: &str) -> Vec<Rec> {
    match &fixtures()[file] {
        Want::Elements(e) => e
            .iter()
            .filter_map(|p| p.as_ref().ok())
            .map(|(n, ts, bits)| rec(n, *ts, f64::from_bits(*bits)))
            .collect(),
        Want::Error => Vec::new(),
    }
}

struct Server {
    addr: std::net::SocketAddr,
    sink: Arc<RecordingSink>,
    stats: Arc<IngestStats>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    async fn start(opts: PickleOptions) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sink = RecordingSink::new();
        let stats = Arc::new(IngestStats::default());
        let (stop, rx) = watch::channel(false);
        let task = tokio::spawn(serve_pickle(
            listener,
            sink.clone(),
            opts,
            stats.clone(),
            rx,
        ));
        Server {
            addr,
            sink,
            stats,
            stop,
            task,
        }
    }

    async fn shutdown(self) -> (Arc<RecordingSink>, Arc<IngestStats>) {
        self.stop.send(true).unwrap();
        within("listener shutdown", self.task).await.unwrap();
        (self.sink, self.stats)
    }
}

fn test_opts() -> PickleOptions {
    let mut opts = PickleOptions::for_tests();
    opts.listener.clock = Arc::new(ManualClock::new(NOW));
    opts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_messages_over_a_socket_arrive_in_order() {
    let srv = Server::start(test_opts()).await;
    let files = [
        "relay.p2.pickle",
        "relay.big.p2.pickle",
        "py2.p0.pickle",
        "numbers.p4.pickle",
        "brubeck.pickle",
        "evil.global.pickle",
        "bad.p5.pickle",
        "unicode.p1.pickle",
    ];
    let mut stream = Vec::new();
    let mut want = Vec::new();
    for f in files {
        stream.extend_from_slice(&framed(&read_fixture(f)));
        want.extend(want_points(f));
    }
    // written in odd-sized pieces so frames straddle reads
    let mut c = TcpStream::connect(srv.addr).await.unwrap();
    for piece in stream.chunks(777) {
        c.write_all(piece).await.unwrap();
    }
    c.shutdown().await.unwrap();
    let got = within("points", srv.sink.wait_for_points(want.len())).await;
    assert_eq!(got, want);
    assert!(
        srv.sink.batches() > 1,
        "small test batches: several appends"
    );
    let (_, stats) = srv.shutdown().await;
    let s = stats.snapshot();
    // evil.global is refused whole; bad elements are refused one by one
    let fixtures = fixtures();
    let mut refused: BTreeMap<String, u64> = BTreeMap::new();
    for f in files {
        match &fixtures[f] {
            Want::Error => *refused.entry("invalid_pickle".into()).or_default() += 1,
            Want::Elements(e) => {
                for reason in e.iter().filter_map(|p| p.as_ref().err()) {
                    *refused.entry(reason.clone()).or_default() += 1;
                }
            }
        }
    }
    assert_eq!(refused["invalid_pickle"], 1);
    assert_eq!(refused["invalid_element"], 5);
    for (reason, n) in &refused {
        let r = Reason::ALL.iter().find(|r| r.label() == reason).unwrap();
        assert_eq!(s.rejected(*r), *n, "{reason}");
    }
    let total: u64 = refused.values().sum();
    assert_eq!(s.rejected_total(), total);
    assert_eq!(s.points_received, want.len() as u64 + total);
    assert_eq!(s.bytes, stream.len() as u64);
}

#[tokio::test]
async fn an_oversize_frame_closes_only_its_connection() {
    let mut opts = test_opts();
    opts.max_frame_bytes = 4096;
    let srv = Server::start(opts).await;
    let good = read_fixture("relay.p2.pickle");
    assert!(good.len() < 4096 * 4);
    let small = read_fixture("tuple.p2.pickle");

    // good frame, then a 2 GiB length prefix and garbage: the server must close
    let mut bad = TcpStream::connect(srv.addr).await.unwrap();
    let mut bytes = framed(&small);
    bytes.extend_from_slice(&0x8000_0000u32.to_be_bytes());
    bytes.extend_from_slice(&[0xAB; 1000]);
    bad.write_all(&bytes).await.unwrap();
    let mut sink_buf = [0u8; 16];
    let n = within("server closes", bad.read(&mut sink_buf)).await;
    assert!(matches!(n, Ok(0) | Err(_)), "connection left open: {n:?}");

    // a frame over the limit but under 4 GiB is refused the same way
    let mut over = TcpStream::connect(srv.addr).await.unwrap();
    over.write_all(&framed(&good)).await.unwrap();
    let n = within("server closes", over.read(&mut sink_buf)).await;
    assert!(matches!(n, Ok(0) | Err(_)));

    // meanwhile another connection is served as usual
    let mut fine = TcpStream::connect(srv.addr).await.unwrap();
    fine.write_all(&framed(&small)).await.unwrap();
    fine.shutdown().await.unwrap();

    let want = want_points("tuple.p2.pickle").len() * 2;
    within("points", srv.sink.wait_for_points(want)).await;
    wait_stats(&srv.stats, "frames refused", |s| {
        s.rejected(Reason::FrameTooLong) == 2
    })
    .await;
    let (sink, stats) = srv.shutdown().await;
    assert_eq!(sink.len(), want);
    assert_eq!(stats.snapshot().connections_open, 0);
}

#[tokio::test]
async fn truncated_and_malformed_frames_are_counted_and_the_stream_goes_on() {
    let srv = Server::start(test_opts()).await;
    let good = read_fixture("relay.p3.pickle");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&framed(b"not a pickle at all"));
    bytes.extend_from_slice(&framed(b"")); // an empty message: EOFError in carbon
    bytes.extend_from_slice(&framed(&read_fixture("truncated.pickle")));
    bytes.extend_from_slice(&framed(
        b"\x80\x02(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((.",
    )); // too deep
    bytes.extend_from_slice(&framed(b"]r\xff\xff\xff\xff.")); // memo abuse
    bytes.extend_from_slice(&framed(b"\x80\x02X\x00\x00\x00\x7f")); // 2 GiB string, not there
    bytes.extend_from_slice(&framed(&good));
    // and the connection ends halfway through one more frame
    let last = framed(&good);
    bytes.extend_from_slice(&last[..last.len() / 2]);
    let mut c = TcpStream::connect(srv.addr).await.unwrap();
    c.write_all(&bytes).await.unwrap();
    c.shutdown().await.unwrap();
    let want = want_points("relay.p3.pickle");
    let got = within("points", srv.sink.wait_for_points(want.len())).await;
    assert_eq!(got, want);
    wait_stats(&srv.stats, "truncated frame", |s| {
        s.rejected(Reason::FrameTruncated) == 1
    })
    .await;
    let (_, stats) = srv.shutdown().await;
    let s = stats.snapshot();
    assert_eq!(s.rejected(Reason::InvalidPickle), 6);
    assert_eq!(s.rejected_total(), 7);
}

#[tokio::test]
async fn shutdown_with_an_idle_and_a_half_sent_connection() {
    let srv = Server::start(test_opts()).await;
    let _idle = TcpStream::connect(srv.addr).await.unwrap();
    let mut half = TcpStream::connect(srv.addr).await.unwrap();
    let msg = framed(&read_fixture("relay.p2.pickle"));
    half.write_all(&msg[..msg.len() - 10]).await.unwrap();
    wait_stats(&srv.stats, "bytes read", |s| {
        s.bytes == (msg.len() - 10) as u64
    })
    .await;
    let (sink, stats) = srv.shutdown().await;
    // the unfinished frame is dropped at shutdown, not counted as truncated
    assert_eq!(sink.len(), 0);
    assert_eq!(stats.snapshot().rejected_total(), 0);
    assert_eq!(stats.snapshot().connections_open, 0);
}
