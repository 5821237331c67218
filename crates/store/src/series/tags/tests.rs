use super::*;

fn index(names: &[&str]) -> (TagIndex, Vec<String>) {
    let mut idx = TagIndex::new();
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    for (i, n) in names.iter().enumerate() {
        idx.insert(i as u32, n);
    }
    (idx, names)
}

fn find(idx: &TagIndex, names: &[String], exprs: &[&str]) -> Result<Vec<String>, TagQueryError> {
    let exprs: Vec<TagExpr> = exprs
        .iter()
        .map(|e| TagExpr::parse(e))
        .collect::<Result<_, _>>()?;
    let ids = idx.find(&exprs, |id| names[id as usize].as_str())?;
    let mut out: Vec<String> = ids.iter().map(|&i| names[i as usize].clone()).collect();
    out.sort();
    Ok(out)
}

const SERIES: &[&str] = &[
    "cpu;dc=a;host=h1",
    "cpu;dc=b;host=h2",
    "cpu;host=h3",
    "mem;dc=a;host=h10",
    "disk.used;dc=ab;host=x1",
];

#[test]
fn parse_tagspec_like_graphite() {
    let e = TagExpr::parse("host!=~h1.*").unwrap();
    assert_eq!(
        (e.tag.as_str(), e.op, e.spec.as_str()),
        ("host", TagOp::NotMatch, "h1.*")
    );
    assert_eq!(TagExpr::parse("a=").unwrap().op, TagOp::Eq);
    assert_eq!(TagExpr::parse("a=~").unwrap().op, TagOp::Match);
    assert_eq!(TagExpr::parse("a!=").unwrap().op, TagOp::Ne);
    assert_eq!(TagExpr::parse("a=b=c").unwrap().spec, "b=c");
    for bad in ["=a", "a", "a;b=c", "a=b;c", "a!b", ""] {
        assert!(TagExpr::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn operators_and_missing_tags() {
    let (idx, names) = index(SERIES);
    assert_eq!(
        find(&idx, &names, &["dc=a"]).unwrap(),
        ["cpu;dc=a;host=h1", "mem;dc=a;host=h10"]
    );
    // `!=` with a value matches series without the tag, so it only filters
    assert_eq!(
        find(&idx, &names, &["name=cpu", "dc!=a"]).unwrap(),
        ["cpu;dc=b;host=h2", "cpu;host=h3"]
    );
    // `=~` is anchored at the start only
    assert_eq!(
        find(&idx, &names, &["host=~h1"]).unwrap(),
        ["cpu;dc=a;host=h1", "mem;dc=a;host=h10"]
    );
    assert_eq!(
        find(&idx, &names, &["host=~1"]).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        find(&idx, &names, &["name=cpu", "dc!=~a"]).unwrap(),
        ["cpu;dc=b;host=h2", "cpu;host=h3"]
    );
    // `dc=` means "has no dc"; `dc!=` means "has a dc"
    assert_eq!(
        find(&idx, &names, &["name=cpu", "dc="]).unwrap(),
        ["cpu;host=h3"]
    );
    assert_eq!(find(&idx, &names, &["name=cpu", "dc!="]).unwrap().len(), 2);
    // a regex matching the empty value filters: series without dc pass; `re.match`
    // semantics, so `b?` also accepts "a" (an empty match at its start)
    assert_eq!(
        find(&idx, &names, &["name=cpu", "dc=~b?"]).unwrap().len(),
        3
    );
    assert_eq!(
        find(&idx, &names, &["name=cpu", "dc=~b?$"]).unwrap(),
        ["cpu;dc=b;host=h2", "cpu;host=h3"]
    );
    assert_eq!(
        find(&idx, &names, &["name=disk.used"]).unwrap(),
        ["disk.used;dc=ab;host=x1"]
    );
    assert_eq!(find(&idx, &names, &["dc=~a$"]).unwrap().len(), 2);
}

#[test]
fn refusals() {
    let (idx, names) = index(SERIES);
    assert!(matches!(
        find(&idx, &names, &["dc!=a"]),
        Err(TagQueryError::AllMatchEmpty)
    ));
    assert!(matches!(
        find(&idx, &names, &["dc=~.*"]),
        Err(TagQueryError::AllMatchEmpty)
    ));
    assert!(matches!(
        find(&idx, &names, &["dc=~("]),
        Err(TagQueryError::Regex { .. })
    ));
    assert!(find(&idx, &names, &["nosuch=x"]).unwrap().is_empty());
}

#[test]
fn remove_and_reinsert() {
    let (mut idx, names) = index(SERIES);
    assert_eq!(idx.series(), 5);
    assert!(idx.remove(0, &names[0]));
    assert!(!idx.remove(0, &names[0]));
    assert_eq!(
        find(&idx, &names, &["dc=a"]).unwrap(),
        ["mem;dc=a;host=h10"]
    );
    assert!(idx.insert(0, &names[0]));
    assert!(!idx.insert(0, &names[0]));
    assert_eq!(find(&idx, &names, &["dc=a"]).unwrap().len(), 2);
    assert_eq!(idx.series(), 5);
    // untagged names only through register (`/tags/tagSeries`)
    let mut names = names;
    names.push("plain.metric".into());
    assert!(!idx.insert(5, &names[5]));
    assert!(idx.register(5, &names[5]));
    assert_eq!(
        find(&idx, &names, &["name=plain.metric"]).unwrap(),
        ["plain.metric"]
    );
}

#[test]
fn lists_with_ids_in_first_use_order() {
    let (mut idx, names) = index(SERIES);
    let tags = idx.list_tags(None, None).unwrap();
    let t: Vec<(u32, &str)> = tags.iter().map(|t| (t.id, t.tag.as_str())).collect();
    // graphite-web's SQLite ids: each series' rows take numbers even when they exist
    // ("cpu;dc=a;host=h1" takes 1-3, "cpu;dc=b;host=h2" 4-6, ...)
    assert_eq!(t, [(1, "dc"), (2, "host"), (3, "name")]);
    assert_eq!(idx.list_tags(Some("h|n"), Some(1)).unwrap()[0].tag, "host");
    let (id, values) = idx.list_values("dc", None, None).unwrap().unwrap();
    assert_eq!(id, 1);
    let v: Vec<(&str, u64)> = values.iter().map(|v| (v.value.as_str(), v.count)).collect();
    assert_eq!(v, [("a", 2), ("ab", 1), ("b", 1)]);
    assert_eq!(values[0].id, 1); // "a" was the first value seen
    assert_eq!(values[2].id, 4); // "b": the second series' first value row
    let (_, names_) = idx.list_values("name", None, None).unwrap().unwrap();
    let ids: Vec<(&str, u32)> = names_.iter().map(|v| (v.value.as_str(), v.id)).collect();
    // "cpu;host=h3" takes two rows (7-8): "mem" comes with the fourth series (9-11)
    assert_eq!(ids, [("cpu", 3), ("disk.used", 14), ("mem", 11)]);
    assert!(idx.list_values("nosuch", None, None).unwrap().is_none());
    // a tag whose series are gone stays listed, its values do not
    idx.remove(4, &names[4]);
    let (_, values) = idx.list_values("dc", Some("a"), None).unwrap().unwrap();
    assert_eq!(values.len(), 1);
}

#[test]
fn value_in_reads_one_tag() {
    assert_eq!(value_in("m;a=1;b=x=y", "b"), Some("x=y"));
    assert_eq!(value_in("m;a=1", "name"), Some("m"));
    assert_eq!(value_in("m;a=1", "b"), None);
}

#[test]
fn log_survives_reopen() {
    let dir = crate::testutil::TempDir::new("taglog");
    let (mut idx, names) = index(SERIES);
    idx.open_log(dir.path(), |_| None).unwrap();
    idx.remove(1, &names[1]);
    idx.persist(false, 1, &names[1]).unwrap();
    let (mut again, _) = index(SERIES);
    let lookup = |n: &str| names.iter().position(|m| m == n).map(|i| i as u32);
    again.open_log(dir.path(), lookup).unwrap();
    assert_eq!(again.series(), 4);
    assert_eq!(
        find(&again, &names, &["dc=b"]).unwrap(),
        Vec::<String>::new()
    );
    // the name deleted and created again (another id): the old removal does not apply
    let (mut fresh, _) = index(SERIES);
    let moved = |n: &str| (n == names[1]).then_some(99).or_else(|| lookup(n));
    fresh.open_log(dir.path(), moved).unwrap();
    assert_eq!(fresh.series(), 5);
}

#[test]
fn memory_per_series_stays_small() {
    // the bench's shape: 100 cores a host, 10 data centres, one metric name
    let n = 200_000u32;
    let mut idx = TagIndex::new();
    for i in 0..n {
        let name = format!(
            "cpu.usage;core={};dc=dc{};host=h{}",
            i % 100,
            (i / 100) % 10,
            i / 100
        );
        assert!(idx.insert(i, &name));
    }
    idx.shrink();
    let per_series = idx.heap_bytes() as f64 / f64::from(n);
    // four postings of 4 bytes, plus the host values' share (one host per 100 series)
    assert!(per_series < 24.0, "{per_series} bytes a series");
    assert!(per_series >= 16.0, "{per_series} bytes a series");
}

#[test]
fn candidates_are_kept_as_a_filter_would() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % u64::from(n)) as u32
    };
    for round in 0..200 {
        let mut list = |len: u32, spread: u32| {
            let mut v: Vec<u32> = (0..len).map(|_| next(spread)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let spread = if round % 2 == 0 { 100 } else { 100_000 };
        let ids = list(1 + round % 50, spread);
        let lists: Vec<Vec<u32>> = (0..round % 5).map(|k| list(k * 300 + 3, spread)).collect();
        let refs: Vec<&[u32]> = lists.iter().map(Vec::as_slice).collect();
        let mut kept = ids.clone();
        keep_listed(&mut kept, &refs);
        let want: Vec<u32> = ids
            .into_iter()
            .filter(|id| lists.iter().any(|l| l.contains(id)))
            .collect();
        assert_eq!(kept, want, "round {round}");
    }
}

/// Three expressions over series whose values repeat: an equality with many series
/// (looked up in its postings), one with a regex over few values, and a negation
/// (checked on the names), as `seriesByTag` over a fleet asks.
#[test]
fn postings_and_names_agree() {
    let names: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                "cpu.usage;core={};dc=dc{};host=h{}",
                i % 10,
                (i / 10) % 7,
                i / 10
            )
        })
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (idx, names) = index(&refs);
    for exprs in [
        &["name=cpu.usage", "dc=dc3", "host=~h1.*"][..],
        &["dc=dc3", "core=4", "host!=h3"],
        &["host=~h2[0-9]", "dc=~dc[12]", "core!=~[0-5]"],
        // literal prefixes narrowing the values tested, and ones that must not
        &["host=~h10.*", "core=3"],
        &["host=~^h2[0-4]$", "core=~[0-1]"],
        &["host=~h29?9", "core=1"],
        &["host=~h1{1,2}7", "core=1"],
        &["host=~h5|h6", "core=2"],
        &["core=5", "host!=~h1.*", "dc=dc0"],
        &["core=5", "host!=~h2", "dc=dc4"],
        &["host=~h1\\d", "core=0"],
        &["core=7", "host!=h20", "dc!=dc6"],
    ] {
        let got = find(&idx, &names, exprs).unwrap();
        let want: Vec<String> = names
            .iter()
            .filter(|n| {
                let tags = parse_carbon(n).unwrap();
                let get = |t: &str| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| *v);
                exprs.iter().all(|e| {
                    let e = TagExpr::parse(e).unwrap();
                    let v = get(&e.tag).unwrap_or("");
                    let re = || regex::Regex::new(&format!("^(?:{})", e.spec)).unwrap();
                    match e.op {
                        TagOp::Eq => v == e.spec,
                        TagOp::Ne => v != e.spec,
                        TagOp::Match => re().is_match(v),
                        TagOp::NotMatch => !re().is_match(v),
                    }
                })
            })
            .cloned()
            .collect();
        let mut want = want;
        want.sort();
        assert!(!want.is_empty(), "{exprs:?}");
        assert_eq!(got, want, "{exprs:?}");
    }
}

