//! GrowthForecast's graphs are the same on every node of a cluster: every mutation is
//! an op of the metadata log (one Kafka partition), which every node applies to its own
//! database (`docs/cluster.md`, GrowthForecast). Real processes, a real Kafka
//! (`scripts/cluster-up.sh`).
//!
//! Posts go to the ingest node and to storage nodes; every node then answers the same
//! graph list, the same graph JSON (ids, numbers, colours, times) and the same
//! `/xport` values; `count` posts sent to different nodes add up in log order; a
//! storage node killed with SIGKILL while posts go on catches up after its restart
//! and answers the same.
//!
//! Needs Java and Maven, like every kafka_* test; never skipped.

mod common;
#[path = "common/kafka.rs"]
mod kafka;

use std::time::{Duration, Instant};

use kafka::{eventually, get, http_get, require_kafka, unix_now, Cluster};
use serde_json::Value;

fn post(addr: &str, path: &str, form: &[(&str, &str)]) -> Value {
    let resp = ureq::post(&format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(30))
        .send_form(form)
        .unwrap_or_else(|e| panic!("POST {path} to {addr}: {e}"));
    assert_eq!(resp.status(), 200);
    serde_json::from_str(&resp.into_string().unwrap()).unwrap()
}

fn json(addr: &str, path: &str) -> Value {
    serde_json::from_str(&http_get(addr, path)).unwrap()
}

/// What a node shows of the graphs: the list, and every graph's JSON by id and by
/// name.
fn graphs(addr: &str) -> Vec<Value> {
    let list = json(addr, "/json/list/graph");
    let mut out = vec![list.clone()];
    for g in list.as_array().unwrap() {
        out.push(json(addr, &format!("/json/graph/{}", g["id"])));
        out.push(json(
            addr,
            &format!(
                "/api/{}/{}/{}",
                g["service_name"].as_str().unwrap(),
                g["section_name"].as_str().unwrap(),
                g["graph_name"].as_str().unwrap()
            ),
        ));
    }
    out.push(json(addr, "/json/list/all"));
    out.push(json(addr, "/vrule/summary/web/load/cpu"));
    out
}

/// POSTs a JSON body; the status and the answer.
fn post_json(addr: &str, path: &str, body: &Value) -> (u16, String) {
    let resp = ureq::post(&format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(30))
        .send_string(&body.to_string());
    match resp {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(s, r)) => (s, r.into_string().unwrap_or_default()),
        Err(e) => panic!("POST {path} to {addr}: {e}"),
    }
}

/// `/xport` of a graph over the last hour (1-minute steps): ts → value.
fn exported(addr: &str, path: &str) -> std::collections::BTreeMap<i64, f64> {
    let x = json(addr, &format!("/xport/{path}?t=h"));
    let start = x["start_timestamp"].as_i64().unwrap();
    let step = x["step"].as_i64().unwrap();
    x["rows"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((start + i as i64 * step, r[0].as_f64()?)))
        .collect()
}

/// The points of `series` over the last hour, read through the node: ts → value.
fn stored(addr: &str, series: &str) -> std::collections::BTreeMap<i64, f64> {
    kafka::points_of(&http_get(
        addr,
        &format!("/render?target={series}&from=-1h&format=json"),
    ))
    .remove(series)
    .unwrap_or_default()
}

