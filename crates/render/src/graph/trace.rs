//! Tracing a series into pixels, point for point as graphite-web's `drawLines` does:
//! each point advances `x_step` pixels; a missing point after a known one extends the
//! line flat to its own x (so an isolated point still shows as a short dash);
//! `staircase` holds each value for one step; `connected` bridges gaps up to
//! `connectedLimit` points; `drawAsInfinite` turns positive points into vertical marks.
//! Also [`Cursor`], which reads where earlier areas reach, for stacking areas.

use super::options::LineMode;

/// One traced vertex: pixel position and the index of the point it belongs to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Vertex {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) idx: usize,
}

/// A traced series: runs of connected vertices, and the x of `drawAsInfinite` marks.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Trace {
    pub(crate) runs: Vec<Vec<Vertex>>,
    /// x of `drawAsInfinite` points.
    pub(crate) infinite: Vec<f64>,
}

/// How a series is traced.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceMode {
    pub(crate) line: LineMode,
    /// Bridge gaps (connected mode, lines only).
    pub(crate) bridge: Option<u64>,
    pub(crate) infinite: bool,
}

pub(crate) fn trace(
    values: &[Option<f64>],
    x0: f64,
    x_step: f64,
    mode: TraceMode,
    y_of: impl Fn(f64) -> Option<f64>,
) -> Trace {
    let mut out = Trace::default();
    let mut run: Vec<Vertex> = Vec::new();
    let mut x = x0;
    let mut last: Option<Vertex> = None;
    let mut nones: u64 = 0;
    let end_run = |run: &mut Vec<Vertex>, out: &mut Trace| {
        if !run.is_empty() {
            out.runs.push(std::mem::take(run));
        }
    };
    for (i, v) in values.iter().enumerate() {
        let point = v.and_then(|v| y_of(v).map(|y| (v, y)));
        let Some((v, y)) = point else {
            if nones == 0 {
                // graphite-web draws the line on, flat, to the missing point's x.
                if let (Some(l), false) = (last, run.is_empty()) {
                    run.push(Vertex {
                        x,
                        y: l.y,
                        idx: l.idx,
                    });
                }
                if mode.bridge.is_none() {
                    end_run(&mut run, &mut out);
                }
            }
            x += x_step;
            nones += 1;
            continue;
        };
        if mode.infinite && v > 0.0 {
            out.infinite.push(x);
            end_run(&mut run, &mut out);
            x += x_step;
            continue;
        }
        let vertex = Vertex { x, y, idx: i };
        let restart = match (mode.line, mode.bridge) {
            (LineMode::Connected, Some(limit)) => nones > limit || nones as usize == i,
            _ => nones > 0,
        };
        if restart {
            end_run(&mut run, &mut out);
        }
        run.push(vertex);
        if mode.line == LineMode::Staircase {
            run.push(Vertex {
                x: x + x_step,
                ..vertex
            });
        }
        x += x_step;
        nones = 0;
        last = Some(vertex);
    }
    end_run(&mut run, &mut out);
    out
}

/// The top edges of one filled series, one polyline per run, in pixels.
pub(crate) type Lines = Vec<Vec<(f64, f64)>>;

/// Where earlier areas reach at a given x: walks one earlier series' runs as x grows.
pub(crate) struct Cursor<'r> {
    pub(crate) runs: &'r [Vec<(f64, f64)>],
    pub(crate) run: usize,
    pub(crate) seg: usize,
}

