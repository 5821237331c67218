//! Saved state: a restored detector continues exactly where the saved one stopped;
//! damaged or mismatched state is refused with an error. Late, repeated, out-of-order
//! and non-finite points leave the state as it was.

use sumi_anomaly::{Config, DecodeError, Detector, LARGEST};

/// A bumpy series with a few incidents, so every view and the alarm suppression have
/// something to do.
/// The single-stage design (`block = 0`, every point through the full detector), with
/// the pattern weight it was measured with; the default is the two-stage design.
fn single_stage() -> Config {
    let mut cfg = Config::default();
    cfg.set("block", "0").expect("block");
    cfg.set("pattern_weight", "0.2").expect("pattern_weight");
    cfg
}

fn series(n: usize) -> Vec<(i64, f64)> {
    let mut x: u64 = 42;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let noise = (x >> 33) as f64 / (1u64 << 31) as f64 - 0.5;
            let mut v = 50.0 + 20.0 * (i as f64 / 40.0).sin() + 5.0 * noise;
            if i % 700 == 650 {
                v += 80.0;
            }
            if (1500..1600).contains(&i) {
                v += 30.0;
            }
            let ts = i as i64 * 10 + if i > 1800 { 5000 } else { 0 };
            (ts, v)
        })
        .collect()
}

fn run(det: &mut Detector, points: &[(i64, f64)]) -> Vec<Option<f64>> {
    points.iter().map(|&(ts, v)| det.update(ts, v)).collect()
}

fn bits(scores: &[Option<f64>]) -> Vec<Option<u64>> {
    scores.iter().map(|s| s.map(f64::to_bits)).collect()
}

#[test]
fn restart_continuity() {
    let points = series(3000);
    let mut straight = Detector::new(single_stage());
    let expected = run(&mut straight, &points);
    assert!(
        expected.iter().flatten().any(|&s| s >= 0.9),
        "no incident scored"
    );
    // Restart at several points: during warm-up, right after an incident, late on.
    for cut in [1, 10, 651, 1550, 2999] {
        let mut first = Detector::new(single_stage());
        let mut got = run(&mut first, &points[..cut]);
        let saved = first.save();
        drop(first);
        let mut second = Detector::restore(single_stage(), &saved).expect("restore");
        got.extend(run(&mut second, &points[cut..]));
        assert_eq!(
            bits(&got),
            bits(&expected),
            "scores differ after a restart at {cut}"
        );
        assert_eq!(
            second.save(),
            straight.save(),
            "state differs after a restart at {cut}"
        );
    }
}

/// The same with a short season (600 s, 60 points), so the seasonal profile is learnt,
/// saved and restored mid-way, and its view scores before and after every cut.
#[test]
fn restart_continuity_with_season() {
    let mut cfg = single_stage();
    cfg.set("season", "600").expect("season");
    let points = series(3000);
    let mut straight = Detector::new(cfg.clone());
    let expected = run(&mut straight, &points);
    let mut seasonal = Detector::new(cfg.clone());
    let mut season_seen = false;
    for &(ts, v) in &points {
        seasonal.update(ts, v);
        season_seen |= seasonal.views().season > 0.0;
    }
    assert!(season_seen, "the seasonal view never scored");
    for cut in [30, 100, 130, 1550, 2999] {
        let mut first = Detector::new(cfg.clone());
        let mut got = run(&mut first, &points[..cut]);
        let mut second = Detector::restore(cfg.clone(), &first.save()).expect("restore");
        got.extend(run(&mut second, &points[cut..]));
        assert_eq!(
            bits(&got),
            bits(&expected),
            "scores differ after a restart at {cut}"
        );
        assert_eq!(
            second.save(),
            straight.save(),
            "state differs after a restart at {cut}"
        );
    }
}

