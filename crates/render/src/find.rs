//! The answers of `/metrics/find`, `/metrics/expand` and `/metrics/index.json`, as
//! graphite-web 1.1.10's `metrics/views.py` writes them.
//!
//! Nodes are ordered as graphite-web orders them: by name (the last path node), a
//! path's branch before its leaf. (graphite-web shuffles nodes of different paths that
//! share a name; sumi orders those by path.) The formats:
//! - treejson (the default): one entry a *name* — the first node of each name wins, so
//!   a path that is both a branch and a leaf shows as a branch, and `servers.*.cpu`
//!   gives a single `cpu` whose id keeps the query's wildcards (`servers.*.cpu`);
//!   branches before leaves; with `wildcards=1` and more than one node, a `*` entry
//!   first. `text` is the name URL-unquoted (`+` and `%XX`), `id` is not.
//! - completer: every node, branches with a trailing `.` in their path, and a final
//!   `{"name": "*"}` with `wildcards=1` and more than one node. The query itself is
//!   rewritten first ([`completer_query`]).
//! - nodelist: the distinct path nodes at `position` (Python indexing: `-1` is the
//!   last), sorted.
//! - json: `path`, `is_leaf` and, for leaves, the `intervals` the caller supplies.
//!
//! All are JSON with the layout of `json_response_for`: pretty with two-space indent
//! on request, `jsonp` wrapping (`text/javascript`), and non-ASCII escaped only when
//! the client's `Accept` header is exactly `application/json` (otherwise the content
//! type gains `;charset=utf-8`).

use sumi_query::source::FindNode;

use crate::json::JsonWriter;
use crate::{wrap_json, RenderError, Rendered};

/// What `json_response_for` takes from the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonResponseOptions {
    pub jsonp: Option<String>,
    pub pretty: bool,
    /// Escape non-ASCII characters: graphite-web does when the `Accept` header is
    /// exactly `application/json` (or absent).
    pub ensure_ascii: bool,
}

impl Default for JsonResponseOptions {
    fn default() -> JsonResponseOptions {
        JsonResponseOptions {
            jsonp: None,
            pretty: false,
            ensure_ascii: true,
        }
    }
}

impl JsonResponseOptions {
    /// `ensure_ascii` from the request's `Accept` header, as graphite-web decides it.
    pub fn ensure_ascii_for(accept: Option<&str>) -> bool {
        accept.unwrap_or("application/json") == "application/json"
    }

    fn writer(&self) -> JsonWriter {
        JsonWriter::new(self.pretty.then_some(2), self.ensure_ascii)
    }

    fn respond(&self, body: String) -> Rendered {
        let (plain, script) = if self.ensure_ascii {
            ("application/json", "text/javascript")
        } else {
            (
                "application/json;charset=utf-8",
                "text/javascript;charset=utf-8",
            )
        };
        wrap_json(body, self.jsonp.as_deref(), plain, script)
    }
}

/// The last node of a path: graphite-web's `node.name`.
pub fn node_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// The nodes in graphite-web's order: by name, then path, a branch before a leaf.
fn ordered(nodes: &[FindNode]) -> Vec<&FindNode> {
    let mut v: Vec<&FindNode> = nodes.iter().collect();
    v.sort_by(|a, b| {
        node_name(&a.path)
            .cmp(node_name(&b.path))
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.is_leaf.cmp(&b.is_leaf))
    });
    v
}

