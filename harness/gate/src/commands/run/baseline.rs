//! The run against its runner's baseline: compare, append to the history, render the plots, write
//! the reports with all of it, and pick the exit code. And `bless`, which writes the baseline.

use std::path::{Path, PathBuf};

use crate::baseline::{
    self, BlessOptions, Filter, Fingerprint, Provenance, RunResults, file, history, render,
};
use crate::cli::{BaselineArgs, RunArgs};
use crate::exit;
use crate::report;
use gds_model::error_chain;
use gds_model::record::TrialRecord;

use super::Outcome;

/// The runner's name and its baseline file.
fn runner_and_path(args: &BaselineArgs, hostname: &str) -> Result<(String, PathBuf), u8> {
    let runner = args
        .runner
        .clone()
        .unwrap_or_else(|| baseline::default_runner(hostname));
    match file::path_for(&args.baselines, &runner) {
        Ok(path) => Ok((runner, path)),
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            Err(exit::USAGE)
        }
    }
}

/// What the runner is, from the host and from what the workers reported.
fn fingerprint(outcome: &Outcome, data_dir: &Path) -> Fingerprint {
    let mut fingerprint = baseline::probe::probe(&outcome.report.host, data_dir);
    let measurements = || {
        outcome
            .report
            .trials
            .iter()
            .filter_map(|trial| trial.measurement.as_ref())
    };
    fingerprint.libcufile =
        measurements().find_map(|m| m.cufile.as_ref().map(|c| c.version.clone()));
    fingerprint.kvikio =
        measurements().find_map(|m| m.kvikio.as_ref().map(|k| k.kvikio_version.clone()));
    fingerprint
}

pub fn finish_run(args: &RunArgs, mut outcome: Outcome) -> u8 {
    let (runner, path) = match runner_and_path(&args.baselines, &outcome.report.host.hostname) {
        Ok(found) => found,
        Err(code) => return code,
    };
    // A baseline that cannot be read is an error, never "no baseline": that would pass anything.
    let loaded = match file::read(&path) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            return exit::SETUP;
        }
    };
    let fingerprint = fingerprint(&outcome, &args.inputs.data_dir);
    let run = RunResults {
        records: &outcome.report.trials,
        defined: Some(&outcome.defined),
        fingerprint: &fingerprint,
    };
    let comparison = baseline::compare(&loaded, &path, &runner, &run);
    eprint!("{}", render::console(&comparison));

    let history_line = history::HistoryLine::new(
        outcome.report.started_at.clone(),
        &runner,
        &outcome.report.host.hostname,
        &fingerprint,
        &outcome.report.trials,
    );
    let mut extra = String::new();
    match history::append(&history::path_in(&args.out), &history_line)
        .and_then(|()| baseline::plots_for_report(&args.out, &path, &runner))
    {
        Ok(plots) => extra.push_str(&render::markdown(&comparison, &plots.plots, &args.out)),
        Err(error) => {
            eprintln!(
                "warning: no history or plots this run: {}",
                error_chain(&error)
            );
            extra.push_str(&render::markdown(&comparison, &[], &args.out));
        }
    }
    let comparison_code = comparison.exit_code();
    outcome.report.runner = Some(runner);
    outcome.report.fingerprint = Some(fingerprint);
    outcome.report.baseline = Some(comparison);
    match report::write_all(&args.out, &outcome.report, &extra) {
        Ok(paths) => {
            let names: Vec<String> = paths
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            eprintln!("reports: {}", names.join(", "));
        }
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            return exit::SETUP;
        }
    }
    // In GitHub Actions: point at the scenario line of each failed or slower trial.
    if std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true") {
        for line in report::annotations::github_annotations(&outcome.report) {
            println!("{line}");
        }
    }
    if !outcome.consistent {
        eprintln!(
            "error: libtest's count of failures differs from the recorded trials; this is a bug in gds-gate"
        );
        return exit::SETUP;
    }
    if outcome.report.totals.failed > 0 {
        return exit::TRIAL_FAILED;
    }
    comparison_code.unwrap_or_else(|| {
        crate::exit::for_trials(outcome.report.totals.failed, outcome.report.totals.passed)
    })
}