#[test]
fn late_and_bad_points_are_ignored() {
    let points = series(2500);
    let mut clean = Detector::new(single_stage());
    let expected = run(&mut clean, &points);

    let mut det = Detector::new(single_stage());
    let mut got = Vec::new();
    let mut ignored = 0;
    for (i, &(ts, v)) in points.iter().enumerate() {
        got.push(det.update(ts, v));
        if i > 0 && i % 97 == 0 {
            // A replay of the current point, a point from the past, garbage values.
            for (late_ts, late_v) in [
                (ts, v + 1000.0),
                (ts - 3000, -1e9),
                (ts + 1, f64::NAN),
                (ts + 1, f64::INFINITY),
            ] {
                assert_eq!(
                    det.update(late_ts, late_v),
                    None,
                    "point {late_ts} accepted"
                );
                ignored += 1;
            }
        }
    }
    assert_eq!(bits(&got), bits(&expected));
    assert_eq!(det.ignored(), ignored);
    assert_eq!(det.seen(), points.len() as u64);
}

#[test]
fn damaged_state_is_refused() {
    let mut det = Detector::new(single_stage());
    run(&mut det, &series(700));
    let good = det.save();
    assert!(Detector::restore(single_stage(), &good).is_ok());

    // Every single flipped byte is caught (CRC or header checks).
    for at in (0..good.len()).step_by(97) {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        assert!(
            Detector::restore(single_stage(), &bad).is_err(),
            "flipped byte at {at} accepted"
        );
    }
    for len in [0, 5, good.len() / 2, good.len() - 1] {
        assert!(
            Detector::restore(single_stage(), &good[..len]).is_err(),
            "{len} bytes accepted"
        );
    }
    let mut wrong_magic = good.clone();
    wrong_magic[0] = b'X';
    assert_eq!(
        Detector::restore(single_stage(), &wrong_magic).err(),
        Some(DecodeError::BadMagic)
    );
    let other = Config {
        window: 128,
        ..single_stage()
    };
    match Detector::restore(other, &good) {
        Err(DecodeError::ConfigMismatch { what: "window", .. }) => {}
        other => panic!("restored under another window: {other:?}"),
    }
}

#[test]
fn state_is_bounded() {
    let mut det = Detector::new(single_stage());
    run(&mut det, &series(300));
    let small = det.save().len();
    run(&mut det, &series(3000)[300..]);
    let mut long = series(20_000);
    let last = det.save().len();
    assert!(
        last <= det.state_bytes(),
        "saved {last} > reported {}",
        det.state_bytes()
    );
    // Once the window is full, the state stops growing, however long the series.
    let mut fresh = Detector::new(single_stage());
    for p in &mut long {
        fresh.update(p.0, p.1);
    }
    assert_eq!(fresh.save().len(), last);
    assert!(small < last);
    assert!(det.state_bytes() < 16 * 1024, "{} bytes", det.state_bytes());
}

