//! Hand-made files, laid out from `docs/format/whisper.md`; the differential test
//! (`tests/whisper_diff.rs`) checks files whisper itself wrote.

use super::*;

/// A file with the given archives `(seconds_per_point, points)`, laid out one after
/// the other as `whisper.create` does, all slots zero.
fn file(agg: u32, xff: f32, archives: &[(u32, u32)]) -> Vec<u8> {
    let max = archives.iter().map(|&(s, p)| s * p).max().unwrap_or(0);
    let mut out = Vec::new();
    for v in [agg, max, xff.to_bits(), archives.len() as u32] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    let mut offset = (METADATA_LEN + archives.len() * ARCHIVE_INFO_LEN) as u32;
    for &(spp, points) in archives {
        for v in [offset, spp, points] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        offset += points * POINT_LEN as u32;
    }
    out.resize(offset as usize, 0);
    out
}

fn put(bytes: &mut [u8], at: usize, t: u32, v: f64) {
    bytes[at..at + 4].copy_from_slice(&t.to_be_bytes());
    bytes[at + 4..at + 12].copy_from_slice(&v.to_be_bytes());
}

fn open(bytes: Vec<u8>) -> Result<Whisper, WhisperError> {
    Whisper::from_bytes("test.wsp", bytes)
}

#[test]
fn header_and_archives() {
    let w = open(file(4, 0.25, &[(10, 6), (60, 5)])).unwrap();
    assert_eq!(
        *w.header(),
        Header {
            aggregation: AggMethod::Max,
            max_retention: 300,
            x_files_factor: 0.25,
            archive_count: 2
        }
    );
    assert_eq!(w.archives()[0].offset, 40);
    assert_eq!(w.archives()[1].offset, 40 + 72);
    assert_eq!(w.archives()[1].retention(), 300);
}

#[test]
fn every_whisper_aggregation_type_maps_both_ways() {
    for t in 1..=8 {
        let m = aggregation_method(t).unwrap();
        assert_eq!(aggregation_type(m), Some(t));
    }
    assert_eq!(aggregation_method(0), None);
    assert_eq!(aggregation_method(9), None);
    assert_eq!(aggregation_type(AggMethod::Median), None);
}

#[test]
fn fetch_reads_current_slots_and_leaves_stale_ones_empty() {
    let mut bytes = file(1, 0.5, &[(10, 6)]);
    // base slot 0 holds 1000; slot 1 holds a stale timestamp (one lap older).
    put(&mut bytes, 28, 1000, 1.5);
    put(&mut bytes, 28 + 12, 1010 - 60, 9.0);
    put(&mut bytes, 28 + 24, 1020, -2.0);
    let w = open(bytes).unwrap();
    let got = w.fetch(990, 1030, 1030).unwrap().unwrap();
    assert_eq!((got.from, got.until, got.step), (1000, 1040, 10));
    assert_eq!(got.values, vec![Some(1.5), None, Some(-2.0), None]);
    let known: Vec<_> = w.points(0, 1030).unwrap().collect();
    assert_eq!(known, vec![(1000, 1.5), (1020, -2.0)]);
}

#[test]
fn fetch_clamps_and_refuses_like_whisper() {
    let w = open(file(1, 0.5, &[(10, 6), (60, 10)])).unwrap();
    // nothing written: the base timestamp is 0, every value empty
    let got = w.fetch(0, 10_000, 10_000).unwrap().unwrap();
    assert_eq!(got.archive, 1);
    assert_eq!((got.from, got.until), (9_420, 10_020));
    assert_eq!(got.values.len(), 10);
    let fine = w.fetch(9_950, 10_000, 10_000).unwrap().unwrap();
    assert_eq!(fine.archive, 0);
    // zero-length range: the next interval
    let one = w.fetch(9_995, 9_995, 10_000).unwrap().unwrap();
    assert_eq!((one.from, one.until, one.values.len()), (10_000, 10_010, 1));
    assert_eq!(w.fetch(10_001, 10_002, 10_000), Ok(None));
    assert_eq!(w.fetch(0, 9_399, 10_000), Ok(None));
    assert_eq!(
        w.fetch(5, 4, 10),
        Err(FetchError::InvalidInterval { from: 5, until: 4 })
    );
    assert_eq!(
        w.fetch(i64::MIN, 0, 0),
        Err(FetchError::OutOfRange(i64::MIN))
    );
}

fn kind(bytes: Vec<u8>) -> (u64, ErrorKind) {
    let e = open(bytes).unwrap_err();
    assert_eq!(e.path, Path::new("test.wsp"));
    assert!(e.to_string().starts_with("whisper file test.wsp: "), "{e}");
    (e.offset, e.kind)
}

#[test]
fn damaged_files_are_typed_errors_with_offsets() {
    let good = file(1, 0.5, &[(10, 6), (60, 10)]);
    assert!(matches!(
        kind(good[..10].to_vec()),
        (0, ErrorKind::ShortHeader { len: 10 })
    ));
    assert!(matches!(
        kind(good[..30].to_vec()),
        (28, ErrorKind::ShortArchiveTable { count: 2, .. })
    ));
    assert!(matches!(
        kind(good[..good.len() - 1].to_vec()),
        (28, ErrorKind::ArchiveOutsideFile { archive: 1, .. })
    ));
    let mut b = good.clone();
    b[3] = 9;
    assert!(matches!(kind(b), (0, ErrorKind::UnknownAggregation(9))));
    let mut b = good.clone();
    b[8..12].copy_from_slice(&1.5f32.to_bits().to_be_bytes());
    assert!(matches!(kind(b), (8, ErrorKind::XFilesFactor(_))));
    let mut b = good.clone();
    b[8..12].copy_from_slice(&f32::NAN.to_bits().to_be_bytes());
    assert!(matches!(kind(b), (8, ErrorKind::XFilesFactor(_))));
    let mut b = good.clone();
    b[12..16].copy_from_slice(&0u32.to_be_bytes());
    assert!(matches!(kind(b), (12, ErrorKind::NoArchives)));
    let mut b = good.clone();
    b[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(kind(b), (_, ErrorKind::ShortArchiveTable { .. })));
    let mut b = good.clone();
    b[20..24].copy_from_slice(&0u32.to_be_bytes());
    assert!(matches!(kind(b), (20, ErrorKind::ZeroStep { archive: 0 })));
    let mut b = good.clone();
    b[36..40].copy_from_slice(&0u32.to_be_bytes());
    assert!(matches!(
        kind(b),
        (36, ErrorKind::ZeroPoints { archive: 1 })
    ));
    let mut b = good.clone();
    b[16..20].copy_from_slice(&4u32.to_be_bytes());
    assert!(matches!(
        kind(b),
        (16, ErrorKind::ArchiveInHeader { archive: 0, .. })
    ));
    let mut b = good.clone();
    b[28..32].copy_from_slice(&50u32.to_be_bytes());
    assert!(matches!(
        kind(b),
        (
            28,
            ErrorKind::ArchivesOverlap {
                archive: 1,
                other: 0
            }
        )
    ));
    let mut b = good.clone();
    b[4..8].copy_from_slice(&601u32.to_be_bytes());
    assert!(matches!(
        kind(b),
        (
            4,
            ErrorKind::MaxRetention {
                header: 601,
                archives: 600
            }
        )
    ));
    let e = Whisper::open("/nonexistent/x.wsp").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Io(_)));
}
