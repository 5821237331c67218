//! Colours as graphite-web names them: its alias table (`blue` is `(100,100,255)`,
//! not CSS blue), hex codes with an optional `#` or `%23` and an optional alpha byte,
//! and the default `colorList`.

use super::error::{truncate, GraphError};

/// A colour with straight (not premultiplied) alpha in `0.0..=1.0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rgba {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub a: f32,
}

impl Rgba {
    /// An opaque colour.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Rgba {
        Rgba { r, g, b, a: 1.0 }
    }

    /// The same colour with alpha `a`, clamped to `0.0..=1.0` (NaN becomes opaque).
    pub fn with_alpha(self, a: f32) -> Rgba {
        let a = if a.is_nan() { 1.0 } else { a.clamp(0.0, 1.0) };
        Rgba { a, ..self }
    }
}

/// graphite-web's `colorAliases` (render/glyph.py). Names are matched exactly, so
/// `Red` is not a colour.
const ALIASES: &[(&str, Rgba)] = &[
    ("black", Rgba::rgb(0, 0, 0)),
    ("white", Rgba::rgb(255, 255, 255)),
    ("blue", Rgba::rgb(100, 100, 255)),
    ("green", Rgba::rgb(0, 200, 0)),
    ("red", Rgba::rgb(200, 0, 50)),
    ("yellow", Rgba::rgb(255, 255, 0)),
    ("orange", Rgba::rgb(255, 165, 0)),
    ("purple", Rgba::rgb(200, 100, 255)),
    ("brown", Rgba::rgb(150, 100, 50)),
    ("cyan", Rgba::rgb(0, 255, 255)),
    ("aqua", Rgba::rgb(0, 150, 150)),
    ("gray", Rgba::rgb(175, 175, 175)),
    ("grey", Rgba::rgb(175, 175, 175)),
    ("magenta", Rgba::rgb(255, 0, 255)),
    ("pink", Rgba::rgb(255, 100, 100)),
    ("gold", Rgba::rgb(200, 200, 0)),
    ("rose", Rgba::rgb(200, 150, 200)),
    ("darkblue", Rgba::rgb(0, 0, 255)),
    ("darkgreen", Rgba::rgb(0, 255, 0)),
    ("darkred", Rgba::rgb(255, 0, 0)),
    ("darkgray", Rgba::rgb(111, 111, 111)),
    ("darkgrey", Rgba::rgb(111, 111, 111)),
];

/// graphite-web's default `colorList` (its `linecolors` template setting), in order.
pub const DEFAULT_COLOR_LIST: &[&str] = &[
    "blue", "green", "red", "purple", "brown", "yellow", "aqua", "grey", "magenta", "pink", "gold",
    "rose",
];

/// A parsed colour: the RGB and, for 8-digit hex codes, the alpha byte they carry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParsedColor {
    pub rgb: Rgba,
    /// The alpha of an `rrggbbaa` code, which wins over any alpha asked for elsewhere
    /// (`alpha()`, `areaAlpha`), as in graphite-web's `setColor`.
    pub own_alpha: Option<f32>,
}

impl ParsedColor {
    /// The colour drawn when `alpha` is asked for: the code's own alpha if it has one.
    pub fn with_alpha(self, alpha: f64) -> Rgba {
        self.rgb.with_alpha(self.own_alpha.unwrap_or(alpha as f32))
    }

    /// The colour as given (its own alpha, or opaque).
    pub fn solid(self) -> Rgba {
        self.with_alpha(1.0)
    }
}

/// Parses a colour as graphite-web's `setColor` does: an alias, or at least six
/// characters of hex after an optional `#` or `%23` (the first six are the RGB; with
/// exactly eight, the last two are the alpha). `context` names the parameter or
/// series for the error message.
pub fn parse_color(value: &str, context: &str) -> Result<ParsedColor, GraphError> {
    let err = || GraphError::Color {
        value: truncate(value),
        context: truncate(context),
    };
    if let Some((_, rgb)) = ALIASES.iter().find(|(name, _)| *name == value) {
        return Ok(ParsedColor {
            rgb: *rgb,
            own_alpha: None,
        });
    }
    if value.chars().count() < 6 {
        return Err(err());
    }
    let s = value.strip_prefix('#').unwrap_or(value);
    let s = s.strip_prefix("%23").unwrap_or(s);
    let byte = |i: usize| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
    let (Some(r), Some(g), Some(b)) = (byte(0), byte(2), byte(4)) else {
        return Err(err());
    };
    let own_alpha = if s.len() == 8 {
        Some(f32::from(byte(6).ok_or_else(err)?) / 255.0)
    } else {
        None
    };
    Ok(ParsedColor {
        rgb: Rgba::rgb(r, g, b),
        own_alpha,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_graphites_not_css() {
        assert_eq!(
            parse_color("blue", "x").unwrap().solid(),
            Rgba::rgb(100, 100, 255)
        );
        assert_eq!(
            parse_color("red", "x").unwrap().solid(),
            Rgba::rgb(200, 0, 50)
        );
        assert_eq!(
            parse_color("darkgreen", "x").unwrap().solid(),
            Rgba::rgb(0, 255, 0)
        );
    }

    #[test]
    fn hex_with_prefixes_and_alpha() {
        assert_eq!(
            parse_color("ff0080", "x").unwrap().solid(),
            Rgba::rgb(255, 0, 128)
        );
        assert_eq!(
            parse_color("#FF0080", "x").unwrap().solid(),
            Rgba::rgb(255, 0, 128)
        );
        assert_eq!(
            parse_color("%23ff0080", "x").unwrap().solid(),
            Rgba::rgb(255, 0, 128)
        );
        let c = parse_color("ff008080", "x").unwrap();
        assert!((c.own_alpha.unwrap() - 128.0 / 255.0).abs() < 1e-6);
        // The code's own alpha wins over the one asked for.
        assert!((c.with_alpha(0.1).a - 128.0 / 255.0).abs() < 1e-6);
        assert!((parse_color("ff0080", "x").unwrap().with_alpha(0.25).a - 0.25).abs() < 1e-6);
        // Seven characters: the seventh is ignored, as graphite-web does.
        assert_eq!(
            parse_color("0000ff7", "x").unwrap().solid(),
            Rgba::rgb(0, 0, 255)
        );
    }

    #[test]
    fn unknown_names_and_bad_hex_are_errors() {
        for bad in [
            "Red",
            "bleu",
            "purple2",
            "#abc",
            "zz0000",
            "ff00zz80",
            "",
            "ééééééé",
            "#",
        ] {
            let e = parse_color(bad, "colorList").unwrap_err();
            assert!(matches!(e, GraphError::Color { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("colorList"));
        }
    }

    #[test]
    fn default_list_resolves() {
        for name in DEFAULT_COLOR_LIST {
            parse_color(name, "default").unwrap();
        }
    }
}
