//! Retention archives and carbon's two config files.
//!
//! `storage-schemas.conf` gives each series its archives (`10s:6h,1m:7d,10m:5y`) and
//! `storage-aggregation.conf` its rollup method and xFilesFactor. Both are read with
//! carbon's syntax (an ordered ini file) and matching rule: sections in file order, the
//! first whose `pattern` regex *searches* the metric name wins; carbon's own fallback
//! applies when nothing matches. Without files, sumi uses [`StorageSchemas::builtin`] and
//! [`StorageAggregation::builtin`].

use std::fmt;
use std::sync::Arc;

use regex::Regex;

use crate::agg::AggMethod;

/// One archive of a retention: a point every `step_secs` seconds, `points` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Archive {
    pub step_secs: u32,
    pub points: u32,
}

impl Archive {
    pub fn retention_secs(&self) -> i64 {
        i64::from(self.step_secs) * i64::from(self.points)
    }
}

impl fmt::Display for Archive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.step_secs, self.points)
    }
}

/// The archives of one series, finest first, validated with whisper's rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Retention {
    archives: Vec<Archive>,
}

impl Retention {
    /// Validates the archives as whisper's `validateArchiveList` does: sorted by step,
    /// no two with the same step, each step dividing the next, each retention longer
    /// than the previous, and each archive holding at least one point of the next.
    pub fn new(mut archives: Vec<Archive>) -> Result<Retention, SchemaError> {
        if archives.is_empty() {
            return Err(SchemaError::Retention("no archives".into()));
        }
        archives.sort_by_key(|a| a.step_secs);
        for a in &archives {
            if a.step_secs == 0 || a.points == 0 {
                return Err(SchemaError::Retention(format!(
                    "archive {a}: step and points must be positive"
                )));
            }
        }
        for pair in archives.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.step_secs == b.step_secs {
                return Err(SchemaError::Retention(format!(
                    "two archives with the same step ({a} and {b})"
                )));
            }
            if b.step_secs % a.step_secs != 0 {
                return Err(SchemaError::Retention(format!(
                    "step {} does not divide step {} ({a} and {b})",
                    a.step_secs, b.step_secs
                )));
            }
            if b.retention_secs() <= a.retention_secs() {
                return Err(SchemaError::Retention(format!(
                    "archive {b} does not cover more time than archive {a}"
                )));
            }
            if a.points < b.step_secs / a.step_secs {
                return Err(SchemaError::Retention(format!(
                    "archive {a} holds fewer points than one point of archive {b} needs"
                )));
            }
        }
        Ok(Retention { archives })
    }

    /// Parses carbon's `retentions` value: comma-separated `precision:history`, each
    /// side either a plain number (seconds, resp. points) or a number with a unit
    /// (`s`, `m`/`min`, `h`, `d`, `w`, `y`: any prefix of seconds, minutes, hours, days,
    /// weeks, years, as whisper's `parseRetentionDef` accepts).
    pub fn parse(spec: &str) -> Result<Retention, SchemaError> {
        let archives = spec
            .split(',')
            .map(parse_archive)
            .collect::<Result<Vec<_>, _>>()?;
        Retention::new(archives)
    }

    pub fn archives(&self) -> &[Archive] {
        &self.archives
    }

    pub fn max_retention_secs(&self) -> i64 {
        self.archives
            .iter()
            .map(Archive::retention_secs)
            .max()
            .unwrap_or(0)
    }
}

impl fmt::Display for Retention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.archives.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

fn unit_secs(unit: &str) -> Option<u64> {
    const UNITS: [(&str, u64); 6] = [
        ("seconds", 1),
        ("minutes", 60),
        ("hours", 3600),
        ("days", 86400),
        ("weeks", 86400 * 7),
        ("years", 86400 * 365),
    ];
    UNITS
        .iter()
        .find(|(name, _)| name.starts_with(unit))
        .map(|&(_, secs)| secs)
}

/// `(digits, unit)` of `10m`; `None` unless it is digits followed by lowercase letters.
fn split_number_unit(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = s.split_at(digits);
    if num.is_empty() || unit.is_empty() || !unit.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    Some((num.parse().ok()?, unit))
}

