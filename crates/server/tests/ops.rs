//! Operations end to end: HTTPS with a certificate made in the test, the carbon source
//! allowlist (127.0.0.1 against 127.0.0.2, both loopback), `/ready`, JSON logs.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use common::{now, parse_metric, points_of, scratch, Sumi};

fn start_with(dir: &std::path::Path, toml: &str) -> Sumi {
    let config = dir.join("sumi.toml");
    std::fs::write(&config, toml).unwrap();
    Sumi::start(&dir.join("data"), &["--config", config.to_str().unwrap()])
}

/// One HTTPS request trusting only `cert`; the raw response (head and body).
fn https_get(addr: SocketAddr, cert: &rcgen::CertifiedKey, path: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            // a peer that closes without close_notify ends the stream just the same
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => panic!("HTTPS read: {e}"),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn https_serves_and_plain_http_to_it_fails() {
    let dir = scratch();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    let mut sumi = start_with(
        dir.path(),
        &format!(
            "[http]\ntls_cert = {:?}\ntls_key = {:?}\n",
            cert_path.to_str().unwrap(),
            key_path.to_str().unwrap()
        ),
    );
    let t = now() - now() % 10 - 60;
    sumi.send_tcp(format!("tls.check.value 12.5 {t}\n").as_bytes());

    let ready = https_get(sumi.http, &cert, "/ready");
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(ready.ends_with("ready\n"), "{ready}");
    // data over HTTPS (waiting for the point, which is stored asynchronously)
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let body = loop {
        let resp = https_get(
            sumi.http,
            &cert,
            &format!("/render?target=tls.check.value&from={}&format=json", t - 10),
        );
        let body = resp
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        if body.contains("12.5") || std::time::Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(points_of(&json, 0), vec![(12.5, t)]);

    // plain HTTP to the HTTPS port gets no HTTP answer
    let mut plain = TcpStream::connect(sumi.http).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "plain HTTP answered: {:?}",
        String::from_utf8_lossy(&answer)
    );
    // and the server still serves HTTPS afterwards
    assert!(https_get(sumi.http, &cert, "/health").starts_with("HTTP/1.1 200"));
    sumi.stop();
    let log = sumi.log_text();
    assert!(log.contains("HTTPS listening on"), "{log}");
}

/// Connects to `to` from source address `from`, sends `bytes` (ignoring a refusal),
/// and waits for the server to close.
fn send_from(from: &str, to: SocketAddr, bytes: &[u8]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut stream = sock.connect(to).await.unwrap();
        // a refused connection may be closed before (or while) we write
        let _ = stream.write_all(bytes).await;
        let _ = stream.shutdown().await;
        let mut buf = [0u8; 64];
        let _ = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf)).await;
    });
}

#[test]
fn carbon_allowlist_refuses_and_counts_outsiders() {
    let dir = scratch();
    // 127.0.0.1 and 127.0.0.2 are both loopback; only the second may send
    let sumi = start_with(
        dir.path(),
        "[carbon]\nallow = [\"127.0.0.2/32\", \"::1\"]\n[selfmon]\nenabled = false\n",
    );
    let t = now() - 60;
    let refused_tcp = "sumi_carbon_connections_refused_total{reason=\"allowlist\"}";
    let refused_udp = "sumi_ingest_udp_datagrams_refused_total{reason=\"allowlist\"}";

    send_from(
        "127.0.0.1",
        sumi.carbon,
        format!("outside.tcp 1 {t}\n").as_bytes(),
    );
    send_from("127.0.0.1", sumi.pickle, b"\x00\x00\x00\x02\x80\x02");
    sumi.wait_metric(refused_tcp, 2.0);
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.send_to(format!("outside.udp 1 {t}\n").as_bytes(), sumi.carbon)
        .unwrap();
    sumi.wait_metric(refused_udp, 1.0);

    send_from(
        "127.0.0.2",
        sumi.carbon,
        format!("inside.tcp 2 {t}\n").as_bytes(),
    );
    let udp = UdpSocket::bind("127.0.0.2:0").unwrap();
    udp.send_to(format!("inside.udp 3 {t}\n").as_bytes(), sumi.carbon)
        .unwrap();
    sumi.wait_stored(2);

    let (status, metrics) = sumi.get("/metrics");
    assert_eq!(status, 200);
    assert_eq!(parse_metric(&metrics, refused_tcp), 2.0, "{metrics}");
    assert_eq!(parse_metric(&metrics, refused_udp), 1.0);
    assert_eq!(
        parse_metric(
            &metrics,
            "sumi_carbon_connections_refused_total{reason=\"limit\"}"
        ),
        0.0
    );
    assert_eq!(parse_metric(&metrics, "sumi_points_stored_total"), 2.0);
    assert_eq!(parse_metric(&metrics, "sumi_points_received_total"), 2.0);
    let names = sumi.get_json("/metrics/find?query=*");
    let mut texts: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap())
        .collect();
    texts.sort_unstable();
    assert_eq!(texts, ["inside"]);

    let log = sumi.log_text();
    assert!(log.contains("source not in carbon.allow"), "{log}");
    assert!(log.contains("peer=127.0.0.1:"), "{log}");
}

#[test]
fn ready_and_health_answer_and_listeners_say_how_to_open_them() {
    let dir = scratch();
    let mut sumi = start_with(dir.path(), "[selfmon]\nenabled = false\n");
    assert_eq!(sumi.get("/ready"), (200, "ready\n".to_string()));
    assert_eq!(sumi.get("/health"), (200, "ok\n".to_string()));
    sumi.stop();
    let log = sumi.log_text();
    for want in [
        "set carbon.listen = \"0.0.0.0:",
        "or pass --carbon 0.0.0.0:",
        "set carbon.pickle_listen = \"0.0.0.0:",
        "set http.listen = \"0.0.0.0:",
    ] {
        assert!(log.contains(want), "{want} missing:\n{log}");
    }
    assert!(!log.contains("self-monitoring records"), "{log}");
}

#[test]
fn json_logs_are_one_object_a_line() {
    let dir = scratch();
    let mut sumi = start_with(dir.path(), "[log]\nformat = \"json\"\n");
    sumi.send_tcp(b"bad.value notanumber 1700000000\n");
    sumi.wait_metric("sumi_points_rejected_total{reason=\"invalid_value\"}", 1.0);
    sumi.stop();
    let log = sumi.log_text();
    let events: Vec<serde_json::Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(events.len() >= 8, "{log}");
    for e in &events {
        assert!(e["timestamp"].is_string() && e["level"].is_string(), "{e}");
        assert!(e["message"].is_string(), "{e}");
    }
    let find = |msg: &str| {
        events
            .iter()
            .find(|e| e["message"].as_str().is_some_and(|m| m.starts_with(msg)))
            .unwrap_or_else(|| panic!("no {msg:?} in:\n{log}"))
    };
    let serving = find("sumi serving");
    assert_eq!(serving["level"], "INFO");
    assert!(serving["http"].as_str().unwrap().starts_with("127.0.0.1:"));
    let refused = find("refused carbon line");
    assert_eq!(refused["level"], "WARN");
    assert_eq!(refused["reason"], "invalid_value");
    assert!(refused["peer"].as_str().unwrap().starts_with("127.0.0.1:"));
    let listener = find("HTTP listening on");
    assert_eq!(listener["listener"], "HTTP");
    for step in ["ingest drained", "store closed", "http stopped"] {
        assert!(find(step)["secs"].is_f64(), "{step}");
    }
}
