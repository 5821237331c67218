//! A request's targets into an [`Answer`]: the series of every target, in order, with
//! the targets that are plain path expressions kept compact.
//!
//! Most of the volume of a big render is plain paths (`host.*.cpu.*`): nothing is
//! computed on them, so their series are fetched into a [`FetchedSet`] and become
//! `TimeSeries` only as the renderer reads them. Targets with functions are evaluated
//! as before, their paths prefetched in one batch. So a request makes at most two
//! source calls up front: one for the plain targets and one for the paths inside
//! functions (graphite-web makes one; the answers are the same).
//!
//! [`FetchedSet`]: crate::series::FetchedSet

use crate::error::QueryError;
use crate::grammar::{self, Expr};
use crate::series::Answer;

use super::{substitute, Evaluator, Replacements, RequestContext, Session, Substituted, Value};

impl Evaluator<'_> {
    /// Every target's series, in order, as an [`Answer`] (plain paths built lazily).
    /// Blank targets are skipped.
    pub fn evaluate<S: AsRef<str>>(
        &self,
        ctx: &RequestContext,
        targets: &[S],
    ) -> Result<Answer, QueryError> {
        let mut parsed = Vec::with_capacity(targets.len());
        for target in targets {
            let text = target.as_ref();
            if crate::py::strip(text).is_empty() {
                continue;
            }
            let expr = if ctx.strict {
                grammar::parse_strict(text)?
            } else {
                grammar::parse(text)?.expr
            };
            let plain = plain_pattern(&expr, ctx);
            parsed.push((text, expr, plain));
        }
        let mut session = Session::new(self.source, self.functions);
        session.prefetch(
            ctx,
            parsed
                .iter()
                .filter(|(_, _, plain)| plain.is_none())
                .map(|(_, e, _)| e),
        )?;
        // each distinct plain pattern once
        let mut patterns: Vec<String> = Vec::new();
        let mut which: Vec<Option<usize>> = Vec::with_capacity(parsed.len());
        for (_, _, plain) in &parsed {
            which.push(plain.as_ref().map(|p| {
                patterns.iter().position(|q| q == p).unwrap_or_else(|| {
                    patterns.push(p.clone());
                    patterns.len() - 1
                })
            }));
        }
        let batch = if patterns.is_empty() {
            None
        } else {
            Some(session.fetch_batch(ctx, &patterns)?)
        };
        let (set, lists) = batch.map(|b| (b.set, b.lists)).unwrap_or_default();
        let mut answer = Answer::new(set);
        for ((text, expr, _), plain) in parsed.iter().zip(which) {
            if let Some(k) = plain {
                // built when read, with the xFilesFactor in force at this target
                let xff = session.x_files_factor(ctx);
                if let (Some(list), Some(pattern)) = (lists.get(k), patterns.get(k)) {
                    answer.push_fetched(list, pattern, xff);
                }
                continue;
            }
            match session.eval_expr(ctx, expr, None)? {
                Value::SeriesList(series) => answer.push_series(series),
                v if !v.is_truthy() => {}
                v => {
                    return Err(QueryError::NotSeries {
                        target: (*text).to_string(),
                        what: v.kind().to_string(),
                    })
                }
            }
        }
        Ok(answer)
    }
}

