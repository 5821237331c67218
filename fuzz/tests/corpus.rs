//! Every target has seed inputs in `corpus/<target>/`, and the generated ones are the
//! generators' current output, so that a change of the codec or WAL format cannot leave
//! the smoke run starting from stale seeds unnoticed.
//!
//! `SUMI_FUZZ_WRITE_CORPUS=1 cargo test -p sumi-fuzz --test corpus` (re)writes them.

use std::path::Path;

#[test]
fn every_target_has_seeds() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, _) in sumi_fuzz::TARGETS {
        let files = std::fs::read_dir(corpus.join(name))
            .map(|rd| {
                rd.filter(|e| e.as_ref().is_ok_and(|e| e.path().is_file()))
                    .count()
            })
            .unwrap_or(0);
        assert!(files > 0, "no seed inputs in corpus/{name}/");
    }
}

#[test]
fn generated_seeds_are_checked_in_as_generated() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let write = std::env::var_os("SUMI_FUZZ_WRITE_CORPUS").is_some_and(|v| v == "1");
    for (target, seeds) in sumi_fuzz::GENERATED_CORPORA {
        let dir = corpus.join(target);
        for (file, bytes) in seeds() {
            let path = dir.join(file);
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            let on_disk = std::fs::read(&path).unwrap_or_default();
            assert!(
                on_disk == bytes,
                "{} differs from its generator: rewrite the corpus with \
                 SUMI_FUZZ_WRITE_CORPUS=1 cargo test -p sumi-fuzz --test corpus",
                path.display()
            );
            let target_fn = sumi_fuzz::target(target).unwrap();
            target_fn(&bytes);
        }
    }
}
