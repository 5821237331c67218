//! `template()` substitution, as graphite-web's evaluator does it.
//!
//! The values come from the template's keyword arguments, then its positional ones
//! (named `1`, `2`, …), then the request's `template[name]=value` parameters, each
//! later source replacing a value but keeping its place. For each name in that order,
//! a path that *is* `$name` evaluates to the value itself (a number when a string
//! value looks like one), without fetching anything; otherwise every `$name` in the
//! path is replaced by Python's `str()` of the value and the path is fetched. Order
//! matters: with names `1` and `10`, `$10` becomes the value of `1` followed by `0`.

use crate::error::QueryError;
use crate::grammar::Template;
use crate::py;

use super::{RequestContext, Value};

/// Template values in substitution order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replacements(Vec<(String, Value)>);

impl Replacements {
    /// The substitutions for one `template(...)` in one request.
    pub fn for_template(template: &Template, ctx: &RequestContext) -> Replacements {
        let mut r = Replacements::default();
        for (name, lit) in &template.kwargs {
            r.set(name, Value::from(lit));
        }
        for (i, lit) in template.args.iter().enumerate() {
            r.set(&(i + 1).to_string(), Value::from(lit));
        }
        for (name, value) in &ctx.template {
            r.set(name, Value::Str(value.clone()));
        }
        r
    }

    /// Sets a value, keeping the place of an existing name (a Python dict update).
    pub fn set(&mut self, name: &str, value: Value) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name.to_string(), value)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v))
    }
}

/// What a path becomes under substitution.
#[derive(Clone, Debug, PartialEq)]
pub enum Substituted {
    /// A pattern to fetch.
    Pattern(String),
    /// The path was exactly `$name`: its value, not fetched.
    Value(Value),
}

/// Applies `replacements` to a path.
pub fn substitute(
    path: &str,
    replacements: Option<&Replacements>,
) -> Result<Substituted, QueryError> {
    let Some(replacements) = replacements else {
        return Ok(Substituted::Pattern(path.to_string()));
    };
    let mut expression = path.to_string();
    for (name, value) in replacements.iter() {
        let token = format!("${name}");
        if expression == token {
            return Ok(Substituted::Value(match value {
                Value::Str(s) if looks_numeric(s) => {
                    Value::Float(py::float(s).ok_or_else(|| QueryError::TemplateNumber {
                        name: name.to_string(),
                        value: s.clone(),
                    })?)
                }
                other => other.clone(),
            }));
        }
        if expression.contains(&token) {
            expression = expression.replace(&token, &value.python_str());
        }
    }
    Ok(Substituted::Pattern(expression))
}

/// `re.match(r'^-?[\d.]+$', value)` (`$` also matches before a final newline).
fn looks_numeric(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let body = body.strip_prefix('-').unwrap_or(body);
    !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repl(pairs: &[(&str, Value)]) -> Replacements {
        let mut r = Replacements::default();
        for (n, v) in pairs {
            r.set(n, v.clone());
        }
        r
    }

    #[test]
    fn replaces_in_order() {
        let r = repl(&[
            ("1", Value::Str("web01".into())),
            ("10", Value::Str("x".into())),
        ]);
        assert_eq!(
            substitute("servers.$1.cpu.$10", Some(&r)).unwrap(),
            Substituted::Pattern("servers.web01.cpu.web010".into())
        );
        let r = repl(&[("n", Value::Int(3)), ("f", Value::Float(1e-5))]);
        assert_eq!(
            substitute("a.$n.$f", Some(&r)).unwrap(),
            Substituted::Pattern("a.3.1e-05".into())
        );
    }

    #[test]
    fn whole_path_is_the_value() {
        let r = repl(&[
            ("factor", Value::Str("2.5".into())),
            ("name", Value::Str("x.y".into())),
        ]);
        assert_eq!(
            substitute("$factor", Some(&r)).unwrap(),
            Substituted::Value(Value::Float(2.5))
        );
        assert_eq!(
            substitute("$name", Some(&r)).unwrap(),
            Substituted::Value(Value::Str("x.y".into()))
        );
        let r = repl(&[("n", Value::Int(7))]);
        assert_eq!(
            substitute("$n", Some(&r)).unwrap(),
            Substituted::Value(Value::Int(7))
        );
        let r = repl(&[("bad", Value::Str("1.2.3".into()))]);
        assert!(matches!(
            substitute("$bad", Some(&r)),
            Err(QueryError::TemplateNumber { .. })
        ));
        let r = repl(&[("neg", Value::Str("-5\n".into()))]);
        assert_eq!(
            substitute("$neg", Some(&r)).unwrap(),
            Substituted::Value(Value::Float(-5.0))
        );
    }

    #[test]
    fn unknown_names_stay() {
        let r = repl(&[("a", Value::Str("1".into()))]);
        assert_eq!(
            substitute("x.$b", Some(&r)).unwrap(),
            Substituted::Pattern("x.$b".into())
        );
        assert_eq!(
            substitute("x.$b", None).unwrap(),
            Substituted::Pattern("x.$b".into())
        );
    }
}
