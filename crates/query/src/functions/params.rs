//! Typed parameter specs for functions, and the binding of call arguments to them —
//! graphite-web's `functions/params.py` (`Param`, `ParamTypes`, `validateParams`).
//!
//! Positional arguments fill the parameters in order; the surplus goes to the last
//! parameter when it takes `multiple` values. Keyword arguments may name only the
//! parameters after the positional ones. Every value is checked (and converted, as
//! Python would: an integer where a float is expected, `"true"` where a boolean is) by
//! its parameter's type, as graphite-web does with `ENFORCE_INPUT_VALIDATION = True`.
//! With graphite-web 1.1.10's default (`False`) a mismatch is only logged and the
//! function gets the value as written: a float given to an integer parameter is then
//! truncated by some functions (`int(n)`), used as it is by others (`dashed`'s
//! length, `log`'s base) and fails in the rest (a list index, `range`, `round`). Each
//! integer parameter says which with [`OnFloat`], so sumi answers whatever
//! graphite-web answers, with the value it would use, and refuses (HTTP 400) where
//! graphite-web fails with a server error.

use crate::attime::parse_time_offset;
use crate::error::QueryError;
use crate::eval::Value;
use crate::py;
use crate::py::number::py_int;

/// graphite-web's `ParamTypes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    Boolean,
    Date,
    Float,
    Integer,
    /// A time offset such as `1h` (checked with `parseTimeOffset`, kept as text).
    Interval,
    IntOrInterval,
    IntOrInf,
    /// A node index (an integer).
    Node,
    NodeOrTag,
    Series,
    SeriesList,
    SeriesLists,
    String,
    Tag,
    Any,
    /// An aggregation function name (`sum`, `avg`, `sumSeries`, …).
    AggFunc,
    /// An aggregation function name or the name of an aggregating series function.
    AggOrSeriesFunc,
}

impl ParamType {
    /// The name graphite-web's `/functions` endpoint shows.
    pub fn name(self) -> &'static str {
        match self {
            ParamType::Boolean => "boolean",
            ParamType::Date => "date",
            ParamType::Float => "float",
            ParamType::Integer => "integer",
            ParamType::Interval => "interval",
            ParamType::IntOrInterval => "intOrInterval",
            ParamType::IntOrInf => "intOrInf",
            ParamType::Node => "node",
            ParamType::NodeOrTag => "nodeOrTag",
            ParamType::Series => "series",
            ParamType::SeriesList => "seriesList",
            ParamType::SeriesLists => "seriesLists",
            ParamType::String => "string",
            ParamType::Tag => "tag",
            ParamType::Any => "any",
            ParamType::AggFunc => "aggFunc",
            ParamType::AggOrSeriesFunc => "aggOrSeriesFunc",
        }
    }
}

/// graphite-web's aggregation function names (`aggfuncs.py`), then its aliases.
pub const AGG_FUNCS: &[&str] = &[
    "average", "avg_zero", "median", "sum", "min", "max", "diff", "stddev", "count", "range",
    "multiply", "last", "rangeOf", "avg", "total", "current",
];

/// What graphite-web 1.1.10 (input validation off) does with a float given to an
/// `integer` or `node` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFloat {
    /// The function fails (a list index or slice, `range`, `round`, an `isinstance`
    /// assertion): refused as bad input.
    Refuse,
    /// The function calls `int()` on it: truncated toward zero (`highest(x, 2.9)` keeps
    /// two series).
    Truncate,
    /// The function uses the number as it is (a factor, a comparison, a name formatted
    /// with `%g`): kept as a float, which the function then reads.
    Keep,
    /// An integral float (`60.0`) works as the integer; with any other graphite-web's
    /// answer contradicts itself (the generators' `step`): refused.
    Integral,
}

/// A parameter's default, used when the argument is not given at all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DefaultValue {
    Int(i64),
    Float(f64),
    Str(&'static str),
    Bool(bool),
}

impl DefaultValue {
    fn to_value(self) -> Value {
        match self {
            DefaultValue::Int(i) => Value::Int(i),
            DefaultValue::Float(x) => Value::Float(x),
            DefaultValue::Str(s) => Value::Str(s.to_string()),
            DefaultValue::Bool(b) => Value::Bool(b),
        }
    }
}

/// One parameter of a function, built with `const` methods so that function tables
/// can be `static`:
/// `Param::new("n", ParamType::Integer).required()`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    pub name: &'static str,
    pub ty: ParamType,
    pub required: bool,
    pub default: Option<DefaultValue>,
    /// Takes every remaining positional argument (only the last parameter).
    pub multiple: bool,
    /// When not empty, the only accepted values (strings).
    pub options: &'static [&'static str],
    /// Values a client may offer as examples (`/functions` lists them; nothing checks
    /// them).
    pub suggestions: &'static [DefaultValue],
    /// For `integer` and `node` parameters: what a float becomes.
    pub on_float: OnFloat,
}

