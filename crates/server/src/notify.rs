//! systemd's readiness protocol (`sd_notify`), for `Type=notify` units: a datagram
//! `READY=1` once every listener is up, `STOPPING=1` when shutdown begins. Without
//! `$NOTIFY_SOCKET` (not started by systemd) it does nothing.
//!
//! The protocol is one `AF_UNIX` datagram to the path in `$NOTIFY_SOCKET` (a leading
//! `@` names an abstract socket), so it needs no library.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (such as `"READY=1"`) to systemd when it is listening; a failure is
/// logged and otherwise ignored (the service runs the same without it).
pub(crate) fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&path, state) {
        tracing::warn!(socket = ?path, "cannot notify systemd ({state}): {e}");
    }
}

fn send(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_bytes();
    match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(state.as_bytes(), &addr)?;
        }
        None => {
            sock.send_to(state.as_bytes(), path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_one_datagram_to_a_path_and_an_abstract_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let server = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("sumi-notify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let server = UnixDatagram::bind_addr(&addr).unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");

        let missing = dir.path().join("nobody-listens.sock");
        assert!(send(missing.as_os_str(), "READY=1").is_err());
    }
}
