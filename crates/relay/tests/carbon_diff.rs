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