fn parse_archive(def: &str) -> Result<Archive, SchemaError> {
    let bad = |what: &str| SchemaError::Retention(format!("{what} in {:?}", def.trim()));
    let (precision, history) = def
        .trim()
        .split_once(':')
        .ok_or_else(|| bad("expected precision:history"))?;
    let step: u64 = if !precision.is_empty() && precision.bytes().all(|b| b.is_ascii_digit()) {
        precision
            .parse()
            .map_err(|_| bad("precision out of range"))?
    } else {
        let (n, unit) = split_number_unit(precision).ok_or_else(|| bad("invalid precision"))?;
        n.checked_mul(unit_secs(unit).ok_or_else(|| bad("invalid unit"))?)
            .ok_or_else(|| bad("precision out of range"))?
    };
    if step == 0 {
        return Err(bad("precision must be positive"));
    }
    let points: u64 = if !history.is_empty() && history.bytes().all(|b| b.is_ascii_digit()) {
        history.parse().map_err(|_| bad("history out of range"))?
    } else {
        let (n, unit) = split_number_unit(history).ok_or_else(|| bad("invalid history"))?;
        n.checked_mul(unit_secs(unit).ok_or_else(|| bad("invalid unit"))?)
            .ok_or_else(|| bad("history out of range"))?
            / step
    };
    Ok(Archive {
        step_secs: u32::try_from(step).map_err(|_| bad("precision out of range"))?,
        points: u32::try_from(points).map_err(|_| bad("history out of range"))?,
    })
}

/// Everything the store needs to know about a series when it is created.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesConfig {
    pub retention: Arc<Retention>,
    pub method: AggMethod,
    /// xFilesFactor, kept as whisper keeps it (a 32-bit float in the file header).
    pub xff: f32,
}

/// An error in a config file or a retention definition.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("invalid retention: {0}")]
    Retention(String),
    #[error("{file}:{line}: {msg}")]
    Syntax {
        file: String,
        line: usize,
        msg: String,
    },
    #[error("{file}: section [{section}]: {msg}")]
    Section {
        file: String,
        section: String,
        msg: String,
    },
}

/// One `[section]` of an ini file as carbon's ConfigParser sees it: keys lowercased,
/// values trimmed, continuation lines joined.
#[derive(Debug, Clone)]
struct IniSection {
    name: String,
    line: usize,
    entries: Vec<(String, String)>,
}

impl IniSection {
    fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn parse_ini(file: &str, text: &str) -> Result<Vec<IniSection>, SchemaError> {
    let mut sections: Vec<IniSection> = Vec::new();
    let syntax = |line: usize, msg: String| SchemaError::Syntax {
        file: file.to_string(),
        line,
        msg,
    };
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if raw.starts_with([' ', '\t']) {
            // a continuation line belongs to the previous value
            let section = sections
                .last_mut()
                .ok_or_else(|| syntax(lineno, "continuation line before any section".into()))?;
            let entry = section
                .entries
                .last_mut()
                .ok_or_else(|| syntax(lineno, "continuation line before any key".into()))?;
            entry.1.push('\n');
            entry.1.push_str(trimmed);
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| {
                syntax(lineno, format!("unterminated section header {trimmed:?}"))
            })?;
            if sections.iter().any(|s| s.name == name) {
                return Err(syntax(lineno, format!("duplicate section [{name}]")));
            }
            sections.push(IniSection {
                name: name.to_string(),
                line: lineno,
                entries: Vec::new(),
            });
            continue;
        }
        let split = trimmed
            .find(['=', ':'])
            .ok_or_else(|| syntax(lineno, format!("expected key = value, got {trimmed:?}")))?;
        let key = trimmed[..split].trim().to_ascii_lowercase();
        let value = trimmed[split + 1..].trim().to_string();
        let section = sections
            .last_mut()
            .ok_or_else(|| syntax(lineno, "key before any [section]".into()))?;
        section.entries.retain(|(k, _)| *k != key);
        section.entries.push((key, value));
    }
    Ok(sections)
}

fn compile_pattern(file: &str, section: &IniSection, pattern: &str) -> Result<Regex, SchemaError> {
    Regex::new(pattern).map_err(|e| SchemaError::Section {
        file: file.to_string(),
        section: section.name.clone(),
        msg: format!("pattern {pattern:?} is not a valid regex: {e}"),
    })
}

