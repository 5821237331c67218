//! The y axis: its bounds, the spacing of its labels and their text, as graphite-web
//! chooses them (`_LinearAxisTics` / `_LogAxisTics` in render/glyph.py): among label
//! steps of 1, 2 and 5 × 10ⁿ (powers of two for `yUnitSystem=binary`) and the
//! allowed numbers of intervals (`yDivisors`), the one that wastes least room
//! ("slop") around the data.

use super::error::GraphError;
use super::options::{AxisLimits, AxisMax};
use super::units::{axis_label, UnitSystem};

/// Tolerance for rounding errors, as graphite-web's `EPSILON`.
const EPSILON: f64 = 0.0001;
/// Data beyond this is clamped before choosing the axis, so that spans stay finite.
const VALUE_LIMIT: f64 = 1e300;
/// The most labels an axis gets, whatever the step.
const MAX_LABELS: usize = 1000;

/// A y axis ready to map values to pixels.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct YAxis {
    pub(crate) bottom: f64,
    pub(crate) top: f64,
    /// Distance between labels (`None` on a log axis).
    pub(crate) step: Option<f64>,
    /// Label values and their text.
    pub(crate) labels: Vec<(f64, String)>,
    pub(crate) log_base: Option<f64>,
}

impl YAxis {
    /// The pixel row of `value` when the axis spans rows `y_max` (bottom) to `y_min`
    /// (top); `None` for values a log axis cannot show (zero and below).
    pub(crate) fn y_coord(&self, value: f64, y_min: f64, y_max: f64) -> Option<f64> {
        let (rel, range) = match self.log_base {
            Some(base) => {
                if value <= 0.0 || self.bottom <= 0.0 {
                    return None;
                }
                (
                    value.log(base) - self.bottom.log(base),
                    self.top.log(base) - self.bottom.log(base),
                )
            }
            None => (value - self.bottom, self.top - self.bottom),
        };
        if range <= 0.0 || !range.is_finite() {
            return None;
        }
        Some(y_max - (y_max - y_min) * rel / range)
    }
}

/// Where a bound came from; explicit bounds are not rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Data,
    /// `yMin`.
    Min,
    /// `yMax`.
    Max,
    /// `yMax=max`: the data maximum, not rounded up.
    Extremum,
    /// `yLimit` below the data.
    Limit,
}

/// Builds the axis for data spanning `data_min..=data_max` (finite values).
pub(crate) fn build_axis(
    data_min: f64,
    data_max: f64,
    limits: &AxisLimits,
    log_base: Option<f64>,
    system: UnitSystem,
    divisors: &[u32],
) -> Result<YAxis, GraphError> {
    let mut t = Tics {
        min: data_min.clamp(-VALUE_LIMIT, VALUE_LIMIT),
        max: data_max.clamp(-VALUE_LIMIT, VALUE_LIMIT),
        min_source: Source::Data,
        max_source: Source::Data,
        limit: None,
        step: None,
    };
    t.apply_settings(limits)?;
    if let Some(base) = log_base {
        if base <= 1.0 || !base.is_finite() {
            return Err(GraphError::Axis(format!(
                "logarithmic base {base} must be greater than one"
            )));
        }
        return t.log_axis(base, system);
    }
    let divisors: Vec<f64> = if divisors.is_empty() {
        vec![4.0, 5.0, 6.0]
    } else {
        divisors.iter().map(|&d| f64::from(d.max(1))).collect()
    };
    let binary = system == UnitSystem::Binary;
    let step = match limits.step {
        Some(s) if s > 0.0 && s.is_finite() => s,
        _ => t.choose_step(&divisors, binary),
    };
    t.step = Some(step);
    let (bottom, mut top) = t.limits(step);
    let mut span = top - bottom;
    if span == 0.0 {
        top += 1.0;
        span += 1.0;
    }
    // A user step far too small for the span: graphite-web picks a sane one.
    let step = if span > 1000.0 * step {
        t.choose_step(&[4.0, 5.0, 6.0], false)
    } else {
        step
    };
    let start = step * (bottom / step - EPSILON).ceil();
    let labels = (0..MAX_LABELS)
        .map(|i| start + i as f64 * step)
        .take_while(|v| *v <= top + EPSILON * step)
        .map(|v| (v, axis_label(v, Some(step), span, system)))
        .collect();
    Ok(YAxis {
        bottom,
        top,
        step: Some(step),
        labels,
        log_base: None,
    })
}

