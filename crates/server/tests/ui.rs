//! The web UI as a person uses it: numbers posted with GrowthForecast's API, pages
//! opened in headless Chromium, graphs checked as drawn (every image decoded by the
//! browser), tabs clicked, forms filled in. Screenshots are kept in
//! `target/ui-screenshots/`.

mod browser;
mod common;

use std::time::Duration;

use browser::Browser;
use common::{now, scratch, Sumi};
use serde_json::{json, Value};

/// Posts `n` numbers to a graph, `step` seconds apart, ending now.
fn seed(
    sumi: &Sumi,
    graph: &str,
    n: i64,
    step: i64,
    extra: &[(&str, &str)],
    f: impl Fn(i64) -> f64,
) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let end = now() - now() % step;
    let url = format!("http://{}/api/{graph}", sumi.http);
    for i in 0..n {
        let ts = end - (n - 1 - i) * step;
        let number = f(i).to_string();
        let ts = ts.to_string();
        let mut form = vec![("number", number.as_str()), ("timestamp", ts.as_str())];
        form.extend_from_slice(extra);
        let resp = agent.post(&url).send_form(&form).expect("post a number");
        assert_eq!(resp.status(), 200);
    }
}

fn wave(i: i64) -> f64 {
    (500.0 + 400.0 * (i as f64 / 40.0).sin()).round()
}

fn base(sumi: &Sumi) -> String {
    format!("http://{}", sumi.http)
}

fn assert_all_drawn(b: &mut Browser, selector: &str, want: usize) -> Vec<(String, u64, u64)> {
    let imgs = b.images(selector);
    assert_eq!(imgs.len(), want, "{imgs:?}");
    for (src, w, h) in &imgs {
        assert!(*w > 300 && *h > 100, "{src} was not drawn: {w}x{h}");
    }
    imgs
}

#[test]
fn section_page_draws_every_graph_and_tabs_change_the_range() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    seed(&sumi, "web/frontend/requests", 300, 300, &[], wave);
    seed(
        &sumi,
        "web/frontend/errors",
        300,
        300,
        &[("mode", "count")],
        |i| (i % 3) as f64,
    );
    seed(
        &sumi,
        "web/frontend/bytes",
        300,
        300,
        &[("mode", "derive")],
        |i| (i * i * 300) as f64,
    );
    let mut b = Browser::start(1280, 900);

    b.open(&format!("{}/", base(&sumi)));
    assert_eq!(
        b.eval("document.querySelector('.service h2').textContent"),
        json!("web")
    );
    b.screenshot("home");
    b.click(".service a[href='/list/web/frontend']");
    b.wait_for(
        "location.pathname === '/list/web/frontend' && document.readyState === 'complete'",
        "the section page",
    );
    b.wait_images();
    assert_eq!(
        b.eval("document.querySelectorAll('.panel.graph').length"),
        json!(3)
    );
    let names =
        b.eval("Array.from(document.querySelectorAll('.panel h3 a')).map(a => a.textContent)");
    assert_eq!(names, json!(["bytes", "errors", "requests"]));
    let imgs = assert_all_drawn(&mut b, ".panel img.graph-img", 3);
    assert!(
        imgs.iter().all(|(src, _, _)| src.contains("t=d")),
        "{imgs:?}"
    );
    b.screenshot("section-day");

    // a panel's Week tab redraws that panel only
    b.click("#graph-1 .tab[data-t='w']");
    b.wait_for(
        "document.querySelector('#graph-1 img').getAttribute('src').includes('t=w')",
        "the week graph",
    );
    b.wait_images();
    let imgs = b.images("#graph-1 img");
    assert!(imgs[0].1 > 300, "{imgs:?}");
    assert_eq!(
        b.eval("document.querySelector('#graph-1 .tab.on').dataset.t"),
        json!("w")
    );
    assert_eq!(
        b.eval("document.querySelector('#graph-2 .tab.on').dataset.t"),
        json!("d")
    );
    // the section's range links redraw all
    b.click("nav.range a[href$='t=m']");
    b.wait_for(
        "location.search === '?t=m' && document.readyState === 'complete'",
        "the month page",
    );
    b.wait_images();
    let imgs = assert_all_drawn(&mut b, ".panel img.graph-img", 3);
    assert!(
        imgs.iter().all(|(src, _, _)| src.contains("t=m")),
        "{imgs:?}"
    );
    b.screenshot("section-month");

    // one graph over every range
    b.open(&format!("{}/view_graph/web/frontend/requests", base(&sumi)));
    assert_all_drawn(&mut b, ".ranges img", 5);
    assert_eq!(
        b.eval("document.querySelector('dd.number').textContent"),
        json!(wave(299).to_string())
    );
    b.screenshot("view-graph");
}

