//! GrowthForecast's HTTP API against the real `sumi serve`: posts in every mode, the
//! JSON answers' shapes, create/edit/delete of graphs and complex graphs, exports,
//! the escaping rule, images, and what survives a restart.

mod common;

use std::time::Duration;

use common::{now, points_of, scratch, Sumi};
use serde_json::{json, Value};

fn post(sumi: &Sumi, path: &str, form: &[(&str, &str)]) -> Value {
    let (status, body) = sumi.post_form(path, form);
    assert_eq!(status, 200, "POST {path}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["error"], 0, "{v}");
    v
}

fn post_json(sumi: &Sumi, path: &str, body: &Value) -> (u16, String) {
    let url = format!("http://{}{}", sumi.http, path);
    match ureq::post(&url)
        .timeout(Duration::from_secs(30))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string())
    {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
        Err(e) => panic!("POST {url}: {e}"),
    }
}

fn get_bytes(sumi: &Sumi, path: &str) -> (u16, String, Vec<u8>) {
    let url = format!("http://{}{}", sumi.http, path);
    let resp = match ureq::get(&url).timeout(Duration::from_secs(30)).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {url}: {e}"),
    };
    let status = resp.status();
    let ct = resp.content_type().to_string();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes).unwrap();
    (status, ct, bytes)
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    let reader = png::Decoder::new(bytes).read_info().expect("a PNG");
    (reader.info().width, reader.info().height)
}

