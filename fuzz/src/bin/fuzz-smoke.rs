//! The stable fuzz driver: runs every target (or the ones named) on seeded random
//! inputs for a time or iteration budget, and fails on the first panic, writing the
//! input that caused it to a file.
//!
//! ```text
//! fuzz-smoke [TARGET...] [--secs N] [--iters M] [--min-iters K] [--seed S] [--corpus DIR] [--artifacts DIR]
//! ```
//!
//! `--min-iters K` runs a target past its `--secs` until it has had K inputs (for at
//! most ten times `--secs`), so that a slow, loaded machine still gives every target
//! its share of inputs.
//!
//! Inputs: first every seed file in `corpus/<target>/` as it is, then a mix of random
//! bytes (uniform, or from an alphabet of bytes that matter to the parsers) and seeds
//! mutated 1–8 times (flip, replace, insert, delete, duplicate, splice, truncate).
//! The same seed gives the same inputs, so a failure reproduces with `--seed`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sumi_fuzz::{Target, TARGETS};

struct Args {
    targets: Vec<String>,
    secs: f64,
    iters: Option<u64>,
    min_iters: u64,
    seed: u64,
    corpus: PathBuf,
    artifacts: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        targets: Vec::new(),
        secs: 5.0,
        iters: None,
        min_iters: 0,
        seed: 1,
        corpus: root.join("corpus"),
        artifacts: root.join("artifacts"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--secs" => {
                a.secs = value("--secs")?
                    .parse()
                    .map_err(|e| format!("--secs: {e}"))?
            }
            "--iters" => {
                a.iters = Some(
                    value("--iters")?
                        .parse()
                        .map_err(|e| format!("--iters: {e}"))?,
                )
            }
            "--min-iters" => {
                a.min_iters = value("--min-iters")?
                    .parse()
                    .map_err(|e| format!("--min-iters: {e}"))?
            }
            "--seed" => {
                a.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--corpus" => a.corpus = value("--corpus")?.into(),
            "--artifacts" => a.artifacts = value("--artifacts")?.into(),
            "--help" | "-h" => return Err(String::new()),
            name if !name.starts_with('-') => a.targets.push(name.to_string()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    for t in &a.targets {
        if sumi_fuzz::target(t).is_none() {
            return Err(format!("unknown target {t:?}"));
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
            eprintln!("{msg}\nusage: fuzz-smoke [TARGET...] [--secs N] [--iters M] [--min-iters K] [--seed S] [--corpus DIR] [--artifacts DIR]\ntargets: {}", names.join(" "));
            return ExitCode::from(2);
        }
    };
    let mut failed = false;
    for (name, target) in TARGETS {
        if !args.targets.is_empty() && !args.targets.iter().any(|t| t == name) {
            continue;
        }
        let seeds = load_corpus(&args.corpus.join(name));
        match run(*target, &seeds, &args) {
            Ok((iters, elapsed)) => println!(
                "{name:<24} ok   {iters:>10} inputs in {:.1} s ({:.0}/s), {} seeds",
                elapsed.as_secs_f64(),
                iters as f64 / elapsed.as_secs_f64().max(1e-9),
                seeds.len()
            ),
            Err(input) => {
                failed = true;
                let path = save_artifact(&args.artifacts, name, &input);
                println!(
                    "{name:<24} FAIL on a {}-byte input, written to {}",
                    input.len(),
                    path.display()
                );
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs one target; `Err(input)` on the first panic.
fn run(target: Target, seeds: &[Vec<u8>], args: &Args) -> Result<(u64, Duration), Vec<u8>> {
    let start = Instant::now();
    let budget = Duration::from_secs_f64(args.secs.max(0.0));
    let mut rng = Rng(args.seed ^ 0x5DEE_CE66_D1CE_4E5B);
    let mut iters = 0u64;
    let call = |input: &[u8]| catch_unwind(AssertUnwindSafe(|| target(input))).is_ok();
    for s in seeds {
        iters += 1;
        if !call(s) {
            return Err(s.clone());
        }
    }
    loop {
        let elapsed = start.elapsed();
        let timed_out = elapsed >= budget && (iters >= args.min_iters || elapsed >= budget * 10);
        if args.iters.is_some_and(|m| iters >= m) || (args.iters.is_none() && timed_out) {
            break;
        }
        let input = generate(&mut rng, seeds);
        iters += 1;
        if !call(&input) {
            return Err(input);
        }
    }
    Ok((iters, start.elapsed()))
}

fn load_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn save_artifact(dir: &Path, target: &str, input: &[u8]) -> PathBuf {
    let dir = dir.join(target);
    let hash = input.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    let path = dir.join(format!("crash-{hash:016x}"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        eprintln!("could not write {}: {e}", path.display());
    }
    path
}

/// splitmix64: small, seeded, good enough to pick bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes that change what the parsers do: separators, number syntax, the lead bytes of
/// multi-byte spaces, invalid UTF-8.
const ALPHABET: &[u8] = b" \t\n\r\x0b\x0c\x1c\x1f.-+_eE0123456789infaINFNa;=,()[]{}*?x\x00\x7f\xc2\x85\xa0\xe2\x80\xa8\xe3\xff";

fn generate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if seeds.is_empty() || rng.below(4) == 0 {
        let len = rng.below(512);
        let from_alphabet = rng.below(2) == 0;
        return (0..len)
            .map(|_| {
                if from_alphabet {
                    ALPHABET[rng.below(ALPHABET.len())]
                } else {
                    rng.next() as u8
                }
            })
            .collect();
    }
    let mut input = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        mutate(rng, &mut input, seeds);
    }
    input
}

fn mutate(rng: &mut Rng, v: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let pick = |rng: &mut Rng| {
        if rng.below(3) == 0 {
            rng.next() as u8
        } else {
            ALPHABET[rng.below(ALPHABET.len())]
        }
    };
    match rng.below(7) {
        0 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] ^= 1 << rng.below(8);
        }
        1 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] = pick(rng);
        }
        2 => {
            let i = rng.below(v.len() + 1);
            let b = pick(rng);
            v.insert(i, b);
        }
        3 if !v.is_empty() => {
            let i = rng.below(v.len());
            let n = 1 + rng.below((v.len() - i).min(16));
            v.drain(i..i + n);
        }
        4 if !v.is_empty() && v.len() < 1 << 16 => {
            let i = rng.below(v.len());
            let n = 1 + rng.below((v.len() - i).min(64));
            let chunk = v[i..i + n].to_vec();
            let at = rng.below(v.len() + 1);
            v.splice(at..at, chunk);
        }
        5 => {
            let other = &seeds[rng.below(seeds.len())];
            let from = rng.below(other.len() + 1);
            let at = rng.below(v.len() + 1);
            v.splice(at..at, other[from..].iter().copied());
        }
        _ => {
            let n = rng.below(v.len() + 1);
            v.truncate(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panics_on_bang(data: &[u8]) {
        assert!(!data.contains(&b'!'), "bang");
    }

    fn args(iters: u64, seed: u64) -> Args {
        Args {
            targets: Vec::new(),
            secs: 0.0,
            iters: Some(iters),
            min_iters: 0,
            seed,
            corpus: PathBuf::new(),
            artifacts: PathBuf::new(),
        }
    }

    #[test]
    fn finds_a_panicking_input_and_reproduces_it() {
        let seeds = vec![b"abc".to_vec()];
        let found = run(panics_on_bang, &seeds, &args(1_000_000, 7)).unwrap_err();
        assert!(found.contains(&b'!'));
        // same seed, same input
        let again = run(panics_on_bang, &seeds, &args(1_000_000, 7)).unwrap_err();
        assert_eq!(found, again);
    }

    #[test]
    fn a_failing_seed_is_reported_first() {
        let seeds = vec![b"ok".to_vec(), b"no!".to_vec()];
        assert_eq!(
            run(panics_on_bang, &seeds, &args(10, 1)).unwrap_err(),
            b"no!".to_vec()
        );
    }

    #[test]
    fn counts_iterations() {
        let (n, _) = run(|_| {}, &[b"x".to_vec()], &args(500, 1)).unwrap();
        assert_eq!(n, 500);
    }
}
