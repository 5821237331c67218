//! The editing pages: a graph's settings (`/edit/:service/:section/:graph`) and the
//! complex graph form (`/add_complex`, `/edit_complex/:id`). The forms are sent as
//! JSON to the same endpoints GrowthForecast's clients use (`/json/edit/...`,
//! `/json/create/complex`) by `sumi.js`, which shows the validation messages they
//! answer with.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use super::html::{esc, page, path, Crumbs};
use super::html_page;
use crate::growthforecast::db::{Complex, ComplexItem, Graph};
use crate::growthforecast::json::num;
use crate::growthforecast::{blocking, GfError};
use crate::params::Params;
use crate::AppState;

fn select(name: &str, options: &[&str], current: &str) -> String {
    let mut out = format!(r#"<select name="{name}">"#);
    for o in options {
        let sel = if *o == current { " selected" } else { "" };
        let _ = write!(out, r#"<option{sel}>{}</option>"#, esc(o));
    }
    out.push_str("</select>");
    out
}

fn sort_select(current: i64) -> String {
    let values: Vec<String> = (0..=19).rev().map(|i| i.to_string()).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    select("sort", &refs, &current.to_string())
}

fn field(label: &str, input: &str, hint: &str) -> String {
    format!(
        r#"<label class="field"><span class="label">{}</span>{input}<span class="hint">{}</span></label>"#,
        esc(label),
        esc(hint)
    )
}

fn text(name: &str, value: &str) -> String {
    format!(
        r#"<input type="text" name="{name}" value="{}">"#,
        esc(value)
    )
}

fn number_text(name: &str, value: f64) -> String {
    text(name, &num(value).to_string())
}

fn graph_form(g: &Graph) -> String {
    let mut f = format!(
        r#"<form class="settings" data-json="/json/edit/graph/{}" data-next="view_graph" novalidate>
<div class="messages" role="alert"></div><fieldset><legend>Names</legend>"#,
        g.id
    );
    f.push_str(&field(
        "Service",
        &text("service_name", &g.service_name),
        "",
    ));
    f.push_str(&field(
        "Section",
        &text("section_name", &g.section_name),
        "",
    ));
    f.push_str(&field(
        "Graph",
        &text("graph_name", &g.graph_name),
        "renaming keeps the data: the Graphite series stays",
    ));
    f.push_str(&field(
        "Description",
        &text("description", &g.description),
        "",
    ));
    f.push_str(&field(
        "Sort",
        &sort_select(g.sort),
        "higher first on the section's page",
    ));
    f.push_str("</fieldset><fieldset><legend>Drawing</legend>");
    f.push_str(&field(
        "Shows",
        &select("gmode", &["gauge", "subtract", "both"], &g.gmode),
        "subtract: the change since the previous post",
    ));
    f.push_str(&field(
        "Colour",
        &format!(
            r##"<span class="color"><input type="color" data-mirror="color" value="{c}"><input type="text" name="color" value="{c}" pattern="#[0-9A-Fa-f]{{6}}"></span>"##,
            c = esc(&g.color)
        ),
        "",
    ));
    f.push_str(&field(
        "Type",
        &select("type", &["AREA", "LINE1", "LINE2"], &g.draw),
        "",
    ));
    f.push_str(&field(
        "Type (subtract)",
        &select("stype", &["AREA", "LINE1", "LINE2"], &g.stype),
        "",
    ));
    f.push_str(&field(
        "Unit",
        &text("unit", &g.unit),
        "shown on the vertical axis",
    ));
    f.push_str(&field(
        "Adjust",
        &format!(
            r#"<span class="adjust">{}{}</span>"#,
            select("adjust", &["*", "/"], &g.adjust),
            text("adjustval", &g.adjustval)
        ),
        "multiply or divide every value",
    ));
    f.push_str("</fieldset><fieldset><legend>Limits (values outside are not drawn)</legend>");
    f.push_str(&field("Upper", &number_text("ulimit", g.ulimit), ""));
    f.push_str(&field("Lower", &number_text("llimit", g.llimit), ""));
    f.push_str(&field(
        "Upper (subtract)",
        &number_text("sulimit", g.sulimit),
        "",
    ));
    f.push_str(&field(
        "Lower (subtract)",
        &number_text("sllimit", g.sllimit),
        "",
    ));
    f.push_str(r#"</fieldset><div class="buttons"><button type="submit" class="button primary">Save</button></div></form>"#);
    f
}

/// `/edit/:service/:section/:graph`.
pub async fn edit_graph(
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
            let preview = super::pages::graph_src(&graph, "d", "gauge", (390, 110));
            let body = format!(
                r#"<div class="edit"><div>{}</div><aside><img class="graph-img" src="{}" alt="preview"></aside></div>"#,
                graph_form(&graph),
                esc(&preview)
            );
            let actions = format!(
                r#"<button type="button" class="button danger" data-delete="/json/delete/graph/{}" data-confirm="Delete the graph {}? Its points stay in the store until their retention ends.">Delete graph</button>"#,
                graph.id,
                esc(&graph.graph_name)
            );
            let crumbs = Crumbs::home()
                .push(&s, Some(path("/list", &[&s])))
                .push(&sec, Some(path("/list", &[&s, &sec])))
                .push(&g, Some(path("/view_graph", &[&s, &sec, &g])))
                .push("edit", None);
            Ok(page(&format!("Edit {g}"), &crumbs, &actions, &body))
        })
        .await,
    )
}