#[test]
fn growthforecast_graphs_are_the_same_on_every_node() {
    require_kafka();
    let t_start = Instant::now();
    let mut cluster = Cluster::up("sumi-kafka-gfmeta", None, &[]);
    eprintln!("cluster up in {:.1}s", t_start.elapsed().as_secs_f64());
    let ingest = cluster.get("INGEST_HTTP");
    let node = |c: &Cluster, n: u32| c.get(&format!("NODE{n}_HTTP"));
    let all = |c: &Cluster| {
        let mut v = vec![c.get("INGEST_HTTP")];
        v.extend((1..=3).map(|n| node(c, n)));
        v
    };

    // minutes in the last hour, on minute boundaries (the 1-minute archive)
    let t0 = unix_now() - unix_now() % 60 - 1800;
    let ts = |i: i64| (t0 + 60 * i).to_string();
    let nodes = all(&cluster);
    // gauges with and without a colour, to the ingest node and to a storage node
    post(
        &ingest,
        "/api/web/load/cpu",
        &[
            ("number", "40"),
            ("color", "#112233"),
            ("timestamp", &ts(0)),
        ],
    );
    post(
        &nodes[2],
        "/api/web/load/mem",
        &[("number", "7"), ("timestamp", &ts(0))],
    );
    // count posts to three nodes in turn: they add up in the order the log has them
    let mut sums = Vec::new();
    let mut total = 0;
    for i in 1..=6 {
        let to = &nodes[i as usize % 3];
        let answer = post(
            to,
            "/api/web/jobs/done",
            &[
                ("number", &i.to_string()),
                ("mode", "count"),
                ("timestamp", &ts(i)),
            ],
        );
        total += i;
        assert_eq!(
            answer["data"]["number"], total,
            "the answer of post {i} to {to}: {answer}"
        );
        sums.push((t0 + 60 * i, total as f64));
    }
    // concurrent count posts to two nodes: every one counted once
    let burst: Vec<_> = [nodes[0].clone(), nodes[3].clone()]
        .into_iter()
        .map(|addr| {
            std::thread::spawn(move || {
                for _ in 0..15 {
                    post(
                        &addr,
                        "/api/web/jobs/burst",
                        &[("number", "2"), ("mode", "count")],
                    );
                }
            })
        })
        .collect();
    for b in burst {
        b.join().unwrap();
    }
    // a modified post that does not change the number stores no point
    post(
        &nodes[1],
        "/api/web/load/cpu",
        &[
            ("number", "40"),
            ("mode", "modified"),
            ("timestamp", &ts(3)),
        ],
    );

    // every node has every graph, with the same ids, numbers, colours and times (the
    // ingest node first has the burst's posts that another node took)
    eventually("the burst on the ingest node", 20, || {
        let burst = json(&ingest, "/api/web/jobs/burst");
        (burst["number"] == 60)
            .then_some(())
            .ok_or_else(|| burst.to_string())
    });
    let want = graphs(&ingest);
    assert_eq!(want[0].as_array().unwrap().len(), 4, "{:?}", want[0]);
    let cpu = json(&ingest, "/api/web/load/cpu");
    assert_eq!(cpu["color"], "#112233", "{cpu}");
    for addr in &nodes[1..] {
        eventually(&format!("node {addr}'s graphs"), 20, || {
            let got = graphs(addr);
            (got == want)
                .then_some(())
                .ok_or_else(|| format!("{got:?} != {want:?}"))
        });
    }
    // every node stores and answers the points of the count graph: the running sums,
    // in order; and exports the same rows
    for addr in &nodes {
        eventually(&format!("{addr}'s points"), 20, || {
            let x = stored(addr, "web.jobs.done");
            let got: Vec<(i64, f64)> = sums
                .iter()
                .map(|(t, _)| (*t, x.get(t).copied().unwrap_or(f64::NAN)))
                .collect();
            (got == sums)
                .then_some(())
                .ok_or_else(|| format!("{got:?} != {sums:?}"))
        });
    }
    // the same export rows from every node (eventually: a read through a node may be
    // answered by a replica that has not applied the last points yet)
    for addr in &nodes {
        eventually(&format!("{addr}'s export"), 20, || {
            let want_x = exported(&ingest, "web/jobs/done");
            let x = exported(addr, "web/jobs/done");
            let common: Vec<_> = want_x.keys().filter(|t| x.contains_key(t)).collect();
            if common.len() < 5 {
                return Err(format!("{addr}: {x:?} {want_x:?}"));
            }
            match common.into_iter().find(|t| x[t] != want_x[t]) {
                None => Ok(()),
                Some(t) => Err(format!("at {t}: {} != {}", x[t], want_x[t])),
            }
        });
    }

    // an edit, a complex graph, a vertical rule made on storage nodes; a rename onto
    // a taken name refused, as on a single node
    let id_of = |name: &str| {
        want[0]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["graph_name"] == name)
            .unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    let (cpu, mem) = (id_of("cpu"), id_of("mem"));
    let (status, body) = post_json(
        &nodes[1],
        &format!("/json/edit/graph/{cpu}"),
        &serde_json::json!({"description": "cores", "sort": "5", "color": "#445566"}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_json(
        &nodes[1],
        &format!("/json/edit/graph/{mem}"),
        &serde_json::json!({"graph_name": "cpu"}),
    );
    assert_eq!(status, 409, "{body}");
    let (status, body) = post_json(
        &nodes[2],
        "/json/create/complex",
        &serde_json::json!({"service_name": "web", "section_name": "load", "graph_name": "both",
            "data": [{"graph_id": cpu}, {"graph_id": mem}]}),
    );
    assert_eq!(status, 200, "{body}");
    post(
        &nodes[3],
        "/vrule/api/web/load",
        &[("time", &ts(2)), ("description", "deploy")],
    );
    // read-your-writes holds on the node that took each change; the ingest node
    // applies them a moment later
    eventually(
        "the changes made on storage nodes, on the ingest node",
        20,
        || {
            let cpu_now = json(&ingest, "/api/web/load/cpu");
            let edited = (&cpu_now["color"], &cpu_now["description"], &cpu_now["sort"])
                == (
                    &Value::from("#445566"),
                    &Value::from("cores"),
                    &Value::from(5),
                );
            let vrules = graphs(&ingest).last().unwrap().as_array().unwrap().len();
            (edited && vrules == 1)
                .then_some(())
                .ok_or_else(|| format!("cpu {cpu_now}, {vrules} vertical rules"))
        },
    );
    let want = graphs(&ingest);
    for addr in &nodes[1..] {
        eventually(&format!("node {addr}'s graphs after the edits"), 20, || {
            let got = graphs(addr);
            (got == want)
                .then_some(())
                .ok_or_else(|| format!("{got:?} != {want:?}"))
        });
    }

    // a storage node killed while posts and a delete go on catches up after its
    // restart
    cluster.node("kill", 3);
    let nodes = all(&cluster);
    post(
        &nodes[1],
        "/api/web/jobs/done",
        &[("number", "100"), ("mode", "count"), ("timestamp", &ts(7))],
    );
    post(
        &ingest,
        "/api/web/late/arrival",
        &[("number", "3"), ("timestamp", &ts(7))],
    );
    let (status, body) = post_json(&nodes[2], "/json/delete/graph/web/load/mem", &Value::Null);
    assert_eq!(status, 200, "{body}");
    // read-your-writes on node 2; the others apply the delete a moment later (and
    // everything before it in the log)
    assert_eq!(get(&nodes[2], "/api/web/load/mem").0, 404);
    eventually("the delete made on node 2, on the ingest node", 20, || {
        let status = get(&ingest, "/api/web/load/mem").0;
        (status == 404)
            .then_some(())
            .ok_or_else(|| status.to_string())
    });
    let want = graphs(&ingest);
    assert_eq!(want[0].as_array().unwrap().len(), 4);
    cluster.node("start", 3);
    let restarted = node(&cluster, 3);
    eventually("the restarted node's graphs", 30, || {
        let got = graphs(&restarted);
        (got == want)
            .then_some(())
            .ok_or_else(|| format!("{got:?} != {want:?}"))
    });
    // every node has applied the whole metadata log, the restarted one included
    let end = kafka::metric(&ingest, "sumi_gf_log_next_offset");
    assert!(end > 0.0);
    for n in 1..=3 {
        let addr = node(&cluster, n);
        eventually(&format!("node {n}'s log offset"), 20, || {
            let at = kafka::metric(&addr, "sumi_gf_log_next_offset");
            (at == end)
                .then_some(())
                .ok_or_else(|| format!("{at} != {end}"))
        });
    }
    assert_eq!(
        kafka::metric(&restarted, "sumi_gf_log_apply_retries_total"),
        0.0
    );
    let log = cluster.log(3);
    assert!(
        log.contains("applying the growthforecast metadata log"),
        "{log}"
    );
    let x = stored(&restarted, "web.jobs.done");
    assert_eq!(x.get(&(t0 + 420)), Some(&121.0), "{x:?}");
    // the deleted graph's points are gone on every storage node, the restarted one
    // included: it replays the data topic from its last checkpoint, and the delete
    // waits until the points acknowledged before it are applied (OpMessage::data_ends)
    for n in 1..=3 {
        let addr = node(&cluster, n);
        let local = kafka::points_of(&http_get(
            &addr,
            "/render?target=web.load.mem&from=-1h&format=json&local=1",
        ));
        assert!(local.is_empty(), "node {n} still has {local:?}");
    }
    eprintln!("done in {:.1}s", t_start.elapsed().as_secs_f64());
}
