//! A hand-written PEG parser that accepts what graphite-web 1.1.10's pyparsing grammar
//! accepts and builds the same tree.
//!
//! pyparsing's `|` is an ordered choice that never backtracks into a finished
//! alternative, so a recursive-descent parser with the same order of alternatives
//! gives the same results, down to the odd ones:
//! - `parseString` does not require the whole input: `a.b c` is the path `a.b`, and a
//!   call that fails to parse falls back to the path made of its name (`sumSeries(a.b`
//!   is the path `sumSeries`);
//! - white space (space, tab, CR, LF) may separate tokens, but not appear inside a path,
//!   a string or a number;
//! - an argument is tried as boolean, number, `none`, string, `inf`, then expression;
//!   a number must be followed by `,`, `)` or the end of the text, so `f(1.5.2)` has the
//!   path `1.5.2` and `f(-1e5)` the float;
//! - keyword arguments may only follow at least one positional one (`f(x=1)` is no
//!   call), and nothing positional may follow them;
//! - `template(...)` takes either numbers and strings or `key=value` pairs, not both.
//!
//! Positions are counted in characters of the tab-expanded input, as pyparsing counts
//! them.

use std::collections::HashMap;

use super::ast::{Arg, Call, Expr, Literal, RawText, Template};

/// Deeper nesting than this is refused (graphite-web itself gives up with a Python
/// recursion error at a few dozen levels).
pub(super) const MAX_DEPTH: usize = 100;

/// The characters that cannot appear bare in a path: pyparsing's `symbols`.
const SYMBOLS: &str = "(){},.'\"\\|";

/// A character that may appear unescaped in a path: printable ASCII but the symbols.
pub(crate) fn is_path_char(c: char) -> bool {
    c.is_ascii_graphic() && !SYMBOLS.contains(c)
}

/// A character that may follow a backslash in a path: the symbols and `=`.
pub(crate) fn is_escapable(c: char) -> bool {
    SYMBOLS.contains(c) || c == '='
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// pyparsing's default white space.
fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Whether `path` is read by the path rule as exactly itself, with nothing left over.
pub(crate) fn reads_as_path(path: &str) -> bool {
    let chars: Vec<char> = path.chars().collect();
    let mut p = Parser::new(&chars);
    matches!(p.path(0), Some((text, end)) if end == chars.len() && text == path)
}

/// Whether an argument spelled `text` (and followed by `)`) would be read as a
/// constant (boolean, number, `none`, string, `inf`) rather than as a path.
pub(crate) fn reads_as_literal_arg(text: &str) -> bool {
    let chars: Vec<char> = text.chars().chain(std::iter::once(')')).collect();
    let mut p = Parser::new(&chars);
    matches!(p.arg(0), Some((super::ast::Arg::Literal(_), _)))
}

/// Whether `body` is, in full, what the string rule accepts between two `quote`s.
pub(crate) fn is_string_body(body: &str, quote: char) -> bool {
    let chars: Vec<char> = body.chars().collect();
    string_body_end(&chars, 0, quote) == chars.len()
}

/// Where the body of a string opened before `from` ends: pyparsing's quoted-string
/// regex, `(?:[^q\n\r\\]|qq|\\(?:[^x]|x[0-9a-fA-F]+))*`.
fn string_body_end(t: &[char], from: usize, quote: char) -> usize {
    let mut i = from;
    while let Some(&c) = t.get(i) {
        if c != quote && c != '\n' && c != '\r' && c != '\\' {
            i += 1;
        } else if c == quote && t.get(i + 1) == Some(&quote) {
            i += 2;
        } else if c == '\\' {
            match t.get(i + 1) {
                Some('x') => {
                    let hex = t[i + 2..]
                        .iter()
                        .take_while(|c| c.is_ascii_hexdigit())
                        .count();
                    if hex == 0 {
                        break;
                    }
                    i += 2 + hex;
                }
                Some(_) => i += 2,
                None => break,
            }
        } else {
            break;
        }
    }
    i
}

pub(super) struct Parser<'t> {
    t: &'t [char],
    /// The furthest position where something required was missing, and what.
    pub(super) furthest: usize,
    pub(super) expected: Vec<&'static str>,
    depth: usize,
    pub(super) too_deep: bool,
    calls: HashMap<usize, Option<(Call, usize)>>,
}

