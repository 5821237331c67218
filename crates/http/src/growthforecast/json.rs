//! The JSON GrowthForecast answers with, field for field.
//!
//! Two shapes of a graph exist there: the row as the API returns it
//! (`POST`/`GET /api/...`, `/json/graph/:service/:section/:graph`), with the raw
//! `meta` text and an `md5` of the id, and the cleaned shape of `/json/graph/:id` and
//! `/json/list/all` (no `meta`, no `md5`, `"complex": false`). Numbers GrowthForecast
//! keeps as integers are written as integers when they are whole. sumi adds one field,
//! `series`: the Graphite path of the graph's points.

use chrono::TimeZone;
use chrono_tz::Tz;
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

use super::db::{Complex, Graph};

/// A number as GrowthForecast writes it: whole numbers without a fraction.
pub fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
        Value::from(x as i64)
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// `created_at`/`updated_at` as GrowthForecast formats them, in the server's zone.
pub fn local_time(t: i64, tz: Tz) -> String {
    match tz.timestamp_opt(t, 0).single() {
        Some(dt) => dt.format("%Y/%m/%d %H:%M:%S").to_string(),
        None => t.to_string(),
    }
}

fn md5_hex(text: &str) -> String {
    let digest = Md5::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn graph_fields(g: &Graph, tz: Tz) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!(g.id));
    m.insert("service_name".into(), json!(g.service_name));
    m.insert("section_name".into(), json!(g.section_name));
    m.insert("graph_name".into(), json!(g.graph_name));
    m.insert("number".into(), num(g.number));
    m.insert("mode".into(), json!(g.mode));
    m.insert("description".into(), json!(g.description));
    m.insert("sort".into(), json!(g.sort));
    m.insert("gmode".into(), json!(g.gmode));
    m.insert("color".into(), json!(g.color));
    m.insert("ulimit".into(), num(g.ulimit));
    m.insert("llimit".into(), num(g.llimit));
    m.insert("sulimit".into(), num(g.sulimit));
    m.insert("sllimit".into(), num(g.sllimit));
    m.insert("type".into(), json!(g.draw));
    m.insert("stype".into(), json!(g.stype));
    m.insert("adjust".into(), json!(g.adjust));
    m.insert("adjustval".into(), json!(g.adjustval));
    m.insert("unit".into(), json!(g.unit));
    m.insert("created_at".into(), json!(local_time(g.created_at, tz)));
    m.insert("updated_at".into(), json!(local_time(g.updated_at, tz)));
    m.insert("timestamp".into(), json!(g.timestamp));
    m.insert("series".into(), json!(g.series));
    m
}

/// The row as `/api/...` returns it.
pub fn graph_row(g: &Graph, tz: Tz) -> Value {
    let mut m = graph_fields(g, tz);
    let meta = json!({"adjust": g.adjust, "adjustval": g.adjustval, "unit": g.unit});
    m.insert("meta".into(), Value::String(meta.to_string()));
    m.insert("md5".into(), json!(md5_hex(&g.id.to_string())));
    Value::Object(m)
}

/// The cleaned shape of `/json/graph/:id` and `/json/list/all`.
pub fn graph_clean(g: &Graph, tz: Tz) -> Value {
    let mut m = graph_fields(g, tz);
    m.insert("complex".into(), json!(false));
    Value::Object(m)
}

/// A complex graph as `/json/complex/...` returns it.
pub fn complex(c: &Complex, tz: Tz) -> Value {
    let data: Vec<Value> = c
        .items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            json!({
                "graph_id": it.graph_id,
                "type": it.draw,
                "gmode": it.gmode,
                // the first item is never stacked
                "stack": i > 0 && it.stack,
            })
        })
        .collect();
    json!({
        "id": c.id,
        "service_name": c.service_name,
        "section_name": c.section_name,
        "graph_name": c.graph_name,
        "description": c.description,
        "sort": c.sort,
        "sumup": c.sumup,
        "number": 0,
        "data": data,
        "complex": true,
        "created_at": local_time(c.created_at, tz),
        "updated_at": local_time(c.updated_at, tz),
    })
}

/// An entry of `/json/list/graph` and `/json/list/complex`.
pub fn name_entry(id: i64, service: &str, section: &str, graph: &str) -> Value {
    json!({"id": id, "service_name": service, "section_name": section, "graph_name": graph})
}

