//! Graphite's glob patterns, matched one path node at a time as graphite-web 1.1's
//! standard finder matches directory entries.
//!
//! graphite-web removes every backslash from the query, splits it on `.`, expands
//! `{a,b}` alternatives inside each node (innermost first), and matches each variant
//! with Python's `fnmatch`: `*` any run of characters, `?` one character, `[abc]`,
//! `[a-z]`, `[!a-z]` one character of (or not of) a set, an unterminated `[` a literal.
//! Wildcards never cross a `.` because matching is per node. A node that is exactly
//! `**` matches any number of nodes.

/// The pattern of one path node, brace alternatives expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePattern {
    variants: Vec<Variant>,
    globstar: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Variant {
    Literal(String),
    Glob(Vec<Token>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    Any,
    Star,
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

/// True if a node pattern (after brace expansion) needs matching rather than lookup.
pub fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The most alternatives one path node may expand to. Every `{a,b}` group multiplies
/// them: 22 groups of two in one node (about 180 bytes of query) made 4 M variants and
/// took seconds and hundreds of MB before this limit. A Grafana multi-value variable is
/// one group, so thousands of hosts in one node stay well inside it.
pub const MAX_BRACE_VARIANTS: u64 = 50_000;

/// A pattern refused before any work is done for it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Brace alternatives that would expand one node past [`MAX_BRACE_VARIANTS`].
    #[error(
        "path node {node:?} expands to {variants} alternatives with its {{...}} groups, \
         more than the {MAX_BRACE_VARIANTS} allowed; use fewer alternatives or a wildcard"
    )]
    TooManyAlternatives { node: String, variants: u64 },
}

/// An upper bound of the alternatives [`expand_braces`] makes of `node` (before
/// duplicates are removed): the product of each brace group's alternatives.
pub fn brace_variants(node: &str) -> u64 {
    let mut open: Vec<u64> = Vec::new();
    let mut total: u64 = 1;
    for b in node.bytes() {
        match b {
            b'{' => open.push(1),
            b',' => {
                if let Some(top) = open.last_mut() {
                    *top = top.saturating_add(1);
                }
            }
            b'}' => {
                if let Some(n) = open.pop() {
                    total = total.saturating_mul(n);
                }
            }
            _ => {}
        }
    }
    total
}

/// Expands `{a,b}` alternatives as graphite-web 1.1.10's `expand_braces` does: the
/// leftmost brace group that contains no other brace is expanded first, recursively;
/// duplicates are removed. Unbalanced braces stay literal. At most
/// [`MAX_BRACE_VARIANTS`] alternatives are made ([`PathPattern::check`] refuses a
/// pattern that needs more before it gets here).
pub fn expand_braces(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(s, &mut out);
    out.sort();
    out.dedup();
    out
}

