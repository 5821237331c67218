use std::collections::HashMap;

use super::*;

fn workload(series: u64, points: u32) -> Workload {
    Workload {
        series,
        points,
        step_secs: 10,
        last_ts: 1_700_000_000,
        seed: 42,
        prefix: "bench".to_string(),
        tagged: 0,
    }
}

/// Parses a payload into `name -> [(ts, value)]`, checking every line's shape.
fn parse(payload: &Payload) -> HashMap<String, Vec<(i64, f64)>> {
    let mut out: HashMap<String, Vec<(i64, f64)>> = HashMap::new();
    for (buffer, &points) in payload.buffers.iter().zip(&payload.points) {
        let text = std::str::from_utf8(buffer).expect("payload is ASCII");
        let mut lines = 0;
        for line in text.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 3, "line {line:?}");
            let value: f64 = fields[1].parse().expect("value parses");
            let ts: i64 = fields[2].parse().expect("timestamp parses");
            out.entry(fields[0].to_string())
                .or_default()
                .push((ts, value));
            lines += 1;
        }
        assert_eq!(lines, points);
        assert!(buffer.ends_with(b"\n"));
    }
    out
}

#[test]
fn there_are_100_distinct_metrics_per_host() {
    let m = host_metrics();
    assert_eq!(m.len(), 100);
    let mut names: Vec<&str> = m.iter().map(|d| d.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 100);
    assert_eq!(m[0].name, "cpu.user");
    assert!(names.contains(&"interface.eth0.rx_bytes"));
    assert!(names.contains(&"custom.nginx.latency_p99"));
    assert!(names.contains(&"custom.app.connections"));
}

#[test]
fn every_series_gets_every_point_in_time_order() {
    let w = workload(250, 6);
    let payload = generate(&w, 2);
    let series = parse(&payload);
    assert_eq!(series.len(), 250);
    assert_eq!(payload.points.iter().sum::<u64>(), w.total_points());
    let expected: Vec<i64> = (0..6).map(|p| w.first_ts() + p * 10).collect();
    for (name, points) in &series {
        let ts: Vec<i64> = points.iter().map(|p| p.0).collect();
        assert_eq!(ts, expected, "{name}");
    }
    assert_eq!(w.first_ts(), 1_700_000_000 - 50);
    // The last host is partial: 50 metrics.
    assert!(series.contains_key("bench.host00002.cpu.user"));
    assert_eq!(
        series
            .keys()
            .filter(|n| n.starts_with("bench.host00002."))
            .count(),
        50
    );
}

#[test]
fn buffers_are_time_ordered_and_split_by_host() {
    let w = workload(400, 3);
    let payload = generate(&w, 2);
    for (c, buffer) in payload.buffers.iter().enumerate() {
        let text = std::str::from_utf8(buffer).expect("ASCII");
        let mut last_ts = i64::MIN;
        for line in text.lines() {
            let ts: i64 = line
                .rsplit(' ')
                .next()
                .and_then(|t| t.parse().ok())
                .expect("ts");
            assert!(ts >= last_ts, "time goes back in buffer {c}: {line}");
            last_ts = ts;
            let host: u64 = line["bench.host".len().."bench.host".len() + 5]
                .parse()
                .expect("host number");
            assert_eq!(host % 2, c as u64, "{line}");
        }
    }
}

#[test]
fn values_are_realistic_for_their_kind() {
    let w = workload(1000, 60);
    let metrics = host_metrics();
    let kinds: HashMap<&str, Kind> = metrics.iter().map(|m| (m.name.as_str(), m.kind)).collect();
    let series = parse(&generate(&w, 3));
    let mut distinct_percent = std::collections::HashSet::new();
    for (name, points) in &series {
        let metric = name.splitn(3, '.').nth(2).expect("metric part");
        let kind = kinds[metric];
        let values: Vec<f64> = points.iter().map(|p| p.1).collect();
        for v in &values {
            assert!(v.is_finite() && *v >= 0.0, "{name} {v}");
            match kind {
                Kind::Percent => {
                    assert!(*v <= 100.0, "{name} {v}");
                    distinct_percent.insert(v.to_bits());
                }
                Kind::Load => {}
                Kind::Gauge | Kind::Counter | Kind::Small => {
                    assert_eq!(v.fract(), 0.0, "integer: {name} {v}")
                }
            }
        }
        match kind {
            Kind::Counter => {
                assert!(
                    values.windows(2).all(|w| w[1] >= w[0]),
                    "counter goes back: {name}"
                );
                assert!(values[59] > values[0], "counter never grows: {name}");
            }
            Kind::Small => assert!(values.windows(2).all(|w| (w[1] - w[0]).abs() <= 2.0)),
            // Not constants: a random walk moves.
            Kind::Percent | Kind::Gauge | Kind::Load => {
                assert!(values.windows(2).any(|w| w[0] != w[1]), "constant: {name}")
            }
        }
    }
    assert!(distinct_percent.len() > 1000, "{}", distinct_percent.len());
}

