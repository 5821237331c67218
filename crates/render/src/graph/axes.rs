//! Axis labels and the grid: y labels beside the plot, time labels under it
//! (graphite-web's `drawLabels`), horizontal lines at the y labels with `minorY` lines
//! between, vertical lines at the time table's minor and major steps, and the plot's
//! side borders (`drawGridLines`).

use chrono_tz::Tz;

use super::canvas::{Align, Path, Stroke};
use super::color::{parse_color, Rgba};
use super::layout::{Engine, VAlign};
use super::options::{AxisSide, Style};
use super::plot::Area;
use super::xaxis;
use super::yaxis::YAxis;

/// What labels and grid need to know about the axes.
pub(crate) struct AxesContext<'a> {
    pub(crate) left: &'a YAxis,
    pub(crate) right: Option<&'a YAxis>,
    pub(crate) start_time: i64,
    pub(crate) end_time: i64,
    pub(crate) x_scale: f64,
    pub(crate) xconf: &'static xaxis::XConfig,
    pub(crate) tz: Tz,
}

impl AxesContext<'_> {
    fn x_of(&self, area: &Area, t: i64) -> f64 {
        area.xmin + (t as f64 - self.start_time as f64) * self.x_scale
    }
}

pub(crate) fn draw_labels(e: &mut Engine<'_>, ctx: &AxesContext<'_>) {
    let size = e.font_size();
    let fg = e.fg;
    let a = e.area;
    if !e.o.hide_y_axis {
        let sides: Vec<(&YAxis, bool)> = match ctx.right {
            Some(r) => vec![(ctx.left, false), (r, true)],
            None => vec![(ctx.left, e.o.y_axis_side == AxisSide::Right)],
        };
        for (axis, on_right) in sides {
            let lw = axis
                .labels
                .iter()
                .map(|(_, t)| e.face().width(t, size))
                .fold(0.0, f64::max);
            let (x, align) = match (on_right, ctx.right.is_some()) {
                (false, _) => (a.xmin - lw * 0.02, Align::Right),
                (true, true) => (a.xmax + lw * 0.02 + 3.0, Align::Left),
                (true, false) => (a.xmax + lw * 0.02, Align::Left),
            };
            for (value, label) in &axis.labels {
                if let Some(y) = axis.y_coord(*value, a.ymin, a.ymax) {
                    e.text(label, x, y.max(0.0), align, VAlign::Middle, size, 0.0, fg);
                }
            }
        }
    }
    if !e.o.hide_x_axis {
        let format =
            e.o.x_format
                .clone()
                .unwrap_or_else(|| ctx.xconf.format.to_string());
        let y = a.ymax + e.face().metrics(size).ascent;
        let labels: Vec<(i64, String)> =
            xaxis::ticks(ctx.start_time, ctx.end_time, ctx.xconf.label, ctx.tz)
                .into_iter()
                .filter_map(|t| Some((t, xaxis::label(t, &format, ctx.tz)?)))
                .collect();
        // Beyond graphite-web's table (spans of many years) labels would overlap:
        // keep every n-th so that each has room.
        let widest = labels
            .iter()
            .map(|(_, l)| e.face().width(l, size))
            .fold(0.0, f64::max);
        let times: Vec<i64> = labels.iter().map(|(t, _)| *t).collect();
        let stride = thinning(&times, ctx.x_scale, widest + 3.0);
        for (t, label) in labels.iter().step_by(stride) {
            e.text(
                label,
                ctx.x_of(&a, *t),
                y,
                Align::Center,
                VAlign::Top,
                size,
                0.0,
                fg,
            );
        }
    }
}

/// Every how many marks to keep so that they are at least `min_gap` pixels apart,
/// when consecutive marks at times `ticks` are `x_scale` pixels per second apart.
fn thinning(ticks: &[i64], x_scale: f64, min_gap: f64) -> usize {
    let gap = ticks
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 * x_scale)
        .fold(f64::INFINITY, f64::min);
    if !gap.is_finite() || gap >= min_gap {
        1
    } else if gap <= 0.0 {
        ticks.len().max(1)
    } else {
        ((min_gap / gap).ceil() as usize).max(1)
    }
}

