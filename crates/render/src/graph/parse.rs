//! [`GraphOptions::from_params`]: graph parameters from a `/render` query string, read
//! as graphite-web reads them (`parseOptions` in render/views.py, then glyph.py):
//! the last occurrence of a parameter wins, an empty value or `default` means the
//! default, `true`/`false` and numbers are Python values, and any other non-empty
//! string counts as true where a flag is expected. Parameters that are not graph
//! parameters (`target`, `from`, ...) are ignored.

use std::collections::HashMap;

use chrono::format::{Item, StrftimeItems};
use sumi_query::py;

use super::error::GraphError;
use super::options::{AreaMode, AxisLimits, AxisMax, AxisSide, GraphOptions, LineMode, Style};
use super::units::UnitSystem;

/// Most `shade` intervals one graph takes.
const MAX_SHADES: usize = 1000;

/// `shade=START:END`, epoch seconds (sumi's extension).
fn parse_shade(value: &str) -> Result<(i64, i64), GraphError> {
    let bad = || GraphError::param("shade", value, "expected START:END in epoch seconds");
    let (a, b) = value.split_once(':').ok_or_else(bad)?;
    let a: i64 = a.trim().parse().map_err(|_| bad())?;
    let b: i64 = b.trim().parse().map_err(|_| bad())?;
    Ok((a.min(b), a.max(b)))
}

/// Largest image side accepted, in pixels: 4096 × 4096 is 64 MiB of pixels.
pub const MAX_SIDE: u32 = 4096;

