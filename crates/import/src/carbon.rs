//! Where carbon 1.1.10 keeps a series' whisper file, and which series a file holds
//! (`TaggedSeries.encode`/`decode` in carbon's `util.py`, used by its whisper database
//! in `database.py`).
//!
//! - An untagged name `a.b.c` lives in `a/b/c.wsp` (dots become directories; leading
//!   dots are dropped).
//! - A tagged name is first put in carbon's canonical form (`name;tag=value` sorted, see
//!   [`sumi_model::tagged`]); with `h` the lowercase hex SHA-256 of that form, it lives
//!   in `_tagged/h[0..3]/h[3..6]/` under a file named either
//!   - `h.wsp` when `TAG_HASH_FILENAMES = True` (carbon 1.1.10's default), or
//!   - the canonical name with every `.` written `_DOT_`, plus `.wsp`, when it is
//!     `False` (and in carbon before 1.1.10's hash layout).
//!
//! A hashed file name cannot be turned back into the series name: the path holds only
//! the hash ([`PathName::TaggedHash`]). The importer has to learn the name elsewhere
//! (graphite-web's tag database, or a name the operator supplies) and can check it
//! with [`tagged_hash`].

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};
use sumi_model::tagged::{canonical_name, TagError};

/// The directory tagged series live under, at the root of carbon's whisper tree.
pub const TAGGED_DIR: &str = "_tagged";
/// Carbon's stand-in for `.` in the file names of tagged series.
pub const DOT: &str = "_DOT_";

/// Which of carbon's two file layouts tagged series use (`TAG_HASH_FILENAMES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaggedLayout {
    /// `_tagged/abc/def/<sha256>.wsp`: carbon 1.1.10's default.
    Hash,
    /// `_tagged/abc/def/<name with . as _DOT_>.wsp`.
    Name,
}

/// The series a whisper file holds, as far as its path tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathName {
    /// An untagged series: `a/b/c.wsp` holds `a.b.c`.
    Plain(String),
    /// A tagged series stored under its name: `_tagged/…/cpu_DOT_usage;dc=eu.wsp` holds
    /// `cpu.usage;dc=eu` (as carbon wrote it, so in canonical form).
    Tagged(String),
    /// A tagged series stored under the SHA-256 of its name (64 lowercase hex digits):
    /// the name itself is not in the path and must come from elsewhere (the tag
    /// database, or the operator), checked with [`tagged_hash`].
    TaggedHash(String),
}

/// Why a path is not one carbon would have written for a series.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{0:?} does not end in .wsp")]
    NotWhisper(String),
    #[error("{0:?} is not a relative path of plain directory names")]
    NotRelative(PathBuf),
    #[error("{0:?} is not UTF-8")]
    NotUtf8(PathBuf),
    #[error("{0:?} names no series")]
    Empty(PathBuf),
    /// Under `_tagged/` but not `_tagged/xxx/yyy/file.wsp` with a tagged name or a
    /// SHA-256 as the file name.
    #[error("{0:?} is not a tagged series file (_tagged/xxx/yyy/NAME.wsp)")]
    Tagged(String),
    #[error("invalid tagged name: {0}")]
    Tag(#[from] TagError),
}

/// The lowercase hex SHA-256 of a name's canonical form: the hash carbon files a
/// tagged series under.
pub fn tagged_hash(name: &str) -> Result<String, TagError> {
    let canonical = canonical_name(Cow::Borrowed(name))?;
    Ok(hex(&Sha256::digest(canonical.as_bytes())))
}

/// Where carbon stores the series `name`, relative to its whisper root, with `/`
/// between directories (carbon's `getFilesystemPath` on a POSIX system).
pub fn whisper_path(name: &str, layout: TaggedLayout) -> Result<String, TagError> {
    let canonical = canonical_name(Cow::Borrowed(name))?;
    if !canonical.contains(';') {
        let path = canonical.replace('.', "/");
        return Ok(format!("{}.wsp", path.trim_start_matches('/')));
    }
    let hash = hex(&Sha256::digest(canonical.as_bytes()));
    let file = match layout {
        TaggedLayout::Hash => Cow::Borrowed(hash.as_str()),
        TaggedLayout::Name => Cow::Owned(canonical.replace('.', DOT)),
    };
    Ok(format!(
        "{TAGGED_DIR}/{}/{}/{file}.wsp",
        &hash[0..3],
        &hash[3..6]
    ))
}

