//! graphite-web's "Combine" group: functions that merge several series into fewer —
//! aggregations (`sumSeries`, `aggregate`, …), ratios (`asPercent`, `divideSeries`,
//! `weightedAverage`) and groupings (`groupByNode`, `groupByTags`, `reduceSeries`, …).
//!
//! - [`aggregate`]: graphite-web's `aggregate()` core (alignment of steps, rows,
//!   xFilesFactor, names and tags of the result), shared by the others.
//! - [`aggregating`]: the functions built directly on it.
//! - [`ratio`]: the dividing functions.
//! - [`grouping`]: the grouping functions.
//!
//! Names, tags, path expressions, steps and nulls are graphite-web 1.1.10's; each file
//! says where sumi deliberately answers differently (always where graphite-web fails
//! with a server error). One difference of spelling only: where graphite-web computes
//! Python integers (`countSeries`, the `count` aggregation) its JSON writes `3`; sumi's
//! values are floats, written `3.0` — the same number to any JSON reader.

pub(crate) mod aggregate;
mod aggregating;
mod grouping;
mod ratio;

#[cfg(test)]
mod tests;

use crate::functions::params::{DefaultValue as D, OnFloat, Param, ParamType as T};
use crate::functions::{FunctionDef, FunctionImpl};

const GROUP: &str = "Combine";

const SERIES: Param = Param::new("seriesList", T::SeriesList).required();
const SERIES_LISTS: Param = Param::new("seriesLists", T::SeriesList)
    .required()
    .multiple();
const FIRST: Param = Param::new("seriesListFirstPos", T::SeriesList).required();
const SECOND: Param = Param::new("seriesListSecondPos", T::SeriesList).required();
/// graphite-web tests each node index with `in positions`: a float equal to an
/// integer matches it, any other float matches nothing.
const POSITION: Param = Param::new("position", T::Node)
    .multiple()
    .on_float(OnFloat::Keep);

static AGGREGATE: [Param; 3] = [
    SERIES,
    Param::new("func", T::AggFunc).required(),
    Param::new("xFilesFactor", T::Float),
];
static AGGREGATE_LISTS: [Param; 4] = [
    FIRST,
    SECOND,
    Param::new("func", T::AggFunc).required(),
    Param::new("xFilesFactor", T::Float),
];
static AGGREGATE_WILDCARDS: [Param; 3] =
    [SERIES, Param::new("func", T::AggFunc).required(), POSITION];
static LISTS: [Param; 1] = [SERIES_LISTS];
static PAIRS: [Param; 2] = [FIRST, SECOND];
static WILDCARDS: [Param; 2] = [SERIES, POSITION];
static OPTIONAL_LISTS: [Param; 1] = [Param::new("seriesLists", T::SeriesList).multiple()];
static POW: [Param; 1] = [Param::new("seriesList", T::SeriesList)
    .required()
    .multiple()];
static PERCENTILE: [Param; 3] = [
    SERIES,
    Param::new("n", T::Float).required(),
    Param::new("interpolate", T::Boolean).default(D::Bool(false)),
];
static AS_PERCENT: [Param; 3] = [
    SERIES,
    Param::new("total", T::Any),
    Param::new("nodes", T::NodeOrTag).multiple(),
];
static DIVIDE_LISTS: [Param; 2] = [
    Param::new("dividendSeriesList", T::SeriesList).required(),
    Param::new("divisorSeriesList", T::SeriesList).required(),
];
static DIVIDE: [Param; 2] = [
    Param::new("dividendSeriesList", T::SeriesList).required(),
    Param::new("divisorSeries", T::SeriesList).required(),
];
static WEIGHTED: [Param; 3] = [
    Param::new("seriesListAvg", T::SeriesList).required(),
    Param::new("seriesListWeight", T::SeriesList).required(),
    Param::new("nodes", T::NodeOrTag).multiple(),
];
static MAP: [Param; 2] = [
    SERIES,
    Param::new("mapNodes", T::NodeOrTag).required().multiple(),
];
static REDUCE: [Param; 4] = [
    Param::new("seriesLists", T::SeriesLists).required(),
    Param::new("reduceFunction", T::String).required(),
    Param::new("reduceNode", T::Node).required(),
    Param::new("reduceMatchers", T::String)
        .required()
        .multiple(),
];
static APPLY: [Param; 4] = [
    SERIES,
    Param::new("nodeNum", T::Node).required(),
    Param::new("templateFunction", T::String).required(),
    Param::new("newName", T::String),
];
static GROUP_BY_NODE: [Param; 3] = [
    SERIES,
    Param::new("nodeNum", T::NodeOrTag).required(),
    Param::new("callback", T::AggOrSeriesFunc).default(D::Str("average")),
];
static GROUP_BY_NODES: [Param; 3] = [
    SERIES,
    Param::new("callback", T::AggOrSeriesFunc).required(),
    Param::new("nodes", T::NodeOrTag).multiple(),
];
static GROUP_BY_TAGS: [Param; 3] = [
    SERIES,
    Param::new("callback", T::AggOrSeriesFunc).required(),
    Param::new("tags", T::Tag).required().multiple(),
];

