//! The data inside the plot: series resolved to colours and widths, consolidated to
//! the plot width, stacked, traced into lines and areas as graphite-web's
//! `drawLines` traces them, and drawn.
//!
//! Tracing is in `trace.rs`.
//!
//! Filled series ("stacked" in graphite-web's terms) are drawn first. graphite-web
//! clips each filled area out of the plot before drawing the next, so an area only
//! shows where no earlier area is; here each area is drawn as the band between its
//! line and the envelope of the earlier areas, which gives the same picture without
//! clip paths (and keeps SVG simple). In the rrd style, areas are drawn in order over
//! each other from zero, or from the series below when stacked, as rrdtool does.

use super::canvas::{Canvas, Join, Path, Stroke};
use super::color::{parse_color, ParsedColor, Rgba};
use super::error::GraphError;
use super::options::{AreaMode, GraphOptions, LineMode, Style};
use super::series::{consolidate, GraphSeries};
use super::trace::{trace, Cursor, Lines, Trace, TraceMode};
use super::yaxis::YAxis;

/// A series with its drawing options resolved.
pub(crate) struct Prepared<'s> {
    pub(crate) src: &'s GraphSeries,
    pub(crate) color: ParsedColor,
    /// Opacity asked for (`alpha()`, or `areaAlpha` for areas).
    pub(crate) alpha: f64,
    pub(crate) width: f64,
    pub(crate) dash: Option<f64>,
    /// Drawn as an area.
    pub(crate) fill: bool,
    /// Values added on top of the series below.
    pub(crate) stack: bool,
    pub(crate) right: bool,
    /// Consolidated values (missing as zero under `drawNullAsZero`).
    pub(crate) values: Vec<Option<f64>>,
    /// Values as drawn (after stacking).
    pub(crate) drawn: Vec<Option<f64>>,
    /// What the drawn value sits on (the series below when stacked, else zero).
    pub(crate) base: Vec<Option<f64>>,
    pub(crate) x_step: f64,
    pub(crate) per_point: usize,
}

/// Resolves colours and options, in graphite-web's order: `leftColor`/`rightColor`
/// (and widths, dashes) first, then the next `colorList` colour for series without one.
pub(crate) fn prepare<'s>(
    series: &'s [GraphSeries],
    o: &GraphOptions,
    second_axis: bool,
) -> Result<Vec<Prepared<'s>>, GraphError> {
    let mut palette = o.color_list.iter().filter(|c| !c.is_empty()).cycle();
    let mut out = Vec::with_capacity(series.len());
    for s in series {
        let side = if s.second_y_axis { &o.right } else { &o.left };
        let side_name = if s.second_y_axis {
            "rightColor"
        } else {
            "leftColor"
        };
        let (color_text, context) = match (&side.color, &s.color) {
            (Some(c), _) if second_axis => (c.clone(), side_name.to_string()),
            (_, Some(c)) => (c.clone(), format!("color of series {:?}", s.name)),
            _ => match palette.next() {
                Some(c) => (c.clone(), "colorList".to_string()),
                None => ("black".to_string(), "colorList".to_string()),
            },
        };
        let color = parse_color(&color_text, &context)?;
        let width = match (second_axis, side.width) {
            (true, Some(w)) => w,
            _ => s.line_width.unwrap_or(o.line_width),
        };
        let dash = match (second_axis, side.dashed) {
            (true, Some(d)) => Some(d),
            _ => s.dashed.filter(|d| *d > 0.0 && d.is_finite()),
        };
        out.push(Prepared {
            src: s,
            color,
            alpha: s.alpha.filter(|a| a.is_finite()).unwrap_or(1.0),
            width: if width.is_finite() {
                width.clamp(0.0, 100.0)
            } else {
                o.line_width
            },
            dash,
            fill: s.stacked,
            stack: s.stack,
            right: s.second_y_axis && second_axis,
            values: Vec::new(),
            drawn: Vec::new(),
            base: Vec::new(),
            x_step: 1.0,
            per_point: 1,
        });
    }
    Ok(out)
}

