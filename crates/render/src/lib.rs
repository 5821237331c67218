//! Render: series and find results in, bytes of the requested format out — the text
//! and binary formats byte for byte as graphite-web 1.1.10 writes them, graph images
//! as it draws them. Pure: no I/O, no clocks.
//!
//! - [`series_json`]: `/render?format=json` (with `maxDataPoints`, `noNullPoints`,
//!   `pretty`, `jsonp`).
//! - [`text`]: `/render?format=csv` and `format=raw`.
//! - [`find`]: `/metrics/find` (treejson, completer, nodelist, json),
//!   `/metrics/expand` and `/metrics/index.json`.
//! - [`pickle`], [`msgpack`]: `format=pickle|msgpack` of `/render` and `/metrics/find`,
//!   graphite-web's cluster protocol.
//! - [`functions`]: `/functions`, the function definitions as JSON.
//! - [`graph`]: `format=png|svg` graph images as graphite-web draws them, and the
//!   rrdtool look the GrowthForecast UI's graphs use.
//! - `json` (private): a writer with Python `json.dumps`'s exact layout.
//!
//! Numbers are written as Python writes floats (`repr`: `42.0`, `1e-05`, `1e+16`;
//! `%g` on graph labels), with `sumi_query::py`.

mod json;

pub mod find;
pub mod functions;
pub mod graph;
pub mod msgpack;
pub mod pickle;
pub mod series_json;
pub mod text;

pub use find::{
    completer, completer_query, expand, find_json, index_json, node_list, tree_json,
    JsonResponseOptions,
};
pub use functions::{function_details, function_list, FunctionListOptions};
pub use msgpack::{find_msgpack, render_msgpack};
pub use pickle::{find_pickle, render_pickle};
pub use series_json::{max_data_points_window, render_json, JsonOptions, Window};
pub use text::{render_csv, render_raw};

/// A rendered answer: the body and its `Content-Type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub body: Vec<u8>,
    pub content_type: &'static str,
}

/// Why an answer could not be rendered; graphite-web fails these with a server error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// `format=nodelist&position=N` on a path with fewer nodes.
    #[error("path {path:?} has no node at position {position}")]
    NodePosition { position: i64, path: String },
}

/// The body as is, or as `jsonp(body)` under the script content type.
fn wrap_json(
    body: String,
    jsonp: Option<&str>,
    plain: &'static str,
    script: &'static str,
) -> Rendered {
    match jsonp {
        Some(callback) => Rendered {
            body: format!("{callback}({body})").into_bytes(),
            content_type: script,
        },
        None => Rendered {
            body: body.into_bytes(),
            content_type: plain,
        },
    }
}

#[cfg(test)]
mod tests;
