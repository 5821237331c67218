//! Drawing options of one series: what graphite-web's graph-only functions (`color`,
//! `alpha`, `lineWidth`, `dashed`, `stacked`, `areaBetween`, `secondYAxis`,
//! `drawAsInfinite`, `verticalLine`, `threshold`) set on a series for the graph
//! renderer to honour. graphite-web keeps them in `series.options` (and the colour in
//! `series.color`); here they are one typed record, so that a renderer reads fields
//! rather than looking up strings.
//!
//! graphite-web's `TimeSeries.copy()` does not carry options over, so a function that
//! builds new series from old ones (`movingAverage`, `scale`, …) drops them; functions
//! that rename or filter keep them. [`SeriesOptions::default`] is "no option set".

/// graphite-web's `series.options` plus `series.color`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesOptions {
    /// `color()`, `threshold(…, color)`, `verticalLine(…, color)`: a colour name or
    /// hex code as given; `None` takes the next colour of the graph's `colorList`.
    pub color: Option<String>,
    /// `alpha()`: opacity of the line or area, 0 to 1.
    pub alpha: Option<f64>,
    /// `lineWidth()`: overrides the graph's `lineWidth`.
    pub line_width: Option<f64>,
    /// `dashed()`: length of dashes and gaps, in pixels.
    pub dashed: Option<f64>,
    /// `stacked()`, `areaBetween()`: drawn as a filled area.
    pub stacked: bool,
    /// `areaBetween()`'s lower series: drawn fully transparent, shaping the area above.
    pub invisible: bool,
    /// `secondYAxis()`: scaled on the right-hand axis.
    pub second_y_axis: bool,
    /// `drawAsInfinite()`, `verticalLine()`: positive values drawn as vertical lines
    /// across the whole plot.
    pub draw_as_infinite: bool,
    /// `verticalLine()` without a label: graphite-web's series is named `None` (JSON
    /// `null`); see [`TimeSeries::name_is_none`](crate::series::TimeSeries::name_is_none).
    pub unnamed: bool,
}

impl SeriesOptions {
    /// Whether no option is set (graphite-web's empty `options` and no `color`).
    pub fn is_empty(&self) -> bool {
        *self == SeriesOptions::default()
    }
}
