//! `gds-gate bless`: run the trials (or take a saved report, or the runs in the history) and write
//! the runner's baseline from those that passed every check but throughput. Refuses in CI.

use std::path::PathBuf;

use super::run::baseline::{fingerprint, runner_and_path};
use crate::baseline::bless::history;
use crate::baseline::message::{Scope, Source};
use crate::baseline::{self, BlessOptions, Filter, Fingerprint, Provenance, RunResults};
use crate::cli::{BaselineArgs, RunArgs};
use crate::error::Error;
use crate::exit;
use crate::report;
use gds_model::error_chain;

pub struct BlessRequest {
    pub from: Option<PathBuf>,
    /// `--from-history`: how many runs to take and the least time they span.
    pub from_history: Option<crate::baseline::bless::history::Selection>,
    /// Complete runs to record; `None`: the default, grown while a trial cannot see 20%.
    pub runs: Option<u16>,
    /// The least time from the start of one run to the start of the next.
    pub interval: std::time::Duration,
    pub accept_fingerprint: bool,
    pub remove_missing: bool,
    pub refresh: bool,
    pub run: RunArgs,
}

/// `bless`: refuses in CI before anything runs; otherwise runs the selected trials (or reads a
/// saved report) and writes the baseline from the trials that passed every non-throughput check.
pub fn run(request: BlessRequest, command: Vec<String>) -> Result<u8, Error> {
    let args = &request.run;
    let filter = Filter {
        patterns: args.libtest.filter.iter().cloned().collect(),
        exact: args.libtest.exact,
    };
    let hostname = crate::host::hostname();
    // A saved report that cannot be used is the user's to fix (another file, another run).
    let saved = match &request.from {
        Some(path) => Some(
            report::saved::load_report(path).map_err(|error| Error::Usage(error_chain(&error)))?,
        ),
        None => None,
    };
    let runner_args = BaselineArgs {
        runner: args
            .baselines
            .runner
            .clone()
            .or_else(|| saved.as_ref().and_then(|s| s.runner.clone())),
        baselines: args.baselines.baselines.clone(),
        history: args.baselines.history.clone(),
    };
    let (runner, path) = runner_and_path(&runner_args, &hostname)?;
    let scope = Scope {
        source: match (&request.from, &request.from_history) {
            (Some(report), _) => Source::Report(report.clone()),
            (None, Some(_)) => Source::History,
            (None, None) => Source::Run,
        },
        ..args.scope()
    };
    let options = |ci: bool| BlessOptions {
        runner: &runner,
        baseline_path: &path,
        scope: &scope,
        rate: args.rate,
        filter: &filter,
        accept_fingerprint: request.accept_fingerprint,
        remove_missing: request.remove_missing,
        refresh: request.refresh,
        ci,
        provenance: Provenance::now(&hostname, revision()),
    };
    if baseline::in_ci() {
        let run = RunResults {
            judged: None,
            records: &[],
            defined: None,
            fingerprint: &Fingerprint::default(),
            control: None,
        };
        return report_bless(
            &args.console,
            baseline::bless(std::slice::from_ref(&run), &options(true))?,
        );
    }
    if let Some(saved) = saved {
        return report_bless(&args.console, saved.bless(&options(false))?);
    }
    if let Some(selection) = request.from_history {
        let path = &args.baselines.history;
        let history = crate::baseline::history::read(path)?;
        for note in &history.skipped {
            args.console.warning(note);
        }
        // The suites say which trials exist and which the command line selects.
        let specs: Vec<_> = super::run::load_suites(&args.inputs.suite_paths())?
            .iter()
            .flat_map(gds_model::scenario::expand)
            .collect();
        let defined = specs.iter().map(|spec| spec.name.clone()).collect();
        let selected = specs
            .iter()
            .filter(|spec| !args.libtest.is_filtered_out(&super::run::listed(spec)))
            .map(|spec| spec.name.clone())
            .collect();
        let suites = history::Suites {
            defined: &defined,
            selected: &selected,
        };
        let outcome =
            history::bless_from_history(&history, path, selection, Some(suites), &options(false))?;
        return report_bless(&args.console, outcome);
    }
    // Everything that can fail without a trial fails before the first one: the baseline that
    // will be rewritten must be readable, and the reports folder ours and writable.
    crate::baseline::file::read(&path)?;
    let _out = super::run::claim_out(args)?;
    crate::interrupt::install();
    // Whole runs one after the other, each trial once per run: slow drift of the runner then
    // touches every trial alike, and the runs' spread is what later runs are judged against.
    let mut outcomes = Vec::new();
    let mut started: Option<std::time::Instant> = None;
    // Without --runs the bless grows past its default while a trial cannot see a 20% drop.
    let mut planned = request
        .runs
        .unwrap_or(crate::baseline::decision::BLESS_RUNS);
    let mut round = 0;
    while round < planned {
        round += 1;
        let mut waited = String::new();
        if let Some(wait) = started.and_then(|t| request.interval.checked_sub(t.elapsed()))
            && !wait.is_zero()
        {
            waited = format!(" after waiting {:.0} s to start it", wait.as_secs_f64());
            crate::interrupt::sleep(wait);
        }
        if crate::interrupt::received().is_some() {
            break;
        }
        started = Some(std::time::Instant::now());
        // One line per run: its trials' lines go to a log of their own in --out.
        let quiet = super::run::Quiet {
            libtest_log: args.out.join(format!("bless-run-{round}.log")),
            doctor: round == 1,
        };
        // `None`: the trials were listed, not run; there is nothing to bless.
        let Some(outcome) =
            super::run::run_trials(args, command.clone(), None, Some(&quiet), None)?
        else {
            return Ok(exit::PASSED);
        };
        args.console.say(&format!(
            "bless: run {round} of {planned}{waited}: {} in {:.1} s ({})",
            outcome.report.totals.counts(),
            outcome.report.duration_seconds,
            quiet.libtest_log.display()
        ));
        outcomes.push(outcome);
        if round == planned
            && request.runs.is_none()
            && usize::from(planned) < baseline::decision::MOST_BLESS_RUNS
            && let Some(unseen) = baseline::bless::unseen(&run_records(&outcomes), &filter)
        {
            planned += 1;
            args.console.say(&format!(
                "bless: {} cannot see a {:.0}% drop from {round} runs (spread {:.1}%, {} runs would): one more run, {} at most",
                unseen.trial,
                baseline::decision::WANTED_DROP * 100.0,
                unseen.spread * 100.0,
                unseen.runs,
                baseline::decision::MOST_BLESS_RUNS
            ));
        }
    }
    let fingerprints: Vec<Fingerprint> = outcomes
        .iter()
        .map(|outcome| fingerprint(outcome, &args.inputs.data_dir))
        .collect();
    let runs: Vec<RunResults> = outcomes
        .iter()
        .zip(&fingerprints)
        .map(|(outcome, fingerprint)| RunResults {
            judged: None,
            records: &outcome.report.trials,
            defined: Some(&outcome.defined),
            fingerprint,
            control: outcome.report.control.as_ref(),
        })
        .collect();
    // The blessed runs drawn in summary.md, which the bless pull request shows.
    let charts = baseline::chart::markdown(
        &baseline::chart::of_runs(&run_records(&outcomes)),
        args.rate,
    );
    if let Some(last) = outcomes.last()
        && let Err(error) = report::write_all(&args.out, &last.report, &charts)
    {
        args.console.warning(&error_chain(&error));
    }
    // A bless cut short records nothing: its runs are not the ones that were asked for.
    if let Some(signal) = crate::interrupt::received() {
        return Err(Error::interrupted(signal));
    }
    report_bless(&args.console, baseline::bless(&runs, &options(false))?)
}

fn report_bless(
    console: &crate::console::Console,
    outcome: baseline::BlessOutcome,
) -> Result<u8, Error> {
    console.write(&outcome.to_string());
    Ok(exit::PASSED)
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

/// Each run's trial records, in run order.
fn run_records(outcomes: &[super::run::RunOutput]) -> Vec<&[gds_model::record::TrialRecord]> {
    outcomes
        .iter()
        .map(|outcome| outcome.report.trials.as_slice())
        .collect()
}
