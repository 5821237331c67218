//! `/functions` and `/functions/<name>`: the function definitions, in the JSON shape of
//! graphite-web's `functions/views.py` (what Grafana's query editor reads), built from
//! a [`Registry`] at run time so that it lists every function registered.
//!
//! Each function is `{"name", "function", "description", "module", "group",
//! "params"}`; each parameter `{"name", "type"}` plus `required`, `default`,
//! `multiple`, `options` and `suggestions` when set, exactly when graphite-web's
//! `Param.toJSON` writes them. An infinite default is written `1e9999`, as
//! graphite-web's encoder rewrites it (Grafana also patches the bare `Infinity` of
//! older versions, graphite-web issue #2609). Options are sorted as Python sorts them
//! by `str`; an aggregation parameter lists every aggregation name, and an
//! "aggregation or series function" parameter also every aggregating function.
//!
//! Differences from graphite-web, which cannot serve this at all under Python 3.11
//! (it calls the removed `inspect.getargspec`): `function` is the signature written
//! from the parameters (`movingAverage(seriesList, windowSize, xFilesFactor=None)`),
//! descriptions are sumi's own, functions are listed in name order, `type=pie` lists
//! none (sumi draws no pie charts), and `jsonp` is honoured.

use sumi_query::functions::{DefaultValue, FunctionDef, Param, ParamType, Registry, AGG_FUNCS};

use crate::json::JsonWriter;
use crate::Rendered;

/// What the request asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionListOptions {
    /// `grouped=1|true`: `{group: {name: definition}}` instead of `{name: definition}`.
    pub grouped: bool,
    /// `group=…`: only the functions of that group.
    pub group: Option<String>,
    /// `type=pie`: graphite-web's pie-chart functions (sumi has none).
    pub pie: bool,
    /// `pretty`: indented by two, keys sorted (graphite-web's `jsonResponse`).
    pub pretty: bool,
    /// `jsonp`: wrapped as `callback(...)` and served as JavaScript.
    pub jsonp: Option<String>,
}

