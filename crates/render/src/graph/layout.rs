//! The layout engine: graphite-web's `LineGraph.drawGraph` order of work. The frame
//! (background, title, vertical titles, legend, room for time labels) shrinks the
//! plot area; then consolidation and the y axes are settled together (wider labels
//! leave fewer pixels, which can change the consolidation and so the labels); then
//! labels, grid and data are drawn.

use chrono_tz::Tz;

use super::axes::{draw_grid, draw_labels, snap, AxesContext};
use super::canvas::{Align, Canvas, Path, Rect, Stroke, TextRun};
use super::color::{parse_color, Rgba};
use super::error::GraphError;
use super::font::{Face, Fonts};
use super::legend;
use super::options::{AxisSide, GraphOptions, LineMode, Style};
use super::parse::{unquote_plus, MAX_SIDE};
use super::plot::{self, Area, Plotter, Prepared};
use super::series::GraphSeries;
use super::xaxis;
use super::yaxis::{build_axis, YAxis};
use super::{AxisInfo, GraphInfo};

/// How often consolidation and axes are recomputed before the layout is taken as is.
const MAX_LAYOUT_PASSES: usize = 8;

/// Vertical placement of a text run relative to a y coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VAlign {
    Top,
    Middle,
    Baseline,
}

/// The state of one drawing: options in force, the canvas and the shrinking plot area.
pub(crate) struct Engine<'a> {
    pub(crate) o: GraphOptions,
    pub(crate) canvas: &'a mut dyn Canvas,
    pub(crate) fonts: &'static Fonts,
    pub(crate) fg: Rgba,
    pub(crate) area: Area,
    /// Labels of a left axis may not start before this x (a vertical title is there).
    pub(crate) left_reserved: f64,
    /// Labels of a right axis may not end after this x.
    pub(crate) right_reserved: f64,
}

impl Engine<'_> {
    pub(crate) fn face(&self) -> &'static Face {
        self.fonts.face(self.o.font_bold)
    }

    pub(crate) fn font_size(&self) -> f64 {
        self.o.font_size
    }

    /// Draws one line of text in the graph's font at `size`.
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors graphite-web's drawText(text, x, y, align, valign, ...)"
    )]
    pub(crate) fn text(
        &mut self,
        text: &str,
        x: f64,
        y: f64,
        align: Align,
        valign: VAlign,
        size: f64,
        rotate: f64,
        color: Rgba,
    ) {
        let m = self.face().metrics(size);
        let shift = match valign {
            VAlign::Top => m.ascent,
            VAlign::Middle => m.height / 2.0 - m.descent,
            VAlign::Baseline => 0.0,
        };
        let angle = rotate.to_radians();
        let (bx, by) = (x - angle.sin() * shift, y + angle.cos() * shift);
        self.canvas.text(&TextRun {
            text,
            x: bx as f32,
            y: by as f32,
            align,
            size: size as f32,
            bold: self.o.font_bold,
            italic: self.o.font_italic,
            rotate: rotate as f32,
            color,
        });
    }

    fn title_size(&self) -> f64 {
        let s = self.o.font_size;
        s + s.ln().floor()
    }
}