struct Tics {
    min: f64,
    max: f64,
    min_source: Source,
    max_source: Source,
    /// A `yLimit` above the data: the rounded top must not pass it.
    limit: Option<f64>,
    step: Option<f64>,
}

impl Tics {
    fn apply_settings(&mut self, limits: &AxisLimits) -> Result<(), GraphError> {
        if let Some(min) = limits.min.filter(|m| m.is_finite()) {
            self.min_source = Source::Min;
            self.min = min;
        }
        match limits.max {
            Some(AxisMax::DataMax) => self.max_source = Source::Extremum,
            Some(AxisMax::Value(max)) if max.is_finite() => {
                self.max_source = Source::Max;
                self.max = max;
            }
            _ => {}
        }
        match limits.limit {
            Some(limit) if limit.is_finite() && limit < self.max => {
                self.max = limit;
                self.max_source = Source::Limit;
            }
            Some(limit) if limit.is_finite() => self.limit = Some(limit),
            _ => {}
        }
        self.reconcile()
    }

    /// Makes `min < max`, moving whichever bound the user did not fix.
    fn reconcile(&mut self) -> Result<(), GraphError> {
        if self.min < self.max {
            return Ok(());
        }
        let min_fixed = self.min_source == Source::Min;
        let max_fixed = matches!(self.max_source, Source::Max | Source::Limit);
        let delta = |x: f64| if x.abs() < 1e-9 { 1.0 } else { 0.1 * x.abs() };
        match (min_fixed, max_fixed) {
            (true, true) => {
                let max_name = if self.max_source == Source::Limit {
                    "yLimit"
                } else {
                    "yMax"
                };
                return Err(GraphError::Axis(format!(
                    "yMin {} must be less than {max_name} {}",
                    self.min, self.max
                )));
            }
            (true, false) => self.max = self.min + delta(self.min),
            (false, true) => self.min = self.max - delta(self.max),
            (false, false) => {
                let d = delta(self.min.abs().max(self.max.abs()));
                let mid = (self.min + self.max) / 2.0;
                self.min = mid - d;
                self.max = mid + d;
            }
        }
        Ok(())
    }

