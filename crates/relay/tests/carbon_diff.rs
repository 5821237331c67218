//! Differential test: placement by `sumi_relay::hashing` against carbon 1.1.10's own
//! `ConsistentHashingRouter` (from PyPI, in the venv `tests/relay-diff/setup.sh`
//! builds), for thousands of names, several destination lists, replication factors
//! 1 to 3, with and without diverse replicas, `carbon_ch` and `fnv1a_ch`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use sumi_relay::hashing::{Destination, HashRing, HashType};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The carbon venv's python (built on first use; an error, never a skip, without it).
pub fn carbon_python() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("tests/relay-diff/setup.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run tests/relay-diff/setup.sh");
    assert!(out.status.success(), "tests/relay-diff/setup.sh failed");
    let text = String::from_utf8(out.stdout).unwrap();
    PathBuf::from(text.lines().last().unwrap().trim()).join("bin/python")
}

/// A fixed-seed xorshift, so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn names(count: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    let words = [
        "servers", "web", "db", "cpu", "load", "é", "日本", "a-b_c", "Ünï", "x;tag=v",
    ];
    (0..count)
        .map(|i| {
            let depth = 1 + rng.below(6);
            let mut parts: Vec<String> = (0..depth)
                .map(|_| {
                    let w = words[rng.below(words.len() as u64) as usize];
                    format!("{w}{}", rng.below(1000))
                })
                .collect();
            parts.push(format!("m{i}"));
            parts.join(".")
        })
        .collect()
}