fn graph_options(graphs: &[Graph], current: i64) -> String {
    let mut out = String::new();
    let mut group: Option<(&str, &str)> = None;
    let mut sorted: Vec<&Graph> = graphs.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.service_name, &a.section_name, &a.graph_name).cmp(&(
            &b.service_name,
            &b.section_name,
            &b.graph_name,
        ))
    });
    for g in sorted {
        let key = (g.service_name.as_str(), g.section_name.as_str());
        if group != Some(key) {
            if group.is_some() {
                out.push_str("</optgroup>");
            }
            let _ = write!(out, r#"<optgroup label="{} / {}">"#, esc(key.0), esc(key.1));
            group = Some(key);
        }
        let sel = if g.id == current { " selected" } else { "" };
        let _ = write!(
            out,
            r#"<option value="{}"{sel}>{}</option>"#,
            g.id,
            esc(&g.graph_name)
        );
    }
    if group.is_some() {
        out.push_str("</optgroup>");
    }
    out
}

fn item_row(graphs: &[Graph], it: &ComplexItem) -> String {
    format!(
        r#"<tr class="item"><td><select name="graph_id">{}</select></td><td>{}</td><td>{}</td>
<td><label><input type="checkbox" name="stack"{}> stack</label></td>
<td><button type="button" class="button small" data-remove-row>remove</button></td></tr>"#,
        graph_options(graphs, it.graph_id),
        select("type", &["AREA", "LINE1", "LINE2"], &it.draw),
        select("gmode", &["gauge", "subtract"], &it.gmode),
        if it.stack { " checked" } else { "" }
    )
}

