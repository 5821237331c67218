//! Rendered graphs checked where the data says they should draw: PNGs are decoded and
//! the series' colours looked for on the rows their values map to; SVGs are checked
//! to be well-formed and to carry their text.

use crate::graph::{
    render_graph, render_graph_with_info, DrawType, GraphError, GraphInfo, GraphOptions,
    GraphSeries, ImageFormat, Style,
};
use chrono_tz::Tz;

const T0: i64 = 1_710_201_600; // 2024-03-12 00:00:00 UTC
const STEP: i64 = 60;

/// A decoded image, RGBA.
struct Image {
    width: usize,
    height: usize,
    rgba: Vec<u8>,
}

impl Image {
    fn decode(png_bytes: &[u8]) -> Image {
        let mut reader = png::Decoder::new(png_bytes).read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).expect("one frame");
        let (width, height) = (frame.width as usize, frame.height as usize);
        let rgba = match frame.color_type {
            png::ColorType::Rgba => buf[..width * height * 4].to_vec(),
            png::ColorType::Rgb => buf[..width * height * 3]
                .chunks(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            other => panic!("unexpected colour type {other:?}"),
        };
        Image {
            width,
            height,
            rgba,
        }
    }

    fn px(&self, x: usize, y: usize) -> [u8; 4] {
        let i = (y * self.width + x) * 4;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    /// Rows (at column `x`) whose pixel is within `tol` of `rgb`.
    fn rows_with(&self, x: usize, rgb: [u8; 3], tol: i32) -> Vec<usize> {
        (0..self.height)
            .filter(|&y| close(self.px(x, y), rgb, tol))
            .collect()
    }

    /// Pixels of the whole image within `tol` of `rgb`.
    fn count(&self, rgb: [u8; 3], tol: i32) -> usize {
        self.rgba
            .chunks(4)
            .filter(|p| close([p[0], p[1], p[2], p[3]], rgb, tol))
            .count()
    }
}

fn close(p: [u8; 4], rgb: [u8; 3], tol: i32) -> bool {
    (0..3).all(|i| (i32::from(p[i]) - i32::from(rgb[i])).abs() <= tol)
}

fn constant(name: &str, value: f64, n: usize) -> GraphSeries {
    GraphSeries::new(name, T0, STEP, vec![Some(value); n])
}

fn opts(q: &[(&str, &str)]) -> GraphOptions {
    GraphOptions::from_params(q.iter().copied()).expect("options")
}

fn png(series: &[GraphSeries], o: &GraphOptions) -> (Image, GraphInfo) {
    let (bytes, info) = render_graph_with_info(series, o, T0, T0 + 3600, Tz::UTC, ImageFormat::Png)
        .expect("renders");
    (Image::decode(&bytes), info)
}

fn svg(series: &[GraphSeries], o: &GraphOptions) -> String {
    let bytes = render_graph(series, o, T0, T0 + 3600, Tz::UTC, ImageFormat::Svg).expect("renders");
    String::from_utf8(bytes).expect("UTF-8")
}

const BLUE: [u8; 3] = [100, 100, 255]; // graphite-web's "blue", the first default colour
const GREEN: [u8; 3] = [0, 200, 0];
const WHITE: [u8; 3] = [255, 255, 255];

#[test]
fn constant_fifty_on_a_zero_to_hundred_axis_is_drawn_at_half_height() {
    let o = opts(&[
        ("width", "400"),
        ("height", "300"),
        ("yMin", "0"),
        ("yMax", "100"),
        ("lineWidth", "3"),
    ]);
    let (img, info) = png(&[constant("half", 50.0, 60)], &o);
    assert_eq!((img.width, img.height), (400, 300));
    let axis = info.left_axis.as_ref().expect("an axis");
    assert_eq!((axis.bottom, axis.top), (0.0, 100.0));
    let mid = (info.plot.top + info.plot.bottom) / 2.0;
    assert_eq!(info.y_pixel(50.0, false), Some(mid));
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize;
    let rows = img.rows_with(x, BLUE, 8);
    assert!(
        !rows.is_empty(),
        "the series colour is on the plot's middle column"
    );
    for y in &rows {
        assert!(
            (*y as f64 + 0.5 - mid).abs() <= 2.0,
            "row {y} is not at half height {mid}"
        );
    }
    // Nowhere else on that column.
    assert!(img
        .rows_with(x, BLUE, 60)
        .iter()
        .all(|y| (*y as f64 - mid).abs() < 4.0));
}

#[test]
fn the_line_spans_the_plot_from_first_to_last_point() {
    let o = opts(&[
        ("width", "400"),
        ("height", "300"),
        ("yMin", "0"),
        ("yMax", "100"),
        ("lineWidth", "3"),
    ]);
    let (img, info) = png(&[constant("a", 50.0, 61)], &o);
    let y = info.y_pixel(50.0, false).unwrap() as usize;
    let first = info.x_pixel(T0).unwrap();
    let last = info.x_pixel(T0 + 60 * STEP).unwrap();
    assert!(close(img.px(first.ceil() as usize + 1, y), BLUE, 8));
    assert!(close(img.px(last.floor() as usize - 1, y), BLUE, 8));
    assert!(
        !close(img.px(last.ceil() as usize + 3, y), BLUE, 60),
        "nothing after the last point"
    );
    assert!(last <= info.plot.right);
}

#[test]
fn stacked_areas_sit_on_each_other() {
    let o = opts(&[
        ("width", "400"),
        ("height", "300"),
        ("yMin", "0"),
        ("yMax", "100"),
        ("areaMode", "stacked"),
    ]);
    let (img, info) = png(&[constant("a", 20.0, 60), constant("b", 30.0, 60)], &o);
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize + 3;
    let row = |v: f64| info.y_pixel(v, false).unwrap() as usize;
    assert!(
        close(img.px(x, row(10.0)), BLUE, 2),
        "first series fills 0..20"
    );
    assert!(
        close(img.px(x, row(35.0)), GREEN, 2),
        "second series fills 20..50"
    );
    assert!(close(img.px(x, row(75.0)), WHITE, 40), "nothing above 50");
}

#[test]
fn filled_areas_do_not_cover_earlier_ones() {
    // areaMode=all: the second (taller) area shows only above the first, as
    // graphite-web's clipping makes it.
    let o = opts(&[
        ("width", "400"),
        ("height", "300"),
        ("yMin", "0"),
        ("yMax", "100"),
        ("areaMode", "all"),
    ]);
    let (img, info) = png(&[constant("a", 40.0, 60), constant("b", 80.0, 60)], &o);
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize + 3;
    let row = |v: f64| info.y_pixel(v, false).unwrap() as usize;
    assert!(close(img.px(x, row(20.0)), BLUE, 2));
    assert!(close(img.px(x, row(60.0)), GREEN, 2));
    // The rrd style paints in order: the later area covers the earlier one.
    let mut rrd = GraphOptions::rrd();
    rrd.y.min = Some(0.0);
    rrd.y.max = Some(crate::graph::AxisMax::Value(100.0));
    rrd.hide_grid = true;
    rrd.color_list = vec!["blue".into(), "green".into()];
    let a = constant("a", 40.0, 60).with_draw(DrawType::Area, false);
    let b = constant("b", 80.0, 60).with_draw(DrawType::Area, false);
    let (bytes, info) =
        render_graph_with_info(&[a, b], &rrd, T0, T0 + 3600, Tz::UTC, ImageFormat::Png).unwrap();
    let img = Image::decode(&bytes);
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize;
    assert!(close(
        img.px(x, info.y_pixel(20.0, false).unwrap() as usize),
        GREEN,
        2
    ));
}

#[test]
fn second_y_axis_scales_separately() {
    let mut right = constant("latency", 750.0, 60);
    right.second_y_axis = true;
    let o = opts(&[
        ("width", "500"),
        ("height", "300"),
        ("yMinLeft", "0"),
        ("yMaxLeft", "10"),
        ("yMinRight", "0"),
        ("yMaxRight", "1000"),
        ("lineWidth", "3"),
        ("rightColor", "green"),
    ]);
    let (img, info) = png(&[constant("load", 2.5, 60), right], &o);
    let r = info.right_axis.as_ref().expect("a right axis");
    assert_eq!((r.bottom, r.top), (0.0, 1000.0));
    let (top, bottom) = (info.plot.top, info.plot.bottom);
    let quarter = (bottom - (bottom - top) * 0.25) as usize;
    let three_quarters = (bottom - (bottom - top) * 0.75) as usize;
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize;
    let near = |rows: Vec<usize>, row: usize| rows.iter().any(|y| y.abs_diff(row) <= 2);
    assert!(
        near(img.rows_with(x, BLUE, 8), quarter),
        "left series (2.5 of 10) a quarter up"
    );
    assert!(
        near(img.rows_with(x, GREEN, 8), three_quarters),
        "right series (750 of 1000) three quarters up"
    );
    // Right-hand labels need room on the right.
    assert!(info.plot.right < 480.0);
}

#[test]
fn log_axis_places_decades_evenly() {
    let o = opts(&[
        ("width", "400"),
        ("height", "300"),
        ("logBase", "10"),
        ("lineWidth", "3"),
    ]);
    let s = GraphSeries::new(
        "s",
        T0,
        STEP,
        (0..60)
            .map(|i| Some(if i < 30 { 1.0 } else { 10_000.0 }))
            .collect(),
    );
    let (img, info) = png(&[s, constant("hundred", 100.0, 60)], &o);
    let axis = info.left_axis.as_ref().unwrap();
    assert_eq!(
        (axis.bottom, axis.top, axis.log_base),
        (1.0, 10_000.0, Some(10.0))
    );
    let mid = (info.plot.top + info.plot.bottom) / 2.0;
    assert!((info.y_pixel(100.0, false).unwrap() - mid).abs() < 1e-9);
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize;
    assert!(img
        .rows_with(x, GREEN, 8)
        .iter()
        .any(|y| (*y as f64 - mid).abs() <= 2.0));
    // A log axis ignores values it cannot show instead of failing.
    let with_zero = GraphSeries::new(
        "z",
        T0,
        STEP,
        vec![Some(0.0), Some(-5.0), Some(10.0), Some(100.0)],
    );
    png(&[with_zero], &o);
}

#[test]
fn colour_list_bgcolor_and_alpha() {
    let o = opts(&[
        ("width", "200"),
        ("height", "150"),
        ("colorList", "darkred,darkblue"),
        ("bgcolor", "black"),
    ]);
    let (img, _) = png(&[constant("a", 1.0, 30), constant("b", 2.0, 30)], &o);
    assert_eq!(img.px(0, 0), [0, 0, 0, 255]);
    assert!(img.count([255, 0, 0], 10) > 20, "first series in darkred");
    assert!(img.count([0, 0, 255], 10) > 20, "second series in darkblue");
    // A transparent background gives an RGBA image with alpha 0 in the corner.
    let o = opts(&[("width", "200"), ("height", "150"), ("bgcolor", "00000000")]);
    let (bytes, _) = render_graph_with_info(
        &[constant("a", 1.0, 30)],
        &o,
        T0,
        T0 + 3600,
        Tz::UTC,
        ImageFormat::Png,
    )
    .unwrap();
    let img = Image::decode(&bytes);
    assert_eq!(img.px(0, 0)[3], 0);
}

#[test]
fn dashed_lines_have_gaps_and_wide_lines_are_wide() {
    let base = [
        ("width", "400"),
        ("height", "300"),
        ("yMin", "0"),
        ("yMax", "100"),
        ("hideGrid", "true"),
    ];
    let o = opts(&base);
    let mut dashed = constant("d", 50.0, 60);
    dashed.dashed = Some(6.0);
    dashed.line_width = Some(3.0);
    let (img, info) = png(&[dashed], &o);
    let y = info.y_pixel(50.0, false).unwrap() as usize;
    let (l, r) = (info.plot.left as usize + 5, info.plot.right as usize - 5);
    let on = (l..r).filter(|&x| close(img.px(x, y), BLUE, 30)).count();
    let off = (l..r).filter(|&x| close(img.px(x, y), WHITE, 30)).count();
    assert!(on > 100 && off > 100, "dashes: {on} on, {off} off");

    let mut wide = constant("w", 50.0, 60);
    wide.line_width = Some(8.0);
    let (img, info) = png(&[wide], &o);
    let x = ((info.plot.left + info.plot.right) / 2.0) as usize;
    let rows = img.rows_with(x, BLUE, 8).len();
    assert!(
        (7..=9).contains(&rows),
        "an 8 px line covers 8 rows, got {rows}"
    );
}

#[test]
fn draw_null_as_zero_and_gaps() {
    let values: Vec<Option<f64>> = (0..60)
        .map(|i| if i < 30 { None } else { Some(50.0) })
        .collect();
    let base = [
        ("width", "400"),
        ("height", "300"),
        ("yMin", "0"),
        ("yMax", "100"),
        ("lineWidth", "3"),
    ];
    let s = GraphSeries::new("s", T0, STEP, values);
    let x_left = |info: &GraphInfo| info.x_pixel(T0 + 10 * STEP).unwrap() as usize;

    let (img, info) = png(std::slice::from_ref(&s), &opts(&base));
    assert!(
        img.rows_with(x_left(&info), BLUE, 30).is_empty(),
        "a gap where values are missing"
    );

    let mut q = base.to_vec();
    q.push(("drawNullAsZero", "true"));
    let (img, info) = png(&[s], &opts(&q));
    let zero = info.y_pixel(0.0, false).unwrap();
    let rows = img.rows_with(x_left(&info), BLUE, 30);
    assert!(
        rows.iter().any(|y| (*y as f64 - zero).abs() <= 2.0),
        "missing values drawn at zero: {rows:?}"
    );
}

#[test]
fn legend_hides_itself_beyond_ten_series() {
    let o = opts(&[("width", "600"), ("height", "400")]);
    let ten: Vec<GraphSeries> = (0..10)
        .map(|i| constant(&format!("s{i}"), i as f64, 30))
        .collect();
    let eleven: Vec<GraphSeries> = (0..11)
        .map(|i| constant(&format!("s{i}"), i as f64, 30))
        .collect();
    let (_, with_legend) = png(&ten, &o);
    let (_, without) = png(&eleven, &o);
    assert!(without.plot.bottom > with_legend.plot.bottom + 10.0);
    let o = opts(&[("width", "600"), ("height", "400"), ("hideLegend", "false")]);
    let (_, forced) = png(&eleven, &o);
    assert!(forced.plot.bottom < without.plot.bottom);
}

#[test]
fn graph_only_uses_the_whole_image() {
    let o = opts(&[
        ("width", "300"),
        ("height", "200"),
        ("graphOnly", "true"),
        ("title", "ignored"),
    ]);
    let (_, info) = png(&[constant("a", 1.0, 30)], &o);
    assert_eq!(
        (
            info.plot.left,
            info.plot.top,
            info.plot.right,
            info.plot.bottom
        ),
        (0.0, 0.0, 300.0, 200.0)
    );
    assert!(!svg(&[constant("a", 1.0, 30)], &o).contains("ignored"));
}

#[test]
fn no_data_image() {
    let o = opts(&[("width", "330"), ("height", "250")]);
    let (img, info) = png(&[], &o);
    assert!(info.no_data);
    assert!(img.count([200, 0, 50], 40) > 20, "red \"No Data\" text");
    let text = svg(&[], &o);
    assert!(text.contains(">No Data</text>"));
    // Series with no points at all are no data too.
    let (_, info) = png(&[GraphSeries::new("empty", T0, STEP, vec![])], &o);
    assert!(info.no_data);
}

/// A minimal XML well-formedness check: balanced, properly nested tags, quoted
/// attributes, no stray `<` or `&` in text.
fn assert_well_formed(xml: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml.trim_start();
    if let Some(after) = rest.strip_prefix("<?xml") {
        rest = &after[after.find("?>").expect("end of the XML declaration") + 2..];
    }
    let mut root_seen = false;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        assert!(
            !text.contains('>') || !text.trim().is_empty(),
            "stray '>' in {text:?}"
        );
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..text[i..].find(';').map_or(text.len(), |j| i + j + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity),
                "bad entity {entity:?}"
            );
        }
        let gt = rest[lt..].find('>').expect("tag end") + lt;
        let tag = &rest[lt + 1..gt];
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().expect("tag name").to_string();
            if stack.is_empty() {
                assert!(!root_seen, "a second root element");
                root_seen = true;
            }
            stack.push(name);
        }
        rest = &rest[gt + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert!(root_seen && rest.trim().is_empty());
}