/// `/json/list/graph_tree`: services and sections sorted without regard to case, the
/// graphs of each section in list order.
pub fn graph_tree(graphs: &[Graph]) -> Value {
    type Sections<'a> = Vec<(&'a str, Vec<Value>)>;
    let mut services: Vec<(&str, Sections<'_>)> = Vec::new();
    let mut sorted: Vec<&Graph> = graphs.iter().collect();
    sorted.sort_by(|a, b| {
        a.service_name
            .to_lowercase()
            .cmp(&b.service_name.to_lowercase())
            .then_with(|| a.service_name.cmp(&b.service_name))
            .then_with(|| {
                a.section_name
                    .to_lowercase()
                    .cmp(&b.section_name.to_lowercase())
            })
            .then_with(|| a.section_name.cmp(&b.section_name))
            .then_with(|| b.graph_name.cmp(&a.graph_name))
    });
    for g in sorted {
        let entry = name_entry(g.id, &g.service_name, &g.section_name, &g.graph_name);
        match services.last_mut() {
            Some((s, sections)) if *s == g.service_name => match sections.last_mut() {
                Some((sec, list)) if *sec == g.section_name => list.push(entry),
                _ => sections.push((&g.section_name, vec![entry])),
            },
            _ => services.push((&g.service_name, vec![(&g.section_name, vec![entry])])),
        }
    }
    Value::Array(
        services
            .into_iter()
            .map(|(name, sections)| {
                json!({
                    "name": name,
                    "sections": sections
                        .into_iter()
                        .map(|(n, graphs)| json!({"name": n, "graphs": graphs}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::growthforecast::db::ComplexItem;

    pub(crate) fn graph(id: i64, service: &str, section: &str, name: &str) -> Graph {
        Graph {
            id,
            service_name: service.into(),
            section_name: section.into(),
            graph_name: name.into(),
            series: format!("{service}.{section}.{name}"),
            number: 10.0,
            mode: "gauge".into(),
            derive: false,
            description: String::new(),
            sort: 0,
            gmode: "gauge".into(),
            color: "#336699".into(),
            ulimit: 1e15,
            llimit: -1e9,
            sulimit: 100000.0,
            sllimit: -100000.0,
            draw: "AREA".into(),
            stype: "AREA".into(),
            adjust: "*".into(),
            adjustval: "1".into(),
            unit: String::new(),
            created_at: 0,
            updated_at: 86400,
            timestamp: None,
        }
    }

    #[test]
    fn numbers_and_times() {
        assert_eq!(num(10.0), json!(10));
        assert_eq!(num(-1e9), json!(-1000000000));
        assert_eq!(num(1e15), json!(1000000000000000i64));
        assert_eq!(num(1.5), json!(1.5));
        assert_eq!(num(f64::NAN), Value::Null);
        assert_eq!(local_time(0, Tz::UTC), "1970/01/01 00:00:00");
        assert_eq!(local_time(0, Tz::Asia__Tokyo), "1970/01/01 09:00:00");
    }

    #[test]
    fn row_shapes() {
        let g = graph(1, "s", "t", "g");
        let row = graph_row(&g, Tz::UTC);
        // md5_hex("1"), as GrowthForecast's row has it
        assert_eq!(row["md5"], "c4ca4238a0b923820dcc509a6f75849b");
        assert_eq!(row["number"], 10);
        assert_eq!(row["updated_at"], "1970/01/02 00:00:00");
        assert_eq!(row["timestamp"], Value::Null);
        let meta: Value = serde_json::from_str(row["meta"].as_str().unwrap()).unwrap();
        assert_eq!(meta["adjustval"], "1");
        let clean = graph_clean(&g, Tz::UTC);
        assert!(clean.get("md5").is_none() && clean.get("meta").is_none());
        assert_eq!(clean["complex"], false);
    }

    #[test]
    fn complex_shape() {
        let c = Complex {
            id: 3,
            service_name: "s".into(),
            section_name: "t".into(),
            graph_name: "c".into(),
            description: String::new(),
            sort: 19,
            sumup: true,
            items: vec![
                ComplexItem {
                    graph_id: 1,
                    draw: "AREA".into(),
                    gmode: "gauge".into(),
                    stack: true,
                },
                ComplexItem {
                    graph_id: 2,
                    draw: "LINE1".into(),
                    gmode: "subtract".into(),
                    stack: true,
                },
            ],
            created_at: 0,
            updated_at: 0,
        };
        let v = complex(&c, Tz::UTC);
        assert_eq!(v["complex"], true);
        assert_eq!(v["sumup"], true);
        assert_eq!(v["data"][0]["stack"], false);
        assert_eq!(v["data"][1]["stack"], true);
        assert_eq!(v["data"][1]["gmode"], "subtract");
    }

    #[test]
    fn tree_groups_case_insensitively() {
        let gs = vec![
            graph(1, "b", "x", "g1"),
            graph(2, "A", "y", "g2"),
            graph(3, "b", "x", "g3"),
            graph(4, "b", "W", "g4"),
        ];
        let t = graph_tree(&gs);
        assert_eq!(t[0]["name"], "A");
        assert_eq!(t[1]["name"], "b");
        assert_eq!(t[1]["sections"][0]["name"], "W");
        assert_eq!(t[1]["sections"][1]["graphs"][0]["graph_name"], "g3");
        assert_eq!(t[1]["sections"][1]["graphs"][1]["graph_name"], "g1");
    }
}