fn expand_into(s: &str, out: &mut Vec<String>) {
    if out.len() as u64 >= MAX_BRACE_VARIANTS {
        return;
    }
    // leftmost "{" whose group up to the next "}" holds no "{" or "}"
    let bytes = s.as_bytes();
    let mut found = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'{' && bytes[j] != b'}' {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b'}' {
                found = Some((i, j));
                break;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    match found {
        None => out.push(s.to_string()),
        Some((open, close)) => {
            for alt in s[open + 1..close].split(',') {
                let mut next = String::with_capacity(s.len());
                next.push_str(&s[..open]);
                next.push_str(alt);
                next.push_str(&s[close + 1..]);
                expand_into(&next, out);
            }
        }
    }
}

impl NodePattern {
    /// Compiles one node of a pattern (no `.` inside; backslashes already removed).
    pub fn parse(node: &str) -> NodePattern {
        let expanded = expand_braces(node);
        let globstar = expanded.len() == 1 && expanded[0] == "**";
        let variants = expanded
            .into_iter()
            .map(|v| {
                if has_wildcard(&v) {
                    Variant::Glob(compile_fnmatch(&v))
                } else {
                    Variant::Literal(v)
                }
            })
            .collect();
        NodePattern { variants, globstar }
    }

    pub fn matches(&self, name: &str) -> bool {
        self.variants.iter().any(|v| match v {
            Variant::Literal(l) => l == name,
            Variant::Glob(tokens) => {
                let chars: Vec<char> = name.chars().collect();
                glob_match(tokens, &chars)
            }
        })
    }

    /// When every variant is a plain name, the names: a finder can look them up
    /// instead of scanning its children.
    pub fn literals(&self) -> Option<Vec<&str>> {
        self.variants
            .iter()
            .map(|v| match v {
                Variant::Literal(l) => Some(l.as_str()),
                Variant::Glob(_) => None,
            })
            .collect()
    }

    /// The node is exactly `**`.
    pub fn is_globstar(&self) -> bool {
        self.globstar
    }
}

/// A whole query pattern: `servers.web*.cpu.{user,system}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPattern {
    nodes: Vec<NodePattern>,
    source: String,
}

impl PathPattern {
    /// Removes backslashes and splits on `.`, as graphite-web's standard finder does.
    pub fn parse(pattern: &str) -> PathPattern {
        let clean: String = pattern.chars().filter(|&c| c != '\\').collect();
        PathPattern {
            nodes: clean.split('.').map(NodePattern::parse).collect(),
            source: pattern.to_string(),
        }
    }

    /// Refuses a pattern that would cost too much to expand (see
    /// [`MAX_BRACE_VARIANTS`]); callers taking patterns from requests check first.
    pub fn check(pattern: &str) -> Result<(), PatternError> {
        for node in pattern.split('.') {
            let variants = brace_variants(node);
            if variants > MAX_BRACE_VARIANTS {
                return Err(PatternError::TooManyAlternatives {
                    node: node.chars().take(80).collect(),
                    variants,
                });
            }
        }
        Ok(())
    }

    pub fn nodes(&self) -> &[NodePattern] {
        &self.nodes
    }

    /// The pattern as it was written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True if the pattern has no wildcard or alternative at all.
    pub fn is_exact(&self) -> bool {
        self.nodes
            .iter()
            .all(|n| matches!(n.literals().as_deref(), Some([_])))
    }

    /// Whether a full metric path matches (a `**` node matches zero or more nodes).
    pub fn matches_path(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('.').collect();
        match_nodes(&self.nodes, &parts)
    }
}

fn match_nodes(pats: &[NodePattern], parts: &[&str]) -> bool {
    match pats.split_first() {
        None => parts.is_empty(),
        Some((p, rest)) if p.is_globstar() => {
            (0..=parts.len()).any(|skip| match_nodes(rest, &parts[skip..]))
        }
        Some((p, rest)) => match parts.split_first() {
            Some((first, tail)) => p.matches(first) && match_nodes(rest, tail),
            None => false,
        },
    }
}

/// Python's fnmatch.translate, as tokens.
fn compile_fnmatch(pat: &str) -> Vec<Token> {
    let chars: Vec<char> = pat.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                if tokens.last() != Some(&Token::Star) {
                    tokens.push(Token::Star);
                }
            }
            '?' => tokens.push(Token::Any),
            '[' => {
                let mut j = i;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    tokens.push(Token::Char('['));
                    continue;
                }
                let stuff = &chars[i..j];
                i = j + 1;
                tokens.push(compile_set(stuff));
            }
            other => tokens.push(Token::Char(other)),
        }
    }
    tokens
}

fn compile_set(stuff: &[char]) -> Token {
    let (negated, body) = match stuff.split_first() {
        Some(('!', rest)) => (true, rest),
        _ => (false, stuff),
    };
    let mut items = Vec::new();
    let mut k = 0;
    while k < body.len() {
        let lo = body[k];
        if k + 2 < body.len() && body[k + 1] == '-' {
            let hi = body[k + 2];
            // Python drops empty ranges such as z-a
            if lo <= hi {
                items.push((lo, hi));
            }
            k += 3;
        } else {
            items.push((lo, lo));
            k += 1;
        }
    }
    if items.is_empty() && !negated {
        // an empty set never matches; Python writes (?!)
        return Token::Set {
            negated: false,
            items,
        };
    }
    Token::Set { negated, items }
}

fn token_matches_char(t: &Token, c: char) -> bool {
    match t {
        Token::Char(x) => *x == c,
        Token::Any => true,
        Token::Star => true,
        Token::Set { negated, items } => {
            let inside = items.iter().any(|&(lo, hi)| lo <= c && c <= hi);
            inside != *negated
        }
    }
}