/// Whether `name` matches `re`, without running the regex for the patterns that match
/// every name (`.*`, the usual last rule of both files): a new series is checked
/// against the rules in order, and at millions of new series the regex calls show.
fn rule_matches(re: &Regex, name: &str) -> bool {
    matches!(re.as_str(), "" | ".*" | "^.*" | "^") || re.is_match(name)
}

/// The rules of storage-schemas.conf.
#[derive(Debug, Clone)]
pub struct StorageSchemas {
    rules: Vec<(String, Regex, Arc<Retention>)>,
    fallback: Arc<Retention>,
}

impl StorageSchemas {
    /// sumi's default when no storage-schemas.conf is given: 10-second points for a
    /// day (sub-minute detail for incidents), minutes for 30 days (month-over-month
    /// comparisons), hours for 5 years (capacity planning).
    pub const BUILTIN: &'static str = "10s:1d,1m:30d,1h:5y";

    /// carbon's own fallback for a metric no section matches: 7 days of minutely data.
    pub const CARBON_FALLBACK: &'static str = "60:10080";

    pub fn builtin() -> StorageSchemas {
        StorageSchemas {
            rules: Vec::new(),
            fallback: Arc::new(
                Retention::parse(Self::BUILTIN).expect("builtin retention is valid"),
            ),
        }
    }

    /// Parses the text of a storage-schemas.conf. A section without `pattern` is skipped,
    /// as carbon skips it; a bad regex or retention is an error (carbon exits on the latter).
    pub fn parse(file: &str, text: &str) -> Result<StorageSchemas, SchemaError> {
        let mut rules = Vec::new();
        for section in parse_ini(file, text)? {
            let Some(pattern) = section.get("pattern") else {
                continue;
            };
            let Some(retentions) = section.get("retentions") else {
                continue;
            };
            let regex = compile_pattern(file, &section, pattern)?;
            let retention = Retention::parse(retentions).map_err(|e| SchemaError::Section {
                file: file.to_string(),
                section: section.name.clone(),
                msg: format!("{e} (line {})", section.line),
            })?;
            rules.push((section.name.clone(), regex, Arc::new(retention)));
        }
        Ok(StorageSchemas {
            rules,
            fallback: Arc::new(
                Retention::parse(Self::CARBON_FALLBACK).expect("carbon fallback is valid"),
            ),
        })
    }

    /// The retention of a new series: the first section whose pattern matches anywhere
    /// in the name.
    pub fn retention_for(&self, name: &str) -> &Arc<Retention> {
        self.rules
            .iter()
            .find(|(_, re, _)| rule_matches(re, name))
            .map(|(_, _, r)| r)
            .unwrap_or(&self.fallback)
    }

    /// Every distinct retention these rules can hand out, fallback included.
    pub fn retentions(&self) -> Vec<Arc<Retention>> {
        let mut out: Vec<Arc<Retention>> = Vec::new();
        for r in self.rules.iter().map(|(_, _, r)| r).chain([&self.fallback]) {
            if !out.iter().any(|o| o == r) {
                out.push(r.clone());
            }
        }
        out
    }
}

/// Decides `(method, xff)` of some new series by something other than their name's
/// pattern; `None` leaves a series to the rules. The GrowthForecast API uses it: a
/// graph posted every few minutes has one point in several finest slots, and the
/// default xFilesFactor of 0.5 would make every rollup of it unknown.
pub type AggregationOverride = Arc<dyn Fn(&str) -> Option<(AggMethod, f32)> + Send + Sync>;

/// The rules of storage-aggregation.conf.
#[derive(Clone)]
pub struct StorageAggregation {
    rules: Vec<(String, Regex, Option<f32>, Option<AggMethod>)>,
    overrides: Option<AggregationOverride>,
}

impl fmt::Debug for StorageAggregation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageAggregation")
            .field("rules", &self.rules)
            .field("overrides", &self.overrides.is_some())
            .finish()
    }
}

impl StorageAggregation {
    /// whisper's defaults for a series no rule (or no key of the matching rule) covers.
    pub const DEFAULT_XFF: f32 = 0.5;
    pub const DEFAULT_METHOD: AggMethod = AggMethod::Average;

