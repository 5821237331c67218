//! Request parameters of GrowthForecast's API: the query string plus a body that is
//! form-encoded (`curl -d`, LWP's `post`) or `multipart/form-data` (`curl -F`, the
//! example in GrowthForecast's own documentation). Parameters keep their order, so a
//! repeated one (`description`) can be read last-wins, as Perl's `param` in list
//! context followed by `[-1]`.

use axum::http::{header, HeaderMap};

use crate::params::Params;

/// A body that could not be read as a form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    #[error("multipart body without a boundary in its Content-Type")]
    NoBoundary,
    #[error("multipart body is malformed: {0}")]
    Malformed(&'static str),
}

/// The parameters of a request: query string, then the body's fields.
pub fn parameters(
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Result<Params, FormError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let lower = ct.to_ascii_lowercase();
    if lower.starts_with("multipart/form-data") {
        let boundary = boundary(ct).ok_or(FormError::NoBoundary)?;
        let mut encoded = String::new();
        if let Some(q) = query {
            encoded.push_str(q);
        }
        for (name, value) in multipart(body, &boundary)? {
            let mut ser = form_urlencoded::Serializer::new(String::new());
            ser.append_pair(&name, &value);
            if !encoded.is_empty() {
                encoded.push('&');
            }
            encoded.push_str(&ser.finish());
        }
        return Ok(Params::parse(Some(&encoded), None));
    }
    let form = (!body.is_empty() && !lower.starts_with("application/json")).then_some(body);
    Ok(Params::parse(query, form))
}

fn boundary(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|part| {
        let (k, v) = part.trim().split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_string())
            .filter(|b| !b.is_empty())
    })
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > hay.len() {
        return None;
    }
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The `(name, value)` fields of a multipart body (file parts are read as text).
fn multipart(body: &[u8], boundary: &str) -> Result<Vec<(String, String)>, FormError> {
    let delim = format!("--{boundary}");
    let delim = delim.as_bytes();
    let mut out = Vec::new();
    let mut pos =
        find(body, delim, 0).ok_or(FormError::Malformed("no boundary line"))? + delim.len();
    loop {
        let rest = body.get(pos..).ok_or(FormError::Malformed("truncated"))?;
        if rest.starts_with(b"--") {
            return Ok(out);
        }
        // the part starts after the line break that ends the boundary line
        let start = pos
            + if rest.starts_with(b"\r\n") {
                2
            } else if rest.starts_with(b"\n") {
                1
            } else {
                return Err(FormError::Malformed("no line break after a boundary"));
            };
        let next = find(body, delim, start).ok_or(FormError::Malformed("no closing boundary"))?;
        let part = body
            .get(start..next)
            .ok_or(FormError::Malformed("truncated"))?;
        let part = part
            .strip_suffix(b"\r\n")
            .or_else(|| part.strip_suffix(b"\n"))
            .unwrap_or(part);
        let (head, value) = match find(part, b"\r\n\r\n", 0) {
            Some(i) => (&part[..i], &part[i + 4..]),
            None => match find(part, b"\n\n", 0) {
                Some(i) => (&part[..i], &part[i + 2..]),
                None => return Err(FormError::Malformed("a part without headers")),
            },
        };
        let head = String::from_utf8_lossy(head);
        let name = head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            if !k.trim().eq_ignore_ascii_case("content-disposition") {
                return None;
            }
            v.split(';').find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                (k.trim() == "name").then(|| v.trim().trim_matches('"').to_string())
            })
        });
        if let Some(name) = name {
            out.push((name, String::from_utf8_lossy(value).into_owned()));
        }
        pos = next + delim.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(ct: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        h
    }

    #[test]
    fn curl_f_body() {
        let body = b"--------------------------abc\r\nContent-Disposition: form-data; name=\"number\"\r\n\r\n10\r\n--------------------------abc\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\nline 1\r\nline 2\r\n--------------------------abc--\r\n";
        let p = parameters(
            &headers("multipart/form-data; boundary=------------------------abc"),
            Some("mode=count"),
            body,
        )
        .unwrap();
        assert_eq!(p.get("number"), Some("10"));
        assert_eq!(p.get("mode"), Some("count"));
        assert_eq!(p.get("description"), Some("line 1\r\nline 2"));
    }

    #[test]
    fn urlencoded_body() {
        let p = parameters(
            &headers("application/x-www-form-urlencoded"),
            None,
            b"number=3&color=%23336699",
        )
        .unwrap();
        assert_eq!(p.get("color"), Some("#336699"));
        let p = parameters(&HeaderMap::new(), None, b"number=4").unwrap();
        assert_eq!(p.get("number"), Some("4"));
    }

    #[test]
    fn bad_multipart() {
        let h = headers("multipart/form-data");
        assert_eq!(parameters(&h, None, b"x"), Err(FormError::NoBoundary));
        let h = headers("multipart/form-data; boundary=zz");
        assert!(parameters(&h, None, b"no boundary here").is_err());
        assert!(parameters(
            &h,
            None,
            b"--zz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1"
        )
        .is_err());
        assert!(parameters(&h, None, b"--zz\r\nno headers--zz--").is_err());
        // an empty form is fine
        assert_eq!(
            parameters(&h, None, b"--zz--\r\n").unwrap().pairs().count(),
            0
        );
    }
}
