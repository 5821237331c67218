//! graphite-web's "Transform" group: functions that turn each series into another one
//! — pointwise arithmetic, rates and running totals, gap filling, bucketing and time
//! shifting — plus `consolidateBy` and `setXFilesFactor` (graphite-web files them under
//! "Special"; they decide how series are consolidated, which the aggregations depend
//! on).
//!
//! - [`pointwise`]: one value at a time (`scale`, `offset`, `pow`, `log`, …).
//! - [`rates`]: `derivative`, `perSecond`, `integral`, ….
//! - [`gaps`]: `keepLastValue`, `interpolate`, `transformNull`, `delay`, ….
//! - [`buckets`]: `summarize`, `smartSummarize`, `hitcount`.
//! - [`time`]: `timeShift`, `timeStack`, `timeSlice`.
//! - [`consolidation`]: `consolidateBy`, `setXFilesFactor`.
//!
//! `isNonNull` and `transformNull` without a default give Python integers in
//! graphite-web (`1`, `0` in its JSON); sumi's values are floats (`1.0`, `0.0`).

mod buckets;
mod consolidation;
mod gaps;
mod pointwise;
mod rates;
mod time;

#[cfg(test)]
mod tests;

use crate::functions::params::{DefaultValue as D, OnFloat, Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl};

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();

static ONLY_SERIES: [Param; 1] = [SERIES];
static FACTOR: [Param; 2] = [SERIES, Param::new("factor", T::Float).required()];
static SECONDS: [Param; 2] = [SERIES, Param::new("seconds", T::Float).required()];
static CONSTANT: [Param; 2] = [SERIES, Param::new("constant", T::Float).required()];
static LIMIT: [Param; 2] = [
    SERIES,
    Param::new("limit", T::IntOrInf).default(D::Float(f64::INFINITY)),
];
// graphite-web's own default (None: the name shows no precision) differs from the 0
// it documents, so the parameter has none here
static ROUND: [Param; 2] = [SERIES, Param::new("precision", T::Integer)];
static LOG: [Param; 2] = [
    SERIES,
    Param::new("base", T::Integer)
        .default(D::Int(10))
        .on_float(OnFloat::Keep),
];
static BOUNDS: [Param; 3] = [
    SERIES,
    Param::new("maxValue", T::Float),
    Param::new("minValue", T::Float),
];
static DELAY: [Param; 2] = [SERIES, Param::new("steps", T::Integer).required()];
static INTEGRAL_BY_INTERVAL: [Param; 2] =
    [SERIES, Param::new("intervalUnit", T::String).required()];
// the default 0 is graphite-web's integer (its tag reads "0", a given 0 reads "0.0")
static TRANSFORM_NULL: [Param; 3] = [
    SERIES,
    Param::new("default", T::Float),
    Param::new("referenceSeries", T::SeriesList),
];
const INTERVAL_SUGGESTIONS: &[D] = &[D::Str("10min"), D::Str("1h"), D::Str("1d")];
static SUMMARIZE: [Param; 4] = [
    SERIES,
    Param::new("intervalString", T::Interval)
        .required()
        .suggestions(INTERVAL_SUGGESTIONS),
    Param::new("func", T::AggFunc).default(D::Str("sum")),
    Param::new("alignToFrom", T::Boolean).default(D::Bool(false)),
];
// graphite-web lists the unit names as options but, not enforcing them, accepts any
// unit it can read (`days`, `d`, `weeks4`): so does sumi
static SMART_SUMMARIZE: [Param; 4] = [
    SERIES,
    Param::new("intervalString", T::Interval)
        .required()
        .suggestions(INTERVAL_SUGGESTIONS),
    Param::new("func", T::AggFunc).default(D::Str("sum")),
    Param::new("alignTo", T::String),
];
static HITCOUNT: [Param; 3] = [
    SERIES,
    Param::new("intervalString", T::Interval)
        .required()
        .suggestions(INTERVAL_SUGGESTIONS),
    Param::new("alignToInterval", T::Boolean).default(D::Bool(false)),
];
const SHIFT_SUGGESTIONS: &[D] = &[
    D::Str("1h"),
    D::Str("6h"),
    D::Str("12h"),
    D::Str("1d"),
    D::Str("2d"),
    D::Str("7d"),
    D::Str("14d"),
    D::Str("30d"),
];
static TIME_SHIFT: [Param; 4] = [
    SERIES,
    Param::new("timeShift", T::Interval)
        .required()
        .suggestions(SHIFT_SUGGESTIONS),
    Param::new("resetEnd", T::Boolean).default(D::Bool(true)),
    Param::new("alignDst", T::Boolean).default(D::Bool(false)),
];
static TIME_STACK: [Param; 4] = [
    SERIES,
    Param::new("timeShiftUnit", T::Interval)
        .default(D::Str("1d"))
        .suggestions(SHIFT_SUGGESTIONS),
    Param::new("timeShiftStart", T::Integer)
        .default(D::Int(0))
        .on_float(OnFloat::Truncate),
    Param::new("timeShiftEnd", T::Integer)
        .default(D::Int(7))
        .on_float(OnFloat::Truncate),
];
static TIME_SLICE: [Param; 3] = [
    SERIES,
    Param::new("startSliceAt", T::Date).required(),
    Param::new("endSliceAt", T::Date).default(D::Str("now")),
];
static CONSOLIDATE_BY: [Param; 2] = [
    SERIES,
    Param::new("consolidationFunc", T::String)
        .required()
        .options(&[
            "sum", "average", "avg", "avg_zero", "min", "max", "first", "last",
        ]),
];
static X_FILES_FACTOR: [Param; 2] = [SERIES, Param::new("xFilesFactor", T::Float).required()];

