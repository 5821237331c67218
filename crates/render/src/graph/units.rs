//! Numbers as the graph prints them: graphite-web's unit systems and axis labels
//! (`20.0 k `, `0.50 `, `2e-08 `, Python's `%g` from `sumi_query::py`), and the
//! compact SI form of the rrd-style legend (`1.23k`, `45.6M`).

use sumi_query::py::format::format_g;

/// `yUnitSystem`: the prefixes axis labels may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnitSystem {
    /// k, M, G, T, P (powers of 1000).
    #[default]
    Si,
    /// Ki, Mi, Gi, Ti, Pi (powers of 1024).
    Binary,
    /// Values in seconds shown as m, H, D, M, Y.
    Sec,
    /// Values in milliseconds shown as s, m, H, D, M, Y.
    Msec,
    /// No prefixes.
    None,
}

impl UnitSystem {
    /// graphite-web's names; anything else means `si`, as graphite-web falls back.
    pub fn from_name(name: &str) -> UnitSystem {
        match name.to_lowercase().as_str() {
            "binary" => UnitSystem::Binary,
            "sec" => UnitSystem::Sec,
            "msec" => UnitSystem::Msec,
            "none" => UnitSystem::None,
            _ => UnitSystem::Si,
        }
    }

    /// Prefixes and their sizes, largest first.
    fn prefixes(self) -> &'static [(&'static str, f64)] {
        const K: f64 = 1000.0;
        const KI: f64 = 1024.0;
        const DAY: f64 = 86_400.0;
        match self {
            UnitSystem::Si => &[
                ("P", K * K * K * K * K),
                ("T", K * K * K * K),
                ("G", K * K * K),
                ("M", K * K),
                ("k", K),
            ],
            UnitSystem::Binary => &[
                ("Pi", KI * KI * KI * KI * KI),
                ("Ti", KI * KI * KI * KI),
                ("Gi", KI * KI * KI),
                ("Mi", KI * KI),
                ("Ki", KI),
            ],
            UnitSystem::Sec => &[
                ("Y", 365.0 * DAY),
                ("M", 30.0 * DAY),
                ("D", DAY),
                ("H", 3600.0),
                ("m", 60.0),
            ],
            UnitSystem::Msec => &[
                ("Y", 365.0 * DAY * 1000.0),
                ("M", 30.0 * DAY * 1000.0),
                ("D", DAY * 1000.0),
                ("H", 3_600_000.0),
                ("m", 60_000.0),
                ("s", 1000.0),
            ],
            UnitSystem::None => &[],
        }
    }
}

/// graphite-web's `format_units`: `v` scaled by the largest prefix it reaches (and,
/// when `step` is given, that the step also reaches, so labels of one axis share a
/// prefix), with near-integers above 1 snapped down.
pub fn format_units(v: f64, step: Option<f64>, system: UnitSystem) -> (f64, &'static str) {
    let snap = |x: f64| {
        if x - x.floor() < 1e-11 && x > 1.0 {
            x.floor()
        } else {
            x
        }
    };
    for &(prefix, size) in system.prefixes() {
        if v.abs() >= size && step.is_none_or(|s| s >= size) {
            return (snap(v / size), prefix);
        }
    }
    (snap(v), "")
}

/// graphite-web's axis label (`makeLabel`) for `value` on an axis with label
/// spacing `step` (`None` on a log axis) covering `span`. The trailing space is
/// graphite-web's too; it keeps labels off the plot edge.
pub(crate) fn axis_label(value: f64, step: Option<f64>, span: f64, system: UnitSystem) -> String {
    let (v, prefix) = format_units(value, step, system);
    let (span, span_prefix) = format_units(span, step, system);
    let prefix = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix} ")
    };
    if v < 0.1 {
        format!("{} {prefix}", format_g(v))
    } else if v < 1.0 {
        format!("{v:.2} {prefix}")
    } else if span > 10.0 || span_prefix != prefix {
        // graphite-web compares the bare span prefix with the label prefix after a
        // space was appended, so any prefixed label takes this branch.
        format!("{v:.1} {prefix}")
    } else if span > 3.0 {
        format!("{v:.1} {prefix}")
    } else if span > 0.1 {
        format!("{v:.2} {prefix}")
    } else {
        format!("{} {prefix}", format_g(v))
    }
}