#[test]
fn editing_a_graph_changes_how_it_is_drawn() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    seed(&sumi, "app/latency/p99", 200, 300, &[], wave);
    let mut b = Browser::start(1280, 900);
    b.open(&format!("{}/edit/app/latency/p99", base(&sumi)));
    b.screenshot("edit-before");

    // a bad colour is refused with GrowthForecast's message, shown on the form
    b.eval("document.querySelector('[name=color]').value = 'red'; document.querySelector('form.settings').requestSubmit(); true");
    b.wait_for(
        "document.querySelector('.messages').textContent.includes('#000000')",
        "the validation message",
    );

    b.eval(
        "(() => { const f = document.querySelector('form.settings');
          f.querySelector('[name=color]').value = '#AA3311';
          f.querySelector('[name=description]').value = '99th percentile of page latency';
          f.querySelector('[name=type]').value = 'LINE2';
          f.querySelector('[name=unit]').value = 'ms';
          f.querySelector('[name=gmode]').value = 'both';
          f.requestSubmit(); return true; })()",
    );
    b.wait_for(
        "location.pathname === '/view_graph/app/latency/p99' && document.readyState === 'complete'",
        "the graph page",
    );
    b.wait_images();
    let g = sumi.get_json("/api/app/latency/p99");
    assert_eq!(g["description"], "99th percentile of page latency");
    assert_eq!(g["type"], "LINE2");
    assert_eq!(g["color"], "#AA3311");
    assert_eq!(g["unit"], "ms");
    // gmode both: a gauge and a subtract graph for every range
    assert_all_drawn(&mut b, ".ranges img", 10);
    let subtract =
        b.eval("document.querySelectorAll('.ranges img[src*=\"gmode=subtract\"]').length");
    assert_eq!(subtract, json!(5));
    b.screenshot("edit-after-view");
}

#[test]
fn complex_graph_is_built_in_the_form() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    seed(&sumi, "db/queries/select", 200, 300, &[], wave);
    seed(&sumi, "db/queries/insert", 200, 300, &[], |i| {
        wave(i + 20) / 3.0
    });
    seed(&sumi, "db/queries/delete", 200, 300, &[], |i| {
        40.0 + (i % 7) as f64
    });
    let mut b = Browser::start(1280, 1000);
    b.open(&format!(
        "{}/add_complex?service_name=db&section_name=queries",
        base(&sumi)
    ));
    assert_eq!(
        b.eval("document.querySelector('[name=service_name]').value"),
        json!("db")
    );
    b.eval(
        "(() => { const f = document.querySelector('form.complex-form');
          f.querySelector('[name=graph_name]').value = 'all queries';
          f.querySelector('[name=sumup]').checked = true;
          document.querySelector('[data-add-row]').click();
          const rows = f.querySelectorAll('tr.item');
          const ids = Array.from(rows[0].querySelectorAll('option')).map(o => o.value);
          rows.forEach((r, i) => { r.querySelector('[name=graph_id]').value = ids[i]; });
          rows[2].querySelector('[name=type]').value = 'LINE2';
          rows[2].querySelector('[name=stack]').checked = false;
          return rows.length; })()",
    );
    b.click("[data-preview]");
    b.wait_for("document.querySelector('#complex-preview').complete && document.querySelector('#complex-preview').naturalWidth > 0", "the preview");
    b.screenshot("complex-form");
    b.eval("document.querySelector('form.complex-form').requestSubmit(); true");
    b.wait_for("location.pathname === '/view_complex/db/queries/all%20queries' && document.readyState === 'complete'", "the complex graph's page");
    b.wait_images();
    assert_all_drawn(&mut b, ".ranges img", 5);
    b.screenshot("complex-view");
    let c = sumi.get_json("/json/complex/db/queries/all%20queries");
    assert_eq!(c["data"].as_array().map(Vec::len), Some(3), "{c}");
    assert_eq!(c["sumup"], true);
    assert_eq!(c["data"][2]["type"], "LINE2");
    // it is listed with the section's graphs
    b.open(&format!("{}/list/db/queries", base(&sumi)));
    assert_eq!(
        b.eval("document.querySelectorAll('.panel.complex').length"),
        json!(1)
    );
    assert_all_drawn(&mut b, ".panel img.graph-img", 4);
}

