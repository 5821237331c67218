//! The detector's cost per point when many series are watched, fed as a server sees
//! them: one point of every series, then the next point of every series (each point
//! touches another series' state, so the state is rarely in the caches).
//!
//! ```text
//! cargo run --release -p sumi-anomaly --example many_series -- [SERIES] [POINTS]
//! ```
//! `SUMI_ANOMALY="block=16"` sets detector settings as the NAB harness does (the
//! two-stage design, for example). The points are fed as the server feeds a series
//! without an open event (`update_explaining` without `explain`); `EXPLAIN=1` keeps
//! every point's explanation, as `Detector::update` does.
//! Defaults: 100,000 series × 60 points (`sumi bench`'s workload). Prints the CPU time
//! per point and the share of points given a score above 0. The values are a noisy
//! random walk per series (a deterministic generator, no randomness between runs).

use std::time::Instant;

use sumi_anomaly::{Config, Detector};

fn main() {
    let mut args = std::env::args().skip(1);
    let series: usize = args.next().map_or(100_000, |a| a.parse().expect("SERIES"));
    let points: usize = args.next().map_or(60, |a| a.parse().expect("POINTS"));
    let mut cfg = Config::default();
    if let Ok(over) = std::env::var("SUMI_ANOMALY") {
        for kv in over.split(',').filter(|s| !s.trim().is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            cfg.set(k, v).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    // one copy of the settings for all, as the server shares a rule's
    let cfg = std::sync::Arc::new(cfg);
    let mut dets: Vec<Detector> = (0..series).map(|_| Detector::new(cfg.clone())).collect();
    let mut level: Vec<f64> = vec![50.0; series];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut draw = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let explain = std::env::var_os("EXPLAIN").is_some();
    let (mut scored, mut above) = (0u64, 0u64);
    let (t, cpu0) = (Instant::now(), cpu_secs());
    for p in 0..points {
        let ts = 1_700_000_000 + p as i64 * 10;
        for (d, l) in dets.iter_mut().zip(level.iter_mut()) {
            *l += draw();
            if let Some(s) = d.update_explaining(ts, *l + 3.0 * draw(), explain) {
                scored += 1;
                above += u64::from(s > 0.0);
            }
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let secs = cpu_secs() - cpu0;
    let n = (series * points) as f64;
    println!(
        "{series} series x {points} points: {secs:.3} CPU s ({wall:.3} s wall), \
         {:.0} ns of CPU per point; {scored} scored, {:.2} % of them above 0; \
         {} bytes per detector",
        secs / n * 1e9,
        above as f64 / scored.max(1) as f64 * 100.0,
        dets[0].state_bytes()
    );
}

/// CPU time of this process so far (Linux: /proc/self/schedstat, nanoseconds on the
/// CPU); the machine may be shared, so wall time says little.
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}
