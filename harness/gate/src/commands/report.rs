//! `gds-gate report`: the plots of this runner's history against its baseline, or with
//! `--merge DIR...` one report over several runs.

use std::path::{Path, PathBuf};

use super::run::baseline::runner_and_path;
use crate::baseline;
use crate::cli::BaselineArgs;
use crate::console::Console;
use crate::error::Error;
use crate::exit;
use crate::report::merge::merge_dirs;
use gds_model::units::Rate;

pub fn run(
    merge_inputs: &[PathBuf],
    out: &Path,
    baselines: &BaselineArgs,
    rate: Rate,
    console: &Console,
) -> Result<u8, Error> {
    if merge_inputs.is_empty() {
        plots(out, baselines, rate, console)
    } else {
        merge(merge_inputs, out, rate, console)
    }
}

/// `report --merge INPUT... --out OUT`, for the CLI: reads, merges, writes, prints the paths, and
/// returns the exit status of the merged outcome (as the gate's: 1 failed, 3 slower, 5 nothing
/// ran), or 4 when a report cannot be read or written.
pub fn merge(inputs: &[PathBuf], out: &Path, rate: Rate, console: &Console) -> Result<u8, Error> {
    let merged = merge_dirs(inputs, out, rate)?;
    console.say(&format!(
        "merged {} run(s): {}",
        merged.report.runs.len(),
        merged.report.report.totals.counts()
    ));
    console.reports(&merged.written);
    Ok(merged.report.exit_code())
}

/// `report`: the plots of this runner's history against its baseline, linked from summary.md.
fn plots(out: &Path, args: &BaselineArgs, rate: Rate, console: &Console) -> Result<u8, Error> {
    let hostname = crate::host::hostname();
    let (runner, path) = runner_and_path(args, &hostname)?;
    super::run::baseline::adopt_history(console, &args.history, out)?;
    let loaded = baseline::file::read(&path)?;
    let plots = baseline::plots_for_report(out, &args.history, &loaded, &runner, rate)?;
    for note in &plots.skipped {
        console.note(note);
    }
    for plot in &plots.plots {
        console.print(&format!("plot: {}", plot.path.display()));
    }
    let summary = out.join("summary.md");
    let text =
        std::fs::read_to_string(&summary).unwrap_or_default() + &plots.markdown + &plots.changes;
    gds_model::fsutil::write_atomically(&summary, text.as_bytes()).map_err(|source| {
        Error::File {
            path: summary,
            writing: true,
            source,
        }
    })?;
    Ok(exit::PASSED)
}
