//! Graph images, the one way every route draws: lines and [`GraphOptions`] in, a PNG
//! or SVG answer out, through `sumi_render::graph`.
//!
//! - [`render`]: graphite-web's `/render?format=png|svg` (and `/render` without a
//!   format), the options read from the request as graphite-web reads them.
//! - [`draw`]: what GrowthForecast's `/graph/...` routes call once they have built
//!   their lines and rrdgraph-like options (`growthforecast/graph.rs`).
//!
//! A drawing that fails on what the client asked for (a bad parameter) is a 400, any
//! other failure (fonts, encoding) a 500; both carry the message as plain text.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono_tz::Tz;
use sumi_query::series::TimeSeries;
use sumi_render::graph::{render_graph, GraphError, GraphOptions, GraphSeries, ImageFormat};

use crate::params::Params;
use crate::{bad_request, server_error};

/// PNG, or SVG when asked for (`format=svg`).
pub(crate) fn format(svg: bool) -> ImageFormat {
    if svg {
        ImageFormat::Svg
    } else {
        ImageFormat::Png
    }
}

/// Draws `lines` over `from..until` and answers with the image.
pub(crate) fn draw(
    lines: &[GraphSeries],
    opts: &GraphOptions,
    from: i64,
    until: i64,
    tz: Tz,
    format: ImageFormat,
) -> Result<Response, GraphError> {
    let bytes = render_graph(lines, opts, from, until, tz, format)?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        bytes,
    )
        .into_response())
}

/// The answer to a drawing that failed: 400 when the client's parameters caused it.
pub(crate) fn error_response(e: GraphError) -> Response {
    if e.is_client_error() {
        bad_request(e)
    } else {
        server_error(e)
    }
}

/// `/render?format=png|svg`: graphite-web's graph of the evaluated targets, with its
/// graph parameters (`width`, `height`, `title`, `areaMode`, `style=rrd`, …).
/// `from`/`until` are the request's interval.
pub(crate) fn render(
    series: &[TimeSeries],
    params: &Params,
    tz: Tz,
    from: i64,
    until: i64,
    format: ImageFormat,
) -> Response {
    let opts = match GraphOptions::from_params(params.pairs()) {
        Ok(o) => o,
        Err(e) => return bad_request(e),
    };
    let lines: Vec<GraphSeries> = series.iter().map(GraphSeries::from_time_series).collect();
    draw(&lines, &opts, from, until, tz, format).unwrap_or_else(error_response)
}
