//! A partition move with `[auth]` guarding reads, on a real Kafka with separate
//! processes (`scripts/cluster-up.sh`, then `scripts/cluster-move.sh DIR 0 1 4`).
//!
//! Every node has the same `[auth]` (read and admin tokens). The new owner's copy
//! request (`/internal/v0/partition_dump`) is a read: it carries one of the node's own
//! tokens (`Auth::peer_credential`), so the copy is let through without opening reads
//! to the nodes' addresses. Checked: a read without a token is refused (401) on every
//! node; the move completes; node 4 holds every point of the moved partition, value for
//! value, from a copy (its log says so) and then the log; a cluster read with the read
//! token on node 4 is complete.
//!
//! Needs Java and Maven, like the other Kafka tests; never skipped.

#[path = "common/kafka.rs"]
mod kafka;

use std::time::{Duration, Instant};

use kafka::{
    diff, points_of, require_kafka, send_carbon, unix_now, wait_produced, Cluster, Points,
};

const SCHEMAS: &str = "[load]\npattern = ^load\\.\nretentions = 1s:2h\n\n[default]\npattern = .*\nretentions = 60s:1d\n";
const PARTITIONS: u32 = 6;
const SERIES: usize = 60;
const ROUNDS: i64 = 40;
const MOVED: u32 = 0;
const READ_TOKEN: &str = "read-3c1f0e9a5b7d2e4f6a8c";
const ADMIN_TOKEN: &str = "admin-77d2b4109e3c5a1f7b2d";

fn value(series: usize, round: i64) -> f64 {
    (series * 1000) as f64 + round as f64
}

fn expected(base: i64, keep: impl Fn(u32) -> bool) -> Points {
    let mut out = Points::new();
    for s in 0..SERIES {
        let name = format!("load.s{s:03}");
        if keep(sumi_cluster::partition_for(&name, PARTITIONS)) {
            out.insert(name, (0..ROUNDS).map(|r| (base + r, value(s, r))).collect());
        }
    }
    out
}

/// `GET` with an optional bearer token: (status, body).
fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut req = ureq::get(&format!("http://{addr}{path}")).timeout(Duration::from_secs(30));
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    match req.call() {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
        Err(e) => panic!("GET {path} on {addr}: {e}"),
    }
}

fn render(addr: &str, base: i64, local: bool, token: Option<&str>) -> (u16, String) {
    get(
        addr,
        &format!(
            "/render?target=load.*&from={}&until={}&format=json{}",
            base - 10,
            base + ROUNDS + 10,
            if local { "&local=1" } else { "" }
        ),
        token,
    )
}

#[test]
fn a_partition_moves_to_a_new_node_with_auth_on() {
    require_kafka();
    let t0 = Instant::now();
    let tokens = tempfile::Builder::new()
        .prefix("sumi-move-auth-tokens")
        .tempdir()
        .unwrap();
    let read = tokens.path().join("read.tokens");
    let admin = tokens.path().join("admin.tokens");
    std::fs::write(&read, format!("{READ_TOKEN}\n")).unwrap();
    std::fs::write(&admin, format!("{ADMIN_TOKEN}\n")).unwrap();
    let auth = format!(
        "[auth]\nread_token_file = \"{}\"\nadmin_token_file = \"{}\"\n",
        read.display(),
        admin.display()
    );
    let mut cluster = Cluster::up(
        "sumi-kafka-move-auth",
        Some(SCHEMAS),
        &[
            ("SUMI_CLUSTER_PARTITIONS", PARTITIONS.to_string()),
            ("SUMI_NODE_TOML", auth),
        ],
    );
    eprintln!("cluster up in {:.1}s", t0.elapsed().as_secs_f64());
    assert!(cluster.partitions_of(1).contains(&MOVED));
    let ingest_http = cluster.get("INGEST_HTTP");
    let base = unix_now() - 1800;
    let mut lines = String::new();
    for r in 0..ROUNDS {
        for s in 0..SERIES {
            lines.push_str(&format!("load.s{s:03} {} {}\n", value(s, r), base + r));
        }
    }
    send_carbon(&cluster.get("INGEST_CARBON"), &lines);
    wait_produced(
        &ingest_http,
        (SERIES as i64 * ROUNDS) as f64,
        30,
        String::new,
    );

    // reads need the token, on every node
    for addr in [
        ingest_http.clone(),
        cluster.get("NODE1_HTTP"),
        cluster.get("NODE2_HTTP"),
    ] {
        let (status, body) = render(&addr, base, false, None);
        assert_eq!(
            status, 401,
            "{addr} answered a read without a token: {body:.200}"
        );
    }
    // the partition's replicas hold it before the move
    let moved = expected(base, |p| p == MOVED);
    assert!(!moved.is_empty());
    let wait_local = |cluster: &Cluster, n: u32| {
        let addr = cluster.get(&format!("NODE{n}_HTTP"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = render(&addr, base, true, Some(READ_TOKEN));
            assert_eq!(status, 200, "node {n}: {body:.200}");
            let got: Points = points_of(&body)
                .into_iter()
                .filter(|(k, _)| sumi_cluster::partition_for(k, PARTITIONS) == MOVED || n == 4)
                .collect();
            if diff(&moved, &got) == (0, 0) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "node {n}: {:?} (missing, extra) of partition {MOVED}; its log:\n{}",
                diff(&moved, &got),
                cluster.log(n)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait_local(&cluster, 1);

    let t_move = Instant::now();
    let out = cluster.script("cluster-move.sh", &["0", "1", "4"]);
    eprintln!(
        "moved in {:.1}s: {}",
        t_move.elapsed().as_secs_f64(),
        out.trim()
    );
    assert!(
        out.contains("node 4 counts as a replica of partition 0"),
        "{out}"
    );
    assert_eq!(cluster.partitions_of(4), vec![MOVED]);
    // node 4 got the partition by a copy through [auth], and holds every point of it
    let log4 = cluster.log(4);
    assert!(log4.contains("partition copied from a replica"), "{log4}");
    assert!(log4.contains("now counted as its replica"), "{log4}");
    wait_local(&cluster, 4);
    // its own config has the same [auth]: reads without a token are refused there too,
    // and a cluster read with the token is complete
    let node4 = cluster.get("NODE4_HTTP");
    assert_eq!(render(&node4, base, false, None).0, 401);
    let (status, body) = render(&node4, base, false, Some(READ_TOKEN));
    assert_eq!(status, 200, "{body:.200}");
    assert_eq!(diff(&expected(base, |_| true), &points_of(&body)), (0, 0));
    eprintln!("test done in {:.1}s", t0.elapsed().as_secs_f64());
}
