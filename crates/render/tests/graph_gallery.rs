//! The sample images of `docs/graph-gallery/`: each is rendered (and checked to be a
//! PNG of the asked size) on every test run, and written out when
//! `SUMI_GRAPH_GALLERY` names a directory:
//!
//! ```text
//! SUMI_GRAPH_GALLERY=docs/graph-gallery cargo test -p sumi-render --test graph_gallery
//! ```

use std::path::PathBuf;

use chrono_tz::Tz;
use sumi_render::graph::{
    render_graph, DrawType, GraphOptions, GraphSeries, ImageFormat, PngCompression,
};

/// 2024-03-12 00:00:00 UTC, a Tuesday.
const T0: i64 = 1_710_201_600;
const DAY: i64 = 86_400;

/// A small deterministic noise source (a linear congruential generator).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A daily wave around `base` with `amp` swing, noise and an incident at 14:00–15:30.
fn wave(
    name: &str,
    step: i64,
    span: i64,
    base: f64,
    amp: f64,
    phase: f64,
    seed: u64,
) -> GraphSeries {
    let mut noise = Noise(seed);
    let n = (span / step) as usize;
    let values = (0..n)
        .map(|i| {
            let t = (i as i64 * step) as f64;
            let day = (t / DAY as f64 * std::f64::consts::TAU + phase).sin();
            let incident = if (50_400.0..55_800.0).contains(&(t % DAY as f64)) {
                amp * 1.5
            } else {
                0.0
            };
            Some((base + amp * day + incident + amp * 0.2 * (noise.next() - 0.5)).max(0.0))
        })
        .collect();
    GraphSeries::new(name, T0, step, values)
}

fn params(q: &[(&str, &str)]) -> GraphOptions {
    GraphOptions::from_params(q.iter().copied()).expect("gallery options parse")
}

fn gallery() -> Vec<(&'static str, Vec<GraphSeries>, GraphOptions)> {
    let mut out = Vec::new();

    let cpu: Vec<GraphSeries> = [
        ("user", 35.0, 15.0),
        ("system", 12.0, 4.0),
        ("iowait", 4.0, 3.0),
        ("steal", 1.0, 0.5),
    ]
    .iter()
    .enumerate()
    .map(|(i, (n, b, a))| {
        wave(
            &format!("servers.web01.cpu.{n}"),
            60,
            DAY,
            *b,
            *a,
            i as f64,
            7 + i as u64,
        )
    })
    .collect();
    out.push((
        "graphite-default",
        cpu.clone(),
        params(&[
            ("width", "800"),
            ("height", "400"),
            ("title", "web01 CPU"),
            ("vtitle", "percent"),
        ]),
    ));

    out.push((
        "stacked",
        cpu,
        params(&[
            ("width", "800"),
            ("height", "400"),
            ("areaMode", "stacked"),
            ("title", "web01 CPU (stacked)"),
            ("yMax", "100"),
        ]),
    ));

    let requests = wave("nginx.requests_per_sec", 60, DAY, 1800.0, 900.0, 0.0, 3);
    let mut latency = wave("nginx.p99_latency_ms", 60, DAY, 120.0, 30.0, 0.5, 4);
    latency.second_y_axis = true;
    latency.color = Some("orange".to_string());
    out.push((
        "second-y-axis",
        vec![requests, latency],
        params(&[
            ("width", "800"),
            ("height", "400"),
            ("title", "Front end: load and latency"),
            ("vtitle", "requests/s"),
            ("vtitleRight", "p99 ms"),
        ]),
    ));

    let decades: Vec<GraphSeries> = [
        ("queue.depth.small", 3.0),
        ("queue.depth.medium", 250.0),
        ("queue.depth.large", 40_000.0),
    ]
    .iter()
    .enumerate()
    .map(|(i, (n, b))| wave(n, 300, 2 * DAY, *b, b * 0.6, i as f64, 20 + i as u64))
    .collect();
    out.push((
        "log-base",
        decades,
        params(&[
            ("width", "800"),
            ("height", "400"),
            ("logBase", "10"),
            ("title", "Queue depth (logBase=10)"),
        ]),
    ));

    let mut gaps = wave("sensor.temperature", 600, DAY, 20.0, 5.0, 0.0, 9);
    for v in gaps.values.iter_mut().skip(40).take(12) {
        *v = None;
    }
    let mut limit = GraphSeries::new("threshold", T0, 600, vec![Some(27.0); 144]);
    limit.dashed = Some(5.0);
    limit.color = Some("red".to_string());
    let mut deploy = GraphSeries::new(
        "deploys",
        T0,
        3600,
        (0..24)
            .map(|h| Some(if h == 9 || h == 17 { 1.0 } else { 0.0 }))
            .collect(),
    );
    deploy.draw_as_infinite = true;
    deploy.color = Some("888888".to_string());
    out.push((
        "dark-staircase",
        vec![gaps, limit, deploy],
        params(&[
            ("width", "600"),
            ("height", "300"),
            ("bgcolor", "000000"),
            ("fgcolor", "white"),
            ("majorGridLineColor", "444444"),
            ("minorGridLineColor", "222222"),
            ("lineMode", "staircase"),
            ("lineWidth", "2"),
            (
                "title",
                "staircase, a gap, dashed threshold, drawAsInfinite deploys",
            ),
        ]),
    ));

    let inbound = wave("eth0 inbound", 300, DAY + 9 * 3600, 45e6, 20e6, 0.0, 11)
        .with_draw(DrawType::Area, false);
    let outbound = wave("eth0 outbound", 300, DAY + 9 * 3600, 12e6, 6e6, 1.0, 12)
        .with_draw(DrawType::Area, true);
    let errors = wave("eth0 errors x1M", 300, DAY + 9 * 3600, 30e6, 25e6, 2.0, 13)
        .with_draw(DrawType::Line2, false);
    let mut rrd = GraphOptions::rrd();
    rrd.width = 600;
    rrd.height = 300;
    rrd.title = "Daily (5min avg)".to_string();
    rrd.vtitle = "bits/s".to_string();
    out.push(("rrd", vec![inbound, outbound, errors], rrd));

    out.push((
        "no-data",
        Vec::new(),
        params(&[("width", "400"), ("height", "200")]),
    ));
    // Committed images are compressed harder than the server's default.
    for (_, _, o) in out.iter_mut() {
        o.png_compression = PngCompression::Small;
    }
    out
}

#[test]
fn gallery_renders() {
    let dir = std::env::var_os("SUMI_GRAPH_GALLERY").map(PathBuf::from);
    for (name, series, opts) in gallery() {
        let (start, end) = (T0, T0 + DAY + 9 * 3600);
        let png = render_graph(&series, &opts, start, end, Tz::UTC, ImageFormat::Png).expect(name);
        let reader = png::Decoder::new(png.as_slice()).read_info().expect(name);
        assert_eq!(
            (reader.info().width, reader.info().height),
            (opts.width, opts.height),
            "{name}"
        );
        if let Some(dir) = &dir {
            std::fs::write(dir.join(format!("{name}.png")), &png).expect("write gallery image");
            let svg =
                render_graph(&series, &opts, start, end, Tz::UTC, ImageFormat::Svg).expect(name);
            if name == "graphite-default" {
                std::fs::write(dir.join(format!("{name}.svg")), svg).expect("write gallery image");
            }
        }
    }
}
