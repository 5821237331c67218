//! The embedded font (DejaVu Sans, regular and bold; see `assets/README.md`) and text
//! measurement. Layout measures with it and the PNG backend draws its outlines, so
//! text is placed the same way in both formats.

use std::borrow::Cow;
use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, GlyphId, Outline};

use super::error::GraphError;

static REGULAR: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
static BOLD: &[u8] = include_bytes!("../../assets/DejaVuSans-Bold.ttf");

/// The family name written into SVG, so viewers pick the same face if they have it.
pub(crate) const SVG_FAMILY: &str = "'DejaVu Sans', 'Bitstream Vera Sans', Verdana, sans-serif";

/// Vertical metrics at one size, in pixels, all positive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Metrics {
    /// Baseline to the top of the tallest glyph (cairo's `maxAscent`).
    pub(crate) ascent: f64,
    /// Baseline to the bottom of the lowest glyph (cairo's `maxDescent`).
    pub(crate) descent: f64,
    /// Distance between baselines (cairo's `maxHeight`).
    pub(crate) height: f64,
}

/// One face with its design metrics.
pub(crate) struct Face {
    font: FontRef<'static>,
    units_per_em: f64,
}

impl Face {
    fn load(data: &'static [u8], name: &str) -> Result<Face, String> {
        let font = FontRef::try_from_slice(data).map_err(|e| format!("{name}: {e}"))?;
        let units_per_em = f64::from(font.units_per_em().unwrap_or(2048.0));
        Ok(Face { font, units_per_em })
    }

    /// Pixels per font unit at `size` (the em size in pixels).
    pub(crate) fn scale(&self, size: f64) -> f64 {
        size / self.units_per_em
    }

    pub(crate) fn metrics(&self, size: f64) -> Metrics {
        let s = self.scale(size);
        let ascent = f64::from(self.font.ascent_unscaled()) * s;
        let descent = -f64::from(self.font.descent_unscaled()) * s;
        let gap = f64::from(self.font.line_gap_unscaled()) * s;
        Metrics {
            ascent,
            descent,
            height: ascent + descent + gap,
        }
    }

    /// Glyphs of `text` with their pen positions in font units (advances plus
    /// kerning). Control characters are skipped.
    pub(crate) fn shape(&self, text: &str) -> Vec<(GlyphId, f64)> {
        let mut out = Vec::with_capacity(text.len());
        let mut pen = 0.0;
        let mut prev: Option<GlyphId> = None;
        for c in text.chars().filter(|c| !c.is_control()) {
            let id = self.font.glyph_id(c);
            if let Some(p) = prev {
                pen += f64::from(self.font.kern_unscaled(p, id));
            }
            out.push((id, pen));
            pen += f64::from(self.font.h_advance_unscaled(id));
            prev = Some(id);
        }
        out
    }

    /// The advance width of `text` at `size`, in pixels (cairo's `x_advance`).
    pub(crate) fn width(&self, text: &str, size: f64) -> f64 {
        let glyphs = self.shape(text);
        let end = glyphs.last().map_or(0.0, |&(id, pen)| {
            pen + f64::from(self.font.h_advance_unscaled(id))
        });
        end * self.scale(size)
    }

    /// `text` cut to at most `max_width` pixels, ending in `…` when cut.
    pub(crate) fn fit<'t>(&self, text: &'t str, size: f64, max_width: f64) -> Cow<'t, str> {
        if self.width(text, size) <= max_width {
            return Cow::Borrowed(text);
        }
        let ellipsis = self.width("…", size);
        let mut cut = String::new();
        for c in text.chars() {
            cut.push(c);
            if self.width(&cut, size) + ellipsis > max_width {
                cut.pop();
                break;
            }
        }
        cut.push('…');
        Cow::Owned(cut)
    }

    /// The glyph's outline in font units, y up.
    pub(crate) fn outline(&self, id: GlyphId) -> Option<Outline> {
        self.font.outline(id)
    }
}

/// Regular and bold.
pub(crate) struct Fonts {
    pub(crate) regular: Face,
    pub(crate) bold: Face,
}

impl Fonts {
    pub(crate) fn face(&self, bold: bool) -> &Face {
        if bold {
            &self.bold
        } else {
            &self.regular
        }
    }
}

/// The embedded fonts, parsed once per process.
pub(crate) fn fonts() -> Result<&'static Fonts, GraphError> {
    static FONTS: OnceLock<Result<Fonts, String>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            Ok(Fonts {
                regular: Face::load(REGULAR, "DejaVuSans.ttf")?,
                bold: Face::load(BOLD, "DejaVuSans-Bold.ttf")?,
            })
        })
        .as_ref()
        .map_err(|e| GraphError::Font(e.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dejavu_metrics_at_ten_pixels() {
        let f = fonts().unwrap();
        let m = f.regular.metrics(10.0);
        // DejaVu Sans: ascender 1901, descender -483, no line gap, 2048 units per em.
        assert!((m.ascent - 9.282).abs() < 0.01, "{m:?}");
        assert!((m.descent - 2.358).abs() < 0.01, "{m:?}");
        assert!((m.height - 11.64).abs() < 0.01, "{m:?}");
    }

    #[test]
    fn widths_grow_with_text_and_size() {
        let f = fonts().unwrap();
        let a = f.regular.width("cpu.user", 10.0);
        assert!(a > 30.0 && a < 60.0, "{a}");
        assert!((f.regular.width("cpu.user", 20.0) - 2.0 * a).abs() < 1e-9);
        assert!(f.bold.width("cpu.user", 10.0) > a);
        assert_eq!(f.regular.width("", 10.0), 0.0);
        // Control characters take no room.
        assert_eq!(
            f.regular.width("a\u{7}b", 10.0),
            f.regular.width("ab", 10.0)
        );
    }

    #[test]
    fn fit_cuts_with_an_ellipsis() {
        let f = fonts().unwrap();
        let long = "servers.web01.example.com.cpu.total.user";
        let cut = f.regular.fit(long, 10.0, 80.0);
        assert!(cut.ends_with('…'));
        assert!(f.regular.width(&cut, 10.0) <= 80.0);
        assert_eq!(f.regular.fit("short", 10.0, 80.0), "short");
    }

    #[test]
    fn glyphs_have_outlines() {
        let f = fonts().unwrap();
        let shaped = f.regular.shape("Ab");
        assert_eq!(shaped.len(), 2);
        assert!(f.regular.outline(shaped[0].0).is_some());
        assert!(shaped[1].1 > 0.0);
    }
}
