//! Binding: the sockets the server listens on, bound from the configuration (or by a
//! test, on port 0), and the log line that says where each one is and what guards it.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use tokio::net::{TcpListener, UdpSocket};
use tracing::{info, warn};

use crate::config::Config;

/// The listeners [`run`](crate::run) serves on, already bound.
#[derive(Debug)]
pub struct Listeners {
    /// Carbon plaintext over TCP.
    pub carbon: TcpListener,
    /// Carbon plaintext over UDP (usually on the TCP listener's address), when enabled.
    pub carbon_udp: Option<UdpSocket>,
    /// Carbon pickle.
    pub pickle: TcpListener,
    /// HTTP (or HTTPS, when the configuration names a certificate).
    pub http: TcpListener,
}

impl Listeners {
    /// Binds the addresses of `config`; UDP (when `carbon.udp` is on) takes the port
    /// TCP was given, so that port 0 gives both the same one.
    pub async fn bind(config: &Config) -> Result<Listeners> {
        let carbon = TcpListener::bind(config.carbon_addr)
            .await
            .with_context(|| format!("binding carbon plaintext TCP {}", config.carbon_addr))?;
        let carbon_addr = carbon.local_addr()?;
        let carbon_udp = if config.carbon_udp {
            Some(
                UdpSocket::bind(carbon_addr)
                    .await
                    .with_context(|| format!("binding carbon plaintext UDP {carbon_addr}"))?,
            )
        } else {
            None
        };
        let pickle = TcpListener::bind(config.pickle_addr)
            .await
            .with_context(|| format!("binding carbon pickle {}", config.pickle_addr))?;
        let http = TcpListener::bind(config.http_addr)
            .await
            .with_context(|| format!("binding HTTP {}", config.http_addr))?;
        Ok(Listeners {
            carbon,
            carbon_udp,
            pickle,
            http,
        })
    }

    /// The addresses bound.
    pub fn addrs(&self) -> Result<Addrs> {
        Ok(Addrs {
            carbon: self.carbon.local_addr()?,
            pickle: self.pickle.local_addr()?,
            http: self.http.local_addr()?,
        })
    }
}

/// Where [`Listeners`] are bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addrs {
    /// Carbon plaintext, TCP (and UDP when enabled).
    pub carbon: SocketAddr,
    pub pickle: SocketAddr,
    pub http: SocketAddr,
}

/// One line per listener: where it is bound, what guards it, and on loopback how to
/// open it.
pub(crate) fn log_listeners(config: &Config, addrs: Addrs, udp: bool, https: bool) {
    let carbon_what = if udp {
        "carbon plaintext (TCP and UDP)"
    } else {
        "carbon plaintext (TCP)"
    };
    let carbon_guard = carbon_guard(config);
    log_listener(
        carbon_what,
        addrs.carbon,
        "carbon.listen",
        "--carbon",
        &carbon_guard,
    );
    log_listener(
        "carbon pickle",
        addrs.pickle,
        "carbon.pickle_listen",
        "--pickle",
        &carbon_guard,
    );
    log_listener(
        if https { "HTTPS" } else { "HTTP" },
        addrs.http,
        "http.listen",
        "--http",
        &http_guard(config, addrs.http),
    );
}

fn log_listener(what: &str, addr: SocketAddr, key: &str, flag: &str, guard: &str) {
    let port = addr.port();
    if addr.ip().is_loopback() {
        info!(
            listener = what,
            %addr,
            "{what} listening on {addr} ({guard}), loopback only: to accept other hosts \
             set {key} = \"0.0.0.0:{port}\" in sumi.toml or pass {flag} 0.0.0.0:{port}"
        );
    } else {
        info!(listener = what, %addr, "{what} listening on {addr} ({guard})");
    }
}

/// What guards the carbon ports beyond loopback, for [`log_listener`].
fn carbon_guard(config: &Config) -> String {
    match &config.carbon_allow {
        Some(allow) => format!("sources allowed: {allow}"),
        None => "every source may send; restrict with carbon.allow".to_string(),
    }
}

/// What guards HTTP, for [`log_listener`]; warns when it is open to the network.
fn http_guard(config: &Config, addr: SocketAddr) -> String {
    let auth = &config.auth;
    let scheme = if config.tls.is_some() {
        "HTTPS"
    } else {
        "HTTP"
    };
    let beyond_loopback = !addr.ip().is_loopback();
    if beyond_loopback && !auth.is_enabled() {
        warn!(
            %addr,
            "HTTP is reachable beyond loopback without authentication: anyone who can \
             reach it may read, write and delete; set auth.read_tokens, \
             auth.write_tokens and auth.admin_tokens in sumi.toml"
        );
    } else if beyond_loopback && config.tls.is_none() {
        warn!(
            %addr,
            "HTTP tokens travel in clear text beyond loopback; set http.tls_cert and \
             http.tls_key, or put a TLS proxy in front"
        );
    }
    format!("{scheme}; {}", auth.summary())
}
