//! Differential test: 4,000 random lines, each with what carbon 1.1.10 made of it on
//! CPython 3.11 (`data/gen_carbon_lines.py` wrote `data/carbon_lines.txt` using carbon's
//! own expressions). The parser must agree on every one: same point, same bits, or a
//! refusal for the same reason.

use sumi_ingest::{parse_line, LineError, Reason};
use sumi_model::name::normalize;

const NOW: i64 = 1_234_567_890;

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

#[test]
fn parser_agrees_with_carbon_on_every_fixture_line() {
    let fixture = include_str!("data/carbon_lines.txt");
    let mut checked = 0;
    let mut accepted = 0;
    for (n, row) in fixture.lines().enumerate() {
        let (line_hex, want) = row.split_once('\t').expect("tab");
        let line = unhex(line_hex);
        let got = parse_line(&line, NOW);
        let ctx = format!(
            "fixture line {}: {:?} -> {got:?}, carbon: {want}",
            n + 1,
            String::from_utf8_lossy(&line)
        );
        let mut want_fields = want.split(' ');
        match want_fields.next().unwrap() {
            "ok" => {
                let raw_name = unhex(want_fields.next().unwrap());
                let bits = u64::from_str_radix(want_fields.next().unwrap(), 16).unwrap();
                let ts = match want_fields.next().unwrap() {
                    "now" => Some(NOW),
                    // Python's int has no bound; sumi's seconds are an i64
                    t => t.parse::<i64>().ok(),
                };
                match (normalize(&raw_name), ts) {
                    (_, None) => {
                        assert!(
                            matches!(got, Err(LineError::TimestampOutOfRange(_))),
                            "{ctx}"
                        )
                    }
                    (Ok(name), Some(ts)) => {
                        let p = got.expect(&ctx);
                        assert_eq!(p.name, name.path, "{ctx}");
                        assert_eq!(p.value.to_bits(), bits, "{ctx}");
                        assert_eq!(p.ts, ts, "{ctx}");
                        accepted += 1;
                    }
                    // carbon takes any name; sumi refuses what normalize refuses
                    (Err(e), Some(_)) => assert_eq!(got, Err(LineError::Name(e)), "{ctx}"),
                }
            }
            "blank" => assert_eq!(got, Err(LineError::Blank), "{ctx}"),
            "bad_timestamp" => {
                assert!(
                    matches!(got, Err(LineError::NonFiniteTimestamp(_))),
                    "{ctx}"
                )
            }
            reason => {
                let want_reason = Reason::ALL
                    .iter()
                    .find(|r| r.label() == reason)
                    .expect("known reason");
                assert_eq!(
                    got.err().and_then(|e| e.rejection()),
                    Some(*want_reason),
                    "{ctx}"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 4000);
    assert!(
        accepted > 2000,
        "the fixture exercises mostly good lines ({accepted})"
    );
}