/// The two-stage design (`block = 16`): cuts inside a block, at a block's end, during
/// warm-up and after an incident all continue exactly; late and bad points are ignored
/// by the first stage; its state is refused under another block size or by a
/// single-stage configuration, and a flipped byte is caught.
#[test]
fn two_stage_restart_continuity() {
    let mut cfg = Config::default();
    cfg.set("block", "16").expect("block");
    cfg.set("pattern_weight", "0.1").expect("pattern_weight");
    let points = series(3000);
    let mut straight = Detector::new(cfg.clone());
    let expected = run(&mut straight, &points);
    assert!(
        expected.iter().flatten().any(|&s| s >= 0.9),
        "no incident scored"
    );
    for cut in [1, 7, 16, 651, 1550, 1807, 2999] {
        let mut first = Detector::new(cfg.clone());
        let mut got = run(&mut first, &points[..cut]);
        let saved = first.save();
        assert_eq!(saved[7], 8, "a two-stage state is version 8");
        // inside the young span (points 64 to 1,000) the young detector is saved too
        let young = u32::from_le_bytes(saved[saved.len() - 8..saved.len() - 4].try_into().unwrap());
        assert_eq!(
            young > 0,
            (65..1000).contains(&cut),
            "young bytes {young} at {cut}"
        );
        // the young detector's memory is bounded too (freed at point 1,000)
        assert!(
            first.state_bytes() < 24 * 1024,
            "{} bytes at {cut}",
            first.state_bytes()
        );
        let mut second = Detector::restore(cfg.clone(), &saved).expect("restore");
        assert_eq!(second.save(), saved, "restored state saves back the same");
        got.extend(run(&mut second, &points[cut..]));
        assert_eq!(
            bits(&got),
            bits(&expected),
            "scores differ after a restart at {cut}"
        );
        assert_eq!(second.save(), straight.save(), "state differs at {cut}");
    }

    let saved = straight.save();
    let mut other = cfg.clone();
    other.set("block", "8").expect("block");
    match Detector::restore(other, &saved) {
        Err(DecodeError::ConfigMismatch {
            what: "block",
            saved: 16,
            configured: 8,
        }) => {}
        got => panic!("restored under block 8: {got:?}"),
    }
    match Detector::restore(single_stage(), &saved) {
        Err(DecodeError::ConfigMismatch { what: "block", .. }) => {}
        got => panic!("restored single-stage: {got:?}"),
    }
    let mut single = Detector::new(single_stage());
    run(&mut single, &points[..100]);
    match Detector::restore(cfg.clone(), &single.save()) {
        Err(DecodeError::ConfigMismatch {
            what: "block",
            saved: 0,
            configured: 16,
        }) => {}
        got => panic!("single-stage state restored two-stage: {got:?}"),
    }
    for at in (0..saved.len())
        .step_by(89)
        .chain(saved.len() - 140..saved.len())
    {
        let mut bad = saved.clone();
        bad[at] ^= 0x40;
        assert!(
            Detector::restore(cfg.clone(), &bad).is_err(),
            "flipped byte at {at} accepted"
        );
    }

    // Late, repeated and non-finite points leave the state as it was.
    let mut det = Detector::new(cfg.clone());
    let mut got = Vec::new();
    for (i, &(ts, v)) in points.iter().enumerate() {
        got.push(det.update(ts, v));
        if i > 0 && i % 97 == 0 {
            for (late_ts, late_v) in [(ts, v + 1000.0), (ts - 3000, -1e9), (ts + 1, f64::NAN)] {
                assert_eq!(det.update(late_ts, late_v), None);
            }
        }
    }
    assert_eq!(bits(&got), bits(&expected));
    assert_eq!(det.ignored(), 3 * ((points.len() as u64 - 1) / 97));
    assert_eq!(det.seen(), points.len() as u64);
    assert!(det.state_bytes() < 16 * 1024, "{} bytes", det.state_bytes());
}

/// `update_explaining` without `explain` (the server's way) gives the same scores and
/// state as `update`, and the same views wherever it is asked to explain and wherever
/// the score reaches the alarm; ignored points stay ignored.
#[test]
fn two_stage_scores_alike_without_explanations() {
    let cfg = Config::default();
    let points = series(3000);
    let mut explained = Detector::new(cfg.clone());
    let mut lean = Detector::new(cfg.clone());
    let (mut alarms, mut asked) = (0, 0);
    for (i, &(ts, v)) in points.iter().enumerate() {
        let explain = i % 5 == 0;
        let want = explained.update(ts, v);
        let got = lean.update_explaining(ts, v, explain);
        assert_eq!(
            got.map(f64::to_bits),
            want.map(f64::to_bits),
            "score at {i}"
        );
        if want.is_some_and(|s| s >= cfg.alarm) {
            alarms += 1;
            assert_eq!(lean.views(), explained.views(), "views at the alarm at {i}");
        } else if explain {
            asked += 1;
            assert_eq!(lean.views(), explained.views(), "views asked for at {i}");
        }
        if i % 89 == 0 {
            assert_eq!(lean.update_explaining(ts, v + 1.0, false), None);
            assert_eq!(explained.update(ts, v + 1.0), None);
        }
    }
    assert!(
        alarms > 0 && asked > 0,
        "{alarms} alarms, {asked} explained"
    );
    assert_eq!(lean.save(), explained.save());
    assert_eq!(lean.ignored(), explained.ignored());
}

