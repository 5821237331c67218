//! Anomaly events: the scores of one series turned into intervals an on-call engineer
//! can be told about ("spike on `web01.cpu` from 10:02 to 10:07, peak 0.93").
//!
//! A [`Tracker`] per series watches the scores the [`Detector`](crate::Detector)
//! gives, in order:
//!
//! - an event **opens** at the first point whose score reaches the alarm threshold
//!   (`Config::alarm`, 0.6 by default);
//! - it **stays open** while points keep scoring at or above the threshold, or while
//!   any of the detector's views still finds the point surprising (a view at or above
//!   [`ONGOING_VIEW`], its "half" setting: the value is still far from the median, the
//!   level still shifted…). The detector damps its scores for a while after an alarm
//!   (one incident, one alarm), so the views, not the score, say how long the incident
//!   lasts;
//! - it **closes** after [`Tracker::close_after`] scored points in a row that are
//!   neither; its end is the last point that was still anomalous.
//!
//! The peak is the highest score seen while open, and the reason is the detector's
//! explanation (`Views::reason`) at the peak. Nothing here does I/O.

use crate::detector::Views;

/// A view score (0..1, 0.5 = the view's "half" surprise) at or above which a point
/// keeps an open event open.
pub const ONGOING_VIEW: f64 = 0.5;

/// One anomaly: an interval of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Stable identifier: the same series and start give the same id, across restarts
    /// (webhook receivers de-duplicate on it).
    pub id: String,
    pub series: String,
    /// Timestamp (seconds) of the first anomalous point.
    pub start: i64,
    /// Timestamp of the last anomalous point so far (the event may still be open).
    pub end: i64,
    /// Highest score while open, and when.
    pub peak: f64,
    pub peak_ts: i64,
    /// The detector's word for the peak (`spike`, `level shift`, …).
    pub reason: String,
    /// Still open: the series has not yet been quiet for `close_after` points.
    pub open: bool,
}

/// FNV-1a over the series name, then the start time, as 16 hex digits.
pub fn event_id(series: &str, start: i64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in series.bytes().chain(start.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The largest of a point's view scores.
pub fn strongest_view(v: &Views) -> f64 {
    v.point
        .max(v.level)
        .max(v.spread)
        .max(v.pattern)
        .max(v.gap)
        .max(v.season)
}

/// What a point did to the series' event.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Nothing to report (no event, or an open event went on a point quieter).
    None,
    /// A new event (to notify).
    Opened(Event),
    /// The open event grew (a later anomalous point, maybe a higher peak).
    Extended(Event),
    /// The event ended (to notify).
    Closed(Event),
}

/// The open event of one series, if any; small enough to save with the detector.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tracker {
    pub open: Option<Event>,
    /// Scored points since the open event's last anomalous point.
    pub quiet: u32,
}

impl Tracker {
    /// Quiet points after which an open event closes.
    pub const fn close_after() -> u32 {
        10
    }

    /// Closes the open event now (its series went quiet), if there is one.
    pub fn close_now(&mut self) -> Option<Event> {
        let mut e = self.open.take()?;
        e.open = false;
        self.quiet = 0;
        Some(e)
    }

    /// Takes the score of the point at `ts` with the detector's views of it.
    pub fn observe(
        &mut self,
        series: &str,
        ts: i64,
        score: f64,
        views: &Views,
        alarm: f64,
    ) -> Change {
        let alarming = score >= alarm;
        match &mut self.open {
            None if alarming => {
                let e = Event {
                    id: event_id(series, ts),
                    series: series.to_string(),
                    start: ts,
                    end: ts,
                    peak: score,
                    peak_ts: ts,
                    reason: views.reason().to_string(),
                    open: true,
                };
                self.open = Some(e.clone());
                self.quiet = 0;
                Change::Opened(e)
            }
            None => Change::None,
            Some(e) => {
                if alarming || strongest_view(views) >= ONGOING_VIEW {
                    e.end = ts;
                    if score > e.peak {
                        e.peak = score;
                        e.peak_ts = ts;
                        e.reason = views.reason().to_string();
                    }
                    self.quiet = 0;
                    Change::Extended(e.clone())
                } else {
                    self.quiet += 1;
                    if self.quiet >= Self::close_after() {
                        let mut e = self.open.take().expect("open event");
                        e.open = false;
                        self.quiet = 0;
                        Change::Closed(e)
                    } else {
                        Change::None
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calm() -> Views {
        Views::default()
    }

    fn spike(p: f64) -> Views {
        Views {
            point: p,
            ..Views::default()
        }
    }

    #[test]
    fn an_alarm_opens_views_extend_quiet_points_close() {
        let mut t = Tracker::default();
        assert_eq!(t.observe("a", 10, 0.1, &calm(), 0.6), Change::None);
        let Change::Opened(e) = t.observe("a", 20, 0.9, &spike(0.9), 0.6) else {
            panic!("no open");
        };
        assert_eq!((e.start, e.end, e.reason.as_str()), (20, 20, "spike"));
        // damped score, but the value is still far off: the event goes on
        let Change::Extended(e) = t.observe("a", 30, 0.04, &spike(0.7), 0.6) else {
            panic!("not extended");
        };
        assert_eq!((e.end, e.peak), (30, 0.9));
        for i in 0..Tracker::close_after() - 1 {
            assert_eq!(
                t.observe("a", 40 + 10 * i64::from(i), 0.0, &calm(), 0.6),
                Change::None
            );
        }
        let Change::Closed(e) = t.observe("a", 200, 0.0, &calm(), 0.6) else {
            panic!("not closed");
        };
        assert_eq!((e.start, e.end, e.peak, e.open), (20, 30, 0.9, false));
        assert_eq!(e.id, event_id("a", 20));
        assert!(t.open.is_none());
    }

    #[test]
    fn ids_depend_on_series_and_start() {
        assert_eq!(event_id("a.b", 100), event_id("a.b", 100));
        assert_ne!(event_id("a.b", 100), event_id("a.b", 101));
        assert_ne!(event_id("a.b", 100), event_id("a.c", 100));
        assert_eq!(event_id("x", 1).len(), 16);
    }
}
