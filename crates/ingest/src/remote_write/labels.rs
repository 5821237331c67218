//! Prometheus labels to a Graphite tagged name: `__name__` is the metric, every other
//! label a tag, in carbon's canonical form (`http_requests_total;instance=a:9100;job=api`).
//!
//! What carbon cannot carry is percent-encoded, byte by byte of its UTF-8 (`%3B` for
//! `;`), and `%` itself always is (`%25`), so the mapping is injective: two different
//! Prometheus series never become one Graphite series, and the original text can be
//! recovered. Only what needs it is encoded, so ordinary names and values read as sent.
//!
//! | part | kept as is | percent-encoded |
//! | --- | --- | --- |
//! | metric (`__name__`) | ASCII letters, digits, `_ : . -`; any non-ASCII character that is not whitespace | everything else: spaces, control characters, `; = ! ^ ~ % / \ * ? [ ] { } ( ) , ' "` and the like (they would split the name into tags or files, or break target expressions). A `.` is kept: it is Graphite's node separator, so OpenTelemetry's dotted names become paths |
//! | tag name (other label names) | everything else | `; ! ^ =` (carbon refuses them), `%`, control characters |
//! | tag value | everything else | `;` (carbon refuses it), `%`, control characters, a leading `~` (carbon refuses it there) |
//!
//! Other rules: a label with an empty value is absent (Prometheus's own rule); a label
//! named `name` (which carbon reserves for the metric) becomes `exported_name` (as
//! Prometheus renames clashing labels, with as many `exported_` as it takes to be
//! unique); a label given twice keeps its last value; empty nodes of the metric
//! (`a..b`) are then dropped by [`sumi_model::name::normalize`] like every name.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::plaintext::is_python_space;
use sumi_model::tagged::sort_unique;

/// Why a series gives no name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// No `__name__` label, or an empty one.
    #[error("series has no __name__ label")]
    NoName,
    /// A label name or value that is not UTF-8.
    #[error("label is not valid UTF-8")]
    InvalidUtf8,
    /// A label with an empty name.
    #[error("label with an empty name")]
    EmptyLabelName,
}

fn keep_in_metric(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '_' | ':' | '.' | '-')
        || (!c.is_ascii() && !c.is_control() && !is_python_space(c))
}

fn keep_in_tag(c: char) -> bool {
    !matches!(c, ';' | '!' | '^' | '=' | '%') && !c.is_control()
}

fn keep_in_value(c: char) -> bool {
    !matches!(c, ';' | '%') && !c.is_control()
}

/// Per ASCII byte: kept in a metric, in a tag name, in a tag value (bits 0, 1, 2),
/// the same answers as the `keep_in_*` functions, looked up on the hot path.
const ASCII_KEEP: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let control = c < 0x20 || c == 0x7F;
        if c.is_ascii_alphanumeric() || matches!(c, b'_' | b':' | b'.' | b'-') {
            t[b] |= METRIC;
        }
        if !control && !matches!(c, b';' | b'!' | b'^' | b'=' | b'%') {
            t[b] |= TAG;
        }
        if !control && !matches!(c, b';' | b'%') {
            t[b] |= VALUE;
        }
        b += 1;
    }
    t
};
const METRIC: u8 = 1;
const TAG: u8 = 2;
const VALUE: u8 = 4;

