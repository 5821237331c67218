//! graphite-web's "Graph" group: functions that set drawing options for the graph
//! renderer (`alpha`, `color`, `dashed`, `lineWidth`, `secondYAxis`, `drawAsInfinite`,
//! `stacked`, `areaBetween`) or draw reference lines (`threshold`, `verticalLine`).
//! The options go to [`SeriesOptions`](crate::series::SeriesOptions); some functions
//! also rename the series and tag it, exactly as graphite-web does, which is what the
//! data formats (json, csv, raw) show.
//!
//! `stacked` keeps its running totals per stack name for the whole request, so that
//! several targets stack on each other. Deliberate differences (graphite-web fails with
//! a server error): `areaBetween` of other than two series is refused as bad input;
//! `verticalLine` accepts an epoch given as a number and reads relative times against
//! the request's `now`; without a label its series is named `None` (graphite-web's
//! JSON shows a null name).

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::args::{input_error, take_series};
use crate::functions::calculate::constant_line;
use crate::functions::params::{DefaultValue as D, OnFloat, Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl, Invocation};
use crate::py;
use crate::py::format::format_g;
use crate::series::{SeriesOptions, TimeSeries};

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
static ONLY_SERIES: [Param; 1] = [SERIES];
static ALPHA_PARAMS: [Param; 2] = [SERIES, Param::new("alpha", T::Float).required()];
static COLOR_PARAMS: [Param; 2] = [SERIES, Param::new("theColor", T::String).required()];
static DASHED_PARAMS: [Param; 2] = [
    SERIES,
    Param::new("dashLength", T::Integer)
        .default(D::Int(5))
        .on_float(OnFloat::Keep),
];
static LINE_WIDTH_PARAMS: [Param; 2] = [SERIES, Param::new("width", T::Float).required()];
static STACKED_PARAMS: [Param; 2] = [SERIES, Param::new("stack", T::String)];
static THRESHOLD_PARAMS: [Param; 3] = [
    Param::new("value", T::Float).required(),
    Param::new("label", T::String),
    Param::new("color", T::String),
];
static VERTICAL_LINE_PARAMS: [Param; 3] = [
    Param::new("ts", T::Date).required(),
    Param::new("label", T::String),
    Param::new("color", T::String),
];

const fn def(
    name: &'static str,
    params: &'static [Param],
    description: &'static str,
    run: FunctionImpl,
) -> FunctionDef {
    FunctionDef {
        name,
        group: "Graph",
        description,
        params,
        aggregator: false,
        run,
    }
}

/// The graph functions.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "alpha",
        &ALPHA_PARAMS,
        "Sets the opacity of the series' lines or areas (0 to 1).",
        alpha,
    ),
    def(
        "color",
        &COLOR_PARAMS,
        "Draws the series in the given colour.\n\n\
        A colour name (red, blue, …) or a hex code (ff0000, with an optional alpha byte).",
        color,
    ),
    def(
        "dashed",
        &DASHED_PARAMS,
        "Draws the series as dashed lines.\n\n\
        dashLength is the length of dashes and gaps in pixels (5 by default).",
        dashed,
    ),
    def(
        "lineWidth",
        &LINE_WIDTH_PARAMS,
        "Draws the series with lines of the given width in pixels.",
        line_width,
    ),
    def(
        "secondYAxis",
        &ONLY_SERIES,
        "Draws the series against a second y axis on the right.",
        second_y_axis,
    ),
    def(
        "drawAsInfinite",
        &ONLY_SERIES,
        "Draws positive values as vertical lines across the graph.\n\n\
        Zero is drawn at zero; null and negative values are not drawn. Meant for on/off \
        series such as deploys or exit codes.",
        draw_as_infinite,
    ),
    def(
        "stacked",
        &STACKED_PARAMS,
        "Stacks the series on each other as filled areas.\n\n\
        Each series is drawn on top of the running total of the previous ones; naming a \
        stack keeps separate totals, also across targets of one request.",
        stacked,
    ),
    def(
        "areaBetween",
        &ONLY_SERIES,
        "Fills the area between exactly two series.\n\n\
        The first series is the lower edge (drawn invisible), the second the upper edge; \
        use with areaMode=stacked.",
        area_between,
    ),
    def(
        "threshold",
        &THRESHOLD_PARAMS,
        "A horizontal line at a value, with an optional label and colour.",
        threshold,
    ),
    def(
        "verticalLine",
        &VERTICAL_LINE_PARAMS,
        "A vertical line at a time, with an optional label and colour.\n\n\
        The time is any from/until form and must lie within the requested interval.",
        vertical_line,
    ),
];

fn with_options(mut inv: Invocation<'_>, set: impl Fn(&mut TimeSeries)) -> Value {
    let mut series = take_series(&mut inv, 0);
    series.iter_mut().for_each(set);
    Value::SeriesList(series)
}

fn alpha(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let alpha = inv.args.float(1);
    Ok(with_options(inv, |s| s.options.alpha = alpha))
}