pub struct BlessRequest {
    pub from: Option<PathBuf>,
    pub accept_fingerprint: bool,
    pub remove_missing: bool,
    pub refresh: bool,
    pub run: RunArgs,
}

/// `bless`: refuses in CI before anything runs; otherwise runs the selected trials (or reads a
/// saved report) and writes the baseline from the trials that passed every non-throughput check.
pub fn bless_command(request: BlessRequest, command: Vec<String>) -> u8 {
    let args = &request.run;
    let filter = Filter {
        patterns: args.libtest.filter.iter().cloned().collect(),
        exact: args.libtest.exact,
    };
    let hostname = crate::host::hostname();
    let saved = match &request.from {
        Some(path) => match report::saved::load_report(path) {
            Ok(saved) => Some(saved),
            Err(error) => {
                eprintln!("error: {}", error_chain(&error));
                return exit::USAGE;
            }
        },
        None => None,
    };
    let runner_args = BaselineArgs {
        runner: args
            .baselines
            .runner
            .clone()
            .or_else(|| saved.as_ref().and_then(|s| s.runner.clone())),
        baselines: args.baselines.baselines.clone(),
    };
    let (runner, path) = match runner_and_path(&runner_args, &hostname) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let options = |ci: bool| BlessOptions {
        runner: &runner,
        baseline_path: &path,
        filter: &filter,
        accept_fingerprint: request.accept_fingerprint,
        remove_missing: request.remove_missing,
        refresh: request.refresh,
        ci,
        provenance: Provenance::now(&hostname, revision()),
    };
    if baseline::in_ci() {
        let run = RunResults {
            records: &[],
            defined: None,
            fingerprint: &Fingerprint::default(),
        };
        return report_bless(baseline::bless(&run, &options(true)));
    }
    if let Some(saved) = saved {
        let run = RunResults {
            records: &saved.report.trials,
            defined: None,
            fingerprint: &saved.fingerprint,
        };
        return report_bless(baseline::bless(&run, &options(false)));
    }
    let outcome = match super::run_trials(args, command) {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let fingerprint = fingerprint(&outcome, &args.inputs.data_dir);
    let records: &[TrialRecord] = &outcome.report.trials;
    let run = RunResults {
        records,
        defined: Some(&outcome.defined),
        fingerprint: &fingerprint,
    };
    if let Err(error) = report::write_all(&args.out, &outcome.report, "") {
        eprintln!("warning: {}", error_chain(&error));
    }
    report_bless(baseline::bless(&run, &options(false)))
}

fn report_bless(result: Result<baseline::BlessOutcome, baseline::BlessError>) -> u8 {
    match result {
        Ok(outcome) => {
            print!("{outcome}");
            exit::PASSED
        }
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            crate::commands::bless_error_code(&error)
        }
    }
}

/// The repository revision, when the gate runs from a git checkout (provenance of a baseline).
fn revision() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// `report`: the plots of this runner's history against its baseline, linked from summary.md.
pub fn report_command(out: &Path, args: &BaselineArgs) -> u8 {
    let hostname = crate::host::hostname();
    let (runner, path) = match runner_and_path(args, &hostname) {
        Ok(found) => found,
        Err(code) => return code,
    };
    match baseline::plots_for_report(out, &path, &runner) {
        Ok(plots) => {
            for note in &plots.skipped {
                eprintln!("note: {note}");
            }
            for plot in &plots.plots {
                println!("plot: {}", plot.path.display());
            }
            let summary = out.join("summary.md");
            let text = std::fs::read_to_string(&summary).unwrap_or_default() + &plots.markdown;
            match gds_model::fsutil::write_atomically(&summary, text.as_bytes()) {
                Ok(()) => exit::PASSED,
                Err(error) => {
                    eprintln!("error: cannot write `{}`: {error}", summary.display());
                    exit::SETUP
                }
            }
        }
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            exit::SETUP
        }
    }
}
