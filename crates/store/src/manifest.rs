//! The manifest: which parts are live (with their precedence), the roll state, and the
//! WAL checkpoint. Replaced atomically after every change. Format:
//! `docs/format/manifest.md`.

use std::path::Path;

use crate::fsutil;
use crate::part::Kind;
use crate::version::{LevelRoll, RollState};
use crate::StoreError;

pub(crate) const FILE: &str = "MANIFEST";
const MAGIC: &[u8; 8] = b"SUMIMANI";
const VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ManifestPart {
    pub(crate) file_id: u64,
    pub(crate) order: u64,
    pub(crate) kind: Kind,
    pub(crate) class: u16,
    pub(crate) level: u8,
    pub(crate) partition: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// The first WAL segment to replay.
    pub(crate) checkpoint: u64,
    pub(crate) next_file_id: u64,
    pub(crate) next_order: u64,
    pub(crate) parts: Vec<ManifestPart>,
    pub(crate) rolls: RollState,
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

struct Rd<'a>(&'a [u8]);

impl Rd<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let (a, b) = self
            .0
            .split_at_checked(N)
            .ok_or_else(|| "manifest ends early".to_string())?;
        self.0 = b;
        a.try_into().map_err(|_| "manifest ends early".to_string())
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take()?))
    }
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.parts.len() * 32);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        put_u64(&mut out, self.checkpoint);
        put_u64(&mut out, self.next_file_id);
        put_u64(&mut out, self.next_order);
        out.extend_from_slice(&(self.parts.len() as u32).to_le_bytes());
        for p in &self.parts {
            put_u64(&mut out, p.file_id);
            put_u64(&mut out, p.order);
            out.push(p.kind as u8);
            out.push(p.level);
            out.extend_from_slice(&p.class.to_le_bytes());
            out.extend_from_slice(&p.partition.to_le_bytes());
        }
        let rolls: Vec<(u16, u8, &LevelRoll)> = self
            .rolls
            .classes
            .iter()
            .enumerate()
            .flat_map(|(c, lv)| {
                lv.iter()
                    .enumerate()
                    .map(move |(l, r)| (c as u16, l as u8, r))
            })
            .filter(|(_, _, r)| r.installed != i64::MIN || !r.dirty.is_empty())
            .collect();
        out.extend_from_slice(&(rolls.len() as u32).to_le_bytes());
        for (c, l, r) in rolls {
            out.extend_from_slice(&c.to_le_bytes());
            out.push(l);
            out.extend_from_slice(&r.installed.to_le_bytes());
            out.extend_from_slice(&(r.dirty.len() as u32).to_le_bytes());
            for &d in r.dirty.keys() {
                out.extend_from_slice(&d.to_le_bytes());
            }
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Manifest, String> {
        if b.len() < 16 {
            return Err("manifest too short".into());
        }
        let (body, crc) = b.split_at(b.len() - 4);
        let crc = u32::from_le_bytes(crc.try_into().map_err(|_| "short crc")?);
        if crc32c::crc32c(body) != crc {
            return Err("manifest crc mismatch".into());
        }
        let mut r = Rd(body);
        if &r.take::<8>()? != MAGIC {
            return Err("bad manifest magic".into());
        }
        let v = r.u32()?;
        if v != VERSION {
            return Err(format!("manifest version {v}, expected {VERSION}"));
        }
        let mut m = Manifest {
            checkpoint: r.u64()?,
            next_file_id: r.u64()?,
            next_order: r.u64()?,
            ..Manifest::default()
        };
        let n = r.u32()?;
        for _ in 0..n {
            let file_id = r.u64()?;
            let order = r.u64()?;
            let kind = Kind::from_u8(r.u8()?).ok_or("unknown part kind")?;
            let level = r.u8()?;
            let class = r.u16()?;
            let partition = r.i64()?;
            m.parts.push(ManifestPart {
                file_id,
                order,
                kind,
                class,
                level,
                partition,
            });
        }
        let n = r.u32()?;
        for _ in 0..n {
            let c = r.u16()?;
            let l = r.u8()?;
            let lr = m.rolls.get_mut(c, usize::from(l));
            lr.installed = r.i64()?;
            lr.horizon = lr.installed;
            let nd = r.u32()?;
            for _ in 0..nd {
                lr.dirty.insert(r.i64()?, 1);
            }
        }
        if !r.0.is_empty() {
            return Err(format!("{} bytes after the manifest's end", r.0.len()));
        }
        Ok(m)
    }

    /// Reads the manifest of `dir`; `None` for a new store.
    pub(crate) fn load(dir: &Path) -> Result<Option<Manifest>, StoreError> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(b) => Manifest::decode(&b)
                .map(Some)
                .map_err(|d| StoreError::corrupt("manifest", &path, 0, d)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("read", &path, e)),
        }
    }

    /// A manifest rebuilt from the part files of `parts_dir`, for when the manifest is
    /// lost or corrupt. Each part's header names its kind, class, level and partition;
    /// precedence (`order`) is taken from the file ids, which grow with time. That is
    /// exact for flushed parts; a compaction's output gets a newer id than parts
    /// flushed while it ran, so where both hold a slot the older value may win. The
    /// checkpoint is 0 (every WAL segment still present is replayed: segments are
    /// deleted oldest first, so replaying them all is correct) and the roll state is
    /// empty (rollups are recomputed). Parts that fail their checks are quarantined.
    pub(crate) fn rebuild(
        data_dir: &Path,
        parts_dir: &Path,
        metrics: &crate::metrics::Metrics,
    ) -> Result<Manifest, StoreError> {
        let mut ids = Vec::new();
        let rd = std::fs::read_dir(parts_dir).map_err(|e| StoreError::io("list", parts_dir, e))?;
        for entry in rd {
            let entry = entry.map_err(|e| StoreError::io("list", parts_dir, e))?;
            let name = entry.file_name();
            if let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".part"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        let mut m = Manifest::default();
        for id in ids {
            let path = crate::part::writer::part_path(parts_dir, id);
            match crate::part::Part::open(&path) {
                Ok(part) => {
                    let h = part.header;
                    m.parts.push(ManifestPart {
                        file_id: h.file_id,
                        order: m.next_order,
                        kind: h.kind,
                        class: h.class,
                        level: h.level,
                        partition: h.partition,
                    });
                    m.next_order += 1;
                    m.next_file_id = m.next_file_id.max(id + 1);
                }
                Err(e) => {
                    metrics
                        .parts_corrupt
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::error!(error = %e, "rebuilding the manifest: leaving out a part that failed its checks");
                    crate::quarantine::move_aside(data_dir, &path, false)?;
                }
            }
        }
        tracing::warn!(
            parts = m.parts.len(),
            "manifest rebuilt from the part files; the WAL is replayed from its oldest segment"
        );
        Ok(m)
    }

    pub(crate) fn store(&self, dir: &Path) -> Result<(), StoreError> {
        fsutil::write_atomic(&dir.join(FILE), &self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut m = Manifest {
            checkpoint: 7,
            next_file_id: 42,
            next_order: 99,
            parts: vec![ManifestPart {
                file_id: 3,
                order: 5,
                kind: Kind::Rollup,
                class: 1,
                level: 2,
                partition: -3600,
            }],
            rolls: RollState::default(),
        };
        let r = m.rolls.get_mut(1, 0);
        r.installed = 10_800;
        r.horizon = 10_800;
        r.dirty.insert(0, 1);
        let b = m.encode();
        assert_eq!(Manifest::decode(&b).unwrap(), m);
        for cut in 0..b.len() {
            assert!(Manifest::decode(&b[..cut]).is_err());
        }
        let mut bad = b.clone();
        bad[20] ^= 1;
        assert!(Manifest::decode(&bad).is_err());
    }
}
