//! The tags of a series, and how graphite-web derives them from a series name.
//!
//! A plain path gets `{"name": path}`. A tagged name in carbon form
//! (`cpu.user;host=web01;dc=ams`) or OpenMetrics form (`cpu{host="web01"}`) gets its
//! tags in the order written, then `name` (the metric with leading `~` removed) last —
//! the order graphite-web's JSON shows. A name that fails to parse, or that looks like
//! a function call (`sumSeries(a.b)`), keeps just `{"name": name}`.

use sumi_model::tagged;

/// Tag names and values in insertion order; setting an existing tag keeps its place,
/// as a Python dict does.
#[derive(Clone, Default)]
pub struct Tags(Repr);

/// Most series carry only `name` (every plain path does): that case is one
/// allocation instead of a vector and two strings, which matters when a render holds
/// a million series.
#[derive(Clone, Default)]
enum Repr {
    #[default]
    Empty,
    Name(Box<str>),
    List(Vec<(String, String)>),
}

impl Tags {
    pub fn new() -> Tags {
        Tags(Repr::Empty)
    }

    /// graphite-web's tags for a series called `name`.
    pub fn from_name(name: &str) -> Tags {
        if !looks_like_call(name) {
            let parsed = if name.ends_with("\"}") && name.contains('{') {
                parse_openmetrics(name)
            } else {
                parse_carbon(name)
            };
            if let Some(tags) = parsed {
                return tags;
            }
        }
        let mut tags = Tags::new();
        tags.set("name", name);
        tags
    }