#[test]
fn svg_is_well_formed_and_carries_its_text() {
    let o = opts(&[
        ("width", "500"),
        ("height", "300"),
        ("title", "Disk <usage> & \"more\""),
        ("vtitle", "bytes"),
    ]);
    let text = svg(
        &[
            constant("servers.a&b.disk", 1e9, 60),
            constant("servers.c.disk", 2e9, 60),
        ],
        &o,
    );
    assert_well_formed(&text);
    assert!(text.starts_with("<?xml"));
    assert!(text.contains("width=\"500px\" height=\"300px\""));
    assert!(text.contains(">Disk &lt;usage&gt; &amp; &quot;more&quot;</text>"));
    assert!(text.contains(">servers.a&amp;b.disk</text>"));
    assert!(text.contains(">servers.c.disk</text>"));
    assert!(text.contains(">bytes</text>") && text.contains("rotate(270"));
    // graphite-web 1.1.10 labels this axis 1000.0 M .. 2000.0 M (step 200 M).
    assert!(
        text.contains(">2000.0 M </text>"),
        "graphite-style axis labels"
    );
    for class in ["title", "legend", "axes", "grid", "lines"] {
        assert!(
            text.contains(&format!("<g class=\"{class}\">")),
            "section {class}"
        );
    }
    // Both formats draw the same picture: the same plot area.
    let (_, info) = png(
        &[
            constant("servers.a&b.disk", 1e9, 60),
            constant("servers.c.disk", 2e9, 60),
        ],
        &o,
    );
    let (_, svg_info) = render_graph_with_info(
        &[constant("x", 1e9, 60), constant("y", 2e9, 60)],
        &o,
        T0,
        T0 + 3600,
        Tz::UTC,
        ImageFormat::Svg,
    )
    .unwrap();
    assert_eq!(info.left_axis, svg_info.left_axis);
}

