//! The run against its runner's baseline: read it before the first trial, judge each trial as it
//! ran, then compare, append to the history, render the plots, write the reports with all of it,
//! and pick the exit code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::baseline::compare;
use crate::baseline::creep::RunnerHistory;
use crate::baseline::error::BaselineError;
use crate::baseline::file::TrialBaseline;
use crate::baseline::fingerprint::{self, FieldChange};
use crate::baseline::judgement::Missing;
use crate::baseline::{
    self, Baseline, Fingerprint, Judgement, Loaded, RunResults, file, history, message, render,
};
use crate::cli::{BaselineArgs, RunArgs};
use crate::console::Console;
use crate::error::Error;
use crate::exit;
use crate::host::HostFacts;
use crate::report;
use gds_model::error_chain;
use gds_model::record::{LoadedCufile, TrialRecord};
use gds_model::units::Rate;

use super::RunOutput;

/// The runner's name and its baseline file.
pub(crate) fn runner_and_path(
    args: &BaselineArgs,
    hostname: &str,
) -> Result<(String, PathBuf), Error> {
    let runner = args
        .runner
        .clone()
        .unwrap_or_else(|| baseline::default_runner(hostname));
    // A runner name that cannot be a file name is the user's to fix.
    let path = file::path_for(&args.baselines, &runner)
        .map_err(|error| Error::Usage(error_chain(&error)))?;
    Ok((runner, path))
}

/// What the runner is, from the host and from what the workers reported.
pub(crate) fn fingerprint(outcome: &RunOutput, data_dir: &Path) -> Fingerprint {
    let mut fingerprint = baseline::probe::probe(&outcome.report.host, data_dir);
    let measurements = || {
        outcome
            .report
            .trials
            .iter()
            .filter_map(|trial| trial.measurement.as_ref())
    };
    fingerprint.libcufile = libcufile_fact(measurements().filter_map(|m| {
        m.libcufile.clone().or_else(|| {
            let cufile = m.cufile.as_ref()?;
            Some(LoadedCufile {
                path: cufile.library.clone(),
                version: cufile.version.clone(),
            })
        })
    }));
    fingerprint.kvikio =
        measurements().find_map(|m| m.kvikio.as_ref().map(|k| k.kvikio_version.clone()));
    fingerprint.torch =
        measurements().find_map(|m| m.torch.as_ref().map(|t| t.torch_version.clone()));
    fingerprint
}

