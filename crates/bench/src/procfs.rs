//! What the kernel says about a process and a directory: CPU time and peak memory from
//! `/proc/<pid>/{stat,status}`, allocated bytes of a directory tree (as `du` counts them).
//!
//! The parsers take the file's text so they are tested on fixed samples; the readers
//! around them only add the file access.

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::BenchError;

/// CPU time a process has used, all threads together, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Time in user mode.
    pub user: u64,
    /// Time in kernel mode.
    pub system: u64,
}

/// CPU time in seconds over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuSecs {
    /// Seconds in user mode.
    pub user: f64,
    /// Seconds in kernel mode.
    pub system: f64,
}

impl CpuSecs {
    /// User plus system seconds (rounded to the microsecond, so that 0.13 + 0.1 prints
    /// as 0.23 and not 0.22999999999999998).
    pub fn total(&self) -> f64 {
        ((self.user + self.system) * 1e6).round() / 1e6
    }
}

impl CpuTicks {
    /// The CPU time between `earlier` and `self`, in seconds at `ticks_per_sec`.
    pub fn since(&self, earlier: CpuTicks, ticks_per_sec: u64) -> CpuSecs {
        let hz = ticks_per_sec.max(1) as f64;
        CpuSecs {
            user: self.user.saturating_sub(earlier.user) as f64 / hz,
            system: self.system.saturating_sub(earlier.system) as f64 / hz,
        }
    }
}

/// Parses `utime` and `stime` (fields 14 and 15) out of a `/proc/<pid>/stat` line.
///
/// The command name (field 2) is in parentheses and may hold spaces and parentheses,
/// so fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Result<CpuTicks, BenchError> {
    let bad = |detail: &str| BenchError::Parse {
        what: "/proc stat",
        detail: format!("{detail} in {:?}", truncate(text, 120)),
    };
    let close = text
        .rfind(')')
        .ok_or_else(|| bad("no ')' after the command name"))?;
    // After ")" come field 3 (state) onwards: utime is field 14, the 12th of these.
    let mut rest = text[close + 1..].split_ascii_whitespace().skip(11);
    let mut field = |name: &str| -> Result<u64, BenchError> {
        let raw = rest
            .next()
            .ok_or_else(|| bad(&format!("no {name} field")))?;
        raw.parse()
            .map_err(|_| bad(&format!("{name} {raw:?} is not a number")))
    };
    let user = field("utime")?;
    let system = field("stime")?;
    Ok(CpuTicks { user, system })
}

/// Reads the CPU ticks of process `pid` (`"self"` for this process).
pub fn read_cpu(pid: &str) -> Result<CpuTicks, BenchError> {
    let path = format!("/proc/{pid}/stat");
    let text =
        std::fs::read_to_string(&path).map_err(|e| BenchError::io(format!("read {path}"), e))?;
    parse_stat(&text)
}

/// Clock ticks per second of the CPU times in `/proc` (`sysconf(_SC_CLK_TCK)`, 100 on
/// every common Linux build, used when sysconf fails).
pub fn ticks_per_sec() -> u64 {
    // SAFETY: sysconf only reads a configuration value; it has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100)
}

/// The value of a `kB` line of `/proc/<pid>/status` (such as `VmHWM`), in bytes.
pub fn parse_status_kib(text: &str, key: &str) -> Result<u64, BenchError> {
    let bad = |detail: String| BenchError::Parse {
        what: "/proc status",
        detail,
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k != key {
            continue;
        }
        let mut parts = v.split_ascii_whitespace();
        let number = parts
            .next()
            .ok_or_else(|| bad(format!("{key} has no value")))?;
        let kib: u64 = number
            .parse()
            .map_err(|_| bad(format!("{key} value {number:?} is not a number")))?;
        return match parts.next() {
            Some("kB") | None => Ok(kib.saturating_mul(1024)),
            Some(unit) => Err(bad(format!("{key} has unit {unit:?}, expected kB"))),
        };
    }
    Err(bad(format!("no {key} line")))
}

/// The peak resident set size (`VmHWM`) of process `pid`, in bytes.
pub fn read_peak_rss(pid: &str) -> Result<u64, BenchError> {
    let path = format!("/proc/{pid}/status");
    let text =
        std::fs::read_to_string(&path).map_err(|e| BenchError::io(format!("read {path}"), e))?;
    parse_status_kib(&text, "VmHWM")
}

