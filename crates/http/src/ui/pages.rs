//! The pages that show graphs: every service with its sections (`/`), one service
//! (`/list/:service`), one section with all its graphs (`/list/:service/:section`),
//! and one graph or complex graph over every range (`/view_graph/...`,
//! `/view_complex/...`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use super::html::{esc, page, path, query_escape, Crumbs};
use super::html_page;
use crate::growthforecast::db::{Complex, Entry, Graph};
use crate::growthforecast::{blocking, GfError};
use crate::params::Params;
use crate::AppState;

/// The range tabs: `t`, label.
pub(crate) const RANGES: &[(&str, &str)] = &[
    ("h", "Hour"),
    ("d", "Day"),
    ("w", "Week"),
    ("m", "Month"),
    ("y", "Year"),
    ("sh", "Hour · 1 min"),
    ("sd", "Day · 1 min"),
];

/// Plot size of the graphs on a section's page (GrowthForecast's default).
const LIST_SIZE: (u32, u32) = (390, 110);
/// Plot size on a graph's own page.
const VIEW_SIZE: (u32, u32) = (600, 180);

fn term_of(params: &Params) -> &str {
    params
        .get("t")
        .filter(|t| RANGES.iter().any(|(r, _)| r == t))
        .unwrap_or("d")
}