impl Cursor<'_> {
    /// The lowest and highest pixel row the earlier series' line has at `x`
    /// (several rows where a staircase steps); `None` outside its runs. Calls must
    /// come with non-decreasing `x`.
    pub(crate) fn at(&mut self, x: f64) -> Option<(f64, f64)> {
        while self
            .runs
            .get(self.run)
            .is_some_and(|r| r.last().is_none_or(|l| l.0 < x))
        {
            self.run += 1;
            self.seg = 0;
        }
        let r = self.runs.get(self.run)?;
        if r.first()?.0 > x {
            return None;
        }
        while r.get(self.seg + 1).is_some_and(|v| v.0 < x) {
            self.seg += 1;
        }
        let a = *r.get(self.seg)?;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut add = |y: f64| {
            lo = lo.min(y);
            hi = hi.max(y);
        };
        match r.get(self.seg + 1) {
            Some(b) if b.0 > a.0 && a.0 <= x => add(a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)),
            _ => add(a.1),
        }
        let mut j = self.seg + 1;
        while let Some(v) = r.get(j).filter(|v| v.0 == x) {
            add(v.1);
            j += 1;
        }
        if a.0 == x {
            add(a.1);
        }
        Some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xs_ys(t: &Trace) -> Vec<Vec<(f64, f64)>> {
        t.runs
            .iter()
            .map(|r| r.iter().map(|v| (v.x, v.y)).collect())
            .collect()
    }

    const SLOPE: TraceMode = TraceMode {
        line: LineMode::Slope,
        bridge: None,
        infinite: false,
    };

    #[test]
    fn slope_breaks_at_gaps_with_a_flat_tail() {
        let v = [Some(1.0), Some(2.0), None, Some(3.0), None, None, Some(4.0)];
        let t = trace(&v, 0.0, 10.0, SLOPE, |v| Some(v * 100.0));
        assert_eq!(
            xs_ys(&t),
            vec![
                vec![(0.0, 100.0), (10.0, 200.0), (20.0, 200.0)],
                vec![(30.0, 300.0), (40.0, 300.0)],
                vec![(60.0, 400.0)],
            ]
        );
    }

    #[test]
    fn staircase_holds_each_value() {
        let mode = TraceMode {
            line: LineMode::Staircase,
            ..SLOPE
        };
        let t = trace(&[Some(1.0), Some(2.0)], 0.0, 10.0, mode, Some);
        assert_eq!(
            xs_ys(&t),
            vec![vec![(0.0, 1.0), (10.0, 1.0), (10.0, 2.0), (20.0, 2.0)]]
        );
    }

    #[test]
    fn connected_bridges_gaps_up_to_the_limit() {
        let v = [None, Some(1.0), None, Some(2.0), None, None, Some(3.0)];
        let mode = TraceMode {
            line: LineMode::Connected,
            bridge: Some(1),
            infinite: false,
        };
        let t = trace(&v, 0.0, 1.0, mode, Some);
        assert_eq!(
            xs_ys(&t),
            vec![
                vec![(1.0, 1.0), (2.0, 1.0), (3.0, 2.0), (4.0, 2.0)],
                vec![(6.0, 3.0)]
            ]
        );
    }

    #[test]
    fn infinite_points_and_unplottable_values() {
        let mode = TraceMode {
            infinite: true,
            ..SLOPE
        };
        let t = trace(&[Some(0.0), Some(1.0), Some(0.0)], 0.0, 5.0, mode, |v| {
            Some(v)
        });
        assert_eq!(t.infinite, vec![5.0]);
        assert_eq!(xs_ys(&t), vec![vec![(0.0, 0.0)], vec![(10.0, 0.0)]]);
        // A value the axis cannot show (log axis, zero) is a gap.
        let t = trace(&[Some(1.0), Some(0.0), Some(2.0)], 0.0, 1.0, SLOPE, |v| {
            (v > 0.0).then_some(v)
        });
        assert_eq!(
            xs_ys(&t),
            vec![vec![(0.0, 1.0), (1.0, 1.0)], vec![(2.0, 2.0)]]
        );
    }

    #[test]
    fn cursor_reads_earlier_lines() {
        let runs = vec![
            vec![(0.0, 10.0), (10.0, 20.0), (10.0, 30.0), (20.0, 30.0)],
            vec![(40.0, 5.0), (50.0, 5.0)],
        ];
        let mut c = Cursor {
            runs: &runs,
            run: 0,
            seg: 0,
        };
        assert_eq!(c.at(5.0), Some((15.0, 15.0)));
        assert_eq!(c.at(10.0), Some((20.0, 30.0)));
        assert_eq!(c.at(15.0), Some((30.0, 30.0)));
        assert_eq!(c.at(30.0), None);
        assert_eq!(c.at(45.0), Some((5.0, 5.0)));
        assert_eq!(c.at(60.0), None);
    }
}