/// The stored points of one series over `[from, until]`.
fn stored(sumi: &Sumi, series: &str, from: i64, until: i64) -> Vec<(f64, i64)> {
    let q = format!(
        "/render?target={}&from={from}&until={until}&format=json",
        urlencode(series)
    );
    let json = sumi.get_json(&q);
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{q}: {json}");
    points_of(&json, 0)
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn every_mode_stores_what_growthforecast_would_draw() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let t0 = now() - now() % 60 - 600;
    let ts = |i: i64| (t0 + i * 60).to_string();

    // gauge (the default): every number is stored as it is
    let v = post(
        &sumi,
        "/api/shop/orders/paid",
        &[("number", "5"), ("timestamp", &ts(0))],
    );
    let data = &v["data"];
    for key in [
        "id",
        "service_name",
        "section_name",
        "graph_name",
        "number",
        "mode",
        "description",
        "sort",
        "gmode",
        "color",
        "ulimit",
        "llimit",
        "sulimit",
        "sllimit",
        "type",
        "stype",
        "meta",
        "created_at",
        "updated_at",
        "timestamp",
        "md5",
        "adjust",
        "adjustval",
        "unit",
    ] {
        assert!(data.get(key).is_some(), "no {key} in {data}");
    }
    assert_eq!(data["number"], 5);
    assert_eq!(data["mode"], "gauge");
    assert_eq!(data["llimit"], -1000000000);
    assert_eq!(data["sulimit"], 100000);
    assert_eq!(data["type"], "AREA");
    assert_eq!(data["series"], "shop.orders.paid");
    assert_eq!(data["timestamp"], t0);
    assert!(data["color"].as_str().unwrap().starts_with('#'));
    post(
        &sumi,
        "/api/shop/orders/paid",
        &[("number", "7.5"), ("timestamp", &ts(1))],
    );

    // count: added to the current number
    post(
        &sumi,
        "/api/shop/orders/count",
        &[("number", "2"), ("mode", "count"), ("timestamp", &ts(0))],
    );
    let v = post(
        &sumi,
        "/api/shop/orders/count",
        &[("number", "3"), ("mode", "count"), ("timestamp", &ts(1))],
    );
    assert_eq!(v["data"]["number"], 5);

    // modified: stored only when it changes
    for (i, n) in [(0, "4"), (1, "4"), (2, "6")] {
        post(
            &sumi,
            "/api/shop/orders/modified",
            &[("number", n), ("mode", "modified"), ("timestamp", &ts(i))],
        );
    }

    // derive: the counter is stored; the graph shows its rate
    post(
        &sumi,
        "/api/shop/orders/bytes",
        &[("number", "100"), ("mode", "derive"), ("timestamp", &ts(0))],
    );
    post(
        &sumi,
        "/api/shop/orders/bytes",
        &[("number", "700"), ("mode", "derive"), ("timestamp", &ts(1))],
    );

    let (from, until) = (t0 - 1, t0 + 300);
    assert_eq!(
        stored(&sumi, "shop.orders.paid", from, until),
        [(5.0, t0), (7.5, t0 + 60)]
    );
    assert_eq!(
        stored(&sumi, "shop.orders.count", from, until),
        [(2.0, t0), (5.0, t0 + 60)]
    );
    assert_eq!(
        stored(&sumi, "shop.orders.modified", from, until),
        [(4.0, t0), (6.0, t0 + 120)]
    );
    assert_eq!(
        stored(&sumi, "shop.orders.bytes", from, until),
        [(100.0, t0), (700.0, t0 + 60)]
    );

    // the derive graph's export: 600 in 60 s is 10 a second, at 1-minute resolution
    let x = sumi.get_json("/xport/shop/orders/bytes?t=sh");
    assert_eq!(x["column_names"], json!(["bytes"]));
    assert_eq!(x["step"], 60);
    let start = x["start_timestamp"].as_i64().unwrap();
    let rows = x["rows"].as_array().unwrap();
    let at = |t: i64| rows[((t - start) / 60) as usize][0].as_f64();
    let rate = at(t0).unwrap_or_else(|| panic!("no rate: {x}"));
    assert!((rate - 10.0).abs() < 1e-9, "{rate}: {x}");
    // after the last post the counter stands still: the rate is 0, as RRD's DERIVE
    assert_eq!(at(t0 + 180), Some(0.0), "{x}");

    // a gauge holds its number until the next post (GrowthForecast's sampling)
    let x = sumi.get_json("/xport/shop/orders/paid?t=sh");
    let start = x["start_timestamp"].as_i64().unwrap();
    let rows = x["rows"].as_array().unwrap();
    let at = |t: i64| rows[((t - start) / 60) as usize][0].as_f64();
    assert_eq!(at(t0), Some(5.0));
    assert_eq!(at(t0 + 240), Some(7.5));

    // GET answers the row
    let g = sumi.get_json("/api/shop/orders/count");
    assert_eq!(g["number"], 5);
    assert_eq!(g["mode"], "count");
    assert_eq!(sumi.get("/api/shop/orders/none").0, 404);
}

#[test]
fn subtract_is_the_change_between_posts() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let t0 = now() - now() % 300 - 1800;
    for (i, n) in [10, 15, 12, 12, 20].iter().enumerate() {
        let ts = (t0 + i as i64 * 300).to_string();
        post(
            &sumi,
            "/api/app/jobs/done",
            &[("number", &n.to_string()), ("timestamp", &ts)],
        );
    }
    let x = sumi.get_json("/xport/app/jobs/done?t=h&gmode=subtract");
    let start = x["start_timestamp"].as_i64().unwrap();
    assert_eq!(x["step"], 300);
    let rows = x["rows"].as_array().unwrap();
    let at = |t: i64| rows[((t - start) / 300) as usize][0].as_f64();
    assert_eq!(at(t0 + 300), Some(5.0), "{x}");
    assert_eq!(at(t0 + 600), Some(-3.0));
    assert_eq!(at(t0 + 900), Some(0.0));
    assert_eq!(at(t0 + 1200), Some(8.0));
    // the summary reports [cur, avg, max, min]
    let s = sumi.get_json("/summary/app/jobs/done?t=h");
    assert_eq!(s["app/jobs/done"][0], 20);
    assert_eq!(s["app/jobs/done"][2], 20);
}