/// `/`: services and their sections.
pub async fn index(State(state): State<Arc<AppState>>) -> Response {
    html_page(
        blocking(state, |st| {
            let mut tree: BTreeMap<String, BTreeMap<String, (usize, usize)>> = BTreeMap::new();
            for g in st.gf.db.graphs()? {
                tree.entry(g.service_name)
                    .or_default()
                    .entry(g.section_name)
                    .or_default()
                    .0 += 1;
            }
            for c in st.gf.db.complexes()? {
                tree.entry(c.service_name)
                    .or_default()
                    .entry(c.section_name)
                    .or_default()
                    .1 += 1;
            }
            let mut body = String::new();
            if tree.is_empty() {
                body.push_str(&empty_help());
            }
            body.push_str(r#"<div class="services">"#);
            for (service, sections) in &tree {
                let _ = write!(
                    body,
                    r#"<section class="service"><h2><a href="{}">{}</a></h2><ul class="sections">"#,
                    esc(&path("/list", &[service])),
                    esc(service)
                );
                for (section, (graphs, complexes)) in sections {
                    let count = if *complexes > 0 {
                        format!("{graphs} + {complexes} complex")
                    } else {
                        graphs.to_string()
                    };
                    let _ = write!(
                        body,
                        r#"<li><a href="{}">{}</a> <span class="count">{}</span></li>"#,
                        esc(&path("/list", &[service, section])),
                        esc(section),
                        count
                    );
                }
                body.push_str("</ul></section>");
            }
            body.push_str("</div>");
            Ok(page("Graphs", &Crumbs::home(), "", &body))
        })
        .await,
    )
}

fn empty_help() -> String {
    r#"<div class="help"><h2>No graphs yet</h2>
<p>Post a number and its graph appears here, exactly as with GrowthForecast:</p>
<pre>curl -F number=10 http://HOST/api/service/section/graph</pre>
<p>Modes: <code>mode=gauge</code> (default), <code>count</code>, <code>modified</code>, <code>derive</code>.
Every graph is also the Graphite series <code>service.section.graph</code>: see the <a href="/browse">metric browser</a>.</p></div>"#
        .to_string()
}

/// `/list/:service`: the service's sections.
pub async fn service(State(state): State<Arc<AppState>>, Path(service): Path<String>) -> Response {
    html_page(
        blocking(state, move |st| {
            let sections = st.gf.db.sections(&service)?;
            if sections.is_empty() {
                return Err(GfError::NotFound(format!("service {service}")));
            }
            let mut body = String::from(r#"<ul class="sections big">"#);
            for s in &sections {
                let _ = write!(
                    body,
                    r#"<li><a href="{}">{}</a></li>"#,
                    esc(&path("/list", &[&service, s])),
                    esc(s)
                );
            }
            body.push_str("</ul>");
            Ok(page(
                &service,
                &Crumbs::home().push(&service, None),
                "",
                &body,
            ))
        })
        .await,
    )
}

/// The URL of a graph's image.
pub(crate) fn graph_src(g: &Graph, t: &str, gmode: &str, size: (u32, u32)) -> String {
    format!(
        "{}?t={t}&gmode={gmode}&width={}&height={}",
        path("/graph", &[&g.service_name, &g.section_name, &g.graph_name]),
        size.0,
        size.1
    )
}

pub(crate) fn complex_src(c: &Complex, t: &str, size: (u32, u32)) -> String {
    format!(
        "{}?t={t}&width={}&height={}",
        path(
            "/complex/graph",
            &[&c.service_name, &c.section_name, &c.graph_name]
        ),
        size.0,
        size.1
    )
}

fn tabs(active: &str) -> String {
    let mut out = String::from(r#"<div class="tabs" role="tablist">"#);
    for (t, label) in RANGES {
        let on = if *t == active { " on" } else { "" };
        let _ = write!(
            out,
            r#"<button type="button" class="tab{on}" data-t="{t}">{}</button>"#,
            esc(label)
        );
    }
    out.push_str("</div>");
    out
}

fn img(src: &str, alt: &str) -> String {
    format!(
        r#"<img class="graph-img" loading="lazy" decoding="async" src="{}" alt="{}">"#,
        esc(src),
        esc(alt)
    )
}

/// The gmodes a graph's pages draw (`both` draws the two).
fn gmodes(g: &Graph) -> &'static [&'static str] {
    match g.gmode.as_str() {
        "subtract" => &["subtract"],
        "both" => &["gauge", "subtract"],
        _ => &["gauge"],
    }
}

fn graph_panel(g: &Graph, t: &str) -> String {
    let view = path(
        "/view_graph",
        &[&g.service_name, &g.section_name, &g.graph_name],
    );
    let edit = path("/edit", &[&g.service_name, &g.section_name, &g.graph_name]);
    let graphite = format!("/browse?target={}", query_escape(&g.series));
    let mut imgs = String::new();
    for gm in gmodes(g) {
        imgs.push_str(&img(
            &graph_src(g, t, gm, LIST_SIZE),
            &format!("{} ({gm})", g.graph_name),
        ));
    }
    format!(
        r#"<section class="panel graph" id="graph-{id}" data-id="{id}">
<header><h3><a href="{view}">{name}</a></h3><span class="desc">{desc}</span>
<span class="links"><a href="{edit}">edit</a><a href="{graphite}" title="{series}">graphite</a></span></header>
{tabs}<div class="imgs">{imgs}</div></section>"#,
        id = g.id,
        view = esc(&view),
        name = esc(&g.graph_name),
        desc = esc(&g.description),
        edit = esc(&edit),
        graphite = esc(&graphite),
        series = esc(&g.series),
        tabs = tabs(t),
    )
}

fn complex_panel(c: &Complex, t: &str) -> String {
    let view = path(
        "/view_complex",
        &[&c.service_name, &c.section_name, &c.graph_name],
    );
    format!(
        r#"<section class="panel complex" id="complex-{id}" data-id="{id}">
<header><h3><a href="{view}">{name}</a> <span class="badge">complex</span></h3><span class="desc">{desc}</span>
<span class="links"><a href="/edit_complex/{id}">edit</a></span></header>
{tabs}<div class="imgs">{img}</div></section>"#,
        id = c.id,
        view = esc(&view),
        name = esc(&c.graph_name),
        desc = esc(&c.description),
        tabs = tabs(t),
        img = img(&complex_src(c, t, LIST_SIZE), &c.graph_name),
    )
}

/// `/list/:service/:section?t=`: every graph of the section.
pub async fn section(
    State(state): State<Arc<AppState>>,
    Path((service, section)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::parse(query.as_deref(), None);
    let t = term_of(&params).to_string();
    html_page(
        blocking(state, move |st| {
            let entries = st.gf.db.section(&service, &section)?;
            if entries.is_empty() {
                return Err(GfError::NotFound(format!("section {service}/{section}")));
            }
            let base = path("/list", &[&service, &section]);
            let mut body = String::from(r#"<nav class="range" aria-label="range of every graph">"#);
            for (term, label) in RANGES {
                let on = if *term == t { r#" class="on""# } else { "" };
                let _ = write!(body, r#"<a{on} href="{}?t={term}">{}</a>"#, esc(&base), esc(label));
            }
            body.push_str(r#"</nav><div class="panels">"#);
            for e in &entries {
                body.push_str(&match e {
                    Entry::Graph(g) => graph_panel(g, &t),
                    Entry::Complex(c) => complex_panel(c, &t),
                });
            }
            body.push_str("</div>");
            let add = format!(
                "/add_complex?service_name={}&section_name={}",
                query_escape(&service),
                query_escape(&section)
            );
            let actions = format!(
                r#"<a class="button" href="{}">Add complex graph</a><button type="button" class="button danger" data-delete="{}" data-confirm="Remove every graph of {}?">Remove section</button>"#,
                esc(&add),
                esc(&path("/delete", &[&service, &section])),
                esc(&section)
            );
            let crumbs = Crumbs::home()
                .push(&service, Some(path("/list", &[&service])))
                .push(&section, None);
            Ok(page(&format!("{service} › {section}"), &crumbs, &actions, &body))
        })
        .await,
    )
}

fn ranges_grid(srcs: impl Fn(&str) -> Vec<String>, alt: &str) -> String {
    let mut body = String::from(r#"<div class="ranges">"#);
    for (t, label) in RANGES.iter().filter(|(t, _)| !t.starts_with('s')) {
        let _ = write!(
            body,
            r#"<figure class="range-{t}"><figcaption>{}</figcaption>"#,
            esc(label)
        );
        for src in srcs(t) {
            body.push_str(&img(&src, alt));
        }
        body.push_str("</figure>");
    }
    body.push_str("</div>");
    body
}

/// `/view_graph/:service/:section/:graph`: one graph over every range.
pub async fn view_graph(
    State(state): State<Arc<AppState>>,
    Path((s, sec, g)): Path<(String, String, String)>,
) -> Response {
    html_page(
        blocking(state, move |st| {
            let graph = st
                .gf
                .db
                .graph(&s, &sec, &g)?
                .ok_or_else(|| GfError::NotFound(format!("graph {s}/{sec}/{g}")))?;
            let mut body = format!(
                r#"<section class="about"><p class="desc">{}</p><dl>
<dt>Current number</dt><dd class="number">{}</dd><dt>Mode</dt><dd>{}</dd>
<dt>Graphite series</dt><dd><code>{}</code> · <a href="/browse?target={}">draw in the metric browser</a></dd>
<dt>Post</dt><dd><code>curl -F number=1 http://HOST{}</code></dd></dl></section>"#,
                esc(&graph.description),
                crate::growthforecast::json::num(graph.number),
                esc(&graph.mode),
                esc(&graph.series),
                esc(&query_escape(&graph.series)),
                esc(&path("/api", &[&s, &sec, &g])),
            );
            body.push_str(&ranges_grid(
                |t| gmodes(&graph).iter().map(|gm| graph_src(&graph, t, gm, VIEW_SIZE)).collect(),
                &graph.graph_name,
            ));
            let actions = format!(
                r#"<a class="button" href="{}">Edit</a>"#,
                esc(&path("/edit", &[&s, &sec, &g]))
            );
            let crumbs = Crumbs::home()
                .push(&s, Some(path("/list", &[&s])))
                .push(&sec, Some(path("/list", &[&s, &sec])))
                .push(&g, None);
            Ok(page(&g, &crumbs, &actions, &body))
        })
        .await,
    )
}

/// `/view_complex/:service/:section/:graph`.
pub async fn view_complex(
    State(state): State<Arc<AppState>>,
    Path((s, sec, g)): Path<(String, String, String)>,
) -> Response {
    html_page(
        blocking(state, move |st| {
            let c = st
                .gf
                .db
                .complex(&s, &sec, &g)?
                .ok_or_else(|| GfError::NotFound(format!("complex graph {s}/{sec}/{g}")))?;
            let mut body = format!(r#"<p class="desc">{}</p>"#, esc(&c.description));
            body.push_str(&ranges_grid(
                |t| vec![complex_src(&c, t, VIEW_SIZE)],
                &c.graph_name,
            ));
            let actions = format!(
                r#"<a class="button" href="/edit_complex/{}">Edit</a>"#,
                c.id
            );
            let crumbs = Crumbs::home()
                .push(&s, Some(path("/list", &[&s])))
                .push(&sec, Some(path("/list", &[&s, &sec])))
                .push(&g, None);
            Ok(page(&g, &crumbs, &actions, &body))
        })
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growthforecast::json::tests::graph;

    #[test]
    fn panels_escape_names_and_link_images() {
        let mut g = graph(7, "my svc", "a/b", "<x>");
        g.gmode = "both".into();
        let html = graph_panel(&g, "w");
        assert!(html.contains("/graph/my%20svc/a%2Fb/%3Cx%3E?t=w&amp;gmode=gauge"));
        assert!(html.contains("gmode=subtract"));
        assert!(html.contains("&lt;x&gt;"));
        assert!(!html.contains("<x>"));
        assert!(html.contains(r#"class="tab on" data-t="w""#));
    }
}