/// The pattern a target fetches when it is nothing but a path (possibly inside a
/// `template()`): such a target evaluates to the path's series, as they are.
fn plain_pattern(expr: &Expr, ctx: &RequestContext) -> Option<String> {
    let (path, own) = match expr {
        Expr::Path(path) => (path, None),
        Expr::Template(t) => match &*t.inner {
            Expr::Path(path) => (path, Some(Replacements::for_template(t, ctx))),
            _ => return None,
        },
        Expr::Call(_) => return None,
    };
    match substitute(path, own.as_ref()) {
        Ok(Substituted::Pattern(p)) => Some(p),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use chrono_tz::Tz;
    use sumi_model::glob::PathPattern;

    use super::*;
    use crate::attime::TimeRange;
    use crate::functions::Registry;
    use crate::memory::MemorySource;
    use crate::series::TimeSeries;
    use crate::source::{FetchedRef, FetchedSeries, FindNode, SeriesSource, SourceError};

    const NOW: i64 = 1_700_000_000;

    fn ctx() -> RequestContext {
        RequestContext::new(
            TimeRange {
                from: NOW - 600,
                until: NOW,
                now: NOW,
            },
            Tz::UTC,
        )
    }

    /// A memory source that counts bulk fetches.
    struct Counting {
        inner: MemorySource,
        calls: AtomicUsize,
    }

    impl SeriesSource for Counting {
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

        fn fetch_each(
            &self,
            paths: &[&str],
            from: i64,
            until: i64,
            now: i64,
            each: &mut dyn FnMut(usize, FetchedRef<'_>),
        ) -> Result<(), SourceError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.fetch_each(paths, from, until, now, each)
        }
    }

    fn source() -> Counting {
        let mut m = MemorySource::new();
        let start = NOW - 540;
        for (i, path) in [
            "servers.web01.cpu",
            "servers.web02.cpu",
            "servers.db01.cpu",
            "servers.web01.disk.read",
            "servers.web01.disk.write",
            "servers.web03.cpu",
        ]
        .into_iter()
        .enumerate()
        {
            let values: Vec<Option<f64>> = (0..10)
                .map(|k| (k != i).then_some((k * (i + 1)) as f64 * 0.5))
                .collect();
            m.add(path, 60, 86_400, start, &values);
        }
        // outside the range asked for: found, but no answer
        m.add("servers.old.cpu", 60, 60, NOW - 86_400, &[Some(1.0)]);
        Counting {
            inner: m,
            calls: AtomicUsize::new(0),
        }
    }

    /// What each target gives evaluated alone through `Session::eval_expr`, the path
    /// functions take.
    fn one_by_one(src: &Counting, reg: &Registry, targets: &[&str]) -> Vec<TimeSeries> {
        let mut out = Vec::new();
        let mut session = Session::new(src, reg);
        for t in targets.iter().filter(|t| !t.trim().is_empty()) {
            let expr = grammar::parse(t).unwrap().expr;
            if let Value::SeriesList(s) = session.eval_expr(&ctx(), &expr, None).unwrap() {
                out.extend(s);
            }
        }
        out
    }

    #[test]
    fn lazy_answers_equal_eager_evaluation() {
        let src = source();
        let reg = Registry::standard();
        let targets = [
            "servers.*.cpu",
            "alias(servers.web01.disk.*, 'x')",
            "template(servers.$h.cpu, h='db01')",
            "  ",
            "servers.web0{1,2}.cpu",
            "servers.nothing.*",
            "setXFilesFactor(servers.web03.cpu, 0.5)",
            "servers.*.cpu",
            "servers.web01.*.*",
        ];
        let answer = Evaluator::new(&src, &reg)
            .evaluate(&ctx(), &targets)
            .unwrap();
        // one bulk fetch for the plain targets, one for the paths inside functions
        assert_eq!(src.calls.load(Ordering::SeqCst), 2);
        let extents: Vec<(i64, i64, usize)> = answer.extents().collect();
        let got = answer.into_vec();
        let want = one_by_one(&src, &reg, &targets);
        assert_eq!(got, want);
        let want_extents: Vec<(i64, i64, usize)> = want
            .iter()
            .map(|s| (s.start, s.end, s.values.len()))
            .collect();
        assert_eq!(extents, want_extents);
        // the setXFilesFactor() before the second servers.*.cpu holds for it
        let xffs: Vec<f64> = got
            .iter()
            .filter(|s| s.path_expression == "servers.*.cpu")
            .map(|s| s.x_files_factor)
            .collect();
        assert_eq!(xffs, [0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5]);
        assert_eq!(got.iter().filter(|s| s.name == "x").count(), 2);
        assert_eq!(got.len(), 5 + 2 + 1 + 2 + 1 + 5 + 2);
    }

    #[test]
    fn plain_targets_alone_make_one_fetch() {
        let src = source();
        let reg = Registry::empty();
        let got = Evaluator::new(&src, &reg)
            .evaluate_targets(
                &ctx(),
                &["servers.web*.cpu", "servers.db01.cpu", "servers.*.*"],
            )
            .unwrap();
        assert_eq!(src.calls.load(Ordering::SeqCst), 1);
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "servers.web01.cpu",
                "servers.web02.cpu",
                "servers.web03.cpu",
                "servers.db01.cpu",
                "servers.db01.cpu",
                "servers.old.cpu",
                "servers.web01.cpu",
                "servers.web02.cpu",
                "servers.web03.cpu",
            ]
        );
        // nothing to fetch: no call at all
        let src = source();
        let got = Evaluator::new(&src, &reg)
            .evaluate_targets(&ctx(), &["servers.none.*", ""])
            .unwrap();
        assert!(got.is_empty());
        assert_eq!(src.calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn plain_patterns() {
        let c = ctx();
        let p = |t: &str| plain_pattern(&grammar::parse(t).unwrap().expr, &c);
        assert_eq!(p("a.b.*"), Some("a.b.*".to_string()));
        assert_eq!(p("template(a.$x.c, x='b')"), Some("a.b.c".to_string()));
        assert_eq!(p("template(sum(a.$x), x='b')"), None);
        assert_eq!(p("sumSeries(a.*)"), None);
    }
}