impl<'t> Parser<'t> {
    pub(super) fn new(t: &'t [char]) -> Parser<'t> {
        Parser {
            t,
            furthest: 0,
            expected: Vec::new(),
            depth: 0,
            too_deep: false,
            calls: HashMap::new(),
        }
    }

    fn at(&self, i: usize) -> Option<char> {
        self.t.get(i).copied()
    }

    fn is(&self, i: usize, c: char) -> bool {
        self.at(i) == Some(c)
    }

    pub(super) fn ws(&self, mut i: usize) -> usize {
        while self.at(i).is_some_and(is_ws) {
            i += 1;
        }
        i
    }

    fn expect(&mut self, at: usize, what: &'static str) {
        if at > self.furthest {
            self.furthest = at;
            self.expected.clear();
        }
        if at == self.furthest && !self.expected.contains(&what) {
            self.expected.push(what);
        }
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.t[from..to].iter().collect()
    }

    /// `expression`: (template | call | path), then `| call` any number of times.
    pub(super) fn expression(&mut self, from: usize) -> Option<(Expr, usize)> {
        if self.too_deep {
            return None;
        }
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return None;
        }
        self.depth += 1;
        let result = self.expression_inner(from);
        self.depth -= 1;
        result
    }

    fn expression_inner(&mut self, from: usize) -> Option<(Expr, usize)> {
        let p = self.ws(from);
        let (mut expr, mut end) = if let Some((t, e)) = self.template(p) {
            (Expr::Template(t), e)
        } else if let Some((c, e)) = self.call(p) {
            (Expr::Call(c), e)
        } else if let Some((path, e)) = self.path(p) {
            (Expr::Path(path), e)
        } else {
            self.expect(p, "a metric path, a function call or template()");
            return None;
        };
        loop {
            let bar = self.ws(end);
            if !self.is(bar, '|') {
                break;
            }
            let Some((mut call, e)) = self.call(bar + 1) else {
                self.expect(self.ws(bar + 1), "a function call after '|'");
                break;
            };
            call.args.insert(0, Arg::Expr(expr));
            call.piped = true;
            expr = Expr::Call(call);
            end = e;
        }
        Some((expr, end))
    }

    /// `template ( (call | path) [, literals | , key=literal pairs] )`.
    fn template(&mut self, from: usize) -> Option<(Template, usize)> {
        let p = self.ws(from);
        if !"template"
            .chars()
            .enumerate()
            .all(|(k, c)| self.is(p + k, c))
        {
            return None;
        }
        let open = self.ws(p + 8);
        if !self.is(open, '(') {
            return None;
        }
        let q = self.ws(open + 1);
        let (inner, mut end) = if let Some((c, e)) = self.call(q) {
            (Expr::Call(c), e)
        } else if let Some((path, e)) = self.path(q) {
            (Expr::Path(path), e)
        } else {
            self.expect(q, "a metric path or a function call");
            return None;
        };
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        let comma = self.ws(end);
        if self.is(comma, ',') {
            if let Some((kw, e)) = self.lit_kwarg(comma + 1) {
                kwargs.push(kw);
                end = e;
                while let Some((kw, e)) = self.next_item(end, Self::lit_kwarg) {
                    kwargs.push(kw);
                    end = e;
                }
            } else if let Some((lit, e)) = self.lit_arg(comma + 1) {
                args.push(lit);
                end = e;
                loop {
                    let c = self.ws(end);
                    if !self.is(c, ',') || self.lit_kwarg(c + 1).is_some() {
                        break;
                    }
                    let Some((lit, e)) = self.lit_arg(c + 1) else {
                        break;
                    };
                    args.push(lit);
                    end = e;
                }
            }
        }
        let close = self.ws(end);
        if !self.is(close, ')') {
            self.expect(close, "')'");
            return None;
        }
        let template = Template {
            inner: Box::new(inner),
            args,
            kwargs,
        };
        Some((template, close + 1))
    }

    /// `, item` when both are there.
    fn next_item<T>(
        &mut self,
        end: usize,
        item: fn(&mut Self, usize) -> Option<(T, usize)>,
    ) -> Option<(T, usize)> {
        let c = self.ws(end);
        if !self.is(c, ',') {
            return None;
        }
        item(self, c + 1)
    }

    fn lit_arg(&mut self, from: usize) -> Option<(Literal, usize)> {
        let p = self.ws(from);
        self.number(p).or_else(|| self.string(p))
    }

    fn lit_kwarg(&mut self, from: usize) -> Option<((String, Literal), usize)> {
        let (name, eq) = self.arg_name_eq(from)?;
        let (lit, end) = self.lit_arg(eq)?;
        Some(((name, lit), end))
    }

