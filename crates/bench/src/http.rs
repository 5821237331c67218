//! A minimal HTTP/1.1 GET client for the server's `/health`, `/metrics` and `/render`.
//!
//! One request per connection (`Connection: close`), a deadline over the whole exchange,
//! a cap on the answer's size; bodies framed by `Content-Length`, chunked encoding or the
//! end of the connection. That is all a benchmark polling a local server needs, and it
//! keeps the crate free of an HTTP stack.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::error::BenchError;

/// Largest answer read: a render of a few series or a metrics page is far smaller.
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// An HTTP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Body, de-chunked.
    pub body: Vec<u8>,
}

/// `GET path` from the server at `addr` (`host:port`), within `timeout` overall.
pub fn get(addr: &str, path: &str, timeout: Duration) -> Result<Response, BenchError> {
    let fail = |reason: String| BenchError::Http {
        addr: addr.to_string(),
        path: path.to_string(),
        reason,
    };
    let deadline = Instant::now() + timeout;
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| fail(format!("resolve: {e}")))?
        .next()
        .ok_or_else(|| fail("address resolves to nothing".to_string()))?;
    let mut stream =
        TcpStream::connect_timeout(&sock, timeout).map_err(|e| fail(format!("connect: {e}")))?;
    let left = |what: &str| {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| fail(format!("timed out after {} ms {what}", timeout.as_millis())))
    };
    stream
        .set_write_timeout(Some(left("before sending")?))
        .map_err(|e| fail(format!("set timeout: {e}")))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: sumi-bench\r\nAccept: */*\r\n\
         Connection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| fail(format!("send request: {e}")))?;
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        stream
            .set_read_timeout(Some(left("waiting for the answer")?))
            .map_err(|e| fail(format!("set timeout: {e}")))?;
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(format!("read answer after {} bytes: {e}", buf.len()))),
        };
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > MAX_RESPONSE_BYTES {
            return Err(fail(format!(
                "answer larger than {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        if let Some(response) = parse_response(&buf, n == 0).map_err(fail)? {
            return Ok(response);
        }
        if n == 0 {
            return Err(fail(format!(
                "connection closed after {} bytes, in the middle of the answer",
                buf.len()
            )));
        }
    }
}

/// Parses an HTTP/1.x answer from the bytes received so far; `Ok(None)` means more bytes
/// are needed. `eof` says the peer closed, which ends a body that has no framing.
pub fn parse_response(buf: &[u8], eof: bool) -> Result<Option<Response>, String> {
    let Some(head_end) = find(buf, b"\r\n\r\n") else {
        return Ok(None);
    };
    let head =
        std::str::from_utf8(&buf[..head_end]).map_err(|_| "header is not UTF-8".to_string())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1 status line: {status_line:?}"));
    }
    let status: u16 = code
        .parse()
        .map_err(|_| format!("bad status code in {status_line:?}"))?;
    let mut content_length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("malformed header line {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| format!("bad Content-Length {value:?}"))?;
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let rest = &buf[head_end + 4..];
    let body = if chunked {
        match dechunk(rest)? {
            Some(body) => body,
            None => return Ok(None),
        }
    } else if let Some(n) = content_length {
        match rest.get(..n) {
            Some(body) => body.to_vec(),
            None => return Ok(None),
        }
    } else if eof {
        rest.to_vec()
    } else {
        return Ok(None);
    };
    Ok(Some(Response { status, body }))
}

/// Decodes a chunked body; `Ok(None)` until the last (empty) chunk has arrived.
fn dechunk(mut rest: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = find(rest, b"\r\n") else {
            return Ok(None);
        };
        let size_line = std::str::from_utf8(&rest[..line_end])
            .map_err(|_| "chunk size is not text".to_string())?;
        let size_hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| format!("bad chunk size {size_line:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            // Trailers, if any, are not needed.
            return Ok(Some(body));
        }
        let Some(data) = rest.get(..size) else {
            return Ok(None);
        };
        body.extend_from_slice(data);
        rest = &rest[size..];
        match rest.get(..2) {
            None => return Ok(None),
            Some(b"\r\n") => rest = &rest[2..],
            Some(_) => return Err("chunk not followed by CRLF".to_string()),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Percent-encodes a query-string value (everything but RFC 3986 unreserved characters).
pub fn encode_query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn content_length_framing_waits_for_the_whole_body() {
        let full = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello";
        assert_eq!(parse_response(&full[..full.len() - 2], false), Ok(None));
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        );
        let r = parse_response(full, false)
            .expect("valid")
            .expect("complete");
        assert_eq!(
            r,
            Response {
                status: 200,
                body: b"hello".to_vec()
            }
        );
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        let full = b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n\
                     3\r\nabc\r\nA;ext=1\r\n0123456789\r\n0\r\n\r\n";
        for cut in [60, 70, full.len() - 6] {
            assert_eq!(
                parse_response(&full[..cut], false),
                Ok(None),
                "cut at {cut}"
            );
        }
        let r = parse_response(full, false)
            .expect("valid")
            .expect("complete");
        assert_eq!(r.status, 404);
        assert_eq!(r.body, b"abc0123456789");
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(parse_response(bad, false).is_err());
    }

    #[test]
    fn an_unframed_body_ends_with_the_connection() {
        let r = b"HTTP/1.0 200 OK\r\n\r\nbody";
        assert_eq!(parse_response(r, false), Ok(None));
        assert_eq!(
            parse_response(r, true).expect("valid").expect("done").body,
            b"body"
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n", true).is_err());
        assert!(parse_response(b"HTTP/1.1 abc OK\r\n\r\n", true).is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", true).is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", true).is_err());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(
            encode_query_value("bench.host00001.cpu.user"),
            "bench.host00001.cpu.user"
        );
        assert_eq!(
            encode_query_value("sum(a*,b) é"),
            "sum%28a%2A%2Cb%29%20%C3%A9"
        );
    }

    #[test]
    fn get_talks_to_a_real_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while find(&req, b"\r\n\r\n").is_none() {
                let n = conn.read(&mut b).expect("read");
                assert!(n > 0, "client closed early");
                req.extend_from_slice(&b[..n]);
            }
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .expect("write");
            String::from_utf8(req).expect("text")
        });
        let r = get(&addr, "/health?x=1", Duration::from_secs(5)).expect("get");
        assert_eq!(
            r,
            Response {
                status: 200,
                body: b"ok".to_vec()
            }
        );
        let req = server.join().expect("server thread");
        assert!(req.starts_with("GET /health?x=1 HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("Connection: close"), "{req}");
    }

    #[test]
    fn get_from_a_closed_port_fails_fast() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        drop(listener);
        let err = get(&addr, "/health", Duration::from_secs(5)).expect_err("refused");
        assert!(err.to_string().contains("connect"), "{err}");
    }

    #[test]
    fn a_silent_server_hits_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let start = Instant::now();
        let err = get(&addr, "/health", Duration::from_millis(300)).expect_err("timeout");
        assert!(start.elapsed() < Duration::from_secs(3));
        assert!(err.to_string().contains("/health"), "{err}");
        drop(listener);
    }
}
