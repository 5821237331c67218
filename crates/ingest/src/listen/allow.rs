//! Which sources may send carbon traffic: an allowlist of networks in CIDR notation
//! (`10.0.0.0/8`, `2001:db8::/32`, or a bare address for one host).
//!
//! The TCP listeners check a connection's peer when they accept it (a refused one is
//! closed before a byte is read); the UDP listener checks every datagram. Refusals are
//! counted ([`crate::IngestStats`]) and logged with a rate limit, never fatal.
//!
//! A listener bound to `[::]` sees IPv4 clients as IPv4-mapped IPv6 addresses
//! (`::ffff:10.1.2.3`); they are matched as the IPv4 address they carry, so one list
//! written with IPv4 networks works on either kind of socket.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// One network: an address with its host bits zero, and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

/// Why a network could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    #[error("{0:?} is not an address or network such as 10.0.0.0/8 or ::1/128")]
    Syntax(String),
    #[error("{input:?}: prefix length {prefix} is over {max} for this address family")]
    PrefixTooLong { input: String, prefix: u32, max: u8 },
    #[error("{input:?} has host bits set; the network is {net}/{prefix}")]
    HostBits {
        input: String,
        net: IpAddr,
        prefix: u8,
    },
}

impl Cidr {
    /// The network `net/prefix`, refusing a prefix too long for the family and set
    /// host bits (a likely typo: `10.0.0.1/8` was probably meant as `10.0.0.0/8`).
    fn new(input: &str, addr: IpAddr, prefix: u32) -> Result<Cidr, CidrError> {
        let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
        let Ok(prefix) = u8::try_from(prefix) else {
            return Err(CidrError::PrefixTooLong {
                input: input.to_string(),
                prefix,
                max,
            });
        };
        if prefix > max {
            return Err(CidrError::PrefixTooLong {
                input: input.to_string(),
                prefix: u32::from(prefix),
                max,
            });
        }
        let net = mask(addr, prefix);
        if net != addr {
            return Err(CidrError::HostBits {
                input: input.to_string(),
                net,
                prefix,
            });
        }
        Ok(Cidr { net, prefix })
    }

    /// Whether `ip` is in this network (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_ipv4() == self.net.is_ipv4() && mask(ip, self.prefix) == self.net
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Cidr, CidrError> {
        let text = s.trim();
        let syntax = || CidrError::Syntax(s.to_string());
        match text.split_once('/') {
            Some((addr, prefix)) => {
                let addr: IpAddr = addr.parse().map_err(|_| syntax())?;
                // digits only: `u32::from_str` would also take a leading `+`
                if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(syntax());
                }
                let prefix: u32 = prefix.parse().unwrap_or(u32::MAX);
                Cidr::new(s, addr, prefix)
            }
            None => {
                let addr: IpAddr = text.parse().map_err(|_| syntax())?;
                let full = if addr.is_ipv4() { 32 } else { 128 };
                Cidr::new(s, addr, full)
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.net, self.prefix)
    }
}

/// `addr` with every bit after the first `prefix` cleared (`prefix` within the family).
fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let keep = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & keep).into())
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let keep = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & keep).into())
        }
    }
}

/// The networks carbon traffic may come from. Never empty: "no allowlist" is
/// expressed by not having one (`PlaintextOptions::allow` is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceAllowlist {
    nets: Vec<Cidr>,
}

/// Why an allowlist could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowlistError {
    #[error("entry {index} of the allowlist: {source}")]
    Entry { index: usize, source: CidrError },
    #[error("the allowlist is empty, which would refuse every source; leave it out to accept all")]
    Empty,
}