#[test]
fn rrd_style_legend_has_statistics() {
    let mut o = GraphOptions::rrd();
    o.title = "Daily (5min avg)".into();
    let values = vec![Some(1000.0), None, Some(2000.0), Some(1234.0)];
    let s = GraphSeries::new("requests", T0, 300, values).with_draw(DrawType::Line2, false);
    let text = String::from_utf8(
        render_graph(
            std::slice::from_ref(&s),
            &o,
            T0,
            T0 + 1200,
            Tz::UTC,
            ImageFormat::Svg,
        )
        .unwrap(),
    )
    .unwrap();
    assert_well_formed(&text);
    for want in [
        ">requests</text>",
        ">Cur:</text>",
        ">1.23k</text>",
        ">Avg:</text>",
        ">1.41k</text>",
        ">Max:</text>",
        ">2.00k</text>",
        ">Min:</text>",
        ">1.00k</text>",
    ] {
        assert!(text.contains(want), "{want} in the rrd legend");
    }
    // The rrd x axis is the requested window, not the data's.
    let (_, info) =
        render_graph_with_info(&[s], &o, T0 - 3600, T0 + 7200, Tz::UTC, ImageFormat::Png).unwrap();
    assert_eq!((info.start, info.end), (T0 - 3600, T0 + 7200));
    assert_eq!(
        info.left_axis.unwrap().bottom,
        0.0,
        "GrowthForecast's lower limit 0"
    );
    assert_eq!(GraphOptions::rrd().style, Style::Rrd);
}

