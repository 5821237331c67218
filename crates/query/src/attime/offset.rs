//! The offset half of a time expression (`-1d`, `+2h30min`), graphite-web's
//! `parseTimeOffset`.
//!
//! An optional sign (`+` or `-`; a leading digit means `+`) applies to every
//! `<number><unit>` pair that follows. A unit is matched on its first letters, in this
//! order: `s…` seconds, `min…` minutes, `h…` hours, `d…` days, `w…` weeks, `mon…`
//! months of 30 days, `y…` years of 365 days. So `m` and `mo` are refused, while `sec`,
//! `hours` and even `sxyz` are accepted.

use super::{quote, AtTimeError};

/// The largest span a Python `timedelta` holds: 999999999 days (and a day less a
/// second); graphite-web raises beyond it.
const MAX_SECONDS: i64 = 999_999_999 * 86_400 + 86_399;

/// Parses an offset such as `-1d` or `5min` into seconds, exactly as graphite-web's
/// `parseTimeOffset` (which functions such as `timeShift` and `summarize` use for their
/// interval arguments). The text is taken as is: no lower-casing, no stripping.
pub fn parse_time_offset(s: &str) -> Result<i64, AtTimeError> {
    let chars: Vec<char> = s.chars().collect();
    parse_chars(&chars, s)
}

/// [`parse_time_offset`] on the characters of an already cleaned expression; `input`
/// is the whole original text, for error messages.
pub(super) fn parse_chars(offset: &[char], input: &str) -> Result<i64, AtTimeError> {
    let Some(&first) = offset.first() else {
        return Ok(0);
    };
    let (sign, mut rest) = if first.is_ascii_digit() {
        (1i64, offset)
    } else if first == '+' {
        (1, &offset[1..])
    } else if first == '-' {
        (-1, &offset[1..])
    } else {
        return Err(AtTimeError::InvalidOffset {
            input: quote(input),
        });
    };

    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return Err(AtTimeError::NotANumber {
                input: quote(input),
                text: quote(&rest.iter().collect::<String>()),
            });
        }
        let number: String = rest[..digits].iter().collect();
        let overflow = || AtTimeError::Overflow {
            input: quote(input),
        };
        let num: i64 = number.parse().map_err(|_| overflow())?;
        rest = &rest[digits..];

        let letters = rest.iter().take_while(|c| c.is_alphabetic()).count();
        let unit: String = rest[..letters].iter().collect();
        rest = &rest[letters..];
        let seconds = unit_seconds(&unit).ok_or_else(|| AtTimeError::InvalidUnit {
            input: quote(input),
            unit: quote(&unit),
        })?;
        let term = num.checked_mul(seconds).ok_or_else(overflow)?;
        total = total.checked_add(term).ok_or_else(overflow)?;
        if total > MAX_SECONDS {
            return Err(overflow());
        }
    }
    Ok(sign * total)
}

/// graphite-web's `getUnitString`, with months and years already turned into days.
fn unit_seconds(unit: &str) -> Option<i64> {
    const DAY: i64 = 86_400;
    if unit.starts_with('s') {
        Some(1)
    } else if unit.starts_with("min") {
        Some(60)
    } else if unit.starts_with('h') {
        Some(3_600)
    } else if unit.starts_with('d') {
        Some(DAY)
    } else if unit.starts_with('w') {
        Some(7 * DAY)
    } else if unit.starts_with("mon") {
        Some(30 * DAY)
    } else if unit.starts_with('y') {
        Some(365 * DAY)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_by_first_letters() {
        assert_eq!(parse_time_offset("-5min"), Ok(-300));
        assert_eq!(parse_time_offset("5minutes"), Ok(300));
        assert_eq!(parse_time_offset("+1h"), Ok(3_600));
        assert_eq!(parse_time_offset("-2d"), Ok(-172_800));
        assert_eq!(parse_time_offset("-1w"), Ok(-604_800));
        assert_eq!(parse_time_offset("-1mon"), Ok(-30 * 86_400));
        assert_eq!(parse_time_offset("-1y"), Ok(-365 * 86_400));
        assert_eq!(parse_time_offset("10sec"), Ok(10));
        assert_eq!(parse_time_offset("-1sxyz"), Ok(-1));
        assert_eq!(parse_time_offset("-1hello"), Ok(-3_600));
        assert_eq!(parse_time_offset("+1hour2sec"), Ok(3_602));
        assert_eq!(parse_time_offset("-1h30min"), Ok(-5_400));
        assert_eq!(parse_time_offset(""), Ok(0));
        assert_eq!(parse_time_offset("-"), Ok(0));
    }

    #[test]
    fn refusals() {
        assert!(
            matches!(parse_time_offset("-5m"), Err(AtTimeError::InvalidUnit { unit, .. }) if unit == "m")
        );
        assert!(matches!(
            parse_time_offset("-5mo"),
            Err(AtTimeError::InvalidUnit { .. })
        ));
        assert!(
            matches!(parse_time_offset("-5"), Err(AtTimeError::InvalidUnit { unit, .. }) if unit.is_empty())
        );
        assert!(matches!(
            parse_time_offset("-h"),
            Err(AtTimeError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_time_offset("-1h-30min"),
            Err(AtTimeError::NotANumber { .. })
        ));
        assert!(matches!(
            parse_time_offset("-1.5h"),
            Err(AtTimeError::InvalidUnit { .. })
        ));
        assert!(matches!(
            parse_time_offset("x1h"),
            Err(AtTimeError::InvalidOffset { .. })
        ));
        // case is kept: graphite-web's functions pass the text as written
        assert!(matches!(
            parse_time_offset("1D"),
            Err(AtTimeError::InvalidUnit { .. })
        ));
    }

    #[test]
    fn timedelta_limits() {
        assert_eq!(parse_time_offset("999999999d"), Ok(999_999_999 * 86_400));
        assert!(matches!(
            parse_time_offset("1000000000d"),
            Err(AtTimeError::Overflow { .. })
        ));
        assert!(matches!(
            parse_time_offset("99999999999999999999s"),
            Err(AtTimeError::Overflow { .. })
        ));
    }
}
