//! Graph images and summaries: a graph's (or a complex graph's) views evaluated
//! over its period and drawn with the rrd preset of `sumi_render::graph`, through
//! the image module every route shares (`crate::image`).
//!
//! GrowthForecast's `width`/`height` are rrdgraph's: the size of the plot, not of the
//! image. The image is made larger by the room the title, the axes and the legend
//! take, about as rrdgraph does, except with `graphonly=1`.

use axum::response::Response;
use chrono_tz::Tz;
use sumi_query::series::TimeSeries;
use sumi_query::{Evaluator, RequestContext, TimeRange};
use sumi_render::graph::{DrawType, GraphError, GraphOptions, GraphSeries};

use super::db::{Graph, Vrule};
use super::view::{data_step, target, Cf, Gmode, GraphParams, Period, SeededSource};
use super::GfError;
use crate::{image, AppState};

/// One line or area of a graph.
#[derive(Clone, Debug)]
pub struct Item {
    pub graph: Graph,
    pub draw: DrawType,
    pub gmode: Gmode,
    /// Stacked on the items before it (ignored for the first).
    pub stack: bool,
}

impl Item {
    /// A graph drawn alone, in `gmode`, with its own type for that view.
    pub fn single(graph: Graph, gmode: Gmode) -> Item {
        let draw = match gmode {
            Gmode::Gauge => &graph.draw,
            Gmode::Subtract => &graph.stype,
        };
        Item {
            draw: draw.parse().unwrap_or(DrawType::Area),
            graph,
            gmode,
            stack: false,
        }
    }
}

/// One evaluated item: its values over the period (empty when it has none).
#[derive(Clone, Debug)]
pub struct Evaluated {
    pub name: String,
    /// `service/section/graph` (or `total`), the key of summaries.
    pub key: String,
    pub series: Option<TimeSeries>,
}

/// Reads every item's view, and with `sumup` a `total` of them.
pub fn evaluate(
    state: &AppState,
    items: &[Item],
    period: &Period,
    cf: Cf,
    sumup: bool,
    tz: Tz,
) -> Result<Vec<Evaluated>, GfError> {
    let counters = items
        .iter()
        .filter(|i| i.graph.derive)
        .map(|i| i.graph.series.clone());
    // a cluster node reads its graphs' series from every partition's replicas (a
    // partial read is counted in /metrics; GrowthForecast's answers have no header)
    let cluster = state
        .fanout
        .as_deref()
        .map(|f| crate::fanout::ClusterSource::new(f, crate::source::QueryLimits::UNLIMITED, None));
    let inner: &dyn sumi_query::source::SeriesSource = match &cluster {
        Some(c) => c,
        None => &state.source,
    };
    let source = SeededSource::new(inner, counters);
    let evaluator = Evaluator::new(&source, &state.functions);
    let now = period.until.max(crate::unix_now());
    let ctx = RequestContext::new(
        TimeRange {
            from: period.from,
            until: period.until,
            now,
        },
        tz,
    );
    let targets = items
        .iter()
        .map(|i| {
            // the subtract view depends on the step of the archive the range is read from
            let step = match i.gmode {
                Gmode::Subtract => data_step(&state.source, &i.graph.series, period, now)
                    .map_err(|e| GfError::Query(e.to_string()))?
                    .unwrap_or(period.base),
                Gmode::Gauge => period.base,
            };
            Ok(target(&i.graph, i.gmode, period, cf, step))
        })
        .collect::<Result<Vec<String>, GfError>>()?;
    let mut out = Vec::with_capacity(items.len() + 1);
    for (item, t) in items.iter().zip(&targets) {
        let series = evaluator
            .evaluate_targets(&ctx, std::slice::from_ref(t))
            .map_err(|e| GfError::Query(e.to_string()))?
            .into_iter()
            .next();
        let g = &item.graph;
        out.push(Evaluated {
            name: g.graph_name.clone(),
            key: format!("{}/{}/{}", g.service_name, g.section_name, g.graph_name),
            series,
        });
    }
    if sumup && !targets.is_empty() {
        let total = format!("sumSeries({})", targets.join(","));
        let series = evaluator
            .evaluate_targets(&ctx, &[total])
            .map_err(|e| GfError::Query(e.to_string()))?
            .into_iter()
            .next();
        out.push(Evaluated {
            name: "total".into(),
            key: "total".into(),
            series,
        });
    }
    if let Some(c) = &cluster {
        c.finish();
    }
    Ok(out)
}

/// `[cur, avg, max, min]` of a series (`None` when it has no value), as
/// GrowthForecast's `/summary` and its legend report them.
pub fn stats(series: Option<&TimeSeries>) -> [Option<f64>; 4] {
    let Some(s) = series else {
        return [None; 4];
    };
    let known: Vec<f64> = s
        .values
        .iter()
        .flatten()
        .copied()
        .filter(|v| !v.is_nan())
        .collect();
    if known.is_empty() {
        return [None; 4];
    }
    let sum: f64 = known.iter().sum();
    [
        known.last().copied(),
        Some(sum / known.len() as f64),
        known.iter().copied().reduce(f64::max),
        known.iter().copied().reduce(f64::min),
    ]
}