const fn def(
    name: &'static str,
    params: &'static [Param],
    run: FunctionImpl,
    description: &'static str,
) -> FunctionDef {
    FunctionDef {
        name,
        group: "Transform",
        description,
        params,
        aggregator: false,
        run,
    }
}

const SET_X_FILES_FACTOR: FunctionDef = FunctionDef {
    name: "setXFilesFactor",
    group: "Special",
    description: "Sets the xFilesFactor of the series (short form: xFilesFactor).\n\n\
        The xFilesFactor (0 to 1) is the fraction of known values a consolidated point \
        needs not to be null, when maxDataPoints or series of different steps make points \
        cover several values. It also becomes the default for the aggregations evaluated \
        after it in the same request, e.g. sumSeries(xFilesFactor(a.*, 0.5)).",
    params: &X_FILES_FACTOR,
    aggregator: false,
    run: consolidation::set_x_files_factor,
};

/// The Transform group, with `consolidateBy` and `setXFilesFactor`.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "absolute",
        &ONLY_SERIES,
        pointwise::absolute,
        "The absolute value of each point.",
    ),
    def(
        "add",
        &CONSTANT,
        pointwise::add,
        "Adds a constant to each point.\n\n\
         Nulls stay null. The name shows the constant truncated to an integer, as \
         graphite-web writes it; offset() is the same with the constant as given.",
    ),
    def(
        "compressPeriodicGaps",
        &ONLY_SERIES,
        gaps::compress_periodic_gaps,
        "Removes the regular gaps of a series written less often than its step.\n\n\
         When the first values show a value every n steps with nulls between, the series \
         is read at n times its step (the last value of each period); otherwise it is \
         unchanged.",
    ),
    FunctionDef {
        name: "consolidateBy",
        group: "Special",
        description: "Sets how a series is consolidated when points must be merged.\n\n\
            One of sum, average (avg), avg_zero, min, max, first, last. It applies when \
            maxDataPoints (or a graph narrower than the points) merges points, and when \
            functions align series of different steps. The default is average.",
        params: &CONSOLIDATE_BY,
        aggregator: false,
        run: consolidation::consolidate_by,
    },
    def(
        "delay",
        &DELAY,
        gaps::delay,
        "Shifts the values by a number of steps.\n\n\
         A positive number moves values later (nulls fill the start), a negative one \
         earlier (nulls fill the end); the timestamps stay.",
    ),
    def(
        "derivative",
        &ONLY_SERIES,
        rates::derivative,
        "The difference between each point and the one before.\n\n\
         Null after or at a null. See nonNegativeDerivative() for counters.",
    ),
    def(
        "exp",
        &ONLY_SERIES,
        pointwise::exp,
        "e raised to the power of each point.",
    ),
    def(
        "hitcount",
        &HITCOUNT,
        buckets::hitcount,
        "Counts hits per interval from a series of rates per second.\n\n\
         Each point's value times the seconds of its step that fall in a bucket is added to \
         that bucket. Buckets end at the end of the series; with alignToInterval=true they \
         start at the request's from rounded down to the interval's unit.",
    ),
    def(
        "integral",
        &ONLY_SERIES,
        rates::integral,
        "The running total of the series.\n\n\
         Each point is the sum of all the values up to it; nulls stay null and add \
         nothing.",
    ),
    def(
        "integralByInterval",
        &INTEGRAL_BY_INTERVAL,
        rates::integral_by_interval,
        "The running total, restarting from zero every interval.\n\n\
         Intervals count from the request's from, e.g. integralByInterval(x, '1d') gives \
         the total so far each day. Nulls keep the total.",
    ),
    def(
        "interpolate",
        &LIMIT,
        gaps::interpolate,
        "Fills runs of nulls on the straight line between the values around them.\n\n\
         Only runs of at most limit nulls (any length by default) that have a value on \
         both sides are filled.",
    ),
    def(
        "invert",
        &ONLY_SERIES,
        pointwise::invert,
        "1 divided by each point (null for 0).",
    ),
    def(
        "isNonNull",
        &ONLY_SERIES,
        pointwise::is_non_null,
        "1 where the series has a value, 0 where it is null.\n\n\
         sumSeries(isNonNull(x.*)) counts the series that report at each point.",
    ),
    def(
        "keepLastValue",
        &LIMIT,
        gaps::keep_last_value,
        "Fills nulls with the last value before them.\n\n\
         Only runs of at most limit nulls (any length by default) are filled, the end of \
         the series included.",
    ),
    def(
        "log",
        &LOG,
        pointwise::log,
        "The logarithm of each point, in base 10 or the base given.\n\n\
         Values at or below zero give null.",
    ),
    def(
        "logit",
        &ONLY_SERIES,
        pointwise::logit,
        "The logit of each point: log(x / (1 - x)).\n\n\
         Null outside 0 < x < 1.",
    ),
    def(
        "minMax",
        &ONLY_SERIES,
        pointwise::min_max,
        "Scales each series to 0..1 between its own minimum and maximum.\n\n\
         A series whose values are all equal becomes all 0.",
    ),
    def(
        "nonNegativeDerivative",
        &BOUNDS,
        rates::non_negative_derivative,
        "The increase since the previous point, for counters.\n\n\
         A decrease gives null, unless maxValue is given: then the counter is taken to \
         have wrapped at maxValue (and restarted at minValue, when given). Values above \
         maxValue or below minValue give null.",
    ),
    def(
        "offset",
        &FACTOR,
        pointwise::offset,
        "Adds a constant to each point (nulls stay null).",
    ),
    def(
        "offsetToZero",
        &ONLY_SERIES,
        pointwise::offset_to_zero,
        "Subtracts the series' minimum from each point, so that it starts at zero.",
    ),
    def(
        "perSecond",
        &BOUNDS,
        rates::per_second,
        "The increase per second since the previous point, for counters.\n\n\
         As nonNegativeDerivative(), divided by the step and rounded to six decimals.",
    ),
    def(
        "pow",
        &FACTOR,
        pointwise::pow,
        "Raises each point to a power.\n\n\
         Null where the power is undefined or too large (a negative value to a fractional \
         power, 0 to a negative one).",
    ),
    def(
        "round",
        &ROUND,
        pointwise::round,
        "Rounds each point to a number of decimals (0 by default).\n\n\
         A negative precision rounds to tens, hundreds…; halves go to the even neighbour.",
    ),
    def(
        "scale",
        &FACTOR,
        pointwise::scale,
        "Multiplies each point by a factor.",
    ),
    def(
        "scaleToSeconds",
        &SECONDS,
        pointwise::scale_to_seconds,
        "Scales per-step values to values per a number of seconds.\n\n\
         Each point is multiplied by seconds / step and rounded to six decimals, e.g. \
         scaleToSeconds(x, 1) turns per-minute counts of a 60 s series into per-second \
         rates.",
    ),
    SET_X_FILES_FACTOR,
    def(
        "sigmoid",
        &ONLY_SERIES,
        pointwise::sigmoid,
        "The logistic function of each point: 1 / (1 + e^-x).",
    ),
    def(
        "smartSummarize",
        &SMART_SUMMARIZE,
        buckets::smart_summarize,
        "Aggregates the series into buckets of a fixed interval, starting at from.\n\n\
         Like summarize(), but the buckets start at the request's from, rounded down to \
         the unit alignTo names (years, months, weeks (weeks4: on Thursdays), days, hours, \
         minutes, seconds) when given.",
    ),
    def(
        "squareRoot",
        &ONLY_SERIES,
        pointwise::square_root,
        "The square root of each point (null for negative values).",
    ),
    def(
        "summarize",
        &SUMMARIZE,
        buckets::summarize,
        "Aggregates the series into buckets of a fixed interval.\n\n\
         Each bucket is func (sum by default; any aggregation name) of its points. \
         Buckets are aligned to multiples of the interval since the epoch, or to the \
         series' start with alignToFrom=true. A bucket with fewer known points than the \
         xFilesFactor asks is null.",
    ),
    def(
        "timeShift",
        &TIME_SHIFT,
        time::time_shift,
        "The series as it was a time ago, drawn over the current interval.\n\n\
         A shift without a sign goes back in time ('1d' = '-1d'); '+1h' goes forward. \
         resetEnd=false keeps the shifted series' own length. alignDst=true compensates \
         an hour when daylight saving time differs between the two intervals.",
    ),
    def(
        "timeSlice",
        &TIME_SLICE,
        time::time_slice,
        "Keeps the values between two times, nulls elsewhere.\n\n\
         Both ends are included and read as from/until are (e.g. '-1h', '12:00_20240101'); \
         the end defaults to now.",
    ),
    def(
        "timeStack",
        &TIME_STACK,
        time::time_stack,
        "The series shifted by each multiple of a unit, stacked over the same interval.\n\n\
         timeStack(x, '1d', 0, 7) gives x today and on each of the 6 days before (the \
         end is excluded), e.g. to average them with averageSeries().",
    ),
    def(
        "transformNull",
        &TRANSFORM_NULL,
        gaps::transform_null,
        "Replaces nulls with a value (0 by default).\n\n\
         With referenceSeries, only at points where one of the reference series has a \
         value; elsewhere the null stays.",
    ),
    FunctionDef {
        name: "xFilesFactor",
        ..SET_X_FILES_FACTOR
    },
];
