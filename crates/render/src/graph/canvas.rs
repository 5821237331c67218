//! The drawing trait between the layout engine and the two image formats, so that
//! PNG and SVG show the same picture: paths of straight segments, rectangles, text
//! runs already measured with the embedded font, and a rectangular clip.

use super::color::Rgba;

/// Coordinates further out than this are clamped: the rasteriser needs finite
/// numbers, and nothing beyond a few image sizes is visible anyway.
const COORD_LIMIT: f32 = 1.0e6;

/// An axis-aligned rectangle in pixels (y grows downwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    pub(crate) x: f32,
    pub(crate) y: f32,
    pub(crate) w: f32,
    pub(crate) h: f32,
}

impl Rect {
    pub(crate) fn new(x: f64, y: f64, w: f64, h: f64) -> Rect {
        Rect {
            x: coord(x),
            y: coord(y),
            w: coord(w.max(0.0)),
            h: coord(h.max(0.0)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.w <= 0.0 || self.h <= 0.0
    }
}

/// A finite `f32` pixel coordinate; NaN becomes 0.
pub(crate) fn coord(v: f64) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        (v as f32).clamp(-COORD_LIMIT, COORD_LIMIT)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Seg {
    Move(f32, f32),
    Line(f32, f32),
    Close,
}

/// A path of straight segments.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Path {
    pub(crate) segs: Vec<Seg>,
}

impl Path {
    pub(crate) fn new() -> Path {
        Path::default()
    }

    pub(crate) fn move_to(&mut self, x: f64, y: f64) {
        self.segs.push(Seg::Move(coord(x), coord(y)));
    }

    pub(crate) fn line_to(&mut self, x: f64, y: f64) {
        if self.segs.is_empty() {
            self.move_to(x, y);
        } else {
            self.segs.push(Seg::Line(coord(x), coord(y)));
        }
    }

    pub(crate) fn close(&mut self) {
        if !self.segs.is_empty() {
            self.segs.push(Seg::Close);
        }
    }

    /// A horizontal or vertical line from `(x0, y0)` to `(x1, y1)`.
    pub(crate) fn line(x0: f64, y0: f64, x1: f64, y1: f64) -> Path {
        let mut p = Path::new();
        p.move_to(x0, y0);
        p.line_to(x1, y1);
        p
    }

    /// True when nothing would be drawn (no segment after a move).
    pub(crate) fn is_empty(&self) -> bool {
        !self.segs.iter().any(|s| matches!(s, Seg::Line(..)))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Join {
    /// Sharp corners (graphite-web's cairo default).
    #[default]
    Miter,
    Round,
}

/// How a path is stroked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Stroke {
    pub(crate) width: f32,
    /// Dash and gap length, both the same, as graphite-web's `dashed()`.
    pub(crate) dash: Option<f32>,
    pub(crate) join: Join,
}

impl Stroke {
    pub(crate) fn solid(width: f64) -> Stroke {
        Stroke {
            width: coord(width).max(0.0),
            dash: None,
            join: Join::Miter,
        }
    }
}

/// Where a text run's anchor sits on its baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Center,
    Right,
}

/// One line of text. `(x, y)` is the anchor on the baseline; the run is rotated
/// clockwise by `rotate` degrees around it (270 reads bottom to top).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TextRun<'a> {
    pub(crate) text: &'a str,
    pub(crate) x: f32,
    pub(crate) y: f32,
    pub(crate) align: Align,
    pub(crate) size: f32,
    pub(crate) bold: bool,
    pub(crate) italic: bool,
    pub(crate) rotate: f32,
    pub(crate) color: Rgba,
}

/// A drawing surface. Implementations: `raster::Raster` (PNG) and `svg::Svg`.
pub(crate) trait Canvas {
    fn fill_rect(&mut self, rect: Rect, color: Rgba);
    fn fill_path(&mut self, path: &Path, color: Rgba);
    fn stroke_path(&mut self, path: &Path, stroke: &Stroke, color: Rgba);
    fn text(&mut self, run: &TextRun<'_>);
    /// Limits later drawing to `clip` (or lifts the limit).
    fn set_clip(&mut self, clip: Option<Rect>);
    /// Starts a named section of the picture (an SVG `<g class>`; nothing in PNG).
    fn section(&mut self, name: &str);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_finite() {
        assert_eq!(coord(f64::NAN), 0.0);
        assert_eq!(coord(f64::INFINITY), COORD_LIMIT);
        assert_eq!(coord(-1e300), -COORD_LIMIT);
        assert_eq!(coord(12.5), 12.5);
    }

    #[test]
    fn paths() {
        let mut p = Path::new();
        assert!(p.is_empty());
        p.line_to(1.0, 2.0);
        assert_eq!(p.segs, vec![Seg::Move(1.0, 2.0)]);
        assert!(p.is_empty());
        p.line_to(3.0, 4.0);
        p.close();
        assert!(!p.is_empty());
        assert_eq!(p.segs.len(), 3);
        assert!(Rect::new(0.0, 0.0, -5.0, 3.0).is_empty());
    }
}
