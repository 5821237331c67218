//! Access control: bearer tokens (or HTTP basic with the token as the password),
//! separately for reads, writes and admin endpoints.
//!
//! Every request is put in one [`Access`] class by method and path ([`classify`]):
//!
//! | class | endpoints |
//! | --- | --- |
//! | open | `/health`, `/ready`; Prometheus `/metrics` (a `GET` without `query`) unless `public_metrics` is off |
//! | admin | deletes: `/tags/delSeries`, GrowthForecast's `/json/delete/...`, `/delete/...`, `/delete_complex/...`, series delete and rename under `/api/v1/series/`, anything under `/admin/` |
//! | write | `/api/v0/tsdb`, `/api/v1/write`, `/tags/tagSeries`, `/tags/tagMultiSeries`, and every other `POST`/`PUT`/`PATCH`/`DELETE` (GrowthForecast's `POST /api/...`, `/json/create`, `/json/edit`, `/vrule/api`) |
//! | read | everything else: `/render`, `/metrics/*`, `/tags/*` lookups, `/functions`, `/version`, graph images, UI pages (`POST` included for the endpoints graphite-web answers on `POST`) |
//!
//! Which tokens a class accepts ([`Auth::new`]): reads take read or admin tokens, writes
//! take write or admin tokens, admin endpoints take admin tokens (or write tokens when
//! no admin token is configured). A class whose own list is empty is open — except
//! admin, which is open only when no token of any kind is configured, so that turning
//! authentication on never leaves deletes anonymous.
//!
//! A refused request gets 401 (no or unknown credentials, with `WWW-Authenticate`
//! challenges for both schemes) or 403 (a valid token of another class); the body is a
//! fixed sentence that names no series and counts nothing. Tokens are compared in
//! constant time: the time taken depends on the length of what the client sent, never
//! on how much of a configured token it matched or on which token matched.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use parking_lot::Mutex;
use subtle::{Choice, ConstantTimeEq};

/// What a request does, which decides the tokens it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Needs nothing: health checks and (by default) the Prometheus exposition.
    Open,
    /// Reads series, names or the UI.
    Read,
    /// Adds or changes data.
    Write,
    /// Deletes or renames.
    Admin,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Open => "open",
            Access::Read => "read",
            Access::Write => "write",
            Access::Admin => "use admin endpoints",
        }
    }
}

/// Paths that delete (any method).
const ADMIN_PREFIXES: [&str; 6] = [
    "/tags/delSeries",
    "/api/v1/series/",
    "/json/delete/",
    "/delete/",
    "/delete_complex/",
    "/admin/",
];

/// Paths that write (any method).
const WRITE_PATHS: [&str; 4] = [
    "/api/v0/tsdb",
    "/api/v1/write",
    "/tags/tagSeries",
    "/tags/tagMultiSeries",
];

/// Paths graphite-web (and Grafana) use with `POST` to read: a `POST` elsewhere writes.
const READ_POST_PREFIXES: [&str; 6] = [
    "/render",
    "/metrics",
    "/tags/",
    "/functions",
    "/version",
    "/internal/v0",
];

/// The class of a request. `path` is the URI path as sent; it is percent-decoded here
/// so that an escaped letter cannot move a request into a weaker class.
pub fn classify(method: &Method, path: &str, query: Option<&str>, public_metrics: bool) -> Access {
    let decoded = percent_decode(path);
    let path = decoded
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(&decoded);
    if path == "/health" || path == "/ready" {
        return Access::Open;
    }
    if ADMIN_PREFIXES.iter().any(|p| starts_with_segment(path, p)) {
        return Access::Admin;
    }
    if WRITE_PATHS.iter().any(|p| starts_with_segment(path, p)) {
        return Access::Write;
    }
    let reading_method = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if path == "/metrics" && reading_method && !has_param(query, "query") {
        // the Prometheus exposition; with `query` it is graphite-web's find
        return if public_metrics {
            Access::Open
        } else {
            Access::Read
        };
    }
    if reading_method
        || READ_POST_PREFIXES
            .iter()
            .any(|p| starts_with_segment(path, p))
    {
        Access::Read
    } else {
        Access::Write
    }
}

