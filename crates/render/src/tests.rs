//! Byte-for-byte comparisons with graphite-web 1.1.10.
//!
//! `testdata/graphite/` holds graphite-web's answers to the requests named below,
//! served from whisper files with the same points as [`source`] builds (see
//! `testdata/README.md`). Here the same requests go through sumi's query evaluation
//! and renderers, and the bytes must match.

use chrono_tz::Tz;

use sumi_model::glob::PathPattern;
use sumi_query::memory::MemorySource;
use sumi_query::source::SeriesSource;
use sumi_query::{resolve_range, Evaluator, Registry, RequestContext, TimeSeries};

use super::*;

const NOW: i64 = 1_700_000_000;
const FIVE_YEARS: i64 = 5 * 365 * 86_400;

/// The whisper files the references were made from (`testdata/README.md`).
fn source() -> MemorySource {
    let mut m = MemorySource::new();
    let start = NOW - 3600;
    let base = [
        0.1,
        1e-05,
        1e16,
        42.0,
        -0.0,
        1.5e300,
        123.456,
        1.0 / 3.0,
        -2.5,
        1e22,
        0.0001,
        100.0,
    ];
    let mut c: Vec<Option<f64>> = (0..60)
        .map(|i| (i % 7 != 3).then(|| base[i % 12] * (1 + i / 12) as f64))
        .collect();
    c[10] = Some(f64::NAN);
    c[20] = Some(f64::INFINITY);
    c[30] = Some(f64::NEG_INFINITY);
    m.add("a.b.c", 60, FIVE_YEARS, start, &c);
    let ramp: Vec<Option<f64>> = (0..60).map(|i| Some(i as f64)).collect();
    m.add("a.b.d", 60, FIVE_YEARS, start, &ramp);
    m.add("a.b.e", 60, FIVE_YEARS, start, &[]);
    m.add("a.x", 60, FIVE_YEARS, start, &[Some(1.0); 60]);
    m.add("a.x.y", 60, FIVE_YEARS, start, &[Some(2.0); 60]);
    m.add("a.b.we%20ird+name", 60, FIVE_YEARS, start, &[Some(3.0); 10]);
    m.add("a.b.\u{e9}", 60, FIVE_YEARS, start, &[Some(4.0); 10]);
    m.add("a.b.q\"uote,comma", 60, FIVE_YEARS, start, &[Some(5.0); 10]);
    let cycle: Vec<Option<f64>> = (0..60).map(|i| Some((i % 5) as f64)).collect();
    for host in ["web01", "web02", "db01"] {
        m.add(
            &format!("servers.{host}.cpu"),
            60,
            FIVE_YEARS,
            start,
            &cycle,
        );
    }
    m.add(
        "servers.web01.disk.read",
        60,
        FIVE_YEARS,
        start,
        &[Some(1.0); 60],
    );
    m.add(
        "servers.web02.disk.write",
        60,
        FIVE_YEARS,
        start,
        &[Some(1.0); 60],
    );
    m.add("coarse.ten", 600, FIVE_YEARS, NOW - 36_000, &ramp);
    m
}

fn series(targets: &[&str], from: &str, tz: Tz, xff: f64) -> Vec<TimeSeries> {
    let range = resolve_range(Some(from), None, Some("1700000000"), tz, 0).expect("valid range");
    let mut ctx = RequestContext::new(range, tz);
    ctx.x_files_factor = xff;
    let src = source();
    let reg = Registry::standard();
    Evaluator::new(&src, &reg)
        .evaluate_targets(&ctx, targets)
        .expect("evaluates")
}