/// The first stage keeps its time with a sentinel and counts the scored points since
/// its last alarm in 32 bits: a point at `i64::MIN` seconds is ignored, and a saved
/// state holding either value out of that range is refused (it could not be saved
/// back to the same bytes).
#[test]
fn two_stage_narrow_fields_are_checked() {
    let cfg = Config::default();
    let mut det = Detector::new(cfg.clone());
    assert_eq!(det.update(i64::MIN, 1.0), None);
    assert_eq!((det.seen(), det.ignored()), (0, 1));
    det.update(i64::MIN + 1, 1.0);
    assert_eq!(det.seen(), 1);
    let points = series(200);
    let mut det = Detector::new(cfg.clone());
    run(&mut det, &points);
    let saved = det.save();
    // the first stage's tail: since_alarm u64 | has_first_scored u8 | first_scored i64
    // | hi f64 | lo f64, then the range (has_range u8 | top f64 | bottom f64 | half_range f64 | settled u8),
    // the young detector (its bytes | their length u32) | crc u32
    let n = saved.len() - 4;
    let young = u32::from_le_bytes(saved[n - 4..n].try_into().unwrap()) as usize;
    assert!(young > 0, "a young detector at point 200");
    let since_alarm_at = n - 4 - young - 26 - 16 - 9 - 8;
    let with = |at: usize, bytes: &[u8]| {
        let mut b = saved[..saved.len() - 4].to_vec();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    };
    let ok = with(since_alarm_at, &u64::from(u32::MAX).to_le_bytes());
    let restored = Detector::restore(cfg.clone(), &ok).expect("since_alarm u32::MAX");
    assert_eq!(restored.save(), ok);
    let far = with(since_alarm_at, &(1u64 << 32).to_le_bytes());
    assert!(matches!(
        Detector::restore(cfg.clone(), &far),
        Err(DecodeError::Invalid(..))
    ));
    // the first stage's last_ts: the 9 bytes after its block (u32), which follows
    // the full detector's first_scored (9 bytes) — found by its value
    let last = points.last().expect("points").0.to_le_bytes();
    let at = saved
        .windows(9)
        .rposition(|w| w[0] == 1 && w[1..] == last)
        .expect("first-stage last_ts");
    let mut later = vec![1u8];
    later.extend_from_slice(&(points.last().expect("points").0 + 1).to_le_bytes());
    Detector::restore(cfg.clone(), &with(at, &later)).expect("another last_ts");
    let mut min = vec![1u8];
    min.extend_from_slice(&i64::MIN.to_le_bytes());
    assert!(matches!(
        Detector::restore(cfg.clone(), &with(at, &min)),
        Err(DecodeError::Invalid(..))
    ));
}

/// The version-8 bytes as an older version wrote them: without the young detector
/// (its bytes and their length, before the CRC) for version 7, also without the
/// range (26 bytes more) for version 6, and without the block's extremes (16 bytes
/// more) for version 5; version byte set, CRC recomputed.
fn as_version(v8: &[u8], version: u8) -> Vec<u8> {
    let n = v8.len() - 4;
    let young = u32::from_le_bytes(v8[n - 4..n].try_into().unwrap()) as usize;
    let cut = 4
        + young
        + match version {
            5 => 26 + 16,
            6 => 26,
            _ => 0,
        };
    let mut out = v8[..n - cut].to_vec();
    out[7] = version;
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A two-stage state saved before the range view (version 6) is still read, with the
/// long window's smallest and largest block mean as the range: the scores continue
/// in [0, 1], the state saves as version 7, and that version 7 less its range is
/// the version 6 read. On a smooth series (whose block means span almost its whole
/// range) the narrower range raises no alarm that the detector that never stopped
/// did not raise.
#[test]
fn two_stage_version_6_state_is_read() {
    let mut cfg = Config::default();
    cfg.set("block", "16").expect("block");
    let smooth: Vec<(i64, f64)> = (0..3000)
        .map(|i| (i * 60, 100.0 + 10.0 * (i as f64 * 0.01).sin()))
        .collect();
    for (points, is_smooth) in [(series(3000), false), (smooth, true)] {
        let mut straight = Detector::new(cfg.clone());
        let expected = run(&mut straight, &points);
        for cut in [16 * 40, 16 * 100, 16 * 101 + 5] {
            let mut first = Detector::new(cfg.clone());
            let mut got = run(&mut first, &points[..cut]);
            let old = as_version(&first.save(), 6);
            let mut second = Detector::restore(cfg.clone(), &old).expect("restore version 6");
            let resaved = second.save();
            assert_eq!(resaved[7], 8, "saved back as version 8");
            assert_eq!(as_version(&resaved, 6), old);
            got.extend(run(&mut second, &points[cut..]));
            assert!(got.iter().flatten().all(|s| (0.0..=1.0).contains(s)));
            assert_eq!(got.len(), expected.len());
            if is_smooth {
                for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                    let alarm = |s: &Option<f64>| s.is_some_and(|s| s >= cfg.alarm);
                    assert!(
                        !alarm(g) || alarm(e),
                        "an alarm at {i} after a cut at {cut}"
                    );
                }
            }
        }
    }
}