/// Bytes allocated on disk under `root` (blocks × 512, as `du` counts them): every file
/// and directory once, hard links once, symbolic links not followed. Entries that vanish
/// during the walk (a server compacting) are skipped.
pub fn disk_usage(root: &Path) -> Result<u64, BenchError> {
    let mut seen = HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound && path != root => continue,
            Err(e) => return Err(BenchError::io(format!("stat {}", path.display()), e)),
        };
        if meta.nlink() > 1 && !meta.is_dir() && !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        total = total.saturating_add(meta.blocks().saturating_mul(512));
        if meta.is_dir() {
            let entries = match std::fs::read_dir(&path) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(BenchError::io(format!("list {}", path.display()), e)),
            };
            for entry in entries {
                match entry {
                    Ok(entry) => stack.push(entry.path()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(BenchError::io(format!("list {}", path.display()), e)),
                }
            }
        }
    }
    Ok(total)
}

/// At most `max` characters of `s`, for error messages.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "10733 (cat) R 10690 10690 6608 0 -1 4194304 100 0 0 0 \
                        1234 567 0 0 20 0 1 0 104484 3133440 364 18446744073709551615";

    #[test]
    fn stat_gives_utime_and_stime() {
        let t = parse_stat(STAT).expect("parses");
        assert_eq!(
            t,
            CpuTicks {
                user: 1234,
                system: 567
            }
        );
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_is_skipped() {
        let text = STAT.replace("(cat)", "(my (odd) server x)");
        assert_eq!(
            parse_stat(&text).expect("parses"),
            CpuTicks {
                user: 1234,
                system: 567
            }
        );
    }

    #[test]
    fn a_truncated_or_garbled_stat_is_an_error() {
        assert!(parse_stat("").is_err());
        assert!(parse_stat("1 (x) R 1 2 3").is_err());
        let garbled = STAT.replace("1234", "12x4");
        let err = parse_stat(&garbled).expect_err("bad utime").to_string();
        assert!(err.contains("utime") && err.contains("12x4"), "{err}");
    }

    #[test]
    fn cpu_seconds_between_two_readings() {
        let a = CpuTicks {
            user: 100,
            system: 50,
        };
        let b = CpuTicks {
            user: 350,
            system: 60,
        };
        let d = b.since(a, 100);
        assert_eq!(
            d,
            CpuSecs {
                user: 2.5,
                system: 0.1
            }
        );
        assert_eq!(d.total(), 2.6);
        assert_eq!(
            CpuSecs {
                user: 0.13,
                system: 0.1
            }
            .total(),
            0.23
        );
        // A reading from another process (pid reused) never gives negative time.
        assert_eq!(a.since(b, 100).total(), 0.0);
    }

    #[test]
    fn this_process_has_readable_cpu_and_peak_rss() {
        assert!(ticks_per_sec() > 0);
        read_cpu("self").expect("own stat");
        let hwm = read_peak_rss("self").expect("own status");
        assert!(hwm > 1024 * 1024, "{hwm}");
    }

    #[test]
    fn status_lines_in_kib_become_bytes() {
        let text = "Name:\tsumi\nVmPeak:\t  500 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(parse_status_kib(text, "VmHWM").expect("hwm"), 2048 * 1024);
        assert_eq!(parse_status_kib(text, "VmRSS").expect("rss"), 1024 * 1024);
        let missing = parse_status_kib(text, "VmSwap")
            .expect_err("absent")
            .to_string();
        assert!(missing.contains("no VmSwap line"), "{missing}");
        assert!(parse_status_kib("VmHWM:\t x kB\n", "VmHWM").is_err());
        assert!(parse_status_kib("VmHWM:\t 12 MB\n", "VmHWM").is_err());
    }

    #[test]
    fn disk_usage_counts_allocated_blocks_once() {
        let dir = std::env::temp_dir().join(format!("sumi-bench-du-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
        std::fs::write(dir.join("sub/a"), vec![1u8; 100_000]).expect("write");
        let empty_tree = {
            let d = std::fs::symlink_metadata(&dir).expect("stat").blocks()
                + std::fs::symlink_metadata(dir.join("sub"))
                    .expect("stat")
                    .blocks();
            d * 512
        };
        let one = disk_usage(&dir).expect("du");
        assert!(one >= empty_tree + 100_000, "{one}");
        // A hard link is counted once.
        std::fs::hard_link(dir.join("sub/a"), dir.join("b")).expect("link");
        assert_eq!(disk_usage(&dir).expect("du"), one);
        std::fs::remove_dir_all(&dir).expect("cleanup");
        assert!(disk_usage(&dir).is_err(), "a missing root is an error");
    }

    #[test]
    fn truncate_cuts_on_characters() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("aéb", 2), "aé…");
    }
}