const fn def(
    name: &'static str,
    params: &'static [Param],
    aggregator: bool,
    run: FunctionImpl,
    description: &'static str,
) -> FunctionDef {
    FunctionDef {
        name,
        group: GROUP,
        description,
        params,
        aggregator,
        run,
    }
}

const SUM_SERIES: FunctionDef = def(
    "sumSeries",
    &LISTS,
    true,
    aggregating::sum_series,
    "The sum of the series at each point (short form: sum).\n\n\
     Series of different steps are first consolidated to their least common multiple. \
     A point is null when no series has a value there, or fewer than the request's \
     xFilesFactor of them. See integral() for a sum over time.",
);
const AVERAGE_SERIES: FunctionDef = def(
    "averageSeries",
    &LISTS,
    true,
    aggregating::average_series,
    "The average of the series at each point (short form: avg).\n\n\
     Nulls are left out of the average; series of different steps are consolidated to \
     their least common multiple first.",
);
const AS_PERCENT_DEF: FunctionDef = def(
    "asPercent",
    &AS_PERCENT,
    true,
    ratio::as_percent,
    "Each series as a percentage of a total (short form: pct).\n\n\
     Without a total, the total is the sum of all the series. The total may be a number, \
     one series, or as many series as the first argument (then paired by sorted name). \
     With nodes, series and totals are matched by those nodes (or tags), and a series \
     without a match gives an all-null series named with MISSING.",
);
const MAP_SERIES: FunctionDef = def(
    "mapSeries",
    &MAP,
    false,
    grouping::map_series,
    "Groups series by the nodes given, for reduceSeries (short form: map).\n\n\
     The series come back regrouped, each group's series together, groups in order of \
     first appearance.",
);
const REDUCE_SERIES: FunctionDef = def(
    "reduceSeries",
    &REDUCE,
    false,
    grouping::reduce_series,
    "Applies a function to matched sets of series (short form: reduce).\n\n\
     Series whose node reduceNode is one of the matchers are gathered by the rest of their \
     name up to that node; the function is called with one series per matcher, in the \
     matchers' order, and the result is named <prefix>.reduce.<function>. Usually fed by \
     mapSeries, e.g. reduceSeries(mapSeries(disk.*.*,1),'asPercent',2,'used','total').",
);