    /// `name =`, returning the name and the position after `=`.
    fn arg_name_eq(&self, from: usize) -> Option<(String, usize)> {
        let p = self.ws(from);
        let end = self.word(p)?;
        let eq = self.ws(end);
        self.is(eq, '=').then(|| (self.text(p, end), eq + 1))
    }

    fn word(&self, p: usize) -> Option<usize> {
        if !self.at(p).is_some_and(is_word_start) {
            return None;
        }
        let mut e = p + 1;
        while self.at(e).is_some_and(is_word_char) {
            e += 1;
        }
        Some(e)
    }

    /// `name ( [args [, kwargs]] )`, remembered by position: `template(...)` that turns
    /// out not to be a template is parsed again as a call, and nesting would make that
    /// exponential.
    fn call(&mut self, from: usize) -> Option<(Call, usize)> {
        let p = self.ws(from);
        if let Some(known) = self.calls.get(&p) {
            return known.clone();
        }
        let result = self.call_uncached(p);
        self.calls.insert(p, result.clone());
        result
    }

    fn call_uncached(&mut self, p: usize) -> Option<(Call, usize)> {
        let name_end = self.word(p)?;
        let open = self.ws(name_end);
        if !self.is(open, '(') {
            return None;
        }
        let first = self.ws(open + 1);
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        let mut end = open + 1;
        if self.kwarg(first).is_some() {
            self.expect(first, "a positional argument before keyword arguments");
            return None;
        }
        if let Some((arg, e)) = self.arg(first) {
            args.push(arg);
            end = e;
            loop {
                let c = self.ws(end);
                if !self.is(c, ',') {
                    self.expect(c, "','");
                    break;
                }
                let next = self.ws(c + 1);
                if let Some((kw, e)) = self.kwarg(next) {
                    kwargs.push(kw);
                    end = e;
                    loop {
                        let c = self.ws(end);
                        if !self.is(c, ',') {
                            self.expect(c, "','");
                            break;
                        }
                        let Some((kw, e)) = self.kwarg(c + 1) else {
                            self.expect(self.ws(c + 1), "a keyword argument");
                            break;
                        };
                        kwargs.push(kw);
                        end = e;
                    }
                    break;
                }
                let Some((arg, e)) = self.arg(next) else {
                    self.expect(next, "an argument");
                    break;
                };
                args.push(arg);
                end = e;
            }
        }
        let close = self.ws(end);
        if !self.is(close, ')') {
            self.expect(close, "')'");
            return None;
        }
        let call = Call {
            name: self.text(p, name_end),
            args,
            kwargs,
            piped: false,
            raw: RawText(self.text(p, close + 1)),
        };
        Some((call, close + 1))
    }

    fn kwarg(&mut self, from: usize) -> Option<((String, Arg), usize)> {
        let (name, eq) = self.arg_name_eq(from)?;
        let (arg, end) = self.arg(eq)?;
        Some(((name, arg), end))
    }

    /// boolean | number | none | string | inf | expression
    fn arg(&mut self, from: usize) -> Option<(Arg, usize)> {
        let p = self.ws(from);
        let literal = if let Some(e) = self.keyword(p, "TRUE") {
            Some((Literal::Bool(true), e))
        } else if let Some(e) = self.keyword(p, "FALSE") {
            Some((Literal::Bool(false), e))
        } else if let Some(n) = self.number(p) {
            Some(n)
        } else if let Some(e) = self.keyword(p, "NONE") {
            Some((Literal::None, e))
        } else if let Some(s) = self.string(p) {
            Some(s)
        } else {
            self.keyword(p, "INF").map(|e| (Literal::Inf, e))
        };
        if let Some((lit, e)) = literal {
            return Some((Arg::Literal(lit), e));
        }
        let (expr, e) = self.expression(p)?;
        Some((Arg::Expr(expr), e))
    }

    /// pyparsing's `CaselessKeyword`: the next characters, upper-cased, spell `upper`,
    /// and neither neighbour is an identifier character (`A-Z a-z 0-9 _ $`).
    fn keyword(&self, p: usize, upper: &str) -> Option<usize> {
        let n = upper.chars().count();
        let slice = self.t.get(p..p + n)?;
        let spelled: String = slice.iter().flat_map(|c| c.to_uppercase()).collect();
        if spelled != upper {
            return None;
        }
        let ident = |c: Option<char>| {
            c.is_some_and(|c| {
                let mut up = c.to_uppercase();
                matches!((up.next(), up.next()), (Some(u), None) if u.is_ascii_alphanumeric() || u == '_' || u == '$')
            })
        };
        if ident(self.at(p + n)) || (p > 0 && ident(self.at(p - 1))) {
            return None;
        }
        Some(p + n)
    }

