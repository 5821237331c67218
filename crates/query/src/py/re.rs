//! Python's `re` where graphite-web functions use it on series names: `re.search`
//! (`grep`, `exclude`) and `re.sub` (`aliasSub`, `aliasQuery`, `useSeriesAbove`).
//!
//! Patterns go to the `regex` crate after two spellings are adapted: Python's `\Z`
//! (end of text) becomes `\z`, and a `{` that does not open a repetition (`a{`, `{x}`)
//! is a literal, as Python reads it. What `regex` cannot do (look-around,
//! back-references) is refused with the compile error.
//!
//! `re.sub` differs from `Regex::replace_all` in two ways reproduced here: the
//! replacement template is Python's (`\1`, `\g<name>`, `\g<0>`, `\n`; `$` is a plain
//! character), and an empty match right after a non-empty one is replaced too
//! (Python 3.7+: `re.sub('x*', '-', 'abxd')` is `-a-b--d-`).

use regex::{Captures, Regex};

/// A pattern or template Python would refuse (graphite-web fails with `re.error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PyReError {
    #[error("invalid regular expression {pattern:?}: {message}")]
    Pattern { pattern: String, message: String },
    #[error("invalid replacement {template:?}: {message}")]
    Template { template: String, message: String },
}

/// Compiles a Python regular expression.
pub(crate) fn compile(pattern: &str) -> Result<Regex, PyReError> {
    Regex::new(&adapt(pattern)).map_err(|e| PyReError::Pattern {
        pattern: pattern.to_string(),
        message: e
            .to_string()
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .to_string(),
    })
}

/// Python spellings the `regex` crate reads differently.
fn adapt(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                if next == 'Z' && !in_class {
                    out.push_str("\\z");
                } else {
                    out.push(c);
                    out.push(next);
                }
                i += 2;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // a `]` (or `^]`) right after the opening bracket is a literal
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '{' if !in_class && !opens_repetition(&chars[i..]) => out.push_str("\\{"),
            '}' if !in_class && !closes_repetition(&chars[..i]) => out.push_str("\\}"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// `{m}`, `{m,}`, `{,n}`, `{m,n}` (Python's repetition forms).
fn opens_repetition(rest: &[char]) -> bool {
    let Some(close) = rest.iter().position(|&c| c == '}') else {
        return false;
    };
    let body: String = rest[1..close].iter().collect();
    let (lo, hi) = match body.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (body.as_str(), None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    match hi {
        None => !lo.is_empty() && digits(lo),
        Some(hi) => digits(lo) && digits(hi) && !(lo.is_empty() && hi.is_empty()),
    }
}

fn closes_repetition(before: &[char]) -> bool {
    let Some(open) = before.iter().rposition(|&c| c == '{') else {
        return false;
    };
    // the `{` must itself be unescaped and open a repetition ending here
    let escaped = open > 0 && before[open - 1] == '\\';
    let mut rest: Vec<char> = before[open..].to_vec();
    rest.push('}');
    !escaped && opens_repetition(&rest)
}

/// A parsed Python replacement template.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Group(usize),
}

/// `re.sub(pattern, template, text)` with a compiled pattern.
pub(crate) struct Substitution {
    regex: Regex,
    pieces: Vec<Piece>,
}

impl Substitution {
    pub(crate) fn new(pattern: &str, template: &str) -> Result<Substitution, PyReError> {
        let regex = compile(pattern)?;
        let pieces = parse_template(template, &regex)?;
        Ok(Substitution { regex, pieces })
    }

    /// Every non-overlapping match replaced, Python's way.
    pub(crate) fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 16);
        let mut last = 0;
        let mut pos = 0;
        let mut must_advance = false;
        while pos <= text.len() {
            let Some(caps) = self.regex.captures_at(text, pos) else {
                break;
            };
            let Some(m) = caps.get(0) else {
                break;
            };
            if must_advance && m.start() == pos && m.end() == pos {
                // an empty match where the previous empty one ended: look one
                // character further
                match text[pos..].chars().next() {
                    Some(c) => {
                        pos += c.len_utf8();
                        must_advance = false;
                        continue;
                    }
                    None => break,
                }
            }
            out.push_str(&text[last..m.start()]);
            self.expand(&caps, &mut out);
            last = m.end();
            must_advance = m.start() == m.end();
            pos = m.end();
        }
        out.push_str(&text[last..]);
        out
    }

    fn expand(&self, caps: &Captures<'_>, out: &mut String) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Group(g) => {
                    if let Some(m) = caps.get(*g) {
                        out.push_str(m.as_str());
                    }
                }
            }
        }
    }
}

