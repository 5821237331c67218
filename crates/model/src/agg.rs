//! Aggregation methods of whisper rollups (`aggregationMethod` in
//! storage-aggregation.conf), computed exactly as whisper 1.1 computes them so that a
//! coarse archive holds the same double a whisper file would.

use std::fmt;
use std::str::FromStr;

/// How the slots of a finer archive become one slot of the next coarser archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggMethod {
    Average,
    Sum,
    Last,
    Max,
    Min,
    /// The average with unknown slots counted as zero.
    AvgZero,
    /// The value with the largest absolute value (the first one on ties).
    AbsMax,
    /// The value with the smallest absolute value (the first one on ties).
    AbsMin,
    /// Not a whisper method: the median of the known values (the mean of the two middle
    /// values when their count is even). Offered because users ask for it.
    Median,
}

impl AggMethod {
    pub const ALL: [AggMethod; 9] = [
        AggMethod::Average,
        AggMethod::Sum,
        AggMethod::Last,
        AggMethod::Max,
        AggMethod::Min,
        AggMethod::AvgZero,
        AggMethod::AbsMax,
        AggMethod::AbsMin,
        AggMethod::Median,
    ];

    /// The name used in storage-aggregation.conf.
    pub fn name(self) -> &'static str {
        match self {
            AggMethod::Average => "average",
            AggMethod::Sum => "sum",
            AggMethod::Last => "last",
            AggMethod::Max => "max",
            AggMethod::Min => "min",
            AggMethod::AvgZero => "avg_zero",
            AggMethod::AbsMax => "absmax",
            AggMethod::AbsMin => "absmin",
            AggMethod::Median => "median",
        }
    }

    /// A stable one-byte code for on-disk formats.
    pub fn code(self) -> u8 {
        match self {
            AggMethod::Average => 1,
            AggMethod::Sum => 2,
            AggMethod::Last => 3,
            AggMethod::Max => 4,
            AggMethod::Min => 5,
            AggMethod::AvgZero => 6,
            AggMethod::AbsMax => 7,
            AggMethod::AbsMin => 8,
            AggMethod::Median => 9,
        }
    }

    pub fn from_code(code: u8) -> Option<AggMethod> {
        AggMethod::ALL.into_iter().find(|m| m.code() == code)
    }

    /// Aggregates the known values of one coarse slot, in slot order. `total_slots` is
    /// the number of finer slots the coarse slot covers (known or not); only `avg_zero`
    /// needs it. Returns `None` when `known` is empty.
    ///
    /// Sums add left to right starting from zero, as Python's `sum` does (so a sum of
    /// `-0.0`s is `0.0`), and results are bit-identical to whisper's.
    pub fn aggregate(self, known: &[f64], total_slots: usize) -> Option<f64> {
        let (&first, rest) = known.split_first()?;
        let sum = || known.iter().fold(0.0, |acc, v| acc + v);
        Some(match self {
            AggMethod::Average => sum() / known.len() as f64,
            AggMethod::Sum => sum(),
            AggMethod::Last => known[known.len() - 1],
            AggMethod::Max => rest.iter().fold(first, |m, &v| if v > m { v } else { m }),
            AggMethod::Min => rest.iter().fold(first, |m, &v| if v < m { v } else { m }),
            AggMethod::AvgZero => sum() / total_slots.max(known.len()) as f64,
            AggMethod::AbsMax => rest
                .iter()
                .fold(first, |m, &v| if v.abs() > m.abs() { v } else { m }),
            AggMethod::AbsMin => rest
                .iter()
                .fold(first, |m, &v| if v.abs() < m.abs() { v } else { m }),
            AggMethod::Median => {
                let mut sorted = known.to_vec();
                sorted.sort_by(f64::total_cmp);
                let mid = sorted.len() / 2;
                if sorted.len() % 2 == 1 {
                    sorted[mid]
                } else {
                    (sorted[mid - 1] + sorted[mid]) / 2.0
                }
            }
        })
    }

    /// Whisper's rule for one coarse slot: a value only when the known fraction of the
    /// finer slots reaches `xff`; otherwise the slot stays unknown.
    pub fn rollup(self, known: &[f64], total_slots: usize, xff: f32) -> Option<f64> {
        if known.is_empty() || total_slots == 0 {
            return None;
        }
        // whisper compares float(known) / float(total) >= xFilesFactor in doubles
        let fraction = known.len() as f64 / total_slots as f64;
        if fraction >= f64::from(xff) {
            self.aggregate(known, total_slots)
        } else {
            None
        }
    }
}

impl fmt::Display for AggMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An aggregation method name that is not one of [`AggMethod::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown aggregation method {0:?} (expected one of average, sum, last, max, min, avg_zero, absmax, absmin, median)")]
pub struct UnknownAggMethod(pub String);

impl FromStr for AggMethod {
    type Err = UnknownAggMethod;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AggMethod::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownAggMethod(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whisper_methods() {
        let v = [3.0, -7.0, 1.5, 7.0];
        assert_eq!(AggMethod::Average.aggregate(&v, 6), Some(1.125));
        assert_eq!(AggMethod::Sum.aggregate(&v, 6), Some(4.5));
        assert_eq!(AggMethod::Last.aggregate(&v, 6), Some(7.0));
        assert_eq!(AggMethod::Max.aggregate(&v, 6), Some(7.0));
        assert_eq!(AggMethod::Min.aggregate(&v, 6), Some(-7.0));
        assert_eq!(AggMethod::AvgZero.aggregate(&v, 6), Some(0.75));
        // ties go to the first value, as Python's max(key=abs) does
        assert_eq!(AggMethod::AbsMax.aggregate(&v, 6), Some(-7.0));
        assert_eq!(AggMethod::AbsMin.aggregate(&v, 6), Some(1.5));
        assert_eq!(AggMethod::Median.aggregate(&v, 6), Some(2.25));
        assert_eq!(AggMethod::Average.aggregate(&[], 6), None);
    }

    #[test]
    fn sums_start_from_zero_like_python() {
        // Python: sum([-0.0, -0.0]) == 0.0 (the start value is the integer 0)
        let s = AggMethod::Sum.aggregate(&[-0.0, -0.0], 2).unwrap();
        assert!(s == 0.0 && s.is_sign_positive());
        let a = AggMethod::Average.aggregate(&[-0.0], 6).unwrap();
        assert!(a.is_sign_positive());
        // max/min/last keep the value itself
        assert!(AggMethod::Last
            .aggregate(&[-0.0], 1)
            .unwrap()
            .is_sign_negative());
    }

    #[test]
    fn sum_is_left_to_right() {
        // (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3) in doubles; Python's sum gives the former
        let v = [0.1, 0.2, 0.3];
        assert_eq!(AggMethod::Sum.aggregate(&v, 3), Some((0.1 + 0.2) + 0.3));
    }

    #[test]
    fn xff_threshold() {
        assert_eq!(
            AggMethod::Average.rollup(&[1.0, 2.0, 3.0], 6, 0.5),
            Some(2.0)
        );
        assert_eq!(AggMethod::Average.rollup(&[1.0, 2.0], 6, 0.5), None);
        assert_eq!(AggMethod::Sum.rollup(&[1.0], 6, 0.0), Some(1.0));
        assert_eq!(AggMethod::Sum.rollup(&[], 6, 0.0), None);
    }

    #[test]
    fn names_round_trip() {
        for m in AggMethod::ALL {
            assert_eq!(m.name().parse::<AggMethod>(), Ok(m));
            assert_eq!(AggMethod::from_code(m.code()), Some(m));
        }
        assert!("avg".parse::<AggMethod>().is_err());
    }
}
