//! Metric paths: dot-separated nodes, `servers.web01.cpu.user`.
//!
//! carbon stores `a..b` in the whisper file `a/b.wsp` (the empty node vanishes in the
//! file system), so graphite-web shows it as `a.b`. sumi does the same on purpose:
//! empty nodes are dropped, and callers can count that they were. What carbon would
//! turn into something else entirely (control characters, invalid UTF-8, an empty
//! name) is refused.

use std::borrow::Cow;

/// The longest metric path sumi accepts, in bytes. Longer names are refused (carbon's
/// file system would refuse them too: 255 bytes a node, 4096 a path).
pub const MAX_NAME_BYTES: usize = 4096;

/// Why a raw name was refused. `reason()` is the label used in counters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("empty metric name")]
    Empty,
    #[error("metric name is not valid UTF-8")]
    InvalidUtf8,
    #[error("metric name contains control character 0x{0:02x}")]
    ControlChar(u8),
    #[error("metric name is {0} bytes long (limit {MAX_NAME_BYTES})")]
    TooLong(usize),
}

impl NameError {
    pub fn reason(&self) -> &'static str {
        match self {
            NameError::Empty => "empty_name",
            NameError::InvalidUtf8 => "invalid_utf8",
            NameError::ControlChar(_) => "control_char",
            NameError::TooLong(_) => "name_too_long",
        }
    }
}

/// A raw name turned into a metric path: borrowed when it was already clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized<'a> {
    pub path: Cow<'a, str>,
    /// Empty nodes were dropped (`a..b` became `a.b`).
    pub dropped_empty_nodes: bool,
}

/// Checks a raw metric name and drops empty nodes. A tagged name (`name;tag=value`,
/// issue of its own) keeps everything after the first `;` untouched.
pub fn normalize(raw: &[u8]) -> Result<Normalized<'_>, NameError> {
    if raw.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong(raw.len()));
    }
    if let Some(&c) = raw.iter().find(|&&b| is_control(b)) {
        return Err(NameError::ControlChar(c));
    }
    let text = std::str::from_utf8(raw).map_err(|_| NameError::InvalidUtf8)?;
    normalize_str(text)
}

fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// [`normalize`] of a name already known to be UTF-8 (a field of a validated line):
/// the same answers without validating the UTF-8 again. The checks are whole-slice
/// scans (vectorised, `memchr`), which beat one branchy loop over the bytes.
pub fn normalize_str(text: &str) -> Result<Normalized<'_>, NameError> {
    let raw = text.as_bytes();
    if raw.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong(raw.len()));
    }
    if raw.iter().fold(false, |a, &b| a | is_control(b)) {
        if let Some(&c) = raw.iter().find(|&&b| is_control(b)) {
            return Err(NameError::ControlChar(c));
        }
    }
    let (path, tags) = match text.find(';') {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    let clean =
        !path.is_empty() && !path.starts_with('.') && !path.ends_with('.') && !path.contains("..");
    if clean {
        return Ok(Normalized {
            path: Cow::Borrowed(text),
            dropped_empty_nodes: false,
        });
    }
    let mut out = String::with_capacity(text.len());
    for node in path.split('.').filter(|n| !n.is_empty()) {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(node);
    }
    if out.is_empty() {
        return Err(NameError::Empty);
    }
    out.push_str(tags);
    Ok(Normalized {
        path: Cow::Owned(out),
        dropped_empty_nodes: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks agree with the rules written plainly, on every short name
    /// over an alphabet of dots, semicolons, letters and a control character.
    #[test]
    fn checks_match_the_plain_rules() {
        fn plain(text: &str) -> Result<(String, bool), NameError> {
            if let Some(&c) = text.as_bytes().iter().find(|&&b| b < 0x20 || b == 0x7f) {
                return Err(NameError::ControlChar(c));
            }
            let (path, tags) = text.split_at(text.find(';').unwrap_or(text.len()));
            let nodes: Vec<&str> = path.split('.').filter(|n| !n.is_empty()).collect();
            if nodes.is_empty() {
                return Err(NameError::Empty);
            }
            let out = nodes.join(".") + tags;
            let changed = out != text;
            Ok((out, changed))
        }
        let alphabet = ['.', ';', 'a', 'b', '\u{1}', '\u{e9}'];
        let mut names = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = names
                .iter()
                .flat_map(|n| alphabet.iter().map(move |c| format!("{n}{c}")))
                .collect();
            names.extend(longer);
        }
        names.sort();
        names.dedup();
        assert!(names.len() > 9000);
        for n in &names {
            let got = normalize_str(n).map(|x| (x.path.into_owned(), x.dropped_empty_nodes));
            assert_eq!(got, plain(n), "{n:?}");
            let bytes =
                normalize(n.as_bytes()).map(|x| (x.path.into_owned(), x.dropped_empty_nodes));
            assert_eq!(bytes, plain(n), "{n:?}");
        }
    }

    #[test]
    fn clean_names_are_borrowed() {
        let n = normalize(b"servers.web01.cpu.user").unwrap();
        assert!(matches!(n.path, Cow::Borrowed("servers.web01.cpu.user")));
        assert!(!n.dropped_empty_nodes);
        let n = normalize("caf\u{e9}.latency".as_bytes()).unwrap();
        assert_eq!(n.path, "caf\u{e9}.latency");
    }

    #[test]
    fn empty_nodes_are_dropped_like_carbon_on_disk() {
        for (raw, want) in [
            ("a..b", "a.b"),
            (".a.b", "a.b"),
            ("a.b.", "a.b"),
            ("a...b..c", "a.b.c"),
        ] {
            let n = normalize(raw.as_bytes()).unwrap();
            assert_eq!(n.path, want);
            assert!(n.dropped_empty_nodes);
        }
        let n = normalize(b"a..b;tag=x..y").unwrap();
        assert_eq!(n.path, "a.b;tag=x..y");
    }

    #[test]
    fn refusals() {
        assert_eq!(normalize(b""), Err(NameError::Empty));
        assert_eq!(normalize(b"..."), Err(NameError::Empty));
        assert_eq!(normalize(b"a\x00b"), Err(NameError::ControlChar(0)));
        assert_eq!(normalize(b"a\x7fb"), Err(NameError::ControlChar(0x7f)));
        assert_eq!(normalize(b"a\xffb"), Err(NameError::InvalidUtf8));
        let long = vec![b'a'; MAX_NAME_BYTES + 1];
        assert_eq!(
            normalize(&long),
            Err(NameError::TooLong(MAX_NAME_BYTES + 1))
        );
    }
}