#[test]
fn floats_have_at_most_two_decimals_and_integers_none() {
    let w = workload(300, 20);
    let metrics = host_metrics();
    let kinds: HashMap<&str, Kind> = metrics.iter().map(|m| (m.name.as_str(), m.kind)).collect();
    let payload = generate(&w, 1);
    let text = std::str::from_utf8(&payload.buffers[0]).expect("ASCII");
    let mut with_decimals = 0;
    for line in text.lines() {
        let mut fields = line.split(' ');
        let (name, value) = (fields.next().expect("name"), fields.next().expect("value"));
        let kind = kinds[name.splitn(3, '.').nth(2).expect("metric")];
        let decimals = value.split_once('.').map_or(0, |(_, f)| f.len());
        match kind {
            Kind::Percent | Kind::Load => {
                assert!(decimals <= 2, "{line}");
                assert!(
                    !value.ends_with('0') || decimals == 0,
                    "trailing zero: {line}"
                );
                with_decimals += usize::from(decimals > 0);
            }
            Kind::Gauge | Kind::Counter | Kind::Small => assert_eq!(decimals, 0, "{line}"),
        }
    }
    assert!(with_decimals > 1000, "{with_decimals}");
}

#[test]
fn a_seed_gives_the_same_payload_whatever_the_connections() {
    let w = workload(500, 4);
    let one = parse(&generate(&w, 1));
    let three = parse(&generate(&w, 3));
    assert_eq!(one, three);
    assert_eq!(generate(&w, 2).buffers, generate(&w, 2).buffers);
    let other = Workload { seed: 43, ..w };
    assert_ne!(parse(&generate(&other, 1)), one);
}

#[test]
fn more_connections_than_hosts_leaves_buffers_empty() {
    let w = workload(150, 2);
    let payload = generate(&w, 4);
    assert_eq!(payload.points, vec![200, 100, 0, 0]);
    assert!(payload.buffers[3].is_empty());
}

#[test]
fn values_are_formatted_like_an_agent_sends_them() {
    let fmt = |kind, v| {
        let mut out = Vec::new();
        push_value(&mut out, kind, v);
        String::from_utf8(out).expect("ASCII")
    };
    assert_eq!(fmt(Kind::Percent, 12.344), "12.34");
    assert_eq!(fmt(Kind::Percent, 12.3), "12.3");
    assert_eq!(fmt(Kind::Percent, 100.0), "100");
    assert_eq!(fmt(Kind::Load, 0.004), "0");
    assert_eq!(fmt(Kind::Load, 0.05), "0.05");
    assert_eq!(fmt(Kind::Load, -0.05), "-0.05");
    assert_eq!(fmt(Kind::Gauge, 8_123_456_789.0), "8123456789");
    assert_eq!(fmt(Kind::Counter, 0.0), "0");
}

#[test]
fn samples_are_distinct_existing_series_spread_over_the_range() {
    let w = workload(100_000, 1);
    let metrics = host_metrics();
    let sample = w.sample_names(10, &metrics);
    assert_eq!(sample.len(), 10);
    let mut unique = sample.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 10);
    // One per tenth of the hosts.
    for (i, name) in sample.iter().enumerate() {
        let host: u64 = name["bench.host".len().."bench.host".len() + 5]
            .parse()
            .expect("host");
        assert_eq!(host / 100, i as u64, "{name}");
    }
    assert_eq!(w.sample_names(10, &metrics), sample);
    let small = workload(3, 1);
    assert_eq!(
        small.sample_names(10, &metrics),
        vec![
            "bench.host00000.cpu.user",
            "bench.host00000.cpu.nice",
            "bench.host00000.cpu.system"
        ]
    );
}

#[test]
fn an_empty_prefix_starts_names_at_the_host() {
    let w = Workload {
        prefix: String::new(),
        ..workload(1, 1)
    };
    assert_eq!(w.series_name(0, &host_metrics()), "host00000.cpu.user");
}

#[test]
fn the_first_tagged_series_go_out_tagged_with_the_same_values() {
    let plain = workload(250, 3);
    let tagged = Workload {
        tagged: 150,
        ..plain.clone()
    };
    let p = parse(&generate(&plain, 2));
    let t = parse(&generate(&tagged, 2));
    assert_eq!(t.len(), 250);
    let metrics = host_metrics();
    for i in 0..250 {
        let name = tagged.series_name(i, &metrics);
        assert_eq!(name.contains(';'), i < 150, "{name}");
        assert_eq!(
            t.get(&name),
            p.get(&plain.series_name(i, &metrics)),
            "series {i} keeps its points under its tagged name"
        );
    }
    assert_eq!(
        tagged.series_name(101, &metrics),
        "bench.cpu.nice;dc=dc1;host=host00001;role=web"
    );
    assert_eq!(
        Workload {
            prefix: String::new(),
            ..tagged.clone()
        }
        .tagged_name(25, "cpu.user"),
        "cpu.user;dc=dc5;host=host00025;role=db"
    );
}
