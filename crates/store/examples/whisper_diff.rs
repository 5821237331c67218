//! Differential testing against whisper.py: drives a store from commands on stdin and
//! prints every fetch, for `tools/whisper_diff.py`, which runs the same commands on real
//! whisper files and compares. Needs whisper 1.1.10 (the script's `WHISPER_PATH`):
//!
//! ```text
//! cargo build -p sumi-store --example whisper_diff
//! python3 crates/store/tools/whisper_diff.py target/debug/examples/whisper_diff safe 80
//! ```
//!
//! Commands, one a line: `conf <retentions> <method> <xff> <data dir>` (first line),
//! `w <name> <ts> <value as f64 bits in hex> <now>`, `m` (run maintenance), `r` (close
//! and reopen), `f <name> <from> <until> <now>` (prints `start end step v,v,...` with
//! `N` for none, or `None`).
use std::io::BufRead;
use std::sync::Arc;
use sumi_model::Sink;
use sumi_model::{Batch, ManualClock, SeriesRules, StorageAggregation, StorageSchemas};
use sumi_store::{Store, StoreOptions};

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let conf = lines.next().unwrap().unwrap();
    let parts: Vec<&str> = conf.split_whitespace().collect();
    let dir = std::path::PathBuf::from(parts[4]);
    let _ = std::fs::remove_dir_all(&dir);
    let clock = ManualClock::new(0);
    let mut opts = StoreOptions::for_tests(&dir);
    opts.rollup_grace_secs = 0;
    opts.rules = SeriesRules {
        schemas: StorageSchemas::parse(
            "s",
            &format!("[a]\npattern = .*\nretentions = {}\n", parts[1]),
        )
        .unwrap(),
        aggregation: StorageAggregation::parse(
            "a",
            &format!(
                "[a]\npattern = .*\nxFilesFactor = {}\naggregationMethod = {}\n",
                parts[3], parts[2]
            ),
        )
        .unwrap(),
    };
    let mut store = Store::open(opts.clone(), Arc::new(clock.clone())).unwrap();
    for line in lines {
        let line = line.unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "w" => {
                clock.set(f[4].parse().unwrap());
                let mut b = Batch::new();
                b.push(
                    f[1],
                    f[2].parse().unwrap(),
                    f64::from_bits(u64::from_str_radix(f[3], 16).unwrap()),
                );
                store.append(&b).unwrap();
            }
            "m" => store.run_maintenance().unwrap(),
            "r" => {
                store.close().unwrap();
                drop(store);
                store = Store::open(opts.clone(), Arc::new(clock.clone())).unwrap();
            }
            "f" => {
                let r = store.fetch(
                    f[1],
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                );
                match r {
                    None => println!("None"),
                    Some(r) => {
                        let v: Vec<String> = r
                            .values
                            .iter()
                            .map(|v| v.map_or("N".to_string(), |x| format!("{:016x}", x.to_bits())))
                            .collect();
                        println!("{} {} {} {}", r.start, r.end, r.step, v.join(","));
                    }
                }
            }
            _ => {}
        }
    }
    store.close().unwrap();
}