#[test]
fn forms_multipart_and_validation() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    // curl -F sends multipart/form-data
    let boundary = "------------------------sumitest";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"number\"\r\n\r\n42\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"color\"\r\n\r\n#123456\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\norders per minute\r\n--{boundary}--\r\n"
    );
    let url = format!("http://{}/api/multi/part/graph", sumi.http);
    let resp = ureq::post(&url)
        .set(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )
        .send_string(&body)
        .expect("multipart post");
    let v: Value = serde_json::from_str(&resp.into_string().unwrap()).unwrap();
    assert_eq!(v["data"]["number"], 42);
    assert_eq!(v["data"]["color"], "#123456");
    assert_eq!(v["data"]["description"], "orders per minute");

    let (status, body) = sumi.post_form(
        "/api/multi/part/graph",
        &[
            ("mode", "sometimes"),
            ("color", "blue"),
            ("timestamp", "1000"),
        ],
    );
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"], 1);
    assert_eq!(
        v["messages"],
        json!([
            "number is missing",
            "count or gauge or modified or derive",
            "invalid color format",
            "\"timestamp\" must be a INT number and greater than 315360010\""
        ])
    );
    let (status, _) = sumi.post_form("/api/multi/part/graph", &[("number", "ten")]);
    assert_eq!(status, 400);
}

#[test]
fn names_escape_into_graphite_nodes_and_back() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let (service, section, graph) = ("my.service", "load avg", "ユーザー 50%");
    let path = format!(
        "/api/{}/{}/{}",
        urlencode(service),
        urlencode(section),
        urlencode(graph)
    );
    let ts = now() - 120;
    let v = post(
        &sumi,
        &path,
        &[("number", "3"), ("timestamp", &ts.to_string())],
    );
    let series = "my%2Eservice.load%20avg.%E3%83%A6%E3%83%BC%E3%82%B6%E3%83%BC%2050%25";
    assert_eq!(v["data"]["series"], series);
    assert_eq!(v["data"]["graph_name"], graph);

    // the Graphite API sees the series under its escaped nodes
    let nodes = sumi.get_json("/metrics/find?query=*");
    assert_eq!(nodes[0]["id"], "my%2Eservice", "{nodes}");
    // graphite-web's tree shows a node URL-unquoted: the name as it was posted
    assert_eq!(nodes[0]["text"], "my.service", "{nodes}");
    let leaves = sumi.get_json(&format!(
        "/metrics/find?query={}",
        urlencode("my%2Eservice.load%20avg.*")
    ));
    assert_eq!(leaves[0]["id"], series);
    assert_eq!(
        stored(&sumi, series, ts - 60, ts + 60),
        [(3.0, ts - ts % 10)]
    );
    // and a function over it works like over any other series
    let q = format!(
        "/render?target=scale({},2)&from={}&until={}&format=json",
        urlencode(series),
        ts - 60,
        ts + 60
    );
    assert_eq!(points_of(&sumi.get_json(&q), 0), [(6.0, ts - ts % 10)]);

    // GrowthForecast's reads give the names back as they were posted
    let list = sumi.get_json("/json/list/graph");
    assert_eq!(list[0]["service_name"], service);
    assert_eq!(list[0]["section_name"], section);
    assert_eq!(list[0]["graph_name"], graph);
    assert_eq!(sumi.get_json(&path)["number"], 3);
}