#[test]
fn time_labels_follow_the_time_zone() {
    let o = opts(&[("width", "600"), ("height", "300")]);
    let s = [constant("a", 1.0, 120)]; // two hours from 00:00 UTC
    let utc =
        String::from_utf8(render_graph(&s, &o, 0, 0, Tz::UTC, ImageFormat::Svg).unwrap()).unwrap();
    let tokyo =
        String::from_utf8(render_graph(&s, &o, 0, 0, Tz::Asia__Tokyo, ImageFormat::Svg).unwrap())
            .unwrap();
    assert!(
        utc.contains(">00:20</text>") || utc.contains(">00:30</text>"),
        "UTC labels"
    );
    assert!(
        tokyo.contains(">09:20</text>") || tokyo.contains(">09:30</text>"),
        "Tokyo labels"
    );
    let o = opts(&[
        ("width", "600"),
        ("height", "300"),
        ("xFormat", "%d.%m. %Hh"),
    ]);
    let custom =
        String::from_utf8(render_graph(&s, &o, 0, 0, Tz::UTC, ImageFormat::Svg).unwrap()).unwrap();
    assert!(custom.contains(">12.03. 01h</text>"), "xFormat");
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let s = [constant("a", 1.0, 10)];
    let check = |o: &GraphOptions, series: &[GraphSeries]| {
        let e = render_graph(series, o, T0, T0 + 600, Tz::UTC, ImageFormat::Png).unwrap_err();
        assert!(e.is_client_error(), "{e}");
        e
    };
    let mut o = GraphOptions {
        width: 0,
        ..GraphOptions::default()
    };
    assert!(check(&o, &s).to_string().contains("width"));
    o.width = 100_000;
    check(&o, &s);
    let o = opts(&[("bgcolor", "notacolour")]);
    assert!(matches!(check(&o, &s), GraphError::Color { .. }));
    let mut bad = constant("b", 1.0, 10);
    bad.color = Some("zzzzzz".into());
    assert!(check(&GraphOptions::default(), &[bad])
        .to_string()
        .contains("\"b\""));
    let zero_step = GraphSeries::new("z", T0, 0, vec![Some(1.0)]);
    assert!(matches!(
        check(&GraphOptions::default(), &[zero_step]),
        GraphError::Series { .. }
    ));
    let o = opts(&[("yMin", "10"), ("yMax", "5")]);
    assert!(matches!(check(&o, &s), GraphError::Axis(_)));
    assert!(GraphOptions::from_params([("height", "-4")].into_iter()).is_err());
}

