//! `gds-gate report`: the plots of this runner's history against its baseline, or with
//! `--merge DIR...` one report over several runs.

use std::path::{Path, PathBuf};

use crate::cli::BaselineArgs;
use crate::report::merge::merge_dirs;
use gds_model::error_chain;

pub fn run(merge_inputs: &[PathBuf], out: &Path, baselines: &BaselineArgs) -> u8 {
    if merge_inputs.is_empty() {
        super::run::report_command(out, baselines)
    } else {
        merge(merge_inputs, out)
    }
}

/// `report --merge INPUT... --out OUT`, for the CLI: reads, merges, writes, prints the paths, and
/// returns the exit status of the merged outcome (as the gate's: 1 failed, 3 slower, 5 nothing
/// ran), or 4 when a report cannot be read or written.
pub fn merge(inputs: &[PathBuf], out: &Path) -> u8 {
    match merge_dirs(inputs, out) {
        Ok(merged) => {
            let totals = merged.report.report.totals;
            eprintln!(
                "merged {} run(s): {} passed, {} failed, {} ignored, {} filtered out",
                merged.report.runs.len(),
                totals.passed,
                totals.failed,
                totals.ignored,
                totals.filtered_out
            );
            let names: Vec<String> = merged
                .written
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            eprintln!("reports: {}", names.join(", "));
            merged.report.exit_code()
        }
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            super::merge_error_code(&error)
        }
    }
}