#[test]
fn placement_matches_carbon_1_1_10() {
    let lists: Vec<Vec<&str>> = vec![
        vec!["127.0.0.1:2004:a"],
        vec!["127.0.0.1:2004"],
        vec!["127.0.0.1:2004:a", "127.0.0.1:2104:b"],
        vec!["10.0.0.1:2004", "10.0.0.2:2004", "10.0.0.3:2004"],
        vec![
            "carbon-a:2004:a",
            "carbon-a:2104:b",
            "carbon-b:2004:a",
            "carbon-b:2104:b",
            "carbon-c:2004:a",
        ],
        vec![
            "[::1]:2004:x",
            "[fe80::2]:2004:y",
            "host'q:2003:",
            "h\"2:1:it's",
        ],
        vec![
            "c1:2003:1",
            "c2:2003:2",
            "c3:2003:3",
            "c4:2003:4",
            "c5:2003:5",
            "c6:2003:6",
            "c7:2003:7",
            "c8:2003:8",
            "c9:2003:9",
            "c10:2003:10",
            "c11:2003:11",
        ],
    ];
    let mut cases = Vec::new();
    let mut mine = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for list in &lists {
        let dests: Vec<Destination> = list
            .iter()
            .map(|s| Destination::parse(s).unwrap())
            .collect();
        for hash in [HashType::CarbonCh, HashType::Fnv1aCh] {
            for rf in 1..=3usize {
                for diverse in [true, false] {
                    seed = seed.wrapping_add(0x1234_5678_9abc_def1);
                    let ns = names(if rf == 1 && diverse { 3000 } else { 800 }, seed);
                    let ring = HashRing::new(&dests, hash).unwrap();
                    let mut out = Vec::new();
                    let placed: Vec<Vec<usize>> = ns
                        .iter()
                        .map(|n| {
                            ring.place(n.as_bytes(), rf, diverse, &mut out);
                            out.clone()
                        })
                        .collect();
                    mine.push(placed);
                    cases.push(serde_json::json!({
                        "destinations": list,
                        "replication_factor": rf,
                        "diverse_replicas": diverse,
                        "hash_type": match hash { HashType::CarbonCh => "carbon_ch", HashType::Fnv1aCh => "fnv1a_ch" },
                        "names": ns,
                    }));
                }
            }
        }
    }
    let python = carbon_python();
    let mut child = Command::new(python)
        .arg(repo().join("tests/relay-diff/placement.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let spec = serde_json::to_vec(&serde_json::json!({ "cases": cases })).unwrap();
    child.stdin.take().unwrap().write_all(&spec).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "placement.py failed");
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let theirs = theirs["placements"].as_array().unwrap();
    assert_eq!(theirs.len(), mine.len());
    let mut compared = 0;
    for (c, (t, m)) in theirs.iter().zip(&mine).enumerate() {
        let t: Vec<Vec<usize>> = serde_json::from_value(t.clone()).unwrap();
        assert_eq!(t.len(), m.len());
        for (i, (a, b)) in t.iter().zip(m).enumerate() {
            assert_eq!(
                a, b,
                "case {} ({}) name {:?}: carbon {:?}, sumi {:?}",
                c, cases[c]["destinations"], cases[c]["names"][i], a, b
            );
            compared += 1;
        }
    }
    assert!(compared > 50_000, "compared {compared}");
}

const AGGREGATION_RULES: &str = "\
# the examples of carbon's docs, and more
<env>.applications.<app>.all.requests (60) = sum <env>.applications.<app>.*.requests
<env>.applications.<app>.all.latency_avg (60) = avg <env>.applications.<app>.*.latency
<env>.applications.<app>.all.latency_max (60) = max <env>.applications.<app>.*.latency
<env>.applications.<app>.all.latency_min (60) = min <env>.applications.<app>.*.latency
<env>.applications.<app>.all.latency_p95 (60) = p95 <env>.applications.<app>.*.latency
<env>.applications.<app>.all.latency_p999 (60) = p999 <env>.applications.<app>.*.latency
<env>.applications.<app>.all.count (10) = count <env>.applications.<app>.*.requests

<env>.all.<rest> (30) = p50 <env>.hosts.*.<<rest>>
<env>.hosts.all.cpu (60) = sum <env>.hosts.h*.cpu
<env>.x<n>.total (60) = sum <env>.x<n>.total
";

const RELAY_RULES: &str = "\
[carbon]
pattern = ^carbon\\.
destinations = 127.0.0.1:2104:b

[apps]
pattern = \\.applications\\.(api|web)\\.
destinations = 127.0.0.1:2004:a, 127.0.0.1:2204:c
continue = true

[latency]
pattern = LATENCY$
destinations = 127.0.0.1:2204:c

[default]
default = true
destinations = 127.0.0.1:2004:a
";

#[test]
fn aggregation_and_relay_rules_match_carbon_1_1_10() {
    use sumi_relay::aggregate::{parse_aggregation_rules, Aggregator};
    use sumi_relay::rules::{parse_relay_rules, route};

    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let envs = ["prod", "dev"];
    let apps = ["api", "web", "batch"];
    let t0 = 1_700_000_000i64 - 1_700_000_000 % 60;
    let name = |rng: &mut Rng| -> String {
        let env = envs[rng.below(2) as usize];
        match rng.below(6) {
            0 | 1 => format!(
                "{env}.applications.{}.web{}.{}",
                apps[rng.below(3) as usize],
                rng.below(4),
                ["requests", "latency"][rng.below(2) as usize]
            ),
            2 => format!("{env}.hosts.h{}.cpu", rng.below(5)),
            3 => format!(
                "{env}.hosts.h{}.disk.sd{}.reads",
                rng.below(3),
                rng.below(2)
            ),
            4 => format!("{env}.x{}.total", rng.below(3)),
            _ => format!("carbon.agents.a{}.Latency", rng.below(3)),
        }
    };
    let mut rounds = Vec::new();
    for r in 0..6i64 {
        let now = t0 + 60 * (r + 1);
        let points: Vec<(String, i64, f64)> = (0..700)
            .map(|_| {
                // Mostly the last few minutes, some late points far behind.
                let back = if rng.below(10) == 0 { 600 } else { 180 };
                let ts = now - rng.below(back) as i64;
                let value = (rng.below(20_000) as f64) / 100.0 - 20.0;
                (name(&mut rng), ts, value)
            })
            .collect();
        rounds.push((now, points));
    }
    let names: Vec<String> = (0..2000).map(|_| name(&mut rng)).collect();
    let dests = ["127.0.0.1:2004:a", "127.0.0.1:2104:b", "127.0.0.1:2204:c"];

    let spec = serde_json::json!({
        "aggregation_rules": AGGREGATION_RULES,
        "rounds": rounds.iter().map(|(now, pts)| serde_json::json!({
            "now": now,
            "points": pts.iter().map(|(n, t, v)| serde_json::json!([n, t, format!("{v:?}")])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "relay_rules": RELAY_RULES,
        "destinations": dests,
        "names": names,
    });
    let mut child = Command::new(carbon_python())
        .arg(repo().join("tests/relay-diff/aggregation.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&serde_json::to_vec(&spec).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "aggregation.py failed");
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let triple = |v: &serde_json::Value| -> (String, i64, u64) {
        (
            v[0].as_str().unwrap().to_string(),
            v[1].as_i64().unwrap(),
            v[2].as_str().unwrap().parse::<f64>().unwrap().to_bits(),
        )
    };
    let mut agg = Aggregator::new(parse_aggregation_rules(AGGREGATION_RULES).unwrap());
    let mut total_generated = 0;
    for (r, (now, points)) in rounds.iter().enumerate() {
        let mut forwarded = Vec::new();
        for (n, t, v) in points {
            if agg.input(n, *t, *v, *now) {
                forwarded.push((n.clone(), *t, v.to_bits()));
            }
        }
        let mut generated = Vec::new();
        agg.compute(*now, true, |m, t, v| {
            generated.push((m.to_string(), t, v.to_bits()))
        });
        let t = &theirs["rounds"][r];
        let their_fw: Vec<_> = t["forwarded"]
            .as_array()
            .unwrap()
            .iter()
            .map(triple)
            .collect();
        let mut their_gen: Vec<_> = t["generated"]
            .as_array()
            .unwrap()
            .iter()
            .map(triple)
            .collect();
        if let Some(i) =
            (0..forwarded.len().max(their_fw.len())).find(|&i| forwarded.get(i) != their_fw.get(i))
        {
            panic!(
                "round {r}: forwarded point {i}: sumi {:?}, carbon {:?}",
                forwarded.get(i),
                their_fw.get(i)
            );
        }
        generated.sort();
        their_gen.sort();
        assert_eq!(generated, their_gen, "round {r}: aggregates");
        total_generated += generated.len();
    }
    assert!(
        total_generated > 100,
        "only {total_generated} aggregates compared"
    );

    let rules = parse_relay_rules(RELAY_RULES).unwrap();
    let known: Vec<Destination> = dests
        .iter()
        .map(|d| Destination::parse(d).unwrap())
        .collect();
    let mut out = Vec::new();
    let theirs_routes = theirs["routes"].as_array().unwrap();
    let mut multi = 0;
    for (i, n) in names.iter().enumerate() {
        route(&rules, &known, n.as_bytes(), &mut out);
        let t: Vec<usize> = serde_json::from_value(theirs_routes[i].clone()).unwrap();
        assert_eq!(out, t, "relay rules for {n:?}");
        multi += usize::from(out.len() > 1);
    }
    assert!(multi > 0);
}