fn color(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let color = inv.args.str(1).map(str::to_string);
    Ok(with_options(inv, |s| s.options.color = color.clone()))
}

fn line_width(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let width = inv.args.float(1);
    Ok(with_options(inv, |s| s.options.line_width = width))
}

fn dashed(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    // an integer, or a float as written (graphite-web formats it with `%g`)
    let (length, shown) = match inv.args.get(1) {
        Some(Value::Float(x)) => (*x, Value::Float(*x).python_str()),
        _ => {
            let n = inv.args.int(1).unwrap_or(5);
            (n as f64, n.to_string())
        }
    };
    Ok(with_options(inv, |s| {
        s.tags.set("dashed", &shown);
        s.name = format!("dashed({}, {})", s.name, format_g(length));
        s.options.dashed = Some(length);
    }))
}

fn second_y_axis(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    Ok(with_options(inv, |s| {
        s.options.second_y_axis = true;
        s.tags.set("secondYAxis", "1");
        s.name = format!("secondYAxis({})", s.name);
    }))
}

fn draw_as_infinite(
    _: &mut Session<'_>,
    _: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    Ok(with_options(inv, |s| {
        s.options.draw_as_infinite = true;
        s.tags.set("drawAsInfinite", "1");
        s.name = format!("drawAsInfinite({})", s.name);
    }))
}

fn stacked(
    session: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let stack = match inv.args.get(1) {
        Some(Value::Str(s)) => s.clone(),
        _ => "__DEFAULT__".to_string(),
    };
    let default = stack == "__DEFAULT__";
    let series = take_series(&mut inv, 0);
    let totals = session.stack_totals(&stack);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let mut values = Vec::with_capacity(s.values.len());
        for (i, v) in s.values.iter().enumerate() {
            if totals.len() <= i {
                totals.push(0.0);
            }
            values.push(v.map(|v| {
                totals[i] += v;
                totals[i]
            }));
        }
        let name = if default {
            s.tags.set("stacked", &stack);
            format!("stacked({})", s.name)
        } else {
            s.name.clone()
        };
        // series.copy(name, values): options start afresh, then stacked
        out.push(TimeSeries {
            path_expression: name.clone(),
            name,
            values,
            values_per_point: 1,
            options: SeriesOptions {
                stacked: true,
                ..SeriesOptions::default()
            },
            ..s
        });
    }
    Ok(Value::SeriesList(out))
}

fn area_between(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let mut series = take_series(&mut inv, 0);
    if series.len() != 2 {
        return Err(input_error(
            inv.name,
            format!(
                "the series argument must reference exactly 2 series, not {}",
                series.len()
            ),
        ));
    }
    let name = format!("areaBetween({})", series[1].path_expression);
    series[1].tags.set("areaBetween", "1");
    let tags = series[1].tags.clone();
    series[0].tags = tags;
    series[0].options.stacked = true;
    series[0].options.invisible = true;
    series[1].options.stacked = true;
    for s in &mut series {
        s.name = name.clone();
    }
    Ok(Value::SeriesList(series))
}

fn threshold(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let value = inv.args.float(0).unwrap_or(0.0);
    let xff = session.x_files_factor(ctx);
    let mut line = constant_line(ctx, xff, Some(value), &py::float_repr(value));
    if let Some(label) = inv.args.str(1).filter(|l| !l.is_empty()) {
        line.name = label.to_string();
    }
    if let Some(color) = inv.args.str(2).filter(|c| !c.is_empty()) {
        line.options.color = Some(color.to_string());
    }
    Ok(Value::SeriesList(vec![line]))
}

fn vertical_line(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let ts = match inv.args.get(0) {
        Some(Value::Str(s)) => crate::attime::parse_at_time(s, ctx.tz, ctx.now)
            .map_err(|e| input_error(inv.name, e.to_string()))?,
        Some(Value::Int(i)) => *i,
        Some(Value::Float(x)) if x.is_finite() => *x as i64,
        other => {
            let what = other.map_or("nothing", Value::kind);
            return Err(input_error(
                inv.name,
                format!("ts must be a time, not {what}"),
            ));
        }
    };
    if ts < ctx.from {
        return Err(input_error(
            inv.name,
            format!("timestamp {ts} exists before start of range"),
        ));
    }
    if ts > ctx.until {
        return Err(input_error(
            inv.name,
            format!("timestamp {ts} exists after end of range"),
        ));
    }
    let (label, unnamed) = match inv.args.get(1) {
        Some(Value::Str(s)) => (s.clone(), false),
        _ => ("None".to_string(), true),
    };
    let mut line = TimeSeries::new(label, ts, ts, 1, vec![Some(1.0), Some(1.0)]);
    line.options.unnamed = unnamed;
    line.x_files_factor = session.x_files_factor(ctx);
    line.options.draw_as_infinite = true;
    if let Some(color) = inv.args.str(2).filter(|c| !c.is_empty()) {
        line.options.color = Some(color.to_string());
    }
    Ok(Value::SeriesList(vec![line]))
}