/// Draws the graph for `series` on `canvas`.
pub(crate) fn draw(
    canvas: &mut dyn Canvas,
    fonts: &'static Fonts,
    series: &[GraphSeries],
    opts: &GraphOptions,
    window: (i64, i64),
    tz: Tz,
) -> Result<GraphInfo, GraphError> {
    let o = effective(opts)?;
    let (width, height) = (f64::from(o.width), f64::from(o.height));
    let background = parse_color(&o.background, "bgcolor")?.solid();
    let fg = parse_color(&o.foreground, "fgcolor")?.solid();
    canvas.fill_rect(Rect::new(0.0, 0.0, width, height), background);
    for s in series {
        if s.step <= 0 {
            return Err(GraphError::Series {
                name: s.name.clone(),
                reason: format!("step {} is not positive", s.step),
            });
        }
    }
    let mut info = GraphInfo::empty(o.width, o.height);
    let span = time_span(series, &o, window);
    let Some((start_time, end_time)) = span else {
        no_data(canvas, fonts, &o);
        info.no_data = true;
        return Ok(info);
    };

    let margin = f64::from(o.margin);
    let area = if o.graph_only {
        Area {
            xmin: 0.0,
            xmax: width,
            ymin: 0.0,
            ymax: height,
        }
    } else {
        Area {
            xmin: margin + 10.0,
            xmax: width - margin,
            ymin: margin,
            ymax: height - margin,
        }
    };
    let mut e = Engine {
        left_reserved: margin,
        right_reserved: width - margin,
        o,
        canvas,
        fonts,
        fg,
        area,
    };
    let second_axis = series.iter().any(|s| s.second_y_axis);
    if second_axis {
        e.o.y_axis_side = AxisSide::Left;
    }
    let mut line_mode = e.o.line_mode;
    if line_mode == LineMode::Slope && series.iter().any(|s| s.values.len() == 1) {
        // A slope needs two points: graphite-web draws single points as steps.
        line_mode = LineMode::Staircase;
    }

    let mut prepared = plot::prepare(series, &e.o, second_axis)?;
    draw_titles(&mut e, second_axis);
    legend::draw(&mut e, &prepared, second_axis)?;
    let show_x = !e.o.hide_axes && !e.o.hide_x_axis;
    if show_x {
        e.area.ymax -= e.face().metrics(e.font_size()).ascent * 2.0;
    }

    // The x axis: data span (graphite-web) or the requested window (rrd).
    let (start_time, end_time) = match (e.o.style, line_mode) {
        (Style::Rrd, _) | (_, LineMode::Staircase) => (start_time, end_time),
        _ => {
            let end = series
                .iter()
                .filter(|s| !s.values.is_empty())
                .map(|s| s.end() - s.step)
                .max();
            (
                start_time,
                end.filter(|&t| t > start_time).unwrap_or(end_time),
            )
        }
    };
    let time_range = end_time as f64 - start_time as f64;

    plot::arrange(&mut prepared, &e.o, second_axis);
    let (left, right) = settle_layout(&mut e, &mut prepared, time_range, second_axis)?;

    let graph_width = (e.area.xmax - e.area.xmin - (e.o.line_width + 1.0)).max(1.0);
    let x_scale = graph_width / time_range;
    let xconf = xaxis::choose(
        time_range / graph_width,
        end_time.saturating_sub(start_time),
    );
    let ctx = AxesContext {
        left: &left,
        right: right.as_ref(),
        start_time,
        end_time,
        x_scale,
        xconf,
        tz,
    };
    let grid = !e.o.hide_axes && !e.o.hide_grid;
    // rrdtool draws its grid over the data (dotted lines across areas); graphite-web
    // under it.
    let grid_on_top = e.o.style == Style::Rrd;
    if !e.o.hide_axes {
        e.canvas.section("axes");
        draw_labels(&mut e, &ctx);
    }
    if grid && !grid_on_top {
        e.canvas.section("grid");
        draw_grid(&mut e, &ctx);
    }

    e.canvas.section("lines");
    let a = e.area;
    if a.xmax > a.xmin && a.ymax > a.ymin {
        e.canvas.set_clip(Some(Rect::new(
            a.xmin,
            a.ymin,
            a.xmax - a.xmin,
            a.ymax - a.ymin,
        )));
        // shaded intervals (sumi's `shade=`) behind the series, at least 3 px wide
        for &(from, until) in &e.o.shade {
            let x_of = |t: i64| a.xmin + (t - start_time) as f64 * x_scale;
            let (x0, x1) = (x_of(from).max(a.xmin), x_of(until).min(a.xmax));
            if x1 < a.xmin || x0 > a.xmax {
                continue;
            }
            let (x0, x1) = if x1 - x0 < 3.0 {
                let mid = (x0 + x1) / 2.0;
                (mid - 1.5, mid + 1.5)
            } else {
                (x0, x1)
            };
            e.canvas.fill_rect(
                Rect::new(x0, a.ymin, x1 - x0, a.ymax - a.ymin),
                Rgba::rgb(255, 64, 64).with_alpha(0.25),
            );
        }
        let plotter = Plotter {
            o: &e.o,
            area: a,
            start_time: start_time as f64,
            left: &left,
            right: right.as_ref(),
            line_mode,
        };
        plotter.draw(e.canvas, &prepared);
        e.canvas.set_clip(None);
    }
    if grid && grid_on_top {
        e.canvas.section("grid");
        draw_grid(&mut e, &ctx);
    }
    if e.o.frame {
        let stroke = Stroke::solid(1.0);
        let (x0, x1) = (snap(a.xmin), snap(a.xmax));
        let (y0, y1) = (snap(a.ymin), snap(a.ymax));
        let mut p = Path::new();
        p.move_to(x0, y0);
        p.line_to(x1, y0);
        p.line_to(x1, y1);
        p.line_to(x0, y1);
        p.close();
        e.canvas.stroke_path(&p, &stroke, fg.with_alpha(0.55));
    }

    info.plot = super::PlotArea {
        left: a.xmin,
        top: a.ymin,
        right: a.xmax,
        bottom: a.ymax,
    };
    info.left_axis = Some(AxisInfo::from(&left));
    info.right_axis = right.as_ref().map(AxisInfo::from);
    info.start = start_time;
    info.end = end_time;
    info.x_origin = a.xmin + e.o.line_width / 2.0;
    info.x_scale = x_scale;
    Ok(info)
}

