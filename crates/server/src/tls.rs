//! HTTPS: rustls (no OpenSSL) in front of the same router.
//!
//! [`load`] reads a PEM certificate chain and private key (`[http] tls_cert`,
//! `tls_key`). [`TlsListener`] is an `axum::serve::Listener`: it accepts TCP
//! connections and runs each TLS handshake on a task of its own, handing axum only
//! finished ones, so a slow or silent client never holds up the others; handshakes
//! are bounded in time and in number. Graceful shutdown is axum's, as for plain HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// A handshake not finished in this time is dropped (a client that connects and says
/// nothing must not hold a task forever).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes in flight at most; beyond that, accepting waits for one to finish.
const MAX_HANDSHAKES: usize = 1024;

/// Failed handshakes (plain HTTP sent to the TLS port, scanners) are logged at most
/// this often.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The server configuration of a certificate chain and key in PEM files. Errors name
/// the file and what is wrong with it.
pub(crate) fn load(cert_path: &Path, key_path: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .with_context(|| format!("http.tls_cert: reading {}", cert_path.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("http.tls_cert: {} is not PEM", cert_path.display()))?;
    if certs.is_empty() {
        anyhow::bail!(
            "http.tls_cert: {} holds no CERTIFICATE block",
            cert_path.display()
        );
    }
    let key = PrivateKeyDer::from_pem_file(key_path).with_context(|| {
        format!(
            "http.tls_key: {} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)",
            key_path.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .with_context(|| {
            format!(
                "http.tls_key: {} does not fit the certificate in {}",
                key_path.display(),
                cert_path.display()
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts TCP connections and completes their TLS handshakes concurrently.
pub(crate) struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
    next_log: Option<Instant>,
    unlogged: u64,
}

impl TlsListener {
    pub(crate) fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> TlsListener {
        TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(config),
            handshakes: JoinSet::new(),
            next_log: None,
            unlogged: 0,
        }
    }

    fn start_handshake(&mut self, stream: TcpStream, peer: SocketAddr) {
        let acceptor = self.acceptor.clone();
        self.handshakes.spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => Some((tls, peer)),
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                    None
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    None
                }
            }
        });
    }

    /// Logs a failed handshake or accept error, at most once per interval.
    fn log_failure(&mut self, what: &str) {
        let now = Instant::now();
        if self.next_log.is_some_and(|t| now < t) {
            self.unlogged += 1;
            return;
        }
        self.next_log = Some(now + LOG_INTERVAL);
        let suppressed = std::mem::take(&mut self.unlogged);
        tracing::warn!(suppressed, "HTTPS: {what}");
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    /// Cancel-safe (axum drops it at shutdown): the handshakes live in `self`.
    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let room = self.handshakes.len() < MAX_HANDSHAKES;
            tokio::select! {
                accepted = self.tcp.accept(), if room => match accepted {
                    Ok((stream, peer)) => self.start_handshake(stream, peer),
                    Err(e) => {
                        self.log_failure(&format!("accept failed (retrying in 100 ms): {e}"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    match done {
                        Ok(Some(ready)) => return ready,
                        Ok(None) => self.log_failure(
                            "a TLS handshake failed or timed out (plain HTTP sent to the \
                             HTTPS port?); details at debug level",
                        ),
                        Err(e) => self.log_failure(&format!("handshake task failed: {e}")),
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_names_the_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        let e = load(&cert, &key).unwrap_err();
        assert!(format!("{e:#}").contains("http.tls_cert"), "{e:#}");

        std::fs::write(&cert, "not pem at all\n").unwrap();
        let e = load(&cert, &key).unwrap_err();
        assert!(format!("{e:#}").contains("holds no CERTIFICATE"), "{e:#}");

        let generated = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, "-----BEGIN NOTHING-----\n-----END NOTHING-----\n").unwrap();
        let e = load(&cert, &key).unwrap_err();
        assert!(format!("{e:#}").contains("http.tls_key"), "{e:#}");

        // a key of another certificate
        let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(&key, other.key_pair.serialize_pem()).unwrap();
        let e = load(&cert, &key).unwrap_err();
        assert!(format!("{e:#}").contains("does not fit"), "{e:#}");

        std::fs::write(&key, generated.key_pair.serialize_pem()).unwrap();
        load(&cert, &key).unwrap();
    }
}
