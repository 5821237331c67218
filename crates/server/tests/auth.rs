//! Access control end to end: the real server with tokens in sumi.toml and in a token
//! file, real HTTP requests with and without credentials.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::{now, scratch, Sumi};

const READ: &str = "read-token-5f1c2e9a7b3d4c60";
const WRITE: &str = "write-token-8e2d7a1c9b4f3e51";
const ADMIN: &str = "admin-token-from-a-file-0b6d";

/// An answer: status, `WWW-Authenticate` values, body.
struct Answer {
    status: u16,
    challenges: Vec<String>,
    body: String,
}

enum Cred<'a> {
    None,
    Bearer(&'a str),
    Basic(&'a str, &'a str),
}

fn call(
    sumi: &Sumi,
    method: &str,
    path: &str,
    cred: Cred<'_>,
    form: Option<&[(&str, &str)]>,
) -> Answer {
    let url = format!("http://{}{}", sumi.http, path);
    let mut req = ureq::request(method, &url).timeout(Duration::from_secs(30));
    match cred {
        Cred::None => {}
        Cred::Bearer(t) => req = req.set("Authorization", &format!("Bearer {t}")),
        Cred::Basic(u, p) => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            req = req.set("Authorization", &format!("Basic {b64}"));
        }
    }
    let result = match form {
        Some(f) => req.send_form(f),
        None => req.call(),
    };
    let resp = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    Answer {
        status: resp.status(),
        challenges: resp
            .all("www-authenticate")
            .iter()
            .map(|s| s.to_string())
            .collect(),
        body: resp.into_string().unwrap_or_default(),
    }
}

fn get(sumi: &Sumi, path: &str, cred: Cred<'_>) -> Answer {
    call(sumi, "GET", path, cred, None)
}

fn start(dir: &std::path::Path, auth: &str) -> Sumi {
    let config = dir.join("sumi.toml");
    std::fs::write(&config, auth).unwrap();
    Sumi::start(&dir.join("data"), &["--config", config.to_str().unwrap()])
}

/// A refused answer leaks nothing: no series name, no value, no count.
fn assert_refused_blind(a: &Answer, status: u16, what: &str) {
    assert_eq!(a.status, status, "{what}: {}", a.body);
    for secret in ["secret", "cpu", "4242", "payroll", "series"] {
        assert!(
            !a.body.contains(secret),
            "{what}: body leaks {secret:?}: {}",
            a.body
        );
    }
    assert!(a.body.len() < 64, "{what}: body says too much: {}", a.body);
}