/// Data no graph should choke on.
fn awkward_series() -> Vec<Vec<GraphSeries>> {
    let s = |values: Vec<Option<f64>>| GraphSeries::new("awkward", T0, STEP, values);
    vec![
        vec![s(vec![None; 50])],
        vec![s(vec![Some(3.0)])],
        vec![s(vec![Some(7.0); 50])],
        vec![s(vec![Some(0.0); 50])],
        vec![s((0..50).map(|i| Some(-(i as f64) * 1e3)).collect())],
        vec![s(vec![
            Some(1e300),
            Some(-1e300),
            Some(f64::MAX),
            Some(f64::MIN),
        ])],
        vec![s(vec![Some(1e-300), Some(2e-300), Some(f64::MIN_POSITIVE)])],
        vec![s(vec![
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(1.0),
            Some(f64::NEG_INFINITY),
            None,
        ])],
        vec![GraphSeries::new(
            "far future",
            i64::MAX / 4,
            STEP,
            vec![Some(1.0), Some(2.0)],
        )],
        vec![GraphSeries::new(
            "before 1970",
            -86_400 * 365 * 100,
            86_400,
            vec![Some(1.0); 40],
        )],
        vec![GraphSeries::new(
            "huge step",
            T0,
            i64::MAX / 8,
            vec![Some(1.0), Some(2.0)],
        )],
        vec![
            s(vec![Some(1.0); 3]),
            GraphSeries::new("other step", T0 + 30, 7, vec![Some(2.0); 400]),
        ],
        vec![
            GraphSeries::new("ancient", i64::MIN / 2, 60, vec![Some(1.0)]),
            GraphSeries::new("far future too", i64::MAX / 2, 60, vec![Some(2.0)]),
        ],
        vec![GraphSeries::new(
            "max step",
            0,
            i64::MAX,
            vec![Some(1.0), Some(2.0), Some(3.0)],
        )],
        vec![GraphSeries::new(
            "edge of time",
            i64::MIN,
            1,
            vec![Some(1.0), Some(2.0)],
        )],
        vec![{
            let mut x = s(vec![Some(1.0), Some(0.0), Some(5.0)]);
            x.draw_as_infinite = true;
            x
        }],
        vec![{
            let mut x = s(vec![Some(2.0); 10]);
            x.invisible = true;
            x.stacked = true;
            x
        }],
        vec![s((0..50_000).map(|i| Some((i % 97) as f64)).collect())],
    ]
}