    /// sumi's default when no storage-aggregation.conf is given: the rules of carbon's
    /// example file, corrected so that `.count` sums (the example says `max`, which
    /// its section name and every user expect to be `sum`).
    pub const BUILTIN: &'static str = "\
[min]\npattern = \\.min$\nxFilesFactor = 0.1\naggregationMethod = min\n\
[max]\npattern = \\.max$\nxFilesFactor = 0.1\naggregationMethod = max\n\
[sum]\npattern = \\.(count|sum)$\nxFilesFactor = 0\naggregationMethod = sum\n\
[default_average]\npattern = .*\nxFilesFactor = 0.5\naggregationMethod = average\n";

    pub fn builtin() -> StorageAggregation {
        Self::parse("<builtin storage-aggregation>", Self::BUILTIN)
            .expect("builtin rules are valid")
    }

    /// Parses the text of a storage-aggregation.conf. As in carbon, a section may set
    /// only one of the two keys; the other falls back to whisper's default.
    pub fn parse(file: &str, text: &str) -> Result<StorageAggregation, SchemaError> {
        let mut rules = Vec::new();
        for section in parse_ini(file, text)? {
            let Some(pattern) = section.get("pattern") else {
                continue;
            };
            let err = |msg: String| SchemaError::Section {
                file: file.to_string(),
                section: section.name.clone(),
                msg,
            };
            let xff = match section.get("xfilesfactor") {
                None => None,
                Some(v) => {
                    let x: f32 = v
                        .parse()
                        .map_err(|_| err(format!("xFilesFactor {v:?} is not a number")))?;
                    if !(0.0..=1.0).contains(&x) {
                        return Err(err(format!("xFilesFactor {v} is outside [0, 1]")));
                    }
                    Some(x)
                }
            };
            let method = match section.get("aggregationmethod") {
                None => None,
                Some(v) => Some(v.parse::<AggMethod>().map_err(|e| err(e.to_string()))?),
            };
            let regex = compile_pattern(file, &section, pattern)?;
            rules.push((section.name.clone(), regex, xff, method));
        }
        Ok(StorageAggregation {
            rules,
            overrides: None,
        })
    }

    /// The same rules, with `hook` consulted first for every new series.
    pub fn with_override(mut self, hook: AggregationOverride) -> StorageAggregation {
        self.overrides = Some(hook);
        self
    }

    /// `(method, xff)` of a new series.
    pub fn rule_for(&self, name: &str) -> (AggMethod, f32) {
        if let Some(rule) = self.overrides.as_ref().and_then(|hook| hook(name)) {
            return rule;
        }
        match self
            .rules
            .iter()
            .find(|(_, re, _, _)| rule_matches(re, name))
        {
            Some((_, _, xff, method)) => (
                method.unwrap_or(Self::DEFAULT_METHOD),
                xff.unwrap_or(Self::DEFAULT_XFF),
            ),
            None => (Self::DEFAULT_METHOD, Self::DEFAULT_XFF),
        }
    }
}

/// Both rule sets together: what a new series gets.
#[derive(Debug, Clone)]
pub struct SeriesRules {
    pub schemas: StorageSchemas,
    pub aggregation: StorageAggregation,
}

impl SeriesRules {
    pub fn builtin() -> SeriesRules {
        SeriesRules {
            schemas: StorageSchemas::builtin(),
            aggregation: StorageAggregation::builtin(),
        }
    }

