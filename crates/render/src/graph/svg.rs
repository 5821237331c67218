//! The SVG backend: the same drawing calls written as SVG 1.1 text. Text stays text
//! (searchable, selectable) in the embedded font's family; its anchor is computed by
//! the layout with the embedded font's metrics, so a viewer with DejaVu Sans shows
//! the PNG's picture. Sections become `<g class="...">` groups, as graphite-web's
//! SVG has `title`, `legend`, `axes`, `grid` and `lines` groups.

use std::fmt::Write as _;

use super::canvas::{Align, Canvas, Join, Path, Rect, Seg, Stroke, TextRun};
use super::color::Rgba;
use super::font::SVG_FAMILY;

pub(crate) struct Svg {
    out: String,
    /// Open `<g>` elements: the section and, inside it, the clip.
    section_open: bool,
    clip_open: bool,
    clip_ids: usize,
    current_clip: Option<Rect>,
}

impl Svg {
    pub(crate) fn new(width: u32, height: u32) -> Svg {
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
             width=\"{width}px\" height=\"{height}px\" viewBox=\"0 0 {width} {height}\" version=\"1.1\">\n\
             <g class=\"graphite\">\n"
        );
        Svg {
            out,
            section_open: false,
            clip_open: false,
            clip_ids: 0,
            current_clip: None,
        }
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.close_clip();
        if self.section_open {
            self.out.push_str("</g>\n");
        }
        self.out.push_str("</g>\n</svg>\n");
        self.out.into_bytes()
    }

    fn close_clip(&mut self) {
        if self.clip_open {
            self.out.push_str("</g>\n");
            self.clip_open = false;
        }
    }

    fn open_clip(&mut self, r: Rect) {
        self.clip_ids += 1;
        let id = self.clip_ids;
        let _ = writeln!(
            self.out,
            "<clipPath id=\"clip{id}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n<g clip-path=\"url(#clip{id})\">",
            num(r.x),
            num(r.y),
            num(r.w),
            num(r.h)
        );
        self.clip_open = true;
    }

    fn path_data(&mut self, path: &Path) {
        for seg in &path.segs {
            match *seg {
                Seg::Move(x, y) => {
                    let _ = write!(self.out, "M{} {}", num(x), num(y));
                }
                Seg::Line(x, y) => {
                    let _ = write!(self.out, "L{} {}", num(x), num(y));
                }
                Seg::Close => self.out.push('Z'),
            }
        }
    }
}

/// A coordinate with at most two decimals, without trailing zeros.
fn num(v: f32) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".to_string()
    } else {
        s.to_string()
    }
}

fn rgb(c: Rgba) -> String {
    format!("#{:02x}{:02x}{:02x}", c.r, c.g, c.b)
}

fn opacity(attr: &str, c: Rgba) -> String {
    if c.a >= 1.0 {
        String::new()
    } else {
        format!(" {attr}=\"{}\"", num(c.a))
    }
}

/// Text as XML character data: markup escaped, characters XML 1.0 forbids dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            '\u{FFFE}' | '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