#[test]
fn awkward_data_renders_in_every_mode() {
    let modes: Vec<Vec<(&str, &str)>> = vec![
        vec![],
        vec![("areaMode", "stacked"), ("lineMode", "staircase")],
        vec![
            ("areaMode", "all"),
            ("areaAlpha", "0.4"),
            ("lineMode", "connected"),
        ],
        vec![("logBase", "10"), ("drawNullAsZero", "true")],
        vec![("graphOnly", "true")],
        vec![("width", "1"), ("height", "1")],
        vec![
            ("width", "40"),
            ("height", "30"),
            ("title", "t"),
            ("vtitle", "v"),
            ("margin", "50"),
        ],
        vec![
            ("yMax", "max"),
            ("yStep", "0.001"),
            ("minorY", "3"),
            ("yUnitSystem", "binary"),
        ],
        vec![("style", "rrd"), ("areaMode", "first")],
        vec![("fontSize", "200"), ("title", "a\nb\nc")],
    ];
    for series in awkward_series() {
        for mode in &modes {
            let o = opts(mode);
            for format in [ImageFormat::Png, ImageFormat::Svg] {
                match render_graph(&series, &o, T0, T0 + 3600, Tz::UTC, format) {
                    Ok(bytes) => assert!(!bytes.is_empty()),
                    Err(e) => assert!(e.is_client_error(), "{mode:?} on {}: {e}", series[0].name),
                }
            }
        }
    }
}

