//! `[[anomaly]]` tables: which series are watched, with which detector settings.
//!
//! ```toml
//! [[anomaly]]
//! match = "servers.*.cpu.total"      # a glob, as in /render (`**` any depth)
//! tags = ["dc=eu", "role=~web.*"]    # seriesByTag's expressions, all must hold
//! alarm = 0.7                        # any detector setting (docs/anomaly.md)
//! ```
//!
//! A table needs `match`, `tags` or both. The glob is matched against the metric
//! part of a name (before any `;tag=value`); tag expressions against its tags, `name`
//! included (an untagged `a.b.c` has the single tag `name=a.b.c`). The first table
//! that matches a series decides; a series no table matches is not watched.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use regex::Regex;
use serde::Deserialize;
use sumi_model::glob::PathPattern;
use sumi_store::{TagExpr, TagOp};

/// One `[[anomaly]]` table as written.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct RuleTable {
    #[serde(rename = "match")]
    pub(crate) pattern: Option<String>,
    pub(crate) tags: Option<Vec<String>>,
    /// Every other key is a detector setting (`Config::set`).
    #[serde(flatten)]
    pub(crate) settings: BTreeMap<String, toml::Value>,
}

/// One tag expression, ready to test a series' tags.
#[derive(Debug, Clone)]
struct TagTest {
    tag: String,
    op: TagOp,
    spec: String,
    regex: Option<Regex>,
}

impl TagTest {
    fn parse(text: &str) -> Result<TagTest> {
        let e = TagExpr::parse(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        let regex = match e.op {
            TagOp::Match | TagOp::NotMatch => {
                // anchored at the start as graphite-web anchors them
                let anchored = if e.spec.starts_with('^') {
                    e.spec.clone()
                } else {
                    format!("^({})", e.spec)
                };
                Some(Regex::new(&anchored).with_context(|| format!("regex in {text:?}"))?)
            }
            TagOp::Eq | TagOp::Ne => None,
        };
        Ok(TagTest {
            tag: e.tag,
            op: e.op,
            spec: e.spec,
            regex,
        })
    }

    /// graphite-web's semantics: a missing tag has the value "".
    fn holds(&self, tags: &[(&str, &str)]) -> bool {
        let value = tags
            .iter()
            .find(|(t, _)| *t == self.tag)
            .map_or("", |(_, v)| v);
        match self.op {
            TagOp::Eq => value == self.spec,
            TagOp::Ne => value != self.spec,
            TagOp::Match => self.regex.as_ref().is_some_and(|r| r.is_match(value)),
            TagOp::NotMatch => !self.regex.as_ref().is_some_and(|r| r.is_match(value)),
        }
    }
}

/// A validated table.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// As written, for logs and `/api/anomalies`' rule listing.
    pub(crate) text: String,
    pattern: Option<PathPattern>,
    tags: Vec<TagTest>,
    /// One copy shared by the rule's detectors (kept in the cache, not one per series).
    pub(crate) config: std::sync::Arc<sumi_anomaly::Config>,
    /// A detector of the rule that has seen nothing: a new series' detector is a copy
    /// (`Detector::new` would check the settings again, once a series).
    pub(crate) fresh: sumi_anomaly::Detector,
}