/// The libcufile the workers loaded, for the fingerprint: its version when every worker loaded
/// the same file; every distinct one, with its path, when they did not (KvikIO's wheel brings its
/// own beside the toolkit's), so the fingerprint does not name only one of them.
fn libcufile_fact(loaded: impl Iterator<Item = LoadedCufile>) -> Option<String> {
    let mut distinct: Vec<LoadedCufile> = loaded.collect();
    distinct.sort_by(|a, b| (&a.version, &a.path).cmp(&(&b.version, &b.path)));
    distinct.dedup();
    match distinct.as_slice() {
        [] => None,
        [one] => Some(one.version.clone()),
        many => Some(
            many.iter()
                .map(|l| format!("{} ({})", l.version, l.path.display()))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

/// The runner's baseline, read before the first trial, and what the trials are judged with while
/// they run.
#[derive(Clone)]
pub struct Against {
    pub runner: String,
    pub path: PathBuf,
    pub loaded: Loaded,
    /// The host's fingerprint before any worker ran (no CUDA, cuFile or KvikIO versions yet), and
    /// its differences from the baseline's: the likely cause in messages printed during the run.
    fingerprint: Fingerprint,
    changes: Vec<FieldChange>,
    /// The runner's runs before this one: for the creep over the history since each trial's
    /// bless, and for a budget's estimates.
    history: RunnerHistory,
    /// When this run started and on which host, as its history line will say.
    started_at: String,
    host: String,
    /// The run's selection flags, which the bless commands in its messages carry.
    scope: message::Scope,
    /// The unit its messages show rates in (`--units`).
    rate: Rate,
}

impl Against {
    /// Reads the runner's baseline; a damaged one is an error before anything runs, never "no
    /// baseline", which would pass anything.
    pub fn load(args: &RunArgs) -> Result<Against, Error> {
        let (runner, path) = runner_and_path(&args.baselines, &crate::host::hostname())?;
        let loaded = file::read(&path)?;
        let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let host = HostFacts::probe();
        let fingerprint = baseline::probe::probe(&host, &args.inputs.data_dir);
        let changes = match &loaded {
            Loaded::Present(baseline) => fingerprint::diff(&baseline.fingerprint, &fingerprint),
            Loaded::Absent => Vec::new(),
        };
        let history = runner_history(&args.console, &args.baselines.history, &runner);
        Ok(Against {
            runner,
            path,
            loaded,
            fingerprint,
            changes,
            history,
            started_at,
            host: host.hostname,
            scope: args.scope(),
            rate: args.rate,
        })
    }

    pub fn baseline(&self) -> Option<&Baseline> {
        self.loaded.present()
    }

    /// The trial's judgement against the baseline, when there is one: compared with its entry,
    /// or new to it; a run that passes alone is judged a creep when its level over the runner's
    /// history since the trial's bless, this run included, crept below the baseline.
    pub fn judge(&self, record: &TrialRecord) -> Option<Judgement> {
        let baseline = self.baseline()?;
        let alone = compare::judge_record(baseline, record);
        let Some(entry) = baseline.trials.get(&record.name) else {
            return Some(alone);
        };
        let line = history::HistoryLine::new(
            self.started_at.clone(),
            &self.runner,
            &self.host,
            &self.fingerprint,
            std::slice::from_ref(record),
        );
        Some(self.history.judge(alone, &record.name, entry, &line))
    }

    /// The trial looks slower, or costlier in CPU, than its baseline and has confirmation runs
    /// left (of `wanted`). The run alone decides: confirmation runs cannot change a history.
    pub fn wants_confirmation(&self, record: &TrialRecord, wanted: usize) -> bool {
        let Some(baseline) = self.baseline() else {
            return false;
        };
        match compare::judge_record(baseline, record) {
            Judgement::Regression { throughput } => throughput.wants_confirmation(wanted),
            Judgement::CpuCostlier { cpu: cost, .. }
            | Judgement::LoadCostlier { cost, .. }
            | Judgement::LatencyHigher { cost, .. } => cost.wants_confirmation(wanted),
            _ => false,
        }
    }

    /// The one-screen message of the trial's judgement, as libtest shows it on the trial's line.
    pub fn explain(&self, record: &TrialRecord, judgement: &Judgement) -> String {
        let entry = self.baseline().and_then(|b| b.trials.get(&record.name));
        message::explain(
            &self.context(),
            &record.name,
            entry.map(TrialBaseline::expected).as_ref(),
            Some(record),
            judgement,
        )
        .message
    }

    /// Baseline trials that no suite in `defined` has, each with the message of its failure.
    pub fn undefined(&self, defined: &BTreeSet<String>) -> Vec<(String, String)> {
        let Some(baseline) = self.baseline() else {
            return Vec::new();
        };
        let judgement = Judgement::MissingTrial {
            cause: Missing::NotDefined,
        };
        baseline
            .trials
            .iter()
            .filter(|(name, _)| !defined.contains(*name))
            .map(|(name, entry)| {
                let words = message::explain(
                    &self.context(),
                    name,
                    Some(&entry.expected()),
                    None,
                    &judgement,
                );
                (name.clone(), words.message)
            })
            .collect()
    }

    pub fn history(&self) -> &RunnerHistory {
        &self.history
    }

    fn context(&self) -> message::Context<'_> {
        message::Context {
            runner: &self.runner,
            baseline_path: &self.path,
            scope: &self.scope,
            rate: self.rate,
            changes: &self.changes,
            nvidia_fs_loaded: self.fingerprint.nvidia_fs_loaded,
        }
    }
}

/// `runner`'s lines of the history at `path`, read once a run. One that cannot be read is left
/// out, said as a warning (no creep is judged, a budget is estimated): the history is the
/// runner's record, not its baseline.
fn runner_history(console: &Console, path: &Path, runner: &str) -> RunnerHistory {
    match history::read(path) {
        Ok(history) => RunnerHistory::of(history, runner),
        Err(error) => {
            console.warning(&format!(
                "this run goes without the runner's history: {}",
                error_chain(&error)
            ));
            RunnerHistory::default()
        }
    }
}

/// Compares the run with its baseline, appends it to the history, writes the reports and
/// returns the run's exit code, which its totals decide.
pub fn finish_run(args: &RunArgs, mut output: RunOutput, against: &Against) -> Result<u8, Error> {
    let Against {
        runner,
        path,
        loaded,
        ..
    } = against;
    let fingerprint = fingerprint(&output, &args.inputs.data_dir);
    let run = RunResults {
        records: &output.report.trials,
        defined: Some(&output.defined),
        fingerprint: &fingerprint,
        control: output.report.control.as_ref(),
        judged: Some(&output.judged),
    };
    let comparison = baseline::compare(loaded, path, runner, &run);
    let history_line = history::HistoryLine {
        control: output.report.control.clone(),
        ..history::HistoryLine::new(
            output.report.started_at.clone(),
            runner,
            &output.report.host.hostname,
            &fingerprint,
            &output.report.trials,
        )
    };
    let explainer = message::Explainer {
        comparison: &comparison,
        records: &output.report.trials,
        fingerprint: Some(&fingerprint),
        scope: &against.scope,
        rate: against.rate,
    };
    let console = &args.console;
    console.say(&render::console(&explainer));

    let path = &args.baselines.history;
    let plots = adopt_history(console, path, &args.out)
        .and_then(|()| history::append(path, &history_line))
        .and_then(|()| baseline::plots_for_report(&args.out, path, loaded, runner, args.rate));
    let extra = match plots {
        Ok(plots) => render::markdown(&explainer, &plots.plots, &args.out) + &plots.changes,
        Err(error) => {
            console.warning(&format!(
                "no history or plots this run: {}",
                error_chain(&error)
            ));
            render::markdown(&explainer, &[], &args.out)
        }
    };
    output.report.runner = Some(runner.clone());
    output.report.fingerprint = Some(fingerprint);
    output.report.baseline = Some(comparison);
    let paths = report::write_all(&args.out, &output.report, &extra)?;
    console.reports(&paths);
    // In GitHub Actions: point at the scenario line of each failed or slower trial.
    if std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true") {
        for line in report::annotations::github_annotations(&output.report) {
            console.print(&line);
        }
    }
    exit_code(console, &output)
}

/// The exit code of a run whose reports are written: an interrupt's error, or the totals' code.
pub fn exit_code(console: &Console, output: &RunOutput) -> Result<u8, Error> {
    if let Some(signal) = crate::interrupt::received() {
        return Err(Error::interrupted(signal));
    }
    // libtest failed the trials whose outcome is a failure: one count, or a bug.
    if output.libtest_failed != output.report.totals.failures() {
        return Err(Error::Setup(
            "libtest's count of failures differs from the recorded trials; this is a bug in gds-gate".into(),
        ));
    }
    let code = output.report.totals.exit_code();
    if code == exit::NOTHING_RAN {
        console.say("no trial ran: a gate that ran nothing has not passed");
    }
    Ok(code)
}

/// Moves a history an earlier gate left in `out` to `history` (see
/// [`history::adopt_from_out`]), saying so on `console`.
pub fn adopt_history(console: &Console, history: &Path, out: &Path) -> Result<(), BaselineError> {
    if let Some(note) = history::adopt_from_out(history, out)? {
        console.say(&note);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_names_every_libcufile_the_workers_loaded() {
        let toolkit = LoadedCufile {
            path: "/usr/local/cuda/lib64/libcufile.so.1.15.1".into(),
            version: "1.15".into(),
        };
        let wheel = LoadedCufile {
            path: "/venv/nvidia/cu13/lib/libcufile.so.0".into(),
            version: "1.16".into(),
        };
        assert_eq!(libcufile_fact(std::iter::empty()), None);
        assert_eq!(
            libcufile_fact([toolkit.clone(), toolkit.clone()].into_iter()).as_deref(),
            Some("1.15")
        );
        assert_eq!(
            libcufile_fact([wheel, toolkit.clone(), toolkit].into_iter()).as_deref(),
            Some(
                "1.15 (/usr/local/cuda/lib64/libcufile.so.1.15.1); 1.16 (/venv/nvidia/cu13/lib/libcufile.so.0)"
            )
        );
    }
}