/// The series the whisper file at `path` (relative to carbon's whisper root) holds.
pub fn series_name(path: &Path) -> Result<PathName, PathError> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => {
                parts.push(p.to_str().ok_or_else(|| PathError::NotUtf8(path.into()))?)
            }
            Component::CurDir => {}
            _ => return Err(PathError::NotRelative(path.into())),
        }
    }
    let Some(file) = parts.pop() else {
        return Err(PathError::Empty(path.into()));
    };
    let stem = file
        .strip_suffix(".wsp")
        .ok_or_else(|| PathError::NotWhisper(path.display().to_string()))?;
    if parts.first() == Some(&TAGGED_DIR) {
        let tagged_err = || PathError::Tagged(path.display().to_string());
        if parts.len() != 3 || stem.is_empty() {
            return Err(tagged_err());
        }
        if stem.contains(';') {
            let name = stem.replace(DOT, ".");
            canonical_name(Cow::Borrowed(&name))?;
            return Ok(PathName::Tagged(name));
        }
        if stem.len() == 64 && stem.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Ok(PathName::TaggedHash(stem.to_string()));
        }
        return Err(tagged_err());
    }
    if stem.is_empty() && parts.is_empty() {
        return Err(PathError::Empty(path.into()));
    }
    parts.push(stem);
    Ok(PathName::Plain(parts.join(".")))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_directories() {
        assert_eq!(
            whisper_path("a.b.c", TaggedLayout::Hash).unwrap(),
            "a/b/c.wsp"
        );
        assert_eq!(
            whisper_path("..a.b", TaggedLayout::Hash).unwrap(),
            "a/b.wsp"
        );
        assert_eq!(
            series_name(Path::new("a/b/c.wsp")),
            Ok(PathName::Plain("a.b.c".into()))
        );
        assert_eq!(
            series_name(Path::new("./x.wsp")),
            Ok(PathName::Plain("x".into()))
        );
        assert!(matches!(
            series_name(Path::new("a/b.txt")),
            Err(PathError::NotWhisper(_))
        ));
        assert!(matches!(
            series_name(Path::new("/a/b.wsp")),
            Err(PathError::NotRelative(_))
        ));
        assert!(matches!(
            series_name(Path::new("a/../b.wsp")),
            Err(PathError::NotRelative(_))
        ));
    }

    #[test]
    fn tagged_names_both_layouts() {
        let name = "cpu.usage;host=web01;dc=eu";
        let hash = tagged_hash(name).unwrap();
        assert_eq!(hash, tagged_hash("cpu.usage;dc=eu;host=web01").unwrap());
        let hashed = whisper_path(name, TaggedLayout::Hash).unwrap();
        assert_eq!(
            hashed,
            format!("_tagged/{}/{}/{hash}.wsp", &hash[..3], &hash[3..6])
        );
        assert_eq!(
            series_name(Path::new(&hashed)),
            Ok(PathName::TaggedHash(hash.clone()))
        );
        let named = whisper_path(name, TaggedLayout::Name).unwrap();
        assert_eq!(
            named,
            format!(
                "_tagged/{}/{}/cpu_DOT_usage;dc=eu;host=web01.wsp",
                &hash[..3],
                &hash[3..6]
            )
        );
        assert_eq!(
            series_name(Path::new(&named)),
            Ok(PathName::Tagged("cpu.usage;dc=eu;host=web01".into()))
        );
        assert!(matches!(
            series_name(Path::new("_tagged/abc/x.wsp")),
            Err(PathError::Tagged(_))
        ));
        assert!(matches!(
            series_name(Path::new("_tagged/abc/def/nohash.wsp")),
            Err(PathError::Tagged(_))
        ));
        assert!(matches!(
            series_name(Path::new("_tagged/abc/def/x;=1.wsp")),
            Err(PathError::Tag(_))
        ));
        assert!(whisper_path("x;a", TaggedLayout::Hash).is_err());
    }
}
