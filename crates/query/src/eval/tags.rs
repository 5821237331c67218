//! `seriesByTag('tag=value', ...)`: graphite-web resolves the call through its tag
//! database (`Store._tag_patterns`) and fetches the matching tagged series, which
//! carry the call's text as their `pathExpression` (so `aliasByTags`, `groupByTags`
//! and legends see what graphite-web shows).

use crate::error::QueryError;
use crate::grammar::{Arg, Call, Literal};
use crate::series::FetchedSet;

use super::{RequestContext, Session, Value};

impl Session<'_> {
    /// The series of a `seriesByTag(...)` call, sorted by name.
    pub(super) fn series_by_tag(
        &mut self,
        ctx: &RequestContext,
        call: &Call,
    ) -> Result<Value, QueryError> {
        // graphite-web passes on the string arguments only (`t.string[1:-1]`)
        let exprs: Vec<String> = call
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Literal(Literal::Str(s)) => Some(s.clone()),
                _ => None,
            })
            .collect();
        let names = self.source.find_tagged(&exprs)?;
        let pattern = call.raw.as_str();
        let mut set = FetchedSet::new(names);
        if !set.is_empty() {
            set.fill(|paths, each| {
                self.source
                    .fetch_each(paths, ctx.from, ctx.until, ctx.now, each)
            })?;
        }
        let xff = self.x_files_factor(ctx);
        let series = (0..set.len())
            .filter_map(|i| set.series(i, pattern, xff, true))
            .collect();
        Ok(Value::SeriesList(series))
    }
}

#[cfg(test)]
mod tests {
    use chrono_tz::Tz;
    use sumi_model::glob::PathPattern;

    use crate::attime::TimeRange;
    use crate::eval::{Evaluator, RequestContext};
    use crate::functions::Registry;
    use crate::memory::MemorySource;
    use crate::source::{FetchedSeries, FindNode, SeriesSource, SourceError};

    const NOW: i64 = 1_700_000_040;

    /// Tagged series in memory; `find_tagged` answers `name=<metric>` only, and
    /// records what it was asked.
    struct Tagged {
        inner: MemorySource,
        asked: std::sync::Mutex<Vec<Vec<String>>>,
    }

    impl SeriesSource for Tagged {
        fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
            self.inner.find(pattern)
        }

        fn fetch(
            &self,
            paths: &[String],
            from: i64,
            until: i64,
            now: i64,
        ) -> Result<Vec<FetchedSeries>, SourceError> {
            self.inner.fetch(paths, from, until, now)
        }

        fn find_tagged(&self, exprs: &[String]) -> Result<Vec<String>, SourceError> {
            if let Ok(mut a) = self.asked.lock() {
                a.push(exprs.to_vec());
            }
            let Some(metric) = exprs.first().and_then(|e| e.strip_prefix("name=")) else {
                return Err(SourceError::Invalid(format!("cannot answer {exprs:?}")));
            };
            let mut names = vec![format!("{metric};host=b"), format!("{metric};host=a")];
            names.sort();
            Ok(names)
        }
    }

    fn source() -> Tagged {
        let mut m = MemorySource::new();
        let start = NOW - 600;
        for (path, v) in [("cpu;host=a", 1.0), ("cpu;host=b", 2.0)] {
            m.add(path, 60, 86_400, start, &[Some(v); 10]);
        }
        Tagged {
            inner: m,
            asked: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn ctx() -> RequestContext {
        let range = TimeRange {
            from: NOW - 600,
            until: NOW,
            now: NOW,
        };
        RequestContext::new(range, Tz::UTC)
    }

    #[test]
    fn series_carry_the_call_as_path_expression() {
        let src = source();
        let reg = Registry::standard();
        let target = "seriesByTag('name=cpu', \"host!=c\", 5)";
        let got = Evaluator::new(&src, &reg)
            .evaluate_targets(&ctx(), &[target])
            .unwrap();
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cpu;host=a", "cpu;host=b"]);
        assert!(got.iter().all(|s| s.path_expression == target));
        // only the string arguments are expressions, as graphite-web reads them
        let asked = src.asked.lock().unwrap().clone();
        assert_eq!(
            asked,
            vec![vec!["name=cpu".to_string(), "host!=c".to_string()]]
        );
        // a function over it sees the tags
        let got = Evaluator::new(&src, &reg)
            .evaluate_targets(&ctx(), &["aliasByTags(seriesByTag('name=cpu'),'host')"])
            .unwrap();
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_refused_expression_is_the_client_s_fault() {
        let src = source();
        let reg = Registry::standard();
        let err = Evaluator::new(&src, &reg)
            .evaluate_targets(&ctx(), &["seriesByTag('host=a')"])
            .unwrap_err();
        assert!(err.is_input_error(), "{err}");
    }
}
