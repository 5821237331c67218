//! Streaming anomaly detection for one series at a time. Nothing here does I/O.
//!
//! - [`config`]: the detector's settings, with the one default that serves any metric.
//! - [`detector`]: [`Detector`], fed one point at a time (`update(ts, value)`), answering
//!   with a score in `[0, 1]`; how late, repeated and non-finite points are handled.
//! - [`codec`]: the detector's state as bytes (versioned, CRC-checked), so a restart
//!   continues where it stopped instead of learning again.
//! - [`events`]: scores turned into anomaly events (intervals with a peak and a
//!   reason) by a small per-series [`events::Tracker`].
//! - [`state_file`]: many series' detectors and open events in one CRC-checked file,
//!   as the server saves them.
//!
//! The detector is causal: the score of a point depends on that point and the points
//! accepted before it, never on later ones. Its state is bounded by the configuration
//! ([`Detector::state_bytes`]), whatever the length of the series.

pub mod codec;
pub mod config;
pub mod detector;
pub mod events;
pub mod state_file;

pub use codec::DecodeError;
pub use config::Config;
pub use detector::{Detector, Views, LARGEST};