#[test]
fn graphs_are_read_edited_and_deleted_over_json() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let ts = (now() - 300).to_string();
    let id = post(
        &sumi,
        "/api/svc/sec/cpu",
        &[("number", "50"), ("timestamp", &ts)],
    )["data"]["id"]
        .as_i64()
        .unwrap();

    let clean = sumi.get_json(&format!("/json/graph/{id}"));
    assert_eq!(clean["complex"], false);
    assert!(
        clean.get("md5").is_none() && clean.get("meta").is_none(),
        "{clean}"
    );
    let by_name = sumi.get_json("/json/graph/svc/sec/cpu");
    assert_eq!(by_name["md5"], "c4ca4238a0b923820dcc509a6f75849b");

    let (status, body) = post_json(
        &sumi,
        &format!("/json/edit/graph/{id}"),
        &json!({"graph_name": "cpu-renamed", "sort": 5, "type": "LINE2", "unit": "%",
                "adjust": "/", "adjustval": "10", "ulimit": 1000, "color": "#FF0000"}),
    );
    assert_eq!((status, body.trim()), (200, r#"{"error":0}"#));
    let g = sumi.get_json("/api/svc/sec/cpu-renamed");
    assert_eq!(
        (g["sort"].as_i64(), g["type"].as_str(), g["unit"].as_str()),
        (Some(5), Some("LINE2"), Some("%"))
    );
    assert_eq!(g["series"], "svc.sec.cpu", "the data stays with the graph");
    assert_eq!(sumi.get("/api/svc/sec/cpu").0, 404);
    // adjust divides what is drawn and exported
    let x = sumi.get_json("/xport/svc/sec/cpu-renamed?t=h");
    let values: Vec<f64> = x["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r[0].as_f64())
        .collect();
    assert!(values.contains(&5.0), "{x}");

    // posting to the new name goes on in the same series
    let ts2 = now() - 60;
    post(
        &sumi,
        "/api/svc/sec/cpu-renamed",
        &[("number", "70"), ("timestamp", &ts2.to_string())],
    );
    let pts = stored(&sumi, "svc.sec.cpu", ts2 - 400, ts2 + 10);
    assert_eq!(pts.len(), 2, "{pts:?}");

    let (status, body) = post_json(
        &sumi,
        &format!("/json/edit/graph/{id}"),
        &json!({"type": "AREA9", "sort": 99}),
    );
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    assert_eq!(post_json(&sumi, "/json/edit/graph/999", &json!({})).0, 404);

    let (status, body) = sumi.post_form(&format!("/json/delete/graph/{id}"), &[]);
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"], 0);
    assert!(
        v["location"].as_str().unwrap().ends_with("/list/svc/sec"),
        "{v}"
    );
    assert_eq!(sumi.get(&format!("/json/graph/{id}")).0, 404);
    assert_eq!(sumi.get_json("/json/list/graph"), json!([]));
}

#[test]
fn complex_graphs_over_json() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let t0 = now() - now() % 300 - 1200;
    let mut ids = Vec::new();
    for (name, n) in [("a", 10), ("b", 32)] {
        let v = post(
            &sumi,
            &format!("/api/site/net/{name}"),
            &[("number", &n.to_string()), ("timestamp", &t0.to_string())],
        );
        ids.push(v["data"]["id"].as_i64().unwrap());
    }
    let spec = json!({"service_name": "site", "section_name": "net", "graph_name": "both",
        "description": "a and b", "sumup": true,
        "data": [{"graph_id": ids[0], "type": "AREA"}, {"graph_id": ids[1], "type": "LINE1", "stack": false}]});
    let (status, body) = post_json(&sumi, "/json/create/complex", &spec);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("/list/site/net"), "{body}");
    assert_eq!(post_json(&sumi, "/json/create/complex", &spec).0, 409);
    let one = json!({"service_name": "site", "section_name": "net", "graph_name": "x", "data": [{"graph_id": ids[0]}]});
    assert_eq!(post_json(&sumi, "/json/create/complex", &one).0, 400);
    let missing = json!({"service_name": "site", "section_name": "net", "graph_name": "y", "data": [{"graph_id": ids[0]}, {"graph_id": 777}]});
    assert_eq!(post_json(&sumi, "/json/create/complex", &missing).0, 400);

    let list = sumi.get_json("/json/list/complex");
    let cid = list[0]["id"].as_i64().unwrap();
    let c = sumi.get_json(&format!("/json/complex/{cid}"));
    assert_eq!(c["complex"], true);
    assert_eq!(c["sumup"], true);
    assert_eq!(c["sort"], 19);
    assert_eq!(
        c["data"][0],
        json!({"graph_id": ids[0], "type": "AREA", "gmode": "gauge", "stack": false})
    );
    assert_eq!(c["data"][1]["stack"], false);
    assert_eq!(sumi.get_json("/json/complex/site/net/both")["id"], cid);
    let all = sumi.get_json("/json/list/all");
    assert_eq!(all.as_array().unwrap().len(), 3);

    // the export has a column per graph and the total
    let x = sumi.get_json("/complex/xport/site/net/both?t=h");
    assert_eq!(x["column_names"], json!(["a", "b", "total"]));
    let last = x["rows"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| !r[0].is_null())
        .unwrap()
        .clone();
    assert_eq!(last, json!([10, 32, 42]), "{x}");
    // the same graphs as an ad-hoc complex URL
    let spec_url = format!("/xport/AREA:{}:gauge:0:AREA:{}:gauge:1", ids[0], ids[1]);
    assert_eq!(sumi.get_json(&spec_url)["columns"], 2);

    let (status, _) = post_json(
        &sumi,
        &format!("/json/edit/complex/{cid}"),
        &json!({"graph_name": "renamed", "sumup": false}),
    );
    assert_eq!(status, 200);
    let c = sumi.get_json("/json/complex/site/net/renamed");
    assert_eq!(
        (c["sumup"].as_bool(), c["data"].as_array().map(Vec::len)),
        (Some(false), Some(2))
    );

    // deleting with delete_graph removes its graphs too
    let (status, _) = post_json(
        &sumi,
        &format!("/json/delete/complex/{cid}"),
        &json!({"delete_graph": 1}),
    );
    assert_eq!(status, 200);
    assert_eq!(sumi.get_json("/json/list/complex"), json!([]));
    assert_eq!(sumi.get_json("/json/list/graph"), json!([]));
}

