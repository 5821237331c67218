//! carbon's consistent-hashing placement, bit for bit.
//!
//! What carbon 1.1.10 does (`carbon/hashing.py`, `carbon/routers.py`,
//! `carbon/util.py::parseDestination`), and what this module does with it:
//!
//! - A destination is `host:port[:instance]` (`[v6]:port[:instance]`); the node on
//!   the ring is the pair `(host, instance)`, the port plays no part in placement.
//!   The instance is Python's `None` when absent, and `''` when the string ends in
//!   `:` — both kept apart here ([`Destination::instance`] is an `Option`).
//! - Each node is put on the ring 100 times. With `carbon_ch` the replica key is the
//!   Python text `"%s:%d" % ((host, instance), i)`, i.e. the `repr` of the tuple,
//!   such as `('10.0.0.1', 'a'):7` or `('10.0.0.1', None):7` ([`python_repr_str`]);
//!   with `fnv1a_ch` it is `"%d-%s" % (i, instance)`, so `7-a` or `7-None`.
//! - A position is the first 16 bits of the key's MD5 (`carbon_ch`) or FNV-1a 32
//!   folded to 16 bits, `(h >> 16) ^ (h & 0xffff)` (`fnv1a_ch`). A position already
//!   taken moves up by one until free — past `0xffff` if need be, so positions are
//!   `u32` here.
//! - A metric's nodes: the first ring entry at or after its position (wrapping), then
//!   onwards, each distinct node once, stopping one short of a full turn. With one
//!   node only, carbon yields it once before that walk and once in it; kept.
//! - `REPLICATION_FACTOR` of them are taken; with `DIVERSE_REPLICAS` (carbon's
//!   default) a node whose host was already taken is skipped, and the count is of
//!   hosts.
//!
//! The differential test `tests/carbon_diff.rs` checks all of this against carbon's
//! own code from PyPI.

use std::collections::HashSet;
use std::fmt::Write as _;

use md5::{Digest, Md5};

/// How many times each node is put on the ring (carbon's `replica_count`).
pub const RING_REPLICAS: usize = 100;

/// A destination as carbon parses it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Destination {
    /// The host, brackets of an IPv6 address removed.
    pub host: String,
    pub port: u16,
    /// `None` when the string had no third field.
    pub instance: Option<String>,
}

impl Destination {
    /// Parses `host:port[:instance]` or `[v6addr]:port[:instance]` as
    /// `carbon.util.parseDestination` does (surrounding whitespace ignored).
    pub fn parse(s: &str) -> Result<Destination, String> {
        let s = s.trim();
        let (host, rest) = if let (true, Some(b)) = (s.starts_with('['), s.rfind("]:")) {
            (&s[1..b], &s[b + 2..])
        } else {
            match s.find(':') {
                Some(c) => (&s[..c], &s[c + 1..]),
                None => return Err(format!("destination {s:?} is not host:port[:instance]")),
            }
        };
        let (port, instance) = match rest.split_once(':') {
            Some((p, i)) => (p, Some(i.to_string())),
            None => (rest, None),
        };
        let port = port
            .trim()
            .parse::<u16>()
            .map_err(|_| format!("destination {s:?}: port {port:?} is not a number 0-65535"))?;
        Ok(Destination {
            host: host.to_string(),
            port,
            instance,
        })
    }

    /// The address to connect to (`host:port`, brackets around an IPv6 host).
    pub fn socket_addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.socket_addr())?;
        if let Some(i) = &self.instance {
            write!(f, ":{i}")?;
        }
        Ok(())
    }
}

/// The hash carbon's ring uses (`ROUTER_HASH_TYPE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
pub enum HashType {
    #[serde(rename = "carbon_ch")]
    CarbonCh,
    #[serde(rename = "fnv1a_ch")]
    Fnv1aCh,
}

impl HashType {
    /// A key's position on the ring (`carbon.hashing.carbonHash`).
    pub fn position(self, key: &[u8]) -> u32 {
        match self {
            HashType::CarbonCh => {
                let d = Md5::digest(key);
                (u32::from(d[0]) << 8) | u32::from(d[1])
            }
            HashType::Fnv1aCh => {
                let mut h: u32 = 0x811c_9dc5;
                for &b in key {
                    h ^= u32::from(b);
                    h = h.wrapping_mul(0x0100_0193);
                }
                (h >> 16) ^ (h & 0xffff)
            }
        }
    }
}