#[test]
fn tokens_guard_reads_writes_and_admin_endpoints() {
    let dir = scratch();
    let admin_file = dir.path().join("admin.tokens");
    std::fs::write(&admin_file, format!("# operators\n{ADMIN}\n")).unwrap();
    let sumi = start(
        dir.path(),
        &format!(
            "[auth]\nread_tokens = [\"{READ}\"]\nwrite_tokens = [\"{WRITE}\"]\nadmin_token_file = {:?}\n",
            admin_file.to_str().unwrap()
        ),
    );
    let t = now() - 60;
    sumi.send_tcp(format!("secret.payroll.cpu 4242 {t}\n").as_bytes());
    // /metrics stays open for scrapers: this waits without a token
    sumi.wait_stored(1);

    // without a token, every read is refused with a challenge and an empty-handed body
    let reads = [
        format!(
            "/render?target=secret.payroll.cpu&from={}&format=json",
            t - 10
        ),
        "/render?target=*.*.*&format=raw".to_string(),
        "/metrics/find?query=*".to_string(),
        "/metrics?query=secret.*".to_string(),
        "/metrics/expand?query=secret.*".to_string(),
        "/metrics/index.json".to_string(),
        "/browse".to_string(),
        "/".to_string(),
        "/nonexistent/path".to_string(),
    ];
    for path in &reads {
        let a = get(&sumi, path, Cred::None);
        assert_refused_blind(&a, 401, path);
        assert!(
            a.challenges.iter().any(|c| c.starts_with("Bearer")),
            "{path}: {:?}",
            a.challenges
        );
        assert!(
            a.challenges.iter().any(|c| c.starts_with("Basic")),
            "{path}: {:?}",
            a.challenges
        );
    }
    let a = call(
        &sumi,
        "POST",
        "/render",
        Cred::None,
        Some(&[("target", "secret.payroll.cpu"), ("format", "json")]),
    );
    assert_refused_blind(&a, 401, "POST /render");
    let a = get(
        &sumi,
        &reads[0],
        Cred::Bearer("read-token-5f1c2e9a7b3d4c6X"),
    );
    assert_refused_blind(&a, 401, "a wrong token");
    assert_eq!(a.body, "invalid credentials\n");

    // the read token reads, as bearer and as basic auth's password (Grafana)
    let a = get(&sumi, &reads[0], Cred::Bearer(READ));
    assert_eq!(a.status, 200, "{}", a.body);
    let json: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(json[0]["target"], "secret.payroll.cpu");
    assert!(a.body.contains("4242"), "{}", a.body);
    let a = get(
        &sumi,
        "/metrics/find?query=secret.*",
        Cred::Basic("grafana", READ),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("payroll"), "{}", a.body);
    // the admin token reads too
    assert_eq!(
        get(&sumi, "/metrics/find?query=*", Cred::Bearer(ADMIN)).status,
        200
    );

    // a read token cannot write; a write token writes but cannot read
    let body = format!("[{{\"name\":\"written.by.http\",\"time\":{t},\"value\":7}}]");
    let post_json = |cred: Cred<'_>| -> Answer {
        let url = format!("http://{}/api/v0/tsdb", sumi.http);
        let mut req = ureq::post(&url).set("Content-Type", "application/json");
        if let Cred::Bearer(tok) = cred {
            req = req.set("Authorization", &format!("Bearer {tok}"));
        }
        match req.send_string(&body) {
            Ok(r) | Err(ureq::Error::Status(_, r)) => Answer {
                status: r.status(),
                challenges: Vec::new(),
                body: r.into_string().unwrap_or_default(),
            },
            Err(e) => panic!("POST /api/v0/tsdb: {e}"),
        }
    };
    assert_eq!(post_json(Cred::None).status, 401);
    let a = post_json(Cred::Bearer(READ));
    assert_eq!(
        (a.status, a.body.as_str()),
        (403, "this token may not write\n")
    );
    let a = post_json(Cred::Bearer(WRITE));
    assert_eq!(a.status, 200, "{}", a.body);
    sumi.wait_stored(2);
    let a = get(&sumi, &reads[0], Cred::Bearer(WRITE));
    assert_refused_blind(&a, 403, "a write token reading");

    // GrowthForecast: posting is a write, deleting is admin
    let gf = "/api/svc/sec/payroll";
    let a = call(
        &sumi,
        "POST",
        gf,
        Cred::Bearer(READ),
        Some(&[("number", "5")]),
    );
    assert_eq!(a.status, 403);
    let a = call(
        &sumi,
        "POST",
        gf,
        Cred::Bearer(WRITE),
        Some(&[("number", "5")]),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(get(&sumi, gf, Cred::Bearer(READ)).status, 200);
    let delete = "/delete/svc/sec/payroll";
    for (cred, status) in [
        (Cred::None, 401),
        (Cred::Bearer(READ), 403),
        (Cred::Bearer(WRITE), 403),
    ] {
        let a = call(&sumi, "POST", delete, cred, Some(&[]));
        assert_refused_blind(&a, status, "delete without the admin token");
    }
    assert_eq!(
        get(&sumi, gf, Cred::Bearer(READ)).status,
        200,
        "still there"
    );
    let a = call(&sumi, "POST", delete, Cred::Bearer(ADMIN), Some(&[]));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(get(&sumi, gf, Cred::Bearer(READ)).status, 404, "deleted");

    // deleting and renaming series is admin too
    let form: &[(&str, &str)] = &[("target", "**"), ("from", "svc"), ("to", "moved")];
    for path in ["/api/v1/series/delete", "/api/v1/series/rename"] {
        for (cred, status) in [
            (Cred::None, 401),
            (Cred::Bearer(READ), 403),
            (Cred::Bearer(WRITE), 403),
        ] {
            let a = call(&sumi, "POST", path, cred, Some(form));
            assert_refused_blind(&a, status, "series administration without the admin token");
        }
    }
    let a = call(
        &sumi,
        "POST",
        "/api/v1/series/delete",
        Cred::Bearer(ADMIN),
        Some(&[("target", "nothing.*"), ("dryRun", "1")]),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("\"matched\":0"), "{}", a.body);

    // health, readiness and the Prometheus exposition need nothing
    assert_eq!(get(&sumi, "/health", Cred::None).status, 200);
    let a = get(&sumi, "/ready", Cred::None);
    assert_eq!((a.status, a.body.as_str()), (200, "ready\n"));
    let metrics = get(&sumi, "/metrics", Cred::None);
    assert_eq!(metrics.status, 200);
    let refused = |reason: &str| {
        common::parse_metric(
            &metrics.body,
            &format!("sumi_http_requests_refused_total{{reason=\"{reason}\"}}"),
        )
    };
    assert!(refused("missing_credentials") >= 12.0, "{}", metrics.body);
    assert_eq!(refused("invalid_credentials"), 1.0);
    assert!(refused("forbidden") >= 5.0);
    assert!(
        common::parse_metric(
            &metrics.body,
            "sumi_http_requests_total{route=\"render\",status=\"401\"}"
        ) >= 3.0,
        "refused requests are counted per route"
    );

    // the log says what was refused, rate-limited, without tokens or query strings
    let log = sumi.log_text();
    assert!(log.contains("refused HTTP request"), "{log}");
    assert!(
        log.contains("HTTP; reads: token, writes: token, admin: admin token, /metrics: open"),
        "{log}"
    );
    for secret in [READ, WRITE, ADMIN, "payroll.cpu&"] {
        assert!(!log.contains(secret), "log leaks {secret}:\n{log}");
    }
}

#[test]
fn partial_configuration_keeps_deletes_closed_and_can_close_metrics() {
    let dir = scratch();
    let sumi = start(
        dir.path(),
        &format!("[auth]\nread_tokens = [\"{READ}\"]\npublic_metrics = false\n"),
    );
    // Prometheus /metrics now needs the read token
    assert_eq!(get(&sumi, "/metrics", Cred::None).status, 401);
    let a = get(&sumi, "/metrics", Cred::Bearer(READ));
    assert_eq!(a.status, 200);
    assert!(a.body.contains("sumi_points_stored_total"));
    // no write tokens: writes are open
    let a = call(
        &sumi,
        "POST",
        "/api/svc/sec/open",
        Cred::None,
        Some(&[("number", "1")]),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    // but no token may delete when neither admin nor write tokens exist
    let delete = "/delete/svc/sec/open";
    assert_eq!(
        call(&sumi, "POST", delete, Cred::None, Some(&[])).status,
        401
    );
    assert_eq!(
        call(&sumi, "POST", delete, Cred::Bearer(READ), Some(&[])).status,
        403
    );
    assert_eq!(
        get(&sumi, "/api/svc/sec/open", Cred::Bearer(READ)).status,
        200
    );
    // health checks stay open
    assert_eq!(get(&sumi, "/health", Cred::None).status, 200);
    assert_eq!(get(&sumi, "/ready", Cred::None).status, 200);
}