impl GraphOptions {
    /// Reads graph parameters (already URL-decoded name/value pairs). `style=rrd`
    /// starts from [`GraphOptions::rrd`]; every other parameter is graphite-web's.
    pub fn from_params<'a>(
        params: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<GraphOptions, GraphError> {
        let mut map: HashMap<&str, &str> = HashMap::new();
        let mut shade = Vec::new();
        for (name, value) in params {
            if name == "shade" {
                if shade.len() >= MAX_SHADES {
                    return Err(GraphError::param(
                        "shade",
                        value,
                        format!("at most {MAX_SHADES} intervals"),
                    ));
                }
                shade.push(parse_shade(value)?);
                continue;
            }
            if value.is_empty() || value.eq_ignore_ascii_case("default") {
                map.remove(name);
            } else {
                map.insert(name, value);
            }
        }
        let style = match map.get("style").copied() {
            None | Some("graphite") => Style::Graphite,
            Some("rrd") => Style::Rrd,
            Some(other) => {
                return Err(GraphError::param(
                    "style",
                    other,
                    "expected graphite or rrd",
                ))
            }
        };
        let mut o = GraphOptions::for_style(style);
        o.shade = shade;
        let p = Params { map };

        if let Some(w) = p.int("width")? {
            o.width = side("width", w)?;
        }
        if let Some(h) = p.int("height")? {
            o.height = side("height", h)?;
        }
        if let Some(m) = p.int("margin")? {
            // graphite-web replaces a negative margin with its default.
            o.margin = if m < 0 { 10 } else { m.min(1000) as u32 };
        }
        p.string("bgcolor", &mut o.background);
        p.string("fgcolor", &mut o.foreground);
        p.string("majorGridLineColor", &mut o.major_grid_color);
        p.string("minorGridLineColor", &mut o.minor_grid_color);
        if let Some(list) = p.get("colorList") {
            o.color_list = unquote_plus(list).split(',').map(str::to_string).collect();
        }
        p.string("fontName", &mut o.font_name);
        if let Some(size) = p.num("fontSize")? {
            // graphite-web truncates the size to an integer.
            let size = size.trunc();
            if !(1.0..=200.0).contains(&size) {
                return Err(p.bad("fontSize", "expected a size from 1 to 200"));
            }
            o.font_size = size;
        }
        p.flag("fontBold", &mut o.font_bold);
        p.flag("fontItalic", &mut o.font_italic);
        p.string("title", &mut o.title);
        p.string("vtitle", &mut o.vtitle);
        p.string("vtitleRight", &mut o.vtitle_right);

        if let Some(mode) = p.get("lineMode") {
            o.line_mode = match mode.to_lowercase().as_str() {
                "slope" => LineMode::Slope,
                "staircase" => LineMode::Staircase,
                "connected" => LineMode::Connected,
                _ => return Err(p.bad("lineMode", "expected slope, staircase or connected")),
            };
        }
        if let Some(limit) = p.int("connectedLimit")? {
            o.connected_limit = Some(limit.max(0) as u64);
        }
        if let Some(mode) = p.get("areaMode") {
            o.area_mode = match mode.to_lowercase().as_str() {
                "none" => AreaMode::None,
                "first" => AreaMode::First,
                "all" => AreaMode::All,
                "stacked" => AreaMode::Stacked,
                _ => return Err(p.bad("areaMode", "expected none, first, all or stacked")),
            };
        }
        if let Some(alpha) = p.get("areaAlpha") {
            // graphite-web: an unreadable alpha means 0.5, and 0 means no alpha at all.
            let a = py::float(alpha).filter(|a| a.is_finite()).unwrap_or(0.5);
            o.area_alpha = (a != 0.0).then_some(a.clamp(0.0, 1.0));
        }
        // `thickness` is the old name of `lineWidth`, which wins when both are given.
        for name in ["thickness", "lineWidth"] {
            if let Some(w) = p.num(name)? {
                if !(0.0..=100.0).contains(&w) {
                    return Err(p.bad(name, "expected a width from 0 to 100"));
                }
                o.line_width = w;
            }
        }

        if let Some(hide) = p.get("hideLegend") {
            o.hide_legend = Some(truthy(hide));
        }
        p.flag("uniqueLegend", &mut o.unique_legend);
        p.flag("hideNullFromLegend", &mut o.hide_null_from_legend);
        p.flag("hideAxes", &mut o.hide_axes);
        p.flag("hideXAxis", &mut o.hide_x_axis);
        p.flag("hideYAxis", &mut o.hide_y_axis);
        p.flag("hideGrid", &mut o.hide_grid);
        p.flag("graphOnly", &mut o.graph_only);
        p.flag("drawNullAsZero", &mut o.draw_null_as_zero);

        if let Some(base) = p.get("logBase") {
            o.log_base = if base == "e" {
                Some(std::f64::consts::E)
            } else {
                let b = p.num("logBase")?.unwrap_or(0.0);
                if b == 1.0 {
                    return Err(p.bad("logBase", "a logarithmic base must be greater than one"));
                }
                // graphite-web ignores a base below one (and 0, which is false).
                (b > 1.0).then_some(b)
            };
        }
        if let Some(side) = p.get("yAxisSide") {
            o.y_axis_side = if side == "right" {
                AxisSide::Right
            } else {
                AxisSide::Left
            };
        }
        if let Some(system) = p.get("yUnitSystem") {
            o.y_unit_system = UnitSystem::from_name(system);
        }
        p.axis(
            &mut o.y,
            ["yMin", "yMax", "yLimit", "yStep"],
            Some(["min", "max"]),
        )?;
        p.axis(
            &mut o.y_left,
            ["yMinLeft", "yMaxLeft", "yLimitLeft", "yStepLeft"],
            None,
        )?;
        p.axis(
            &mut o.y_right,
            ["yMinRight", "yMaxRight", "yLimitRight", "yStepRight"],
            None,
        )?;
        if let Some(divisors) = p.get("yDivisors") {
            o.y_divisors = divisors
                .split(',')
                .map(|d| {
                    py::int(d)
                        .filter(|d| (1..=100).contains(d))
                        .map(|d| d as u32)
                })
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| {
                    p.bad(
                        "yDivisors",
                        "expected integers from 1 to 100, separated by commas",
                    )
                })?;
        }
        if let Some(minor) = p.int("minorY")? {
            if minor > 100 {
                return Err(p.bad("minorY", "expected at most 100 minor lines"));
            }
            o.minor_y = minor.max(0) as u32;
        }
        if let Some(format) = p.get("xFormat") {
            if StrftimeItems::new(format).any(|item| matches!(item, Item::Error)) {
                return Err(p.bad("xFormat", "not a strftime format"));
            }
            o.x_format = Some(format.to_string());
        }
        if let Some(step) = p.num("minXStep")? {
            if step <= 0.0 {
                return Err(p.bad("minXStep", "expected a positive number of pixels"));
            }
            o.min_x_step = step;
        }
        for (side, prefix) in [(&mut o.left, "left"), (&mut o.right, "right")] {
            if let Some(color) = p.get(&format!("{prefix}Color")) {
                side.color = Some(color.to_string());
            }
            let width = format!("{prefix}Width");
            if let Some(w) = p.num(&width)? {
                side.width = Some(w.clamp(0.0, 100.0));
            }
            let dashed = format!("{prefix}Dashed");
            if let Some(d) = p.get(&dashed) {
                side.dashed = dash_length(d);
            }
        }
        Ok(o)
    }
}

/// The query parameters with graphite-web's readings of a value.
struct Params<'a> {
    map: HashMap<&'a str, &'a str>,
}