#[test]
fn literal_prefixes_are_what_every_match_starts_with() {
    for (spec, prefix) in [
        ("host00[0-4].*", "host00"),
        ("^web", "web"),
        ("h29?9", "h2"),
        ("ab*", "a"),
        ("ab{2}", "a"),
        ("ab+", "ab"),
        ("a|b", ""),
        ("(?i)web", ""),
        ("\\dx", ""),
        ("dc.3", "dc"),
        ("", ""),
        ("é+x", "é"),
        ("éa?", "é"),
    ] {
        assert_eq!(literal_prefix(spec), prefix, "{spec}");
    }
}

/// A value added after a regex query built the sorted order is found by the next one.
#[test]
fn new_values_reach_the_sorted_order() {
    let mut idx = TagIndex::new();
    let mut names = Vec::new();
    for (i, h) in ["h3", "h1", "h2"].iter().enumerate() {
        names.push(format!("m;host={h}"));
        idx.insert(i as u32, &names[i]);
    }
    assert_eq!(find(&idx, &names, &["host=~h[12]"]).unwrap().len(), 2);
    names.push("m;host=h10".to_string());
    idx.insert(3, &names[3]);
    assert_eq!(
        find(&idx, &names, &["host=~h1.*"]).unwrap(),
        ["m;host=h1", "m;host=h10"]
    );
}
