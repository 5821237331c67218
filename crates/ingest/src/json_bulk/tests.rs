//! The JSON bulk parser on Mackerel-shaped bodies: points, tags, every refusal and its
//! message, compression and limits, and a round-trip property for numbers.

use std::io::Write;

use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
use flate2::Compression;
use proptest::prelude::*;

use super::*;

const NOW: i64 = 1_700_000_500;

fn parse(body: &str) -> Result<Vec<(String, i64, f64)>, BulkError> {
    parse_enc(body.as_bytes(), None)
}

fn parse_enc(body: &[u8], enc: Option<&str>) -> Result<Vec<(String, i64, f64)>, BulkError> {
    let mut batch = Batch::new();
    let out = parse_json_bulk(body, enc, NOW, &mut batch, &BulkLimits::default())?;
    assert_eq!(out.points, batch.len());
    Ok(batch
        .iter()
        .map(|(n, p)| (n.to_string(), p.ts, p.value))
        .collect())
}

fn p(name: &str, ts: i64, value: f64) -> (String, i64, f64) {
    (name.to_string(), ts, value)
}

fn message(body: &str) -> String {
    parse(body).unwrap_err().to_string()
}

#[test]
fn mackerel_bodies() {
    let body = r#"[
        {"hostId": "2eQGEaLxibb", "name": "custom.test.a", "time": 1700000000, "value": 12.5},
        {"hostId": "2eQGEaLxibb", "name": "custom.test.b", "time": 1700000000.9, "value": 3},
        {"name": "service.requests", "time": -1, "value": -0.25},
        {"name": "big", "time": 1.7e9, "value": 1e999, "unknown": {"nested": [1, {"x": null}]}},
        {"value": 1, "time": 5, "name": "order.does.not.matter"}
    ]"#;
    assert_eq!(
        parse(body).unwrap(),
        vec![
            p("2eQGEaLxibb.custom.test.a", 1_700_000_000, 12.5),
            p("2eQGEaLxibb.custom.test.b", 1_700_000_000, 3.0),
            p("service.requests", NOW, -0.25),
            p("big", 1_700_000_000, f64::INFINITY),
            p("order.does.not.matter", 5, 1.0),
        ]
    );
    assert_eq!(parse("[]").unwrap(), vec![]);
    assert_eq!(parse(" \n[ ] \n").unwrap(), vec![]);
}

#[test]
fn tags_become_canonical_graphite_tags() {
    let body = r#"[
        {"name": "cpu.user", "time": 1, "value": 1, "tags": {"z": "1", "dc": "eu-west", "a-b": "x"}},
        {"hostId": "h1", "name": "disk;mount=/;dev=sda", "time": 1, "value": 2, "tags": {"dev": "sdb"}},
        {"name": "m", "time": 1, "value": 3, "tags": {}},
        {"name": "m", "time": 1, "value": 4, "tags": null, "hostId": null}
    ]"#;
    assert_eq!(
        parse(body).unwrap(),
        vec![
            p("cpu.user;a-b=x;dc=eu-west;z=1", 1, 1.0),
            p("h1.disk;dev=sdb;mount=/", 1, 2.0),
            p("m", 1, 3.0),
            p("m", 1, 4.0),
        ]
    );
}

#[test]
fn renamed_names_are_counted() {
    let mut batch = Batch::new();
    let out = parse_json_bulk(
        br#"[{"name": "a..b", "time": 1, "value": 1}, {"name": "c", "time": 1, "value": 1}]"#,
        None,
        NOW,
        &mut batch,
        &BulkLimits::default(),
    )
    .unwrap();
    assert_eq!(
        out,
        BulkOutcome {
            points: 2,
            renamed: 1
        }
    );
    let mut counts = LocalCounts::default();
    out.count_into(&mut counts);
    assert_eq!((counts.received, counts.renamed), (2, 1));
    assert_eq!(batch.iter().next().unwrap().0, "a.b");
}

