//! The legend under the plot. graphite-web's: a colour box and the name, in as many
//! columns as fit (with a second y axis, its series on the right-hand side). The
//! rrd style's: a table with one row per series, the colour box, the name and its
//! `Cur`, `Avg`, `Max` and `Min` with SI prefixes, like rrdgraph's `GPRINT` lines.
//! Either way the legend takes its height from the bottom of the plot.

use super::canvas::{Align, Path, Rect, Stroke};
use super::color::Rgba;
use super::error::GraphError;
use super::layout::{Engine, VAlign};
use super::options::LegendStyle;
use super::parse::unquote_plus;
use super::plot::Prepared;
use super::units::si_compact;

const PADDING: f64 = 5.0;
/// graphite-web's box outline colour (`darkgrey`).
const BOX_OUTLINE: Rgba = Rgba::rgb(111, 111, 111);
const STAT_NAMES: [&str; 4] = ["Cur:", "Avg:", "Max:", "Min:"];

struct Entry {
    name: String,
    color: Rgba,
    right: bool,
    /// Current, average, maximum, minimum of the known values.
    stats: [Option<f64>; 4],
}

/// Draws the legend if it is shown (`hideLegend`, or graphite-web's rule: hidden
/// beyond `legend_max_items` series) and has entries.
pub(crate) fn draw(
    e: &mut Engine<'_>,
    prepared: &[Prepared<'_>],
    second_axis: bool,
) -> Result<(), GraphError> {
    if e.o
        .hide_legend
        .unwrap_or(prepared.len() > e.o.legend_max_items)
    {
        return Ok(());
    }
    let mut entries: Vec<Entry> = Vec::new();
    for p in prepared {
        let s = p.src;
        if s.name.is_empty() {
            continue;
        }
        if e.o.hide_null_from_legend && s.values.iter().all(|v| v.is_none_or(f64::is_nan)) {
            continue;
        }
        let name = unquote_plus(&s.name);
        if e.o.unique_legend && entries.iter().any(|x| x.name == name) {
            continue;
        }
        let stats = if e.o.legend_style == LegendStyle::Stats {
            summary(&s.values)
        } else {
            [None; 4]
        };
        entries.push(Entry {
            name,
            color: p.color.solid(),
            right: s.second_y_axis && second_axis,
            stats,
        });
    }
    if entries.is_empty() {
        return Ok(());
    }
    e.canvas.section("legend");
    match e.o.legend_style {
        LegendStyle::Names => names(e, &mut entries, second_axis),
        LegendStyle::Stats => stats(e, &mut entries),
    }
    Ok(())
}

/// Current (last known), average, maximum and minimum of the finite values.
fn summary(values: &[Option<f64>]) -> [Option<f64>; 4] {
    let (mut last, mut sum, mut count) = (None, 0.0, 0usize);
    let (mut max, mut min): (Option<f64>, Option<f64>) = (None, None);
    for v in values.iter().flatten().copied().filter(|v| v.is_finite()) {
        last = Some(v);
        sum += v;
        count += 1;
        max = Some(max.map_or(v, |m| m.max(v)));
        min = Some(min.map_or(v, |m| m.min(v)));
    }
    [last, (count > 0).then(|| sum / count as f64), max, min]
}

fn color_box(e: &mut Engine<'_>, x: f64, y: f64, size: f64, color: Rgba) {
    e.canvas.fill_rect(Rect::new(x, y, size, size), color);
    let mut p = Path::new();
    let (x0, y0, x1, y1) = (x + 0.5, y + 0.5, x + size - 0.5, y + size - 0.5);
    p.move_to(x0, y0);
    p.line_to(x1, y0);
    p.line_to(x1, y1);
    p.line_to(x0, y1);
    p.close();
    e.canvas.stroke_path(&p, &Stroke::solid(1.0), BOX_OUTLINE);
}

/// graphite-web's legend.
fn names(e: &mut Engine<'_>, entries: &mut [Entry], second_axis: bool) {
    let size = e.font_size();
    let face = e.face();
    let m = face.metrics(size);
    let box_size = m.height - 1.0;
    let line_height = m.height + 1.0;
    let width = f64::from(e.o.width);
    let x_start = e.area.xmin;
    let avail = (width - x_start).max(1.0);
    for entry in entries.iter_mut() {
        let fitted = face
            .fit(&entry.name, size, avail - 2.0 * (box_size + PADDING))
            .into_owned();
        entry.name = fitted;
    }
    let longest = entries
        .iter()
        .map(|x| face.width(&x.name, size))
        .fold(0.0, f64::max);
    let label_width = longest + 2.0 * (box_size + PADDING);
    let fit_columns = ((avail / label_width).floor()).max(1.0) as usize;
    // Two sides when a second axis exists and two names fit side by side.
    let two_sided = second_axis
        && 2.0 * longest + face.width(" ", size) + 2.0 * (box_size + PADDING) + 50.0 < width;
    let fg = e.fg;

    if two_sided {
        let columns = (fit_columns / 2).max(1);
        let n_right = entries.iter().filter(|x| x.right).count();
        let lines = (n_right.max(entries.len() - n_right)).div_ceil(columns);
        e.area.ymax -= lines as f64 * line_height + PADDING;
        let top = e.area.ymax + 2.0 * PADDING;
        let right_edge = e.area.xmax;
        let (mut nl, mut nr) = (0usize, 0usize);
        for entry in entries.iter() {
            if entry.right {
                let x = right_edge - (nr % columns) as f64 * label_width;
                let y = top + (nr / columns) as f64 * line_height;
                color_box(e, x - box_size, y, box_size, entry.color);
                e.text(
                    &entry.name,
                    x - box_size - PADDING,
                    y,
                    Align::Right,
                    VAlign::Top,
                    size,
                    0.0,
                    fg,
                );
                nr += 1;
            } else {
                let x = x_start + (nl % columns) as f64 * label_width;
                let y = top + (nl / columns) as f64 * line_height;
                color_box(e, x, y, box_size, entry.color);
                e.text(
                    &entry.name,
                    x + box_size + PADDING,
                    y,
                    Align::Left,
                    VAlign::Top,
                    size,
                    0.0,
                    fg,
                );
                nl += 1;
            }
        }
        return;
    }

    let columns = fit_columns;
    let lines = entries.len().div_ceil(columns);
    e.area.ymax -= lines as f64 * line_height + PADDING;
    let top = e.area.ymax + 2.0 * PADDING;
    for (i, entry) in entries.iter().enumerate() {
        let x = x_start + (i % columns) as f64 * label_width;
        let y = top + (i / columns) as f64 * line_height;
        if entry.right {
            // A right-axis series when the sides do not fit: the box after the name.
            let box_x = x + label_width - PADDING - box_size;
            color_box(e, box_x, y, box_size, entry.color);
            e.text(
                &entry.name,
                box_x - PADDING,
                y,
                Align::Right,
                VAlign::Top,
                size,
                0.0,
                fg,
            );
        } else {
            color_box(e, x, y, box_size, entry.color);
            e.text(
                &entry.name,
                x + box_size + PADDING,
                y,
                Align::Left,
                VAlign::Top,
                size,
                0.0,
                fg,
            );
        }
    }
}

/// The rrd legend table.
fn stats(e: &mut Engine<'_>, entries: &mut [Entry]) {
    let size = e.font_size();
    let face = e.face();
    let m = face.metrics(size);
    let line_height = m.height + 2.0;
    let box_size = (m.ascent - 1.0).max(2.0).round();
    let x0 = f64::from(e.o.margin).max(4.0);
    let avail = f64::from(e.o.width) - 2.0 * x0;
    let values: Vec<[String; 4]> = entries.iter().map(|x| x.stats.map(si_compact)).collect();
    let gap = face.width(" ", size);
    let mut columns: Vec<f64> = (0..4)
        .map(|k| {
            let widest = values
                .iter()
                .filter_map(|v| v.get(k))
                .map(|v| face.width(v, size))
                .fold(0.0, f64::max);
            face.width(STAT_NAMES[k], size) + gap + widest
        })
        .collect();
    let stats_width = |cols: &[f64]| cols.iter().map(|w| w + 3.0 * PADDING).sum::<f64>();
    let name_space = box_size + 2.0 * PADDING;
    let longest = entries
        .iter()
        .map(|x| face.width(&x.name, size))
        .fold(0.0, f64::max);
    // Drop statistics from the right until at least a short name fits beside them.
    while !columns.is_empty() && name_space + longest.min(60.0) + stats_width(&columns) > avail {
        columns.pop();
    }
    let name_width = (avail - name_space - stats_width(&columns))
        .min(longest)
        .max(1.0);
    e.area.ymax -= entries.len() as f64 * line_height + PADDING;
    let top = e.area.ymax + 2.0 * PADDING;
    let fg = e.fg;
    for (i, (entry, vals)) in entries.iter().zip(&values).enumerate() {
        let y = top + i as f64 * line_height;
        color_box(
            e,
            x0,
            y + (m.ascent - box_size).max(0.0),
            box_size,
            entry.color,
        );
        let name = face.fit(&entry.name, size, name_width).into_owned();
        e.text(
            &name,
            x0 + box_size + PADDING,
            y,
            Align::Left,
            VAlign::Top,
            size,
            0.0,
            fg,
        );
        let mut x = x0 + name_space + name_width + 2.0 * PADDING;
        for (k, col) in columns.iter().enumerate() {
            e.text(STAT_NAMES[k], x, y, Align::Left, VAlign::Top, size, 0.0, fg);
            if let Some(v) = vals.get(k) {
                e.text(v, x + col, y, Align::Right, VAlign::Top, size, 0.0, fg);
            }
            x += col + 3.0 * PADDING;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let v = [None, Some(2.0), Some(f64::NAN), Some(6.0), Some(1.0), None];
        assert_eq!(summary(&v), [Some(1.0), Some(3.0), Some(6.0), Some(1.0)]);
        assert_eq!(summary(&[None, Some(f64::INFINITY)]), [None; 4]);
    }
}