/// The drawing order and area flags: graphite-web draws filled series first and
/// applies `areaMode` after that sort; rrd keeps the given order.
pub(crate) fn arrange(prepared: &mut Vec<Prepared<'_>>, o: &GraphOptions, second_axis: bool) {
    if o.style == Style::Rrd {
        return;
    }
    if prepared.iter().any(|p| p.fill) {
        prepared.sort_by_key(|p| !p.fill);
    }
    match o.area_mode {
        AreaMode::None => {}
        AreaMode::First => {
            if let Some(first) = prepared.first_mut() {
                first.fill = true;
            }
        }
        AreaMode::All => prepared
            .iter_mut()
            .filter(|p| !p.src.draw_as_infinite)
            .for_each(|p| p.fill = true),
        AreaMode::Stacked => {
            for p in prepared.iter_mut().filter(|p| !p.src.draw_as_infinite) {
                p.fill = true;
                p.stack = !second_axis;
            }
        }
    }
    if let Some(alpha) = o.area_alpha {
        for p in prepared.iter_mut().filter(|p| p.fill) {
            p.alpha = alpha;
        }
    }
}

/// graphite-web's `consolidateDataPoints`: points per pixel column for a plot of
/// `pixels` columns covering `time_range` seconds, at least `min_x_step` pixels apart.
pub(crate) fn consolidate_all(
    prepared: &mut [Prepared<'_>],
    pixels: f64,
    time_range: f64,
    min_x_step: f64,
    null_as_zero: bool,
) {
    let pixels = pixels.max(1.0);
    for p in prepared.iter_mut() {
        let step = p.src.step as f64;
        let points = (time_range / step).max(1e-9);
        let best = pixels / points;
        if best < min_x_step {
            let drawable = (pixels / min_x_step).floor().max(1.0);
            let per_point = (points / drawable).ceil().clamp(1.0, 1e12);
            p.per_point = per_point as usize;
            p.x_step = pixels * per_point / points;
        } else {
            p.per_point = 1;
            p.x_step = best;
        }
        p.values = consolidate(
            &p.src.values,
            p.per_point,
            p.src.consolidation,
            p.src.x_files_factor,
        );
        if null_as_zero {
            p.values
                .iter_mut()
                .for_each(|v| *v = Some(v.unwrap_or(0.0)));
        }
    }
}

/// Adds stacked series onto the series below, per axis: a series that does not
/// stack starts a new stack (rrdtool's `STACK` sits on the element before it; with
/// graphite-web's `areaMode=stacked` every series stacks, so this is the running
/// total). Missing points add nothing and stay missing.
pub(crate) fn stack_all(prepared: &mut [Prepared<'_>]) {
    for right in [false, true] {
        let mut total: Vec<f64> = Vec::new();
        for p in prepared
            .iter_mut()
            .filter(|p| p.right == right && !p.src.draw_as_infinite)
        {
            if total.len() < p.values.len() {
                total.resize(p.values.len(), 0.0);
            }
            if p.stack {
                p.base = total
                    .iter()
                    .take(p.values.len())
                    .map(|t| Some(*t))
                    .collect();
                p.drawn = p
                    .values
                    .iter()
                    .zip(total.iter_mut())
                    .map(|(v, t)| {
                        v.map(|v| {
                            *t += v;
                            *t
                        })
                    })
                    .collect();
            } else {
                p.base = vec![Some(0.0); p.values.len()];
                p.drawn = p.values.clone();
                for (t, v) in total.iter_mut().zip(&p.values) {
                    *t = v.unwrap_or(0.0);
                }
            }
        }
    }
    for p in prepared.iter_mut().filter(|p| p.src.draw_as_infinite) {
        p.drawn = p.values.clone();
        p.base = vec![Some(0.0); p.values.len()];
    }
}

/// The data range of one axis: the lowest own value and the highest drawn (stacked)
/// value, over finite values of series that are not `drawAsInfinite`. A log axis
/// looks at positive values only. `(0, 1)` without data, as graphite-web.
pub(crate) fn data_limits(prepared: &[Prepared<'_>], right: bool, log: bool) -> (f64, f64) {
    let usable = |v: &&f64| v.is_finite() && (!log || **v > 0.0);
    let series = || {
        prepared
            .iter()
            .filter(move |p| p.right == right && !p.src.draw_as_infinite)
    };
    let min = series()
        .flat_map(|p| p.values.iter().flatten())
        .filter(usable)
        .copied()
        .reduce(f64::min);
    let max = series()
        .flat_map(|p| p.drawn.iter().flatten())
        .filter(usable)
        .copied()
        .reduce(f64::max);
    match (min, max) {
        (Some(a), Some(b)) => (a.min(b), b.max(a)),
        _ if log => (1.0, 10.0),
        _ => (0.0, 1.0),
    }
}

/// The plot rectangle in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Area {
    pub(crate) xmin: f64,
    pub(crate) xmax: f64,
    pub(crate) ymin: f64,
    pub(crate) ymax: f64,
}

/// Draws every series: areas first (in order), then lines and `drawAsInfinite`
/// marks, clipped to the plot.
pub(crate) struct Plotter<'a> {
    pub(crate) o: &'a GraphOptions,
    pub(crate) area: Area,
    pub(crate) start_time: f64,
    pub(crate) left: &'a YAxis,
    pub(crate) right: Option<&'a YAxis>,
    pub(crate) line_mode: LineMode,
}

impl Plotter<'_> {
    fn axis(&self, right: bool) -> &YAxis {
        match (right, self.right) {
            (true, Some(r)) => r,
            _ => self.left,
        }
    }

    fn y_of(&self, right: bool) -> impl Fn(f64) -> Option<f64> + '_ {
        let axis = self.axis(right);
        let (ymin, ymax) = (self.area.ymin, self.area.ymax);
        move |v| axis.y_coord(v, ymin, ymax)
    }

    fn x0(&self, p: &Prepared<'_>) -> f64 {
        let missing = (p.src.start as f64 - self.start_time) / p.src.step as f64;
        self.area.xmin + p.x_step * (missing / p.per_point as f64) + self.o.line_width / 2.0
    }

    fn trace_of(&self, p: &Prepared<'_>, values: &[Option<f64>], fill: bool) -> Trace {
        let bridge = (self.line_mode == LineMode::Connected && !fill)
            .then(|| self.o.connected_limit.unwrap_or(u64::MAX));
        let mode = TraceMode {
            line: self.line_mode,
            bridge,
            infinite: p.src.draw_as_infinite,
        };
        trace(values, self.x0(p), p.x_step, mode, self.y_of(p.right))
    }

    /// Draws in the arranged order (graphite-web's has the areas first), then the
    /// opaque lines `areaAlpha` adds along translucent areas, as graphite-web appends
    /// them after every other series.
    pub(crate) fn draw(&self, canvas: &mut dyn Canvas, prepared: &[Prepared<'_>]) {
        // Per axis, the lines of the areas drawn so far (graphite style only).
        let mut earlier: [Vec<Lines>; 2] = [Vec::new(), Vec::new()];
        let mut area_lines: Vec<(Trace, Rgba)> = Vec::new();
        for p in prepared {
            // An invisible series (areaBetween's lower edge) still shapes the areas.
            let color = if p.src.invisible {
                p.color.rgb.with_alpha(0.0)
            } else {
                p.color.with_alpha(p.alpha)
            };
            if p.fill && !p.src.draw_as_infinite {
                let t = self.trace_of(p, &p.drawn, true);
                let side = usize::from(p.right);
                let lines = self.fill(
                    canvas,
                    p,
                    &t,
                    color,
                    earlier.get(side).map_or(&[], |e| e.as_slice()),
                );
                if self.o.style == Style::Graphite {
                    if let Some(e) = earlier.get_mut(side) {
                        e.push(lines);
                    }
                }
                if self.o.area_alpha.is_some() {
                    area_lines.push((self.trace_of(p, &p.drawn, false), p.color.solid()));
                }
            } else {
                let t = self.trace_of(p, &p.drawn, false);
                self.stroke(canvas, &t, color, p.width, p.dash);
            }
        }
        for (t, color) in area_lines {
            self.stroke(canvas, &t, color, self.o.line_width, None);
        }
    }

    fn fill(
        &self,
        canvas: &mut dyn Canvas,
        p: &Prepared<'_>,
        t: &Trace,
        color: Rgba,
        earlier: &[Lines],
    ) -> Lines {
        let y_of = self.y_of(p.right);
        let zero = y_of(0.0).unwrap_or(self.area.ymax);
        let mut cursors: Vec<Cursor<'_>> = earlier
            .iter()
            .map(|runs| Cursor {
                runs,
                run: 0,
                seg: 0,
            })
            .collect();
        let mut path = Path::new();
        let mut lines = Vec::with_capacity(t.runs.len());
        for run in &t.runs {
            let bases: Vec<f64> = run
                .iter()
                .map(|v| match self.o.style {
                    Style::Rrd => p
                        .base
                        .get(v.idx)
                        .copied()
                        .flatten()
                        .and_then(&y_of)
                        .unwrap_or(zero),
                    Style::Graphite => {
                        let (mut hi, mut lo) = (zero, zero);
                        for c in cursors.iter_mut() {
                            if let Some((a, b)) = c.at(v.x) {
                                hi = hi.min(a);
                                lo = lo.max(b);
                            }
                        }
                        v.y.clamp(hi, lo)
                    }
                })
                .collect();
            for (k, v) in run.iter().enumerate() {
                if k == 0 {
                    path.move_to(v.x, v.y);
                } else {
                    path.line_to(v.x, v.y);
                }
            }
            for (v, b) in run.iter().zip(&bases).rev() {
                path.line_to(v.x, *b);
            }
            path.close();
            lines.push(run.iter().map(|v| (v.x, v.y)).collect());
        }
        if color.a > 0.0 {
            canvas.fill_path(&path, color);
        }
        lines
    }

    fn stroke(
        &self,
        canvas: &mut dyn Canvas,
        t: &Trace,
        color: Rgba,
        width: f64,
        dash: Option<f64>,
    ) {
        let mut stroke = Stroke::solid(width);
        stroke.dash = dash.map(|d| d as f32);
        if self.o.style == Style::Rrd {
            stroke.join = Join::Round;
        }
        let mut path = Path::new();
        for run in &t.runs {
            if let Some(first) = run.first() {
                path.move_to(first.x, first.y);
            }
            for v in run.iter().skip(1) {
                path.line_to(v.x, v.y);
            }
        }
        for &x in &t.infinite {
            path.move_to(x, self.area.ymax);
            path.line_to(x, self.area.ymin);
        }
        canvas.stroke_path(&path, &stroke, color);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: Vec<Option<f64>>) -> GraphSeries {
        GraphSeries::new("s", 0, 60, values)
    }

    #[test]
    fn stacking_and_limits() {
        let a = series(vec![Some(1.0), None, Some(3.0)]);
        let b = series(vec![Some(10.0), Some(20.0), None]);
        let o = GraphOptions {
            area_mode: AreaMode::Stacked,
            ..GraphOptions::default()
        };
        let src = [a, b];
        let mut p = prepare(&src, &o, false).unwrap();
        arrange(&mut p, &o, false);
        consolidate_all(&mut p, 1000.0, 180.0, 1.0, false);
        stack_all(&mut p);
        assert_eq!(p[1].drawn, vec![Some(11.0), Some(20.0), None]);
        assert_eq!(p[1].base, vec![Some(1.0), Some(0.0), Some(3.0)]);
        assert_eq!(data_limits(&p, false, false), (1.0, 20.0));
        assert_eq!(data_limits(&p, true, false), (0.0, 1.0));
    }

    #[test]
    fn consolidation_to_pixels() {
        let src = [series(vec![Some(1.0); 8640])];
        let o = GraphOptions::default();
        let mut p = prepare(&src, &o, false).unwrap();
        consolidate_all(&mut p, 800.0, 8640.0 * 60.0, 1.0, false);
        assert_eq!(p[0].per_point, 11);
        assert_eq!(p[0].values.len(), 786);
        assert!((p[0].x_step * 8640.0 / 11.0 - 800.0).abs() < 1e-6);
    }

    #[test]
    fn colours_follow_graphite_order() {
        let mut with_color = series(vec![]);
        with_color.color = Some("ff0000".into());
        let src = [series(vec![]), with_color, series(vec![])];
        let p = prepare(&src, &GraphOptions::default(), false).unwrap();
        assert_eq!(p[0].color.rgb, Rgba::rgb(100, 100, 255));
        assert_eq!(p[1].color.rgb, Rgba::rgb(255, 0, 0));
        assert_eq!(p[2].color.rgb, Rgba::rgb(0, 200, 0));
        let mut bad = series(vec![]);
        bad.color = Some("nocolour".into());
        let e = prepare(&[bad], &GraphOptions::default(), false)
            .err()
            .unwrap();
        assert!(e.to_string().contains("series \"s\""), "{e}");
    }
}
