//! `sumi check`: an offline walk over a data directory that verifies every checksum
//! and internal invariant, reports what is damaged, and with `repair` fixes what can
//! be fixed without guessing:
//!
//! - `series.log`: framing and CRC of every record, ids in order, classes known. A torn
//!   tail is cut (repair); damage in the middle is reported only — the log is the only
//!   map from names to series ids, and cutting it would let new series reuse the ids
//!   of data still on disk.
//! - WAL segments: header, framing, CRC and decoding of every record, series and
//!   levels known. A corrupt record is cut with the rest of its segment (repair; a
//!   copy of the segment is quarantined first).
//! - `MANIFEST`: CRC and decoding; every listed part exists, opens, and matches its
//!   entry; ids and orders unique; classes and levels known. A corrupt manifest is
//!   quarantined and rebuilt from the part headers (repair).
//! - every part: header, footer and index CRCs, index sorted with offsets exactly
//!   tiling the block area (as at open), then every block's CRC and decoding, point
//!   counts, slots inside the partition, series known. A part that does not open is
//!   quarantined and dropped from the manifest; a part with bad blocks is rewritten
//!   without them and the original quarantined (repair).
//!
//! The check takes the data directory's lock: it refuses to run beside a server.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::manifest::{Manifest, ManifestPart};
use crate::part::writer::{part_path, PartWriter};
use crate::part::Part;
use crate::wal::segment::{self, HEADER_LEN, MAGIC, MAX_RECORD, VERSION};
use crate::StoreError;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Data is damaged (or a file is inconsistent with another).
    Damage,
    /// Worth knowing, nothing is wrong (leftovers of an interrupted operation, which
    /// the next open cleans up).
    Note,
}

/// One thing the check found.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Damage or a note.
    pub severity: Severity,
    /// The file concerned.
    pub file: PathBuf,
    /// Byte offset of the problem in the file, when it has one.
    pub offset: Option<u64>,
    /// What is wrong.
    pub what: String,
    /// What `--repair` does (or did) about it; `None` when it cannot help.
    pub repair: Option<String>,
    /// True once the repair was carried out.
    pub repaired: bool,
}

/// The result of [`check`].
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Everything found, in the order it was found.
    pub findings: Vec<Finding>,
    /// Series in the series log (up to any damage).
    pub series: u64,
    /// Retention classes in the series log.
    pub classes: u64,
    /// WAL segments looked at.
    pub wal_segments: u64,
    /// WAL records that passed their checks.
    pub wal_records: u64,
    /// Points in those records.
    pub wal_points: u64,
    /// Parts that opened.
    pub parts: u64,
    /// Blocks (one per series and part) looked at.
    pub blocks: u64,
    /// Points in the blocks that decoded.
    pub points: u64,
    /// Bytes of blocks whose CRC was verified and which were decoded.
    pub block_bytes: u64,
    /// Time spent reading, CRC-checking and decoding blocks.
    pub block_time: Duration,
    /// Time the whole check took.
    pub elapsed: Duration,
}