/// `path` starts with `prefix` at a segment boundary (`/render` matches `/render` and
/// `/render/x`, not `/renderer`); a prefix ending in `/` matches anything under it.
fn starts_with_segment(path: &str, prefix: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// Whether the query string has a parameter named `name` (as Django reads it).
fn has_param(query: Option<&str>, name: &str) -> bool {
    query.is_some_and(|q| form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == name))
}

/// `%XX` escapes decoded (bad escapes kept as they are); invalid UTF-8 replaced.
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A configured token; its bytes never reach `Debug` output or logs.
#[derive(Clone)]
struct Secret(Box<[u8]>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Equal to `presented`, in time that depends only on `presented.len()`.
    fn matches(&self, presented: &[u8]) -> Choice {
        let mut same = (presented.len() as u64).ct_eq(&(self.0.len() as u64));
        for (i, b) in presented.iter().enumerate() {
            // past the end of the secret compare with 0; the length check has failed
            let want = self.0.get(i).copied().unwrap_or(0);
            same &= b.ct_eq(&want);
        }
        same
    }
}

/// Whether any of `tokens` equals `presented`; every token is compared.
fn any_matches(tokens: &[Secret], presented: &[u8]) -> bool {
    let mut hit = Choice::from(0);
    for t in tokens {
        hit |= t.matches(presented);
    }
    bool::from(hit)
}

/// The tokens, as configured (`[auth]` in sumi.toml, inline or from files).
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    pub read_tokens: Vec<String>,
    pub write_tokens: Vec<String>,
    pub admin_tokens: Vec<String>,
    /// Whether Prometheus `/metrics` stays open when reads need a token. Default on:
    /// scrapers rarely carry credentials, and the exposition holds counters, not series
    /// names.
    pub public_metrics: bool,
}

/// Why a token was refused when the configuration was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("auth.{list}: token {index} is empty")]
    Empty { list: &'static str, index: usize },
    #[error(
        "auth.{list}: token {index} is {len} characters; use at least {MIN_TOKEN_CHARS} \
         (for example the output of `openssl rand -hex 32`)"
    )]
    TooShort {
        list: &'static str,
        index: usize,
        len: usize,
    },
    #[error(
        "auth.{list}: token {index} holds whitespace or a control character, which cannot \
         travel in an Authorization header"
    )]
    BadChar { list: &'static str, index: usize },
}

/// The shortest token accepted: 16 characters of hex are 64 bits.
pub const MIN_TOKEN_CHARS: usize = 16;

fn secrets(list: &'static str, tokens: &[String]) -> Result<Vec<Secret>, AuthError> {
    tokens
        .iter()
        .enumerate()
        .map(|(index, t)| {
            if t.is_empty() {
                return Err(AuthError::Empty { list, index });
            }
            if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(AuthError::BadChar { list, index });
            }
            let len = t.chars().count();
            if len < MIN_TOKEN_CHARS {
                return Err(AuthError::TooShort { list, index, len });
            }
            Ok(Secret(t.as_bytes().into()))
        })
        .collect()
}

/// Why a request was refused (the `reason` label of the refusal counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header, or one in a scheme other than Bearer and Basic.
    Missing,
    /// Credentials that match no configured token.
    Invalid,
    /// A valid token that this class does not accept.
    Forbidden,
}

impl Refusal {
    const ALL: [Refusal; 3] = [Refusal::Missing, Refusal::Invalid, Refusal::Forbidden];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Missing => "missing_credentials",
            Refusal::Invalid => "invalid_credentials",
            Refusal::Forbidden => "forbidden",
        }
    }
}

/// The access policy of one server, with its refusal counters.
#[derive(Debug)]
pub struct Auth {
    read: Vec<Secret>,
    write: Vec<Secret>,
    admin: Vec<Secret>,
    public_metrics: bool,
    refused: [AtomicU64; 3],
    /// When the next refusal may be logged (one line per interval, with the count of
    /// those not logged).
    log: Mutex<(Option<Instant>, u64)>,
}

/// Refusals are logged at most this often.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

impl Default for Auth {
    fn default() -> Auth {
        Auth::disabled()
    }
}

impl Auth {
    /// Authentication disabled: no tokens, every endpoint is open (the default;
    /// listeners are on loopback).
    pub fn disabled() -> Auth {
        Auth {
            read: Vec::new(),
            write: Vec::new(),
            admin: Vec::new(),
            public_metrics: true,
            refused: std::array::from_fn(|_| AtomicU64::new(0)),
            log: Mutex::new((None, 0)),
        }
    }