    pub fn config_for(&self, name: &str) -> SeriesConfig {
        let (method, xff) = self.aggregation.rule_for(name);
        SeriesConfig {
            retention: self.schemas.retention_for(name).clone(),
            method,
            xff,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(step: u32, points: u32) -> Archive {
        Archive {
            step_secs: step,
            points,
        }
    }

    #[test]
    fn retention_units_as_whisper() {
        let r = Retention::parse("10s:6h,1m:7d,10m:5y").unwrap();
        assert_eq!(
            r.archives(),
            &[arch(10, 2160), arch(60, 10080), arch(600, 262800)]
        );
        let r = Retention::parse("60:1440").unwrap();
        assert_eq!(r.archives(), &[arch(60, 1440)]);
        // a bare "m" is minutes here (unlike render's from/until), "min" too
        let r = Retention::parse("1min:1w").unwrap();
        assert_eq!(r.archives(), &[arch(60, 10080)]);
        // sorted by precision, whatever the written order
        let r = Retention::parse("1h:1y,10s:1d").unwrap();
        assert_eq!(r.archives()[0], arch(10, 8640));
    }

    #[test]
    fn match_all_patterns_match_every_name() {
        for p in ["", ".*", "^.*", "^"] {
            let re = Regex::new(p).unwrap();
            for name in ["", "a", "a.b.c", "x;k=v", "caf\u{e9}\n"] {
                assert!(re.is_match(name), "{p:?} {name:?}");
                assert!(rule_matches(&re, name));
            }
        }
        let re = Regex::new("^carbon\\.").unwrap();
        assert!(rule_matches(&re, "carbon.agents.x"));
        assert!(!rule_matches(&re, "bench.carbon.x"));
    }

    #[test]
    fn retention_errors() {
        for bad in [
            "",
            "10s",
            "10x:1d",
            "10S:1d",
            "0:10",
            "10s:1d,10s:2d",
            "7s:1d,10s:2d",
            "10s:1d,1m:1h",
            "10s:3,1m:1d",
            "10s:1mo",
        ] {
            assert!(Retention::parse(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn schemas_first_search_match_wins() {
        let conf = "\
# comment
[carbon]
pattern = ^carbon\\.
retentions = 60:90d

[web]
PATTERN = web
retentions = 10s:1d, 1m:7d

[default]
pattern = .*
retentions = 60s:1d,5m:30d,1h:3y
";
        let s = StorageSchemas::parse("s.conf", conf).unwrap();
        assert_eq!(
            s.retention_for("carbon.agents.a.x").archives(),
            &[arch(60, 129600)]
        );
        // search, not match: "web" anywhere
        assert_eq!(
            s.retention_for("servers.web01.cpu").archives()[0],
            arch(10, 8640)
        );
        assert_eq!(s.retention_for("other").archives()[0], arch(60, 1440));
        assert_eq!(s.retentions().len(), 4);
    }

    #[test]
    fn schemas_fallback_is_carbons() {
        let s =
            StorageSchemas::parse("s.conf", "[only]\npattern = ^x\nretentions = 1s:1h\n").unwrap();
        assert_eq!(s.retention_for("y").archives(), &[arch(60, 10080)]);
    }

    #[test]
    fn schema_errors_name_the_place() {
        let e =
            StorageSchemas::parse("s.conf", "[a]\npattern = (\nretentions = 1s:1h\n").unwrap_err();
        assert!(e.to_string().contains("s.conf: section [a]"), "{e}");
        let e =
            StorageSchemas::parse("s.conf", "[a]\npattern = x\nretentions = 1q:1h\n").unwrap_err();
        assert!(e.to_string().contains("[a]"), "{e}");
        let e = StorageSchemas::parse("s.conf", "pattern = x\n").unwrap_err();
        assert!(e.to_string().starts_with("s.conf:1:"), "{e}");
    }

    #[test]
    fn aggregation_rules() {
        let a = StorageAggregation::builtin();
        assert_eq!(a.rule_for("a.b.min"), (AggMethod::Min, 0.1));
        assert_eq!(a.rule_for("a.requests.count"), (AggMethod::Sum, 0.0));
        assert_eq!(a.rule_for("a.cpu"), (AggMethod::Average, 0.5));
        let a =
            StorageAggregation::parse("a.conf", "[x]\npattern = ^x\naggregationMethod = last\n")
                .unwrap();
        assert_eq!(a.rule_for("x.y"), (AggMethod::Last, 0.5));
        assert_eq!(a.rule_for("y"), (AggMethod::Average, 0.5));
        assert!(
            StorageAggregation::parse("a.conf", "[x]\npattern = x\nxFilesFactor = 2\n").is_err()
        );
        assert!(StorageAggregation::parse(
            "a.conf",
            "[x]\npattern = x\naggregationMethod = mean\n"
        )
        .is_err());
    }

    #[test]
    fn override_comes_before_the_patterns() {
        let agg = StorageAggregation::builtin().with_override(Arc::new(|name: &str| {
            (name == "gf.section.count").then_some((AggMethod::Average, 0.0))
        }));
        assert_eq!(agg.rule_for("gf.section.count"), (AggMethod::Average, 0.0));
        assert_eq!(agg.rule_for("other.count"), (AggMethod::Sum, 0.0));
        assert_eq!(agg.rule_for("other.gauge"), (AggMethod::Average, 0.5));
    }
}