impl CheckReport {
    /// Damage findings.
    pub fn damage_found(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Damage)
            .count()
    }

    /// Damage findings not repaired.
    pub fn damage_left(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Damage && !f.repaired)
            .count()
    }

    /// `fsck`'s convention: 0 clean, 1 damage found and all of it repaired, 4 damage
    /// left.
    pub fn exit_code(&self) -> i32 {
        if self.damage_left() > 0 {
            4
        } else if self.damage_found() > 0 {
            1
        } else {
            0
        }
    }

    /// The human-readable report.
    pub fn to_text(&self, data_dir: &Path) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(out, "sumi check {}", data_dir.display());
        let _ = writeln!(
            out,
            "  series.log: {} series in {} retention classes",
            self.series, self.classes
        );
        let _ = writeln!(
            out,
            "  wal: {} segments, {} records, {} points",
            self.wal_segments, self.wal_records, self.wal_points
        );
        let secs = self.block_time.as_secs_f64();
        let rate = if secs > 0.0 {
            self.block_bytes as f64 / secs / 1e6
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "  parts: {} parts, {} blocks, {} points; {} block bytes CRC-checked and decoded in {:.3} s ({:.0} MB/s)",
            self.parts, self.blocks, self.points, self.block_bytes, secs, rate
        );
        for f in &self.findings {
            let tag = match (f.severity, f.repaired) {
                (Severity::Note, _) => "note",
                (Severity::Damage, true) => "REPAIRED",
                (Severity::Damage, false) => "DAMAGE",
            };
            let at = f
                .offset
                .map(|o| format!(" at offset {o}"))
                .unwrap_or_default();
            let _ = write!(out, "{tag}: {}{at}: {}", f.file.display(), f.what);
            match (&f.repair, f.severity, f.repaired) {
                (Some(r), Severity::Damage, true) => {
                    let _ = write!(out, " [{r}]");
                }
                (Some(r), Severity::Damage, false) => {
                    let _ = write!(out, " [--repair would: {r}]");
                }
                (None, Severity::Damage, _) => {
                    let _ = write!(out, " [not repairable by sumi check]");
                }
                _ => {}
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "result: {} damaged, {} repaired, {} left ({:.2} s)",
            self.damage_found(),
            self.damage_found() - self.damage_left(),
            self.damage_left(),
            self.elapsed.as_secs_f64()
        );
        out
    }

    fn damage(&mut self, file: &Path, offset: Option<u64>, what: String, repair: Option<&str>) {
        self.findings.push(Finding {
            severity: Severity::Damage,
            file: file.to_path_buf(),
            offset,
            what,
            repair: repair.map(str::to_string),
            repaired: false,
        });
    }

    fn note(&mut self, file: &Path, what: String) {
        self.findings.push(Finding {
            severity: Severity::Note,
            file: file.to_path_buf(),
            offset: None,
            what,
            repair: None,
            repaired: false,
        });
    }

    /// Marks the last finding repaired.
    fn repaired(&mut self) {
        if let Some(f) = self.findings.last_mut() {
            f.repaired = true;
        }
    }
}

/// What the series log says: levels per class, class per series.
#[derive(Default)]
struct Catalog {
    class_levels: Vec<u8>,
    series_class: Vec<u16>,
}

impl Catalog {
    fn levels_of_series(&self, series: u32) -> Option<u8> {
        let c = *self.series_class.get(series as usize)?;
        self.class_levels.get(usize::from(c)).copied()
    }
}

/// Checks (and with `repair`, repairs) the data directory `data_dir`.
pub fn check(data_dir: &Path, repair: bool) -> Result<CheckReport, StoreError> {
    let t0 = Instant::now();
    if !data_dir.join("series.log").exists() && !data_dir.join("wal").exists() {
        return Err(StoreError::io(
            "check",
            data_dir,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not a sumi data directory (no series.log, no wal/)",
            ),
        ));
    }
    let _lock = crate::store::lock_dir(data_dir)?;
    let mut rep = CheckReport::default();
    let cat = check_series_log(data_dir, repair, &mut rep)?;
    rep.series = cat.series_class.len() as u64;
    rep.classes = cat.class_levels.len() as u64;
    let checkpoint = check_manifest_and_parts(data_dir, repair, &cat, &mut rep)?;
    check_wal(data_dir, repair, checkpoint, &cat, &mut rep)?;
    rep.elapsed = t0.elapsed();
    Ok(rep)
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    u32::from_le_bytes(a)
}

fn le16(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        a.copy_from_slice(s);
    }
    u16::from_le_bytes(a)
}

fn cut_file(data_dir: &Path, path: &Path, at: u64) -> Result<(), StoreError> {
    crate::quarantine::move_aside(data_dir, path, true)?;
    let f = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io("open", path, e))?;
    f.set_len(at)
        .map_err(|e| StoreError::io("truncate", path, e))?;
    f.sync_all().map_err(|e| StoreError::io("fsync", path, e))
}

