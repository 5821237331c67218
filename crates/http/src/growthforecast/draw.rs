//! `/graph`, `/summary` and `/xport` of a graph (`/:method/:service/:section/:graph`),
//! of a complex graph (`/complex/:method/...`) and of an ad-hoc complex graph
//! (`/:method/AREA:1:gauge:0:LINE1:2:subtract:1`, GrowthForecast's preview URLs:
//! type, graph id, gmode, stack, repeated).
//!
//! `/xport` answers `{start_timestamp, end_timestamp, step, columns, column_names,
//! rows}` as GrowthForecast's (rrdxport's) export: `rows[i]` is the time
//! `start_timestamp + i * step`, one value (or `null`) per column; `end_timestamp` is
//! the time of the last row. `width` (default 390) caps the number of rows as
//! rrdxport's `--maxrows`, `step` asks for a coarser step.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono_tz::Tz;
use serde_json::{json, Map, Value};
use sumi_render::graph::DrawType;

use super::graph::{draw, evaluate, stats, Evaluated, Item};
use super::json::num;
use super::view::{Gmode, GraphParams};
use super::{blocking, GfError};
use crate::params::Params;
use crate::AppState;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Graph,
    Summary,
    Xport,
}

fn method(m: &str) -> Result<Method, GfError> {
    match m {
        "graph" => Ok(Method::Graph),
        "summary" => Ok(Method::Summary),
        "xport" => Ok(Method::Xport),
        other => Err(GfError::NotFound(format!("/{other}"))),
    }
}

/// What to draw: the items, the vertical rules' path, and the title prefix.
struct Drawing {
    items: Vec<Item>,
    vrule_path: String,
    title_prefix: &'static str,
    sumup: bool,
}

fn answer(
    st: &AppState,
    m: Method,
    d: Drawing,
    params: &GraphParams,
    tz: Tz,
) -> Result<Response, GfError> {
    let period = match m {
        Method::Xport => params
            .period
            .clone()
            .with_limits(params.step, Some(i64::from(params.width))),
        _ => params.period.clone(),
    };
    let evaluated = evaluate(st, &d.items, &period, params.cf, d.sumup, tz)?;
    match m {
        Method::Graph => {
            let vrules = st.gf.db.vrules(&d.vrule_path, period.from, period.until)?;
            Ok(draw(
                &d.items,
                &evaluated,
                &vrules,
                params,
                d.title_prefix,
                tz,
            )?)
        }
        Method::Summary => {
            let mut out = Map::new();
            for ev in &evaluated {
                let s = stats(ev.series.as_ref());
                out.insert(
                    ev.key.clone(),
                    Value::Array(s.iter().map(|v| v.map_or(Value::Null, num)).collect()),
                );
            }
            Ok(Json(Value::Object(out)).into_response())
        }
        Method::Xport => Ok(Json(xport(
            &evaluated,
            period.resolution,
            period.from,
            period.until,
        ))
        .into_response()),
    }
}

/// The export of evaluated series on one grid of `step` seconds.
fn xport(evaluated: &[Evaluated], step: i64, from: i64, until: i64) -> Value {
    let step = step.max(1);
    let start = evaluated
        .iter()
        .filter_map(|e| e.series.as_ref().map(|s| s.start))
        .min()
        .unwrap_or(from - from.rem_euclid(step));
    let end = evaluated
        .iter()
        .filter_map(|e| e.series.as_ref().map(|s| s.end))
        .max()
        .unwrap_or(until);
    let rows_n = ((end - start) / step).max(0) as usize;
    let value_at = |e: &Evaluated, t: i64| -> Value {
        let Some(s) = &e.series else {
            return Value::Null;
        };
        if s.step <= 0 || t < s.start {
            return Value::Null;
        }
        let i = ((t - s.start) / s.step) as usize;
        s.values
            .get(i)
            .copied()
            .flatten()
            .filter(|v| !v.is_nan())
            .map_or(Value::Null, num)
    };
    let rows: Vec<Value> = (0..rows_n)
        .map(|i| {
            let t = start + i as i64 * step;
            Value::Array(evaluated.iter().map(|e| value_at(e, t)).collect())
        })
        .collect();
    json!({
        "start_timestamp": start,
        "end_timestamp": start + (rows_n.max(1) as i64 - 1) * step,
        "step": step,
        "columns": evaluated.len(),
        "column_names": evaluated.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
        "rows": rows,
    })
}

