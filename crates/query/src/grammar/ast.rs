//! The syntax tree of a target, and its canonical spelling.
//!
//! `Display` writes a tree back as a target that parses to the same tree (the
//! round-trip tests hold it to that): no spaces, `,` between arguments, pipes kept as
//! pipes, strings in the quotes they can be written in, floats in a form the grammar
//! reads as a float, and metric paths escaped only where they must be.

use std::fmt::{self, Write as _};

use super::parser;

/// A target expression: what `target=` holds, and what a series-list argument holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A metric path or glob pattern as graphite-web passes it to the finders, with
    /// the grammar's escapes (`\(`, `\,`, …) already removed: `servers.web*.cpu`.
    Path(String),
    Call(Call),
    Template(Template),
}

/// A function call: `name(args…, key=value…)`, positional arguments first.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Vec<Arg>,
    /// In the order written. graphite-web keeps the last value of a repeated key.
    pub kwargs: Vec<(String, Arg)>,
    /// Written as `first|name(rest…)`: the first argument came through a pipe.
    /// Evaluation does not care; printing does.
    pub piped: bool,
    /// The call as written (graphite-web's `raw`, what `seriesByTag` passes on).
    pub raw: RawText,
}

/// One argument of a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Expr(Expr),
    Literal(Literal),
}

/// A constant argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `-?\d+`. Integers beyond `i64` are read as [`Literal::Float`].
    Int(i64),
    /// `1.5`, `-0.5`, `1e-3`, `2.5E10` (an overflowing exponent gives ±infinity).
    Float(f64),
    /// The characters between the quotes, exactly as written: graphite-web does not
    /// interpret backslashes or doubled quotes, so neither does sumi.
    Str(String),
    /// `true`/`false`, in any case.
    Bool(bool),
    /// `none`, in any case.
    None,
    /// `inf`, in any case: positive infinity.
    Inf,
}

/// `template(inner, args…)` or `template(inner, key=value…)`: `$1`, `$2`… or `$key`
/// in the paths of `inner` are replaced by the arguments (and by the request's
/// `template[key]=` parameters, which win) before evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    /// A [`Expr::Path`] or an [`Expr::Call`].
    pub inner: Box<Expr>,
    /// Numbers and strings only.
    pub args: Vec<Literal>,
    pub kwargs: Vec<(String, Literal)>,
}

/// Source text carried for reference only: it never makes two trees unequal, so that a
/// tree parsed from `f( a )` equals the one parsed from `f(a)`.
#[derive(Clone, Debug, Default)]
pub struct RawText(pub String);

impl PartialEq for RawText {
    fn eq(&self, _other: &RawText) -> bool {
        true
    }
}

impl RawText {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_expr(&mut s, self, false);
        f.write_str(&s)
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_call(&mut s, self);
        f.write_str(&s)
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_literal(&mut s, self);
        f.write_str(&s)
    }
}

fn write_expr(out: &mut String, expr: &Expr, in_arg: bool) {
    match expr {
        Expr::Path(p) => write_path(out, p, in_arg),
        Expr::Call(c) => write_call(out, c),
        Expr::Template(t) => {
            out.push_str("template(");
            write_expr(out, &t.inner, false);
            for a in &t.args {
                out.push(',');
                write_literal(out, a);
            }
            for (k, v) in &t.kwargs {
                let _ = write!(out, ",{k}=");
                write_literal(out, v);
            }
            out.push(')');
        }
    }
}

fn write_call(out: &mut String, call: &Call) {
    // The pipe form is only readable back when the piped value is an expression and
    // the call keeps a positional argument or has no keyword ones (`a|f(k=1)` does not
    // parse as a pipe in graphite-web).
    let pipe_ok = call.piped
        && matches!(call.args.first(), Some(Arg::Expr(_)))
        && (call.args.len() > 1 || call.kwargs.is_empty());
    let mut args = call.args.iter();
    if pipe_ok {
        if let Some(Arg::Expr(first)) = args.next() {
            write_expr(out, first, true);
            out.push('|');
        }
    }
    out.push_str(&call.name);
    out.push('(');
    let mut first = true;
    for a in args {
        if !first {
            out.push(',');
        }
        first = false;
        match a {
            Arg::Expr(e) => write_expr(out, e, true),
            Arg::Literal(l) => write_literal(out, l),
        }
    }
    for (k, v) in &call.kwargs {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(k);
        out.push('=');
        match v {
            Arg::Expr(e) => write_expr(out, e, true),
            Arg::Literal(l) => write_literal(out, l),
        }
    }
    out.push(')');
}

/// A path as written when that reads back as the same path (and, as an argument, not
/// as a keyword argument or a constant); otherwise with every grammar symbol escaped.
fn write_path(out: &mut String, path: &str, in_arg: bool) {
    let kwarg_like = in_arg && {
        let ident = path
            .char_indices()
            .take_while(|&(i, c)| {
                c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
            })
            .count();
        ident > 0 && path[ident..].starts_with('=')
    };
    // `-1\.5E-3` is a path only thanks to its escape: bare, an argument would read as
    // a number
    let literal_like = in_arg && parser::reads_as_literal_arg(path);
    if !kwarg_like && !literal_like && parser::reads_as_path(path) {
        out.push_str(path);
        return;
    }
    for c in path.chars() {
        if parser::is_escapable(c) {
            out.push('\\');
        }
        out.push(c);
    }
}

fn write_literal(out: &mut String, lit: &Literal) {
    match lit {
        Literal::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Literal::Float(x) => write_float(out, *x),
        Literal::Str(s) => {
            let quote = if parser::is_string_body(s, '\'') {
                '\''
            } else {
                '"'
            };
            out.push(quote);
            out.push_str(s);
            out.push(quote);
        }
        Literal::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Literal::None => out.push_str("None"),
        Literal::Inf => out.push_str("inf"),
    }
}

/// A float the grammar reads back as the same float: ryu's shortest form always has a
/// `.` or an `e` (`1.0`, `1e16`, `1.5e-7`), and the grammar takes `1e16` but not `1e+16`.
/// Infinities (from an overflowing exponent) are written with one again.
fn write_float(out: &mut String, x: f64) {
    if x.is_nan() {
        // no literal produces NaN; keep the output parseable anyway
        out.push_str("None");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "1e999" } else { "-1e999" });
    } else {
        let mut buf = ryu::Buffer::new();
        out.push_str(buf.format_finite(x));
    }
}