    /// The policy of `config`; a malformed token is an error naming its list and index.
    pub fn new(config: &AuthConfig) -> Result<Auth, AuthError> {
        Ok(Auth {
            read: secrets("read_tokens", &config.read_tokens)?,
            write: secrets("write_tokens", &config.write_tokens)?,
            admin: secrets("admin_tokens", &config.admin_tokens)?,
            public_metrics: config.public_metrics,
            ..Auth::disabled()
        })
    }

    /// Whether any token is configured.
    pub fn is_enabled(&self) -> bool {
        !(self.read.is_empty() && self.write.is_empty() && self.admin.is_empty())
    }

    /// Whether Prometheus `/metrics` is open.
    pub fn public_metrics(&self) -> bool {
        self.public_metrics || !self.guards(Access::Read)
    }

    /// Whether requests of class `access` need a token.
    pub fn guards(&self, access: Access) -> bool {
        match access {
            Access::Open => false,
            Access::Read => !self.read.is_empty(),
            Access::Write => !self.write.is_empty(),
            Access::Admin => self.is_enabled(),
        }
    }

    /// The policy in a few words, for the startup log line (no token in it).
    pub fn summary(&self) -> String {
        if !self.is_enabled() {
            return "no authentication".to_string();
        }
        let class = |guarded: bool, name: &str| {
            if guarded {
                format!("{name}: token")
            } else {
                format!("{name}: open")
            }
        };
        let admin = if !self.admin.is_empty() {
            "admin: admin token"
        } else if !self.write.is_empty() {
            "admin: write token"
        } else {
            "admin: refused (no admin or write token configured)"
        };
        let metrics = if self.public_metrics() {
            "/metrics: open"
        } else {
            "/metrics: read token"
        };
        format!(
            "{}, {}, {admin}, {metrics}",
            class(self.guards(Access::Read), "reads"),
            class(self.guards(Access::Write), "writes")
        )
    }

    /// The tokens besides admin ones that `access` accepts.
    fn own_tokens(&self, access: Access) -> &[Secret] {
        match access {
            Access::Open => &[],
            Access::Read => &self.read,
            Access::Write => &self.write,
            Access::Admin if self.admin.is_empty() => &self.write,
            Access::Admin => &[],
        }
    }

    /// The `Authorization` value this node sends when it asks a peer for `access`
    /// (every node of a cluster has the same `[auth]`): one of its own tokens that the
    /// class accepts, an admin token when there is one. `None` when the class is open.
    pub fn peer_credential(&self, access: Access) -> Option<String> {
        if !self.guards(access) {
            return None;
        }
        let secret = self
            .admin
            .first()
            .or_else(|| self.own_tokens(access).first())?;
        // tokens were checked as printable, whitespace-free UTF-8 when configured
        let token = std::str::from_utf8(&secret.0).ok()?;
        Some(format!("Bearer {token}"))
    }

    /// Lets a request of class `access` with these headers through, or says why not.
    pub fn check(&self, access: Access, headers: &HeaderMap) -> Result<(), Refusal> {
        if !self.guards(access) {
            return Ok(());
        }
        let Some(token) = presented_token(headers) else {
            return Err(Refusal::Missing);
        };
        let token = token.as_bytes();
        // compare with every list, always, so the time says nothing about which matched
        let own = any_matches(self.own_tokens(access), token);
        let admin = any_matches(&self.admin, token);
        let known = any_matches(&self.read, token) | any_matches(&self.write, token) | admin;
        if own || admin {
            Ok(())
        } else if known {
            Err(Refusal::Forbidden)
        } else {
            Err(Refusal::Invalid)
        }
    }

    /// Counts a refusal and logs it (rate-limited).
    fn refuse(
        &self,
        why: Refusal,
        access: Access,
        method: &Method,
        path: &str,
        peer: Option<SocketAddr>,
    ) {
        if let Some(n) = self.refused.get(why as usize) {
            n.fetch_add(1, Relaxed);
        }
        let now = Instant::now();
        let suppressed = {
            let mut log = self.log.lock();
            if log.0.is_some_and(|next| now < next) {
                log.1 += 1;
                return;
            }
            log.0 = Some(now + LOG_INTERVAL);
            std::mem::take(&mut log.1)
        };
        let peer = peer.map_or_else(|| "-".to_string(), |p| p.to_string());
        // the path only: a query string may hold anything, credentials included
        tracing::warn!(
            reason = why.label(),
            class = ?access,
            %method,
            path = %sample(path),
            %peer,
            suppressed,
            "refused HTTP request"
        );
    }