    pub fn get(&self, tag: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == tag).map(|(_, v)| v)
    }

    /// Sets a tag, keeping the position of an existing one.
    pub fn set(&mut self, tag: &str, value: &str) {
        match &mut self.0 {
            Repr::Empty if tag == "name" => self.0 = Repr::Name(value.into()),
            Repr::Name(n) if tag == "name" => *n = value.into(),
            Repr::Empty => self.0 = Repr::List(vec![(tag.to_string(), value.to_string())]),
            Repr::Name(n) => {
                let list = vec![
                    ("name".to_string(), n.to_string()),
                    (tag.to_string(), value.to_string()),
                ];
                self.0 = Repr::List(list);
            }
            Repr::List(list) => match list.iter_mut().find(|(k, _)| k == tag) {
                Some(slot) => slot.1 = value.to_string(),
                None => list.push((tag.to_string(), value.to_string())),
            },
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let (name, list): (Option<&str>, &[(String, String)]) = match &self.0 {
            Repr::Empty => (None, &[]),
            Repr::Name(n) => (Some(n), &[]),
            Repr::List(list) => (None, list),
        };
        name.map(|n| ("name", n))
            .into_iter()
            .chain(list.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Empty => 0,
            Repr::Name(_) => 1,
            Repr::List(list) => list.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PartialEq for Tags {
    fn eq(&self, other: &Tags) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Tags {}

impl std::fmt::Debug for Tags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tags")
            .field(&self.iter().collect::<Vec<_>>())
            .finish()
    }
}

/// `re.match('^[a-z]+[(].+[)]$', name, re.IGNORECASE)`: graphite-web does not parse
/// tags out of names that look like function calls.
fn looks_like_call(name: &str) -> bool {
    let body = name.strip_suffix('\n').unwrap_or(name);
    let letters = body.bytes().take_while(u8::is_ascii_alphabetic).count();
    letters > 0
        && body[letters..].starts_with('(')
        && body.ends_with(')')
        && body.len() >= letters + 3
        && !body[letters + 1..body.len() - 1].contains('\n')
}

/// `metric;tag=value;...`, read with carbon's grammar ([`sumi_model::tagged`]).
fn parse_carbon(path: &str) -> Option<Tags> {
    let mut tags = Tags::new();
    tagged::parse_carbon_with(path, |tag, value| tags.set(tag, value))?;
    Some(tags)
}

/// `metric{tag="value",...}`: exactly one `{`, quoted values with `\"` and `\\`
/// escapes, pairs separated by `,` (or `:,`, a quirk of graphite-web's pattern).
fn parse_openmetrics(path: &str) -> Option<Tags> {
    let (metric, mut raw) = path[..path.len() - 1].split_once('{')?;
    if metric.is_empty() || raw.contains('{') {
        return None;
    }
    let mut tags = Tags::new();
    while !raw.is_empty() {
        let eq = raw.find('=')?;
        let tag = &raw[..eq];
        let rest = raw[eq + 1..].strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()? {
                    (_, c @ ('"' | '\\')) => value.push(c),
                    _ => return None,
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        if tagged::validate(tag, &value).is_err() {
            return None;
        }
        let after = &rest[close + 1..];
        raw = if let Some(r) = after.strip_prefix(":,").or_else(|| after.strip_prefix(',')) {
            r
        } else if after.is_empty() {
            ""
        } else {
            return None;
        };
        tags.set(tag, &value);
    }
    let name = metric.trim_start_matches('~');
    if name.is_empty() {
        return None;
    }
    tags.set("name", name);
    Some(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(t: &Tags) -> Vec<(&str, &str)> {
        t.iter().collect()
    }

    #[test]
    fn plain_paths() {
        assert_eq!(pairs(&Tags::from_name("a.b.c")), vec![("name", "a.b.c")]);
        assert_eq!(pairs(&Tags::from_name("~a.b")), vec![("name", "a.b")]);
        assert_eq!(pairs(&Tags::from_name("~")), vec![("name", "~")]);
        assert_eq!(
            pairs(&Tags::from_name("sumSeries(a.b)")),
            vec![("name", "sumSeries(a.b)")]
        );
    }

    #[test]
    fn carbon_tags_then_name() {
        assert_eq!(
            pairs(&Tags::from_name("cpu;host=web01;dc=ams")),
            vec![("host", "web01"), ("dc", "ams"), ("name", "cpu")]
        );
        assert_eq!(
            pairs(&Tags::from_name("cpu;a=1;a=2")),
            vec![("a", "2"), ("name", "cpu")]
        );
        // invalid segments: the whole name is kept
        assert_eq!(
            pairs(&Tags::from_name("cpu;novalue")),
            vec![("name", "cpu;novalue")]
        );
        assert_eq!(
            pairs(&Tags::from_name("cpu;a=~x")),
            vec![("name", "cpu;a=~x")]
        );
        assert_eq!(pairs(&Tags::from_name(";a=b")), vec![("name", ";a=b")]);
        assert_eq!(
            pairs(&Tags::from_name("cpu;a!=b")),
            vec![("name", "cpu;a!=b")]
        );
    }

    #[test]
    fn name_only_and_lists_behave_alike() {
        let mut a = Tags::from_name("a.b");
        let mut b = Tags::new();
        b.set("x", "1");
        b.set("name", "a.b");
        assert_ne!(a, b, "order matters, as in a dict");
        assert_eq!(a.get("name"), Some("a.b"));
        assert_eq!(a.get("x"), None);
        a.set("name", "c");
        assert_eq!(pairs(&a), vec![("name", "c")]);
        a.set("x", "1");
        a.set("name", "d");
        assert_eq!(pairs(&a), vec![("name", "d"), ("x", "1")]);
        assert_eq!(a.len(), 2);
        let mut c = Tags::new();
        c.set("name", "d");
        c.set("x", "1");
        assert_eq!(a, c);
        assert!(Tags::new().is_empty());
        assert_eq!(Tags::new(), Tags::default());
        assert_eq!(
            format!("{:?}", Tags::from_name("a")),
            r#"Tags([("name", "a")])"#
        );
    }

    #[test]
    fn openmetrics_tags() {
        assert_eq!(
            pairs(&Tags::from_name(r#"cpu{host="web01",dc="a\"b"}"#)),
            vec![("host", "web01"), ("dc", "a\"b"), ("name", "cpu")]
        );
        assert_eq!(
            pairs(&Tags::from_name(r#"cpu{host=web01"}"#)),
            vec![("name", r#"cpu{host=web01"}"#)]
        );
        // an OpenMetrics-looking name that fails is not read as carbon tags either
        assert_eq!(
            pairs(&Tags::from_name(r#"a;b=c{x"}"#)),
            vec![("name", r#"a;b=c{x"}"#)]
        );
    }
}