/// Python's `repr()` of a `str`: single quotes unless the text holds a `'` and no
/// `"`; backslash escapes for `\\`, the chosen quote, `\t \n \r`, other control
/// characters as `\xNN`, and the non-printable code points above ASCII as Python
/// writes them.
pub fn python_repr_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) >= 0x80 && !python_printable(c) => {
                let n = c as u32;
                let _ = if n <= 0xff {
                    write!(out, "\\x{n:02x}")
                } else if n <= 0xffff {
                    write!(out, "\\u{n:04x}")
                } else {
                    write!(out, "\\U{n:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable()` above ASCII, for the characters a host name or an
/// instance could hold: Unicode's "Other" and "Separator" categories are not
/// printable (except the space). Covers the C1 controls, the no-break and other
/// spaces, the line and paragraph separators, the format characters a text editor
/// may leave behind, and the surrogate and private-use ranges.
fn python_printable(c: char) -> bool {
    !matches!(c as u32,
        0x80..=0xa0 | 0xad | 0x1680 | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x206f
        | 0x3000 | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb
        | 0xf0000..=0x10ffff)
}

/// The ring of carbon's `ConsistentHashRing`, over a fixed destination list.
#[derive(Clone, Debug)]
pub struct HashRing {
    hash: HashType,
    /// `(position, node)` sorted by position; positions are unique.
    ring: Vec<(u32, u32)>,
    /// Node `i`'s host, for the diverse-replicas rule, as an id: equal hosts share one.
    node_host: Vec<u32>,
    nodes: usize,
}

impl HashRing {
    /// The ring of `destinations`, in the order given (the order of carbon's
    /// `DESTINATIONS` changes nothing but the tie-breaks of taken positions, so it is
    /// kept). Two destinations with the same host and instance are refused, as carbon
    /// refuses them.
    pub fn new(destinations: &[Destination], hash: HashType) -> Result<HashRing, String> {
        let mut seen = HashSet::new();
        let mut hosts: Vec<&str> = Vec::new();
        let mut node_host = Vec::new();
        let mut taken = HashSet::new();
        let mut ring = Vec::with_capacity(destinations.len() * RING_REPLICAS);
        let mut key = String::new();
        for (n, d) in destinations.iter().enumerate() {
            if !seen.insert((&d.host, &d.instance)) {
                return Err(format!(
                    "destination instance ({}, {}) is listed twice",
                    d.host,
                    d.instance.as_deref().unwrap_or("None")
                ));
            }
            let host = hosts.iter().position(|h| *h == d.host).unwrap_or_else(|| {
                hosts.push(&d.host);
                hosts.len() - 1
            });
            node_host.push(host as u32);
            for i in 0..RING_REPLICAS {
                key.clear();
                match hash {
                    HashType::CarbonCh => {
                        key.push('(');
                        python_repr_str(&d.host, &mut key);
                        key.push_str(", ");
                        match &d.instance {
                            Some(inst) => python_repr_str(inst, &mut key),
                            None => key.push_str("None"),
                        }
                        let _ = write!(key, "):{i}");
                    }
                    HashType::Fnv1aCh => {
                        let _ = write!(key, "{i}-{}", d.instance.as_deref().unwrap_or("None"));
                    }
                }
                let mut pos = hash.position(key.as_bytes());
                while !taken.insert(pos) {
                    pos += 1;
                }
                ring.push((pos, n as u32));
            }
        }
        ring.sort_unstable();
        Ok(HashRing {
            hash,
            ring,
            node_host,
            nodes: destinations.len(),
        })
    }

    /// Clears `out` and fills it with the indices (into the destination list) of the
    /// destinations of `metric`, as `ConsistentHashingRouter.getDestinations` yields
    /// them, for `replication_factor` and `diverse_replicas`.
    pub fn place(
        &self,
        metric: &[u8],
        replication_factor: usize,
        diverse_replicas: bool,
        out: &mut Vec<usize>,
    ) {
        out.clear();
        if self.ring.is_empty() || replication_factor == 0 {
            return;
        }
        let pos = self.hash.position(metric);
        self.place_at(pos, replication_factor, diverse_replicas, out);
    }

    /// [`HashRing::place`] for a metric whose ring position is known. Allocates only
    /// for rings of more than 64 nodes.
    fn place_at(
        &self,
        pos: u32,
        replication_factor: usize,
        diverse_replicas: bool,
        out: &mut Vec<usize>,
    ) {
        let len = self.ring.len();
        let start = self.ring.partition_point(|&(p, _)| p < pos) % len;
        // Nodes seen, and hosts taken: bit sets (vectors past 64).
        let mut seen = Bits::new(self.nodes);
        let mut hosts = Bits::new(self.nodes);
        let mut found = 0usize;
        let mut take = |node: u32, out: &mut Vec<usize>| -> bool {
            if diverse_replicas {
                let h = self.node_host[node as usize] as usize;
                if !hosts.insert(h) {
                    return false;
                }
            }
            out.push(node as usize);
            out.len() >= replication_factor
        };
        // carbon's get_nodes: with a single node it is yielded once up front, then the
        // ring walk yields it again.
        if self.nodes == 1 && take(self.ring[0].1, out) {
            return;
        }
        let mut index = start;
        let last = (start + len - 1) % len;
        while found < self.nodes && index != last {
            let node = self.ring[index].1;
            if seen.insert(node as usize) {
                found += 1;
                if take(node, out) {
                    return;
                }
            }
            index = (index + 1) % len;
        }
    }
}

/// A set of small integers: one word up to 64, a vector beyond.
enum Bits {
    Word(u64),
    Many(Vec<bool>),
}

impl Bits {
    fn new(n: usize) -> Bits {
        if n <= 64 {
            Bits::Word(0)
        } else {
            Bits::Many(vec![false; n])
        }
    }

    /// True when `i` was not in the set.
    fn insert(&mut self, i: usize) -> bool {
        match self {
            Bits::Word(w) => {
                let fresh = *w & (1 << i) == 0;
                *w |= 1 << i;
                fresh
            }
            Bits::Many(v) => !std::mem::replace(&mut v[i], true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_parse_as_carbon_parses_them() {
        let d = Destination::parse(" 10.0.0.1:2004:a ").unwrap();
        assert_eq!(
            (d.host.as_str(), d.port, d.instance.as_deref()),
            ("10.0.0.1", 2004, Some("a"))
        );
        let d = Destination::parse("[::1]:2104").unwrap();
        assert_eq!(
            (d.host.as_str(), d.port, d.instance.as_deref()),
            ("::1", 2104, None)
        );
        assert_eq!(d.socket_addr(), "[::1]:2104");
        let d = Destination::parse("h:1:").unwrap();
        assert_eq!(d.instance.as_deref(), Some(""));
        assert!(Destination::parse("nohost").is_err());
        assert!(Destination::parse("h:port").is_err());
    }

    #[test]
    fn repr_matches_python() {
        let r = |s: &str| {
            let mut o = String::new();
            python_repr_str(s, &mut o);
            o
        };
        assert_eq!(r("a"), "'a'");
        assert_eq!(r("it's"), "\"it's\"");
        assert_eq!(r("'\""), "'\\'\"'");
        assert_eq!(r("a\\b\n"), "'a\\\\b\\n'");
        assert_eq!(r("é\u{a0}"), "'é\\xa0'");
    }

    #[test]
    fn one_node_takes_everything_and_a_duplicate_is_refused() {
        let d = vec![Destination::parse("a:1").unwrap()];
        let ring = HashRing::new(&d, HashType::CarbonCh).unwrap();
        let mut out = Vec::new();
        ring.place(b"x.y", 1, true, &mut out);
        assert_eq!(out, vec![0]);
        let two = vec![
            Destination::parse("a:1:x").unwrap(),
            Destination::parse("a:2:x").unwrap(),
        ];
        assert!(HashRing::new(&two, HashType::CarbonCh).is_err());
    }
}