/// The query as graphite-web rewrites it for `format=completer`: `..` becomes `*.`,
/// a `*` is appended unless there is one at the end, and with `automatic_variants`
/// a node holding `,` but no `{` is wrapped in braces.
pub fn completer_query(query: &str, automatic_variants: bool) -> String {
    let mut q = query.replace("..", "*.");
    if !q.ends_with('*') {
        q.push('*');
    }
    if automatic_variants {
        q = q
            .split('.')
            .map(|part| {
                if part.contains(',') && !part.contains('{') {
                    format!("{{{part}}}")
                } else {
                    part.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(".");
    }
    q
}

/// `format=treejson` for the nodes found by `query`.
pub fn tree_json(
    query: &str,
    nodes: &[FindNode],
    wildcards: bool,
    opts: &JsonResponseOptions,
) -> Rendered {
    let base = match query.rsplit_once('.') {
        Some((head, _)) => format!("{head}."),
        None => String::new(),
    };
    let mut w = opts.writer();
    w.begin_array();
    if nodes.len() > 1 && wildcards {
        let any_branch = nodes.iter().any(|n| !n.is_leaf);
        tree_entry(&mut w, "*", &format!("{base}*"), !any_branch);
    }
    // graphite-web keeps, of the nodes of one name, the first in [`ordered`]'s order:
    // the least (path, leaf) pair. `bench.*.cpu.user` finds 100,000 nodes of one name,
    // so the names are deduplicated first and only the distinct ones sorted.
    let mut first: std::collections::HashMap<&str, (&str, bool)> = std::collections::HashMap::new();
    for node in nodes {
        let key = (node.path.as_str(), node.is_leaf);
        first
            .entry(node_name(&node.path))
            .and_modify(|least| *least = (*least).min(key))
            .or_insert(key);
    }
    let mut names: Vec<(&str, bool)> = first
        .into_iter()
        .map(|(name, (_, leaf))| (name, leaf))
        .collect();
    names.sort_unstable();
    let branches = names.iter().filter(|n| !n.1).map(|n| n.0);
    let leaves = names.iter().filter(|n| n.1).map(|n| n.0);
    for name in branches {
        tree_entry(&mut w, &unquote_plus(name), &format!("{base}{name}"), false);
    }
    for name in leaves {
        tree_entry(&mut w, &unquote_plus(name), &format!("{base}{name}"), true);
    }
    w.end_array();
    opts.respond(w.finish())
}

fn tree_entry(w: &mut JsonWriter, text: &str, id: &str, leaf: bool) {
    w.begin_object();
    w.key("text");
    w.string(text);
    w.key("id");
    w.string(id);
    let flag = i64::from(leaf);
    w.key("allowChildren");
    w.int(1 - flag);
    w.key("expandable");
    w.int(1 - flag);
    w.key("leaf");
    w.int(flag);
    w.end_object();
}

/// `format=completer`.
pub fn completer(nodes: &[FindNode], wildcards: bool, opts: &JsonResponseOptions) -> Rendered {
    let mut w = opts.writer();
    w.begin_object();
    w.key("metrics");
    w.begin_array();
    for node in ordered(nodes) {
        w.begin_object();
        w.key("path");
        if node.is_leaf {
            w.string(&node.path);
        } else {
            w.string(&format!("{}.", node.path));
        }
        w.key("name");
        w.string(node_name(&node.path));
        w.key("is_leaf");
        w.string(if node.is_leaf { "1" } else { "0" });
        w.end_object();
    }
    if nodes.len() > 1 && wildcards {
        w.begin_object();
        w.key("name");
        w.string("*");
        w.end_object();
    }
    w.end_array();
    w.end_object();
    opts.respond(w.finish())
}

/// `format=nodelist`: the distinct nodes at `position` of every path, sorted
/// (`{"nodes": [...]}`). A position some path does not have is an error (graphite-web
/// answers 500).
pub fn node_list(
    nodes: &[FindNode],
    position: i64,
    opts: &JsonResponseOptions,
) -> Result<Rendered, RenderError> {
    let mut found = std::collections::BTreeSet::new();
    for node in nodes {
        let parts: Vec<&str> = node.path.split('.').collect();
        let index = if position < 0 {
            i64::try_from(parts.len()).ok().map(|n| n + position)
        } else {
            Some(position)
        };
        let part = index
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| parts.get(i))
            .ok_or_else(|| RenderError::NodePosition {
                position,
                path: node.path.clone(),
            })?;
        found.insert(*part);
    }
    let mut w = opts.writer();
    w.begin_object();
    w.key("nodes");
    w.begin_array();
    for part in found {
        w.string(part);
    }
    w.end_array();
    w.end_object();
    Ok(opts.respond(w.finish()))
}

/// `format=json`: nodes sorted by path, leaves with the `(start, end)` intervals
/// `intervals` gives for them (whisper's: `now - maxRetention` to the file's
/// modification time, as floats).
pub fn find_json(
    nodes: &[FindNode],
    intervals: &dyn Fn(&FindNode) -> Vec<(f64, f64)>,
    opts: &JsonResponseOptions,
) -> Rendered {
    let mut sorted = ordered(nodes);
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut w = opts.writer();
    w.begin_array();
    for node in sorted {
        w.begin_object();
        w.key("path");
        w.string(&node.path);
        w.key("is_leaf");
        w.bool(node.is_leaf);
        if node.is_leaf {
            w.key("intervals");
            w.begin_array();
            for (start, end) in intervals(node) {
                w.begin_object();
                w.key("start");
                w.float(start);
                w.key("end");
                w.float(end);
                w.end_object();
            }
            w.end_array();
        }
        w.end_object();
    }
    w.end_array();
    opts.respond(w.finish())
}

/// `/metrics/expand`: for each query (in order) the nodes it found. Without
/// `group_by_expr`, `{"results": [every distinct path, sorted]}`; with it,
/// `{"results": {query: [its distinct paths, sorted]}}` in the order the queries were
/// first given. `leaves_only` drops branches.
pub fn expand(
    results: &[(String, Vec<FindNode>)],
    group_by_expr: bool,
    leaves_only: bool,
    opts: &JsonResponseOptions,
) -> Rendered {
    let paths = |nodes: &[FindNode]| -> std::collections::BTreeSet<String> {
        nodes
            .iter()
            .filter(|n| n.is_leaf || !leaves_only)
            .map(|n| n.path.clone())
            .collect()
    };
    let mut w = opts.writer();
    w.begin_object();
    w.key("results");
    if group_by_expr {
        // a dict: a repeated query keeps its first place and its last answer
        let mut grouped: Vec<(&str, std::collections::BTreeSet<String>)> = Vec::new();
        for (query, nodes) in results {
            let found = paths(nodes);
            match grouped.iter_mut().find(|(q, _)| q == query) {
                Some(slot) => slot.1 = found,
                None => grouped.push((query, found)),
            }
        }
        w.begin_object();
        for (query, found) in grouped {
            w.key(query);
            w.begin_array();
            for p in found {
                w.string(&p);
            }
            w.end_array();
        }
        w.end_object();
    } else {
        let mut all = std::collections::BTreeSet::new();
        for (_, nodes) in results {
            all.extend(paths(nodes));
        }
        w.begin_array();
        for p in all {
            w.string(&p);
        }
        w.end_array();
    }
    w.end_object();
    opts.respond(w.finish())
}

/// `/metrics/index.json`: every leaf path, sorted and distinct.
pub fn index_json(paths: &[String], opts: &JsonResponseOptions) -> Rendered {
    let sorted: std::collections::BTreeSet<&str> = paths.iter().map(String::as_str).collect();
    let mut w = opts.writer();
    w.begin_array();
    for p in sorted {
        w.string(p);
    }
    w.end_array();
    opts.respond(w.finish())
}

/// Python's `urllib.parse.unquote_plus` (UTF-8, invalid bytes replaced).
pub fn unquote_plus(s: &str) -> String {
    if !s.contains(['+', '%']) {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) if hex.is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit())) => {
                        out.push(b);
                        i += 3;
                    }
                    _ => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
