//! Fuzz target for Graphite glob patterns (`sumi_model::glob`), which every
//! `/metrics/find` query and every path expression of a render target goes through.
//!
//! [`glob`] splits the input (lossy UTF-8) at its first `\n` into a pattern and a path,
//! compiles the pattern and matches the path. Accepted outcomes, anything else panics:
//! - compiling and matching never panic, whatever the brackets, braces and backslashes;
//! - a pattern without `**` matches only paths of as many nodes as it has;
//! - a path is matched by itself used as a pattern when it holds none of `*?[{}\`, by
//!   `*` in each of its nodes, and by `**`;
//! - `expand_braces` gives sorted, distinct variants, a single one (the text itself)
//!   when there is no `{`.
//!
//! Brace expansion is exponential in the number of groups, as graphite-web's is: a
//! pattern that could expand to more than [`MAX_VARIANTS`] variants is skipped, so
//! that one input cannot take seconds. (The server itself has no such bound yet: see
//! the README.)

use sumi_model::glob::{expand_braces, PathPattern};

/// Largest brace expansion fuzzed (an upper bound: alternatives ^ groups).
pub const MAX_VARIANTS: u64 = 4096;

/// One pattern and one path.
pub fn glob(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (pattern, path) = text.split_once('\n').unwrap_or((&text, "a.b"));
    let groups = pattern.matches('{').count() as u32;
    let alternatives = pattern.matches(',').count() as u64 + 1;
    if alternatives
        .checked_pow(groups)
        .is_none_or(|n| n > MAX_VARIANTS)
    {
        return;
    }

    let variants = expand_braces(pattern);
    assert!(
        variants.windows(2).all(|w| w[0] < w[1]),
        "variants of {pattern:?} not sorted and distinct: {variants:?}"
    );
    if !pattern.contains('{') {
        assert_eq!(variants, [pattern], "no braces, yet expanded");
    }

    let p = PathPattern::parse(pattern);
    assert_eq!(p.as_str(), pattern);
    let matched = p.matches_path(path);
    let globstar = p.nodes().iter().any(|n| n.is_globstar());
    if matched && !globstar {
        assert_eq!(
            p.nodes().len(),
            path.split('.').count(),
            "{pattern:?} matched {path:?} with another number of nodes"
        );
    }

    if !path.contains(['*', '?', '[', '{', '}', '\\']) {
        assert!(
            PathPattern::parse(path).matches_path(path),
            "{path:?} does not match itself"
        );
    }
    let stars = vec!["*"; path.split('.').count()].join(".");
    assert!(
        PathPattern::parse(&stars).matches_path(path),
        "{stars:?} does not match {path:?}"
    );
    assert!(
        PathPattern::parse("**").matches_path(path),
        "** does not match {path:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_edge_cases_pass() {
        for input in [
            &b"servers.web*.cpu.{user,system}\nservers.web01.cpu.user"[..],
            b"a.[!b-d]?.c\na.ex.c",
            b"a.[\na.[",
            b"\\*.x\nab.x",
            b"**.load\nh.cpu.load",
            b"{a,{b,c}}d{\nbd{",
            b"",
            b"\n",
            b"x\n\xff.\xfe",
        ] {
            glob(input);
        }
    }

    #[test]
    fn brace_bombs_are_skipped_not_expanded() {
        // 2^40 variants if expanded: must return at once
        let bomb = "{a,b}".repeat(40);
        let start = std::time::Instant::now();
        glob(format!("{bomb}\nab").as_bytes());
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }
}