#[test]
fn random_options_and_data_never_panic() {
    // A fixed-seed generator over parameter values and data shapes.
    let mut seed: u64 = 0x5EED;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let params: &[(&str, &[&str])] = &[
        ("width", &["1", "50", "330", "800", "abc", "-1"]),
        ("height", &["1", "40", "250", "600"]),
        ("areaMode", &["none", "first", "all", "stacked", "bogus"]),
        ("lineMode", &["slope", "staircase", "connected"]),
        ("logBase", &["10", "2", "e", "0.5", "1"]),
        ("yMin", &["-10", "0", "5", "1e9"]),
        ("yMax", &["max", "10", "-5", "1e12"]),
        ("yLimit", &["3", "1e6"]),
        ("yStep", &["0.5", "1e-9", "100"]),
        ("minorY", &["0", "1", "5"]),
        ("areaAlpha", &["0.5", "x", "0"]),
        ("lineWidth", &["0", "0.3", "1.2", "5"]),
        ("colorList", &["red,green", "ff0000,00ff0080", "red,bogus"]),
        ("hideLegend", &["true", "false"]),
        ("hideAxes", &["true", "false"]),
        ("yAxisSide", &["right", "left"]),
        ("margin", &["0", "10", "200"]),
        ("title", &["", "T", "a+b%20c"]),
        ("xFormat", &["%H", "%Y-%m-%d %H:%M:%S"]),
        ("style", &["graphite", "rrd"]),
        ("uniqueLegend", &["true"]),
        ("hideNullFromLegend", &["true"]),
    ];
    for _ in 0..150 {
        let mut q: Vec<(&str, &str)> = Vec::new();
        for (name, values) in params {
            if next(3) == 0 {
                q.push((name, values[next(values.len() as u64) as usize]));
            }
        }
        let Ok(o) = GraphOptions::from_params(q.iter().copied()) else {
            continue;
        };
        let n_series = next(5) as usize;
        let series: Vec<GraphSeries> = (0..n_series)
            .map(|k| {
                let len = next(300) as usize;
                let step = 1 + next(600) as i64;
                let values = (0..len)
                    .map(|_| match next(10) {
                        0 => None,
                        1 => Some(f64::NAN),
                        2 => Some(-(next(1000) as f64)),
                        _ => Some(next(1_000_000) as f64 / 7.0),
                    })
                    .collect();
                let mut s = GraphSeries::new(format!("s{k}"), T0 + next(3600) as i64, step, values);
                s.second_y_axis = next(4) == 0;
                s.stacked = next(4) == 0;
                s.stack = next(5) == 0;
                s.draw_as_infinite = next(10) == 0;
                s.dashed = (next(5) == 0).then_some(3.0);
                s
            })
            .collect();
        for format in [ImageFormat::Png, ImageFormat::Svg] {
            if let Err(e) = render_graph(&series, &o, T0, T0 + 7200, Tz::UTC, format) {
                assert!(e.is_client_error(), "{q:?}: {e}");
            }
        }
    }
}

