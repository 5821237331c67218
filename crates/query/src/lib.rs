//! Query: Graphite target expressions evaluated against a [`SeriesSource`].

pub mod source;

pub use source::{FetchedSeries, FindNode, SeriesSource, SourceError};
