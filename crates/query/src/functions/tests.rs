//! Parameter binding, as graphite-web's `validateParams` does it.

use super::*;
use crate::series::TimeSeries;

fn no_aggregators(_: &str) -> bool {
    false
}

fn list(n: usize) -> Value {
    Value::SeriesList(
        (0..n)
            .map(|i| TimeSeries::new(format!("s{i}"), 0, 60, 60, vec![Some(1.0)]))
            .collect(),
    )
}

static PARAMS: [Param; 4] = [
    Param::new("seriesList", ParamType::SeriesList).required(),
    Param::new("factor", ParamType::Float).required(),
    Param::new("func", ParamType::AggFunc).default(DefaultValue::Str("average")),
    Param::new("flag", ParamType::Boolean).default(DefaultValue::Bool(false)),
];

fn bind4(args: Vec<Value>, kwargs: Vec<(&str, Value)>) -> Result<BoundArgs, QueryError> {
    let kwargs = kwargs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    bind("f", &PARAMS, args, kwargs, &no_aggregators)
}

#[test]
fn positional_then_keywords_then_defaults() {
    let b = bind4(
        vec![list(2), Value::Int(3)],
        vec![("flag", Value::Str("TRUE".into()))],
    )
    .unwrap();
    assert_eq!(
        b.get(0).and_then(Value::as_series_list).map(<[_]>::len),
        Some(2)
    );
    // an integer where a float is expected is converted
    assert_eq!(b.get(1), Some(&Value::Float(3.0)));
    assert_eq!(b.float(1), Some(3.0));
    assert_eq!(b.str(2), Some("average"));
    assert_eq!(b.bool(3), Some(true));
}

#[test]
fn explicit_none_is_kept_for_optional_parameters() {
    let b = bind4(vec![list(1), Value::Float(1.0), Value::None], vec![]).unwrap();
    assert_eq!(b.get(2), Some(&Value::None));
    // a keyword None counts as not given: the default applies
    let b = bind4(
        vec![list(1), Value::Float(1.0)],
        vec![("func", Value::None)],
    )
    .unwrap();
    assert_eq!(b.str(2), Some("average"));
}

#[test]
fn refusals() {
    let err = |args, kwargs| bind4(args, kwargs).unwrap_err().to_string();
    assert_eq!(
        err(vec![list(1), Value::Str("x".into())], vec![]),
        "invalid parameters for f(): invalid \"float\" value for parameter \"factor\": \"x\""
    );
    assert!(err(vec![list(1)], vec![]).contains("missing required parameter \"factor\""));
    assert!(err(
        vec![list(1), Value::Int(1)],
        vec![("func", Value::Str("nope".into()))]
    )
    .contains("\"aggFunc\""));
    assert!(err(
        vec![
            list(1),
            Value::Int(1),
            Value::Str("sum".into()),
            Value::Bool(true),
            Value::Int(0)
        ],
        vec![]
    )
    .contains("too many parameters"));
    // a keyword naming a parameter already given positionally is unexpected
    assert!(err(
        vec![list(1), Value::Int(1)],
        vec![("factor", Value::Int(2))]
    )
    .contains("unexpected keyword arguments: factor"));
    assert!(
        err(vec![list(1), Value::Int(1)], vec![("flag", Value::Int(2))]).contains("\"boolean\"")
    );
}

#[test]
fn aggregation_names() {
    assert!(is_agg_func("sum"));
    assert!(is_agg_func("avg"));
    assert!(is_agg_func("sumSeries"));
    assert!(is_agg_func("rangeOf"));
    assert!(!is_agg_func("sumsSeries"));
    assert!(!is_agg_func("Series"));
    let b = bind4(
        vec![list(1), Value::Int(1), Value::Str("maxSeries".into())],
        vec![],
    )
    .unwrap();
    assert_eq!(b.str(2), Some("maxSeries"));
}

static MULTI: [Param; 2] = [
    Param::new("name", ParamType::String).required(),
    Param::new("seriesLists", ParamType::SeriesList)
        .required()
        .multiple(),
];

#[test]
fn multiple_takes_the_rest() {
    let b = bind(
        "g",
        &MULTI,
        vec![Value::Str("x".into()), list(1), list(2), list(3)],
        vec![],
        &no_aggregators,
    )
    .unwrap();
    assert_eq!(b.all(1).len(), 3);
    // with a surplus, keyword arguments are all unexpected (as in graphite-web)
    let e = bind(
        "g",
        &MULTI,
        vec![Value::Str("x".into()), list(1), list(2)],
        vec![("name".into(), Value::Str("y".into()))],
        &no_aggregators,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("unexpected keyword arguments: name"),
        "{e}"
    );
}

static AGG_OR_SERIES: [Param; 1] = [Param::new("func", ParamType::AggOrSeriesFunc).required()];
static OPTIONS: [Param; 1] = [Param::new("mode", ParamType::String).options(&["a", "b"])];
static INTS: [Param; 2] = [
    Param::new("n", ParamType::IntOrInf).required(),
    Param::new("interval", ParamType::Interval),
];