/// A value for the rrd-style legend: three significant digits and an SI prefix
/// (`1.23k`, `45.6M`, `512`, `3.40m`, `0`), as rrdtool's `%s` scaling prints it.
/// `None` (no known value) prints as `n/a`.
pub fn si_compact(v: Option<f64>) -> String {
    let Some(v) = v else {
        return "n/a".to_string();
    };
    if !v.is_finite() {
        return format_g(v);
    }
    if v == 0.0 {
        return "0".to_string();
    }
    const PREFIXES: [(&str, i32); 17] = [
        ("y", -24),
        ("z", -21),
        ("a", -18),
        ("f", -15),
        ("p", -12),
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
        ("Z", 21),
        ("Y", 24),
    ];
    let magnitude = (v.abs().log10().floor() as i32).div_euclid(3) * 3;
    let exp = magnitude.clamp(-24, 24);
    let mut scaled = v / 10f64.powi(exp);
    // Rounding to three digits can reach 1000 (999.7 → "1000"): move up a prefix.
    let mut exp = exp;
    if format!("{:.0}", scaled.abs()) == "1000" && exp < 24 {
        exp += 3;
        scaled = v / 10f64.powi(exp);
    }
    let prefix = PREFIXES
        .iter()
        .find(|(_, e)| *e == exp)
        .map_or("", |(p, _)| p);
    let a = scaled.abs();
    let digits = if a < 9.995 {
        2
    } else if a < 99.95 {
        1
    } else {
        0
    };
    format!("{scaled:.digits$}{prefix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_match_graphite() {
        // (value, step, span, system) → graphite-web 1.1.10's makeLabel output.
        let si = UnitSystem::Si;
        assert_eq!(axis_label(0.0, Some(20.0), 100.0, si), "0 ");
        assert_eq!(axis_label(20.0, Some(20.0), 100.0, si), "20.0 ");
        assert_eq!(axis_label(0.2, Some(0.2), 1.0, si), "0.20 ");
        assert_eq!(axis_label(1.0, Some(0.2), 1.0, si), "1.00 ");
        assert_eq!(axis_label(0.0015, Some(0.0005), 0.003, si), "0.0015 ");
        assert_eq!(axis_label(20000.0, Some(20000.0), 100000.0, si), "20.0 k ");
        assert_eq!(axis_label(-60.0, Some(20.0), 120.0, si), "-60 ");
        assert_eq!(axis_label(1e9, Some(1e9), 5e9, si), "1.0 G ");
        assert_eq!(axis_label(1e6, Some(5e5), 2.5e6, si), "1000.0 k ");
        assert_eq!(axis_label(1.55, Some(0.05), 0.2, si), "1.55 ");
        assert_eq!(axis_label(-2.9000000000000004, Some(0.1), 0.6, si), "-2.9 ");
        assert_eq!(
            axis_label(1024.0, Some(256.0), 1536.0, UnitSystem::Binary),
            "1024.0 "
        );
        assert_eq!(
            axis_label(2048.0, Some(1024.0), 4096.0, UnitSystem::Binary),
            "2.0 Ki "
        );
        assert_eq!(axis_label(1000.0, None, 99999.0, si), "1.0 k ");
        assert_eq!(axis_label(10.0, None, 99999.0, si), "10.0 ");
        assert_eq!(
            axis_label(7200.0, Some(3600.0), 14400.0, UnitSystem::Sec),
            "2.0 H "
        );
    }

    #[test]
    fn format_units_respects_step() {
        assert_eq!(
            format_units(1536.0, Some(512.0), UnitSystem::Binary),
            (1536.0, "")
        );
        assert_eq!(format_units(1536.0, None, UnitSystem::Binary), (1.5, "Ki"));
        assert_eq!(format_units(3e12, Some(1e12), UnitSystem::Si), (3.0, "T"));
        assert_eq!(
            format_units(500.0, Some(100.0), UnitSystem::None),
            (500.0, "")
        );
    }

    #[test]
    fn unit_system_names() {
        assert_eq!(UnitSystem::from_name("BINARY"), UnitSystem::Binary);
        assert_eq!(UnitSystem::from_name("msec"), UnitSystem::Msec);
        assert_eq!(UnitSystem::from_name("bogus"), UnitSystem::Si);
    }

    #[test]
    fn si_compact_three_digits() {
        let cases = [
            (Some(1234.0), "1.23k"),
            (Some(45_600_000.0), "45.6M"),
            (Some(512.0), "512"),
            (Some(0.0034), "3.40m"),
            (Some(0.0), "0"),
            (Some(-2500.0), "-2.50k"),
            (Some(999.7), "1.00k"),
            (Some(1.0), "1.00"),
            (Some(1e30), "1000000Y"),
            (None, "n/a"),
            (Some(f64::INFINITY), "inf"),
        ];
        for (v, want) in cases {
            assert_eq!(si_compact(v), want, "{v:?}");
        }
    }
}
