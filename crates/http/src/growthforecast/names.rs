//! GrowthForecast names as Graphite nodes.
//!
//! A GrowthForecast graph `service/section/graph` is the sumi series
//! `<service>.<section>.<graph>`, each name escaped into one node:
//!
//! - the bytes `A`–`Z`, `a`–`z`, `0`–`9`, `_` and `-` stay as they are;
//! - every other byte of the name's UTF-8 (`.`, `%`, space, `*`, non-ASCII, …)
//!   becomes `%` and two upper-case hex digits, as in a URL.
//!
//! The result is printable ASCII without a dot, a glob character, a bracket, a
//! comma, a quote or a space, so it survives carbon's plaintext protocol, Graphite's
//! target grammar and glob matching unchanged, and the rule is reversible (the
//! tests' `unescape_node` gives the original name back). `%` was chosen because graphite-web
//! accepts it bare in a target and everyone knows how to read it.

use std::fmt::Write;

/// The longest GrowthForecast name accepted (GrowthForecast's columns are
/// `VARCHAR(255)`).
pub const MAX_NAME_CHARS: usize = 255;

/// A node that is not the escaped form of any name.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NodeError {
    #[error("node {node:?} has a bad escape at byte {at} (expected % and two hex digits)")]
    BadEscape { node: String, at: usize },
    #[error("node {node:?} has {ch:?} unescaped (only A-Z a-z 0-9 _ - stay as they are)")]
    Unescaped { node: String, ch: char },
    #[error("node {0:?} does not decode to UTF-8")]
    NotUtf8(String),
    #[error("a path of a GrowthForecast graph has three nodes; {0:?} has another count")]
    NodeCount(String),
}

/// Why a service, section or graph name cannot name a graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{what} is empty")]
    Empty { what: &'static str },
    #[error("{what} is longer than {MAX_NAME_CHARS} characters")]
    TooLong { what: &'static str },
    #[error("{what} contains a control character")]
    Control { what: &'static str },
}

fn keeps(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The node of one name.
pub fn escape_node(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for &b in name.as_bytes() {
        if keeps(b) {
            out.push(b as char);
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The name a node was escaped from (the inverse of [`escape_node`], which only the
/// tests need).
#[cfg(test)]
fn unescape_node(node: &str) -> Result<String, NodeError> {
    let bytes = node.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(v) => out.push(v),
                None => {
                    return Err(NodeError::BadEscape {
                        node: node.to_string(),
                        at: i,
                    })
                }
            }
            i += 3;
        } else if keeps(b) {
            out.push(b);
            i += 1;
        } else {
            let ch = node[i..].chars().next().unwrap_or('?');
            return Err(NodeError::Unescaped {
                node: node.to_string(),
                ch,
            });
        }
    }
    String::from_utf8(out).map_err(|_| NodeError::NotUtf8(node.to_string()))
}

/// Checks one of the three names of a graph.
pub fn check_name(what: &'static str, name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { what });
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(NameError::TooLong { what });
    }
    if name.chars().any(char::is_control) {
        return Err(NameError::Control { what });
    }
    Ok(())
}

/// The sumi series of a graph: `<service>.<section>.<graph>`, each escaped.
pub fn series_name(service: &str, section: &str, graph: &str) -> String {
    format!(
        "{}.{}.{}",
        escape_node(service),
        escape_node(section),
        escape_node(graph)
    )
}

/// The three names behind a series path, when it has the shape of a graph's.
#[cfg(test)]
fn split_series(path: &str) -> Result<(String, String, String), NodeError> {
    let mut nodes = path.split('.');
    match (nodes.next(), nodes.next(), nodes.next(), nodes.next()) {
        (Some(a), Some(b), Some(c), None) => {
            Ok((unescape_node(a)?, unescape_node(b)?, unescape_node(c)?))
        }
        _ => Err(NodeError::NodeCount(path.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_stay() {
        assert_eq!(escape_node("total_entry-2"), "total_entry-2");
        assert_eq!(
            series_name("socialgame", "member", "register"),
            "socialgame.member.register"
        );
    }

    #[test]
    fn everything_else_is_percent_escaped() {
        assert_eq!(escape_node("a.b"), "a%2Eb");
        assert_eq!(escape_node("50%"), "50%25");
        assert_eq!(escape_node("load avg"), "load%20avg");
        assert_eq!(escape_node("*{x,y}[z]"), "%2A%7Bx%2Cy%7D%5Bz%5D");
        assert_eq!(
            escape_node("ユーザー"),
            "%E3%83%A6%E3%83%BC%E3%82%B6%E3%83%BC"
        );
        assert_eq!(escape_node("a/b"), "a%2Fb");
    }

    #[test]
    fn round_trip() {
        for name in [
            "blog",
            "a.b.c",
            "%41",
            "100%",
            "日本語 の グラフ",
            "quote\"'(),=\\;~",
            "emoji 📈",
            "-_",
        ] {
            let node = escape_node(name);
            assert!(
                node.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"%_-".contains(&b)),
                "{node}"
            );
            assert_eq!(unescape_node(&node).as_deref(), Ok(name));
        }
        let path = series_name("my.service", "sec tion", "g%");
        assert_eq!(path, "my%2Eservice.sec%20tion.g%25");
        assert_eq!(
            split_series(&path),
            Ok(("my.service".into(), "sec tion".into(), "g%".into()))
        );
    }

    #[test]
    fn bad_nodes_are_refused() {
        assert!(matches!(
            unescape_node("a%4"),
            Err(NodeError::BadEscape { at: 1, .. })
        ));
        assert!(matches!(
            unescape_node("a%zz"),
            Err(NodeError::BadEscape { .. })
        ));
        assert!(matches!(
            unescape_node("a b"),
            Err(NodeError::Unescaped { ch: ' ', .. })
        ));
        assert!(matches!(unescape_node("%FF"), Err(NodeError::NotUtf8(_))));
        assert!(matches!(split_series("a.b"), Err(NodeError::NodeCount(_))));
        assert!(unescape_node("é").is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("graph name", "ok").is_ok());
        assert_eq!(
            check_name("graph name", ""),
            Err(NameError::Empty { what: "graph name" })
        );
        assert!(check_name("x", &"a".repeat(256)).is_err());
        assert!(check_name("x", &"あ".repeat(255)).is_ok());
        assert!(check_name("x", "a\nb").is_err());
    }
}
