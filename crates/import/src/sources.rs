//! Source files as [`SeriesData`] for the import [`job`](crate::job): a whisper file
//! as its one series (named from its path as carbon maps it), an RRD file as one
//! series per (data source, consolidation function).

use std::collections::HashMap;
use std::path::{Component, Path};
use std::sync::Arc;

use sumi_model::{AggMethod, Archive, Retention, SeriesConfig};

use crate::carbon::{self, PathName};
use crate::job::SeriesData;
use crate::rrd::{Cf, Rrd};
use crate::whisper::Whisper;

/// Names of tagged series, by the SHA-256 carbon files them under (carbon 1.1.10's
/// default `_tagged/` layout keeps only the hash in the path).
#[derive(Clone, Debug, Default)]
pub struct TaggedNames(HashMap<String, String>);

impl TaggedNames {
    /// From a list of tagged names, one per line (blank lines and `#` comments
    /// ignored), such as graphite-web's `/tags/findSeries` answers or the `path`
    /// column of its tag database. A line that is not a tagged name is an error naming
    /// its line number.
    pub fn parse(text: &str) -> Result<TaggedNames, String> {
        let mut map = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let hash = carbon::tagged_hash(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            let mut tags = Vec::new();
            let mut name = String::new();
            sumi_model::tagged::canonicalize(line, [], &mut tags, &mut name)
                .map_err(|e| format!("line {}: {e}", i + 1))?;
            map.insert(hash, name);
        }
        Ok(TaggedNames(map))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The series the whisper file at `path` (`rel` below the whisper root) holds, with
/// the points whisper would return at `now`: its name from the path (carbon's layout,
/// tagged names from `names` for the hashed layout), its archives, aggregation method
/// and xFilesFactor. An `Err` is the reason the file is skipped.
pub fn whisper_series(
    path: &Path,
    rel: &Path,
    now: i64,
    names: &TaggedNames,
) -> Result<Vec<SeriesData>, String> {
    let name = match carbon::series_name(rel).map_err(|e| e.to_string())? {
        PathName::Plain(n) => n,
        PathName::Tagged(n) => {
            let mut tags = Vec::new();
            let mut out = String::new();
            sumi_model::tagged::canonicalize(&n, [], &mut tags, &mut out)
                .map_err(|e| e.to_string())?;
            out
        }
        PathName::TaggedHash(h) => match names.0.get(&h) {
            Some(n) => n.clone(),
            None => {
                return Err(format!(
                    "a tagged series filed under its hash {h}: its name is not in the file \
                     or its path; pass the tagged names with --tagged-names"
                ))
            }
        },
    };
    let w = Whisper::open(path).map_err(|e| e.to_string())?;
    let archives: Vec<Archive> = w
        .archives()
        .iter()
        .map(|a| Archive {
            step_secs: a.seconds_per_point,
            points: a.points,
        })
        .collect();
    let retention = Retention::new(archives)
        .map_err(|e| format!("archives whisper would not have created ({e}) (at byte 16)"))?;
    let h = w.header();
    let config = SeriesConfig {
        retention: Arc::new(retention),
        method: h.aggregation,
        xff: h.x_files_factor,
    };
    let mut points = Vec::with_capacity(w.archives().len());
    for k in 0..w.archives().len() {
        let pts: Vec<(i64, f64)> = w.points(k, now).map_err(|e| e.to_string())?.collect();
        points.push(pts);
    }
    Ok(vec![SeriesData {
        name,
        config,
        archives: points,
    }])
}

/// Replaces what a Graphite path component cannot hold (`.`, whitespace, `;`, glob
/// characters) with `_`.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_whitespace() || ".;*?[]{}(),=~'\"\\/".contains(c) || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The name stem of an RRD file: its path below the import root without `.rrd`,
/// each directory and the file name cleaned, joined with `.`.
pub fn rrd_stem(rel: &Path, file: &Path) -> String {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(file.file_name().unwrap_or_default())
    } else {
        rel
    };
    let mut parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if let Some(last) = parts.last_mut() {
        if let Some(s) = last.strip_suffix(".rrd") {
            *last = s.to_string();
        }
    }
    parts.iter().map(|p| clean(p)).collect::<Vec<_>>().join(".")
}

fn cf_method(cf: Cf) -> Option<AggMethod> {
    match cf {
        Cf::Average => Some(AggMethod::Average),
        Cf::Min => Some(AggMethod::Min),
        Cf::Max => Some(AggMethod::Max),
        Cf::Last => Some(AggMethod::Last),
        _ => None,
    }
}

/// The series of an RRD file (`docs/format/rrd.md`, "Series names"): for each data
/// source and each of AVERAGE, MIN, MAX, LAST present, `<stem>.<ds>.<cf>` with the
/// RRAs of that function as archives, finest first, each row at the time `rrdtool
/// fetch` labels it (the end of its interval). Unknown values are gaps. A (data
/// source, function) whose RRAs whisper's archive rules refuse (steps that do not
/// divide each other, retentions that do not grow) is an `Err` for the whole file.
pub fn rrd_series(path: &Path, rel: &Path) -> Result<Vec<SeriesData>, String> {
    let rrd = Rrd::open(path).map_err(|e| e.to_string())?;
    let stem = rrd_stem(rel, path);
    let mut out = Vec::new();
    for cf in [Cf::Average, Cf::Min, Cf::Max, Cf::Last] {
        let Some(method) = cf_method(cf) else {
            continue;
        };
        let mut rras: Vec<usize> = (0..rrd.rras().len())
            .filter(|&i| rrd.rras()[i].cf == cf)
            .collect();
        if rras.is_empty() {
            continue;
        }
        rras.sort_by_key(|&i| rrd.rra_step(i));
        let archives: Vec<Archive> = rras
            .iter()
            .map(|&i| Archive {
                step_secs: u32::try_from(rrd.rra_step(i)).unwrap_or(u32::MAX),
                points: u32::try_from(rrd.rras()[i].rows).unwrap_or(u32::MAX),
            })
            .collect();
        let retention = Retention::new(archives)
            .map_err(|e| format!("the {} RRAs make no whisper-style archives: {e}", cf.name()))?;
        let retention = Arc::new(retention);
        let xff = rrd.rras()[rras[0]].xff as f32;
        let mut per_ds: Vec<Vec<Vec<(i64, f64)>>> = vec![Vec::new(); rrd.ds().len()];
        for &i in &rras {
            let mut cols: Vec<Vec<(i64, f64)>> = vec![Vec::new(); rrd.ds().len()];
            for (t, row) in rrd.rra_rows(i) {
                for (d, v) in row.into_iter().enumerate() {
                    if !v.is_nan() {
                        if let Some(c) = cols.get_mut(d) {
                            c.push((t, v));
                        }
                    }
                }
            }
            for (d, c) in cols.into_iter().enumerate() {
                per_ds[d].push(c);
            }
        }
        for (d, archives) in per_ds.into_iter().enumerate() {
            let ds = &rrd.ds()[d];
            out.push(SeriesData {
                name: format!(
                    "{stem}.{}.{}",
                    clean(&ds.name),
                    cf.name().to_ascii_lowercase()
                ),
                config: SeriesConfig {
                    retention: retention.clone(),
                    method,
                    xff,
                },
                archives,
            });
        }
    }
    if out.is_empty() {
        return Err("no AVERAGE, MIN, MAX or LAST archive".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrd_stems_follow_the_path() {
        let f = Path::new("/x/y/load.rrd");
        assert_eq!(rrd_stem(Path::new(""), f), "load");
        assert_eq!(
            rrd_stem(Path::new("web01/cpu-0/cpu-idle.rrd"), f),
            "web01.cpu-0.cpu-idle"
        );
        assert_eq!(rrd_stem(Path::new("a b/if.eth0;x.rrd"), f), "a_b.if_eth0_x");
    }

    #[test]
    fn tagged_names_by_hash() {
        let names = TaggedNames::parse("# a comment\n\ncpu.usage;host=web01;dc=eu\n").unwrap();
        assert_eq!(names.len(), 1);
        let h = carbon::tagged_hash("cpu.usage;dc=eu;host=web01").unwrap();
        assert_eq!(
            names.0.get(&h).map(String::as_str),
            Some("cpu.usage;dc=eu;host=web01")
        );
        let err = TaggedNames::parse("a;b=c\n;x=y\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }

    #[test]
    fn a_hashed_file_without_its_name_is_a_skip_that_says_why() {
        let rel = Path::new(
            "_tagged/8d7/28e/8d728edfed21f8dd119983879d376c2c654922b7eb7f751ac73e6fdd87fb9ffc.wsp",
        );
        let err = whisper_series(rel, rel, 0, &TaggedNames::default()).unwrap_err();
        assert!(err.contains("--tagged-names"), "{err}");
    }
}