/// The Combine group.
pub(crate) static FUNCTIONS: &[FunctionDef] = &[
    def(
        "aggregate",
        &AGGREGATE,
        false,
        aggregating::aggregate_fn,
        "Combines the series into one with an aggregation function.\n\n\
         func is one of average (avg), avg_zero, median, sum (total), min, max, diff, \
         stddev, count, range (rangeOf), multiply, last (current); aggregate(x, 'sum') is \
         sumSeries(x). xFilesFactor (default: the request's) is the fraction of series \
         that must have a value at a point for it not to be null.",
    ),
    def(
        "aggregateSeriesLists",
        &AGGREGATE_LISTS,
        false,
        aggregating::aggregate_series_lists,
        "Combines two lists pairwise with an aggregation function.\n\n\
         The first series of each list are combined, then the second ones, and so on; the \
         lists must be of the same length. Each result is named <func>Series(a,b).",
    ),
    def(
        "aggregateWithWildcards",
        &AGGREGATE_WILDCARDS,
        false,
        aggregating::aggregate_with_wildcards,
        "Combines the series that differ only at the given node positions.\n\n\
         Each group is aggregated with func and named after the nodes that remain, e.g. \
         aggregateWithWildcards(host.cpu-*.user, 'sum', 1) gives host.user.",
    ),
    def(
        "applyByNode",
        &APPLY,
        false,
        grouping::apply_by_node,
        "Evaluates a template target once per distinct name prefix.\n\n\
         For each prefix of the names up to node nodeNum, the template with % replaced by \
         the prefix is evaluated, e.g. applyByNode(servers.*.cpu.total, 1, \
         'divideSeries(%.cpu.user, %.cpu.total)'). newName, with % replaced too, renames \
         the results.",
    ),
    AS_PERCENT_DEF,
    AVERAGE_SERIES,
    def(
        "averageSeriesWithWildcards",
        &WILDCARDS,
        true,
        aggregating::average_series_with_wildcards,
        "Averages the series that differ only at the given node positions.\n\n\
         Each group is named after the nodes that remain.",
    ),
    FunctionDef {
        name: "avg",
        ..AVERAGE_SERIES
    },
    def(
        "countSeries",
        &OPTIONAL_LISTS,
        true,
        aggregating::count_series,
        "The number of series, as a series.\n\n\
         Every point is the number of series given (null or not). Without any argument it \
         is a line at 0.",
    ),
    def(
        "diffSeries",
        &LISTS,
        true,
        aggregating::diff_series,
        "The first series minus all the others, point by point.\n\n\
         At each point, the first series that has a value minus every other value there; \
         nulls are skipped.",
    ),
    def(
        "diffSeriesLists",
        &PAIRS,
        true,
        aggregating::diff_series_lists,
        "Subtracts two lists pairwise: first[i] - second[i].\n\n\
         The lists must be of the same length.",
    ),
    def(
        "divideSeries",
        &DIVIDE,
        false,
        ratio::divide_series,
        "Divides each series by one divisor series.\n\n\
         Points where the divisor is null or zero are null. The divisor must be exactly \
         one series; when it matches none, every series is all null and named \
         divideSeries(x,MISSING).",
    ),
    def(
        "divideSeriesLists",
        &DIVIDE_LISTS,
        false,
        ratio::divide_series_lists,
        "Divides two lists pairwise: dividend[i] / divisor[i].\n\n\
         The lists must be of the same length; division by null or zero gives null.",
    ),
    def(
        "group",
        &OPTIONAL_LISTS,
        false,
        aggregating::group,
        "Puts several series lists together into one list.",
    ),
    def(
        "groupByNode",
        &GROUP_BY_NODE,
        false,
        grouping::group_by_node,
        "Combines the series that share the node at nodeNum.\n\n\
         Each group is combined with callback (an aggregation name or an aggregating \
         function, average by default) and named after that node. nodeNum may also be a \
         tag name.",
    ),
    def(
        "groupByNodes",
        &GROUP_BY_NODES,
        false,
        grouping::group_by_nodes,
        "Combines the series that share the nodes given.\n\n\
         Each group is combined with callback and named after its nodes joined with dots; \
         nodes may be tag names too.",
    ),
    def(
        "groupByTags",
        &GROUP_BY_TAGS,
        false,
        grouping::group_by_tags,
        "Combines the series that share the values of the tags given.\n\n\
         Each group is combined with callback and named name;tag=value;… (tags sorted), \
         where name is the series' common name tag, or the callback's name when they \
         differ.",
    ),
    FunctionDef {
        name: "map",
        ..MAP_SERIES
    },
    MAP_SERIES,
    def(
        "maxSeries",
        &LISTS,
        true,
        aggregating::max_series,
        "The largest value of the series at each point.",
    ),
    def(
        "minSeries",
        &LISTS,
        true,
        aggregating::min_series,
        "The smallest value of the series at each point.",
    ),
    def(
        "multiplySeries",
        &LISTS,
        true,
        aggregating::multiply_series,
        "The product of the series at each point.\n\n\
         A point is null when any series is null there. A single series is returned \
         unchanged.",
    ),
    def(
        "multiplySeriesLists",
        &PAIRS,
        true,
        aggregating::multiply_series_lists,
        "Multiplies two lists pairwise: first[i] * second[i].\n\n\
         The lists must be of the same length.",
    ),
    def(
        "multiplySeriesWithWildcards",
        &WILDCARDS,
        true,
        aggregating::multiply_series_with_wildcards,
        "Multiplies the series that differ only at the given node positions.\n\n\
         Each group is named after the nodes that remain.",
    ),
    FunctionDef {
        name: "pct",
        ..AS_PERCENT_DEF
    },
    def(
        "percentileOfSeries",
        &PERCENTILE,
        false,
        aggregating::percentile_of_series,
        "The n-th percentile of the series' values at each point.\n\n\
         Nulls are left out. Without interpolate, the value is one of the series' values \
         (nearest rank); with interpolate=true, it is interpolated between the two nearest.",
    ),
    def(
        "powSeries",
        &POW,
        true,
        aggregating::pow_series,
        "Raises the first series to the power of the second, and so on.\n\n\
         A point is null when any series is null there or the power is undefined.",
    ),
    def(
        "rangeOfSeries",
        &LISTS,
        true,
        aggregating::range_of_series,
        "The difference between the largest and smallest value at each point.",
    ),
    FunctionDef {
        name: "reduce",
        ..REDUCE_SERIES
    },
    REDUCE_SERIES,
    def(
        "stddevSeries",
        &LISTS,
        true,
        aggregating::stddev_series,
        "The standard deviation of the series' values at each point.\n\n\
         The population standard deviation of the non-null values.",
    ),
    FunctionDef {
        name: "sum",
        ..SUM_SERIES
    },
    SUM_SERIES,
    def(
        "sumSeriesLists",
        &PAIRS,
        true,
        aggregating::sum_series_lists,
        "Adds two lists pairwise: first[i] + second[i].\n\n\
         The lists must be of the same length.",
    ),
    def(
        "sumSeriesWithWildcards",
        &WILDCARDS,
        true,
        aggregating::sum_series_with_wildcards,
        "Adds up the series that differ only at the given node positions.\n\n\
         Each group is named after the nodes that remain, e.g. \
         sumSeriesWithWildcards(host.cpu-*.user, 1) gives host.user.",
    ),
    def(
        "weightedAverage",
        &WEIGHTED,
        false,
        ratio::weighted_average,
        "The average of one list weighted by another.\n\n\
         Series of the two lists are paired by the nodes given (or tags); the result is \
         sum(avg * weight) / sum(weight) at each point.",
    ),
];
