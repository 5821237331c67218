//! Fuzz target for tagged series names (`sumi_model::tagged`), which every plaintext,
//! pickle and relay-forwarded name holding a `;` goes through before it is stored.
//!
//! [`tagged_name`] gives the input (lossy UTF-8) to `canonical_name`. Accepted
//! outcomes, anything else panics:
//! - a name without `;` comes back as it is, borrowed;
//! - `Ok(c)`: `c` is canonical (putting it in canonical form again gives it back,
//!   borrowed); its metric is non-empty and does not start with `~`; its tags pass
//!   `validate`, none is `name`, none appears twice, and they are in carbon's order
//!   (`sort_unique` leaves them as they are);
//! - `Err`: a `TagError` with a message.

use std::borrow::Cow;

use sumi_model::tagged::{canonical_name, sort_unique, validate};

/// One name.
pub fn tagged_name(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let name: &str = &text;
    match canonical_name(Cow::Borrowed(name)) {
        Ok(c) => {
            if !name.contains(';') {
                assert!(matches!(c, Cow::Borrowed(_)), "{name:?} was copied");
                assert_eq!(c, name);
                return;
            }
            let again = canonical_name(Cow::Borrowed(&c))
                .unwrap_or_else(|e| panic!("canonical {c:?} refused: {e}"));
            assert!(
                matches!(again, Cow::Borrowed(_)) && again == c,
                "{name:?} → {c:?} → {again:?}"
            );
            let mut segments = c.split(';');
            let metric = segments.next().unwrap_or_default();
            assert!(
                !metric.is_empty() && !metric.starts_with('~'),
                "{name:?} → metric {metric:?}"
            );
            let tags: Vec<(&str, &str)> = segments
                .map(|s| {
                    s.split_once('=')
                        .unwrap_or_else(|| panic!("{name:?} → segment {s:?} without ="))
                })
                .collect();
            for (t, v) in &tags {
                validate(t, v).unwrap_or_else(|e| panic!("{name:?} → {t}={v}: {e}"));
                assert_ne!(*t, "name", "{name:?} → a name tag");
            }
            let mut sorted = tags.clone();
            sort_unique(&mut sorted);
            assert_eq!(sorted, tags, "{name:?} → tags not unique and in order");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_edge_cases_pass() {
        for input in [
            &b"cpu.load;host=a;dc=ams"[..],
            b"cpu;a=1;a=2",
            b"~~x;name=y;b=c",
            b"~;a=b",
            b";a=b",
            b"a;=b",
            b"a;b",
            b"a;b=~c",
            b"a;b!=c",
            b"plain.name",
            b"a;b-c=1;b=1",
            b"\xff;\xfe=\xfd",
        ] {
            tagged_name(input);
        }
    }
}
