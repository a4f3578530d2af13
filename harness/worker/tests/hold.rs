//! A worker started ahead, while the previous trial may still read the same files, holds before
//! its first pass's preparation: until the gate releases it, it drops no page and clears nothing.
//! A posix worker on a small file in the build directory (a disk: its pages can be dropped).

use std::path::Path;
use std::time::Duration;

use gds_model::protocol::{RELEASED, WorkerSpec};
use gds_model::record::{DROPPED_PHASE, HELD_PHASE};
use gds_model::scenario::{FileSet, Pattern};
use gds_worker::writer::posix::PosixWriter;

/// Fraction of `path`'s pages in the page cache.
fn resident(path: &Path) -> f64 {
    let file = std::fs::File::open(path).unwrap();
    let size = file.metadata().unwrap().len();
    gds_model::cache::resident_fraction(&file, size).unwrap()
}

#[test]
fn a_held_worker_drops_no_page_before_its_release() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let files = FileSet::Generated {
        size: 1 << 20,
        seed: 11,
        count: 1,
    };
    let plan = gds_model::write::write_plan(dir.path(), &files, &Pattern::Whole).unwrap();
    // Written through the page cache: its pages stay there until someone drops them.
    PosixWriter::write_generated(&plan).unwrap();
    let path = plan.files[0].path.clone();
    assert!(resident(&path) > 0.5, "the written file is not cached");
    let suite = gds_model::scenario::parse(
        Path::new("hold.yaml"),
        "scenarios:\n  - { name: t, reader: posix, cache: cold, files: { size: 1MiB, seed: 11 }, warmup: 0, repetitions: 1 }\n",
    )
    .unwrap();
    let trial = gds_model::scenario::expand(&suite).remove(0);
    let mut spec = WorkerSpec::new(trial, plan);
    spec.hold_for_release = Some(dir.path().to_path_buf());
    let worker = std::thread::spawn(move || gds_worker::trial::run(spec));
    // Started up and holding: what the previous trial reads is still cached.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!worker.is_finished(), "the worker did not hold");
    assert!(
        resident(&path) > 0.5,
        "the held worker dropped its file's pages before its release"
    );
    std::fs::write(dir.path().join(RELEASED), b"").unwrap();
    let result = worker.join().unwrap();
    assert!(result.failure.is_none(), "{:?}", result.failure);
    let phases: Vec<String> = result
        .measurement
        .unwrap()
        .setup
        .into_iter()
        .map(|(phase, _)| phase)
        .collect();
    let at = |name: &str| phases.iter().position(|phase| phase == name);
    assert!(at(HELD_PHASE) < at(DROPPED_PHASE), "{phases:?}");
    assert!(at(HELD_PHASE).is_some(), "{phases:?}");
}