impl Params<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.map.get(name).copied()
    }

    fn bad(&self, name: &str, reason: &str) -> GraphError {
        GraphError::param(name, self.get(name).unwrap_or(""), reason)
    }

    fn string(&self, name: &str, into: &mut String) {
        if let Some(v) = self.get(name) {
            *into = v.to_string();
        }
    }

    fn flag(&self, name: &str, into: &mut bool) {
        if let Some(v) = self.get(name) {
            *into = truthy(v);
        }
    }

    /// A finite number (Python's `float()` syntax).
    fn num(&self, name: &str) -> Result<Option<f64>, GraphError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        match py::float(v) {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(self.bad(name, "expected a finite number")),
        }
    }

    /// An integer; a decimal is truncated, as graphite-web's `int()` of a float does.
    fn int(&self, name: &str) -> Result<Option<i64>, GraphError> {
        Ok(self
            .num(name)?
            .map(|x| x.trunc().clamp(i64::MIN as f64, i64::MAX as f64) as i64))
    }

    /// `yMin`/`yMax`/`yLimit`/`yStep` (or a side's forms), plus graphite-web's old
    /// names `min`/`max`, which count only when the new ones are absent.
    fn axis(
        &self,
        axis: &mut AxisLimits,
        names: [&str; 4],
        old: Option<[&str; 2]>,
    ) -> Result<(), GraphError> {
        let [min, max, limit, step] = names;
        let min_name = old
            .filter(|_| self.get(min).is_none())
            .map_or(min, |[m, _]| m);
        let max_name = old
            .filter(|_| self.get(max).is_none())
            .map_or(max, |[_, m]| m);
        if let Some(v) = self.num(min_name)? {
            axis.min = Some(v);
        }
        if self.get(max_name) == Some("max") {
            axis.max = Some(AxisMax::DataMax);
        } else if let Some(v) = self.num(max_name)? {
            axis.max = Some(AxisMax::Value(v));
        }
        if let Some(v) = self.num(limit)? {
            axis.limit = Some(v);
        }
        if let Some(v) = self.num(step)? {
            if v <= 0.0 {
                return Err(self.bad(step, "the step between labels must be positive"));
            }
            axis.step = Some(v);
        }
        Ok(())
    }
}

fn side(name: &str, v: i64) -> Result<u32, GraphError> {
    if (1..=i64::from(MAX_SIDE)).contains(&v) {
        Ok(v as u32)
    } else {
        Err(GraphError::param(
            name,
            &v.to_string(),
            format!("expected 1 to {MAX_SIDE} pixels"),
        ))
    }
}

/// Python's truth of what `parseOptions` makes of a value: `false` and zero are
/// false; `true`, other numbers and any other string are true.
pub(crate) fn truthy(v: &str) -> bool {
    if v.eq_ignore_ascii_case("false") {
        return false;
    }
    if v.eq_ignore_ascii_case("true") {
        return true;
    }
    match py::float(v) {
        Some(x) => x != 0.0,
        None => !v.is_empty(),
    }
}

/// `leftDashed`/`rightDashed`: a dash length, `true` for 1 pixel, or no dashes.
fn dash_length(v: &str) -> Option<f64> {
    if v.eq_ignore_ascii_case("true") {
        return Some(1.0);
    }
    py::float(v)
        .filter(|d| d.is_finite() && *d > 0.0)
        .map(|d| d.min(1000.0))
}