impl Canvas for Svg {
    fn fill_rect(&mut self, r: Rect, color: Rgba) {
        if r.is_empty() {
            return;
        }
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>",
            num(r.x),
            num(r.y),
            num(r.w),
            num(r.h),
            rgb(color),
            opacity("fill-opacity", color)
        );
    }

    fn fill_path(&mut self, path: &Path, color: Rgba) {
        if path.is_empty() || color.a <= 0.0 {
            return;
        }
        self.out.push_str("<path d=\"");
        self.path_data(path);
        let _ = writeln!(
            self.out,
            "\" fill=\"{}\"{} stroke=\"none\"/>",
            rgb(color),
            opacity("fill-opacity", color)
        );
    }

    fn stroke_path(&mut self, path: &Path, stroke: &Stroke, color: Rgba) {
        if path.is_empty() || color.a <= 0.0 || stroke.width <= 0.0 {
            return;
        }
        self.out.push_str("<path d=\"");
        self.path_data(path);
        let _ = write!(
            self.out,
            "\" fill=\"none\" stroke=\"{}\"{} stroke-width=\"{}\"",
            rgb(color),
            opacity("stroke-opacity", color),
            num(stroke.width)
        );
        match stroke.join {
            Join::Miter => self.out.push_str(" stroke-miterlimit=\"10\""),
            Join::Round => self.out.push_str(" stroke-linejoin=\"round\""),
        }
        if let Some(d) = stroke.dash {
            let _ = write!(
                self.out,
                " stroke-dasharray=\"{0},{0}\" stroke-dashoffset=\"1\"",
                num(d)
            );
        }
        self.out.push_str("/>\n");
    }

    fn text(&mut self, run: &TextRun<'_>) {
        let text = escape(run.text);
        if text.is_empty() || run.color.a <= 0.0 {
            return;
        }
        let anchor = match run.align {
            Align::Left => "start",
            Align::Center => "middle",
            Align::Right => "end",
        };
        let _ = write!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-family=\"{SVG_FAMILY}\" font-size=\"{}\" text-anchor=\"{anchor}\" fill=\"{}\"{}",
            num(run.x),
            num(run.y),
            num(run.size),
            rgb(run.color),
            opacity("fill-opacity", run.color)
        );
        if text.starts_with(' ') || text.ends_with(' ') || text.contains("  ") {
            // graphite-web's axis labels end in a space that keeps them off the plot.
            self.out.push_str(" xml:space=\"preserve\"");
        }
        if run.bold {
            self.out.push_str(" font-weight=\"bold\"");
        }
        if run.italic {
            self.out.push_str(" font-style=\"italic\"");
        }
        if run.rotate != 0.0 {
            let _ = write!(
                self.out,
                " transform=\"rotate({} {} {})\"",
                num(run.rotate),
                num(run.x),
                num(run.y)
            );
        }
        let _ = writeln!(self.out, ">{text}</text>");
    }

    fn set_clip(&mut self, clip: Option<Rect>) {
        if clip == self.current_clip {
            return;
        }
        self.close_clip();
        if let Some(r) = clip {
            self.open_clip(r);
        }
        self.current_clip = clip;
    }

    fn section(&mut self, name: &str) {
        let clip = self.current_clip;
        self.close_clip();
        if self.section_open {
            self.out.push_str("</g>\n");
        }
        let _ = writeln!(self.out, "<g class=\"{}\">", escape(name));
        self.section_open = true;
        if let Some(r) = clip {
            self.open_clip(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.25), "1.25");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(10.5), "10.5");
    }

    #[test]
    fn escapes_markup_and_drops_controls() {
        assert_eq!(escape("a<b>&\"c'\u{1}"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }

    #[test]
    fn document_structure() {
        let mut s = Svg::new(10, 20);
        s.section("lines");
        s.set_clip(Some(Rect::new(1.0, 1.0, 5.0, 5.0)));
        let mut p = Path::new();
        p.move_to(0.0, 0.0);
        p.line_to(3.0, 4.0);
        s.stroke_path(
            &p,
            &Stroke::solid(1.5),
            Rgba::rgb(255, 0, 0).with_alpha(0.5),
        );
        s.section("legend");
        let out = String::from_utf8(s.finish()).unwrap();
        assert!(out.contains("width=\"10px\" height=\"20px\""));
        assert!(out.contains("<path d=\"M0 0L3 4\" fill=\"none\" stroke=\"#ff0000\" stroke-opacity=\"0.5\" stroke-width=\"1.5\""));
        assert_eq!(out.matches("<g").count(), out.matches("</g>").count());
        assert_eq!(
            out.matches("<clipPath").count(),
            2,
            "the clip is reopened in the next section"
        );
    }
}