    /// scientific | float | int, each followed by `,`, `)` or the end of a line.
    fn number(&mut self, p: usize) -> Option<(Literal, usize)> {
        let mantissa = self.float_token(p).or_else(|| self.int_token(p));
        if let Some(m) = mantissa {
            if matches!(self.at(m), Some('e' | 'E')) {
                if let Some(e) = self.int_token(m + 1) {
                    if self.after_number(e) {
                        let x = self.text(p, e).parse::<f64>().ok()?;
                        return Some((Literal::Float(x), e));
                    }
                }
            }
        }
        if let Some(e) = self.float_token(p) {
            if self.after_number(e) {
                let x = self.text(p, e).parse::<f64>().ok()?;
                return Some((Literal::Float(x), e));
            }
        }
        if let Some(e) = self.int_token(p) {
            if self.after_number(e) {
                let s = self.text(p, e);
                let lit = match s.parse::<i64>() {
                    Ok(i) => Literal::Int(i),
                    Err(_) => Literal::Float(s.parse::<f64>().ok()?),
                };
                return Some((lit, e));
            }
        }
        None
    }

    fn digits(&self, mut i: usize) -> usize {
        while self.at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        i
    }

    /// `-?\d+`
    fn int_token(&self, p: usize) -> Option<usize> {
        let start = if self.is(p, '-') { p + 1 } else { p };
        let e = self.digits(start);
        (e > start).then_some(e)
    }

    /// `-?\d+\.\d+`
    fn float_token(&self, p: usize) -> Option<usize> {
        let int_end = self.int_token(p)?;
        if !self.is(int_end, '.') {
            return None;
        }
        let e = self.digits(int_end + 1);
        (e > int_end + 1).then_some(e)
    }

    /// `FollowedBy(",") ^ FollowedBy(")") ^ FollowedBy(LineEnd())`: the `^` skips all
    /// white space (newlines included) before trying them, so what LineEnd can still
    /// match there is only the end of the text.
    fn after_number(&self, e: usize) -> bool {
        matches!(self.at(self.ws(e)), None | Some(',' | ')'))
    }

    fn string(&mut self, p: usize) -> Option<(Literal, usize)> {
        let quote = self.at(p).filter(|&c| c == '"' || c == '\'')?;
        let end = string_body_end(self.t, p + 1, quote);
        if !self.is(end, quote) {
            self.expect(end, "a closing quote");
            return None;
        }
        Some((Literal::Str(self.text(p + 1, end)), end + 1))
    }

    /// `element (. element)*`, escapes removed; no white space inside.
    pub(super) fn path(&mut self, p: usize) -> Option<(String, usize)> {
        let (mut text, mut end) = self.path_element(p)?;
        while self.is(end, '.') {
            let Some((more, e)) = self.path_element(end + 1) else {
                break;
            };
            text.push('.');
            text.push_str(&more);
            end = e;
        }
        Some((text, end))
    }

    /// (partial | {alternatives}) followed by any number of either.
    fn path_element(&mut self, p: usize) -> Option<(String, usize)> {
        let mut text = String::new();
        let mut end = p;
        loop {
            if let Some(e) = self.match_enum(end, &mut text) {
                end = e;
            } else if let Some(e) = self.partial(end, &mut text) {
                end = e;
            } else {
                break;
            }
        }
        (end > p).then_some((text, end))
    }

    /// One or more path characters or `\`-escaped symbols.
    fn partial(&self, p: usize, text: &mut String) -> Option<usize> {
        let mut i = p;
        loop {
            match self.at(i) {
                Some('\\') if self.at(i + 1).is_some_and(is_escapable) => {
                    text.push(self.t[i + 1]);
                    i += 2;
                }
                Some(c) if is_path_char(c) => {
                    text.push(c);
                    i += 1;
                }
                _ => break,
            }
        }
        (i > p).then_some(i)
    }

    /// `{partial(,partial)*}`, kept with its braces and commas.
    fn match_enum(&mut self, p: usize, text: &mut String) -> Option<usize> {
        if !self.is(p, '{') {
            return None;
        }
        let mut inner = String::from("{");
        let mut end = self.partial(p + 1, &mut inner)?;
        while self.is(end, ',') {
            let mut more = String::from(",");
            let Some(e) = self.partial(end + 1, &mut more) else {
                break;
            };
            inner.push_str(&more);
            end = e;
        }
        if !self.is(end, '}') {
            self.expect(end, "'}'");
            return None;
        }
        inner.push('}');
        text.push_str(&inner);
        Some(end + 1)
    }
}