/// Iterative wildcard matching with single-star backtracking: linear in practice.
fn glob_match(tokens: &[Token], s: &[char]) -> bool {
    let (mut t, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if t < tokens.len() && tokens[t] == Token::Star {
            star = Some((t, i));
            t += 1;
        } else if t < tokens.len() && token_matches_char(&tokens[t], s[i]) {
            t += 1;
            i += 1;
        } else if let Some((st, si)) = star {
            t = st + 1;
            i = si + 1;
            star = Some((st, si + 1));
        } else {
            return false;
        }
    }
    while t < tokens.len() && tokens[t] == Token::Star {
        t += 1;
    }
    t == tokens.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pat: &str, name: &str) -> bool {
        NodePattern::parse(pat).matches(name)
    }

    #[test]
    fn fnmatch_basics() {
        assert!(m("*", "web01"));
        assert!(m("*", ""));
        assert!(m("web*", "web01"));
        assert!(!m("web*", "db01"));
        assert!(m("w?b0[0-9]", "web01"));
        assert!(!m("w?b0[0-9]", "web0a"));
        assert!(m("web0[!0-4]", "web07"));
        assert!(!m("web0[!0-4]", "web03"));
        assert!(m("*01", "web01"));
        assert!(m("*e*1", "web01"));
        assert!(!m("*e*2", "web01"));
    }

    #[test]
    fn fnmatch_sets_like_python() {
        // "]" first in a set is literal; an unterminated "[" is literal
        assert!(m("[]a]", "]"));
        assert!(m("a[", "a["));
        assert!(!m("a[", "ab"));
        // empty range removed: [z-a] never matches, [az-ab] is {a, b}
        assert!(!m("[z-a]", "a"));
        assert!(m("[az-ab]", "b"));
        assert!(!m("[az-ab]", "z"));
        // "-" at either end is literal
        assert!(m("[-a]", "-"));
        assert!(m("[a-]", "-"));
        // [!] is "not an empty set": Python needs a "]" after it, so "[!]" is literal-ish
        assert!(m("[!]x]", "y"));
    }

    #[test]
    fn braces_expand_innermost_first() {
        assert_eq!(expand_braces("{a,b}c"), vec!["ac", "bc"]);
        assert_eq!(expand_braces("{a,{b,c}}"), vec!["a", "b", "c"]);
        assert_eq!(
            expand_braces("x{a,b}{1,2}"),
            vec!["xa1", "xa2", "xb1", "xb2"]
        );
        assert_eq!(expand_braces("{a"), vec!["{a"]);
        assert_eq!(expand_braces("{}"), vec![""]);
        assert!(m("{web,db}0[1-2]", "db02"));
        assert!(!m("{web,db}0[1-2]", "app01"));
    }

    #[test]
    fn literals_allow_lookup() {
        assert_eq!(NodePattern::parse("{a,b}").literals(), Some(vec!["a", "b"]));
        assert_eq!(NodePattern::parse("cpu").literals(), Some(vec!["cpu"]));
        assert_eq!(NodePattern::parse("c*").literals(), None);
    }

    #[test]
    fn brace_bombs_are_refused_and_bounded() {
        assert_eq!(brace_variants("{a,b}{c,d,e}"), 6);
        assert_eq!(brace_variants("{a,{b,c}}"), 4);
        assert_eq!(brace_variants("plain"), 1);
        assert_eq!(expand_braces("{a,{b,c}}"), ["a", "b", "c"]);
        let bomb = "{a,b}".repeat(22);
        assert_eq!(brace_variants(&bomb), 1 << 22);
        let err = PathPattern::check(&format!("x.{bomb}.y")).unwrap_err();
        assert!(err.to_string().contains("4194304 alternatives"), "{err}");
        assert!(PathPattern::check("x.{a,b}{c,d}.*").is_ok());
        // even unchecked, expansion stops at the bound instead of exhausting memory
        assert!(expand_braces(&bomb).len() as u64 <= MAX_BRACE_VARIANTS);
    }

    #[test]
    fn path_patterns() {
        let p = PathPattern::parse("servers.*.cpu.{user,system}");
        assert!(p.matches_path("servers.web01.cpu.user"));
        assert!(!p.matches_path("servers.web01.cpu.idle"));
        assert!(!p.matches_path("servers.web01.cpu"));
        assert!(!p.matches_path("servers.a.b.cpu.user"));
        assert!(!p.is_exact());
        assert!(PathPattern::parse("a.b.c").is_exact());
        // backslashes are removed before anything else
        assert!(PathPattern::parse("a\\.b").matches_path("a.b"));
        let g = PathPattern::parse("a.**.z");
        assert!(g.nodes()[1].is_globstar());
        assert!(g.matches_path("a.z"));
        assert!(g.matches_path("a.b.c.z"));
        assert!(!g.matches_path("b.z"));
    }
}