#[test]
fn metric_browser_draws_series_and_targets() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    seed(&sumi, "svc/load%20avg/one", 100, 60, &[], wave);
    seed(&sumi, "svc/load%20avg/five", 100, 60, &[], |i| {
        wave(i) / 2.0
    });
    // a carbon series too: the browser shows the whole Graphite tree
    let t = now() - 120;
    sumi.send_tcp(format!("servers.web01.cpu 42 {t}\n").as_bytes());
    sumi.wait_stored(201);
    let mut b = Browser::start(1280, 900);
    b.open(&format!("{}/browse", base(&sumi)));
    b.wait_for(
        "document.querySelectorAll('#tree > li').length === 2",
        "the tree's first level",
    );
    let top = b.eval(
        "Array.from(document.querySelectorAll('#tree > li > .node')).map(n => n.textContent)",
    );
    assert_eq!(top, json!(["servers", "svc"]));
    b.click("#tree li[data-path='svc'] > .node");
    b.wait_for(
        "document.querySelector(\"li[data-path='svc.load%20avg'] > .node\") !== null",
        "svc's children",
    );
    // the node of a GrowthForecast section reads as its name
    assert_eq!(
        b.eval("document.querySelector(\"li[data-path='svc.load%20avg'] > .node\").textContent"),
        json!("load avg")
    );
    b.click("li[data-path='svc.load%20avg'] > .node");
    b.wait_for(
        "document.querySelector(\"li[data-path='svc.load%20avg.one']\") !== null",
        "the leaves",
    );
    b.click("li[data-path='svc.load%20avg.one'] > .node");
    b.wait_for("(document.querySelector('#render-img').getAttribute('src') || '').includes('target=svc.load%2520avg.one')", "the graph request");
    b.wait_images();
    let imgs = b.images("#render-img");
    assert!(imgs[0].1 >= 400 && imgs[0].2 == 420, "{imgs:?}");
    assert_eq!(
        b.eval("document.querySelector('#targets').value"),
        json!("svc.load%20avg.one")
    );
    b.screenshot("browse-leaf");

    // any target expression
    b.eval("document.querySelector('#targets').value = 'alias(sumSeries(svc.*.*), \"sum of loads\")\\nservers.web01.cpu'; document.querySelector('#style').value = 'rrd'; document.querySelector('#draw-form').requestSubmit(); true");
    b.wait_for(
        "(document.querySelector('#render-img').getAttribute('src') || '').includes('style=rrd')",
        "the rrd graph request",
    );
    b.wait_images();
    let imgs = b.images("#render-img");
    assert!(imgs[0].1 >= 400, "{imgs:?}");
    assert!(b
        .eval("location.search")
        .as_str()
        .unwrap_or("")
        .contains("sumSeries"));
    b.screenshot("browse-target");

    // a bad target says why
    b.eval("document.querySelector('#targets').value = 'nosuchfunction(svc.*.*)'; document.querySelector('#draw-form').requestSubmit(); true");
    b.wait_for(
        "document.querySelector('#render-msg').textContent.length > 0",
        "the error message",
    );
}

#[test]
fn a_page_of_fifty_graphs_is_fast() {
    let dir = scratch();
    let sumi = Sumi::start(&dir.path().join("data"), &[]);
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let end = now() - now() % 1800;
    for g in 0..50 {
        for i in 0..48 {
            let ts = (end - (47 - i) * 1800).to_string();
            let n = ((g * 10 + i) % 37).to_string();
            let url = format!("http://{}/api/fleet/hosts/host{g:02}", sumi.http);
            agent
                .post(&url)
                .send_form(&[("number", &n), ("timestamp", &ts)])
                .expect("post");
        }
    }
    let mut b = Browser::start(1280, 900);
    // once to warm the page cache of the server, then measured
    b.open(&format!("{}/list/fleet/hosts", base(&sumi)));
    let url = format!("{}/list/fleet/hosts?t=w", base(&sumi));
    // a viewport tall enough that every lazy image is in view, as when scrolled
    b.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 16000, "deviceScaleFactor": 1, "mobile": false}),
    );
    b.call("Page.navigate", json!({"url": url}));
    b.wait_for(
        "document.readyState === 'complete' && document.querySelectorAll('img.graph-img').length === 50 \
         && Array.from(document.querySelectorAll('img.graph-img')).every(i => i.complete && i.naturalWidth > 0)",
        "fifty graphs",
    );
    // from the start of the navigation to the last image's last byte
    let timing = b.eval(
        "(() => { const e = performance.getEntriesByType('resource').filter(r => r.name.includes('/graph/'));
                  return [Math.max(...e.map(r => r.responseEnd)), e.length]; })()",
    );
    let elapsed = timing[0].as_f64().unwrap_or(f64::MAX);
    assert_eq!(timing[1], json!(50), "{timing}");
    eprintln!("50 graphs drawn in {elapsed:.0} ms");
    // generous for a debug build on two busy cores; a release build takes well under 1 s
    assert!(elapsed < 30_000.0, "{elapsed} ms");
    b.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
    );
    b.open(&url);
    b.screenshot("fifty-graphs");
    let v: Value = sumi.get_json("/json/list/graph");
    assert_eq!(v.as_array().map(Vec::len), Some(50));
}
