//! Every graph parameter graphite-web's line graph understands, with its defaults
//! (render/glyph.py and render/views.py), and the rrdtool-like preset of the
//! GrowthForecast UI. Parsing from URL parameters is in `parse.rs`.

use super::color::DEFAULT_COLOR_LIST;
use super::units::UnitSystem;

/// Which look the options start from and which drawing rules apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// graphite-web's line graph: legend of names under the plot, filled areas
    /// drawn first and never over each other.
    #[default]
    Graphite,
    /// rrdtool's look as GrowthForecast uses it: white canvas, light grid, plot frame,
    /// a legend table with `Cur`/`Avg`/`Max`/`Min` per series, and elements painted in
    /// order (a later `AREA` covers an earlier one, as in rrdtool).
    Rrd,
}

/// `lineMode`: how consecutive points are joined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineMode {
    /// Straight lines between points; a gap breaks the line.
    #[default]
    Slope,
    /// Each point is a horizontal step one interval wide.
    Staircase,
    /// Straight lines that also bridge gaps (up to `connectedLimit` missing points).
    Connected,
}

/// `areaMode`: which series are filled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AreaMode {
    #[default]
    None,
    /// Only the first series.
    First,
    /// Every series, each drawn only where the ones before it are not.
    All,
    /// Every series, each on top of the sum of the ones before it.
    Stacked,
}

/// `yAxisSide`: where the labels of a single y axis go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AxisSide {
    #[default]
    Left,
    Right,
}

/// `yMax`: a number, or `max` for the data's own maximum without rounding up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AxisMax {
    Value(f64),
    DataMax,
}

/// One y axis' bounds: `yMin`/`yMax`/`yLimit`/`yStep` (or their `Left`/`Right`
/// forms when a series is on the second axis).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AxisLimits {
    /// The bottom of the axis, exactly.
    pub min: Option<f64>,
    /// The top of the axis, exactly (or the data maximum).
    pub max: Option<AxisMax>,
    /// The top may be rounded up to a nice value, but never beyond this.
    pub limit: Option<f64>,
    /// The distance between labels.
    pub step: Option<f64>,
}

/// `leftColor`/`leftWidth`/`leftDashed` (and the right-hand forms): series options
/// applied to every series of one axis when a second axis is in use.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SideOverrides {
    pub color: Option<String>,
    pub width: Option<f64>,
    pub dashed: Option<f64>,
}

/// What the legend shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LegendStyle {
    /// graphite-web's: a colour box and the name, in as many columns as fit.
    #[default]
    Names,
    /// rrdgraph's: one row per series with the colour box, the name, and its
    /// current, average, maximum and minimum values with SI prefixes.
    Stats,
}

/// How hard PNG output is compressed (not a graphite-web parameter: a server setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PngCompression {
    /// Quick to encode (about 1 ms for 800×600), larger files.
    #[default]
    Fast,
    /// About a third smaller, several milliseconds more per image.
    Small,
}

/// All graph parameters. [`GraphOptions::default`] is graphite-web's look;
/// [`GraphOptions::rrd`] the GrowthForecast one. Colours stay strings until drawn,
/// so that an unusable colour fails with the name of the parameter that carried it.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphOptions {
    pub style: Style,
    /// Image size in pixels (1..=4096 each).
    pub width: u32,
    pub height: u32,
    /// Space around the plot, in pixels.
    pub margin: u32,
    /// `bgcolor` and `fgcolor` (text, axis labels).
    pub background: String,
    pub foreground: String,
    pub major_grid_color: String,
    pub minor_grid_color: String,
    /// Colours handed out in turn to series without their own.
    pub color_list: Vec<String>,
    /// `fontName`: only written into SVG; text is always measured and drawn with the
    /// embedded DejaVu Sans.
    pub font_name: String,
    /// In pixels (graphite-web's cairo points at 1 pt = 1 px).
    pub font_size: f64,
    pub font_bold: bool,
    pub font_italic: bool,
    pub title: String,
    pub vtitle: String,
    pub vtitle_right: String,
    pub line_mode: LineMode,
    /// `connectedLimit`: the most missing points a connected line bridges.
    pub connected_limit: Option<u64>,
    pub area_mode: AreaMode,
    /// `areaAlpha`: filled areas get this opacity, with an opaque line on top.
    pub area_alpha: Option<f64>,
    /// `lineWidth` (or `thickness`).
    pub line_width: f64,
    /// `hideLegend`; `None` hides it when there are more than `legend_max_items` series.
    pub hide_legend: Option<bool>,
    pub legend_max_items: usize,
    pub legend_style: LegendStyle,
    pub unique_legend: bool,
    pub hide_null_from_legend: bool,
    /// `hideAxes` hides both axes' labels and the grid.
    pub hide_axes: bool,
    pub hide_x_axis: bool,
    pub hide_y_axis: bool,
    pub hide_grid: bool,
    /// `graphOnly`: the plot alone, filling the whole image.
    pub graph_only: bool,
    pub draw_null_as_zero: bool,
    /// `logBase`: a logarithmic y axis with this base (> 1).
    pub log_base: Option<f64>,
    pub y_axis_side: AxisSide,
    pub y_unit_system: UnitSystem,
    /// `yMin`/`yMax`/`yLimit`/`yStep` for a graph with one y axis.
    pub y: AxisLimits,
    /// `yMinLeft`... and `yMinRight`... for a graph with a second y axis.
    pub y_left: AxisLimits,
    pub y_right: AxisLimits,
    /// `yDivisors`: acceptable numbers of intervals between y labels.
    pub y_divisors: Vec<u32>,
    /// `minorY`: minor grid lines between two y labels.
    pub minor_y: u32,
    /// `xFormat`: strftime format of the x labels (default chosen by time span).
    pub x_format: Option<String>,
    /// `minXStep`: the fewest pixels between two drawn points; more points are
    /// consolidated.
    pub min_x_step: f64,
    pub left: SideOverrides,
    pub right: SideOverrides,
    /// rrdtool's `--lower-limit` without `--rigid`: the axis reaches at least down to
    /// this, further if the data does.
    pub soft_min: Option<f64>,
    /// rrdtool's `--upper-limit` without `--rigid`.
    pub soft_max: Option<f64>,
    /// Draw a frame around the plot (the rrd look).
    pub frame: bool,
    pub png_compression: PngCompression,
    /// sumi's extension `shade=START:END` (epoch seconds, repeatable): intervals drawn
    /// as translucent red bands behind the series (anomaly events, docs/anomaly.md).
    pub shade: Vec<(i64, i64)>,
}

