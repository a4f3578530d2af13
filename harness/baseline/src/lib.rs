//! gds-baseline: how a trial is judged. Per-runner throughput statistics stored in
//! `baselines/<runner>.yaml`, the comparison of a run against them and its words, the runner
//! control that tells a slow runner from a slow trial, each trial's [`outcome`] (its own checks
//! and its judgement together) and the run's exit code, bless, the run history and its plots.
//!
//! The gate uses it in four places: after the trials, [`read`](file::read) the runner's baseline
//! (a damaged file stops the gate), [`compare`](compare::compare) the records and print
//! [`render::console`]; [`history::append`] one line; `bless` calls [`bless::bless`] (or, from a
//! saved report, `gds-report`'s `saved::SavedRun::bless`; from the history,
//! [`bless::history::bless_from_history`]); `report` calls [`plots_for_report`].

pub mod bless;
pub mod changes;
pub mod chart;
pub mod compare;
pub mod control;
pub mod cost;
pub mod creep;
pub mod decision;
pub mod error;
pub mod figures;
pub mod file;
pub mod fingerprint;
pub mod history;
pub mod judgement;
pub mod limitations;
pub mod message;
pub mod noise;
pub mod outcome;
pub mod plot;
pub mod probe;
pub mod render;
pub mod schedule;
pub mod shift_table;
pub mod simulate;
pub mod slow_runs;
pub mod stats;

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use bless::{BlessError, BlessOptions, BlessOutcome, Filter, bless, in_ci};
pub use compare::{Comparison, RunResults, compare};
pub use error::BaselineError;
pub use file::{Baseline, Loaded, Provenance};
pub use fingerprint::Fingerprint;
pub use judgement::{Judgement, Severity};

/// The default baselines folder, relative to the repository root.
pub const DEFAULT_DIR: &str = "baselines";

/// The runner key when `--runner` / `GDS_GATE_RUNNER` is not given: the host name, cut at the
/// first dot (`gpu01.lab.example` → `gpu01`), so the file name stays short and stable.
pub fn default_runner(hostname: &str) -> String {
    hostname.split('.').next().unwrap_or(hostname).to_string()
}

/// What `cargo xtask gds-gate report` produces from the history.
#[derive(Clone, Debug)]
pub struct PlotReport {
    pub plots: Vec<plot::PlotFile>,
    /// The charts, for summary.md.
    pub markdown: String,
    /// The level shifts of the history ([`shift_table`]), for summary.md.
    pub changes: String,
    /// History lines that could not be read, one note each.
    pub skipped: Vec<String>,
}

/// Reads the run history and writes one SVG per trial into `OUT/plots/`, with the runner's
/// baseline (already read) as the band.
pub fn plots_for_report(
    out: &Path,
    history: &Path,
    baseline: &Loaded,
    runner: &str,
    rate: gds_model::units::Rate,
) -> Result<PlotReport, BaselineError> {
    let history = history::read(history)?;
    let plots = plot::write_plots(&history, runner, baseline.present(), &plots_dir(out), rate)?;
    Ok(PlotReport {
        markdown: plot::markdown_charts(&plots, out, rate),
        changes: shift_table::markdown(&history, runner),
        plots,
        skipped: history.skipped,
    })
}

pub fn plots_dir(out: &Path) -> PathBuf {
    out.join("plots")
}