#[test]
fn errors_name_the_element_and_the_problem() {
    let cases = [
        (
            r#"[{"name": "a", "time": 1, "value": 1}, {"name": "b", "time": 1, "value": "2"}]"#,
            "element 1 \"value\" is a string, expected a number",
        ),
        (
            r#"[{"name": "a", "time": 1}]"#,
            "element 0 has no \"value\"",
        ),
        (r#"[{"time": 1, "value": 1}]"#, "element 0 has no \"name\""),
        (
            r#"[{"name": "a", "value": 1}]"#,
            "element 0 has no \"time\"",
        ),
        (
            r#"[{"name": "a", "time": null, "value": 1}]"#,
            "element 0 \"time\" is null, expected a number",
        ),
        (
            r#"[{"name": 5, "time": 1, "value": 1}]"#,
            "element 0 \"name\" is a number, expected a string",
        ),
        (r#"[1]"#, "element 0 is a number, expected an object"),
        (
            r#"[{"name": "a", "name": "b", "time": 1, "value": 1}]"#,
            "element 0 has \"name\" twice",
        ),
        (
            r#"[{"name": "", "time": 1, "value": 1}]"#,
            "element 0 name: empty metric name",
        ),
        (
            r#"[{"name": "a\u0001", "time": 1, "value": 1}]"#,
            "element 0 name: metric name contains control character 0x01",
        ),
        (
            r#"[{"name": "a", "time": 1e300, "value": 1}]"#,
            "element 0 \"time\" 1e300 does not fit in 64-bit seconds",
        ),
        (
            r#"[{"name": "a", "hostId": "", "time": 1, "value": 1}]"#,
            "element 0 \"hostId\" \"\" is not a path node (empty or holding ';')",
        ),
        (
            r#"[{"name": "a", "hostId": "h;x=y", "time": 1, "value": 1}]"#,
            "element 0 \"hostId\" \"h;x=y\" is not a path node (empty or holding ';')",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": {"name": "x"}}]"#,
            "element 0 tag \"name\" is reserved for the metric name",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": {"k": "~v"}}]"#,
            "element 0 tags: value of tag \"k\" may not start with '~'",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": {"k": "a;b"}}]"#,
            "element 0 tags: character ';' is not allowed in value \"a;b\" of tag \"k\"",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": {"k!": "v"}}]"#,
            "element 0 tags: character '!' is not allowed in tag \"k!\"",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": {"k": ""}}]"#,
            "element 0 tags: value for tag \"k\" may not be empty",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": {"k": 1}}]"#,
            "element 0 \"tags\" is a number, expected an object of strings",
        ),
        (
            r#"[{"name": "a", "time": 1, "value": 1, "tags": ["k"]}]"#,
            "element 0 \"tags\" is an array, expected an object",
        ),
        (
            r#"[{"name": "a;k", "time": 1, "value": 1}]"#,
            "element 0 tags: invalid tag segment \"k\" (expected tag=value)",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(message(body), want, "{body}");
    }
}

#[test]
fn syntax_errors_say_where() {
    assert_eq!(
        message("[\n  {\"name\": \"a\", \"time\": 1, \"value\": 1},\n  {\"name\": \"b\" \"time\": 1}\n]"),
        "element 1: invalid JSON at line 3 column 16: expected ',' or '}' in an element"
    );
    assert_eq!(
        message(r#"{"name": "a", "time": 1, "value": 1}"#),
        "invalid JSON at line 1 column 1: the body must be a JSON array of {\"name\", \"time\", \"value\"}"
    );
    assert_eq!(
        message("[] x"),
        "invalid JSON at line 1 column 4: text after the array"
    );
    assert_eq!(
        message(r#"[{"name": "a", "time": 1, "value": 1} {"#),
        "invalid JSON at line 1 column 39: expected ',' or ']' after an element"
    );
    for bad in [
        "",
        "[",
        "[,]",
        r#"[{"name": "a", "time": 1, "value": 1},]"#,
        r#"[{"name": "a", "time": 01, "value": 1}]"#,
        r#"[{"name": "a", "time": 1, "value": NaN}]"#,
        r#"[{"name": "a", "time": 1, "value": 1, "x": [1,]}]"#,
        r#"[{"name": "a\x", "time": 1, "value": 1}]"#,
        r#"[{'name': 'a'}]"#,
        "[{\"name\": \"\u{7f}\", \"time\": 1, \"value\": 1}]",
    ] {
        let err = parse(bad).unwrap_err();
        assert_eq!(err.status(), 400, "{bad}: {err}");
    }
    assert!(parse_enc(b"[{\"name\": \"\xff\", \"time\": 1, \"value\": 1}]", None).is_err());
}

#[test]
fn nothing_is_appended_when_one_element_is_bad() {
    let mut batch = Batch::new();
    batch.push("already.there", 1, 1.0);
    let body = br#"[{"name": "a", "time": 1, "value": 1}, {"name": "b", "time": 1, "value": 2}, {"name": "c"}]"#;
    let err = parse_json_bulk(body, None, NOW, &mut batch, &BulkLimits::default()).unwrap_err();
    assert!(matches!(err, BulkError::Element { index: 2, .. }));
    assert_eq!(batch.len(), 1);
    batch.push("next", 2, 2.0);
    let names: Vec<&str> = batch.iter().map(|(n, _)| n).collect();
    assert_eq!(names, vec!["already.there", "next"]);
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn compressed_bodies() {
    let body = br#"[{"name": "a", "time": 1, "value": 1}]"#;
    let want = vec![p("a", 1, 1.0)];
    let gz = gzip(body);
    assert_eq!(parse_enc(&gz, Some("gzip")).unwrap(), want);
    assert_eq!(parse_enc(&gz, Some(" GZIP ")).unwrap(), want);
    assert_eq!(parse_enc(&gz, Some("x-gzip")).unwrap(), want);
    // two gzip members one after the other
    let half = br#"[{"name": "a", "time": 1, "value": 1},"#;
    let rest = br#" {"name": "b", "time": 2, "value": 2}]"#;
    let two = [gzip(half), gzip(rest)].concat();
    assert_eq!(parse_enc(&two, Some("gzip")).unwrap().len(), 2);
    let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
    z.write_all(body).unwrap();
    assert_eq!(
        parse_enc(&z.finish().unwrap(), Some("deflate")).unwrap(),
        want
    );
    let mut d = DeflateEncoder::new(Vec::new(), Compression::default());
    d.write_all(body).unwrap();
    assert_eq!(
        parse_enc(&d.finish().unwrap(), Some("deflate")).unwrap(),
        want
    );
    assert_eq!(parse_enc(body, Some("identity")).unwrap(), want);

    let err = parse_enc(body, Some("gzip")).unwrap_err();
    assert!(
        matches!(
            err,
            BulkError::Decompress {
                encoding: "gzip",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.status(), 400);
    assert!(matches!(
        parse_enc(&gz[..gz.len() - 5], Some("gzip")),
        Err(BulkError::Decompress { .. })
    ));
    let err = parse_enc(body, Some("br")).unwrap_err();
    assert_eq!(err, BulkError::UnsupportedEncoding("br".into()));
    assert_eq!(err.status(), 415);
}

#[test]
fn size_limits() {
    let limits = BulkLimits {
        max_body_bytes: 10_000,
        max_decoded_bytes: 100_000,
        max_elements: 3,
    };
    let mut batch = Batch::new();
    // a gzip bomb: 10 MB of spaces in a few KB
    let bomb = gzip(&vec![b' '; 10_000_000]);
    assert!(bomb.len() < 10_000);
    let err = parse_json_bulk(&bomb, Some("gzip"), NOW, &mut batch, &limits).unwrap_err();
    assert_eq!(err, BulkError::DecodedTooLarge { limit: 100_000 });
    assert_eq!(err.status(), 413);
    let big = vec![b' '; 10_001];
    let err = parse_json_bulk(&big, None, NOW, &mut batch, &limits).unwrap_err();
    assert_eq!(
        err,
        BulkError::BodyTooLarge {
            len: 10_001,
            limit: 10_000
        }
    );
    let four = br#"[{"name":"a","time":1,"value":1},{"name":"a","time":1,"value":1},{"name":"a","time":1,"value":1},{"name":"a","time":1,"value":1}]"#;
    let err = parse_json_bulk(four, None, NOW, &mut batch, &limits).unwrap_err();
    assert_eq!(err, BulkError::TooManyElements { limit: 3 });
    assert!(batch.is_empty());
    assert!(parse_json_bulk(&four[..four.len() - 34], None, NOW, &mut batch, &limits).is_err());
    assert_eq!(
        parse_json_bulk(
            b"[{\"name\":\"a\",\"time\":1,\"value\":1}]",
            None,
            NOW,
            &mut batch,
            &limits
        )
        .unwrap()
        .points,
        1
    );
}

#[test]
fn escaped_strings() {
    let body = r#"[{"name": "caf\u00e9.\u6e29\ud83d\ude00.a\/b", "hostId": "h\u0031", "time": 1, "value": 1}]"#;
    assert_eq!(
        parse(body).unwrap(),
        vec![p("h1.caf\u{e9}.\u{6e29}\u{1F600}.a/b", 1, 1.0)]
    );
}

proptest! {
    // Every finite f64 written by Rust's shortest round-trip formatting (as JSON
    // writers do) reads back to the same bits.
    #[test]
    fn values_round_trip(bits in any::<u64>(), ts in -1_000_000_000_000i64..1_000_000_000_000) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite());
        let body = format!(r#"[{{"name":"x","time":{ts},"value":{v:e}}},{{"name":"y","time":{ts}.75,"value":{v}}}]"#);
        let got = parse(&body).unwrap();
        // `t.75` truncates toward zero, to `t` whatever its sign; -1 is now
        let ts = if ts == -1 { NOW } else { ts };
        prop_assert_eq!(got[0].2.to_bits(), v.to_bits());
        prop_assert_eq!(got[1].2.to_bits(), v.to_bits());
        prop_assert_eq!(got[0].1, ts);
        prop_assert_eq!(got[1].1, ts);
    }
}
