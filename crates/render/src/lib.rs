//! Render: series in, bytes of the requested format out.