#[test]
fn special_types() {
    let agg = |name: &str| name == "myAgg";
    let b = bind(
        "h",
        &AGG_OR_SERIES,
        vec![Value::Str("myAgg".into())],
        vec![],
        &agg,
    )
    .unwrap();
    assert_eq!(b.str(0), Some("myAgg"));
    // graphite-web's validator answers False instead of raising
    let b = bind(
        "h",
        &AGG_OR_SERIES,
        vec![Value::Str("zzz".into())],
        vec![],
        &agg,
    )
    .unwrap();
    assert_eq!(b.bool(0), Some(false));

    assert!(bind(
        "o",
        &OPTIONS,
        vec![Value::Str("a".into())],
        vec![],
        &no_aggregators
    )
    .is_ok());
    let e = bind(
        "o",
        &OPTIONS,
        vec![Value::Str("c".into())],
        vec![],
        &no_aggregators,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("invalid option for parameter \"mode\": \"c\""),
        "{e}"
    );

    let b = bind(
        "i",
        &INTS,
        vec![Value::Float(f64::INFINITY), Value::Str("-5min".into())],
        vec![],
        &no_aggregators,
    )
    .unwrap();
    assert_eq!(b.float(0), Some(f64::INFINITY));
    assert_eq!(b.str(1), Some("-5min"));
    assert!(bind(
        "i",
        &INTS,
        vec![Value::Int(1), Value::Str("5m".into())],
        vec![],
        &no_aggregators
    )
    .is_err());
    // graphite-web 1.1.10 (input validation off) compares a count with the float
    let b = bind("i", &INTS, vec![Value::Float(2.5)], vec![], &no_aggregators).unwrap();
    assert_eq!(b.get(0), Some(&Value::Float(2.5)));
}

static FLOAT_FOR_INT: [Param; 4] = [
    Param::new("refused", ParamType::Integer),
    Param::new("truncated", ParamType::Node).on_float(crate::functions::OnFloat::Truncate),
    Param::new("kept", ParamType::Integer).on_float(crate::functions::OnFloat::Keep),
    Param::new("integral", ParamType::Integer).on_float(crate::functions::OnFloat::Integral),
];

#[test]
fn a_float_for_an_integer_is_what_graphite_web_makes_of_it() {
    let args = |a: f64, b: f64, c: f64| vec![Value::Float(a), Value::Float(b), Value::Float(c)];
    let none = |b: f64, c: f64| vec![Value::None, Value::Float(b), Value::Float(c)];
    assert!(bind(
        "f",
        &FLOAT_FOR_INT,
        args(2.0, 1.0, 1.0),
        vec![],
        &no_aggregators
    )
    .is_err());
    let b = bind(
        "f",
        &FLOAT_FOR_INT,
        none(-2.9, 2.5),
        vec![],
        &no_aggregators,
    )
    .unwrap();
    assert_eq!(
        b.get(1),
        Some(&Value::Int(-2)),
        "int() truncates toward zero"
    );
    assert_eq!(b.get(2), Some(&Value::Float(2.5)));
    let integral = |x: f64| {
        let args = vec![Value::None, Value::None, Value::None, Value::Float(x)];
        bind("f", &FLOAT_FOR_INT, args, vec![], &no_aggregators)
    };
    assert_eq!(integral(60.0).unwrap().get(3), Some(&Value::Int(60)));
    assert!(integral(2.5).is_err());
    // int() of an infinity or a NaN raises in Python
    for bad in [f64::INFINITY, f64::NAN] {
        assert!(bind("f", &FLOAT_FOR_INT, none(bad, 1.0), vec![], &no_aggregators).is_err());
    }
    // integers and integer strings are unchanged
    let b = bind(
        "f",
        &FLOAT_FOR_INT,
        vec![Value::Int(3), Value::Str("4".into()), Value::Int(5)],
        vec![],
        &no_aggregators,
    )
    .unwrap();
    assert_eq!(
        (b.get(0), b.get(1), b.get(2)),
        (
            Some(&Value::Int(3)),
            Some(&Value::Int(4)),
            Some(&Value::Int(5))
        )
    );
}

#[test]
fn registry_lookup() {
    fn noop(
        _: &mut crate::eval::Session<'_>,
        _: &RequestContext,
        _: Invocation<'_>,
    ) -> Result<Value, QueryError> {
        Ok(Value::None)
    }
    let mut r = Registry::empty();
    assert!(r.is_empty());
    let def = FunctionDef {
        name: "sumSeries",
        description: "test function",
        group: "Combine",
        params: &MULTI,
        aggregator: true,
        run: noop,
    };
    r.register(def);
    r.alias("sum", def);
    assert_eq!(r.len(), 2);
    assert_eq!(r.get("sum").map(|f| f.name), Some("sum"));
    assert!(r.is_aggregator("sumSeries"));
    assert!(!r.is_aggregator("nope"));
    assert_eq!(
        r.iter().map(|f| f.name).collect::<Vec<_>>(),
        vec!["sum", "sumSeries"]
    );
    assert!(Registry::standard().is_aggregator("sumSeries"));
}