fn complex_form(graphs: &[Graph], c: &Complex, action: &str) -> String {
    let mut items = c.items.clone();
    while items.len() < 2 {
        let graph_id = graphs.get(items.len()).map_or(0, |g| g.id);
        items.push(ComplexItem {
            graph_id,
            draw: "AREA".into(),
            gmode: "gauge".into(),
            stack: true,
        });
    }
    let mut f = format!(
        r#"<form class="settings complex-form" data-json="{action}" data-complex data-next="view_complex" novalidate>
<div class="messages" role="alert"></div><fieldset><legend>Names</legend>"#
    );
    f.push_str(&field(
        "Service",
        &text("service_name", &c.service_name),
        "",
    ));
    f.push_str(&field(
        "Section",
        &text("section_name", &c.section_name),
        "",
    ));
    f.push_str(&field("Graph", &text("graph_name", &c.graph_name), ""));
    f.push_str(&field(
        "Description",
        &text("description", &c.description),
        "",
    ));
    f.push_str(&field("Sort", &sort_select(c.sort), ""));
    f.push_str(&field(
        "Total",
        &format!(
            r#"<input type="checkbox" name="sumup"{}>"#,
            if c.sumup { " checked" } else { "" }
        ),
        "show the sum in the legend",
    ));
    f.push_str(r#"</fieldset><fieldset><legend>Series</legend><table class="items"><thead><tr><th>Graph</th><th>Type</th><th>Shows</th><th></th><th></th></tr></thead><tbody>"#);
    for it in &items {
        f.push_str(&item_row(graphs, it));
    }
    f.push_str(r#"</tbody></table><button type="button" class="button small" data-add-row>add a series</button></fieldset>
<div class="buttons"><button type="button" class="button" data-preview>Preview</button><button type="submit" class="button primary">Save</button></div></form>
<figure class="preview"><img class="graph-img" id="complex-preview" alt="preview"></figure>"#);
    f
}

/// `/add_complex?service_name=&section_name=`.
pub async fn add_complex(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
) -> Response {
    let p = Params::parse(query.as_deref(), None);
    let service = p.get("service_name").unwrap_or("").to_string();
    let section = p.get("section_name").unwrap_or("").to_string();
    html_page(
        blocking(state, move |st| {
            let graphs = st.gf.db.graphs()?;
            if graphs.len() < 2 {
                let body = r#"<p class="empty">A complex graph draws two or more graphs together: post numbers to at least two graphs first.</p>"#;
                return Ok(page("Add complex graph", &Crumbs::home().push("Add complex graph", None), "", body));
            }
            let c = Complex {
                id: 0,
                service_name: service,
                section_name: section,
                graph_name: String::new(),
                description: String::new(),
                sort: 19,
                sumup: false,
                items: Vec::new(),
                created_at: 0,
                updated_at: 0,
            };
            let body = complex_form(&graphs, &c, "/json/create/complex");
            Ok(page("Add complex graph", &Crumbs::home().push("Add complex graph", None), "", &body))
        })
        .await,
    )
}

/// `/edit_complex/:id`.
pub async fn edit_complex(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    html_page(
        blocking(state, move |st| {
            let c = id
                .parse::<i64>()
                .ok()
                .map(|id| st.gf.db.complex_by_id(id))
                .transpose()?
                .flatten()
                .ok_or_else(|| GfError::NotFound(format!("complex graph {id}")))?;
            let graphs = st.gf.db.graphs()?;
            let body = complex_form(&graphs, &c, &format!("/json/edit/complex/{}", c.id));
            let actions = format!(
                r#"<button type="button" class="button danger" data-delete="/json/delete/complex/{}" data-confirm="Delete the complex graph {}? Its graphs stay.">Delete</button>"#,
                c.id,
                esc(&c.graph_name)
            );
            let crumbs = Crumbs::home()
                .push(&c.service_name, Some(path("/list", &[&c.service_name])))
                .push(&c.section_name, Some(path("/list", &[&c.service_name, &c.section_name])))
                .push(&c.graph_name, Some(path("/view_complex", &[&c.service_name, &c.section_name, &c.graph_name])))
                .push("edit", None);
            Ok(page(&format!("Edit {}", c.graph_name), &crumbs, &actions, &body))
        })
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growthforecast::json::tests::graph;

    #[test]
    fn graph_form_holds_current_settings() {
        let mut g = graph(3, "s", "t", "g\"q");
        g.draw = "LINE2".into();
        g.sort = 7;
        let f = graph_form(&g);
        assert!(f.contains(r#"data-json="/json/edit/graph/3""#));
        assert!(f.contains(r#"value="g&quot;q""#));
        assert!(f.contains("<option selected>LINE2</option>"));
        assert!(f.contains("<option selected>7</option>"));
        assert!(f.contains(r#"name="ulimit" value="1000000000000000""#));
    }

    #[test]
    fn complex_form_lists_graphs_by_section() {
        let graphs = vec![
            graph(1, "a", "x", "g1"),
            graph(2, "a", "x", "g2"),
            graph(3, "b", "y", "g3"),
        ];
        let c = Complex {
            id: 9,
            service_name: "a".into(),
            section_name: "x".into(),
            graph_name: "c".into(),
            description: String::new(),
            sort: 19,
            sumup: true,
            items: vec![ComplexItem {
                graph_id: 3,
                draw: "LINE1".into(),
                gmode: "subtract".into(),
                stack: false,
            }],
            created_at: 0,
            updated_at: 0,
        };
        let f = complex_form(&graphs, &c, "/json/edit/complex/9");
        // one row given, one added to reach two
        assert_eq!(f.matches(r#"<tr class="item">"#).count(), 2);
        assert_eq!(f.matches("<optgroup").count(), 4);
        assert!(f.contains(r#"<option value="3" selected>g3</option>"#));
        assert!(f.contains(r#"name="sumup" checked"#));
    }
}
