//! `gds-gate bench`: the gate's own costs (CPU), `--gpu` (worker start-up, GPU verification, the
//! cufile reader against dd and KvikIO), `--parity` (reader parity and what recording latency and
//! CPU costs), `--stats` (the false alarms and detection of the baseline comparison and of the
//! change points over history; `--quick`: a twentieth of the simulations, not judged).

use std::path::Path;

use crate::baseline::simulate::Scale;
use crate::bench;
use crate::error::Error;
use crate::exit;

/// Which of `bench`'s measurements the command line chose.
pub enum Mode<'a> {
    Cpu,
    Gpu(bench::parity::Setting),
    Parity(bench::parity::Setting),
    /// The baseline simulation, with the history its noise is fitted to, at a scale.
    Stats(&'a Path, Scale),
}

/// `bench`'s measurements, as the command line chose them.
pub fn run(
    size: u64,
    runs: usize,
    dir: &Path,
    mode: Mode<'_>,
    rate: gds_model::units::Rate,
    console: &crate::console::Console,
) -> Result<u8, Error> {
    let table = match mode {
        Mode::Stats(source, scale) => return stats(console, source, scale),
        Mode::Gpu(setting) => Some(crate::bench::gpu::run(&setting, runs, dir)),
        Mode::Parity(setting) => Some(crate::bench::gpu::parity_only(&setting, runs, dir)),
        Mode::Cpu => None,
    };
    if let Some(table) = table {
        console.print(&table?);
        return Ok(exit::PASSED);
    }
    let report = bench::run(&bench::BenchOptions {
        size,
        runs,
        dir: dir.to_path_buf(),
        rate,
    })?;
    console.print(&report.to_string());
    Ok(exit::PASSED)
}

fn stats(console: &crate::console::Console, source: &Path, scale: Scale) -> Result<u8, Error> {
    let out = Path::new(crate::cli::DEFAULT_OUT);
    super::run::baseline::adopt_history(console, source, out)?;
    let history = crate::baseline::history::read(source)?;
    for skipped in &history.skipped {
        console.warning(skipped);
    }
    if !scale.judges_targets() {
        console.print(&format!(
            "quick: 1/{} of the cycles, histories and comparisons; figures are coarse and the targets are not judged",
            scale.divisor()
        ));
    }
    let (text, targets_met) = crate::baseline::simulate::bench_stats(&history, source, scale);
    console.print(&text);
    // What spreading a trial's passes over the run (`rounds:`) buys on a runner that drifts in
    // time: shown, not a target; the model is loose, fitted to one runner.
    console.print(&crate::baseline::schedule::table(scale).to_string());
    let (changes, changes_met) = crate::baseline::changes::simulate::bench_stats(&history, scale);
    console.print(&changes);
    Ok(if !scale.judges_targets() || (targets_met && changes_met) {
        exit::PASSED
    } else {
        exit::TRIAL_FAILED
    })
}
