//! carbon's `relay-rules.conf`: sections of `pattern = REGEX`, `destinations =
//! host:port[:instance], ...`, `continue = BOOL`, and exactly one `default = true`
//! section, read as carbon 1.1.10 reads them (`carbon/relayrules.py`):
//!
//! - sections are tried in file order, the default rule last whatever its place;
//! - a pattern matches anywhere in the name (`re.search`), case-insensitively
//!   (`re.I`); the first matching rule's destinations are taken, and the walk goes
//!   on only when that rule says `continue = true`;
//! - `default = false` sections are ignored; a section with both `pattern` and
//!   `default`, without `destinations`, or a file without a default is refused.
//!
//! Patterns are compiled by Rust's `regex`, which has no backreferences or
//! look-around; a rule using them is refused at load with the section's name
//! (Python's `re` would accept it).

use regex::bytes::{Regex, RegexBuilder};

use crate::hashing::Destination;

/// One rule, in evaluation order.
#[derive(Clone, Debug)]
pub struct RelayRule {
    pub section: String,
    /// `None` for the default rule.
    pub pattern: Option<Regex>,
    pub destinations: Vec<Destination>,
    pub continue_matching: bool,
}

/// A parsed INI section: name and `(key, value)` pairs, keys lowercased.
pub type Section = (String, Vec<(String, String)>);

/// Python `configparser`'s reading of an INI file, as much as carbon's files use:
/// `[section]`, `key = value` or `key: value`, `#`/`;` comment lines, indented
/// continuation lines, keys case-insensitive.
pub fn parse_ini(text: &str) -> Result<Vec<Section>, String> {
    let mut out: Vec<Section> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if raw.starts_with([' ', '\t']) {
            if let Some((_, kv)) = out.last_mut() {
                if let Some((_, v)) = kv.last_mut() {
                    v.push('\n');
                    v.push_str(line);
                    continue;
                }
            }
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            out.push((name.to_string(), Vec::new()));
            continue;
        }
        let Some((_, kv)) = out.last_mut() else {
            return Err(format!("line {}: {line:?} is outside any [section]", n + 1));
        };
        let split = line
            .find(['=', ':'])
            .ok_or_else(|| format!("line {}: {line:?} is not `key = value`", n + 1))?;
        let key = line[..split].trim().to_lowercase();
        let value = line[split + 1..].trim().to_string();
        match kv.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => kv.push((key, value)),
        }
    }
    Ok(out)
}

/// `configparser.getboolean`.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// Reads `relay-rules.conf` text into rules in evaluation order.
pub fn parse_relay_rules(text: &str) -> Result<Vec<RelayRule>, String> {
    let mut rules = Vec::new();
    let mut default: Option<RelayRule> = None;
    for (section, kv) in parse_ini(text)? {
        let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let Some(dests) = get("destinations") else {
            return Err(format!(
                "section [{section}] does not define a 'destinations' list"
            ));
        };
        let destinations = dests
            .split(',')
            .map(Destination::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("section [{section}]: {e}"))?;
        let boolean = |k: &str| -> Result<Option<bool>, String> {
            get(k)
                .map(|v| {
                    parse_bool(v)
                        .ok_or_else(|| format!("section [{section}]: {k} = {v:?} is not a boolean"))
                })
                .transpose()
        };
        if let Some(p) = get("pattern") {
            if get("default").is_some() {
                return Err(format!(
                    "section [{section}] contains both 'pattern' and 'default'"
                ));
            }
            let pattern = RegexBuilder::new(p)
                .case_insensitive(true)
                .build()
                .map_err(|e| format!("section [{section}]: pattern {p:?}: {e}"))?;
            rules.push(RelayRule {
                section: section.clone(),
                pattern: Some(pattern),
                destinations,
                continue_matching: boolean("continue")?.unwrap_or(false),
            });
            continue;
        }
        if boolean("default")? == Some(true) {
            if default.is_some() {
                return Err("only one default rule can be specified".into());
            }
            default = Some(RelayRule {
                section,
                pattern: None,
                destinations,
                continue_matching: false,
            });
        }
    }
    let Some(d) = default else {
        return Err(
            "no default rule: one section must say `default = true` instead of a pattern".into(),
        );
    };
    rules.push(d);
    Ok(rules)
}

/// The destinations (as indices into `known`) of `metric` under `rules`, in rule
/// order, each destination once per rule as carbon yields them; destinations a rule
/// names that are not in `known` are skipped, as carbon skips them.
pub fn route(rules: &[RelayRule], known: &[Destination], metric: &[u8], out: &mut Vec<usize>) {
    out.clear();
    for rule in rules {
        let hit = rule.pattern.as_ref().is_none_or(|p| p.is_match(metric));
        if !hit {
            continue;
        }
        for d in &rule.destinations {
            if let Some(i) = known.iter().position(|k| k == d) {
                out.push(i);
            }
        }
        if !rule.continue_matching {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "
# comment
[default]
default = true
destinations = 127.0.0.1:2004:a

[web]
pattern = ^servers\\.web
destinations = 127.0.0.1:2104:b, 127.0.0.1:2004:a
continue = true

[cpu]
pattern = CPU
destinations = 127.0.0.1:2204:c

[off]
default = false
destinations = 127.0.0.1:1:z
";

    #[test]
    fn rules_route_as_carbon_routes() {
        let rules = parse_relay_rules(RULES).unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[2].section, "default");
        let known: Vec<Destination> = ["127.0.0.1:2004:a", "127.0.0.1:2104:b", "127.0.0.1:2204:c"]
            .iter()
            .map(|s| Destination::parse(s).unwrap())
            .collect();
        let mut out = Vec::new();
        route(&rules, &known, b"servers.web1.cpu", &mut out);
        assert_eq!(out, vec![1, 0, 2]);
        route(&rules, &known, b"servers.db1.load", &mut out);
        assert_eq!(out, vec![0]);
        route(&rules, &known, b"x.Cpu.y", &mut out);
        assert_eq!(out, vec![2]);
    }

    #[test]
    fn bad_rules_are_refused_with_their_section() {
        assert!(parse_relay_rules("[a]\npattern = x\ndestinations = h:1\n")
            .unwrap_err()
            .contains("no default"));
        assert!(parse_relay_rules("[a]\npattern = x\n")
            .unwrap_err()
            .contains("[a]"));
        assert!(parse_relay_rules("[a]\npattern = (\ndestinations = h:1\n")
            .unwrap_err()
            .contains("[a]"));
    }
}
