//! `gds-gate validate [PATH...]`: check suite files, run nothing.

use std::path::PathBuf;

use crate::error::Error;
use crate::escape::terminal;
use crate::exit;
use gds_model::scenario;

/// Checks suite files; prints a line per good file, and returns every error in full.
pub fn run(paths: &[PathBuf], console: &crate::console::Console) -> Result<u8, Error> {
    let paths = if paths.is_empty() {
        shipped_suites()
    } else {
        paths.to_vec()
    };
    if paths.is_empty() {
        return Err(Error::Usage(
            "no suite files given and none found in `scenarios/`; pass the files to check".into(),
        ));
    }
    let mut errors = Vec::new();
    for path in &paths {
        match scenario::load(path) {
            Ok(suite) => {
                let trials = scenario::expand(&suite).len();
                console.print(&format!(
                    "ok: {} ({} scenarios, {trials} trials)",
                    terminal(&path.display().to_string()),
                    suite.scenarios.len()
                ));
            }
            // A file's several errors are listed one by one, as those of several files are.
            Err(error) => errors.extend(error.into_each()),
        }
    }
    if errors.is_empty() {
        Ok(exit::PASSED)
    } else {
        Err(Error::Suites(errors))
    }
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