/// `text` with every character `keep` refuses percent-encoded (and a leading `~` too
/// when `tilde` is set); borrowed when nothing needed it. `class` is `keep`'s bit in
/// [`ASCII_KEEP`], for the common all-ASCII text.
fn escape(text: &str, keep: fn(char) -> bool, class: u8, tilde: bool) -> Cow<'_, str> {
    let ascii_clean = text.bytes().all(|b| {
        ASCII_KEEP
            .get(usize::from(b))
            .is_some_and(|k| k & class != 0)
    });
    let clean = (ascii_clean || text.chars().all(keep)) && !(tilde && text.starts_with('~'));
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in text.char_indices() {
        if keep(c) && !(tilde && i == 0 && c == '~') {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    Cow::Owned(out)
}

/// Builds the Graphite name of a series from its labels (raw protobuf strings) into
/// `out`. `tags` is scratch space reused between series.
pub(super) fn graphite_name<'a>(
    labels: &[(&'a [u8], &'a [u8])],
    tags: &mut Vec<(Cow<'a, str>, Cow<'a, str>)>,
    out: &mut String,
) -> Result<(), LabelError> {
    tags.clear();
    out.clear();
    let mut metric: Option<&str> = None;
    for &(k, v) in labels {
        let k = std::str::from_utf8(k).map_err(|_| LabelError::InvalidUtf8)?;
        let v = std::str::from_utf8(v).map_err(|_| LabelError::InvalidUtf8)?;
        if k == "__name__" {
            metric = Some(v);
            continue;
        }
        if k.is_empty() {
            return Err(LabelError::EmptyLabelName);
        }
        if v.is_empty() {
            continue;
        }
        tags.push((
            escape(k, keep_in_tag, TAG, false),
            escape(v, keep_in_value, VALUE, true),
        ));
    }
    let metric = metric.filter(|m| !m.is_empty()).ok_or(LabelError::NoName)?;
    out.push_str(&escape(metric, keep_in_metric, METRIC, false));
    if tags.is_empty() {
        return Ok(());
    }
    rename_name_tag(tags);
    sort_unique(tags);
    for (k, v) in tags.iter() {
        out.push(';');
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    Ok(())
}

/// `name` → `exported_name` (with more `exported_` while that is taken).
fn rename_name_tag(tags: &mut [(Cow<'_, str>, Cow<'_, str>)]) {
    if !tags.iter().any(|(k, _)| k == "name") {
        return;
    }
    let mut renamed = String::from("exported_name");
    while tags.iter().any(|(k, _)| *k == renamed) {
        renamed.insert_str(0, "exported_");
    }
    for (k, _) in tags.iter_mut() {
        if k == "name" {
            *k = Cow::Owned(renamed.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(labels: &[(&str, &str)]) -> Result<String, LabelError> {
        let raw: Vec<(&[u8], &[u8])> = labels
            .iter()
            .map(|(k, v)| (k.as_bytes(), v.as_bytes()))
            .collect();
        let mut tags = Vec::new();
        let mut out = String::new();
        graphite_name(&raw, &mut tags, &mut out).map(|()| out)
    }

    #[test]
    fn prometheus_series() {
        assert_eq!(
            name(&[
                ("__name__", "http_requests_total"),
                ("job", "api"),
                ("instance", "10.0.0.1:9100")
            ])
            .unwrap(),
            "http_requests_total;instance=10.0.0.1:9100;job=api"
        );
        assert_eq!(name(&[("__name__", "up")]).unwrap(), "up");
        assert_eq!(
            name(&[("__name__", "job:rate5m"), ("le", "+Inf"), ("empty", "")]).unwrap(),
            "job:rate5m;le=+Inf"
        );
        // OpenTelemetry's dotted names are paths
        assert_eq!(
            name(&[
                ("__name__", "http.server.duration"),
                ("service.name", "cart")
            ])
            .unwrap(),
            "http.server.duration;service.name=cart"
        );
    }

    #[test]
    fn what_carbon_refuses_is_percent_encoded() {
        assert_eq!(
            name(&[("__name__", "a b/c;d%e~f*{x}")]).unwrap(),
            "a%20b%2Fc%3Bd%25e%7Ef%2A%7Bx%7D"
        );
        assert_eq!(
            name(&[
                ("__name__", "m"),
                ("path", "/a;b?c=d%20"),
                ("q", "~x~"),
                ("d", "a b")
            ])
            .unwrap(),
            "m;d=a b;path=/a%3Bb?c=d%2520;q=%7Ex~"
        );
        assert_eq!(
            name(&[("__name__", "m"), ("k=1", "v"), ("x!^", "\n")]).unwrap(),
            "m;k%3D1=v;x%21%5E=%0A"
        );
        assert_eq!(
            name(&[("__name__", "caf\u{e9}\u{3000}x")]).unwrap(),
            "caf\u{e9}%E3%80%80x"
        );
        // injective: these stay apart
        assert_ne!(
            name(&[("__name__", "m"), ("k", "a;b")]).unwrap(),
            name(&[("__name__", "m"), ("k", "a%3Bb")]).unwrap()
        );
    }

    #[test]
    fn the_name_label_and_duplicates() {
        assert_eq!(
            name(&[("__name__", "m"), ("name", "x"), ("job", "j")]).unwrap(),
            "m;exported_name=x;job=j"
        );
        assert_eq!(
            name(&[("__name__", "m"), ("name", "x"), ("exported_name", "y")]).unwrap(),
            "m;exported_exported_name=x;exported_name=y"
        );
        assert_eq!(
            name(&[("__name__", "m"), ("k", "1"), ("k", "2")]).unwrap(),
            "m;k=2"
        );
        assert_eq!(name(&[("__name__", "a"), ("__name__", "b")]).unwrap(), "b");
    }

    #[test]
    fn the_ascii_table_agrees_with_the_rules() {
        for b in 0u8..128 {
            let c = char::from(b);
            let k = ASCII_KEEP[usize::from(b)];
            assert_eq!(k & METRIC != 0, keep_in_metric(c), "{b:#x}");
            assert_eq!(k & TAG != 0, keep_in_tag(c), "{b:#x}");
            assert_eq!(k & VALUE != 0, keep_in_value(c), "{b:#x}");
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(name(&[("job", "x")]), Err(LabelError::NoName));
        assert_eq!(name(&[("__name__", "")]), Err(LabelError::NoName));
        assert_eq!(
            name(&[("__name__", "m"), ("", "v")]),
            Err(LabelError::EmptyLabelName)
        );
        let mut tags = Vec::new();
        let mut out = String::new();
        let bad: [(&[u8], &[u8]); 1] = [(b"__name__", b"\xff")];
        assert_eq!(
            graphite_name(&bad, &mut tags, &mut out),
            Err(LabelError::InvalidUtf8)
        );
    }
}