    /// The label step with the least slop, over steps 1/2/5 × 10ⁿ (or 2ⁿ) and the
    /// allowed divisors.
    fn choose_step(&mut self, divisors: &[f64], binary: bool) -> f64 {
        if self.min == self.max {
            if self.min == 0.0 {
                self.max = 1.0;
            } else if self.min < 0.0 {
                self.min *= 1.1;
                self.max *= 0.9;
            } else {
                self.min *= 0.9;
                self.max *= 1.1;
            }
        }
        let variance = self.max - self.min;
        let max_div = divisors.iter().copied().fold(1.0, f64::max);
        let min_div = divisors.iter().copied().fold(f64::INFINITY, f64::min);
        let min_step = (variance / max_div).max(f64::MIN_POSITIVE);
        let (base, mantissas): (f64, &[f64]) = if binary {
            (2.0, &[1.0])
        } else {
            (10.0, &[1.0, 2.0, 5.0])
        };
        let mut exponent = (min_step.log(base) - EPSILON).floor() as i32;
        let mut best: Option<(f64, f64)> = None; // (slop, step)
                                                 // Each exponent adds a factor of the base; a few hundred cover any f64 range.
        'outer: for _ in 0..700 {
            let multiplier = base.powi(exponent);
            for &m in mantissas {
                let step = m * multiplier;
                if step < min_step * (1.0 - EPSILON) {
                    continue;
                }
                if let Some((slop, _)) = best {
                    if step * min_div >= 2.0 * slop + variance {
                        break 'outer;
                    }
                }
                for &d in divisors {
                    if let Some(slop) = self.slop(step, d) {
                        if best.is_none_or(|(b, _)| slop < b) {
                            best = Some((slop, step));
                        }
                    }
                }
            }
            exponent += 1;
        }
        best.map_or(variance.max(f64::MIN_POSITIVE), |(_, step)| step)
    }

    /// Room wasted outside the data if labels run from the step multiple below `min`
    /// for `divisor` intervals; `None` when that does not reach `max`.
    fn slop(&self, step: f64, divisor: f64) -> Option<f64> {
        let bottom = step * (self.min / step + EPSILON).floor();
        let top = bottom + step * divisor;
        (top >= self.max - EPSILON * step).then(|| (top - self.max).max(self.min - bottom))
    }

    /// The axis bounds: data bounds rounded out to the step, explicit ones as given.
    fn limits(&self, step: f64) -> (f64, f64) {
        let bottom = if self.min_source == Source::Data {
            step * (self.min / step + EPSILON).floor()
        } else {
            self.min
        };
        let top = if self.max_source == Source::Data {
            let top = step * (self.max / step - EPSILON).ceil();
            match self.limit {
                Some(limit) if top > limit + EPSILON * step => limit,
                _ => top,
            }
        } else {
            self.max
        };
        (bottom, top)
    }

    fn log_axis(&self, base: f64, system: UnitSystem) -> Result<YAxis, GraphError> {
        if self.min <= 0.0 {
            return Err(GraphError::Axis(format!(
                "a logarithmic axis needs a minimum above zero, not {}",
                self.min
            )));
        }
        let bottom = base.powf(self.min.log(base).floor());
        let mut top = base.powf(self.max.log(base).ceil());
        if top - bottom == 0.0 {
            top *= base;
        }
        let span = top - bottom;
        let mut labels = Vec::new();
        let mut value = base.powf((bottom.log(base) - EPSILON).ceil());
        while value < top * (1.0 + EPSILON) && labels.len() < MAX_LABELS && value.is_finite() {
            labels.push((value, axis_label(value, None, span, system)));
            value *= base;
        }
        Ok(YAxis {
            bottom,
            top,
            step: None,
            labels,
            log_base: Some(base),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(min: f64, max: f64) -> YAxis {
        build_axis(
            min,
            max,
            &AxisLimits::default(),
            None,
            UnitSystem::Si,
            &[4, 5, 6],
        )
        .unwrap()
    }

    fn values(a: &YAxis) -> Vec<f64> {
        a.labels.iter().map(|(v, _)| *v).collect()
    }

    fn texts(a: &YAxis) -> Vec<&str> {
        a.labels.iter().map(|(_, t)| t.as_str()).collect()
    }

    // Expected values below come from graphite-web 1.1.10's _LinearAxisTics and
    // _LogAxisTics run on the same inputs.

    #[test]
    fn nice_steps() {
        let a = axis(3.0, 97.0);
        assert_eq!((a.bottom, a.top, a.step), (0.0, 100.0, Some(20.0)));
        assert_eq!(
            texts(&a),
            vec!["0 ", "20.0 ", "40.0 ", "60.0 ", "80.0 ", "100.0 "]
        );

        let a = axis(12345.0, 98765.0);
        assert_eq!((a.bottom, a.top), (0.0, 100000.0));
        assert_eq!(texts(&a)[1], "20.0 k ");

        let a = axis(0.0, 0.003);
        assert_eq!(a.step, Some(0.0005));
        assert_eq!(a.labels.len(), 7);

        let a = axis(-50.0, 50.0);
        assert_eq!((a.bottom, a.top), (-60.0, 60.0));
        assert_eq!(texts(&a)[0], "-60 ");

        let a = axis(0.0, 3.5e12);
        assert_eq!(a.top, 4e12);
        assert_eq!(texts(&a)[1], "1.0 T ");

        let a = axis(1.5, 1.7);
        assert_eq!(a.bottom, 1.5);
        assert_eq!(a.step, Some(0.05));
        assert_eq!(texts(&a), vec!["1.50 ", "1.55 ", "1.60 ", "1.65 ", "1.70 "]);
    }

    #[test]
    fn binary_steps() {
        let a = build_axis(
            0.0,
            1536.0,
            &AxisLimits::default(),
            None,
            UnitSystem::Binary,
            &[4, 5, 6],
        )
        .unwrap();
        assert_eq!((a.bottom, a.top, a.step), (0.0, 1536.0, Some(256.0)));
        assert_eq!(texts(&a)[4], "1024.0 ");
    }

    #[test]
    fn flat_data_gets_a_range() {
        let a = axis(50.0, 50.0);
        assert_eq!((a.bottom, a.top, a.step), (44.0, 56.0, Some(2.0)));
        let a = axis(0.0, 0.0);
        assert_eq!((a.bottom, a.top), (-1.0, 1.0));
        let a = axis(-3.0, -3.0);
        assert_eq!(a.step, Some(0.1));
        assert_eq!(texts(&a)[0], "-3.3 ");
    }

    #[test]
    fn explicit_limits() {
        let limits = AxisLimits {
            min: Some(0.0),
            max: Some(AxisMax::Value(105.0)),
            ..AxisLimits::default()
        };
        let a = build_axis(3.0, 97.0, &limits, None, UnitSystem::Si, &[4, 5, 6]).unwrap();
        assert_eq!((a.bottom, a.top), (0.0, 105.0));

        let limits = AxisLimits {
            max: Some(AxisMax::DataMax),
            ..AxisLimits::default()
        };
        let a = build_axis(3.0, 87.0, &limits, None, UnitSystem::Si, &[4, 5, 6]).unwrap();
        assert_eq!(a.top, 87.0);

        // yLimit above the data stops the rounding; below it cuts the axis.
        let limits = AxisLimits {
            limit: Some(90.0),
            ..AxisLimits::default()
        };
        assert_eq!(
            build_axis(3.0, 87.0, &limits, None, UnitSystem::Si, &[4, 5, 6])
                .unwrap()
                .top,
            90.0
        );
        let limits = AxisLimits {
            limit: Some(50.0),
            ..AxisLimits::default()
        };
        assert_eq!(
            build_axis(3.0, 87.0, &limits, None, UnitSystem::Si, &[4, 5, 6])
                .unwrap()
                .top,
            50.0
        );

        let limits = AxisLimits {
            step: Some(25.0),
            ..AxisLimits::default()
        };
        let a = build_axis(0.0, 90.0, &limits, None, UnitSystem::Si, &[4, 5, 6]).unwrap();
        assert_eq!(values(&a), vec![0.0, 25.0, 50.0, 75.0, 100.0]);
    }

    #[test]
    fn contradictory_limits_are_an_error() {
        let limits = AxisLimits {
            min: Some(10.0),
            max: Some(AxisMax::Value(5.0)),
            ..AxisLimits::default()
        };
        let e = build_axis(0.0, 1.0, &limits, None, UnitSystem::Si, &[4, 5, 6]).unwrap_err();
        assert!(
            e.to_string().contains("yMin 10 must be less than yMax 5"),
            "{e}"
        );
        // Only one bound fixed: the other moves.
        let limits = AxisLimits {
            min: Some(10.0),
            ..AxisLimits::default()
        };
        let a = build_axis(0.0, 5.0, &limits, None, UnitSystem::Si, &[4, 5, 6]).unwrap();
        assert!(a.bottom == 10.0 && a.top > 10.0);
    }

    #[test]
    fn tiny_user_step_is_replaced() {
        let limits = AxisLimits {
            step: Some(1e-6),
            ..AxisLimits::default()
        };
        let a = build_axis(0.0, 100.0, &limits, None, UnitSystem::Si, &[4, 5, 6]).unwrap();
        assert!(a.labels.len() <= 10, "{}", a.labels.len());
    }

    #[test]
    fn extreme_values_terminate() {
        let a = axis(-1e308, 1e308);
        assert!(a.labels.len() >= 2 && a.labels.len() <= 10);
        let a = axis(1e-300, 2e-300);
        assert!(!a.labels.is_empty());
        let a = axis(0.0, 1e-7);
        assert_eq!(texts(&a)[1], "2e-08 ");
    }

    #[test]
    fn log_axis() {
        let a = build_axis(
            3.0,
            45000.0,
            &AxisLimits::default(),
            Some(10.0),
            UnitSystem::Si,
            &[],
        )
        .unwrap();
        assert_eq!((a.bottom, a.top), (1.0, 100000.0));
        assert_eq!(
            texts(&a),
            vec!["1.0 ", "10.0 ", "100.0 ", "1.0 k ", "10.0 k ", "100.0 k "]
        );
        let y = a.y_coord(100.0, 0.0, 500.0).unwrap();
        assert!((y - 300.0).abs() < 1e-9);
        assert_eq!(a.y_coord(0.0, 0.0, 500.0), None);
        let limits = AxisLimits {
            min: Some(0.0),
            ..AxisLimits::default()
        };
        assert!(build_axis(3.0, 4.0, &limits, Some(10.0), UnitSystem::Si, &[]).is_err());
    }

    #[test]
    fn y_coord_is_linear() {
        let a = axis(0.0, 100.0);
        assert_eq!(a.y_coord(50.0, 10.0, 210.0), Some(110.0));
        assert_eq!(a.y_coord(0.0, 10.0, 210.0), Some(210.0));
        assert_eq!(a.y_coord(100.0, 10.0, 210.0), Some(10.0));
    }
}
