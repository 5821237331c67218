//! `anomalyScore(seriesList)`: the scores sumi's streaming anomaly detector gave each
//! point of the input series when it was ingested (docs/anomaly.md).
//!
//! The server stores the score of every point of a watched series as a companion
//! series named [`score_path`]`(name)` (`_anomaly.` before the name, tags kept), with
//! the point's own timestamp. This function reads that companion over the request's
//! interval and names it `anomalyScore(<name>)`. A series that is not watched (or an
//! input whose name is not a stored series, such as `sumSeries(…)`) gives a series of
//! nulls with the input's interval and step, so the function composes with any other
//! (`maxSeries(anomalyScore(x.*))`). Not a graphite-web function.

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::args::take_series;
use crate::functions::params::{Param, ParamType as T};
use crate::functions::{FunctionDef, Invocation};
use crate::series::TimeSeries;

/// The first node of every companion score series.
pub use sumi_model::SCORE_PREFIX;

/// The name under which the scores of series `name` are stored: `_anomaly.<name>`
/// (for a tagged name, the prefix goes before the metric part, so the tags stay).
pub fn score_path(name: &str) -> String {
    let mut s = String::with_capacity(SCORE_PREFIX.len() + name.len());
    s.push_str(SCORE_PREFIX);
    s.push_str(name);
    s
}

/// Whether `path` is a score series (its first node is `_anomaly`).
pub fn is_score_path(path: &str) -> bool {
    path.strip_prefix("_anomaly")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// Whether a find or glob asks for score series explicitly: its text starts with
/// `_anomaly`. Other patterns (`*`, `**`, `*.cpu`) do not show them, so the tree and
/// globs look as they would without detection; `anomalyScore()` reads them by name.
pub fn pattern_shows_scores(pattern: &str) -> bool {
    pattern.starts_with("_anomaly")
}

static PARAMS: [Param; 1] = [Param::new("seriesList", T::SeriesList).required()];

pub(crate) static FUNCTIONS: &[FunctionDef] = &[FunctionDef {
    name: "anomalyScore",
    group: "Transform",
    description: "The anomaly score (0 to 1) that sumi's streaming detector gave each \
        point when it arrived.\n\n\
        One series per input, named anomalyScore(<name>); null where the detector gave \
        no score (series not watched by an [[anomaly]] rule in sumi.toml, warm-up, late \
        points). Scores of 0.6 and above are alarms.",
    params: &PARAMS,
    aggregator: false,
    run: anomaly_score,
}];

fn anomaly_score(
    session: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Result<Value, QueryError> {
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for input in series {
        let name = format!("anomalyScore({})", input.name);
        let scored_from = session.anomaly_scored_from(&input.name);
        let mut s = match session.fetch_exact(ctx, &score_path(&input.name))? {
            Some(mut scores) => {
                scores.tags = input.tags.clone();
                scores
            }
            None => {
                let mut nulls = TimeSeries::new(
                    name.clone(),
                    input.start,
                    input.end,
                    input.step,
                    vec![None; input.values.len()],
                );
                nulls.tags = input.tags.clone();
                nulls
            }
        };
        if let Some(from) = scored_from {
            fill_zero_scores(&mut s, &input, from);
        }
        s.name.clone_from(&name);
        s.path_expression = name;
        out.push(s);
    }
    Ok(Value::SeriesList(out))
}

/// A score of 0 is not stored: every slot of `scores` without a stored score that
/// holds a point of `input` at or after `scored_from` (the detector's first score)
/// scored 0. Slots before it (warm-up) and slots without a point stay null.
fn fill_zero_scores(scores: &mut TimeSeries, input: &TimeSeries, scored_from: i64) {
    if scores.step <= 0 || input.step <= 0 {
        return;
    }
    let n = scores.values.len() as i64;
    for (i, v) in input.values.iter().enumerate() {
        if v.is_none() {
            continue;
        }
        let ts = input.start + i as i64 * input.step;
        // the slot counts when it ends at or after the first score
        if ts + input.step - 1 < scored_from {
            continue;
        }
        let k = (ts - scores.start).div_euclid(scores.step);
        if (0..n).contains(&k) {
            let slot = &mut scores.values[k as usize];
            if slot.is_none() {
                *slot = Some(0.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_patterns_naming_scores_show_them() {
        assert!(is_score_path("_anomaly.a.b") && is_score_path("_anomaly"));
        assert!(!is_score_path("_anomalyx.a") && !is_score_path("a._anomaly"));
        assert!(pattern_shows_scores("_anomaly.*") && pattern_shows_scores("_anomaly"));
        assert!(!pattern_shows_scores("*") && !pattern_shows_scores("_*.a"));
    }

    #[test]
    fn score_paths_keep_tags() {
        assert_eq!(score_path("a.b"), "_anomaly.a.b");
        assert_eq!(score_path("cpu;host=a"), "_anomaly.cpu;host=a");
    }
}
