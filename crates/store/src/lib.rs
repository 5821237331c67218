//! The embedded storage engine.