/// A two-stage state saved before the young detector (version 7) is still read: inside
/// the young span (points 64 to 1,000) the series goes on without one, its scores in
/// [0, 1]; outside the span
/// (no young detector to lose) the scores are exactly those of the detector that
/// never stopped. The state saves back as version 8, which, less the young detector,
/// is the version 7 read. A young detector saved under settings whose young span
/// does not hold the series' point is refused (then relearnt, as after any
/// settings change).
#[test]
fn two_stage_version_7_state_is_read() {
    let cfg = Config::default();
    let points = series(3000);
    let mut straight = Detector::new(cfg.clone());
    let expected = run(&mut straight, &points);
    for cut in [40, 16 * 20 + 3, 999, 16 * 100 + 5] {
        let mut first = Detector::new(cfg.clone());
        let mut got = run(&mut first, &points[..cut]);
        let saved = first.save();
        let old = as_version(&saved, 7);
        assert_eq!(old[7], 7);
        let mut second = Detector::restore(cfg.clone(), &old).expect("restore version 7");
        let resaved = second.save();
        assert_eq!(resaved[7], 8, "saved back as version 8");
        assert_eq!(as_version(&resaved, 7), old);
        let young_lost = (65..1000).contains(&cut);
        assert_eq!(resaved.len() < saved.len(), young_lost, "cut {cut}");
        got.extend(run(&mut second, &points[cut..]));
        assert!(got.iter().flatten().all(|s| (0.0..=1.0).contains(s)));
        assert_eq!(got.len(), expected.len());
        if !young_lost {
            assert_eq!(bits(&got), bits(&expected), "cut {cut}");
        }
    }

    let mut det = Detector::new(cfg.clone());
    run(&mut det, &points[..500]);
    let saved = det.save();
    for (key, value) in [("young", "0"), ("young", "400"), ("young_from", "600")] {
        let mut other = cfg.clone();
        other.set(key, value).expect(key);
        match Detector::restore(other, &saved) {
            Err(DecodeError::Invalid(what, _)) => {
                assert!(what.contains("young"), "{what}")
            }
            got => panic!("restored under {key} = {value}: {got:?}"),
        }
    }
}

/// A young detector saved under other young settings (`young_window`,
/// `young_table_bits`: session 13 changed their defaults) does not cost the series
/// its state: it goes on without the young detector, as a version-7 state does, and
/// its scores stay in [0, 1]; the second stage and the first are those saved.
#[test]
fn two_stage_young_detector_under_other_settings_is_dropped() {
    let points = series(1500);
    let mut old = Config::default();
    old.set("young_window", "512").expect("young_window");
    old.set("young_table_bits", "11").expect("young_table_bits");
    let mut det = Detector::new(old);
    run(&mut det, &points[..500]);
    let saved = det.save();
    let n = saved.len();
    let young = u32::from_le_bytes(saved[n - 8..n - 4].try_into().unwrap());
    assert!(young > 0, "a young detector at point 500");
    let cfg = Config::default();
    let mut restored = Detector::restore(cfg.clone(), &saved).expect("restored");
    assert_eq!(restored.seen(), 500);
    let resaved = restored.save();
    let n = resaved.len();
    assert_eq!(
        u32::from_le_bytes(resaved[n - 8..n - 4].try_into().unwrap()),
        0,
        "no young detector after the restore"
    );
    let got = run(&mut restored, &points[500..]);
    assert!(got.iter().flatten().all(|s| (0.0..=1.0).contains(s)));
    assert!(got.iter().flatten().count() > 900, "scored on");
    // under the settings it was saved with, the young detector comes back
    let mut same = Config::default();
    same.set("young_window", "512").expect("young_window");
    same.set("young_table_bits", "11")
        .expect("young_table_bits");
    let back = Detector::restore(same, &saved).expect("restored").save();
    assert_eq!(back, saved);
}

