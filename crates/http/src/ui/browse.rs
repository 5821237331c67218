//! `/browse`: the Graphite metric tree (read lazily from `/metrics/find`, one level a
//! click) beside a graph of any targets, drawn by `/render?format=png`. A click on a
//! leaf adds it to the targets; any target expression can be typed. The state is in
//! the URL (`?target=...&from=...`), so a graph can be shared as a link.

use axum::extract::RawQuery;
use axum::response::{Html, IntoResponse, Response};

use super::html::{esc, page, Crumbs};
use crate::params::Params;

const RANGES: &[(&str, &str)] = &[
    ("-1h", "1 hour"),
    ("-6h", "6 hours"),
    ("-1d", "1 day"),
    ("-7d", "1 week"),
    ("-30d", "1 month"),
    ("-365d", "1 year"),
];

/// `/browse?target=...&from=...&style=...`.
pub async fn page_handler(query: Option<&str>) -> Response {
    let p = Params::parse(query, None);
    let targets = p.get_all("target").join("\n");
    let from = p.get("from").unwrap_or("-1d");
    let style = p.get("style").unwrap_or("graphite");
    let mut ranges = String::new();
    for (v, label) in RANGES {
        let sel = if *v == from { " selected" } else { "" };
        ranges.push_str(&format!(r#"<option value="{v}"{sel}>{label}</option>"#));
    }
    let styles: String = ["graphite", "rrd"]
        .iter()
        .map(|s| {
            let sel = if *s == style { " selected" } else { "" };
            format!(r#"<option{sel}>{s}</option>"#)
        })
        .collect();
    let body = format!(
        r#"<div class="browser">
<aside class="tree-pane"><div class="tree-head">Metrics <input type="search" id="tree-filter" placeholder="filter this level" aria-label="filter"></div><ul class="tree" id="tree" data-root="1"></ul></aside>
<section class="draw-pane">
<form id="draw-form" class="draw-form">
<label class="field wide"><span class="label">Targets (one a line; any Graphite expression)</span><textarea name="target" id="targets" rows="3" spellcheck="false">{targets}</textarea></label>
<div class="row"><label class="field"><span class="label">Range</span><select name="from" id="from">{ranges}</select></label>
<label class="field"><span class="label">Style</span><select name="style" id="style">{styles}</select></label>
<div class="buttons"><button type="submit" class="button primary">Draw</button><button type="button" class="button" id="clear-targets">Clear</button></div></div>
</form>
<figure class="render"><img id="render-img" class="graph-img" alt="graph of the targets"><figcaption id="render-msg"></figcaption></figure>
</section></div>"#,
        targets = esc(&targets),
    );
    Html(page(
        "Metric browser",
        &Crumbs::home().push("Metric browser", None),
        "",
        &body,
    ))
    .into_response()
}

/// The handler.
pub async fn handle(RawQuery(query): RawQuery) -> Response {
    page_handler(query.as_deref()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn targets_and_range_come_from_the_url() {
        let resp = page_handler(Some("target=a.b&target=sumSeries(c.*)&from=-7d")).await;
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        assert!(html.contains("a.b\nsumSeries(c.*)</textarea>"));
        assert!(html.contains(r#"<option value="-7d" selected>"#));
    }
}