/// `GET /graph|summary|xport/:service/:section/:graph`.
pub async fn single(
    State(state): State<Arc<AppState>>,
    Path((m, s, sec, g)): Path<(String, String, String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, GfError> {
    let m = method(&m)?;
    let tz = state.default_tz;
    let p = Params::parse(query.as_deref(), None);
    let params = GraphParams::parse(&p, crate::unix_now(), tz)?;
    blocking(state, move |st| {
        let graph = st
            .gf
            .db
            .graph(&s, &sec, &g)?
            .ok_or_else(|| GfError::NotFound(format!("graph {s}/{sec}/{g}")))?;
        let gmode = params.gmode.unwrap_or(Gmode::Gauge);
        let d = Drawing {
            vrule_path: format!("/{s}/{sec}/{g}"),
            items: vec![Item::single(graph, gmode)],
            title_prefix: if gmode == Gmode::Subtract {
                "[subtract] "
            } else {
                ""
            },
            sumup: params.sumup.unwrap_or(false),
        };
        answer(st, m, d, &params, tz)
    })
    .await
}

fn item_of(
    st: &AppState,
    graph_id: i64,
    draw: &str,
    gmode: &str,
    stack: bool,
) -> Result<Option<Item>, GfError> {
    let Some(graph) = st.gf.db.graph_by_id(graph_id)? else {
        return Ok(None);
    };
    Ok(Some(Item {
        graph,
        draw: draw.parse().unwrap_or(DrawType::Area),
        gmode: Gmode::parse(gmode).unwrap_or(Gmode::Gauge),
        stack,
    }))
}

/// `GET /complex/graph|summary|xport/:service/:section/:graph`.
pub async fn complex(
    State(state): State<Arc<AppState>>,
    Path((m, s, sec, g)): Path<(String, String, String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, GfError> {
    let m = method(&m)?;
    let tz = state.default_tz;
    let p = Params::parse(query.as_deref(), None);
    let params = GraphParams::parse(&p, crate::unix_now(), tz)?;
    blocking(state, move |st| {
        let c = st
            .gf
            .db
            .complex(&s, &sec, &g)?
            .ok_or_else(|| GfError::NotFound(format!("complex graph {s}/{sec}/{g}")))?;
        let mut items = Vec::with_capacity(c.items.len());
        for it in &c.items {
            // a graph deleted since is left out, as GrowthForecast skips it
            if let Some(item) = item_of(st, it.graph_id, &it.draw, &it.gmode, it.stack)? {
                items.push(item);
            }
        }
        let d = Drawing {
            items,
            vrule_path: format!("/{s}/{sec}/{g}"),
            title_prefix: "",
            sumup: params.sumup.unwrap_or(c.sumup),
        };
        answer(st, m, d, &params, tz)
    })
    .await
}

/// The items of an ad-hoc spec: `type:id:gmode:stack`, repeated.
fn parse_spec(spec: &str) -> Result<Vec<(String, i64, String, bool)>, GfError> {
    let parts: Vec<&str> = spec.split(':').collect();
    if parts.is_empty() || !parts.len().is_multiple_of(4) {
        return Err(GfError::BadRequest(format!(
            "graph spec {spec:?} is not type:id:gmode:stack repeated"
        )));
    }
    parts
        .chunks(4)
        .map(|c| match c {
            [t, id, gmode, stack] => {
                let id = id
                    .parse::<i64>()
                    .map_err(|_| GfError::BadRequest(format!("graph id {id:?} is not a number")))?;
                Ok((t.to_string(), id, gmode.to_string(), *stack == "1"))
            }
            _ => Err(GfError::BadRequest(format!(
                "graph spec {spec:?} is incomplete"
            ))),
        })
        .collect()
}

/// `GET /graph|summary|xport/:spec`.
pub async fn adhoc(
    State(state): State<Arc<AppState>>,
    Path((m, spec)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, GfError> {
    let m = method(&m)?;
    let tz = state.default_tz;
    let p = Params::parse(query.as_deref(), None);
    let params = GraphParams::parse(&p, crate::unix_now(), tz)?;
    let parsed = parse_spec(&spec)?;
    blocking(state, move |st| {
        let mut items = Vec::with_capacity(parsed.len());
        for (t, id, gmode, stack) in &parsed {
            if let Some(item) = item_of(st, *id, t, gmode, *stack)? {
                items.push(item);
            }
        }
        let vrule_path = items
            .first()
            .map(|i| {
                format!(
                    "/{}/{}/{}",
                    i.graph.service_name, i.graph.section_name, i.graph.graph_name
                )
            })
            .unwrap_or_else(|| "/".into());
        let d = Drawing {
            items,
            vrule_path,
            title_prefix: "",
            sumup: params.sumup.unwrap_or(false),
        };
        answer(st, m, d, &params, tz)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sumi_query::series::TimeSeries;

    #[test]
    fn specs() {
        let s = parse_spec("AREA:1:gauge:0:LINE1:22:subtract:1").unwrap();
        assert_eq!(
            s[1],
            ("LINE1".to_string(), 22, "subtract".to_string(), true)
        );
        assert!(parse_spec("AREA:1:gauge").is_err());
        assert!(parse_spec("AREA:x:gauge:0").is_err());
    }

    #[test]
    fn export_grid() {
        let a = TimeSeries::new("a", 600, 1500, 300, vec![Some(1.0), None, Some(3.5)]);
        let b = TimeSeries::new("b", 900, 1500, 300, vec![Some(2.0), Some(f64::NAN)]);
        let ev = vec![
            Evaluated {
                name: "a".into(),
                key: "s/t/a".into(),
                series: Some(a),
            },
            Evaluated {
                name: "b".into(),
                key: "s/t/b".into(),
                series: Some(b),
            },
            Evaluated {
                name: "none".into(),
                key: "s/t/none".into(),
                series: None,
            },
        ];
        let x = xport(&ev, 300, 700, 1500);
        assert_eq!(x["start_timestamp"], 600);
        assert_eq!(x["end_timestamp"], 1200);
        assert_eq!(x["columns"], 3);
        assert_eq!(x["column_names"], json!(["a", "b", "none"]));
        assert_eq!(
            x["rows"],
            json!([[1, null, null], [null, 2, null], [3.5, null, null]])
        );
    }
}
