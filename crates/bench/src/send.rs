//! Sending the generated payload: one thread per carbon connection, large writes cut at
//! line ends, optionally paced, abortable from the measuring thread.
//!
//! Connections are opened before the clock starts, so "first byte" is the moment the
//! sender threads start writing. Each thread owns its buffer and frees it when done.

use std::io::Write;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::BenchError;
use crate::pacer::Pacer;

/// Bytes per write when not paced: large enough that syscalls cost nothing.
const WRITE_BYTES: usize = 1 << 20;

/// Opens `n` connections to the carbon listener at `addr`.
pub fn connect_all(addr: &str, n: usize) -> Result<Vec<TcpStream>, BenchError> {
    let connect_err = |source| BenchError::Connect {
        addr: addr.to_string(),
        source,
    };
    let sock = addr
        .to_socket_addrs()
        .map_err(connect_err)?
        .next()
        .ok_or_else(|| {
            connect_err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "address resolves to nothing",
            ))
        })?;
    (0..n)
        .map(|_| TcpStream::connect_timeout(&sock, Duration::from_secs(10)).map_err(connect_err))
        .collect()
}

/// What the sender threads report when they are all done.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    /// Points handed to the kernel.
    pub points: u64,
    /// Seconds from the first byte to the end of the last write.
    pub secs: f64,
}

