//! Runs the detector over a copy of NAB and writes its results files.
//!
//! ```text
//! cargo run --release -p sumi-anomaly --example nab -- NAB_DIR [NAME]
//! SUMI_ANOMALY="suppress=200,point_half=6" cargo run ...   # settings to try
//! ```
//! NAME defaults to `sumi`. Then score with NAB's scorer (`scripts/nab-score.sh`).

mod harness;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(nab) = args.next() else {
        eprintln!("usage: nab NAB_DIR [NAME]");
        std::process::exit(2);
    };
    let name = args.next().unwrap_or_else(|| "sumi".to_string());
    let mut cfg = sumi_anomaly::Config::default();
    if let Ok(over) = std::env::var("SUMI_ANOMALY") {
        for kv in over.split(',').filter(|s| !s.trim().is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            if let Err(e) = cfg.set(k, v) {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    }
    match harness::run(std::path::Path::new(&nab), &name, &cfg) {
        Ok(r) => println!(
            "{} files, {} points, detector time {:.3} s ({:.0} points/s); \
             per series {} bytes in memory, {} bytes saved",
            r.files,
            r.points,
            r.detector_time.as_secs_f64(),
            r.points as f64 / r.detector_time.as_secs_f64(),
            r.state_bytes,
            r.saved_bytes
        ),
        Err(e) => {
            eprintln!("nab: {e}");
            std::process::exit(1);
        }
    }
}