#[test]
fn graph_images_and_render_images() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let t0 = now() - now() % 300 - 7200;
    for i in 0..24 {
        let ts = (t0 + i * 300).to_string();
        post(
            &sumi,
            "/api/img/test/wave",
            &[("number", &(i * i).to_string()), ("timestamp", &ts)],
        );
        post(
            &sumi,
            "/api/img/test/flat",
            &[("number", "100"), ("timestamp", &ts)],
        );
    }
    let (status, ct, png) = get_bytes(&sumi, "/graph/img/test/wave?t=d");
    assert_eq!((status, ct.as_str()), (200, "image/png"));
    let (w, h) = png_size(&png);
    assert!(
        w > 390 && h > 110,
        "{w}x{h}: the plot is 390x110, the image larger"
    );
    let (_, _, png) = get_bytes(
        &sumi,
        "/graph/img/test/wave?t=w&width=600&height=200&graphonly=1",
    );
    assert_eq!(png_size(&png), (600, 200));
    let (status, ct, svg) = get_bytes(&sumi, "/graph/img/test/wave?t=h&format=svg");
    assert_eq!((status, ct.as_str()), (200, "image/svg+xml"));
    assert!(String::from_utf8_lossy(&svg).contains("Hour (5min avg)"));
    let (status, _, body) = get_bytes(&sumi, "/graph/img/test/wave?t=never");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    assert_eq!(get_bytes(&sumi, "/graph/img/test/nothing").0, 404);
    let (status, ct, _) = get_bytes(&sumi, "/summary/img/test/wave");
    assert_eq!((status, ct.as_str()), (200, "application/json"));

    // a complex graph from the two
    let ids: Vec<i64> = sumi
        .get_json("/json/list/graph")
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_i64().unwrap())
        .collect();
    let (status, _, png) = get_bytes(
        &sumi,
        &format!(
            "/graph/AREA:{}:gauge:0:LINE2:{}:gauge:0?t=d&sumup=1",
            ids[0], ids[1]
        ),
    );
    assert_eq!(status, 200);
    png_size(&png);

    // graphite-web's /render draws PNG (also without a format) and SVG
    let (status, ct, png) = get_bytes(
        &sumi,
        "/render?target=img.test.*&from=-3h&width=400&height=250&format=png",
    );
    assert_eq!((status, ct.as_str()), (200, "image/png"));
    assert_eq!(png_size(&png), (400, 250));
    let (status, ct, png) = get_bytes(
        &sumi,
        "/render?target=img.test.wave&from=-3h&width=300&height=200",
    );
    assert_eq!((status, ct.as_str()), (200, "image/png"));
    assert_eq!(png_size(&png), (300, 200));
    let (status, ct, svg) = get_bytes(
        &sumi,
        "/render?target=img.test.flat&from=-3h&format=svg&title=flat%20line",
    );
    assert_eq!((status, ct.as_str()), (200, "image/svg+xml"));
    assert!(String::from_utf8_lossy(&svg).contains("flat line"));
    let (status, _, _) = get_bytes(&sumi, "/render?target=img.test.flat&format=png&width=abc");
    assert_eq!(status, 400);
}