/// A two-stage state saved before the block's extremes were kept (version 5) is still
/// read: the scores continue in [0, 1] and the state saves as version 7, which, less
/// the extremes and the range, is the version 5 read.
#[test]
fn two_stage_version_5_state_is_read() {
    let mut cfg = Config::default();
    cfg.set("block", "16").expect("block");
    let points = series(3000);
    let mut straight = Detector::new(cfg.clone());
    let expected = run(&mut straight, &points);
    for cut in [16 * 40, 16 * 100, 16 * 101 + 5] {
        let mut first = Detector::new(cfg.clone());
        let mut got = run(&mut first, &points[..cut]);
        let old = as_version(&first.save(), 5);
        assert_eq!(old[7], 5);
        let mut second = Detector::restore(cfg.clone(), &old).expect("restore version 5");
        let resaved = second.save();
        assert_eq!(resaved[7], 8, "saved back as version 8");
        assert_eq!(as_version(&resaved, 5), old);
        got.extend(run(&mut second, &points[cut..]));
        assert!(got.iter().flatten().all(|s| (0.0..=1.0).contains(s)));
        assert_eq!(got.len(), expected.len());
    }
}

/// The context table is allocated at its first insertion: before it the detector
/// holds 2 KiB less, saves the same bytes as with a table of zeros, and a restored
/// detector (table empty or not) saves back to the same bytes and scores alike.
#[test]
fn the_context_table_is_allocated_when_first_used() {
    let points = series(400);
    for cfg in [single_stage(), Config::default()] {
        let table = 1usize << cfg.table_bits;
        let mut det = Detector::new(cfg.clone());
        let fresh = det.state_bytes();
        // a point or two: nothing inserted yet in either design
        run(&mut det, &points[..2]);
        let early = det.save();
        let restored = Detector::restore(cfg.clone(), &early).expect("restore");
        assert_eq!(restored.save(), early, "an empty table saves as zeros");
        run(&mut det, &points[2..]);
        assert!(
            det.state_bytes() >= fresh + table,
            "{} against {fresh} + {table}",
            det.state_bytes()
        );
        // the restored early detector goes on exactly as the one that never stopped
        let mut again = Detector::restore(cfg.clone(), &early).expect("restore");
        let mut straight = Detector::new(cfg.clone());
        let want = bits(&run(&mut straight, &points));
        let got = bits(&run(&mut again, &points[2..]));
        assert_eq!(got, want[2..].to_vec());
        let late = det.save();
        let back = Detector::restore(cfg, &late).expect("restore");
        assert_eq!(back.save(), late);
    }
}

/// Values near the largest float neither panic nor give scores outside [0, 1]
/// (alternating ±`f64::MAX` made the first stage's deviation infinite and its
/// clipping panic): beyond ±`LARGEST` they are ignored as non-finite ones are, up to
/// it they are scored, in both designs, and the state saves and restores.
#[test]
fn extreme_values_are_scored_or_ignored_without_panic() {
    for cfg in [single_stage(), Config::default()] {
        let mut det = Detector::new(cfg.clone());
        for i in 0..2000i64 {
            let v = if i % 2 == 0 { f64::MAX } else { -f64::MAX };
            assert_eq!(det.update(i * 60, v), None, "{v} at {i}");
        }
        assert_eq!(det.ignored(), 2000);
        for i in 2000..4000i64 {
            let v = if i % 2 == 0 { LARGEST } else { -LARGEST };
            let v = if i % 300 == 0 { v / 3.0 } else { v };
            if let Some(s) = det.update(i * 60, v) {
                assert!((0.0..=1.0).contains(&s), "score {s} at {i}");
            }
        }
        assert_eq!(det.ignored(), 2000);
        assert_eq!(det.seen(), 2000);
        let saved = det.save();
        let back = Detector::restore(cfg, &saved).expect("restore");
        assert_eq!(back.save(), saved);
    }
}
