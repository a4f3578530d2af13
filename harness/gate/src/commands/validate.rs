//! `gds-gate validate [PATH...]`: check suite files, run nothing.

use std::path::PathBuf;

use crate::escape::terminal;
use crate::exit;
use gds_model::error_chain;
use gds_model::scenario;

/// Checks suite files; prints one line per file, every error in full.
pub fn run(paths: &[PathBuf]) -> u8 {
    let paths = if paths.is_empty() {
        shipped_suites()
    } else {
        paths.to_vec()
    };
    if paths.is_empty() {
        eprintln!(
            "error: no suite files given and none found in `scenarios/`; pass the files to check"
        );
        return exit::USAGE;
    }
    let mut failed = false;
    for path in &paths {
        match scenario::load(path) {
            Ok(suite) => {
                let trials = scenario::expand(&suite).len();
                println!(
                    "ok: {} ({} scenarios, {trials} trials)",
                    terminal(&path.display().to_string()),
                    suite.scenarios.len()
                );
            }
            Err(error) => {
                eprintln!("error: {}", terminal(&error_chain(&error)));
                failed = true;
            }
        }
    }
    if failed { exit::USAGE } else { exit::PASSED }
}

/// `scenarios/*.yaml`, sorted.
fn shipped_suites() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("scenarios")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    paths.sort();
    paths
}
