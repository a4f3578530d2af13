//! The live view's source and its plain form: each worker reports its passes to the progress
//! file in its trial folder, and a short trial leaves libtest's result line whole in a log.

pub mod support;

use gds_model::progress::PassProgress;
use support::{SMALL, Scratch};

#[test]
fn workers_report_every_pass_and_short_trials_keep_their_line_whole() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|line| line.starts_with("test [posix] small::read"));
    assert!(line.is_some_and(|l| l.ends_with(" ok")), "{run:?}");
    assert!(!run.stderr.contains("progress:"), "{run:?}");
    let folders: Vec<_> = std::fs::read_dir(scratch.out().join("trials"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let progress = PassProgress::read(&folders[0].join("progress")).expect("a progress file");
    // SMALL: the default warmup pass and 2 measured ones.
    assert_eq!((progress.done, progress.total), (3, 3), "{progress:?}");
    assert!(progress.gbps > 0.0, "{progress:?}");
}
