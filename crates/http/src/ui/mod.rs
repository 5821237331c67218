//! The web UI that `sumi serve` serves: GrowthForecast's pages (services → sections →
//! graphs, each graph with its range tabs; complex graphs; editing a graph's settings)
//! and a browser for the Graphite metric tree that draws any series or target.
//!
//! Pages are HTML made on the server from the metadata database (one query a page);
//! graphs are `<img>` elements pointing at `/graph/...` or `/render?format=png`, so a
//! page of 50 graphs is 50 independent image requests that the browser runs in
//! parallel and loads lazily. The little script there is (tabs, forms, the tree) and
//! the stylesheet are embedded in the binary: nothing to build or install.
//!
//! - `html.rs`: escaping and the page frame.
//! - `pages.rs`: the home page, a service, a section, one graph.
//! - `forms.rs`: editing a graph, adding and editing complex graphs.
//! - `browse.rs`: the metric browser.
//! - `anomalies.rs`: open and recent anomaly events, each with its graph shaded.

pub mod anomalies;
pub mod browse;
pub mod forms;
pub mod html;
pub mod pages;

use std::sync::Arc;

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::growthforecast::GfError;
use crate::AppState;

const CSS: &str = include_str!("../../assets/sumi.css");
const JS: &str = include_str!("../../assets/sumi.js");
const FAVICON: &[u8] = include_bytes!("../../assets/favicon.svg");

/// The UI's routes.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(pages::index))
        .route("/list/{service}", get(pages::service))
        .route("/list/{service}/{section}", get(pages::section))
        .route(
            "/view_graph/{service}/{section}/{graph}",
            get(pages::view_graph),
        )
        .route(
            "/view_complex/{service}/{section}/{graph}",
            get(pages::view_complex),
        )
        .route("/edit/{service}/{section}/{graph}", get(forms::edit_graph))
        .route("/add_complex", get(forms::add_complex))
        .route("/edit_complex/{id}", get(forms::edit_complex))
        .route("/browse", get(browse::handle))
        .route("/anomalies", get(anomalies::list))
        .route("/anomalies/graph", get(anomalies::graph))
        .route("/static/{file}", get(asset))
        .route(
            "/favicon.ico",
            get(|| asset(Path("favicon.svg".to_string()))),
        )
}

/// An embedded file. The UI is small and versioned with the binary, so a short cache
/// lifetime is enough and an upgrade shows at once.
async fn asset(Path(file): Path<String>) -> Response {
    let (ct, body): (&str, &[u8]) = match file.as_str() {
        "sumi.css" => ("text/css; charset=utf-8", CSS.as_bytes()),
        "sumi.js" => ("text/javascript; charset=utf-8", JS.as_bytes()),
        "favicon.svg" => ("image/svg+xml", FAVICON),
        _ => return (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, ct),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
        .into_response()
}

/// A page, or the error as a page.
pub(crate) fn html_page(result: Result<String, GfError>) -> Response {
    match result {
        Ok(body) => Html(body).into_response(),
        Err(GfError::NotFound(what)) => (
            StatusCode::NOT_FOUND,
            Html(html::page(
                "Not found",
                &html::Crumbs::home().push("Not found", None),
                "",
                &format!(r#"<p class="empty">{} not found.</p>"#, html::esc(&what)),
            )),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}