impl SourceAllowlist {
    /// Parses every entry; the first bad one is the error (with its position).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<SourceAllowlist, AllowlistError> {
        if entries.is_empty() {
            return Err(AllowlistError::Empty);
        }
        let nets = entries
            .iter()
            .enumerate()
            .map(|(index, e)| {
                e.as_ref()
                    .parse::<Cidr>()
                    .map_err(|source| AllowlistError::Entry { index, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SourceAllowlist { nets })
    }

    /// Whether a source at `ip` may send.
    pub fn permits(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(ip))
    }

    /// The networks, for log lines.
    pub fn networks(&self) -> &[Cidr] {
        &self.nets
    }
}

impl fmt::Display for SourceAllowlist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.nets.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_networks() {
        let list = SourceAllowlist::parse(&["10.0.0.0/8", "192.168.1.7"]).unwrap();
        assert!(list.permits(ip("10.0.0.1")));
        assert!(list.permits(ip("10.255.255.255")));
        assert!(!list.permits(ip("11.0.0.0")));
        assert!(!list.permits(ip("9.255.255.255")));
        assert!(list.permits(ip("192.168.1.7")));
        assert!(!list.permits(ip("192.168.1.8")));
        assert!(!list.permits(ip("127.0.0.1")));
        assert_eq!(list.to_string(), "10.0.0.0/8, 192.168.1.7/32");
    }

    #[test]
    fn ipv6_networks_and_mapped_ipv4() {
        let list = SourceAllowlist::parse(&["2001:db8::/32", "::1", "127.0.0.0/8"]).unwrap();
        assert!(list.permits(ip("2001:db8:1::5")));
        assert!(!list.permits(ip("2001:db9::1")));
        assert!(list.permits(ip("::1")));
        assert!(!list.permits(ip("::2")));
        // a dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d
        assert!(list.permits(ip("::ffff:127.0.0.1")));
        assert!(!list.permits(ip("::ffff:10.0.0.1")));
        // families never match each other otherwise
        let v4_only = SourceAllowlist::parse(&["0.0.0.0/0"]).unwrap();
        assert!(v4_only.permits(ip("203.0.113.9")));
        assert!(!v4_only.permits(ip("2001:db8::1")));
        let v6_only = SourceAllowlist::parse(&["::/0"]).unwrap();
        assert!(v6_only.permits(ip("2001:db8::1")));
        assert!(!v6_only.permits(ip("10.0.0.1")));
    }

    #[test]
    fn prefix_edges() {
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("255.255.255.255")));
        let one: Cidr = "1.2.3.4/32".parse().unwrap();
        assert!(one.contains(ip("1.2.3.4")) && !one.contains(ip("1.2.3.5")));
        let odd: Cidr = "172.16.0.0/12".parse().unwrap();
        assert!(odd.contains(ip("172.31.255.255")));
        assert!(!odd.contains(ip("172.32.0.0")));
        let v6: Cidr = "fe80::/10".parse().unwrap();
        assert!(v6.contains(ip("febf::1")) && !v6.contains(ip("fec0::1")));
    }

    #[test]
    fn bad_entries_say_what_and_where() {
        let e = SourceAllowlist::parse(&["10.0.0.0/8", "10.0.0.1/8"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "entry 1 of the allowlist: \"10.0.0.1/8\" has host bits set; the network is 10.0.0.0/8"
        );
        for bad in [
            "",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "10.0.0/8",
            "host.example",
            "10.0.0.0/8/8",
        ] {
            assert_eq!(
                bad.parse::<Cidr>(),
                Err(CidrError::Syntax(bad.to_string())),
                "{bad:?}"
            );
        }
        assert!(matches!(
            "10.0.0.0/33".parse::<Cidr>(),
            Err(CidrError::PrefixTooLong { max: 32, .. })
        ));
        assert!(matches!(
            "::/129".parse::<Cidr>(),
            Err(CidrError::PrefixTooLong { max: 128, .. })
        ));
        assert!(matches!(
            "::/99999999999".parse::<Cidr>(),
            Err(CidrError::PrefixTooLong { .. })
        ));
        let empty: [&str; 0] = [];
        assert_eq!(SourceAllowlist::parse(&empty), Err(AllowlistError::Empty));
    }
}
