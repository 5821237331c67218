//! Carbon plaintext over real TCP sockets on 127.0.0.1, into a recording sink.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{rec, wait_stats, within, RecordingSink};
use sumi_ingest::{serve_tcp, IngestStats, PlaintextOptions, Reason};
use sumi_model::ManualClock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

struct Server {
    addr: std::net::SocketAddr,
    sink: Arc<RecordingSink>,
    stats: Arc<IngestStats>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    async fn start(opts: PlaintextOptions, sink: Arc<RecordingSink>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(IngestStats::default());
        let (stop, rx) = watch::channel(false);
        let task = tokio::spawn(serve_tcp(listener, sink.clone(), opts, stats.clone(), rx));
        Server {
            addr,
            sink,
            stats,
            stop,
            task,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    async fn send(&self, bytes: &[u8]) {
        let mut c = self.connect().await;
        c.write_all(bytes).await.unwrap();
        c.shutdown().await.unwrap();
    }

    async fn shutdown(self) -> (Arc<RecordingSink>, Arc<IngestStats>) {
        self.stop.send(true).unwrap();
        within("listener shutdown", self.task).await.unwrap();
        (self.sink, self.stats)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_lines_arrive_in_order() {
    let srv = Server::start(PlaintextOptions::default(), RecordingSink::new()).await;
    let n = 100_000;
    let mut data = String::new();
    for i in 0..n {
        data.push_str(&format!(
            "host{:05}.disk.sda.write_bytes {} {}\n",
            i % 1000,
            i,
            1_700_000_000 + i
        ));
    }
    srv.send(data.as_bytes()).await;
    let got = within("points", srv.sink.wait_for_points(n)).await;
    assert_eq!(got.len(), n);
    for (i, p) in got.iter().enumerate() {
        assert_eq!(
            *p,
            rec(
                &format!("host{:05}.disk.sda.write_bytes", i % 1000),
                1_700_000_000 + i as i64,
                i as f64
            )
        );
    }
    wait_stats(&srv.stats, "counters", |s| {
        s.points_received == n as u64 && s.bytes == data.len() as u64
    })
    .await;
    assert!(srv.sink.batches() > 1, "a long stream is cut into batches");
    let (_, stats) = srv.shutdown().await;
    assert_eq!(stats.snapshot().rejected_total(), 0);
}

#[tokio::test]
async fn bad_lines_are_counted_and_the_good_ones_all_arrive() {
    let clock = ManualClock::new(1_700_000_500);
    let opts = PlaintextOptions {
        clock: Arc::new(clock),
        ..PlaintextOptions::for_tests()
    };
    let srv = Server::start(opts, RecordingSink::new()).await;
    let long = "x".repeat(5000);
    let mut data = Vec::new();
    data.extend_from_slice(b"good.one 1 100\n");
    data.extend_from_slice(b"this is not a metric line\n");
    data.extend_from_slice(b"good.two 2.5 200\r\n");
    data.extend_from_slice(b"bad.utf8.\xff\xfe 1 300\n");
    data.extend_from_slice(b"nan.value nan 300\n");
    data.extend_from_slice(b"\n   \r\n");
    data.extend_from_slice(b"pos.inf inf 400\n");
    data.extend_from_slice(b"neg.inf -Infinity 401\n");
    data.extend_from_slice(b"before.1970 7 -86400\n");
    data.extend_from_slice(b"far.future 8 4102444800\n");
    data.extend_from_slice(b"empty..nodes 9 500\n");
    data.extend_from_slice(format!("{long} 1 2\n").as_bytes());
    data.extend_from_slice(b"bad.value abc 600\n");
    data.extend_from_slice(b"bad.ts 1 soon\n");
    data.extend_from_slice(b"inf.ts 1 inf\n");
    data.extend_from_slice(b"ctrl\x01name 1 700\n");
    data.extend_from_slice(b"now.ts 10 -1\n");
    data.extend_from_slice(b"under_score 1_000 1_700_000_000\n");
    data.extend_from_slice(b"last.line.without.newline 11 800");
    srv.send(&data).await;

    let want = vec![
        rec("good.one", 100, 1.0),
        rec("good.two", 200, 2.5),
        rec("pos.inf", 400, f64::INFINITY),
        rec("neg.inf", 401, f64::NEG_INFINITY),
        rec("before.1970", -86400, 7.0),
        rec("far.future", 4_102_444_800, 8.0),
        rec("empty.nodes", 500, 9.0),
        rec("now.ts", 1_700_000_500, 10.0),
        rec("under_score", 1_700_000_000, 1000.0),
        rec("last.line.without.newline", 800, 11.0),
    ];
    let got = within("good points", srv.sink.wait_for_points(want.len())).await;
    assert_eq!(got, want);
    let (_, stats) = srv.shutdown().await;
    let s = stats.snapshot();
    assert_eq!(
        s.points_received, 18,
        "every data line, blank lines excluded"
    );
    for (reason, n) in [
        (Reason::InvalidLine, 1),
        (Reason::InvalidUtf8, 1),
        (Reason::NanValue, 1),
        (Reason::LineTooLong, 1),
        (Reason::InvalidValue, 1),
        (Reason::InvalidTimestamp, 2),
        (Reason::ControlChar, 1),
    ] {
        assert_eq!(s.rejected(reason), n, "{reason:?}");
    }
    assert_eq!(s.rejected_total(), 8);
    assert_eq!(s.names_renamed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_delay_a_busy_one() {
    let srv = Server::start(PlaintextOptions::default(), RecordingSink::new()).await;
    let mut idle = Vec::new();
    for _ in 0..2000 {
        idle.push(srv.connect().await);
    }
    wait_stats(&srv.stats, "2000 open connections", |s| {
        s.connections_open == 2000
    })
    .await;
    let mut busy = srv.connect().await;
    for round in 0..5i64 {
        let line = format!("busy.metric {round} {}\n", 1000 + round);
        let started = std::time::Instant::now();
        busy.write_all(line.as_bytes()).await.unwrap();
        within("busy point", srv.sink.wait_for_points(round as usize + 1)).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a point took {:?}",
            started.elapsed()
        );
    }
    drop(idle);
    drop(busy);
    wait_stats(&srv.stats, "connections closed", |s| {
        s.connections_open == 0
    })
    .await;
    let (sink, stats) = srv.shutdown().await;
    assert_eq!(sink.len(), 5);
    assert_eq!(stats.snapshot().connections_total, 2001);
}

#[tokio::test]
async fn half_a_line_then_silence_blocks_nobody() {
    let srv = Server::start(PlaintextOptions::for_tests(), RecordingSink::new()).await;
    let mut slow = srv.connect().await;
    slow.write_all(b"slow.metric 1").await.unwrap();
    let mut other = srv.connect().await;
    other.write_all(b"other.metric 5 10\n").await.unwrap();
    let got = within("other point", srv.sink.wait_for_points(1)).await;
    assert_eq!(got, vec![rec("other.metric", 10, 5.0)]);
    // the slow client finishes its line much later
    slow.write_all(b"23 20\n").await.unwrap();
    let got = within("slow point", srv.sink.wait_for_points(2)).await;
    assert_eq!(got[1], rec("slow.metric", 20, 123.0));
    drop((slow, other));
    srv.shutdown().await;
}

#[tokio::test]
async fn connections_over_the_limit_are_refused() {
    let opts = PlaintextOptions {
        max_connections: 2,
        ..PlaintextOptions::for_tests()
    };
    let srv = Server::start(opts, RecordingSink::new()).await;
    let a = srv.connect().await;
    let b = srv.connect().await;
    wait_stats(&srv.stats, "2 open", |s| s.connections_open == 2).await;
    let mut c = srv.connect().await;
    // the server closes it without reading
    let mut buf = [0u8; 16];
    let n = within("refused connection closed", c.read(&mut buf))
        .await
        .unwrap_or(0);
    assert_eq!(n, 0);
    let s = srv.stats.snapshot();
    assert_eq!(
        (
            s.connections_open,
            s.connections_refused,
            s.connections_total
        ),
        (2, 1, 2)
    );
    drop(a);
    wait_stats(&srv.stats, "1 open", |s| s.connections_open == 1).await;
    // room again
    let mut d = srv.connect().await;
    d.write_all(b"after.limit 1 1\n").await.unwrap();
    within("point after refusal", srv.sink.wait_for_points(1)).await;
    drop((b, d));
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_sink_applies_back_pressure_and_loses_nothing() {
    let sink = RecordingSink::failing_first(5);
    let srv = Server::start(PlaintextOptions::for_tests(), sink.clone()).await;
    let mut data = String::new();
    for i in 0..500 {
        data.push_str(&format!("retry.metric {i} {i}\n"));
    }
    srv.send(data.as_bytes()).await;
    let got = within("all points after retries", sink.wait_for_points(500)).await;
    assert_eq!(got.len(), 500);
    for (i, p) in got.iter().enumerate() {
        assert_eq!(*p, rec("retry.metric", i as i64, i as f64));
    }
    assert!(sink.attempts() >= sink.batches() + 5);
    let (_, stats) = srv.shutdown().await;
    assert_eq!(stats.snapshot().rejected_total(), 0);
}

#[tokio::test]
async fn shutdown_gives_up_on_a_dead_sink_after_the_grace_period() {
    let sink = RecordingSink::new();
    sink.set_down(true);
    let srv = Server::start(PlaintextOptions::for_tests(), sink.clone()).await;
    let mut c = srv.connect().await;
    c.write_all(b"doomed.metric 1 1\ndoomed.metric 2 2\nunfinished 3")
        .await
        .unwrap();
    sink.wait("the first refused append", || sink.attempts() >= 1)
        .await;
    let (sink, stats) = srv.shutdown().await;
    assert_eq!(sink.len(), 0);
    let s = stats.snapshot();
    assert_eq!(
        s.points_received, 2,
        "the unfinished line was never a point"
    );
    assert_eq!(s.rejected(Reason::SinkUnavailable), 2);
    drop(c);
}

#[tokio::test]
async fn shutdown_stops_accepting_and_returns() {
    let srv = Server::start(PlaintextOptions::for_tests(), RecordingSink::new()).await;
    let idle = srv.connect().await;
    let mut busy = srv.connect().await;
    busy.write_all(b"before.stop 1 1\n").await.unwrap();
    within("point", srv.sink.wait_for_points(1)).await;
    let addr = srv.addr;
    let (sink, stats) = srv.shutdown().await;
    assert_eq!(sink.len(), 1);
    assert_eq!(stats.connections_open(), 0);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
    drop((idle, busy));
}

#[tokio::test]
async fn dropping_the_shutdown_sender_stops_the_listener() {
    let srv = Server::start(PlaintextOptions::for_tests(), RecordingSink::new()).await;
    let Server { stop, task, .. } = srv;
    drop(stop);
    within("listener end", task).await.unwrap();
}

#[tokio::test]
async fn binary_garbage_does_not_kill_the_connection() {
    let srv = Server::start(PlaintextOptions::for_tests(), RecordingSink::new()).await;
    let mut data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    data.extend_from_slice(b"\nafter.garbage 42 4242\n");
    srv.send(&data).await;
    let got = within("point after garbage", srv.sink.wait_for_points(1)).await;
    assert_eq!(got.last(), Some(&rec("after.garbage", 4242, 42.0)));
    srv.shutdown().await;
}

/// A sink whose appends of `slow.*` points block until the gate opens.
struct GatedSink {
    inner: Arc<RecordingSink>,
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
    waiting: std::sync::atomic::AtomicBool,
}

impl sumi_model::Sink for GatedSink {
    fn append(
        &self,
        batch: &sumi_model::Batch,
    ) -> Result<sumi_model::AppendOutcome, sumi_model::SinkError> {
        if batch.iter().any(|(name, _)| name.starts_with("slow")) {
            self.waiting
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let open = self.open.lock().unwrap();
            // bounded, so a broken listener fails the test instead of hanging it
            let _ = self
                .opened
                .wait_timeout_while(open, Duration::from_secs(10), |open| !*open)
                .unwrap();
        }
        self.inner.append(batch)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_slow_append_holds_up_only_its_own_connection() {
    let recorder = RecordingSink::new();
    let gated = Arc::new(GatedSink {
        inner: recorder.clone(),
        open: std::sync::Mutex::new(false),
        opened: std::sync::Condvar::new(),
        waiting: std::sync::atomic::AtomicBool::new(false),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(IngestStats::default());
    let (stop, rx) = watch::channel(false);
    // the default append mode (block_in_place) on a single worker
    let task = tokio::spawn(serve_tcp(
        listener,
        gated.clone(),
        PlaintextOptions::default(),
        stats,
        rx,
    ));

    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"slow.metric 1 1\n").await.unwrap();
    recorder
        .wait("the slow append to start", || {
            gated.waiting.load(std::sync::atomic::Ordering::SeqCst)
        })
        .await;

    let mut fast = TcpStream::connect(addr).await.unwrap();
    fast.write_all(b"fast.metric 2 2\n").await.unwrap();
    let got = within(
        "fast point while the slow append waits",
        recorder.wait_for_points(1),
    )
    .await;
    assert_eq!(got, vec![rec("fast.metric", 2, 2.0)]);

    *gated.open.lock().unwrap() = true;
    gated.opened.notify_all();
    let got = within("slow point", recorder.wait_for_points(2)).await;
    assert_eq!(got[1], rec("slow.metric", 1, 1.0));
    drop((slow, fast));
    stop.send(true).unwrap();
    within("shutdown", task).await.unwrap();
}