/// The running sender threads.
pub struct Senders {
    started: Instant,
    addr: String,
    threads: Vec<JoinHandle<Result<Instant, BenchError>>>,
    /// End of the last write of the threads joined so far.
    last_write: Instant,
    /// Errors of the threads joined so far, not yet handed out.
    errors: Vec<BenchError>,
    streams: Vec<TcpStream>,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Senders {
    /// Starts one thread per stream, sending `buffers[i]` (holding `points[i]` lines) on
    /// `streams[i]`, paced to `rate` points a second over all of them when given.
    pub fn start(
        addr: &str,
        streams: Vec<TcpStream>,
        buffers: Vec<Vec<u8>>,
        points: &[u64],
        rate: Option<u64>,
    ) -> Result<Senders, BenchError> {
        let started = Instant::now();
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let conns = streams.len().max(1);
        let pacer = rate.map(|r| {
            // A burst of 50 ms keeps the pace smooth without starving a connection.
            Arc::new(Mutex::new(Pacer::new(r as f64, r as f64 / 20.0, started)))
        });
        let mut clones = Vec::with_capacity(streams.len());
        let mut threads = Vec::with_capacity(streams.len());
        for (conn, (stream, buffer)) in streams.into_iter().zip(buffers).enumerate() {
            let lines = points.get(conn).copied().unwrap_or(0).max(1);
            let chunk = match rate {
                None => WRITE_BYTES,
                Some(r) => {
                    // About 20 ms of this connection's share per write.
                    let line_bytes = (buffer.len() as u64 / lines).max(1);
                    let bytes = line_bytes.saturating_mul(r) / 50 / conns as u64;
                    usize::try_from(bytes)
                        .unwrap_or(WRITE_BYTES)
                        .clamp(1, WRITE_BYTES)
                }
            };
            // Stops the threads already sending before giving up.
            let abort_started = |clones: &[TcpStream]| {
                stop.store(true, Ordering::Relaxed);
                for s in clones {
                    let _ = s.shutdown(Shutdown::Both);
                }
            };
            match stream.try_clone() {
                Ok(clone) => clones.push(clone),
                Err(e) => {
                    abort_started(&clones);
                    return Err(BenchError::io(format!("clone carbon connection {conn}"), e));
                }
            }
            let job = Job {
                conn,
                addr: addr.to_string(),
                stream,
                buffer,
                chunk,
                pacer: pacer.clone(),
                sent: Arc::clone(&sent),
                stop: Arc::clone(&stop),
            };
            let spawned = std::thread::Builder::new()
                .name(format!("bench-send-{conn}"))
                .spawn(move || job.run());
            match spawned {
                Ok(thread) => threads.push(thread),
                Err(e) => {
                    abort_started(&clones);
                    return Err(BenchError::io("start a sender thread", e));
                }
            }
        }
        Ok(Senders {
            started,
            addr: addr.to_string(),
            threads,
            last_write: started,
            errors: Vec::new(),
            streams: clones,
            sent,
            stop,
        })
    }

    /// The instant the senders started writing.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Points handed to the kernel so far, over all connections.
    pub fn sent_points(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Whether every sender thread has finished (successfully or not).
    pub fn finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// The first error of a sender thread that has finished, if any (it is handed out
    /// once).
    pub fn take_error(&mut self) -> Option<BenchError> {
        let mut i = 0;
        while i < self.threads.len() {
            if self.threads[i].is_finished() {
                let thread = self.threads.swap_remove(i);
                let outcome = thread.join().unwrap_or_else(|_| Err(self.panicked()));
                match outcome {
                    Ok(t) => self.last_write = self.last_write.max(t),
                    Err(e) => self.errors.push(e),
                }
            } else {
                i += 1;
            }
        }
        if self.errors.is_empty() {
            None
        } else {
            Some(self.errors.remove(0))
        }
    }

    /// Stops every sender: their writes fail at once and the threads end.
    pub fn abort(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in &self.streams {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Waits for every thread and returns what was sent, or the first error.
    pub fn join(mut self) -> Result<Sent, BenchError> {
        for thread in std::mem::take(&mut self.threads) {
            match thread.join().unwrap_or_else(|_| Err(self.panicked())) {
                Ok(t) => self.last_write = self.last_write.max(t),
                Err(e) => self.errors.push(e),
            }
        }
        if !self.errors.is_empty() {
            return Err(self.errors.remove(0));
        }
        Ok(Sent {
            points: self.sent.load(Ordering::Relaxed),
            secs: self.last_write.duration_since(self.started).as_secs_f64(),
        })
    }

    fn panicked(&self) -> BenchError {
        BenchError::io(
            format!("send to {}", self.addr),
            std::io::Error::other("a sender thread panicked"),
        )
    }
}

/// One connection's work.
struct Job {
    conn: usize,
    addr: String,
    stream: TcpStream,
    buffer: Vec<u8>,
    chunk: usize,
    pacer: Option<Arc<Mutex<Pacer>>>,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Job {
    /// Writes the whole buffer, then closes the write side; returns when the last write
    /// ended.
    fn run(mut self) -> Result<Instant, BenchError> {
        let mut offset = 0;
        let mut mine = 0u64;
        while offset < self.buffer.len() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(self.error(mine, std::io::ErrorKind::Interrupted.into()));
            }
            let end = chunk_end(&self.buffer, offset, self.chunk);
            let piece = &self.buffer[offset..end];
            let lines = piece.iter().filter(|&&b| b == b'\n').count() as u64;
            if let Some(pacer) = &self.pacer {
                // A poisoned lock only means another sender panicked; its state is fine.
                let wait = pacer
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .reserve(lines, Instant::now());
                if !wait.is_zero() {
                    std::thread::sleep(wait);
                }
            }
            if let Err(e) = self.stream.write_all(piece) {
                return Err(self.error(mine, e));
            }
            mine += lines;
            self.sent.fetch_add(lines, Ordering::Relaxed);
            offset = end;
        }
        let done = Instant::now();
        // Free the payload now rather than when the run ends.
        self.buffer = Vec::new();
        if let Err(e) = self.stream.shutdown(Shutdown::Write) {
            return Err(self.error(mine, e));
        }
        Ok(done)
    }

    fn error(&self, sent_points: u64, source: std::io::Error) -> BenchError {
        BenchError::Send {
            conn: self.conn,
            addr: self.addr.clone(),
            sent_points,
            source,
        }
    }
}

/// The end of the write starting at `start`: about `target` bytes, cut after a newline
/// (after the first newline past `target` when a line is longer than that).
fn chunk_end(buf: &[u8], start: usize, target: usize) -> usize {
    let limit = start.saturating_add(target.max(1)).min(buf.len());
    if limit == buf.len() {
        return limit;
    }
    if let Some(i) = buf[start..limit].iter().rposition(|&b| b == b'\n') {
        return start + i + 1;
    }
    match buf[limit..].iter().position(|&b| b == b'\n') {
        Some(i) => limit + i + 1,
        None => buf.len(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn chunks_end_after_a_newline() {
        let buf = b"aaa 1 1\nbb 2 2\ncccccccccc 3 3\n";
        assert_eq!(chunk_end(buf, 0, 10), 8);
        assert_eq!(chunk_end(buf, 8, 3), 15, "a long line goes whole");
        assert_eq!(chunk_end(buf, 15, 1000), buf.len());
        assert_eq!(chunk_end(buf, 0, 0), 8);
        let mut offset = 0;
        let mut pieces = Vec::new();
        while offset < buf.len() {
            let end = chunk_end(buf, offset, 9);
            pieces.push(&buf[offset..end]);
            offset = end;
        }
        assert_eq!(pieces.concat(), buf.to_vec());
        assert!(pieces.iter().all(|p| p.ends_with(b"\n")));
    }

    /// A listener that reads every connection to the end and returns what it got.
    fn sink() -> (String, JoinHandle<Vec<Vec<u8>>>, usize) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let n = 2;
        let handle = std::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..n {
                let (mut c, _) = listener.accept().expect("accept");
                let mut buf = Vec::new();
                c.read_to_end(&mut buf).expect("read");
                got.push(buf);
            }
            got
        });
        (addr, handle, n)
    }

    #[test]
    fn every_byte_arrives_and_points_are_counted() {
        let (addr, server, n) = sink();
        let streams = connect_all(&addr, n).expect("connect");
        let a: Vec<u8> = (0..5000)
            .flat_map(|i| format!("a.b {i} 1\n").into_bytes())
            .collect();
        let b = b"c.d 1 1\n".repeat(3).to_vec();
        let senders = Senders::start(&addr, streams, vec![a.clone(), b.clone()], &[5000, 3], None)
            .expect("start");
        let sent = senders.join().expect("sent");
        assert_eq!(sent.points, 5003);
        let mut got = server.join().expect("server");
        got.sort_by_key(Vec::len);
        assert_eq!(got, vec![b, a]);
    }

    #[test]
    fn a_paced_send_takes_its_time() {
        let (addr, server, n) = sink();
        let streams = connect_all(&addr, n).expect("connect");
        let line = b"x.y 1 1\n";
        let buffers = vec![line.repeat(100), line.repeat(100)];
        let start = Instant::now();
        let senders =
            Senders::start(&addr, streams, buffers, &[100, 100], Some(1000)).expect("start");
        let sent = senders.join().expect("sent");
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(sent.points, 200);
        // 200 points at 1000/s, with a 50-point burst allowance: at least 0.15 s.
        assert!(secs >= 0.14, "{secs}");
        assert!(secs < 5.0, "{secs}");
        server.join().expect("server");
    }

    #[test]
    fn a_refused_connection_is_a_connect_error() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        drop(listener);
        let err = connect_all(&addr, 2).expect_err("refused");
        assert!(matches!(err, BenchError::Connect { .. }), "{err}");
        assert!(err.to_string().contains(&addr), "{err}");
    }

    #[test]
    fn abort_ends_senders_blocked_on_a_server_that_does_not_read() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let streams = connect_all(&addr, 1).expect("connect");
        // 64 MiB cannot fit in socket buffers: the writer blocks.
        let buffer = b"a.b 1 1\n".repeat(8 << 20);
        let mut senders =
            Senders::start(&addr, streams, vec![buffer], &[8 << 20], None).expect("start");
        let start = Instant::now();
        while senders.sent_points() == 0 && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!senders.finished());
        senders.abort();
        let err = senders.join().expect_err("aborted");
        assert!(matches!(err, BenchError::Send { conn: 0, .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(10));
        drop(listener);
    }
}
