//! What one render may read (`[http] max_points_per_query`, `max_series_per_query`),
//! and big answers streamed: a real server, real sockets.

mod common;

use common::{now, points_of, scratch, Sumi};

const SCHEMAS: &str = "[all]\npattern = .*\nretentions = 10s:1d\n";

/// Starts a server with these limits and `series` series of 20 points each
/// (`lim.sNNNN`, value = series number + point index), 10 s apart, ending at the
/// returned timestamp.
fn start(dir: &std::path::Path, limits: &str, series: usize) -> (Sumi, i64) {
    let config = dir.join("sumi.toml");
    std::fs::write(&config, format!("[http]\n{limits}")).unwrap();
    let schemas = dir.join("storage-schemas.conf");
    std::fs::write(&schemas, SCHEMAS).unwrap();
    let sumi = Sumi::start(
        &dir.join("data"),
        &[
            "--config",
            config.to_str().unwrap(),
            "--storage-schemas",
            schemas.to_str().unwrap(),
        ],
    );
    let end = now() - now() % 10 - 60;
    let mut text = String::new();
    for s in 0..series {
        for i in 0..20 {
            let ts = end - 190 + i * 10;
            text.push_str(&format!("lim.s{s:04} {} {ts}\n", s as i64 + i));
        }
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored((series * 20) as u64);
    (sumi, end)
}

fn render(sumi: &Sumi, targets: &[&str], from: i64, until: i64, format: &str) -> (u16, String) {
    let (from, until) = (from.to_string(), until.to_string());
    let mut form: Vec<(&str, &str)> = targets.iter().map(|t| ("target", *t)).collect();
    form.extend([
        ("from", from.as_str()),
        ("until", until.as_str()),
        ("format", format),
    ]);
    sumi.post_form("/render", &form)
}

#[test]
fn requests_over_the_limits_get_422_with_the_reason() {
    let dir = scratch();
    let (sumi, end) = start(
        dir.path(),
        "max_points_per_query = 100\nmax_series_per_query = 5\n",
        8,
    );
    let (from, until) = (end - 191, end);

    // under both limits: 3 series x 20 slots
    let (status, body) = render(&sumi, &["lim.s000{0,1,2}"], from, until, "json");
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 3);
    assert_eq!(points_of(&json, 2).len(), 20);
    assert_eq!(points_of(&json, 2)[19], (21.0, end));

    // 8 series matched, 5 allowed: refused before anything is read, in every format
    for (targets, format) in [
        (&["lim.*"][..], "json"),
        (&["lim.*"][..], "csv"),
        (&["sumSeries(lim.*)"][..], "json"),
        (&["lim.s000{0,1,2}", "lim.s000{3,4,5}"][..], "raw"),
    ] {
        let (status, body) = render(&sumi, targets, from, until, format);
        assert_eq!(status, 422, "{targets:?} {format}: {body}");
        assert!(body.contains("max_series_per_query"), "{body}");
        assert!(
            body.contains("match 8 series") || body.contains("match 6 series"),
            "{body}"
        );
        assert!(body.contains("narrower path globs"), "{body}");
    }

    // 4 series over an hour at 10 s: 1,440 points, 100 allowed
    let (status, body) = render(&sumi, &["lim.s000{0,1,2,3}"], end - 3600, end, "json");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("max_points_per_query"), "{body}");
    assert!(body.contains("1440 points"), "{body}");
    assert!(body.contains("shorter time range"), "{body}");

    // two targets under the limit each, over it together (60 + 60 slots)
    let (status, body) = render(&sumi, &["lim.s0000", "lim.s0001"], end - 600, end, "json");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("max_points_per_query"), "{body}");
    let (status, body) = render(&sumi, &["lim.s0000"], end - 600, end, "json");
    assert_eq!(status, 200, "{body}");

    // a refused request leaves the server serving
    let (status, _) = render(&sumi, &["lim.s0007"], from, until, "json");
    assert_eq!(status, 200);
}

#[test]
fn big_answers_stream_in_chunks_and_stay_exact() {
    let dir = scratch();
    let series = 3000;
    let (sumi, end) = start(dir.path(), "", series);
    // about 2 MB of JSON: several chunks
    let (status, body) = render(&sumi, &["lim.*"], end - 191, end, "json");
    assert_eq!(status, 200, "{body}");
    assert!(body.len() > 1 << 20, "{} bytes", body.len());
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let list = json.as_array().unwrap();
    assert_eq!(list.len(), series);
    for (s, item) in list.iter().enumerate() {
        assert_eq!(item["target"], format!("lim.s{s:04}"));
        let points = points_of(&json, s);
        assert_eq!(points.len(), 20, "{}", item["target"]);
        for (i, (v, ts)) in points.iter().enumerate() {
            assert_eq!((*v, *ts), ((s + i) as f64, end - 190 + i as i64 * 10));
        }
    }
    // the same with JSONP around it, and pretty-printed
    let (status, wrapped) = sumi.get(&format!(
        "/render?target=lim.*&from={}&until={end}&format=json&jsonp=cb",
        end - 191
    ));
    assert_eq!(status, 200);
    assert_eq!(wrapped, format!("cb({body})"));
    let (status, pretty) = sumi.get(&format!(
        "/render?target=lim.*&from={}&until={end}&format=json&pretty=1",
        end - 191
    ));
    assert_eq!(status, 200);
    let reparsed: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    assert_eq!(reparsed, json);
}

/// A streamed aggregate (`sumSeries` of a glob, under per-series functions) holds one
/// chunk of its series at a time, and the budget counts what is held: the glob alone
/// is refused, its aggregates are answered, exactly.
#[test]
fn streamed_aggregates_count_what_they_hold() {
    let dir = scratch();
    let series = 600;
    let (sumi, end) = start(
        dir.path(),
        "max_points_per_query = 6000\nmax_series_per_query = 300\n",
        series,
    );
    let (from, until) = (end - 191, end);
    let (status, body) = render(&sumi, &["lim.*"], from, until, "json");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("max_series_per_query"), "{body}");

    // series s holds s + i at point i
    let base: f64 = (0..series).map(|s| s as f64).sum();
    let sum = |i: usize| base + (series * i) as f64;
    let count = |_: usize| series as f64;
    let max = |i: usize| (series - 1 + i) as f64;
    let cases: [(&str, &dyn Fn(usize) -> f64); 3] = [
        ("sumSeries(lim.*)", &sum),
        ("sumSeries(isNonNull(lim.*))", &count),
        ("maxSeries(lim.*)", &max),
    ];
    for (target, want) in cases {
        let (status, body) = render(&sumi, &[target], from, until, "json");
        assert_eq!(status, 200, "{target}: {body}");
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let points = points_of(&json, 0);
        assert_eq!(points.len(), 20, "{target}");
        for (i, (v, ts)) in points.iter().enumerate() {
            assert_eq!((*v, *ts), (want(i), end - 190 + i as i64 * 10), "{target}");
        }
    }
}