/// The image size for rrdgraph's plot size `w`×`h`.
fn image_size(p: &GraphParams, legend_rows: usize) -> (u32, u32) {
    if p.graph_only {
        return (p.width, p.height);
    }
    let title = if p.no_title { 10 } else { 30 };
    let legend = if p.legend {
        16 * legend_rows as u32 + 8
    } else {
        0
    };
    let vlabel = if p.vertical_label.is_some() { 16 } else { 0 };
    (
        (p.width + 86 + vlabel).min(4000),
        (p.height + title + 26 + legend).min(4000),
    )
}

/// Draws evaluated items (in order, `items[i]` for `evaluated[i]`; a `total` last)
/// and answers with the image.
pub fn draw(
    items: &[Item],
    evaluated: &[Evaluated],
    vrules: &[Vrule],
    params: &GraphParams,
    title_prefix: &str,
    tz: Tz,
) -> Result<Response, GraphError> {
    let period = &params.period;
    let mut opts = GraphOptions::rrd();
    let vrule_rows = if params.vrule_legend {
        vrules.iter().filter(|v| !v.description.is_empty()).count()
    } else {
        0
    };
    let (w, h) = image_size(params, evaluated.len() + vrule_rows);
    opts.width = w;
    opts.height = h;
    if !params.no_title {
        opts.title = format!("{title_prefix}{}", period.title);
    }
    opts.hide_legend = Some(!params.legend);
    opts.graph_only = params.graph_only;
    if params.logarithmic {
        opts.log_base = Some(10.0);
    }
    opts.vtitle = params.vertical_label.clone().unwrap_or_else(|| {
        items
            .first()
            .map(|i| i.graph.unit.clone())
            .unwrap_or_default()
    });
    if params.rigid {
        opts.y.min = params.lower_limit.or(Some(0.0));
        opts.y.max = params.upper_limit.map(sumi_render::graph::AxisMax::Value);
    } else {
        if let Some(l) = params.lower_limit {
            opts.soft_min = Some(l);
        }
        // GrowthForecast draws with `-l 0 -u 2`: zero is always on the axis, also when
        // every value is below it (a falling subtract)
        opts.soft_max = Some(params.upper_limit.unwrap_or(0.0));
    }
    if let Some(bg) = &params.background {
        opts.background = bg.clone();
    }
    if let Some(fg) = &params.font_color {
        opts.foreground = fg.clone();
    }
    let step = period.resolution.max(1);
    let start = period.from - period.from.rem_euclid(step);
    let slots = ((period.until - start) / step + 1).max(1) as usize;
    let mut series = Vec::with_capacity(evaluated.len() + vrules.len());
    for (i, ev) in evaluated.iter().enumerate() {
        let mut gs = match &ev.series {
            Some(ts) => GraphSeries::from_time_series(ts),
            None => GraphSeries::new("", start, step, vec![None; slots]),
        };
        gs.name = ev.name.clone();
        match items.get(i) {
            Some(item) => {
                gs = gs.with_draw(item.draw, item.stack && i > 0);
                gs.color = Some(item.graph.color.clone());
            }
            None => {
                // the total: in the legend only, as rrdgraph's LINE0
                gs.invisible = true;
                gs.color = Some("#cccccc".into());
            }
        }
        series.push(gs);
    }
    for v in vrules {
        let at = ((v.time - start) / step).clamp(0, slots as i64 - 1) as usize;
        let mut values = vec![None; slots];
        if let Some(slot) = values.get_mut(at) {
            *slot = Some(1.0);
        }
        let name = if params.vrule_legend {
            v.description.clone()
        } else {
            String::new()
        };
        let mut gs = GraphSeries::new(name, start, step, values);
        gs.draw_as_infinite = true;
        gs.color = Some(v.color.clone());
        if !v.dashes.is_empty() {
            gs.dashed = Some(
                v.dashes
                    .split(',')
                    .next()
                    .and_then(|d| d.trim().parse().ok())
                    .unwrap_or(5.0),
            );
        }
        series.push(gs);
    }
    let format = image::format(params.svg);
    image::draw(&series, &opts, period.from, period.until, tz, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_values() {
        let ts = TimeSeries::new(
            "x",
            0,
            300,
            60,
            vec![Some(1.0), None, Some(5.0), Some(3.0), None],
        );
        assert_eq!(
            stats(Some(&ts)),
            [Some(3.0), Some(3.0), Some(5.0), Some(1.0)]
        );
        assert_eq!(stats(None), [None; 4]);
        let empty = TimeSeries::new("x", 0, 120, 60, vec![None, None]);
        assert_eq!(stats(Some(&empty)), [None; 4]);
    }

    #[test]
    fn items_take_the_type_of_their_view() {
        let mut g = crate::growthforecast::json::tests::graph(1, "s", "t", "g");
        g.draw = "LINE2".into();
        g.stype = "LINE1".into();
        assert_eq!(Item::single(g.clone(), Gmode::Gauge).draw, DrawType::Line2);
        assert_eq!(
            Item::single(g.clone(), Gmode::Subtract).draw,
            DrawType::Line1
        );
        g.draw = "bogus".into();
        assert_eq!(Item::single(g, Gmode::Gauge).draw, DrawType::Area);
    }
}
