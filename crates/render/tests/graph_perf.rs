//! Render time of a large graph: 800×600, 10 series × 8,640 points (a day of 10 s
//! data). Ignored by default; run with optimisations for meaningful numbers:
//!
//! ```text
//! cargo test --release -p sumi-render --test graph_perf -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use chrono_tz::Tz;
use sumi_render::graph::{render_graph, GraphOptions, GraphSeries, ImageFormat};

const T0: i64 = 1_710_201_600;

fn series() -> Vec<GraphSeries> {
    (0..10)
        .map(|s| {
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ s;
            let values = (0..8640)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let noise = (x % 1000) as f64 / 1000.0;
                    Some(100.0 * (s + 1) as f64 + 50.0 * (i as f64 / 1375.0).sin() + 20.0 * noise)
                })
                .collect();
            GraphSeries::new(format!("servers.host{s:02}.load"), T0, 10, values)
        })
        .collect()
}

/// CPU time of this thread, which, unlike wall time, does not count the time other
/// processes on a busy machine take.
fn cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[d.len() / 2]
}

/// Renders `series` 21 times in each format and prints the medians.
fn measure(label: &str, series: &[GraphSeries], opts: &GraphOptions) {
    for (format, name) in [(ImageFormat::Png, "png"), (ImageFormat::Svg, "svg")] {
        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
        let mut size = 0;
        for _ in 0..21 {
            let (t, c) = (Instant::now(), cpu_time());
            let bytes = render_graph(series, opts, T0, T0 + 86_400, Tz::UTC, format).unwrap();
            wall.push(t.elapsed());
            if let (Some(c0), Some(c1)) = (c, cpu_time()) {
                cpu.push(c1 - c0);
            }
            size = bytes.len();
        }
        let cpu = if cpu.is_empty() {
            "n/a".to_string()
        } else {
            format!("{:?}", median(cpu))
        };
        println!(
            "{label} {name}: median wall {:?}, median cpu {cpu} over 21 runs, {size} bytes",
            median(wall)
        );
    }
}

#[test]
#[ignore = "timing; run with --release -- --ignored --nocapture"]
fn render_800x600_10x8640() {
    let series = series();
    let opts = GraphOptions::from_params(
        [("width", "800"), ("height", "600"), ("title", "load")].into_iter(),
    )
    .unwrap();
    measure("800x600 10x8640", &series, &opts);
    let small: Vec<GraphSeries> = series
        .iter()
        .take(3)
        .map(|s| {
            let values = s.values.iter().step_by(6).copied().collect();
            GraphSeries::new(s.name.clone(), s.start, 60, values)
        })
        .collect();
    measure("330x250 3x1440", &small, &GraphOptions::default());
}