impl Default for GraphOptions {
    /// graphite-web's defaults (its `default` graph template and `parseOptions`).
    fn default() -> GraphOptions {
        GraphOptions {
            style: Style::Graphite,
            width: 330,
            height: 250,
            margin: 10,
            background: "white".to_string(),
            foreground: "black".to_string(),
            major_grid_color: "rose".to_string(),
            minor_grid_color: "grey".to_string(),
            color_list: DEFAULT_COLOR_LIST.iter().map(|c| c.to_string()).collect(),
            font_name: "Sans".to_string(),
            font_size: 10.0,
            font_bold: false,
            font_italic: false,
            title: String::new(),
            vtitle: String::new(),
            vtitle_right: String::new(),
            line_mode: LineMode::Slope,
            connected_limit: None,
            area_mode: AreaMode::None,
            area_alpha: None,
            line_width: 1.2,
            hide_legend: None,
            legend_max_items: 10,
            legend_style: LegendStyle::Names,
            unique_legend: false,
            hide_null_from_legend: false,
            hide_axes: false,
            hide_x_axis: false,
            hide_y_axis: false,
            hide_grid: false,
            graph_only: false,
            draw_null_as_zero: false,
            log_base: None,
            y_axis_side: AxisSide::Left,
            y_unit_system: UnitSystem::Si,
            y: AxisLimits::default(),
            y_left: AxisLimits::default(),
            y_right: AxisLimits::default(),
            y_divisors: vec![4, 5, 6],
            minor_y: 1,
            x_format: None,
            min_x_step: 1.0,
            left: SideOverrides::default(),
            right: SideOverrides::default(),
            soft_min: None,
            soft_max: None,
            frame: false,
            png_compression: PngCompression::Fast,
            shade: Vec::new(),
        }
    }
}

/// Colours of the rrd preset (Tableau 10: distinct, and readable on white).
const RRD_COLORS: &[&str] = &[
    "4e79a7", "f28e2b", "e15759", "76b7b2", "59a14f", "edc948", "b07aa1", "ff9da7", "9c755f",
    "bab0ac",
];

impl GraphOptions {
    /// The GrowthForecast/rrdtool look: white background, light grid, a frame, the
    /// `Cur`/`Avg`/`Max`/`Min` legend table, one-pixel lines, an axis that starts at
    /// zero unless the data goes below (GrowthForecast's `--lower-limit 0`).
    pub fn rrd() -> GraphOptions {
        GraphOptions {
            style: Style::Rrd,
            width: 640,
            height: 320,
            major_grid_color: "d4d4d4".to_string(),
            minor_grid_color: "ececec".to_string(),
            color_list: RRD_COLORS.iter().map(|c| c.to_string()).collect(),
            line_width: 1.0,
            legend_max_items: 50,
            legend_style: LegendStyle::Stats,
            soft_min: Some(0.0),
            frame: true,
            ..GraphOptions::default()
        }
    }

    /// Starts from the defaults of `style`.
    pub fn for_style(style: Style) -> GraphOptions {
        match style {
            Style::Graphite => GraphOptions::default(),
            Style::Rrd => GraphOptions::rrd(),
        }
    }
}