/// A JSON value, kept as a tree so that `pretty` can sort keys.
enum J {
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// The body of `/functions`.
pub fn function_list(registry: &Registry, opts: &FunctionListOptions) -> Rendered {
    let mut out: Vec<(String, J)> = Vec::new();
    if !opts.pie {
        for def in registry.iter() {
            if opts.group.as_deref().is_some_and(|g| g != def.group) {
                continue;
            }
            let info = info(registry, def);
            if opts.grouped {
                match out.iter_mut().find(|(g, _)| g == def.group) {
                    Some((_, J::Obj(members))) => members.push((def.name.to_string(), info)),
                    _ => out.push((
                        def.group.to_string(),
                        J::Obj(vec![(def.name.to_string(), info)]),
                    )),
                }
            } else {
                out.push((def.name.to_string(), info));
            }
        }
    }
    write(&J::Obj(out), opts)
}

/// The body of `/functions/<name>`, or `None` when there is no such function
/// (graphite-web answers 404 with [`not_found`]).
pub fn function_details(
    registry: &Registry,
    name: &str,
    opts: &FunctionListOptions,
) -> Option<Rendered> {
    if opts.pie {
        return None;
    }
    let def = registry.get(name)?;
    Some(write(&info(registry, def), opts))
}

/// graphite-web's error body for an unknown function.
pub fn not_found(name: &str, opts: &FunctionListOptions) -> Rendered {
    let body = J::Obj(vec![(
        "error".to_string(),
        J::Str(format!("Function not found: {name}")),
    )]);
    write(&body, opts)
}

/// `functionInfo`
fn info(registry: &Registry, def: &FunctionDef) -> J {
    J::Obj(vec![
        ("name".to_string(), J::Str(def.name.to_string())),
        ("function".to_string(), J::Str(signature(def))),
        (
            "description".to_string(),
            J::Str(def.description.to_string()),
        ),
        (
            "module".to_string(),
            J::Str("graphite.render.functions".to_string()),
        ),
        ("group".to_string(), J::Str(def.group.to_string())),
        (
            "params".to_string(),
            J::Arr(def.params.iter().map(|p| param(registry, p)).collect()),
        ),
    ])
}

/// `name(p1, p2='default', p3=None, *rest)`, as Python prints a signature.
fn signature(def: &FunctionDef) -> String {
    let args: Vec<String> = def
        .params
        .iter()
        .map(|p| {
            if p.multiple {
                format!("*{}", p.name)
            } else if let Some(d) = p.default {
                format!("{}={}", p.name, python_literal(d))
            } else if p.required {
                p.name.to_string()
            } else {
                format!("{}=None", p.name)
            }
        })
        .collect();
    format!("{}({})", def.name, args.join(", "))
}

fn python_literal(d: DefaultValue) -> String {
    match d {
        DefaultValue::Int(i) => i.to_string(),
        DefaultValue::Float(x) => sumi_query::py::float_repr(x),
        DefaultValue::Str(s) => format!("'{s}'"),
        DefaultValue::Bool(b) => if b { "True" } else { "False" }.to_string(),
    }
}

fn value(d: DefaultValue) -> J {
    match d {
        DefaultValue::Int(i) => J::Int(i),
        DefaultValue::Float(x) => J::Float(x),
        DefaultValue::Str(s) => J::Str(s.to_string()),
        DefaultValue::Bool(b) => J::Bool(b),
    }
}

/// `Param.toJSON`
fn param(registry: &Registry, p: &Param) -> J {
    let mut fields = vec![
        ("name".to_string(), J::Str(p.name.to_string())),
        ("type".to_string(), J::Str(p.ty.name().to_string())),
    ];
    if p.required {
        fields.push(("required".to_string(), J::Bool(true)));
    }
    if let Some(d) = p.default {
        fields.push(("default".to_string(), value(d)));
    }
    if p.multiple {
        fields.push(("multiple".to_string(), J::Bool(true)));
    }
    let options = options(registry, p);
    if !options.is_empty() {
        fields.push((
            "options".to_string(),
            J::Arr(options.into_iter().map(J::Str).collect()),
        ));
    }
    if !p.suggestions.is_empty() {
        fields.push((
            "suggestions".to_string(),
            J::Arr(p.suggestions.iter().map(|d| value(*d)).collect()),
        ));
    }
    J::Obj(fields)
}

/// `Param.options`: the parameter's own options and its type's, deduplicated and
/// sorted (by `str`, so by code point for strings).
fn options(registry: &Registry, p: &Param) -> Vec<String> {
    let mut all: Vec<String> = p.options.iter().map(|s| s.to_string()).collect();
    match p.ty {
        ParamType::AggFunc => all.extend(AGG_FUNCS.iter().map(|s| s.to_string())),
        ParamType::AggOrSeriesFunc => {
            all.extend(AGG_FUNCS.iter().map(|s| s.to_string()));
            all.extend(
                registry
                    .iter()
                    .filter(|f| f.aggregator)
                    .map(|f| f.name.to_string()),
            );
        }
        _ => {}
    }
    all.sort();
    all.dedup();
    all
}

fn write(value: &J, opts: &FunctionListOptions) -> Rendered {
    let mut w = JsonWriter::new(opts.pretty.then_some(2), true);
    emit(&mut w, value, opts.pretty);
    crate::wrap_json(
        w.finish(),
        opts.jsonp.as_deref(),
        "application/json",
        "text/javascript",
    )
}

fn emit(w: &mut JsonWriter, value: &J, sort: bool) {
    match value {
        J::Obj(fields) => {
            w.begin_object();
            let mut order: Vec<&(String, J)> = fields.iter().collect();
            if sort {
                order.sort_by(|a, b| a.0.cmp(&b.0));
            }
            for (k, v) in order {
                w.key(k);
                emit(w, v, sort);
            }
            w.end_object();
        }
        J::Arr(items) => {
            w.begin_array();
            for item in items {
                emit(w, item, sort);
            }
            w.end_array();
        }
        J::Str(s) => w.string(s),
        J::Int(i) => w.int(*i),
        // graphite-web's encoder turns `Infinity` into 1e9999 where a value ends
        J::Float(x) if x.is_infinite() => w.raw(if *x > 0.0 { "1e9999" } else { "-1e9999" }),
        J::Float(x) => w.float(*x),
        J::Bool(b) => w.bool(*b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(opts: &FunctionListOptions) -> serde_like::Value {
        let r = function_list(&Registry::standard(), opts);
        serde_like::parse(std::str::from_utf8(&r.body).unwrap())
    }

    /// A minimal JSON reader for the tests (the render crate has no JSON parser).
    mod serde_like {
        #[derive(Debug, Clone, PartialEq)]
        pub(super) enum Value {
            Obj(Vec<(String, Value)>),
            Arr(Vec<Value>),
            Str(String),
            Num(f64),
            Bool(bool),
            Null,
        }

        impl Value {
            pub(super) fn get(&self, key: &str) -> Option<&Value> {
                match self {
                    Value::Obj(f) => f.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                    _ => None,
                }
            }
        }

        pub(super) fn parse(text: &str) -> Value {
            let chars: Vec<char> = text.chars().collect();
            let mut i = 0;
            let v = value(&chars, &mut i);
            skip(&chars, &mut i);
            assert_eq!(i, chars.len(), "trailing text");
            v
        }

        fn skip(c: &[char], i: &mut usize) {
            while *i < c.len() && c[*i].is_whitespace() {
                *i += 1;
            }
        }

        fn value(c: &[char], i: &mut usize) -> Value {
            skip(c, i);
            match c[*i] {
                '{' => {
                    *i += 1;
                    let mut fields = Vec::new();
                    loop {
                        skip(c, i);
                        if c[*i] == '}' {
                            *i += 1;
                            return Value::Obj(fields);
                        }
                        let Value::Str(k) = value(c, i) else {
                            panic!("key")
                        };
                        skip(c, i);
                        assert_eq!(c[*i], ':');
                        *i += 1;
                        fields.push((k, value(c, i)));
                        skip(c, i);
                        if c[*i] == ',' {
                            *i += 1;
                        }
                    }
                }
                '[' => {
                    *i += 1;
                    let mut items = Vec::new();
                    loop {
                        skip(c, i);
                        if c[*i] == ']' {
                            *i += 1;
                            return Value::Arr(items);
                        }
                        items.push(value(c, i));
                        skip(c, i);
                        if c[*i] == ',' {
                            *i += 1;
                        }
                    }
                }
                '"' => {
                    *i += 1;
                    let mut s = String::new();
                    while c[*i] != '"' {
                        if c[*i] == '\\' {
                            *i += 1;
                            match c[*i] {
                                'n' => s.push('\n'),
                                'u' => {
                                    let hex: String = c[*i + 1..*i + 5].iter().collect();
                                    s.push(
                                        char::from_u32(u32::from_str_radix(&hex, 16).unwrap())
                                            .unwrap_or('?'),
                                    );
                                    *i += 4;
                                }
                                other => s.push(other),
                            }
                        } else {
                            s.push(c[*i]);
                        }
                        *i += 1;
                    }
                    *i += 1;
                    Value::Str(s)
                }
                't' => {
                    *i += 4;
                    Value::Bool(true)
                }
                'f' => {
                    *i += 5;
                    Value::Bool(false)
                }
                'n' => {
                    *i += 4;
                    Value::Null
                }
                _ => {
                    let start = *i;
                    while *i < c.len() && matches!(c[*i], '0'..='9' | '-' | '+' | '.' | 'e' | 'E') {
                        *i += 1;
                    }
                    let text: String = c[start..*i].iter().collect();
                    Value::Num(text.parse().expect("number"))
                }
            }
        }
    }

    use serde_like::Value as V;

    #[test]
    fn every_function_in_graphite_shape() {
        let doc = list(&FunctionListOptions::default());
        let V::Obj(functions) = &doc else {
            panic!("not an object")
        };
        assert!(functions.len() >= 80, "{} functions", functions.len());
        for (name, info) in functions {
            let keys: Vec<&str> = match info {
                V::Obj(f) => f.iter().map(|(k, _)| k.as_str()).collect(),
                _ => panic!("{name}: not an object"),
            };
            assert_eq!(
                keys,
                [
                    "name",
                    "function",
                    "description",
                    "module",
                    "group",
                    "params"
                ],
                "{name}"
            );
            assert_eq!(info.get("name"), Some(&V::Str(name.clone())));
            let V::Str(description) = info.get("description").unwrap() else {
                panic!()
            };
            assert!(
                !description.is_empty() && !description.starts_with(' '),
                "{name}"
            );
        }
        let ma = doc.get("movingAverage").unwrap();
        assert_eq!(
            ma.get("function"),
            Some(&V::Str(
                "movingAverage(seriesList, windowSize, xFilesFactor=None)".into()
            ))
        );
        assert_eq!(ma.get("group"), Some(&V::Str("Calculate".into())));
        let V::Arr(params) = ma.get("params").unwrap() else {
            panic!()
        };
        assert_eq!(
            params[0],
            V::Obj(vec![
                ("name".into(), V::Str("seriesList".into())),
                ("type".into(), V::Str("seriesList".into())),
                ("required".into(), V::Bool(true)),
            ])
        );
        let V::Arr(suggestions) = params[1].get("suggestions").unwrap() else {
            panic!()
        };
        assert_eq!(suggestions[0], V::Num(5.0));
        assert_eq!(suggestions[3], V::Str("1min".into()));
        assert_eq!(params[2].get("required"), None);
        // an aggregation parameter lists every aggregation name, sorted
        let line = doc.get("aggregateLine").unwrap();
        let V::Arr(p) = line.get("params").unwrap() else {
            panic!()
        };
        let V::Arr(options) = p[1].get("options").unwrap() else {
            panic!()
        };
        assert_eq!(options.len(), 16);
        assert_eq!(options[0], V::Str("average".into()));
        assert_eq!(options[2], V::Str("avg_zero".into()));
        assert_eq!(p[2].get("default"), Some(&V::Bool(false)));
        assert_eq!(
            line.get("function"),
            Some(&V::Str(
                "aggregateLine(seriesList, func='average', keepStep=False)".into()
            ))
        );
        let unique = doc.get("unique").unwrap();
        assert_eq!(
            unique.get("function"),
            Some(&V::Str("unique(*seriesLists)".into()))
        );
    }

    #[test]
    fn grouped_filtered_pretty_jsonp() {
        let grouped = list(&FunctionListOptions {
            grouped: true,
            ..Default::default()
        });
        assert!(grouped
            .get("Calculate")
            .and_then(|g| g.get("stdev"))
            .is_some());
        assert!(grouped.get("Graph").and_then(|g| g.get("color")).is_some());
        let only = list(&FunctionListOptions {
            group: Some("Sorting".into()),
            ..Default::default()
        });
        let V::Obj(sorting) = &only else { panic!() };
        assert!(sorting
            .iter()
            .all(|(_, f)| f.get("group") == Some(&V::Str("Sorting".into()))));
        assert!(sorting.len() >= 5);
        let pie = list(&FunctionListOptions {
            pie: true,
            ..Default::default()
        });
        assert_eq!(pie, V::Obj(vec![]));

        let opts = FunctionListOptions {
            pretty: true,
            jsonp: Some("cb".into()),
            ..Default::default()
        };
        let r = function_details(&Registry::standard(), "stdev", &opts).unwrap();
        assert_eq!(r.content_type, "text/javascript");
        let text = String::from_utf8(r.body).unwrap();
        assert!(text.starts_with("cb({\n  \"description\": "), "{text}");
        // sorted keys in pretty mode, parameters too
        let inner = serde_like::parse(&text[3..text.len() - 1]);
        let V::Arr(params) = inner.get("params").unwrap() else {
            panic!()
        };
        let V::Obj(tolerance) = &params[2] else {
            panic!()
        };
        let keys: Vec<&str> = tolerance.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["default", "name", "type"]);
        assert!(function_details(
            &Registry::standard(),
            "nope",
            &FunctionListOptions::default()
        )
        .is_none());
        let missing = not_found("nope", &FunctionListOptions::default());
        assert_eq!(
            String::from_utf8(missing.body).unwrap(),
            "{\"error\": \"Function not found: nope\"}"
        );
    }

    #[test]
    fn infinite_defaults_are_written_as_graphite_web_writes_them() {
        static PARAMS: [Param; 1] = [
            Param::new("limit", ParamType::IntOrInf).default(DefaultValue::Float(f64::INFINITY))
        ];
        let mut r = Registry::empty();
        fn noop(
            _: &mut sumi_query::Session<'_>,
            _: &sumi_query::RequestContext,
            _: sumi_query::functions::Invocation<'_>,
        ) -> Result<sumi_query::Value, sumi_query::QueryError> {
            Ok(sumi_query::Value::None)
        }
        r.register(FunctionDef {
            name: "keepLastValue",
            group: "Transform",
            description: "test",
            params: &PARAMS,
            aggregator: false,
            run: noop,
        });
        let body =
            String::from_utf8(function_list(&r, &FunctionListOptions::default()).body).unwrap();
        assert!(body.contains("\"default\": 1e9999}"), "{body}");
        assert!(body.contains("keepLastValue(limit=inf)"), "{body}");
    }
}
