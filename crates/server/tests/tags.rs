//! Graphite tags end to end: tagged names over carbon plaintext and pickle put in
//! carbon's canonical form (invalid ones counted under `invalid_tags`), the `/tags`
//! API, `seriesByTag` in `/render`, and `/tags/delSeries` surviving a restart.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::{now, points_of, scratch, Sumi};
use serde_json::{json, Value};

/// A length-prefixed pickle of `[(path, (ts, value)), ...]` made by CPython itself.
fn python_pickle(points: &[(&str, i64, f64)]) -> Vec<u8> {
    let literal: Vec<String> = points
        .iter()
        .map(|(p, t, v)| format!("({p:?}, ({t}, {v:?}))"))
        .collect();
    let script = format!(
        "import pickle, struct, sys\n\
         data = pickle.dumps([{}], protocol=2)\n\
         sys.stdout.buffer.write(struct.pack('!L', len(data)) + data)\n",
        literal.join(", ")
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3");
    assert!(out.status.success());
    out.stdout
}

fn send_pickle(sumi: &Sumi, msg: &[u8]) {
    let mut s = TcpStream::connect(sumi.pickle).unwrap();
    s.write_all(msg).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = s.read(&mut [0u8; 16]);
}

/// Percent-encodes everything but unreserved characters.
fn q(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn render(sumi: &Sumi, target: &str, from: i64) -> Value {
    sumi.get_json(&format!(
        "/render?target={}&from={from}&format=json",
        q(target)
    ))
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s["target"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tagged_ingest_tags_api_and_series_by_tag() {
    let dir = scratch();
    let data = dir.path().join("data");
    let mut sumi = Sumi::start(&data, &[]);
    let t = now() - now() % 60 - 120;
    sumi.send_tcp(
        format!(
            "cpu.usage;host=h1;dc=a 1 {t}\n\
             cpu.usage;dc=b;host=h2 2 {t}\n\
             cpu.usage;host=h3 3 {t}\n\
             ~cpu.usage;host=h4;host=h5 5 {t}\n\
             bad;k= 1 {t}\n\
             bad;=v 1 {t}\n\
             bad;k=~v 1 {t}\n"
        )
        .as_bytes(),
    );
    send_pickle(
        &sumi,
        &python_pickle(&[("disk;z=1;a=2", t, 7.0), ("disk;x", t, 1.0)]),
    );
    sumi.wait_stored(5);
    sumi.wait_metric("sumi_points_rejected_total{reason=\"invalid_tags\"}", 4.0);

    // canonical names: tags sorted, the last of a repeated tag, no leading `~`
    let found = sumi.get_json("/tags/findSeries?expr=name%3Dcpu.usage");
    assert_eq!(
        found,
        json!([
            "cpu.usage;dc=a;host=h1",
            "cpu.usage;dc=b;host=h2",
            "cpu.usage;host=h3",
            "cpu.usage;host=h5"
        ])
    );
    assert_eq!(
        sumi.get_json("/tags/findSeries?expr=a%3D2"),
        json!(["disk;a=2;z=1"])
    );

    // all four operators; `!=` keeps series without the tag
    let from = t - 60;
    let r = render(&sumi, "seriesByTag('name=cpu.usage','dc!=a')", from);
    assert_eq!(
        names(&r),
        [
            "cpu.usage;dc=b;host=h2",
            "cpu.usage;host=h3",
            "cpu.usage;host=h5"
        ]
    );
    assert_eq!(points_of(&r, 0), vec![(2.0, t)]);
    let r = render(&sumi, "seriesByTag('host=~h[12]','dc!=~b')", from);
    assert_eq!(names(&r), ["cpu.usage;dc=a;host=h1"]);
    let r = render(&sumi, "seriesByTag('dc=b')", from);
    assert_eq!(names(&r), ["cpu.usage;dc=b;host=h2"]);
    // aliasByTags reads the tags of the canonical name
    let r = render(
        &sumi,
        "aliasByTags(seriesByTag('name=cpu.usage','host=~h[13]'),'host','name')",
        from,
    );
    assert_eq!(names(&r), ["h1.cpu.usage", "h3.cpu.usage"]);
    // only `!=`: refused as graphite-web does
    let (status, body) = sumi.get(&format!(
        "/render?target={}&format=json",
        q("seriesByTag('dc!=a')")
    ));
    assert_eq!(status, 400, "{body}");

    // the tag lists
    let tags = sumi.get_json("/tags");
    let listed: Vec<&str> = tags
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["a", "dc", "host", "name", "z"]);
    assert_eq!(
        sumi.get_json("/tags?filter=h&limit=1")
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let dc = sumi.get_json("/tags/dc");
    assert_eq!(dc["tag"], "dc");
    let values: Vec<(&str, u64)> = dc["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["value"].as_str().unwrap(), v["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(values, [("a", 1), ("b", 1)]);
    assert_eq!(sumi.get_json("/tags/nosuch"), Value::Null);
    assert_eq!(
        sumi.get_json("/tags/autoComplete/tags?expr=name%3Dcpu.usage"),
        json!(["dc", "host"])
    );
    assert_eq!(
        sumi.get_json(
            "/tags/autoComplete/values?tag=host&valuePrefix=h&expr=name%3Dcpu.usage&limit=2"
        ),
        json!(["h1", "h2"])
    );
    assert_eq!(
        sumi.get_json("/tags/autoComplete/values?tag=dc"),
        json!(["a", "b"])
    );

    // errors and methods as graphite-web answers them
    assert_eq!(sumi.get("/tags/findSeries").0, 400);
    assert_eq!(sumi.get("/tags/findSeries?expr=dc%21%3Da").0, 400);
    assert_eq!(sumi.get("/tags/findSeries?expr=nooperator").0, 400);
    assert_eq!(sumi.get("/tags/autoComplete/values").0, 400);
    assert_eq!(sumi.get("/tags/tagSeries?path=a;b=c").0, 405);
    assert_eq!(sumi.post_form("/tags/tagSeries", &[]).0, 400);
    assert_eq!(
        sumi.post_form("/tags/tagSeries", &[("path", "m;k=")]).0,
        500
    );

    // tagSeries canonicalises and creates; tagMultiSeries answers each
    let (status, body) = sumi.post_form("/tags/tagSeries", &[("path", "new.m;b=2;a=1")]);
    assert_eq!((status, body.as_str()), (200, "\"new.m;a=1;b=2\""));
    let (status, body) = sumi.post_form(
        "/tags/tagMultiSeries",
        &[("path[]", "x;k=1"), ("path[]", "y;k=2;j=0")],
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!(["x;k=1", "y;j=0;k=2"])
    );
    assert_eq!(
        sumi.get_json("/tags/findSeries?expr=k%21%3D"),
        json!(["x;k=1", "y;j=0;k=2"])
    );

    // delSeries: gone from the tag index, also after a restart
    let (status, body) = sumi.post_form("/tags/delSeries", &[("path", "cpu.usage;host=h1;dc=a")]);
    assert_eq!((status, body.as_str()), (200, "true"));
    let remaining = json!(["cpu.usage;dc=b;host=h2"]);
    assert_eq!(sumi.get_json("/tags/findSeries?expr=dc%21%3D"), remaining);
    sumi.stop();
    let sumi = Sumi::start(&data, &[]);
    assert_eq!(sumi.get_json("/tags/findSeries?expr=dc%21%3D"), remaining);
    assert_eq!(
        sumi.get_json("/tags/findSeries?expr=name%3Dnew.m"),
        json!(["new.m;a=1;b=2"])
    );
    // tagged again through tagSeries: back in the index
    sumi.post_form("/tags/tagSeries", &[("path", "cpu.usage;dc=a;host=h1")]);
    assert_eq!(
        sumi.get_json("/tags/findSeries?expr=dc%21%3D")
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// A tagged series rendered by its full name as a plain target, and found by it, as
/// graphite-web 1.1.10's standard finder answers: a pattern holding `;` is the name
/// of one series, looked up as written (carbon stores the canonical name and the
/// finder hashes the pattern unchanged), never globbed, and named by the pattern.
#[test]
fn tagged_name_as_plain_target() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let t = now() - now() % 60 - 120;
    sumi.send_tcp(
        format!(
            "cpu.usage;host=web01;dc=eu 4 {t}\n\
             cpu.usage;dc=us;host=web02 6 {t}\n\
             cpu.usage 9 {t}\n"
        )
        .as_bytes(),
    );
    sumi.wait_stored(3);
    let from = t - 60;

    let name = "cpu.usage;dc=eu;host=web01";
    let r = render(&sumi, name, from);
    assert_eq!(names(&r), [name], "{r}");
    assert_eq!(points_of(&r, 0), vec![(4.0, t)]);
    // the same series as seriesByTag finds
    let by_tag = render(&sumi, "seriesByTag('name=cpu.usage','dc=eu')", from);
    assert_eq!(names(&by_tag), [name]);
    // inside a function, and next to a plain path
    let r = render(
        &sumi,
        "sumSeries(cpu.usage;dc=us;host=web02,cpu.usage)",
        from,
    );
    assert_eq!(points_of(&r, 0), vec![(15.0, t)], "{r}");

    // tags in another order: graphite-web looks the pattern up as written, finds nothing
    assert_eq!(render(&sumi, "cpu.usage;host=web01;dc=eu", from), json!([]));
    // no globbing in a tagged pattern, and an unknown tag value is nothing
    assert_eq!(render(&sumi, "cpu.usage;dc=*;host=web01", from), json!([]));
    assert_eq!(render(&sumi, "cpu.usage;dc=eu;host=web09", from), json!([]));

    // /metrics/find answers the leaf under the pattern
    let found = sumi.get_json(&format!("/metrics/find?query={}", q(name)));
    let found = found.as_array().unwrap_or_else(|| panic!("{found}"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["id"], name);
    assert_eq!(found[0]["leaf"], 1);
    let found = sumi.get_json(&format!(
        "/metrics/find?query={}",
        q("cpu.usage;host=web01;dc=eu")
    ));
    assert_eq!(found, json!([]));
    // the tree still holds only the plain path
    let found = sumi.get_json("/metrics/find?query=cpu.*");
    let ids: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["cpu.usage"]);
}