/// The options as drawn: `graphOnly` switches everything but the plot off; sizes
/// must be within range (the fields are public, so they are checked here too).
fn effective(opts: &GraphOptions) -> Result<GraphOptions, GraphError> {
    let mut o = opts.clone();
    for (name, v) in [("width", o.width), ("height", o.height)] {
        if v == 0 || v > MAX_SIDE {
            return Err(GraphError::param(
                name,
                &v.to_string(),
                format!("expected 1 to {MAX_SIDE} pixels"),
            ));
        }
    }
    if !(o.font_size.is_finite() && o.font_size >= 1.0) {
        return Err(GraphError::param(
            "fontSize",
            &o.font_size.to_string(),
            "expected a size from 1 to 200",
        ));
    }
    o.font_size = o.font_size.min(200.0);
    if !(o.line_width.is_finite() && o.line_width >= 0.0) {
        o.line_width = 1.2;
    }
    if !(o.min_x_step.is_finite() && o.min_x_step > 0.0) {
        o.min_x_step = 1.0;
    }
    o.margin = o.margin.min(1000);
    if o.graph_only {
        o.hide_legend = Some(true);
        o.hide_grid = true;
        o.hide_axes = true;
        o.hide_x_axis = false;
        o.hide_y_axis = false;
        o.y_axis_side = AxisSide::Left;
        o.title.clear();
        o.vtitle.clear();
        o.vtitle_right.clear();
        o.margin = 0;
        o.frame = false;
    }
    Ok(o)
}

/// The x axis span, or `None` for graphite-web's "No Data": no series, or no time
/// between the first point and the end of the last.
fn time_span(series: &[GraphSeries], o: &GraphOptions, window: (i64, i64)) -> Option<(i64, i64)> {
    if series.is_empty() {
        return None;
    }
    if o.style == Style::Rrd && window.1 > window.0 {
        return Some(window);
    }
    let start = series.iter().map(|s| s.start).min()?;
    let end = series.iter().map(GraphSeries::end).max()?;
    (end > start).then_some((start, end))
}

/// graphite-web's "No Data": red, centred, at a size that grows with the image.
fn no_data(canvas: &mut dyn Canvas, fonts: &'static Fonts, o: &GraphOptions) {
    let (w, h) = (f64::from(o.width), f64::from(o.height));
    let size = (w * h).ln().max(1.0);
    let ascent = fonts.regular.metrics(size).ascent;
    canvas.section("nodata");
    canvas.text(&TextRun {
        text: "No Data",
        x: (w / 2.0) as f32,
        y: (h / 2.0 + ascent) as f32,
        align: Align::Center,
        size: size as f32,
        bold: false,
        italic: false,
        rotate: 0.0,
        color: Rgba::rgb(200, 0, 50),
    });
}