#[test]
fn shaded_intervals_are_drawn_behind_the_series_where_their_times_fall() {
    let base = [("width", "400"), ("height", "300"), ("hideLegend", "true")];
    let plain = opts(&base);
    // the middle third of the hour
    let shade = format!("{}:{}", T0 + 1200, T0 + 2400);
    let mut q = base.to_vec();
    q.push(("shade", &shade));
    let shaded = opts(&q);
    assert_eq!(shaded.shade, vec![(T0 + 1200, T0 + 2400)]);
    let s = [constant("flat", 10.0, 60)];
    let (a, _) = png(&s, &plain);
    let (b, info) = png(&s, &shaded);
    // white blended with 25 % of (255, 64, 64)
    let pink = [255, 207, 207];
    assert_eq!(a.count(pink, 6), 0);
    assert!(b.count(pink, 6) > 1000);
    let y = ((info.plot.top + info.plot.bottom) / 2.0) as usize + 20;
    let x_at = |t: i64| {
        info.plot.left
            + (t - info.start) as f64 / (info.end - info.start) as f64
                * (info.plot.right - info.plot.left)
    };
    assert!(close(b.px(x_at(T0 + 1800) as usize, y), pink, 6));
    assert!(!close(b.px(x_at(T0 + 600) as usize, y), pink, 6));
    assert!(!close(b.px(x_at(T0 + 3000) as usize, y), pink, 6));
    assert!(svg(&s, &shaded).contains("255,64,64") || svg(&s, &shaded).contains("#ff4040"));
    assert!(GraphOptions::from_params([("shade", "x:1")].into_iter()).is_err());
}
