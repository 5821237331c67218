//! Carbon plaintext over real UDP sockets on 127.0.0.1, into a recording sink.

mod common;

use std::sync::Arc;

use common::{rec, wait_stats, within, RecordingSink};
use sumi_ingest::{serve_udp, IngestStats, PlaintextOptions, Reason};
use tokio::net::UdpSocket;
use tokio::sync::watch;

async fn start(
    opts: PlaintextOptions,
) -> (
    UdpSocket,
    Arc<RecordingSink>,
    Arc<IngestStats>,
    watch::Sender<bool>,
    tokio::task::JoinHandle<()>,
) {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let sink = RecordingSink::new();
    let stats = Arc::new(IngestStats::default());
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(serve_udp(server, sink.clone(), opts, stats.clone(), rx));
    let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    client.connect(addr).await.unwrap();
    (client, sink, stats, stop, task)
}

#[tokio::test]
async fn datagrams_hold_whole_lines_split_like_carbon() {
    let (client, sink, stats, stop, task) = start(PlaintextOptions::for_tests()).await;
    // splitlines(): \n, \r\n, \r, \x0b, \x0c, \x1c-\x1e, U+0085, U+2028, U+2029
    client
        .send(b"a.one 1 10\nb.two 2 20\r\nc.three 3 30\rd.four 4 40")
        .await
        .unwrap();
    client
        .send("e.five 5 50\u{2028}f.six 6 60\u{85}g.seven 7 70\x1ch.eight 8 80".as_bytes())
        .await
        .unwrap();
    client
        .send(b"bad line\nnan.value nan 1\n\xff.bad 1 1\nlast.good 9 90\n")
        .await
        .unwrap();
    let got = within("udp points", sink.wait_for_points(9)).await;
    assert_eq!(
        got,
        vec![
            rec("a.one", 10, 1.0),
            rec("b.two", 20, 2.0),
            rec("c.three", 30, 3.0),
            rec("d.four", 40, 4.0),
            rec("e.five", 50, 5.0),
            rec("f.six", 60, 6.0),
            rec("g.seven", 70, 7.0),
            rec("h.eight", 80, 8.0),
            rec("last.good", 90, 9.0),
        ]
    );
    wait_stats(&stats, "udp counters", |s| {
        s.udp_datagrams == 3 && s.points_received == 12
    })
    .await;
    let s = stats.snapshot();
    assert_eq!(s.rejected(Reason::InvalidLine), 1);
    assert_eq!(s.rejected(Reason::NanValue), 1);
    assert_eq!(s.rejected(Reason::InvalidUtf8), 1);
    stop.send(true).unwrap();
    within("udp shutdown", task).await.unwrap();
}

#[tokio::test]
async fn a_datagram_ends_its_last_line() {
    let (client, sink, _stats, stop, task) = start(PlaintextOptions::for_tests()).await;
    // "half a line" in one datagram is not joined with the next one
    client.send(b"split.metric 1").await.unwrap();
    client.send(b"00 5\n").await.unwrap();
    client.send(b"whole.metric 2 6").await.unwrap();
    let got = within("udp point", sink.wait_for_points(1)).await;
    assert_eq!(got, vec![rec("whole.metric", 6, 2.0)]);
    stop.send(true).unwrap();
    within("udp shutdown", task).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_datagrams() {
    let (client, sink, stats, stop, task) = start(PlaintextOptions::for_tests()).await;
    let n = 2000;
    for i in 0..n {
        client
            .send(format!("udp.metric.{} {i} {i}\n", i % 7).as_bytes())
            .await
            .unwrap();
        // loopback UDP drops when the receive buffer fills: pace the sender by the
        // receiver rather than by a sleep
        if i % 100 == 99 {
            wait_stats(&stats, "receiver catches up", |s| s.udp_datagrams >= i - 50).await;
        }
    }
    let got = within("udp points", sink.wait_for_points(n as usize)).await;
    for (i, p) in got.iter().enumerate() {
        assert_eq!(
            *p,
            rec(&format!("udp.metric.{}", i % 7), i as i64, i as f64)
        );
    }
    stop.send(true).unwrap();
    within("udp shutdown", task).await.unwrap();
}

#[tokio::test]
async fn long_lines_in_datagrams_are_refused() {
    let opts = PlaintextOptions {
        max_line_bytes: 100,
        ..PlaintextOptions::for_tests()
    };
    let (client, sink, stats, stop, task) = start(opts).await;
    let long = format!("{} 1 1\nshort.one 2 2\n", "n".repeat(200));
    client.send(long.as_bytes()).await.unwrap();
    let got = within("udp point", sink.wait_for_points(1)).await;
    assert_eq!(got, vec![rec("short.one", 2, 2.0)]);
    wait_stats(&stats, "too long counted", |s| {
        s.rejected(Reason::LineTooLong) == 1
    })
    .await;
    stop.send(true).unwrap();
    within("udp shutdown", task).await.unwrap();
}