fn reference(name: &str) -> String {
    let path = format!("{}/testdata/graphite/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn assert_same(got: &Rendered, file: &str, content_type: &str) {
    let want = reference(file);
    let got_text = String::from_utf8_lossy(&got.body);
    if got_text != want {
        let at = got_text
            .bytes()
            .zip(want.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let from = at.saturating_sub(80);
        panic!(
            "{file} differs at byte {at}\n got: {}\nwant: {}",
            got_text
                .get(from..(at + 80).min(got_text.len()))
                .unwrap_or(""),
            want.get(from..(at + 80).min(want.len())).unwrap_or("")
        );
    }
    assert_eq!(got.content_type, content_type, "{file}");
}

#[test]
fn json_like_graphite() {
    let c = series(&["a.b.c"], "-1h", Tz::UTC, 0.0);
    let cases: &[(&str, JsonOptions)] = &[
        ("j_c.json", JsonOptions::default()),
        (
            "j_c_m7.json",
            JsonOptions {
                max_data_points: Some(7),
                ..Default::default()
            },
        ),
        (
            "j_c_m13.json",
            JsonOptions {
                max_data_points: Some(13),
                ..Default::default()
            },
        ),
        (
            "j_c_m1.json",
            JsonOptions {
                max_data_points: Some(1),
                ..Default::default()
            },
        ),
        (
            "j_c_m100.json",
            JsonOptions {
                max_data_points: Some(100),
                ..Default::default()
            },
        ),
        (
            "j_c_nn.json",
            JsonOptions {
                no_null_points: true,
                ..Default::default()
            },
        ),
        (
            "j_c_nn_m7.json",
            JsonOptions {
                no_null_points: true,
                max_data_points: Some(7),
                ..Default::default()
            },
        ),
    ];
    for (file, opts) in cases {
        assert_same(&render_json(&c, opts), file, "application/json");
    }
}

#[test]
fn json_pretty_and_jsonp() {
    let d = series(&["a.b.d"], "-5min", Tz::UTC, 0.0);
    assert_same(
        &render_json(
            &d,
            &JsonOptions {
                pretty: true,
                ..Default::default()
            },
        ),
        "j_c_pretty.json",
        "application/json",
    );
    assert_same(
        &render_json(
            &d,
            &JsonOptions {
                jsonp: Some("cb".into()),
                ..Default::default()
            },
        ),
        "j_c_jsonp.json",
        "text/javascript",
    );
    let c = series(&["a.b.c"], "-1h", Tz::UTC, 0.0);
    let all = JsonOptions {
        pretty: true,
        max_data_points: Some(30),
        jsonp: Some("f".into()),
        ..Default::default()
    };
    assert_same(
        &render_json(&c, &all),
        "j_c_pretty_nan.json",
        "text/javascript",
    );
}

#[test]
fn json_several_series() {
    let all = series(&["a.b.*", "a.x"], "-10min", Tz::UTC, 0.0);
    assert_same(
        &render_json(&all, &JsonOptions::default()),
        "j_all.json",
        "application/json",
    );
    // different steps: each consolidated against the span of all of them
    let mixed = series(&["coarse.ten", "a.b.d"], "-2h", Tz::UTC, 0.0);
    assert_same(
        &render_json(
            &mixed,
            &JsonOptions {
                max_data_points: Some(9),
                ..Default::default()
            },
        ),
        "j_mixed_m9.json",
        "application/json",
    );
    let c = series(&["a.b.c"], "-1h", Tz::UTC, 0.9);
    assert_same(
        &render_json(
            &c,
            &JsonOptions {
                max_data_points: Some(6),
                ..Default::default()
            },
        ),
        "j_xff.json",
        "application/json",
    );
    // noNullPoints applies after maxDataPoints=1 too (it is no `elif` in 1.1.10): the
    // NaN that a.b.c folds into drops that series
    let cd = series(&["a.b.c", "a.b.d"], "-1h", Tz::UTC, 0.0);
    assert_same(
        &render_json(
            &cd,
            &JsonOptions {
                max_data_points: Some(1),
                no_null_points: true,
                ..Default::default()
            },
        ),
        "j_m1_nn.json",
        "application/json",
    );
    let e = series(&["a.b.e", "a.b.d"], "-10min", Tz::UTC, 0.0);
    assert_same(
        &render_json(
            &e,
            &JsonOptions {
                max_data_points: Some(1),
                ..Default::default()
            },
        ),
        "j_e_m1.json",
        "application/json",
    );
}

#[test]
fn json_empty_answers() {
    let none = series(&["does.not.exist"], "-1h", Tz::UTC, 0.0);
    assert_same(
        &render_json(&none, &JsonOptions::default()),
        "j_none.json",
        "application/json",
    );
    let e = series(&["a.b.e"], "-10min", Tz::UTC, 0.0);
    assert_same(
        &render_json(
            &e,
            &JsonOptions {
                no_null_points: true,
                ..Default::default()
            },
        ),
        "j_empty_nn.json",
        "application/json",
    );
}

#[test]
fn json_rewrites_nan_and_infinity_in_names_too() {
    let mut s = TimeSeries::new("x.NaN, Infinity,", 0, 60, 60, vec![Some(f64::NAN)]);
    s.tags = sumi_query::Tags::new();
    let got = render_json(&[s], &JsonOptions::default());
    assert_eq!(
        String::from_utf8(got.body).unwrap(),
        r#"[{"target": "x.null, 1e9999,", "tags": {}, "datapoints": [[null, 0]]}]"#
    );
}

#[test]
fn max_data_points_edge_cases() {
    let s = TimeSeries::new("a", 1_000, 1_600, 60, vec![Some(1.0); 10]);
    // 10 points over 600 s into 3: ceil(10/3) = 4 per point (240 s); the nudge is
    // 240 + 1000 % 60 - 1000 % 240 = 240 s, so int(240 / 60) - 1 = 3 values go
    let w = max_data_points_window(&s, 3, 600);
    assert_eq!(
        w,
        Window {
            start: 1_240,
            skip: 3,
            values_per_point: 4
        }
    );
    // enough room: untouched
    assert_eq!(max_data_points_window(&s, 10, 600).values_per_point, 1);
    // zero and empty series are left alone instead of failing
    assert_eq!(max_data_points_window(&s, 0, 600).values_per_point, 1);
    let empty = TimeSeries::new("e", 0, 600, 60, vec![]);
    assert_eq!(max_data_points_window(&empty, 1, 600).values_per_point, 1);
    let broken = TimeSeries::new("b", 0, 600, 0, vec![Some(1.0)]);
    assert_eq!(max_data_points_window(&broken, 2, 600).values_per_point, 1);
}

#[test]
fn csv_like_graphite() {
    let c = series(&["a.b.c"], "-1h", Tz::UTC, 0.0);
    assert_same(&render_csv(&c, Tz::UTC), "c_c.csv", "text/csv");
    let chicago = chrono_tz::America::Chicago;
    let all = series(&["a.b.*"], "-10min", chicago, 0.0);
    assert_same(&render_csv(&all, chicago), "c_all_chi.csv", "text/csv");
}

#[test]
fn raw_like_graphite() {
    let c = series(&["a.b.c"], "-1h", Tz::UTC, 0.0);
    assert_same(&render_raw(&c), "r_c.txt", "text/plain");
    let all = series(&["a.b.*"], "-10min", Tz::UTC, 0.0);
    assert_same(&render_raw(&all), "r_all.txt", "text/plain");
}

fn find(query: &str) -> Vec<sumi_query::FindNode> {
    source().find(&PathPattern::parse(query)).expect("find")
}

fn ascii() -> JsonResponseOptions {
    JsonResponseOptions::default()
}

#[test]
fn treejson_like_graphite() {
    let cases = [
        ("a.*", false, "f_a.json"),
        ("a.b.*", false, "f_ab.json"),
        ("servers.*.cpu", false, "f_srv.json"),
        ("servers.*", true, "f_srv_w.json"),
        ("servers.*.*", true, "f_srv_w2.json"),
        ("*", false, "f_top.json"),
        ("a.x", false, "f_ax.json"),
        ("a.x.*", false, "f_axs.json"),
        ("nothing.*", false, "f_none.json"),
    ];
    for (query, wildcards, file) in cases {
        assert_same(
            &tree_json(query, &find(query), wildcards, &ascii()),
            file,
            "application/json",
        );
    }
    let utf8 = JsonResponseOptions {
        ensure_ascii: JsonResponseOptions::ensure_ascii_for(Some("*/*")),
        ..ascii()
    };
    assert_same(
        &tree_json("a.b.*", &find("a.b.*"), false, &utf8),
        "f_ab_star.json",
        "application/json;charset=utf-8",
    );
    let jsonp = JsonResponseOptions {
        jsonp: Some("cb".into()),
        ..ascii()
    };
    assert_same(
        &tree_json("a.*", &find("a.*"), false, &jsonp),
        "f_jsonp.json",
        "text/javascript",
    );
    let pretty = JsonResponseOptions {
        pretty: true,
        ..ascii()
    };
    assert_same(
        &tree_json("a.*", &find("a.*"), false, &pretty),
        "f_pretty.json",
        "application/json",
    );
    assert_same(
        &tree_json("zzz.*", &find("zzz.*"), false, &pretty),
        "f_empty_pretty.json",
        "application/json",
    );
}

#[test]
fn completer_like_graphite() {
    let q = completer_query("a.", false);
    assert_eq!(q, "a.*");
    assert_same(
        &completer(&find(&q), false, &ascii()),
        "f_compl.json",
        "application/json",
    );
    assert_same(
        &completer(&find(&q), true, &ascii()),
        "f_compl_w.json",
        "application/json",
    );
    let q = completer_query("servers..cpu", false);
    assert_eq!(q, "servers*.cpu*");
    assert_same(
        &completer(&find(&q), false, &ascii()),
        "f_compl2.json",
        "application/json",
    );
    assert_eq!(
        completer_query("servers.web01,db01.c", true),
        "servers.{web01,db01}.c*"
    );
    assert_eq!(completer_query("a.{b,c}*", true), "a.{b,c}*");
}

#[test]
fn nodelist_like_graphite() {
    let nodes = find("servers.*.*");
    assert_same(
        &node_list(&nodes, 1, &ascii()).unwrap(),
        "f_nodelist.json",
        "application/json",
    );
    assert_same(
        &node_list(&nodes, -1, &ascii()).unwrap(),
        "f_nodelist_d.json",
        "application/json",
    );
    let err = node_list(&nodes, 7, &ascii()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "path \"servers.db01.cpu\" has no node at position 7"
    );
    assert!(node_list(&nodes, -9, &ascii()).is_err());
}

#[test]
fn find_json_nodes() {
    let got = find_json(
        &find("a.*"),
        &|n| if n.is_leaf { vec![(1.5, 2.0)] } else { vec![] },
        &ascii(),
    );
    assert_eq!(
        String::from_utf8(got.body).unwrap(),
        r#"[{"path": "a.b", "is_leaf": false}, {"path": "a.x", "is_leaf": false}, {"path": "a.x", "is_leaf": true, "intervals": [{"start": 1.5, "end": 2.0}]}]"#
    );
}

#[test]
fn expand_and_index_like_graphite() {
    let results = |queries: &[&str]| -> Vec<(String, Vec<sumi_query::FindNode>)> {
        queries.iter().map(|q| (q.to_string(), find(q))).collect()
    };
    assert_same(
        &expand(&results(&["a.*", "servers.*"]), false, false, &ascii()),
        "x_1.json",
        "application/json",
    );
    assert_same(
        &expand(&results(&["servers.*", "a.*"]), true, false, &ascii()),
        "x_2.json",
        "application/json",
    );
    assert_same(
        &expand(&results(&["a.*"]), false, true, &ascii()),
        "x_3.json",
        "application/json",
    );
    let utf8 = JsonResponseOptions {
        ensure_ascii: false,
        ..ascii()
    };
    assert_same(
        &expand(&results(&["a.b.*"]), false, false, &utf8),
        "x_4.json",
        "application/json;charset=utf-8",
    );
    let pretty = JsonResponseOptions {
        pretty: true,
        ..ascii()
    };
    assert_same(
        &expand(
            &results(&["servers.*", "a.*", "servers.*"]),
            true,
            false,
            &pretty,
        ),
        "x_5.json",
        "application/json",
    );
    let leaves: Vec<String> = find("**")
        .into_iter()
        .filter(|n| n.is_leaf)
        .map(|n| n.path)
        .collect();
    assert_same(
        &index_json(&leaves, &ascii()),
        "i_1.json",
        "application/json",
    );
    let jsonp = JsonResponseOptions {
        jsonp: Some("cb".into()),
        ..ascii()
    };
    assert_same(&index_json(&leaves, &jsonp), "i_2.json", "text/javascript");
}

#[test]
fn unquote_plus_like_python() {
    assert_eq!(find::unquote_plus("we%20ird+name"), "we ird name");
    assert_eq!(find::unquote_plus("100%"), "100%");
    assert_eq!(find::unquote_plus("%zz%4"), "%zz%4");
    assert_eq!(find::unquote_plus("%+1"), "% 1");
    assert_eq!(find::unquote_plus("%C3%A9"), "\u{e9}");
    assert_eq!(find::unquote_plus("%e9"), "\u{fffd}");
}
