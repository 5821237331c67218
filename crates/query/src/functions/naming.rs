//! What series are named after: graphite's unit prefixes (`format_units`), the
//! node/tag lookup of `aliasByNode`/`groupByNode` (`getNodeOrTag`, `aggKey`), the first
//! path expression of a name and the joined path expressions of a combination.

use crate::eval::Value;
use crate::grammar::{self, Arg, Expr};
use crate::series::TimeSeries;

/// graphite's unit systems for `format_units` (glyph.py `UnitSystems`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnitSystem {
    Si,
    Binary,
}

impl UnitSystem {
    pub(crate) fn from_name(name: &str) -> Option<UnitSystem> {
        match name {
            "si" => Some(UnitSystem::Si),
            "binary" => Some(UnitSystem::Binary),
            _ => None,
        }
    }

    fn prefixes(self) -> [(&'static str, f64); 5] {
        match self {
            UnitSystem::Si => [("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)],
            UnitSystem::Binary => [
                ("Pi", 1125899906842624.0),
                ("Ti", 1099511627776.0),
                ("Gi", 1073741824.0),
                ("Mi", 1048576.0),
                ("Ki", 1024.0),
            ],
        }
    }
}

/// glyph.py's `format_units(v, system=…, units=…)`: the value scaled by the largest
/// prefix not above it, and the prefix (with `units` appended). Values within 1e-11 of
/// an integer (and above 1) are floored, as graphite does.
pub(crate) fn format_units(v: f64, system: UnitSystem, units: Option<&str>) -> (f64, String) {
    for (prefix, size) in system.prefixes() {
        if v.abs() >= size {
            let mut v2 = v / size;
            if (v2 - v2.floor()) < 0.00000000001 && v > 1.0 {
                v2 = v2.floor();
            }
            return (v2, format!("{prefix}{}", units.unwrap_or("")));
        }
    }
    let mut v = v;
    if (v - v.floor()) < 0.00000000001 && v > 1.0 {
        v = v.floor();
    }
    (v, units.unwrap_or("").to_string())
}

/// graphite-web's `_getFirstPathExpression`: the first metric path in a series name
/// that reads as a target (`movingAverage(a.b.c,5)` → `a.b.c`), following first
/// arguments down; `None` when the name does not parse or the path is not first.
pub(crate) fn first_path_expression(name: &str) -> Option<String> {
    let parsed = grammar::parse(name).ok()?;
    let mut expr = parsed.expr;
    loop {
        match expr {
            Expr::Path(p) => return Some(p),
            Expr::Call(call) => match call.args.into_iter().next() {
                Some(Arg::Expr(e)) => expr = e,
                _ => return None,
            },
            Expr::Template(_) => return None,
        }
    }
}

/// graphite-web's `getNodeOrTag`: node `n` of the name (or of `path_expression` when
/// given), tags split off first, negative indices from the end; a node that is not an
/// integer, or out of range, is looked up as a tag instead (empty when absent).
pub(crate) fn node_or_tag(series: &TimeSeries, n: &Value, path_expression: Option<&str>) -> String {
    if let Value::Int(i) = n {
        let source = path_expression.unwrap_or(&series.name);
        let metric = source.split(';').next().unwrap_or("");
        let nodes: Vec<&str> = metric.split('.').collect();
        let len = nodes.len() as i64;
        let index = if *i < 0 { len + i } else { *i };
        if (0..len).contains(&index) {
            return nodes[index as usize].to_string();
        }
    }
    series.tags.get(&n.python_str()).unwrap_or("").to_string()
}

/// graphite-web's `aggKey`: the nodes or tags joined with `.`; a name ending in `)`
/// is read through its first path expression.
pub(crate) fn agg_key(series: &TimeSeries, nodes: &[Value]) -> String {
    let path = if series.name.ends_with(')') {
        first_path_expression(&series.name)
    } else {
        None
    };
    let parts: Vec<String> = nodes
        .iter()
        .map(|n| node_or_tag(series, n, path.as_deref()))
        .collect();
    parts.join(".")
}

/// graphite-web's `formatPathExpressions`: the series' path expressions without
/// repeats, in order, joined with `,` (what `sumSeries(a.*,b.*)` is named after).
pub(crate) fn format_path_expressions<'a>(
    series: impl IntoIterator<Item = &'a TimeSeries>,
) -> String {
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut out = String::new();
    for s in series {
        if seen.insert(s.path_expression.as_str()) {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&s.path_expression);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(step: i64, start: i64, n: usize) -> TimeSeries {
        TimeSeries::new(
            "x",
            start,
            start + step * n as i64,
            step,
            vec![Some(1.0); n],
        )
    }

    #[test]
    fn units_like_glyph() {
        assert_eq!(
            format_units(1500.0, UnitSystem::Si, None),
            (1.5, "k".to_string())
        );
        assert_eq!(
            format_units(2048.0, UnitSystem::Binary, Some("B")),
            (2.0, "KiB".to_string())
        );
        assert_eq!(
            format_units(12.0, UnitSystem::Si, Some("b")),
            (12.0, "b".to_string())
        );
        assert_eq!(
            format_units(-3e6, UnitSystem::Si, None),
            (-3.0, "M".to_string())
        );
    }

    #[test]
    fn nodes_and_tags() {
        let s = TimeSeries::new("a.b.c;host=x", 0, 60, 60, vec![]);
        assert_eq!(node_or_tag(&s, &Value::Int(1), None), "b");
        assert_eq!(node_or_tag(&s, &Value::Int(-1), None), "c");
        assert_eq!(node_or_tag(&s, &Value::Int(5), None), "");
        assert_eq!(node_or_tag(&s, &Value::Str("host".into()), None), "x");
        let f = TimeSeries::new("movingAverage(x.y.z,5)", 0, 60, 60, vec![]);
        assert_eq!(first_path_expression(&f.name).as_deref(), Some("x.y.z"));
        assert_eq!(agg_key(&f, &[Value::Int(0), Value::Int(2)]), "x.z");
        assert_eq!(first_path_expression("constantLine(5)"), None);
    }

    #[test]
    fn path_expressions_once_each_in_order() {
        let mut a = series(10, 0, 1);
        a.path_expression = "a.*".into();
        let mut b = series(10, 0, 1);
        b.path_expression = "b".into();
        assert_eq!(format_path_expressions([&a, &b, &a]), "a.*,b");
    }
}