/// Python's `sre_parse.parse_template`.
fn parse_template(template: &str, regex: &Regex) -> Result<Vec<Piece>, PyReError> {
    let bad = |message: String| PyReError::Template {
        template: template.to_string(),
        message,
    };
    let groups = regex.captures_len();
    let group = |g: usize| -> Result<Piece, PyReError> {
        if g < groups {
            Ok(Piece::Group(g))
        } else {
            Err(bad(format!("invalid group reference {g}")))
        }
    };
    let mut pieces: Vec<Piece> = Vec::new();
    let mut text = String::new();
    let chars: Vec<char> = template.chars().collect();
    let mut i = 0;
    let push_group = |pieces: &mut Vec<Piece>, text: &mut String, p: Piece| {
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(text)));
        }
        pieces.push(p);
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' {
            text.push(c);
            i += 1;
            continue;
        }
        let Some(&next) = chars.get(i + 1) else {
            return Err(bad("bad escape (end of pattern)".to_string()));
        };
        i += 2;
        match next {
            'g' => {
                if chars.get(i) != Some(&'<') {
                    return Err(bad("missing <".to_string()));
                }
                let Some(len) = chars[i + 1..].iter().position(|&c| c == '>') else {
                    return Err(bad("missing >, unterminated name".to_string()));
                };
                let name: String = chars[i + 1..i + 1 + len].iter().collect();
                i += len + 2;
                let piece = if let Ok(n) = name.parse::<usize>() {
                    group(n)?
                } else {
                    let index = regex
                        .capture_names()
                        .position(|n| n == Some(name.as_str()))
                        .ok_or_else(|| bad(format!("unknown group name {name:?}")))?;
                    Piece::Group(index)
                };
                push_group(&mut pieces, &mut text, piece);
            }
            '0' => {
                // an octal escape: up to two more octal digits
                let mut value = 0u32;
                let mut taken = 0;
                while taken < 2 && chars.get(i).is_some_and(|c| ('0'..='7').contains(c)) {
                    value = value * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    taken += 1;
                }
                text.push(char::from_u32(value).unwrap_or('\0'));
            }
            '1'..='9' => {
                let mut n = next.to_digit(10).unwrap_or(0) as usize;
                if let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                    let octal = next <= '7'
                        && chars.get(i).is_some_and(|c| ('0'..='7').contains(c))
                        && chars.get(i + 1).is_some_and(|c| ('0'..='7').contains(c));
                    if octal {
                        let v = next.to_digit(8).unwrap_or(0) * 64
                            + chars[i].to_digit(8).unwrap_or(0) * 8
                            + chars[i + 1].to_digit(8).unwrap_or(0);
                        if v > 0o377 {
                            return Err(bad("octal escape value outside of range 0-0o377".into()));
                        }
                        text.push(char::from_u32(v).unwrap_or('\0'));
                        i += 2;
                        continue;
                    }
                    n = n * 10 + d as usize;
                    i += 1;
                }
                let piece = group(n)?;
                push_group(&mut pieces, &mut text, piece);
            }
            'a' => text.push('\x07'),
            'b' => text.push('\x08'),
            'f' => text.push('\x0c'),
            'n' => text.push('\n'),
            'r' => text.push('\r'),
            't' => text.push('\t'),
            'v' => text.push('\x0b'),
            '\\' => text.push('\\'),
            c if c.is_ascii_alphabetic() => {
                return Err(bad(format!("bad escape \\{c}")));
            }
            c => {
                text.push('\\');
                text.push(c);
            }
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(p: &str, r: &str, s: &str) -> String {
        Substitution::new(p, r).unwrap().apply(s)
    }

    #[test]
    fn like_python_re_sub() {
        // each checked against CPython 3.11's re.sub
        assert_eq!(sub("x*", "-", "abxd"), "-a-b--d-");
        assert_eq!(sub(".*", "X", "abc"), "XX");
        assert_eq!(sub("b*", "-", "abbc"), "-a--c-");
        assert_eq!(sub("", "-", "ab"), "-a-b-");
        assert_eq!(sub("(^.*$)", "\\1 A", "a.b.c"), "a.b.c A");
        assert_eq!(
            sub("^a\\.(\\w+)\\.(\\w+)", "\\2-\\g<1>", "a.b.c.d"),
            "c-b.d"
        );
        assert_eq!(
            sub("(?P<host>web\\d+)", "h=\\g<host>$", "x.web01.y"),
            "x.h=web01$.y"
        );
        assert_eq!(sub("(a)|(b)", "[\\2]", "ab"), "[][b]");
        assert_eq!(sub("c", "\\n\\\\", "c"), "\n\\");
        assert_eq!(sub("c", "\\.", "c"), "\\.");
        assert_eq!(sub("é", "e", "café.é"), "cafe.e");
    }

    #[test]
    fn python_spellings() {
        assert!(compile("a\\Z").unwrap().is_match("xa"));
        assert!(!compile("a\\Z").unwrap().is_match("ab"));
        assert!(compile("a{").unwrap().is_match("a{"));
        assert!(compile("{x}").unwrap().is_match("{x}"));
        assert!(compile("a{2}").unwrap().is_match("aa"));
        assert!(!compile("^a{2}$").unwrap().is_match("a{2}"));
        assert!(compile("[]a]").unwrap().is_match("]"));
    }

    #[test]
    fn refusals() {
        assert!(compile("(?<=a)b").is_err());
        assert!(compile("(").is_err());
        assert!(Substitution::new("(a)", "\\2").is_err());
        assert!(Substitution::new("a", "\\q").is_err());
        assert!(Substitution::new("a", "\\g<nope>").is_err());
    }
}
