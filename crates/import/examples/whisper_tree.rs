//! Writes a carbon-like whisper tree for measuring `sumi import whisper`:
//!
//! ```text
//! cargo run --release -p sumi-import --example whisper_tree -- DIR FILES [RETENTION]
//! ```
//!
//! FILES files `DIR/bench/gNNN/sNNNNN.wsp` of RETENTION (default
//! `10s:1d,1m:30d,1h:5y`), method average, xFilesFactor 0.5, every slot of every archive
//! written as of the current time (a series that has been reporting for years), values
//! from a seeded generator. Writing the files directly is much faster than whisper.py;
//! the first file is read back with [`sumi_import::whisper::Whisper`] and checked
//! slot by slot before the rest are written.

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use sumi_import::whisper::Whisper;
use sumi_model::Retention;

fn value(seed: &mut u64) -> f64 {
    // xorshift64*: deterministic, cheap
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    let x = seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
    ((x >> 11) % 100_000) as f64 / 100.0
}

/// The bytes of one whisper file with every slot known as of `now`, and its points.
fn file(r: &Retention, now: i64, seed: &mut u64) -> (Vec<u8>, Vec<Vec<(i64, f64)>>) {
    let archives = r.archives();
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_be_bytes()); // average
    b.extend_from_slice(&(r.max_retention_secs() as u32).to_be_bytes());
    b.extend_from_slice(&0.5f32.to_be_bytes());
    b.extend_from_slice(&(archives.len() as u32).to_be_bytes());
    let mut offset = 16 + 12 * archives.len() as u32;
    for a in archives {
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&a.step_secs.to_be_bytes());
        b.extend_from_slice(&a.points.to_be_bytes());
        offset += 12 * a.points;
    }
    let mut all = Vec::new();
    for a in archives {
        let step = i64::from(a.step_secs);
        let newest = now - now.rem_euclid(step);
        let oldest = newest - (i64::from(a.points) - 1) * step;
        let mut pts = Vec::with_capacity(a.points as usize);
        for i in 0..i64::from(a.points) {
            let t = oldest + i * step;
            let v = value(seed);
            b.extend_from_slice(&(t as u32).to_be_bytes());
            b.extend_from_slice(&v.to_be_bytes());
            pts.push((t, v));
        }
        all.push(pts);
    }
    (b, all)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(n)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: whisper_tree DIR FILES [RETENTION]");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("FILES is a number");
    let spec = args.get(3).map_or("10s:1d,1m:30d,1h:5y", String::as_str);
    let r = Retention::parse(spec).expect("a retention such as 10s:1d,1m:30d");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64;
    let mut seed = 0x5eed_u64;
    let mut points = 0usize;
    for i in 0..n {
        let path = Path::new(dir)
            .join("bench")
            .join(format!("g{:03}", i / 1000))
            .join(format!("s{i:05}.wsp"));
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dirs");
        let (bytes, pts) = file(&r, now, &mut seed);
        let mut f = std::fs::File::create(&path).expect("create file");
        f.write_all(&bytes).expect("write file");
        points += pts.iter().map(Vec::len).sum::<usize>();
        if i == 0 {
            let w = Whisper::open(&path).expect("the reader accepts the file");
            for (k, want) in pts.iter().enumerate() {
                let got: Vec<(i64, f64)> = w.points(k, now).expect("points").collect();
                assert_eq!(&got, want, "archive {k} reads back as written");
            }
        }
    }
    println!("{n} files, {points} points, now = {now}");
}
