//! The target language: `sumSeries(servers.web*.cpu.{user,system})`, parsed exactly
//! as graphite-web 1.1.10's pyparsing grammar parses it (`parser.rs` says how), into
//! the tree of [`ast`].
//!
//! Two entry points:
//! - [`parse`] is graphite-web's behaviour: the longest expression at the start of the
//!   text wins and whatever follows is ignored (so a malformed call reads as the path
//!   of its name and usually yields no series rather than an error). It fails only when
//!   no expression starts the text at all.
//! - [`parse_strict`] also refuses trailing text, and then reports the furthest point
//!   the parser reached and what it expected there: for users who would rather see
//!   `expected ')' at position 13` than an empty graph.

pub mod ast;
mod parser;

pub use ast::{Arg, Call, Expr, Literal, RawText, Template};

use crate::py;

/// The longest piece of a target quoted in an error message, in characters.
const QUOTE_LIMIT: usize = 120;

/// Why a target could not be parsed. graphite-web answers these with an error page;
/// sumi's HTTP layer answers 400 with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid target {target:?}: {}", self.describe())]
pub struct ParseError {
    /// The target (tab-expanded, shortened when long).
    pub target: String,
    /// Characters from the start of the (tab-expanded) target.
    pub position: usize,
    /// What would have been accepted at `position`.
    pub expected: Vec<&'static str>,
    /// The character found there; `None` at the end of the text.
    pub found: Option<char>,
    /// Nesting deeper than the parser allows.
    pub too_deep: bool,
}

impl ParseError {
    fn describe(&self) -> String {
        if self.too_deep {
            return format!("nested deeper than {} levels", parser::MAX_DEPTH);
        }
        let expected = match self.expected.as_slice() {
            [] => "something else".to_string(),
            [one] => (*one).to_string(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
        };
        let found = match self.found {
            Some(c) => format!("found {c:?}"),
            None => "found the end of the target".to_string(),
        };
        format!("expected {expected} at position {}, {found}", self.position)
    }
}

/// A parsed target and how much of the text it used.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub expr: Expr,
    /// Characters of the tab-expanded text the expression took; graphite-web ignores
    /// the rest.
    pub consumed: usize,
    /// Whether anything but white space follows the expression.
    pub trailing: bool,
}

/// Parses a target as graphite-web does (see the module documentation): text after
/// the first complete expression is ignored.
pub fn parse(target: &str) -> Result<Parsed, ParseError> {
    let expanded = py::expandtabs(target);
    let chars: Vec<char> = expanded.chars().collect();
    let mut p = parser::Parser::new(&chars);
    let result = p.expression(0);
    if p.too_deep {
        return Err(error(&chars, &p, 0, true));
    }
    match result {
        Some((expr, consumed)) => {
            let trailing = p.ws(consumed) < chars.len();
            Ok(Parsed {
                expr,
                consumed,
                trailing,
            })
        }
        None => Err(error(&chars, &p, 0, false)),
    }
}

/// Parses a target and refuses anything but white space after it.
pub fn parse_strict(target: &str) -> Result<Expr, ParseError> {
    let expanded = py::expandtabs(target);
    let chars: Vec<char> = expanded.chars().collect();
    let mut p = parser::Parser::new(&chars);
    let result = p.expression(0);
    if p.too_deep {
        return Err(error(&chars, &p, 0, true));
    }
    match result {
        Some((expr, consumed)) => {
            let rest = p.ws(consumed);
            if rest == chars.len() {
                return Ok(expr);
            }
            // the parser stopped early: report the furthest point it reached
            if p.furthest < rest {
                p.furthest = rest;
                p.expected = vec!["the end of the target"];
            } else if p.furthest == rest {
                p.expected.push("the end of the target");
            }
            Err(error(&chars, &p, rest, false))
        }
        None => Err(error(&chars, &p, 0, false)),
    }
}

fn error(chars: &[char], p: &parser::Parser<'_>, at_least: usize, too_deep: bool) -> ParseError {
    let position = p.furthest.max(at_least);
    let target: String = if chars.len() > QUOTE_LIMIT {
        chars[..QUOTE_LIMIT]
            .iter()
            .chain("...".chars().collect::<Vec<_>>().iter())
            .collect()
    } else {
        chars.iter().collect()
    };
    ParseError {
        target,
        position,
        expected: if position == p.furthest {
            p.expected.clone()
        } else {
            Vec::new()
        },
        found: chars.get(position).copied(),
        too_deep,
    }
}

#[cfg(test)]
mod tests;
