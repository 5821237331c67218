//! The real server run in-process through the library (`sumi_server::run`): the test
//! binds the listeners on port 0, writes over carbon plaintext, reads back through
//! `/render` over HTTP, stops the server and checks that it returned — and that what
//! it stored is there when it runs again on the same directory.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use sumi_server::{Addrs, Config, Listeners};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server running on `rt`, and the switch that stops it.
struct InProcess {
    addrs: Addrs,
    stop: oneshot::Sender<()>,
    task: JoinHandle<anyhow::Result<()>>,
}

fn start(rt: &Runtime, data_dir: &Path) -> InProcess {
    let listeners = rt.block_on(async {
        Listeners {
            carbon: TcpListener::bind("127.0.0.1:0").await.expect("bind carbon"),
            carbon_udp: None,
            pickle: TcpListener::bind("127.0.0.1:0").await.expect("bind pickle"),
            http: TcpListener::bind("127.0.0.1:0").await.expect("bind http"),
        }
    });
    let addrs = listeners.addrs().expect("bound addresses");
    assert_ne!(addrs.http.port(), 0);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = rt.spawn(sumi_server::run(
        listeners,
        Config::for_tests(data_dir),
        async move {
            let _ = stopped.await;
        },
    ));
    let server = InProcess { addrs, stop, task };
    wait_until("/ready answers 200", || {
        get(server.addrs.http, "/ready").0 == 200
    });
    server
}

impl InProcess {
    /// Triggers the shutdown and waits (bounded) for `run` to return.
    fn stop(self, rt: &Runtime) {
        self.stop
            .send(())
            .expect("server still waiting for its shutdown");
        let task = self.task;
        let ended =
            rt.block_on(async move { tokio::time::timeout(Duration::from_secs(60), task).await });
        ended
            .expect("run returned within 60 s of the shutdown")
            .expect("server task did not panic")
            .expect("run ended without an error");
    }
}

fn get(http: SocketAddr, path: &str) -> (u16, String) {
    let url = format!("http://{http}{path}");
    match ureq::get(&url).timeout(Duration::from_secs(30)).call() {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
        Err(e) => panic!("GET {url}: {e}"),
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "not within 60 s: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `[value, ts]` pairs with a value of the one series of a render answer.
fn points(http: SocketAddr, render: &str) -> Vec<(f64, i64)> {
    let (status, body) = get(http, render);
    assert_eq!(status, 200, "GET {render}: {body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("render answers JSON");
    json.as_array()
        .and_then(|series| series.first())
        .and_then(|s| s["datapoints"].as_array())
        .map(|dps| {
            dps.iter()
                .filter(|p| !p[0].is_null())
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_i64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn run_in_process_on_port_zero_then_shut_down() {
    let dir = tempfile::Builder::new()
        .prefix("sumi-test-")
        .tempdir()
        .expect("temp dir");
    let data_dir = dir.path().join("data");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let server = start(&rt, &data_dir);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let ts = now - now % 10 - 60;
    let mut carbon = TcpStream::connect(server.addrs.carbon).expect("connect carbon");
    carbon
        .write_all(format!("in.process.value 42.5 {ts}\n").as_bytes())
        .expect("write carbon");
    carbon.shutdown(Shutdown::Write).expect("half-close carbon");
    // the server closes its side once it has read everything
    carbon
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = carbon.read(&mut [0u8; 16]);

    let render = format!(
        "/render?target=in.process.value&from={}&until={}&format=json",
        ts - 10,
        ts + 10
    );
    wait_until("the point is readable", || {
        !points(server.addrs.http, &render).is_empty()
    });
    assert_eq!(points(server.addrs.http, &render), vec![(42.5, ts)]);
    let http = server.addrs.http;
    server.stop(&rt);
    assert!(
        TcpStream::connect(http).is_err(),
        "HTTP still accepts after run returned"
    );

    // what the first run stored survived its shutdown
    let again = start(&rt, &data_dir);
    assert_eq!(points(again.addrs.http, &render), vec![(42.5, ts)]);
    again.stop(&rt);
}