/// Reads `series.log` without changing it (unless repairing a torn tail).
fn check_series_log(
    data_dir: &Path,
    repair: bool,
    rep: &mut CheckReport,
) -> Result<Catalog, StoreError> {
    use crate::series::log::{MAGIC as LOG_MAGIC, OLDEST_VERSION, VERSION as LOG_VERSION};
    let path = data_dir.join("series.log");
    let mut cat = Catalog::default();
    let data = match fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cat),
        Err(e) => return Err(StoreError::io("read", &path, e)),
    };
    const LOG_HEADER: usize = 16;
    if data.len() < LOG_HEADER {
        rep.damage(
            &path,
            Some(0),
            format!("{} bytes, shorter than the header", data.len()),
            None,
        );
        return Ok(cat);
    }
    if &data[..8] != LOG_MAGIC || !(OLDEST_VERSION..=LOG_VERSION).contains(&le32(&data, 8)) {
        rep.damage(&path, Some(0), "bad magic or version".into(), None);
        return Ok(cat);
    }
    let mut off = LOG_HEADER;
    while off < data.len() {
        let rest = &data[off..];
        let len = le32(rest, 0) as usize;
        let problem = if rest.len() < 8 {
            Some("truncated record header".to_string())
        } else {
            match rest.get(8..8 + len) {
                None => Some(format!("record of {len} bytes runs past the end")),
                Some(p) if crc32c::crc32c(p) != le32(rest, 4) => Some("crc mismatch".into()),
                Some(p) => catalog_record(p, &mut cat).err(),
            }
        };
        if let Some(why) = problem {
            let tail = rest.len() < 8 || 8 + len >= rest.len();
            if tail {
                rep.damage(
                    &path,
                    Some(off as u64),
                    format!("torn tail ({why}); {} bytes", rest.len()),
                    Some("cut the tail (a copy is quarantined); sumi also cuts it at open"),
                );
                if repair {
                    cut_file(data_dir, &path, off as u64)?;
                    rep.repaired();
                }
            } else {
                rep.damage(
                    &path,
                    Some(off as u64),
                    format!(
                        "corrupt record before the end ({why}): sumi refuses to open; \
                         restore series.log from a backup"
                    ),
                    None,
                );
            }
            break;
        }
        off += 8 + len;
    }
    Ok(cat)
}

/// Applies one series-log record to the catalog, checking ids are in order.
fn catalog_record(p: &[u8], cat: &mut Catalog) -> Result<(), String> {
    match p.first() {
        Some(1) if p.len() >= 4 => {
            let id = le16(p, 1);
            if usize::from(id) != cat.class_levels.len() {
                return Err(format!("class id {id} out of order"));
            }
            cat.class_levels.push(p[3]);
            Ok(())
        }
        Some(2) if p.len() >= 12 => {
            let id = le32(p, 1);
            let class = le16(p, 5);
            if id as usize != cat.series_class.len() {
                return Err(format!("series id {id} out of order"));
            }
            if usize::from(class) >= cat.class_levels.len() {
                return Err(format!("series {id} names unknown class {class}"));
            }
            cat.series_class.push(class);
            Ok(())
        }
        Some(&crate::series::log::TYPE_SERIES_BATCH) => {
            let mut names = Vec::new();
            for e in crate::series::log::decode_batch(&p[1..], &mut names)? {
                if e.id as usize != cat.series_class.len() {
                    return Err(format!("series id {} out of order", e.id));
                }
                if usize::from(e.class) >= cat.class_levels.len() {
                    return Err(format!("series {} names unknown class {}", e.id, e.class));
                }
                cat.series_class.push(e.class);
            }
            Ok(())
        }
        Some(t) => Err(format!("record type {t} malformed or unknown")),
        None => Err("empty record".into()),
    }
}

