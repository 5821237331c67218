//! Tagged series names, `name;tag1=value1;tag2=value2`: carbon 1.1.10's grammar
//! (`TaggedSeries` in `carbon/util.py`), kept once for every stage. Ingest puts names in
//! canonical form with it ([`canonicalize`], [`canonical_name`]: carbon-cache applies
//! `TaggedSeries.parse_carbon(path).path` to every metric before it is stored); the
//! store's tag index and the query's series tags read tags out of a name with
//! [`parse_carbon`].
//!
//! carbon's rules, which [`canonicalize`] follows:
//! - the metric is the text before the first `;` and must not be empty;
//! - each further segment is `tag=value`, split at its first `=`; the tag must be
//!   non-empty and hold none of `;!^=`; the value must be non-empty, hold no `;` and not
//!   start with `~`;
//! - a tag given twice keeps its last value (a Python dict);
//! - the special tag `name` is always the metric, with leading `~` removed (a `name=`
//!   segment is overwritten by it), and must not be empty then;
//! - the canonical path is that name followed by `;tag=value` for every other tag,
//!   sorted as strings (Python sorts the formatted `;tag=value` pieces, so `a-b=1`
//!   sorts before `a=1`: `-` < `=`).
//!
//! Untagged names are not passed through here (carbon would strip a leading `~` from
//! them too): every protocol keeps such names as sent. Tagged names are canonicalised
//! on every protocol ([`canonical_name`] for plaintext and pickle); one carbon cannot
//! parse is refused and counted (`invalid_tags`) where carbon logs it and stores it
//! under its raw name.

use std::borrow::Cow;
use std::cmp::Ordering;

/// Characters carbon refuses in a tag (`TaggedSeries.prohibitedTagChars`).
pub const PROHIBITED_TAG_CHARS: &str = ";!^=";

/// Why carbon would refuse a tagged name. The messages are carbon's, in lowercase.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    /// Nothing before the first `;`.
    #[error("no metric name before the tags")]
    NoMetric,
    /// A segment without `=`, or with nothing before it.
    #[error("invalid tag segment {0:?} (expected tag=value)")]
    Segment(String),
    /// A tag holding one of `;!^=`.
    #[error("character {ch:?} is not allowed in tag {tag:?}")]
    TagChar { tag: String, ch: char },
    /// A tag with an empty value.
    #[error("value for tag {0:?} may not be empty")]
    EmptyValue(String),
    /// A value holding `;`.
    #[error("character ';' is not allowed in value {value:?} of tag {tag:?}")]
    ValueSemicolon { tag: String, value: String },
    /// A value starting with `~`.
    #[error("value of tag {0:?} may not start with '~'")]
    ValueTilde(String),
    /// The metric name is nothing but `~` characters.
    #[error("metric name {0:?} is empty once leading '~' are removed")]
    EmptyName(String),
}

/// Checks one tag and its value as carbon's `validateTagAndValue` does.
pub fn validate(tag: &str, value: &str) -> Result<(), TagError> {
    if tag.is_empty() {
        return Err(TagError::Segment(format!("={value}")));
    }
    if let Some(ch) = tag.chars().find(|c| PROHIBITED_TAG_CHARS.contains(*c)) {
        return Err(TagError::TagChar {
            tag: tag.to_string(),
            ch,
        });
    }
    if value.is_empty() {
        return Err(TagError::EmptyValue(tag.to_string()));
    }
    if value.contains(';') {
        return Err(TagError::ValueSemicolon {
            tag: tag.to_string(),
            value: value.to_string(),
        });
    }
    if value.starts_with('~') {
        return Err(TagError::ValueTilde(tag.to_string()));
    }
    Ok(())
}