#[test]
fn vertical_rules() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    post(&sumi, "/api/s/t/g", &[("number", "1")]);
    let t = (now() - 600).to_string();
    let v = post(
        &sumi,
        "/vrule/api/s/t",
        &[
            ("time", &t),
            ("color", "#0000FF"),
            ("description", "deploy"),
        ],
    );
    assert_eq!(v["data"]["graph_path"], "/s/t");
    post(
        &sumi,
        "/vrule/api",
        &[("time", &t), ("description", "everywhere")],
    );
    post(&sumi, "/vrule/api/x", &[("time", &t)]);
    let rules = sumi.get_json("/vrule/summary/s/t/g");
    let descs: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["description"].as_str().unwrap())
        .collect();
    assert_eq!(descs, ["deploy", "everywhere"]);
    let (status, _, png) = get_bytes(&sumi, "/graph/s/t/g?t=h");
    assert_eq!(status, 200);
    png_size(&png);
    let (status, _) = sumi.post_form("/vrule/api/s", &[("time", "someday")]);
    assert_eq!(status, 400);
}

#[test]
fn sparse_posts_survive_rollups_and_restarts() {
    let dir = scratch();
    let data = dir.path().join("data");
    let mut sumi = Sumi::start(&data, &[]);
    // a graph posted every 5 minutes for two days: beyond the 10-second archive's day,
    // only rollups hold it, and with xFilesFactor 0.5 they would be empty
    let end = now() - now() % 300;
    let mut form: Vec<(String, String)> = Vec::new();
    for i in (0..576).rev() {
        form.clear();
        let ts = end - i * 300;
        form.push(("number".into(), "1".into()));
        form.push(("mode".into(), "count".into()));
        form.push(("timestamp".into(), ts.to_string()));
        let pairs: Vec<(&str, &str)> = form.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        post(&sumi, "/api/cron/jobs/runs", &pairs);
    }
    // the same points through carbon, under a name with carbon's default rules
    let mut text = String::new();
    for i in (0..576).rev() {
        text.push_str(&format!(
            "control.cron.runs {} {}\n",
            576 - i,
            end - i * 300
        ));
    }
    sumi.send_tcp(text.as_bytes());
    sumi.wait_stored(2 * 576);
    let check = |sumi: &Sumi| {
        let x = sumi.get_json("/xport/cron/jobs/runs?t=w");
        let rows = x["rows"].as_array().unwrap();
        let start = x["start_timestamp"].as_i64().unwrap();
        let step = x["step"].as_i64().unwrap();
        let at = |t: i64| rows[((t - start) / step) as usize][0].as_f64();
        // 40 hours ago the running total was about 576 - 480 (a coarse archive)...
        let v = at(end - 40 * 3600).unwrap_or_else(|| panic!("no value 40 h ago: {x}"));
        assert!((90.0..=102.0).contains(&v), "{v}");
        // ...2 hours ago 576 - 24, rolled up from 10-second slots one in 30 of which is known
        let v = at(end - 2 * 3600).unwrap_or_else(|| panic!("no value 2 h ago: {x}"));
        assert!((546.0..=558.0).contains(&v), "{v}");
        assert!(
            at(end - 3 * 86400).is_none(),
            "nothing before the first post"
        );
    };
    check(&sumi);
    // the carbon series, with xFilesFactor 0.5, has no minute rollup of the last day
    let control = sumi.get_json("/render?target=control.cron.runs&from=-7d&format=json");
    let recent = points_of(&control, 0)
        .into_iter()
        .filter(|(_, t)| *t > end - 20 * 3600)
        .count();
    assert_eq!(recent, 0, "{control}");
    sumi.stop();
    let sumi = Sumi::start(&data, &[]);
    check(&sumi);
    // the number survived: count goes on from it
    let v = post(
        &sumi,
        "/api/cron/jobs/runs",
        &[("number", "1"), ("mode", "count")],
    );
    assert_eq!(v["data"]["number"], 577);
}