/// Checks the manifest and every part; returns the WAL checkpoint.
fn check_manifest_and_parts(
    data_dir: &Path,
    repair: bool,
    cat: &Catalog,
    rep: &mut CheckReport,
) -> Result<u64, StoreError> {
    let parts_dir = data_dir.join("parts");
    let mpath = data_dir.join(crate::manifest::FILE);
    let on_disk = list_parts(&parts_dir)?;
    let mut dirty = false;
    let mut manifest = match Manifest::load(data_dir) {
        Ok(Some(m)) => m,
        Ok(None) => {
            if !on_disk.is_empty() {
                rep.damage(
                    &mpath,
                    None,
                    format!("missing while {} part files exist", on_disk.len()),
                    Some("rebuild it from the part headers"),
                );
                if repair {
                    dirty = true;
                    rep.repaired();
                    rebuild(data_dir, &parts_dir, rep)?
                } else {
                    unlisted_manifest(&parts_dir, &on_disk)
                }
            } else {
                Manifest::default()
            }
        }
        Err(e) => {
            rep.damage(
                &mpath,
                Some(0),
                e.to_string(),
                Some("quarantine it and rebuild it from the part headers (sumi also does this at open)"),
            );
            if repair {
                crate::quarantine::move_aside(data_dir, &mpath, false)?;
                dirty = true;
                rep.repaired();
                rebuild(data_dir, &parts_dir, rep)?
            } else {
                unlisted_manifest(&parts_dir, &on_disk)
            }
        }
    };
    let max_id = manifest.parts.iter().map(|p| p.file_id).max().unwrap_or(0);
    if !manifest.parts.is_empty() && manifest.next_file_id <= max_id {
        rep.damage(
            &mpath,
            None,
            format!(
                "next_file_id {} is not above the largest part id {max_id}",
                manifest.next_file_id
            ),
            Some("raise it"),
        );
        if repair {
            manifest.next_file_id = max_id + 1;
            dirty = true;
            rep.repaired();
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut keep: Vec<ManifestPart> = Vec::with_capacity(manifest.parts.len());
    let entries = std::mem::take(&mut manifest.parts);
    for mp in entries {
        let path = part_path(&parts_dir, mp.file_id);
        if !seen.insert(mp.file_id) {
            rep.damage(
                &mpath,
                None,
                format!("part {:016x} listed twice", mp.file_id),
                Some("drop the duplicate entry"),
            );
            if repair {
                dirty = true;
                rep.repaired();
                continue;
            }
        }
        match check_part(data_dir, &path, &mp, cat, repair, &mut manifest, rep)? {
            PartVerdict::Keep(m) => {
                if m != mp {
                    dirty = true;
                }
                keep.push(m);
            }
            PartVerdict::Drop => dirty = true,
        }
    }
    manifest.parts = keep;
    let listed: std::collections::HashSet<u64> = manifest.parts.iter().map(|p| p.file_id).collect();
    for id in on_disk.iter().filter(|id| !listed.contains(id)) {
        rep.note(
            &part_path(&parts_dir, *id),
            "not in the manifest: left by an interrupted flush or compaction; the next open deletes it"
                .into(),
        );
    }
    if repair && dirty {
        manifest.store(data_dir)?;
    }
    Ok(manifest.checkpoint)
}

/// Every part on disk as if listed, entries taken from the part headers (for checking
/// the parts when the manifest is unusable and not being repaired).
fn unlisted_manifest(parts_dir: &Path, ids: &[u64]) -> Manifest {
    let mut m = Manifest::default();
    for &id in ids {
        let mp = match Part::open(&part_path(parts_dir, id)) {
            Ok(p) => ManifestPart {
                file_id: id,
                order: m.next_order,
                kind: p.header.kind,
                class: p.header.class,
                level: p.header.level,
                partition: p.header.partition,
            },
            // check_part reports why it does not open
            Err(_) => ManifestPart {
                file_id: id,
                order: m.next_order,
                kind: crate::part::Kind::Direct,
                class: 0,
                level: 0,
                partition: 0,
            },
        };
        m.parts.push(mp);
        m.next_order += 1;
        m.next_file_id = id + 1;
    }
    m
}

/// [`Manifest::rebuild`], reporting the parts it had to quarantine.
fn rebuild(
    data_dir: &Path,
    parts_dir: &Path,
    rep: &mut CheckReport,
) -> Result<Manifest, StoreError> {
    let metrics = crate::metrics::Metrics::default();
    let m = Manifest::rebuild(data_dir, parts_dir, &metrics)?;
    let bad = metrics
        .parts_corrupt
        .load(std::sync::atomic::Ordering::Relaxed);
    if bad > 0 {
        rep.damage(
            parts_dir,
            None,
            format!("{bad} part files failed their checks while rebuilding the manifest"),
            Some("quarantined them"),
        );
        rep.repaired();
    }
    Ok(m)
}

fn list_parts(dir: &Path) -> Result<Vec<u64>, StoreError> {
    let mut ids = Vec::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ids),
        Err(e) => return Err(StoreError::io("list", dir, e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
        if let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_suffix(".part"))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

enum PartVerdict {
    Keep(ManifestPart),
    Drop,
}

/// Checks one listed part through and through.
fn check_part(
    data_dir: &Path,
    path: &Path,
    mp: &ManifestPart,
    cat: &Catalog,
    repair: bool,
    manifest: &mut Manifest,
    rep: &mut CheckReport,
) -> Result<PartVerdict, StoreError> {
    const QUARANTINE: &str = "quarantine the part and drop it from the manifest";
    if !path.exists() {
        rep.damage(
            path,
            None,
            "listed in the manifest but missing".into(),
            Some("drop it from the manifest"),
        );
        if repair {
            rep.repaired();
            return Ok(PartVerdict::Drop);
        }
        return Ok(PartVerdict::Keep(*mp));
    }
    let part = match Part::open(path) {
        Ok(p) => p,
        Err(e) => {
            let (offset, what) = match &e {
                StoreError::Corrupt { offset, detail, .. } => (Some(*offset), detail.clone()),
                other => (None, other.to_string()),
            };
            rep.damage(path, offset, what, Some(QUARANTINE));
            if repair {
                crate::quarantine::move_aside(data_dir, path, false)?;
                rep.repaired();
                return Ok(PartVerdict::Drop);
            }
            return Ok(PartVerdict::Keep(*mp));
        }
    };
    rep.parts += 1;
    let h = part.header;
    let mut problem = None;
    if (h.file_id, h.kind, h.class, h.level, h.partition)
        != (mp.file_id, mp.kind, mp.class, mp.level, mp.partition)
    {
        problem = Some(format!(
            "header {h:?} does not match the manifest entry {mp:?}"
        ));
    } else if cat
        .class_levels
        .get(usize::from(h.class))
        .is_none_or(|&n| h.level >= n)
    {
        problem = Some(format!(
            "class {} level {} is not in the series log",
            h.class, h.level
        ));
    }
    if let Some(p) = problem {
        rep.damage(path, Some(0), p, Some(QUARANTINE));
        if repair {
            drop(part);
            crate::quarantine::move_aside(data_dir, path, false)?;
            rep.repaired();
            return Ok(PartVerdict::Drop);
        }
        return Ok(PartVerdict::Keep(*mp));
    }
    // every block: CRC, decoding, counts, slots inside the partition, series known
    let t = Instant::now();
    let mut bad: Vec<(u64, String)> = Vec::new();
    let mut good = Vec::new();
    let (mut slots, mut values) = (Vec::new(), Vec::new());
    let end = h.partition.saturating_add(h.width);
    let mut scan = part.scan();
    let mut index = part.index_scan();
    for e in index.by_ref() {
        rep.blocks += 1;
        slots.clear();
        values.clear();
        let why = if cat.levels_of_series(e.series).is_none() {
            Some(format!("series {} is not in the series log", e.series))
        } else if e.first_slot < h.partition || e.last_slot >= end {
            Some(format!(
                "series {}: slots {}..={} outside the partition {}..{end}",
                e.series, e.first_slot, e.last_slot, h.partition
            ))
        } else {
            match scan.read(&e, &mut slots, &mut values) {
                Ok(()) => {
                    rep.block_bytes += u64::from(e.len);
                    rep.points += u64::from(e.count);
                    if slots.iter().any(|&s| s < e.first_slot || s > e.last_slot) {
                        Some(format!(
                            "series {}: decoded slots outside the index range",
                            e.series
                        ))
                    } else {
                        None
                    }
                }
                Err(err) => Some(err),
            }
        };
        match why {
            Some(w) => bad.push((e.offset, w)),
            None => good.push(e),
        }
    }
    rep.block_time += t.elapsed();
    if let Some(err) = index.error.take() {
        rep.damage(
            path,
            None,
            format!("index unreadable: {err}"),
            Some(QUARANTINE),
        );
        if repair {
            drop(scan);
            drop(part);
            crate::quarantine::move_aside(data_dir, path, false)?;
            rep.repaired();
            return Ok(PartVerdict::Drop);
        }
        return Ok(PartVerdict::Keep(*mp));
    }
    if bad.is_empty() {
        return Ok(PartVerdict::Keep(*mp));
    }
    let n_bad = bad.len();
    for (off, why) in bad {
        rep.damage(
            path,
            Some(off),
            why,
            Some("rewrite the part without the damaged blocks; the original is quarantined"),
        );
    }
    if !repair {
        return Ok(PartVerdict::Keep(*mp));
    }
    let file_id = manifest.next_file_id.max(mp.file_id + 1);
    manifest.next_file_id = file_id + 1;
    let header = crate::part::Header { file_id, ..h };
    let parts_dir = path.parent().unwrap_or(data_dir);
    let mut w = PartWriter::create(parts_dir, header)?;
    let mut scan = part.scan();
    for e in &good {
        let b = scan
            .block(e)
            .map_err(|d| StoreError::corrupt("part", path, e.offset, d))?;
        w.add_block(
            e.series,
            e.count,
            e.first_slot,
            e.last_slot,
            b,
            part.rel_slots,
        )?;
    }
    let new_path = if w.is_empty() {
        None
    } else {
        Some(w.finish()?)
    };
    crate::fsutil::sync_dir(parts_dir)?;
    drop(scan);
    drop(part);
    crate::quarantine::move_aside(data_dir, path, false)?;
    let n = rep.findings.len();
    for f in rep.findings.iter_mut().skip(n - n_bad) {
        f.repaired = true;
    }
    Ok(match new_path {
        Some(_) => PartVerdict::Keep(ManifestPart { file_id, ..*mp }),
        None => PartVerdict::Drop,
    })
}

/// Checks every WAL segment, read-only unless repairing.
fn check_wal(
    data_dir: &Path,
    repair: bool,
    checkpoint: u64,
    cat: &Catalog,
    rep: &mut CheckReport,
) -> Result<(), StoreError> {
    let dir = data_dir.join("wal");
    if !dir.exists() {
        return Ok(());
    }
    let segs = segment::list(&dir)?;
    for &seq in &segs {
        let path = segment::segment_path(&dir, seq);
        rep.wal_segments += 1;
        if seq < checkpoint {
            rep.note(
                &path,
                format!("below the checkpoint {checkpoint}: already in parts, deleted after the next flush"),
            );
            continue;
        }
        let data = fs::read(&path).map_err(|e| StoreError::io("read", &path, e))?;
        let mut problem: Option<(u64, String)> = None;
        if data.len() < HEADER_LEN as usize {
            problem = Some((0, "shorter than the segment header".into()));
        } else if &data[..8] != MAGIC || le32(&data, 8) != VERSION {
            problem = Some((0, "bad magic or version".into()));
        }
        let mut off = HEADER_LEN as usize;
        while problem.is_none() && off < data.len() {
            let rest = &data[off..];
            let len = le32(rest, 0) as usize;
            if rest.len() < 8 {
                problem = Some((off as u64, "truncated record header".into()));
            } else if len > MAX_RECORD {
                problem = Some((off as u64, format!("record length {len} is implausible")));
            } else if let Some(p) = rest.get(8..8 + len) {
                if crc32c::crc32c(p) != le32(rest, 4) {
                    problem = Some((off as u64, "crc mismatch".into()));
                } else {
                    let mut unknown = None;
                    match crate::wal::record::decode_points(p, |pt| {
                        if unknown.is_none()
                            && cat
                                .levels_of_series(pt.series)
                                .is_none_or(|n| pt.level >= n)
                        {
                            unknown = Some((pt.series, pt.level));
                        }
                    }) {
                        Ok(n) => {
                            rep.wal_records += 1;
                            rep.wal_points += n;
                            if let Some((s, l)) = unknown {
                                rep.damage(
                                    &path,
                                    Some(off as u64),
                                    format!("a point names series {s} level {l}, unknown to the series log (skipped at replay)"),
                                    None,
                                );
                            }
                            off += 8 + len;
                        }
                        Err(e) => problem = Some((off as u64, e.to_string())),
                    }
                }
            } else {
                problem = Some((
                    off as u64,
                    format!("record of {len} bytes runs past the end"),
                ));
            }
        }
        if let Some((at, why)) = problem {
            let last = segs.last() == Some(&seq);
            let what = if last {
                format!("torn or corrupt tail: {why}")
            } else {
                format!("corrupt record before the last segment ({why}): sumi refuses to open without storage.wal_repair")
            };
            rep.damage(
                &path,
                Some(at),
                what,
                Some("cut the segment at the bad record (a copy is quarantined)"),
            );
            if repair {
                if at < HEADER_LEN {
                    crate::quarantine::move_aside(data_dir, &path, false)?;
                } else {
                    cut_file(data_dir, &path, at)?;
                }
                rep.repaired();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;
    use crate::{Store, StoreOptions};
    use std::sync::Arc;
    use sumi_model::Sink;
    use sumi_model::{Batch, ManualClock};

    fn build(dir: &Path) {
        let now = 1_700_000_000;
        let s = Store::open(
            StoreOptions::for_tests(dir),
            Arc::new(ManualClock::new(now)),
        )
        .unwrap();
        for round in 0..3 {
            let mut b = Batch::new();
            for i in 0..50 {
                b.push(&format!("chk.s{i}"), now - 600 + round * 10, f64::from(i));
            }
            s.append(&b).unwrap();
            s.run_maintenance().unwrap();
        }
        let mut b = Batch::new();
        b.push("chk.tail", now - 5, 1.0);
        s.append(&b).unwrap();
        drop(s); // the last batch stays in the WAL only
    }

    #[test]
    fn clean_store_checks_clean_then_damage_is_found_and_repaired() {
        let d = TempDir::new("verify");
        build(d.path());
        let r = check(d.path(), false).unwrap();
        assert_eq!(r.exit_code(), 0, "{}", r.to_text(d.path()));
        assert_eq!(r.series, 51);
        assert!(r.parts > 0 && r.blocks >= 50 && r.wal_points >= 1);

        // flip a byte in the first block of a part, cut another part short
        let mut parts = list_parts(&d.path().join("parts")).unwrap();
        parts.sort_unstable();
        let p0 = part_path(&d.path().join("parts"), parts[0]);
        let mut bytes = fs::read(&p0).unwrap();
        bytes[crate::part::format::HEADER_LEN + 1] ^= 0x40;
        fs::write(&p0, &bytes).unwrap();
        if let Some(&id) = parts.get(1) {
            let p1 = part_path(&d.path().join("parts"), id);
            let len = fs::metadata(&p1).unwrap().len();
            fs::OpenOptions::new()
                .write(true)
                .open(&p1)
                .unwrap()
                .set_len(len / 2)
                .unwrap();
        }
        // tear the WAL's last record
        let wal = d.path().join("wal");
        let last = *segment::list(&wal).unwrap().last().unwrap();
        let wp = segment::segment_path(&wal, last);
        let len = fs::metadata(&wp).unwrap().len();
        fs::OpenOptions::new()
            .write(true)
            .open(&wp)
            .unwrap()
            .set_len(len - 2)
            .unwrap();

        let r = check(d.path(), false).unwrap();
        let text = r.to_text(d.path());
        assert_eq!(r.exit_code(), 4, "{text}");
        assert!(text.contains("block crc mismatch"), "{text}");
        assert!(text.contains("torn or corrupt tail"), "{text}");
        let found = r.damage_found();
        assert!(found >= 2, "{text}");

        let r = check(d.path(), true).unwrap();
        assert_eq!(r.exit_code(), 1, "{}", r.to_text(d.path()));
        assert_eq!(r.damage_left(), 0);
        let q = fs::read_dir(crate::quarantine::dir(d.path()))
            .unwrap()
            .count();
        assert!(q >= 2, "damaged files are kept in quarantine");

        let r = check(d.path(), false).unwrap();
        assert_eq!(r.exit_code(), 0, "after repair: {}", r.to_text(d.path()));
        // and the store opens and serves the rest
        let s = Store::open(
            StoreOptions::for_tests(d.path()),
            Arc::new(ManualClock::new(1_700_000_000)),
        )
        .unwrap();
        assert_eq!(s.series_count(), 51);
        assert!(s
            .fetch("chk.s49", 1_700_000_000 - 700, 1_700_000_000, 1_700_000_000)
            .is_some());
    }

    #[test]
    fn corrupt_manifest_is_rebuilt_by_repair() {
        let d = TempDir::new("verify-manifest");
        build(d.path());
        let m = d.path().join(crate::manifest::FILE);
        let mut b = fs::read(&m).unwrap();
        b[10] ^= 1;
        fs::write(&m, &b).unwrap();
        let r = check(d.path(), false).unwrap();
        assert_eq!(r.exit_code(), 4, "{}", r.to_text(d.path()));
        let r = check(d.path(), true).unwrap();
        assert_eq!(r.exit_code(), 1, "{}", r.to_text(d.path()));
        let r = check(d.path(), false).unwrap();
        assert_eq!(r.exit_code(), 0, "{}", r.to_text(d.path()));
        assert!(r.parts > 0);
    }
}