/// Writes the canonical form of `path` (which may hold `;tag=value` segments) with the
/// `extra` tags added after its own (so they win over a segment of the same tag) into
/// `out` (cleared first). `tags` is scratch space, reused between calls.
pub fn canonicalize<'a>(
    path: &'a str,
    extra: impl IntoIterator<Item = (&'a str, &'a str)>,
    tags: &mut Vec<(&'a str, &'a str)>,
    out: &mut String,
) -> Result<(), TagError> {
    tags.clear();
    out.clear();
    let mut segments = path.split(';');
    let metric = segments.next().unwrap_or_default();
    if metric.is_empty() {
        return Err(TagError::NoMetric);
    }
    for segment in segments {
        match segment.split_once('=') {
            Some((tag, value)) if !tag.is_empty() => {
                validate(tag, value)?;
                tags.push((tag, value));
            }
            _ => return Err(TagError::Segment(segment.to_string())),
        }
    }
    for (tag, value) in extra {
        validate(tag, value)?;
        tags.push((tag, value));
    }
    let name = metric.trim_start_matches('~');
    if name.is_empty() {
        return Err(TagError::EmptyName(metric.to_string()));
    }
    sort_unique(tags);
    out.push_str(name);
    for (tag, value) in tags.iter().filter(|(t, _)| *t != "name") {
        out.push(';');
        out.push_str(tag);
        out.push('=');
        out.push_str(value);
    }
    Ok(())
}

/// A received name in carbon's canonical form (`CacheFeedingProcessor.process`):
/// names without `;` are returned as they are, tagged names are put in canonical
/// form (borrowed when they already are).
pub fn canonical_name(name: Cow<'_, str>) -> Result<Cow<'_, str>, TagError> {
    if !name.contains(';') {
        return Ok(name);
    }
    let mut tags = Vec::new();
    let mut out = String::with_capacity(name.len());
    canonicalize(&name, [], &mut tags, &mut out)?;
    if out == *name {
        return Ok(name);
    }
    Ok(Cow::Owned(out))
}

/// The tags of a tagged name as carbon's `TaggedSeries.parse_carbon` reads them: in
/// first-seen order, a repeated tag keeping its first place and its last value, `name`
/// (the metric, leading `~` removed) last unless given as a segment, where it takes
/// the metric's value. `None` for a name carbon would refuse.
pub fn parse_carbon(name: &str) -> Option<Vec<(&str, &str)>> {
    let mut tags: Vec<(&str, &str)> = Vec::new();
    parse_carbon_with(name, |tag, value| {
        match tags.iter_mut().find(|(t, _)| *t == tag) {
            Some(slot) => slot.1 = value,
            None => tags.push((tag, value)),
        }
    })?;
    Some(tags)
}

/// [`parse_carbon`] into the caller's own map: `set(tag, value)` for each segment in
/// order, then `set("name", metric)`; `set` keeps the place of a tag it already holds,
/// as a Python dict does. `None` for a name carbon would refuse, possibly after some
/// calls (the caller drops what it built).
pub fn parse_carbon_with<'a>(name: &'a str, mut set: impl FnMut(&'a str, &'a str)) -> Option<()> {
    let mut segments = name.split(';');
    let metric = segments.next().filter(|m| !m.is_empty())?;
    for segment in segments {
        let (tag, value) = segment.split_once('=')?;
        validate(tag, value).ok()?;
        set(tag, value);
    }
    let metric = metric.trim_start_matches('~');
    if metric.is_empty() {
        return None;
    }
    set("name", metric);
    Some(())
}

/// Sorts `tag=value` pairs as carbon orders them, keeping the last value of a tag
/// given more than once.
pub fn sort_unique<K: AsRef<str>, V: AsRef<str>>(tags: &mut Vec<(K, V)>) {
    // A stable sort by tag keeps repeated tags in arrival order: keep the last of each
    // run. Then order by the whole `tag=value` text.
    tags.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
    let mut keep = 0;
    for i in 0..tags.len() {
        let last_of_run = tags
            .get(i + 1)
            .is_none_or(|next| next.0.as_ref() != tags[i].0.as_ref());
        if last_of_run {
            tags.swap(keep, i);
            keep += 1;
        }
    }
    tags.truncate(keep);
    tags.sort_by(|a, b| pair_cmp(a.0.as_ref(), a.1.as_ref(), b.0.as_ref(), b.1.as_ref()));
}