impl Param {
    pub const fn new(name: &'static str, ty: ParamType) -> Param {
        Param {
            name,
            ty,
            required: false,
            default: None,
            multiple: false,
            options: &[],
            suggestions: &[],
            on_float: OnFloat::Refuse,
        }
    }

    pub const fn on_float(mut self, on_float: OnFloat) -> Param {
        self.on_float = on_float;
        self
    }

    pub const fn required(mut self) -> Param {
        self.required = true;
        self
    }

    pub const fn multiple(mut self) -> Param {
        self.multiple = true;
        self
    }

    pub const fn default(mut self, value: DefaultValue) -> Param {
        self.default = Some(value);
        self
    }

    pub const fn options(mut self, options: &'static [&'static str]) -> Param {
        self.options = options;
        self
    }

    pub const fn suggestions(mut self, suggestions: &'static [DefaultValue]) -> Param {
        self.suggestions = suggestions;
        self
    }
}

/// Arguments matched to parameters: slot `i` holds what parameter `i` received (one
/// value, several for a `multiple` parameter, or its default; empty when absent
/// without a default). An explicit `None` argument stays `Value::None`, as in Python.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundArgs {
    slots: Vec<Vec<Value>>,
}

impl BoundArgs {
    /// The (first) value of parameter `i`.
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.slots.get(i).and_then(|s| s.first())
    }

    /// Every value of parameter `i` (for `multiple` parameters).
    pub fn all(&self, i: usize) -> &[Value] {
        self.slots.get(i).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Takes the values of parameter `i` out (to move series lists without copying).
    pub fn take(&mut self, i: usize) -> Vec<Value> {
        self.slots
            .get_mut(i)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub fn int(&self, i: usize) -> Option<i64> {
        match self.get(i)? {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn float(&self, i: usize) -> Option<f64> {
        match self.get(i)? {
            Value::Float(v) => Some(*v),
            Value::Int(v) => Some(*v as f64),
            _ => None,
        }
    }

    pub fn bool(&self, i: usize) -> Option<bool> {
        match self.get(i)? {
            Value::Bool(v) => Some(*v),
            _ => None,
        }
    }

    pub fn str(&self, i: usize) -> Option<&str> {
        match self.get(i)? {
            Value::Str(v) => Some(v),
            _ => None,
        }
    }
}

/// graphite-web's `validateParams`: matches `args` and `kwargs` to `params`, checks
/// and converts each value, and fills defaults. `aggregators` are the names of
/// aggregating series functions (for [`ParamType::AggOrSeriesFunc`]).
pub fn bind(
    function: &str,
    params: &[Param],
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    aggregators: &dyn Fn(&str) -> bool,
) -> Result<BoundArgs, QueryError> {
    let invalid = |message: String| QueryError::InvalidParams {
        function: function.to_string(),
        message,
    };
    let mut slots: Vec<Vec<Value>> = vec![Vec::new(); params.len()];
    let positional = args.len();
    let all_positional = positional + kwargs.len() > params.len();
    if all_positional && !params.last().is_some_and(|p| p.multiple) {
        return Err(invalid("too many parameters".to_string()));
    }
    for (i, arg) in args.into_iter().enumerate() {
        let index = i.min(params.len() - 1);
        let value = check(&params[index], arg, aggregators).map_err(invalid)?;
        slots[index].push(value);
    }
    let keyword_params = if all_positional {
        &[][..]
    } else {
        &params[positional..]
    };
    let mut used = vec![false; kwargs.len()];
    for (offset, param) in keyword_params.iter().enumerate() {
        let found = kwargs.iter().position(|(k, _)| k == param.name);
        let value = match found {
            Some(k) => {
                used[k] = true;
                kwargs[k].1.clone()
            }
            None => Value::None,
        };
        if matches!(value, Value::None) {
            if param.required {
                return Err(invalid(format!(
                    "missing required parameter {:?}",
                    param.name
                )));
            }
            continue;
        }
        slots[positional + offset].push(check(param, value, aggregators).map_err(invalid)?);
    }
    let unexpected: Vec<&str> = kwargs
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|((k, _), _)| k.as_str())
        .collect();
    if !unexpected.is_empty() {
        return Err(invalid(format!(
            "unexpected keyword arguments: {}",
            unexpected.join(", ")
        )));
    }
    for (slot, param) in slots.iter_mut().zip(params) {
        if slot.is_empty() {
            if let Some(default) = param.default {
                slot.push(default.to_value());
            }
        }
    }
    Ok(BoundArgs { slots })
}

/// `Param.validateValue`: `None` passes for optional parameters; options are checked
/// before the type.
fn check(param: &Param, value: Value, aggregators: &dyn Fn(&str) -> bool) -> Result<Value, String> {
    if matches!(value, Value::None) && (!param.required || param.default.is_some()) {
        return Ok(value);
    }
    let bad = |value: &Value| {
        format!(
            "invalid {:?} value for parameter {:?}: {}",
            param.ty.name(),
            param.name,
            describe(value)
        )
    };
    if !param.options.is_empty() {
        let allowed = matches!(&value, Value::Str(s) if param.options.contains(&s.as_str())
            || (param.ty == ParamType::AggFunc && is_agg_func(s)));
        if !allowed {
            return Err(format!(
                "invalid option for parameter {:?}: {}",
                param.name,
                describe(&value)
            ));
        }
    }
    match param.ty {
        ParamType::Boolean => match &value {
            Value::Bool(_) => Ok(value),
            Value::Str(s) if s.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            Value::Str(s) if s.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            Value::Int(0) => Ok(Value::Bool(false)),
            Value::Int(1) => Ok(Value::Bool(true)),
            Value::Float(x) if *x == 0.0 => Ok(Value::Bool(false)),
            Value::Float(x) if *x == 1.0 => Ok(Value::Bool(true)),
            Value::SeriesList(s) => Ok(Value::Bool(!s.is_empty())),
            _ => Err(bad(&value)),
        },
        ParamType::Float => match &value {
            Value::Float(_) => Ok(value),
            Value::Int(i) => Ok(Value::Float(*i as f64)),
            Value::Bool(b) => Ok(Value::Float(if *b { 1.0 } else { 0.0 })),
            Value::Str(s) => py::float(s).map(Value::Float).ok_or_else(|| bad(&value)),
            _ => Err(bad(&value)),
        },
        ParamType::Integer | ParamType::Node => integer(&value)
            .or_else(|| match (&value, param.on_float) {
                // Python's int() of an infinity or a NaN raises
                (Value::Float(x), OnFloat::Truncate) if x.is_finite() => {
                    Some(Value::Int(py_int(*x)))
                }
                (Value::Float(_), OnFloat::Keep) => Some(value.clone()),
                (Value::Float(x), OnFloat::Integral) if x.fract() == 0.0 => {
                    Some(Value::Int(py_int(*x)))
                }
                _ => None,
            })
            .ok_or_else(|| bad(&value)),
        // only `limit` of keepLastValue and interpolate, which compare a count with it:
        // any float works there as it is
        ParamType::IntOrInf => integer(&value)
            .or_else(|| match &value {
                Value::Float(_) => Some(value.clone()),
                Value::Str(s) if py::float(s) == Some(f64::INFINITY) => {
                    Some(Value::Float(f64::INFINITY))
                }
                _ => None,
            })
            .ok_or_else(|| bad(&value)),
        ParamType::Interval => match &value {
            Value::Str(s) if parse_time_offset(s).is_ok() => Ok(value),
            _ => Err(bad(&value)),
        },
        ParamType::SeriesList | ParamType::SeriesLists => match value {
            Value::SeriesList(_) => Ok(value),
            _ => Err(bad(&value)),
        },
        ParamType::AggFunc => match &value {
            Value::Str(s) if is_agg_func(s) => Ok(value),
            _ => Err(bad(&value)),
        },
        ParamType::AggOrSeriesFunc => match &value {
            Value::Str(s) if is_agg_func(s) || aggregators(s) => Ok(value),
            // graphite-web's validator answers False rather than raising
            _ => Ok(Value::Bool(false)),
        },
        ParamType::Date
        | ParamType::IntOrInterval
        | ParamType::NodeOrTag
        | ParamType::Series
        | ParamType::String
        | ParamType::Tag
        | ParamType::Any => Ok(value),
    }
}

/// `validateInteger`: floats are refused rather than truncated.
fn integer(value: &Value) -> Option<Value> {
    match value {
        Value::Int(_) => Some(value.clone()),
        Value::Bool(b) => Some(Value::Int(i64::from(*b))),
        Value::Str(s) => py::int(s).map(Value::Int),
        _ => None,
    }
}

/// An aggregation function name, or its deprecated `…Series` spelling.
pub fn is_agg_func(name: &str) -> bool {
    AGG_FUNCS.contains(&name)
        || name
            .strip_suffix("Series")
            .is_some_and(|base| AGG_FUNCS.contains(&base))
}

fn describe(value: &Value) -> String {
    match value {
        Value::SeriesList(s) => format!("a list of {} series", s.len()),
        Value::Str(s) => format!("{s:?}"),
        other => other.python_str(),
    }
}