#[test]
fn subtract_of_coarse_archives_is_the_change_per_5_minutes() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    // a count graph posted every 5 minutes for 49 hours, until an hour ago: the same
    // twelve increments each hour, so the change per 5 minutes varies and its mean
    // over any whole hours is a twelfth of the hour's
    let inc = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8];
    let hour: i64 = inc.iter().sum();
    let end = now() - now() % 3600 - 3600;
    let start = end - 49 * 3600;
    let mut t = start;
    let mut k = 0;
    while t < end {
        let n = inc[k % 12].to_string();
        let ts = t.to_string();
        post(
            &sumi,
            "/api/app/jobs/handled",
            &[("number", &n), ("mode", "count"), ("timestamp", &ts)],
        );
        t += 300;
        k += 1;
    }
    let view = |term: &str| {
        let x = sumi.get_json(&format!(
            "/xport/app/jobs/handled?t={term}&gmode=subtract&width=4000"
        ));
        let start = x["start_timestamp"].as_i64().unwrap();
        let step = x["step"].as_i64().unwrap();
        let rows: Vec<Option<f64>> = x["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[0].as_f64())
            .collect();
        (start, step, rows, x)
    };
    // the day view (the 1-minute archive): each 5 minutes its own change
    let (s, step, rows, x) = view("d");
    assert_eq!(step, 300);
    let mut checked = 0;
    for (i, v) in rows.iter().enumerate() {
        let at = s + i as i64 * step;
        // (the first row covers the minutes from the range's start only)
        if i > 0 && at > start && at < end {
            let want = inc[((at - start) / 300 % 12) as usize] as f64;
            assert_eq!(*v, Some(want), "d at {at}: {x}");
            checked += 1;
        }
    }
    assert!(checked > 300, "{checked}");
    // the month (2 hours a row) and the year (a day a row) are read from the 1-hour
    // archive: each row whose hours all have an hour of posts before them shows the
    // mean change per 5 minutes, as GrowthForecast's RRAs averaged the 5-minute
    // differences (not the change per hour, 12 times it)
    for (term, r) in [("m", 7200), ("y", 86400)] {
        let (s, step, rows, x) = view(term);
        assert_eq!(step, r, "{x}");
        let mut checked = 0;
        for (i, v) in rows.iter().enumerate() {
            let at = s + i as i64 * step;
            if at >= start + 3600 && at + r <= end {
                let v = v.unwrap_or_else(|| panic!("{term} at {at}: null: {x}"));
                let want = hour as f64 / 12.0;
                // (xport writes 7 significant digits)
                assert!(
                    (v - want).abs() < 1e-6 * want,
                    "{term} at {at}: {v}, not {want}: {x}"
                );
                checked += 1;
            }
        }
        let want = if term == "m" { 22 } else { 1 };
        assert!(checked >= want, "{term}: {checked} rows checked: {x}");
    }
    // after the posts the number stands still: no change
    let (s, step, rows, x) = view("m");
    let after = end + (7200 - end % 7200) % 7200;
    assert_eq!(rows[((after - s) / step) as usize], Some(0.0), "{x}");
}
