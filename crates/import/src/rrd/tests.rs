//! Damaged and foreign files, built here byte by byte.

use super::*;

/// A well-formed file: `pdp_step` 60, one GAUGE "g", one AVERAGE RRA of 4 rows and one
/// MAX RRA of 2 rows of 2 steps, last update at 1_700_000_000, rows filled with 1.0..
fn file() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(b"RRD\x000003\0\0\0\0\0\0\0\0");
    f.extend_from_slice(&FLOAT_COOKIE.to_le_bytes());
    for v in [1u64, 2, 60] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.resize(STAT_HEAD_LEN, 0);
    let name = |f: &mut Vec<u8>, s: &str| {
        let mut b = [0u8; NAME_LEN];
        b[..s.len()].copy_from_slice(s.as_bytes());
        f.extend_from_slice(&b);
    };
    name(&mut f, "g");
    name(&mut f, "GAUGE");
    f.extend_from_slice(&120u64.to_le_bytes());
    f.extend_from_slice(&f64::NAN.to_le_bytes());
    f.extend_from_slice(&f64::NAN.to_le_bytes());
    f.resize(STAT_HEAD_LEN + DS_DEF_LEN, 0);
    for (cf, rows, pdp) in [("AVERAGE", 4u64, 1u64), ("MAX", 2, 2)] {
        let at = f.len();
        name(&mut f, cf);
        f.extend_from_slice(&[0; 4]);
        f.extend_from_slice(&rows.to_le_bytes());
        f.extend_from_slice(&pdp.to_le_bytes());
        f.extend_from_slice(&0.5f64.to_le_bytes());
        f.resize(at + RRA_DEF_LEN, 0);
    }
    f.extend_from_slice(&1_700_000_000u64.to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes());
    f.resize(f.len() + PDP_PREP_LEN + 2 * CDP_PREP_LEN, 0);
    f.extend_from_slice(&1u64.to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes());
    for v in 0..6 {
        f.extend_from_slice(&(1.0 + f64::from(v)).to_le_bytes());
    }
    f
}

fn kind(bytes: Vec<u8>) -> ErrorKind {
    let len = bytes.len() as u64;
    let e = Rrd::from_bytes("x.rrd", bytes).expect_err("refused");
    assert!(e.offset <= len, "{e}");
    assert!(e.to_string().starts_with("RRD file x.rrd: "), "{e}");
    e.kind
}

#[test]
fn a_well_formed_file_reads_and_fetches() {
    let r = Rrd::from_bytes("x.rrd", file()).unwrap();
    assert_eq!(r.header().pdp_step, 60);
    assert_eq!(r.ds()[0].name, "g");
    assert_eq!(r.ds()[0].dst, Dst::Gauge);
    assert_eq!(r.rras()[1].cf, Cf::Max);
    assert_eq!(r.rras()[0].cur_row, 1);
    // rows of RRA 0 in time order: slots 2, 3, 0, 1 hold 3, 4, 1, 2; the last (slot 1)
    // ends at 1_699_999_980, so the rows ending 800, 860, 920, 980 and 1040 are
    // 3, 4, 1, 2 and unknown.
    let f = r
        .fetch(Cf::Average, 1_699_999_740, 1_699_999_980, 60)
        .unwrap();
    assert_eq!(
        (f.start, f.end, f.step, f.rra),
        (1_699_999_740, 1_700_000_040, 60, 0)
    );
    let got: Vec<u64> = f.rows.iter().map(|r| r[0].to_bits()).collect();
    let want: Vec<u64> = [3.0, 4.0, 1.0, 2.0, f64::NAN]
        .iter()
        .map(|v: &f64| v.to_bits())
        .collect();
    assert_eq!(got, want);
    let rows: Vec<(i64, u64)> = r.rra_rows(0).map(|(t, v)| (t, v[0].to_bits())).collect();
    let want: Vec<(i64, u64)> = [(800, 3.0), (860, 4.0), (920, 1.0), (980, 2.0)]
        .iter()
        .map(|&(t, v): &(i64, f64)| (1_699_999_000 + t, v.to_bits()))
        .collect();
    assert_eq!(rows, want);
    // MIN is served by the one-step AVERAGE RRA, as rrdtool does
    assert_eq!(
        r.fetch(Cf::Min, 1_699_999_900, 1_700_000_000, 60)
            .unwrap()
            .rra,
        0
    );
    assert_eq!(
        r.fetch(Cf::Failures, 1_699_999_900, 1_700_000_000, 60),
        Err(FetchError::NoMatchingRra { cf: Cf::Failures })
    );
    assert!(matches!(
        r.fetch(Cf::Average, 1_700_000_000, 1_699_999_000, 60),
        Err(FetchError::EndBeforeStart { .. })
    ));
    assert!(matches!(
        r.fetch(Cf::Average, 1_700_000_000, 1_700_000_000, 0),
        Err(FetchError::ZeroResolution)
    ));
}

#[test]
fn damaged_and_foreign_files_are_refused() {
    assert!(matches!(kind(Vec::new()), ErrorKind::Cookie));
    assert!(matches!(kind(b"RRD\0".to_vec()), ErrorKind::Short { .. }));
    let mut v = file();
    v[4..8].copy_from_slice(b"0009");
    assert!(matches!(kind(v), ErrorKind::Version(_)));
    let mut be = file();
    be[16..24].copy_from_slice(&FLOAT_COOKIE.to_be_bytes());
    assert!(matches!(kind(be), ErrorKind::BigEndian));
    let mut i386 = file();
    i386[12..20].copy_from_slice(&FLOAT_COOKIE.to_le_bytes());
    assert!(matches!(kind(i386), ErrorKind::ThirtyTwoBit));
    let mut many = file();
    many[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(kind(many), ErrorKind::TooMany { .. }));
    let mut no_ds = file();
    no_ds[24..32].copy_from_slice(&0u64.to_le_bytes());
    assert!(matches!(kind(no_ds), ErrorKind::NoDataSources));
    let mut step = file();
    step[40..48].copy_from_slice(&0u64.to_le_bytes());
    assert!(matches!(kind(step), ErrorKind::ZeroStep));
    let mut dst = file();
    dst[STAT_HEAD_LEN + NAME_LEN..STAT_HEAD_LEN + NAME_LEN + 5].copy_from_slice(b"GAUGX");
    assert!(matches!(kind(dst), ErrorKind::UnknownDst { .. }));
    let rra0 = STAT_HEAD_LEN + DS_DEF_LEN;
    let mut cf = file();
    cf[rra0..rra0 + 3].copy_from_slice(b"AVX");
    assert!(matches!(kind(cf), ErrorKind::UnknownCf { .. }));
    let mut rows = file();
    rows[rra0 + 24..rra0 + 32].copy_from_slice(&0u64.to_le_bytes());
    assert!(matches!(kind(rows), ErrorKind::ZeroRows { index: 0 }));
    let mut cur = file();
    let ptr = rra0 + 2 * RRA_DEF_LEN + 16 + PDP_PREP_LEN + 2 * CDP_PREP_LEN;
    cur[ptr..ptr + 8].copy_from_slice(&4u64.to_le_bytes());
    assert!(matches!(kind(cur), ErrorKind::CurRow { index: 0, .. }));
    let mut cut = file();
    cut.pop();
    assert!(matches!(kind(cut), ErrorKind::ShortData { .. }));
    let e = Rrd::open("/nonexistent/x.rrd").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Io(_)));
}
