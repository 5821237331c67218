//! Byte layout of a part file (see `docs/format/part.md`): a 64-byte header, the
//! series blocks, the index (chunks of varint-encoded entries sorted by series id, then
//! a directory of fixed 24-byte chunk descriptors), a 32-byte footer. All integers
//! little-endian.

pub(crate) const MAGIC: &[u8; 8] = b"SUMIPART";
/// Version 3 stores a block's slots relative to its entry's first slot (version 2:
/// absolute), which saves 3 bytes a block. Version 4 changes only the index: one CRC a
/// chunk for its short blocks instead of one a block, slots in steps. All three are read.
pub(crate) const VERSION: u32 = 4;
pub(crate) const OLDEST_VERSION: u32 = 2;
pub(crate) const HEADER_LEN: usize = 64;
pub(crate) const FOOTER_LEN: usize = 32;
pub(crate) const FOOTER_MAGIC: &[u8; 4] = b"SEND";

/// Direct writes or rollups of the level below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    Direct = 1,
    Rollup = 2,
}

impl Kind {
    pub(crate) fn from_u8(v: u8) -> Option<Kind> {
        match v {
            1 => Some(Kind::Direct),
            2 => Some(Kind::Rollup),
            _ => None,
        }
    }
}

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) kind: Kind,
    pub(crate) level: u8,
    pub(crate) class: u16,
    pub(crate) step: i64,
    pub(crate) partition: i64,
    pub(crate) width: i64,
    pub(crate) file_id: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12] = self.kind as u8;
        h[13] = self.level;
        h[14..16].copy_from_slice(&self.class.to_le_bytes());
        h[16..24].copy_from_slice(&self.step.to_le_bytes());
        h[24..32].copy_from_slice(&self.partition.to_le_bytes());
        h[32..40].copy_from_slice(&self.width.to_le_bytes());
        h[40..48].copy_from_slice(&self.file_id.to_le_bytes());
        let crc = crc32c::crc32c(&h[..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        h
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header, String> {
        let b: &[u8; HEADER_LEN] = b
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or("file shorter than the header")?;
        if &b[0..8] != MAGIC {
            return Err("bad magic".into());
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let i64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            i64::from_le_bytes(a)
        };
        if crc32c::crc32c(&b[..60]) != u32_at(60) {
            return Err("header crc mismatch".into());
        }
        let version = u32_at(8);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(format!(
                "version {version}, this build reads {OLDEST_VERSION} to {VERSION}"
            ));
        }
        let kind = Kind::from_u8(b[12]).ok_or_else(|| format!("unknown kind {}", b[12]))?;
        Ok(Header {
            kind,
            level: b[13],
            class: u16::from_le_bytes([b[14], b[15]]),
            step: i64_at(16),
            partition: i64_at(24),
            width: i64_at(32),
            file_id: i64_at(40) as u64,
        })
    }
}

/// The version field of a header that [`Header::decode`] accepted.
pub(crate) fn version_of(b: &[u8]) -> u32 {
    b.get(8..12)
        .map_or(0, |v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
}

/// One index entry, decoded: where a series' block is and what it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) series: u32,
    pub(crate) count: u32,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    /// The block's CRC32C when `own_crc`, else its chunk's (over the chunk's blocks
    /// that have no CRC of their own, in order; version 4 only).
    pub(crate) crc: u32,
    pub(crate) own_crc: bool,
    /// The entry's chunk, numbered from 0 in directory order.
    pub(crate) chunk: u32,
    pub(crate) first_slot: i64,
    pub(crate) last_slot: i64,
}

/// The footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) index_offset: u64,
    pub(crate) points: u64,
    pub(crate) series_count: u32,
    pub(crate) index_crc: u32,
}

impl Footer {
    pub(crate) fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut f = [0u8; FOOTER_LEN];
        f[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        f[8..16].copy_from_slice(&self.points.to_le_bytes());
        f[16..20].copy_from_slice(&self.series_count.to_le_bytes());
        f[20..24].copy_from_slice(&self.index_crc.to_le_bytes());
        let crc = crc32c::crc32c(&f[..24]);
        f[24..28].copy_from_slice(&crc.to_le_bytes());
        f[28..32].copy_from_slice(FOOTER_MAGIC);
        f
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Footer, String> {
        let b: &[u8; FOOTER_LEN] = b
            .get(..FOOTER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or("file shorter than the footer")?;
        if &b[28..32] != FOOTER_MAGIC {
            return Err("bad footer magic".into());
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if crc32c::crc32c(&b[..24]) != u32_at(24) {
            return Err("footer crc mismatch".into());
        }
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[0..8]);
        let index_offset = u64::from_le_bytes(a);
        a.copy_from_slice(&b[8..16]);
        let points = u64::from_le_bytes(a);
        Ok(Footer {
            index_offset,
            points,
            series_count: u32_at(16),
            index_crc: u32_at(20),
        })
    }
}