/// Compares `ka=va` with `kb=vb` as strings, without building them.
fn pair_cmp(ka: &str, va: &str, kb: &str, vb: &str) -> Ordering {
    let a = ka.bytes().chain(std::iter::once(b'=')).chain(va.bytes());
    let b = kb.bytes().chain(std::iter::once(b'=')).chain(vb.bytes());
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(path: &str, extra: &[(&str, &str)]) -> Result<String, TagError> {
        let mut tags = Vec::new();
        let mut out = String::new();
        canonicalize(path, extra.iter().copied(), &mut tags, &mut out).map(|()| out)
    }

    // Expected values printed by carbon 1.1.10's
    // `TaggedSeries.parse(path).path` under Python 3.11.
    #[test]
    fn canonical_order_as_carbon() {
        assert_eq!(canon("a.b;z=1;a=2", &[]).unwrap(), "a.b;a=2;z=1");
        assert_eq!(canon("m;a=1;a-b=2", &[]).unwrap(), "m;a-b=2;a=1");
        assert_eq!(canon("m;b=1;b=2", &[]).unwrap(), "m;b=2");
        assert_eq!(canon("~~m;name=x;k=v", &[]).unwrap(), "m;k=v");
        assert_eq!(canon("m;k=v=w", &[]).unwrap(), "m;k=v=w");
        assert_eq!(canon("m", &[("k", "v"), ("a", "b")]).unwrap(), "m;a=b;k=v");
        assert_eq!(canon("m;k=1", &[("k", "2")]).unwrap(), "m;k=2");
        assert_eq!(canon("m;k=a b", &[]).unwrap(), "m;k=a b");
    }

    #[test]
    fn refusals_as_carbon() {
        assert_eq!(canon(";k=v", &[]), Err(TagError::NoMetric));
        assert!(matches!(canon("m;k", &[]), Err(TagError::Segment(_))));
        assert!(matches!(canon("m;=v", &[]), Err(TagError::Segment(_))));
        assert!(matches!(canon("m;", &[]), Err(TagError::Segment(_))));
        assert_eq!(canon("m;k=", &[]), Err(TagError::EmptyValue("k".into())));
        assert_eq!(canon("m;k=~v", &[]), Err(TagError::ValueTilde("k".into())));
        assert_eq!(
            canon("m;k!=v", &[]),
            Err(TagError::TagChar {
                tag: "k!".into(),
                ch: '!'
            })
        );
        assert!(matches!(
            canon("m", &[("k", "a;b")]),
            Err(TagError::ValueSemicolon { .. })
        ));
        assert!(matches!(
            canon("m", &[("k^", "v")]),
            Err(TagError::TagChar { .. })
        ));
        assert_eq!(canon("~~;k=v", &[]), Err(TagError::EmptyName("~~".into())));
    }

    #[test]
    fn canonical_name_borrows_when_it_can() {
        let same = canonical_name(Cow::Borrowed("m;a=1;b=2")).unwrap();
        assert!(matches!(same, Cow::Borrowed("m;a=1;b=2")));
        let plain = canonical_name(Cow::Borrowed("~a.b")).unwrap();
        assert_eq!(plain, "~a.b");
        assert_eq!(
            canonical_name(Cow::Borrowed("m;b=2;a=1")).unwrap(),
            "m;a=1;b=2"
        );
        assert_eq!(
            canonical_name(Cow::Borrowed("m;k=")),
            Err(TagError::EmptyValue("k".into()))
        );
    }

    #[test]
    fn parse_carbon_order_and_refusals() {
        assert_eq!(
            parse_carbon("~m;b=1;a=2;b=3").unwrap(),
            [("b", "3"), ("a", "2"), ("name", "m")]
        );
        assert_eq!(
            parse_carbon("m;name=x;k=v").unwrap(),
            [("name", "m"), ("k", "v")]
        );
        assert_eq!(parse_carbon("a.b").unwrap(), [("name", "a.b")]);
        assert!(parse_carbon("m;k=").is_none());
        assert!(parse_carbon(";k=v").is_none());
        assert!(parse_carbon("m;novalue").is_none());
        assert!(parse_carbon("m;a!=b").is_none());
        assert!(parse_carbon("m;a=~x").is_none());
        assert!(parse_carbon("~~;k=v").is_none());
    }

    #[test]
    fn sort_unique_keeps_the_last_value() {
        let mut t = vec![("b", "1"), ("a", "1"), ("b", "2"), ("a", "3"), ("c", "0")];
        sort_unique(&mut t);
        assert_eq!(t, vec![("a", "3"), ("b", "2"), ("c", "0")]);
    }
}