impl Rule {
    pub(crate) fn from_table(i: usize, t: &RuleTable) -> Result<Rule> {
        let what = format!("[[anomaly]] table {}", i + 1);
        if t.pattern.is_none() && t.tags.as_ref().is_none_or(Vec::is_empty) {
            bail!("{what}: give `match = \"GLOB\"`, `tags = [...]` or both (\"**\" watches every series)");
        }
        let pattern = match &t.pattern {
            Some(p) => {
                PathPattern::check(p).with_context(|| format!("{what}: match = {p:?}"))?;
                Some(PathPattern::parse(p))
            }
            None => None,
        };
        let tags = t
            .tags
            .iter()
            .flatten()
            .map(|e| TagTest::parse(e).with_context(|| format!("{what}: tags")))
            .collect::<Result<Vec<_>>>()?;
        let mut config = sumi_anomaly::Config::default();
        for (key, value) in &t.settings {
            let text = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => bail!("{what}: {key} = {other}: expected a number or a boolean"),
            };
            config
                .set(key, &text)
                .map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        }
        config
            .validate()
            .map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let mut text = String::new();
        if let Some(p) = &t.pattern {
            text.push_str(&format!("match={p:?}"));
        }
        for e in t.tags.iter().flatten() {
            text.push_str(&format!(" tag={e:?}"));
        }
        let config = std::sync::Arc::new(config);
        Ok(Rule {
            text: text.trim().to_string(),
            pattern,
            tags,
            fresh: sumi_anomaly::Detector::new(config.clone()),
            config,
        })
    }

    /// Whether the series `name` (canonical, possibly tagged) is chosen by this rule.
    pub(crate) fn matches(&self, name: &str) -> bool {
        let metric = name.split(';').next().unwrap_or(name);
        if let Some(p) = &self.pattern {
            if !p.matches_path(metric) {
                return false;
            }
        }
        if self.tags.is_empty() {
            return true;
        }
        let tags = if name.contains(';') {
            sumi_model::tagged::parse_carbon(name).unwrap_or_default()
        } else {
            vec![("name", name)]
        };
        self.tags.iter().all(|t| t.holds(&tags))
    }
}

/// The rules in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules(pub(crate) Vec<Rule>);

impl Rules {
    pub(crate) fn from_tables(tables: &[RuleTable]) -> Result<Rules> {
        tables
            .iter()
            .enumerate()
            .map(|(i, t)| Rule::from_table(i, t))
            .collect::<Result<Vec<_>>>()
            .map(Rules)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The index of the first rule that watches `name`. The companion score series
    /// (`_anomaly.…`) are never watched.
    pub(crate) fn rule_for(&self, name: &str) -> Option<usize> {
        if name.starts_with(sumi_query::functions::anomaly::SCORE_PREFIX) {
            return None;
        }
        self.0.iter().position(|r| r.matches(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Result<Rules> {
        #[derive(Deserialize)]
        struct F {
            anomaly: Vec<RuleTable>,
        }
        let f: F = toml::from_str(text)?;
        Rules::from_tables(&f.anomaly)
    }

    #[test]
    fn first_match_wins_with_globs_and_tags() {
        let r = rules(
            r#"
            [[anomaly]]
            match = "web.*.cpu"
            alarm = 0.8
            [[anomaly]]
            tags = ["name=~disk\\..*", "dc!=us"]
            window = 256
            [[anomaly]]
            match = "**"
            "#,
        )
        .unwrap();
        assert_eq!(r.rule_for("web.a.cpu"), Some(0));
        assert_eq!(r.0[0].config.alarm, 0.8);
        assert_eq!(r.rule_for("disk.sda;dc=eu"), Some(1));
        assert_eq!(r.0[1].config.window, 256);
        assert_eq!(r.rule_for("disk.sda;dc=us"), Some(2));
        assert_eq!(r.rule_for("disk.sda"), Some(1));
        assert_eq!(r.rule_for("anything.else"), Some(2));
        assert_eq!(r.rule_for("_anomaly.web.a.cpu"), None);
    }

    #[test]
    fn bad_tables_are_refused_with_their_place() {
        let e = rules("[[anomaly]]\nalarm = 0.5\n").unwrap_err();
        assert!(format!("{e:#}").contains("table 1"), "{e:#}");
        let e = rules("[[anomaly]]\nmatch = \"a\"\nno_such = 1\n").unwrap_err();
        assert!(format!("{e:#}").contains("no_such"), "{e:#}");
        let e = rules("[[anomaly]]\ntags = [\"bad\"]\n").unwrap_err();
        assert!(format!("{e:#}").contains("tags"), "{e:#}");
        let e = rules("[[anomaly]]\nmatch = \"a\"\nwindow = 0\n").unwrap_err();
        assert!(format!("{e:#}").contains("table 1"), "{e:#}");
    }
}