/// Snaps a line position to the middle of a pixel, so thin grid lines stay crisp.
pub(crate) fn snap(v: f64) -> f64 {
    (v - 0.5).round() + 0.5
}

pub(crate) fn draw_grid(e: &mut Engine<'_>, ctx: &AxesContext<'_>) {
    let a = e.area;
    if a.xmax <= a.xmin || a.ymax <= a.ymin {
        return;
    }
    let major = parse_color(&e.o.major_grid_color, "majorGridLineColor").map(|c| c.solid());
    let minor = parse_color(&e.o.minor_grid_color, "minorGridLineColor").map(|c| c.solid());
    let (Ok(major), Ok(minor)) = (major, minor) else {
        return;
    };
    let rrd = e.o.style == Style::Rrd;
    // graphite-web's hairline widths; the rrd look uses dotted one-pixel lines.
    let line = |width: f64| {
        let mut s = Stroke::solid(if rrd { 1.0 } else { width });
        if rrd {
            s.dash = Some(1.0);
        }
        s
    };
    let hline = |e: &mut Engine<'_>, y: f64, stroke: &Stroke, color: Rgba| {
        if y >= a.ymin - 0.5 && y <= a.ymax + 0.5 {
            let y = snap(y);
            e.canvas
                .stroke_path(&Path::line(a.xmin, y, a.xmax, y), stroke, color);
        }
    };
    let vline = |e: &mut Engine<'_>, x: f64, stroke: &Stroke, color: Rgba| {
        let x = snap(x);
        e.canvas
            .stroke_path(&Path::line(x, a.ymax, x, a.ymin), stroke, color);
    };

    // Horizontal: a major line per label of the left axis, minor lines between.
    let labels: Vec<f64> = ctx.left.labels.iter().map(|(v, _)| *v).collect();
    let minor_y = e.o.minor_y;
    let vertical_minor: Vec<i64> =
        xaxis::ticks(ctx.start_time, ctx.end_time, ctx.xconf.minor, ctx.tz);
    let vertical_major: Vec<i64> =
        xaxis::ticks(ctx.start_time, ctx.end_time, ctx.xconf.major, ctx.tz);
    for (i, value) in labels.iter().enumerate() {
        if let Some(y) = ctx.left.y_coord(*value, a.ymin, a.ymax) {
            hline(e, y, &line(0.4), major);
        }
        let Some(next) = labels.get(i + 1) else {
            continue;
        };
        let (lower, upper) = if value <= next {
            (*value, *next)
        } else {
            (*next, *value)
        };
        let distance = (upper - lower) / f64::from(1 + minor_y);
        for k in 0..minor_y {
            let v = lower + f64::from(k + 1) * distance;
            if let Some(y) = ctx.left.y_coord(v, a.ymin, a.ymax) {
                hline(e, y, &line(0.3), minor);
            }
        }
    }
    // Vertical: minor lines, then major lines over them.
    for (ticks, width, color) in [
        (&vertical_minor, 0.25, minor),
        (&vertical_major, 0.33, major),
    ] {
        let stride = thinning(ticks, ctx.x_scale, 3.0);
        for &t in ticks.iter().step_by(stride) {
            let x = ctx.x_of(&a, t);
            if x < a.xmax {
                vline(e, x, &line(width), color);
            }
        }
    }
    if !e.o.frame {
        let border = Stroke::solid(0.5);
        vline(e, a.xmin, &border, major);
        vline(e, a.xmax, &border, major);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_thinned_to_fit() {
        let hourly: Vec<i64> = (0..24).map(|h| h * 3600).collect();
        // 100 px per hour: all fit.
        assert_eq!(thinning(&hourly, 100.0 / 3600.0, 60.0), 1);
        // 25 px per hour, labels need 60: every third.
        assert_eq!(thinning(&hourly, 25.0 / 3600.0, 60.0), 3);
        assert_eq!(thinning(&hourly[..1], 1e-9, 60.0), 1);
        assert_eq!(thinning(&[], 1.0, 60.0), 1);
        assert_eq!(thinning(&[5, 5], 1.0, 60.0), 2);
    }

    #[test]
    fn snapping_centres_lines_on_pixels() {
        assert_eq!(snap(10.0), 10.5);
        assert_eq!(snap(10.7), 10.5);
        assert_eq!(snap(11.2), 11.5);
    }
}