    /// `sumi_http_requests_refused_total{reason}`, every reason listed.
    pub fn write_prometheus(&self, out: &mut String) {
        use std::fmt::Write as _;
        out.push_str("# HELP sumi_http_requests_refused_total HTTP requests refused by access control, by reason.\n# TYPE sumi_http_requests_refused_total counter\n");
        for (why, n) in Refusal::ALL.iter().zip(self.refused.iter()) {
            let _ = writeln!(
                out,
                "sumi_http_requests_refused_total{{reason=\"{}\"}} {}",
                why.label(),
                n.load(Relaxed)
            );
        }
    }

    /// Refusals so far for `why`.
    pub fn refused(&self, why: Refusal) -> u64 {
        self.refused
            .get(why as usize)
            .map_or(0, |n| n.load(Relaxed))
    }
}

/// A path for a log line: at most 200 characters, control characters escaped.
fn sample(path: &str) -> String {
    let mut s: String = path
        .chars()
        .take(200)
        .flat_map(char::escape_default)
        .collect();
    if path.chars().count() > 200 {
        s.push_str("...");
    }
    s
}

/// The token of an `Authorization` header: `Bearer <token>`, or `Basic` whose password
/// is the token (the user name is ignored; when the password is empty the user name is
/// taken, for clients that put a token there).
fn presented_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return (!rest.is_empty()).then(|| rest.to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        let (user, password) = text.split_once(':').unwrap_or((&text, ""));
        let token = if password.is_empty() { user } else { password };
        return (!token.is_empty()).then(|| token.to_string());
    }
    None
}

/// The answer to a refused request: nothing in it depends on the data.
fn refusal_response(why: Refusal, access: Access) -> Response {
    let (status, body) = match why {
        Refusal::Missing => (
            StatusCode::UNAUTHORIZED,
            "authentication required".to_string(),
        ),
        Refusal::Invalid => (StatusCode::UNAUTHORIZED, "invalid credentials".to_string()),
        Refusal::Forbidden => (
            StatusCode::FORBIDDEN,
            format!("this token may not {}", access.verb()),
        ),
    };
    let mut resp = crate::text_error(status, body);
    if status == StatusCode::UNAUTHORIZED {
        let h = resp.headers_mut();
        h.append(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"sumi\""),
        );
        h.append(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"sumi\", charset=\"UTF-8\""),
        );
    }
    resp
}

