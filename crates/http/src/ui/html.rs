//! Small pieces of HTML: escaping, URL path segments, the page frame.

use std::fmt::Write;

/// Text for an HTML element or a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One URL path segment: everything but unreserved characters percent-encoded (so a
/// name with `/`, `?`, `#` or spaces stays one segment).
pub fn path_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A query string value.
pub fn query_escape(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `/prefix/a/b/c` with each segment escaped.
pub fn path(prefix: &str, segments: &[&str]) -> String {
    let mut out = prefix.to_string();
    for s in segments {
        out.push('/');
        out.push_str(&path_escape(s));
    }
    out
}

/// The navigation of every page: where you are, as links.
pub struct Crumbs(pub Vec<(String, Option<String>)>);

impl Crumbs {
    /// Just the home page.
    pub fn home() -> Crumbs {
        Crumbs(vec![("Home".into(), Some("/".into()))])
    }

    /// One more level; `href` `None` for the current page.
    pub fn push(mut self, text: &str, href: Option<String>) -> Crumbs {
        self.0.push((text.to_string(), href));
        self
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (i, (text, href)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push_str(r#"<span class="sep">›</span>"#);
            }
            match href {
                Some(h) if i + 1 < self.0.len() => {
                    let _ = write!(out, r#"<a href="{}">{}</a>"#, esc(h), esc(text));
                }
                _ => {
                    let _ = write!(out, "<span>{}</span>", esc(text));
                }
            }
        }
        out
    }
}

/// A whole page: title, navigation, body.
pub fn page(title: &str, crumbs: &Crumbs, actions: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · sumi</title>
<link rel="stylesheet" href="/static/sumi.css">
<script src="/static/sumi.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="/">sumi</a>
  <nav class="main">
    <a href="/">Graphs</a>
    <a href="/add_complex">Add complex graph</a>
    <a href="/browse">Metric browser</a>
    <a href="/anomalies">Anomalies</a>
  </nav>
</header>
<div class="bar"><nav class="crumbs">{crumbs}</nav><div class="actions">{actions}</div></div>
<main>
{body}
</main>
</body>
</html>
"#,
        title = esc(title),
        crumbs = crumbs.render(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(path_escape("a b/c?#日"), "a%20b%2Fc%3F%23%E6%97%A5");
        assert_eq!(path("/list", &["s.1", "x y"]), "/list/s.1/x%20y");
        assert_eq!(query_escape("a b&c"), "a+b%26c");
    }

    #[test]
    fn crumbs_link_all_but_the_last() {
        let c = Crumbs::home()
            .push("svc", Some("/list/svc".into()))
            .push("sec", None);
        let html = page("t", &c, "", "");
        assert!(html.contains(r#"<a href="/">Home</a>"#));
        assert!(html.contains(r#"<a href="/list/svc">svc</a>"#));
        assert!(html.contains("<span>sec</span>"));
    }
}