/// The title (centred lines at the top) and the vertical titles, each taking room
/// from the plot.
fn draw_titles(e: &mut Engine<'_>, second_axis: bool) {
    let size = e.title_size();
    let m = e.face().metrics(size);
    let margin = f64::from(e.o.margin);
    let fg = e.fg;
    if !e.o.title.is_empty() {
        e.canvas.section("title");
        let title = unquote_plus(&e.o.title);
        let mut y = e.area.ymin;
        let w = f64::from(e.o.width);
        for line in title.split('\n') {
            let line = e.face().fit(line, size, w).into_owned();
            e.text(&line, w / 2.0, y, Align::Center, VAlign::Top, size, 0.0, fg);
            y += m.height;
        }
        e.area.ymin = y + margin;
    }
    let mid = f64::from(e.o.height) / 2.0;
    if !e.o.vtitle.is_empty() {
        e.canvas.section("vtitle");
        let text = unquote_plus(&e.o.vtitle);
        let mut x = e.area.xmin + m.height;
        let mut last = x;
        for line in text.split('\n') {
            e.text(
                line,
                x,
                mid,
                Align::Center,
                VAlign::Baseline,
                size,
                270.0,
                fg,
            );
            last = x;
            x += m.height;
        }
        e.left_reserved = last + m.descent + 4.0;
        e.area.xmin = e.area.xmin.max(e.left_reserved + 4.0);
    }
    if second_axis && !e.o.vtitle_right.is_empty() {
        e.canvas.section("vtitleRight");
        let text = unquote_plus(&e.o.vtitle_right);
        let mut x = e.area.xmax - m.height;
        let mut last = x;
        for line in text.split('\n') {
            e.text(
                line,
                x,
                mid,
                Align::Center,
                VAlign::Baseline,
                size,
                90.0,
                fg,
            );
            last = x;
            x -= m.height;
        }
        e.right_reserved = last - m.descent - 4.0;
        e.area.xmax = e.area.xmax.min(e.right_reserved - 4.0);
    }
}

/// Consolidates to the plot width and builds the y axes until the label widths
/// stop moving the plot edges.
fn settle_layout(
    e: &mut Engine<'_>,
    prepared: &mut [Prepared<'_>],
    time_range: f64,
    second_axis: bool,
) -> Result<(YAxis, Option<YAxis>), GraphError> {
    let show_labels = !e.o.hide_axes && !e.o.hide_y_axis;
    let mut pass = 0;
    loop {
        pass += 1;
        let pixels = e.area.xmax - e.area.xmin - (e.o.line_width + 1.0);
        plot::consolidate_all(
            prepared,
            pixels,
            time_range,
            e.o.min_x_step,
            e.o.draw_null_as_zero,
        );
        plot::stack_all(prepared);
        let before = (e.area.xmin, e.area.xmax);
        let left = axis_for(
            e,
            prepared,
            false,
            if second_axis { e.o.y_left } else { e.o.y },
        )?;
        let right = if second_axis {
            Some(axis_for(e, prepared, true, e.o.y_right)?)
        } else {
            None
        };
        if show_labels {
            let size = e.font_size();
            let widest = |a: &YAxis| {
                a.labels
                    .iter()
                    .map(|(_, t)| e.face().width(t, size))
                    .fold(0.0, f64::max)
            };
            let lw = widest(&left);
            match (&right, e.o.y_axis_side) {
                (Some(r), _) => {
                    let rw = widest(r);
                    e.area.xmin = e.area.xmin.max(e.left_reserved + lw * 1.02);
                    e.area.xmax = e.area.xmax.min(e.right_reserved - rw * 1.02 - 3.0);
                }
                (None, AxisSide::Left) => {
                    e.area.xmin = e.area.xmin.max(e.left_reserved + lw * 1.02)
                }
                (None, AxisSide::Right) => {
                    e.area.xmax = e.area.xmax.min(e.right_reserved - lw * 1.02)
                }
            }
        }
        if before == (e.area.xmin, e.area.xmax) || pass >= MAX_LAYOUT_PASSES {
            return Ok((left, right));
        }
    }
}

fn axis_for(
    e: &Engine<'_>,
    prepared: &[Prepared<'_>],
    right: bool,
    limits: super::AxisLimits,
) -> Result<YAxis, GraphError> {
    let log = e.o.log_base;
    let (mut min, mut max) = plot::data_limits(prepared, right, log.is_some());
    if let Some(soft) =
        e.o.soft_min
            .filter(|s| s.is_finite() && (log.is_none() || *s > 0.0))
    {
        min = min.min(soft);
    }
    if let Some(soft) = e.o.soft_max.filter(|s| s.is_finite()) {
        max = max.max(soft);
    }
    build_axis(min, max, &limits, log, e.o.y_unit_system, &e.o.y_divisors)
}

impl From<&YAxis> for AxisInfo {
    fn from(a: &YAxis) -> AxisInfo {
        AxisInfo {
            bottom: a.bottom,
            top: a.top,
            log_base: a.log_base,
            labels: a.labels.clone(),
        }
    }
}