/// The middleware: classify, check, and either pass the request on or refuse it.
pub async fn require(State(auth): State<Arc<Auth>>, req: Request, next: Next) -> Response {
    let access = classify(
        req.method(),
        req.uri().path(),
        req.uri().query(),
        auth.public_metrics,
    );
    match auth.check(access, req.headers()) {
        Ok(()) => next.run(req).await,
        Err(why) => {
            let peer = req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0);
            auth.refuse(why, access, req.method(), req.uri().path(), peer);
            refusal_response(why, access)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &str = "read-token-0123456789";
    const W: &str = "write-token-0123456789";
    const A: &str = "admin-token-0123456789";

    fn auth(read: &[&str], write: &[&str], admin: &[&str]) -> Auth {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Auth::new(&AuthConfig {
            read_tokens: v(read),
            write_tokens: v(write),
            admin_tokens: v(admin),
            public_metrics: true,
        })
        .unwrap()
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        h
    }

    #[test]
    fn a_peer_credential_passes_its_own_check() {
        let header_of = |c: String| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(&c).unwrap());
            h
        };
        for a in [
            auth(&[R], &[W], &[A]),
            auth(&[R], &[], &[]),
            auth(&[R], &[W], &[]),
        ] {
            let c = a.peer_credential(Access::Read).expect("reads are guarded");
            assert_eq!(a.check(Access::Read, &header_of(c)), Ok(()));
        }
        assert_eq!(
            auth(&[R], &[W], &[A]).peer_credential(Access::Read),
            Some(format!("Bearer {A}"))
        );
        // open reads: nothing to send
        assert_eq!(auth(&[], &[W], &[A]).peer_credential(Access::Read), None);
        assert_eq!(Auth::disabled().peer_credential(Access::Read), None);
    }

    fn basic(user: &str, password: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {b64}")).unwrap(),
        );
        h
    }

    #[test]
    fn endpoints_are_classified() {
        let c = |m: Method, p: &str, q: Option<&str>| classify(&m, p, q, true);
        assert_eq!(c(Method::GET, "/health", None), Access::Open);
        assert_eq!(c(Method::GET, "/ready/", None), Access::Open);
        assert_eq!(c(Method::GET, "/metrics", None), Access::Open);
        assert_eq!(c(Method::GET, "/metrics", Some("x=1")), Access::Open);
        assert_eq!(c(Method::GET, "/metrics", Some("query=*")), Access::Read);
        // a POST to /metrics may carry `query` in its body: always a find
        assert_eq!(c(Method::POST, "/metrics", None), Access::Read);
        assert_eq!(
            classify(&Method::GET, "/metrics", None, false),
            Access::Read
        );
        for p in [
            "/render",
            "/render/",
            "/metrics/find",
            "/metrics/expand",
            "/functions/sumSeries",
            "/version",
            "/tags/autoComplete/tags",
        ] {
            assert_eq!(c(Method::GET, p, Some("target=a")), Access::Read, "{p}");
            assert_eq!(c(Method::POST, p, None), Access::Read, "POST {p}");
        }
        for p in [
            "/",
            "/browse",
            "/graph/s/e/g",
            "/static/sumi.css",
            "/json/list/all",
            "/api/s/e/g",
        ] {
            assert_eq!(c(Method::GET, p, None), Access::Read, "{p}");
        }
        for p in [
            "/api/v0/tsdb",
            "/api/v1/write",
            "/tags/tagSeries",
            "/api/s/e/g",
            "/json/create/complex",
            "/json/edit/graph/1",
            "/vrule/api/s",
        ] {
            assert_eq!(c(Method::POST, p, None), Access::Write, "POST {p}");
        }
        assert_eq!(c(Method::GET, "/api/v1/write", None), Access::Write);
        for p in [
            "/tags/delSeries",
            "/json/delete/graph/1",
            "/delete/s/e/g",
            "/delete_complex/3",
            "/admin/rename",
            "/api/v1/series/delete",
            "/api/v1/series/rename",
        ] {
            assert_eq!(c(Method::POST, p, None), Access::Admin, "{p}");
            assert_eq!(c(Method::GET, p, None), Access::Admin, "GET {p}");
        }
        // unknown writes are writes; prefixes match whole segments
        assert_eq!(c(Method::POST, "/renderer", None), Access::Write);
        assert_eq!(c(Method::DELETE, "/anything", None), Access::Write);
        assert_eq!(c(Method::POST, "/healthz", None), Access::Write);
        // escapes cannot move a request into a weaker class
        assert_eq!(
            c(Method::POST, "/json/%64elete/graph/1", None),
            Access::Admin
        );
        assert_eq!(c(Method::GET, "/%68ealth", None), Access::Open);
        assert_eq!(c(Method::POST, "/tags/delSeries%2F", None), Access::Admin);
    }

    #[test]
    fn nothing_configured_is_open() {
        let a = Auth::disabled();
        assert!(!a.is_enabled());
        for class in [Access::Open, Access::Read, Access::Write, Access::Admin] {
            assert_eq!(a.check(class, &HeaderMap::new()), Ok(()));
        }
    }

    #[test]
    fn tokens_per_class() {
        let a = auth(&[R], &[W], &[A]);
        let none = HeaderMap::new();
        assert_eq!(a.check(Access::Open, &none), Ok(()));
        assert_eq!(a.check(Access::Read, &none), Err(Refusal::Missing));
        assert_eq!(a.check(Access::Read, &bearer(R)), Ok(()));
        assert_eq!(a.check(Access::Read, &bearer(W)), Err(Refusal::Forbidden));
        assert_eq!(a.check(Access::Read, &bearer(A)), Ok(()));
        assert_eq!(a.check(Access::Write, &bearer(R)), Err(Refusal::Forbidden));
        assert_eq!(a.check(Access::Write, &bearer(W)), Ok(()));
        assert_eq!(a.check(Access::Write, &bearer(A)), Ok(()));
        assert_eq!(a.check(Access::Admin, &bearer(R)), Err(Refusal::Forbidden));
        assert_eq!(a.check(Access::Admin, &bearer(W)), Err(Refusal::Forbidden));
        assert_eq!(a.check(Access::Admin, &bearer(A)), Ok(()));
        // near misses: prefix, extension, one byte changed
        for bad in [&R[..R.len() - 1], &format!("{R}x"), "read-token-0123456780"] {
            assert_eq!(
                a.check(Access::Read, &bearer(bad)),
                Err(Refusal::Invalid),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_class_without_tokens_is_open_but_admin_never_is_once_auth_is_on() {
        let a = auth(&[R], &[], &[]);
        assert_eq!(a.check(Access::Write, &HeaderMap::new()), Ok(()));
        assert_eq!(
            a.check(Access::Read, &HeaderMap::new()),
            Err(Refusal::Missing)
        );
        // no admin or write token exists: deletes are refused to everyone
        assert_eq!(
            a.check(Access::Admin, &HeaderMap::new()),
            Err(Refusal::Missing)
        );
        assert_eq!(a.check(Access::Admin, &bearer(R)), Err(Refusal::Forbidden));
        assert_eq!(
            a.summary(),
            "reads: token, writes: open, admin: refused (no admin or write token configured), /metrics: open"
        );
        // without admin tokens, write tokens may delete
        let a = auth(&[], &[W], &[]);
        assert_eq!(
            a.summary(),
            "reads: open, writes: token, admin: write token, /metrics: open"
        );
        assert_eq!(Auth::disabled().summary(), "no authentication");
        assert_eq!(a.check(Access::Read, &HeaderMap::new()), Ok(()));
        assert_eq!(a.check(Access::Admin, &bearer(W)), Ok(()));
        assert!(a.public_metrics());
    }

    #[test]
    fn basic_auth_carries_the_token() {
        let a = auth(&[R], &[W], &[]);
        assert_eq!(a.check(Access::Read, &basic("grafana", R)), Ok(()));
        assert_eq!(a.check(Access::Read, &basic(R, "")), Ok(()));
        assert_eq!(
            a.check(Access::Read, &basic("grafana", "nope-nope-nope-nope")),
            Err(Refusal::Invalid)
        );
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic !!notbase64"),
        );
        assert_eq!(a.check(Access::Read, &h), Err(Refusal::Missing));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Digest x"));
        assert_eq!(a.check(Access::Read, &h), Err(Refusal::Missing));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer   read-token-0123456789  "),
        );
        assert_eq!(a.check(Access::Read, &h), Ok(()));
    }

    #[test]
    fn malformed_tokens_are_refused_with_their_place() {
        let cfg = |read: &[&str]| AuthConfig {
            read_tokens: read.iter().map(|s| s.to_string()).collect(),
            ..AuthConfig::default()
        };
        assert_eq!(
            Auth::new(&cfg(&[R, "short"])).unwrap_err(),
            AuthError::TooShort {
                list: "read_tokens",
                index: 1,
                len: 5
            }
        );
        assert_eq!(
            Auth::new(&cfg(&["has a space in the token"])).unwrap_err(),
            AuthError::BadChar {
                list: "read_tokens",
                index: 0
            }
        );
        assert!(Auth::new(&cfg(&[""]))
            .unwrap_err()
            .to_string()
            .contains("read_tokens: token 0 is empty"));
        assert!(!format!("{:?}", auth(&[R], &[], &[])).contains(R));
    }

    #[test]
    fn refusals_are_counted_and_exposed() {
        let a = auth(&[R], &[], &[]);
        a.refuse(
            Refusal::Missing,
            Access::Read,
            &Method::GET,
            "/render",
            None,
        );
        a.refuse(
            Refusal::Missing,
            Access::Read,
            &Method::GET,
            "/render\n",
            None,
        );
        a.refuse(
            Refusal::Invalid,
            Access::Read,
            &Method::GET,
            "/render",
            None,
        );
        assert_eq!(a.refused(Refusal::Missing), 2);
        let mut out = String::new();
        a.write_prometheus(&mut out);
        assert!(
            out.contains("sumi_http_requests_refused_total{reason=\"missing_credentials\"} 2\n")
        );
        assert!(
            out.contains("sumi_http_requests_refused_total{reason=\"invalid_credentials\"} 1\n")
        );
        assert!(out.contains("sumi_http_requests_refused_total{reason=\"forbidden\"} 0\n"));
        assert_eq!(sample("/a\nb"), "/a\\nb");
    }
}
