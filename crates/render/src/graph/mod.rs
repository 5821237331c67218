//! Graph images: `/render?format=png|svg` as graphite-web 1.1 draws them, and the
//! rrdtool look of the GrowthForecast UI. Pure: series and options in, bytes out.
//!
//! - [`GraphSeries`] (`series.rs`): one line and the options graphite-web's
//!   graph-only functions set on it ([`GraphSeries::from_time_series`] takes them from
//!   a query result); consolidation to the plot width.
//! - [`GraphOptions`] (`options.rs`, parsing in `parse.rs`): every graphite-web graph
//!   parameter, and [`GraphOptions::rrd`], the rrd preset.
//! - `layout.rs`: the engine (frame, titles, consolidation and axes settled
//!   together) on top of `axes.rs` (labels, grid), `plot.rs` and `trace.rs` (lines and
//!   areas), `legend.rs`, `yaxis.rs` (label steps), `xaxis.rs` (graphite-web's
//!   time-axis table) and `units.rs` (K/M/G, Ki/Mi/Gi, Python's `%g`).
//! - `canvas.rs`: the drawing trait, with two backends that show the same picture:
//!   `raster.rs` (tiny-skia, PNG) and `svg.rs` (SVG text).
//! - `font.rs`: the embedded DejaVu Sans (`assets/`), used to measure all text.
//!
//! Where graphite-web fails or draws something odd, this module differs on purpose,
//! and says so where it does: a log axis ignores values at or below zero instead of
//! failing, `drawNullAsZero` counts missing points as zero before stacking, the y
//! axis maps its bounds (not its outermost labels) to the plot edges, day ticks stay
//! at local midnight across daylight-saving changes, and spikes beyond the plot are
//! clipped at the edge instead of bent.

mod axes;
mod canvas;
mod color;
mod error;
mod font;
mod layout;
mod legend;
mod options;
mod parse;
mod plot;
mod polyline;
mod raster;
mod series;
mod svg;
mod trace;
mod units;
mod xaxis;
mod yaxis;

use chrono_tz::Tz;

pub use color::{parse_color, ParsedColor, Rgba, DEFAULT_COLOR_LIST};
pub use error::GraphError;
pub use options::{
    AreaMode, AxisLimits, AxisMax, AxisSide, GraphOptions, LegendStyle, LineMode, PngCompression,
    SideOverrides, Style,
};
pub use parse::MAX_SIDE;
pub use series::{DrawType, GraphSeries};
pub use sumi_query::Consolidation;
pub use units::{format_units, si_compact, UnitSystem};

/// The image format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageFormat {
    #[default]
    Png,
    Svg,
}

impl ImageFormat {
    /// The `Content-Type` of the format, as graphite-web sends it.
    pub fn content_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Svg => "image/svg+xml",
        }
    }
}

/// The plot rectangle, in pixels from the top left corner.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlotArea {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

/// One y axis as drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisInfo {
    /// The values at the bottom and top edges of the plot.
    pub bottom: f64,
    pub top: f64,
    pub log_base: Option<f64>,
    /// Label values and texts (graphite-web's, with their trailing space).
    pub labels: Vec<(f64, String)>,
}

/// Where things ended up: the plot area, the axes and the time span. graphite-web
/// puts the same facts into its SVG's metadata; tests and image maps use them.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphInfo {
    pub width: u32,
    pub height: u32,
    /// True when "No Data" was drawn instead of a graph.
    pub no_data: bool,
    pub plot: PlotArea,
    /// The only y axis, or the left one when some series use the second.
    pub left_axis: Option<AxisInfo>,
    pub right_axis: Option<AxisInfo>,
    /// The time span of the x axis, epoch seconds.
    pub start: i64,
    pub end: i64,
    x_origin: f64,
    x_scale: f64,
}

impl GraphInfo {
    fn empty(width: u32, height: u32) -> GraphInfo {
        GraphInfo {
            width,
            height,
            no_data: false,
            plot: PlotArea::default(),
            left_axis: None,
            right_axis: None,
            start: 0,
            end: 0,
            x_origin: 0.0,
            x_scale: 0.0,
        }
    }

    /// The pixel row where `value` is drawn on the left (or only) axis, or on the
    /// right one.
    #[cfg(test)]
    pub(crate) fn y_pixel(&self, value: f64, right_axis: bool) -> Option<f64> {
        let axis = if right_axis {
            self.right_axis.as_ref()
        } else {
            self.left_axis.as_ref()
        }?;
        let a = yaxis::YAxis {
            bottom: axis.bottom,
            top: axis.top,
            step: None,
            labels: Vec::new(),
            log_base: axis.log_base,
        };
        a.y_coord(value, self.plot.top, self.plot.bottom)
    }

    /// The pixel column of a point at epoch second `t` of a series that needed no
    /// consolidation.
    #[cfg(test)]
    pub(crate) fn x_pixel(&self, t: i64) -> Option<f64> {
        (!self.no_data).then_some(self.x_origin + (t as f64 - self.start as f64) * self.x_scale)
    }
}

/// Draws `series` as a PNG or SVG image.
///
/// The x axis spans the series' own interval, as graphite-web's does (its fetch
/// returns the requested interval aligned to the step), or, with [`Style::Rrd`],
/// exactly `start..end`, as rrdtool's `--start`/`--end`. Time labels are in `tz`.
/// No series, or series covering no time, draw graphite-web's "No Data" image.
/// Errors are the caller's input ([`GraphError::is_client_error`]) except a font or
/// encoding failure.
pub fn render_graph(
    series: &[GraphSeries],
    opts: &GraphOptions,
    start: i64,
    end: i64,
    tz: Tz,
    format: ImageFormat,
) -> Result<Vec<u8>, GraphError> {
    render_graph_with_info(series, opts, start, end, tz, format).map(|(bytes, _)| bytes)
}

/// [`render_graph`], also returning where the plot and axes ended up.
pub(crate) fn render_graph_with_info(
    series: &[GraphSeries],
    opts: &GraphOptions,
    start: i64,
    end: i64,
    tz: Tz,
    format: ImageFormat,
) -> Result<(Vec<u8>, GraphInfo), GraphError> {
    let fonts = font::fonts()?;
    // Checked before allocating the image.
    let (w, h) = (opts.width, opts.height);
    for (name, v) in [("width", w), ("height", h)] {
        if v == 0 || v > MAX_SIDE {
            return Err(GraphError::param(
                name,
                &v.to_string(),
                format!("expected 1 to {MAX_SIDE} pixels"),
            ));
        }
    }
    match format {
        ImageFormat::Png => {
            let mut canvas = raster::Raster::new(w, h, fonts)?;
            let info = layout::draw(&mut canvas, fonts, series, opts, (start, end), tz)?;
            Ok((canvas.encode_png(opts.png_compression)?, info))
        }
        ImageFormat::Svg => {
            let mut canvas = svg::Svg::new(w, h);
            let info = layout::draw(&mut canvas, fonts, series, opts, (start, end), tz)?;
            Ok((canvas.finish(), info))
        }
    }
}

#[cfg(test)]
mod render_tests;