/// Python's `urllib.parse.unquote_plus`: `+` is a space and `%XX` a byte, decoded as
/// UTF-8 with replacement. graphite-web applies it to titles, legend names and
/// `colorList` on top of the query string's own decoding.
pub(crate) fn unquote_plus(s: &str) -> String {
    if !s.contains(['+', '%']) {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
        match b {
            b'+' => out.push(b' '),
            b'%' => match (hex(i + 1), hex(i + 2)) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(q: &[(&str, &str)]) -> Result<GraphOptions, GraphError> {
        GraphOptions::from_params(q.iter().copied())
    }

    #[test]
    fn defaults_are_graphites() {
        let o = parse(&[("target", "a.b"), ("from", "-1h")]).unwrap();
        assert_eq!(o, GraphOptions::default());
        assert_eq!((o.width, o.height, o.margin), (330, 250, 10));
        assert_eq!(o.line_width, 1.2);
        assert_eq!(o.color_list[0], "blue");
    }

    #[test]
    fn typed_values() {
        let o = parse(&[
            ("width", "800"),
            ("height", "600.7"),
            ("lineWidth", "2"),
            ("areaMode", "Stacked"),
            ("lineMode", "staircase"),
            ("hideLegend", "false"),
            ("hideGrid", "1"),
            ("hideAxes", "yes"),
            ("drawNullAsZero", "true"),
            ("logBase", "e"),
            ("yMin", "-5"),
            ("yMax", "max"),
            ("yLimit", "1e3"),
            ("yUnitSystem", "Binary"),
            ("colorList", "red,%23ff0000,00ff0080"),
            ("yDivisors", "2,3"),
            ("minorY", "-2"),
            ("xFormat", "%H:%M"),
            ("title", "Disk+usage"),
            ("margin", "-3"),
            ("rightDashed", "true"),
        ])
        .unwrap();
        assert_eq!((o.width, o.height), (800, 600));
        assert_eq!(o.line_width, 2.0);
        assert_eq!(o.area_mode, AreaMode::Stacked);
        assert_eq!(o.line_mode, LineMode::Staircase);
        assert_eq!(o.hide_legend, Some(false));
        assert!(o.hide_grid && o.hide_axes && o.draw_null_as_zero);
        assert_eq!(o.log_base, Some(std::f64::consts::E));
        assert_eq!(o.y.min, Some(-5.0));
        assert_eq!(o.y.max, Some(AxisMax::DataMax));
        assert_eq!(o.y.limit, Some(1000.0));
        assert_eq!(o.y_unit_system, UnitSystem::Binary);
        assert_eq!(o.color_list, vec!["red", "#ff0000", "00ff0080"]);
        assert_eq!(o.y_divisors, vec![2, 3]);
        assert_eq!(o.minor_y, 0);
        assert_eq!(o.x_format.as_deref(), Some("%H:%M"));
        // Titles are unquoted when drawn, not when parsed.
        assert_eq!(o.title, "Disk+usage");
        assert_eq!(o.margin, 10);
        assert_eq!(o.right.dashed, Some(1.0));
    }

    #[test]
    fn last_value_wins_and_default_resets() {
        let o = parse(&[("width", "100"), ("width", "200")]).unwrap();
        assert_eq!(o.width, 200);
        let o = parse(&[("width", "100"), ("width", "default")]).unwrap();
        assert_eq!(o.width, 330);
        let o = parse(&[("bgcolor", "")]).unwrap();
        assert_eq!(o.background, "white");
    }

    #[test]
    fn old_names_and_precedence() {
        let o = parse(&[("min", "1"), ("max", "9")]).unwrap();
        assert_eq!((o.y.min, o.y.max), (Some(1.0), Some(AxisMax::Value(9.0))));
        let o = parse(&[("min", "1"), ("yMin", "2")]).unwrap();
        assert_eq!(o.y.min, Some(2.0));
        let o = parse(&[("lineWidth", "3"), ("thickness", "5")]).unwrap();
        assert_eq!(o.line_width, 3.0);
        let o = parse(&[("thickness", "5")]).unwrap();
        assert_eq!(o.line_width, 5.0);
    }

    #[test]
    fn log_base_rules() {
        assert_eq!(parse(&[("logBase", "10")]).unwrap().log_base, Some(10.0));
        assert_eq!(parse(&[("logBase", "0.5")]).unwrap().log_base, None);
        assert_eq!(parse(&[("logBase", "0")]).unwrap().log_base, None);
        assert!(parse(&[("logBase", "1")]).is_err());
    }

    #[test]
    fn area_alpha_rules() {
        assert_eq!(
            parse(&[("areaAlpha", "0.3")]).unwrap().area_alpha,
            Some(0.3)
        );
        assert_eq!(
            parse(&[("areaAlpha", "abc")]).unwrap().area_alpha,
            Some(0.5)
        );
        assert_eq!(parse(&[("areaAlpha", "0")]).unwrap().area_alpha, None);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        for (name, value) in [
            ("width", "0"),
            ("width", "99999"),
            ("height", "abc"),
            ("areaMode", "filled"),
            ("lineMode", "curvy"),
            ("fontSize", "0"),
            ("yStep", "-1"),
            ("yMin", "nan"),
            ("yDivisors", "4,x"),
            ("xFormat", "%Q"),
            ("minXStep", "0"),
            ("style", "excel"),
            ("lineWidth", "1000"),
        ] {
            let e = parse(&[(name, value)]).unwrap_err();
            assert!(e.is_client_error());
            let msg = e.to_string();
            assert!(msg.contains(name) && msg.contains(value), "{msg}");
        }
    }

    #[test]
    fn rrd_style_starts_from_its_preset() {
        let o = parse(&[("style", "rrd"), ("title", "Daily")]).unwrap();
        assert_eq!(o.style, Style::Rrd);
        assert_eq!(o.title, "Daily");
        assert_eq!(o.soft_min, Some(0.0));
        assert_eq!(o.background, GraphOptions::rrd().background);
    }

    #[test]
    fn truthiness() {
        for (v, want) in [
            ("true", true),
            ("False", false),
            ("0", false),
            ("0.0", false),
            ("2", true),
            ("no", true),
        ] {
            assert_eq!(truthy(v), want, "{v}");
        }
    }

    #[test]
    fn unquote_plus_like_python() {
        assert_eq!(unquote_plus("a+b%2Cc"), "a b,c");
        assert_eq!(unquote_plus("100%"), "100%");
        assert_eq!(unquote_plus("%zz%4"), "%zz%4");
        assert_eq!(unquote_plus("%C3%A9"), "é");
        assert_eq!(unquote_plus("%ff"), "\u{fffd}");
    }
}
