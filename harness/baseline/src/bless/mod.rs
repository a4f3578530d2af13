//! Bless: write a run's figures into its runner's baseline, explicitly and never in CI. Only
//! trials that passed every non-throughput check are taken; a changed fingerprint needs
//! `--accept-fingerprint`; trials within noise of their baseline, at a level within their
//! tolerance of it, keep their old samples (unless `--refresh`), so that a review shows only what
//! really changed. The runs are the ones the bless ran, a saved report, or the passing runs of the
//! history ([`history`]): one path records them all.

mod diff;
pub mod history;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::compare::{RunResults, Tolerances, judge_run};
use super::decision::{Throughput, runs_to_see};
use super::error::BaselineError;
use super::figures::RunFigures;
use super::file::{self, Baseline, Loaded, Provenance, SCHEMA_VERSION, TrialBaseline};
use super::fingerprint::{self, FieldChange, Fingerprint};
use super::judgement::Judgement;
use super::message::{Scope, Source, bless_command, quote, threshold};
use crate::control::{ControlBaseline, ControlReading};
use gds_model::outcome::Outcome;
use gds_model::record::{Status, TrialRecord};
use gds_model::units::Rate;

/// Which trials a bless takes: libtest-mimic's rules, so that bless takes exactly the trials a run
/// with the same filter runs. A pattern is a substring of the trial as listed, `[reader] name`, or
/// with `exact` the whole name or listing; no pattern takes every trial.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub patterns: Vec<String>,
    pub exact: bool,
}

impl Filter {
    /// `kind` is the trial's reader where known (a run's record), `None` for a baseline entry.
    pub fn matches(&self, name: &str, kind: Option<&str>) -> bool {
        let listed = kind.map_or_else(|| name.to_string(), |kind| format!("[{kind}] {name}"));
        self.patterns.is_empty()
            || self.patterns.iter().any(|pattern| {
                if self.exact {
                    name == pattern || listed == *pattern
                } else {
                    listed.contains(pattern.as_str())
                }
            })
    }

    /// As command-line arguments, for the commands printed in messages.
    pub fn to_args(&self) -> String {
        let mut args = String::new();
        if self.exact {
            args.push_str(" --exact");
        }
        for pattern in &self.patterns {
            let _ = write!(args, " {}", quote(pattern));
        }
        args
    }
}

#[derive(Clone, Debug)]
pub struct BlessOptions<'a> {
    pub runner: &'a str,
    pub baseline_path: &'a Path,
    /// The bless's own selection flags, which the commands it prints carry.
    pub scope: &'a Scope,
    /// The unit the printed diff shows rates in (`--units`).
    pub rate: Rate,
    pub filter: &'a Filter,
    /// Record a changed fingerprint (driver, kernel, …) instead of refusing.
    pub accept_fingerprint: bool,
    /// Drop baseline trials that did not run (ignored) or that no suite defines any more.
    pub remove_missing: bool,
    /// Re-record trials even when they are within noise of their baseline.
    pub refresh: bool,
    /// Whether this is CI ([`in_ci`]): bless then refuses.
    pub ci: bool,
    pub provenance: Provenance,
}

impl Provenance {
    /// Now, this gate's version, and the given host and revision.
    pub fn now(host: &str, revision: Option<String>) -> Provenance {
        Provenance {
            blessed_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            gate_version: env!("CARGO_PKG_VERSION").to_string(),
            host: host.to_string(),
            revision,
        }
    }
}

/// `CI` set to anything but empty, `0` or `false` (what GitHub Actions, GitLab and most others
/// set): the convention insta and expect-test follow too.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.trim(), "" | "0" | "false"))
}

#[derive(Debug, thiserror::Error)]
pub enum BlessError {
    #[error(
        "refusing to write baselines in CI (the `CI` environment variable is set): baselines change only through an explicit, reviewed bless\n  help: on the runner, run:\n        {local}\n  or download this run's report.json and run:\n        {from_report}\n  then open a pull request with the diff"
    )]
    InCi { local: String, from_report: String },
    #[error(
        "refusing to bless `{}`: the runner changed since its baseline was blessed:\n{details}  help: if the new setup is intended, bless with --accept-fingerprint:\n        {command}",
        path.display()
    )]
    FingerprintChanged {
        path: PathBuf,
        changes: Vec<FieldChange>,
        details: String,
        command: String,
    },
    #[error(
        "refusing to bless from a failing run: {} trial(s) failed a path or integrity check:\n{details}  help: fix them first, or narrow the filter to the trials that passed",
        trials.len()
    )]
    FailedTrials {
        trials: Vec<String>,
        details: String,
    },
    #[error(
        "refusing to bless: the blessed runs disagree on a trial's path or checksum, so the runner is not stable enough to record:\n{details}  help: find out why the path changes between runs (`cargo xtask doctor`, each trial's cufile.log), then bless again"
    )]
    Unstable { details: String },
    #[error("refusing to bless from the history `{}`: {why}\n  help: {help}", path.display())]
    FromHistory {
        path: PathBuf,
        why: String,
        help: String,
    },
    #[error("nothing to bless into `{}`: {why}\n  help: {help}", path.display())]
    Nothing {
        path: PathBuf,
        why: String,
        help: String,
    },
    #[error(transparent)]
    Baseline(#[from] BaselineError),
}

#[derive(Clone, Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per trial of a bless, printed once; boxes would only make matching clumsier"
)]
pub enum TrialChange {
    Added {
        trial: String,
        new: TrialBaseline,
    },
    Updated {
        trial: String,
        old: TrialBaseline,
        new: TrialBaseline,
    },
    Removed {
        trial: String,
        old: TrialBaseline,
        why: String,
    },
}

/// What a bless did; its `Display` is the diff to print (`updating: <file>` first).
#[derive(Clone, Debug, PartialEq)]
pub struct BlessOutcome {
    pub path: PathBuf,
    /// The file did not exist before this bless.
    pub created: bool,
    /// False when nothing changed: the file was left untouched.
    pub written: bool,
    /// Fingerprint differences recorded (changed with --accept-fingerprint, or newly known).
    pub fingerprint: Vec<FieldChange>,
    pub changes: Vec<TrialChange>,
    /// Trials taken but within noise of their baseline: kept as they were.
    pub unchanged: Vec<String>,
    /// Baseline trials kept although the run did not measure them, with the reason.
    pub kept: Vec<(String, String)>,
    /// Trials recorded whose runs disagree more than their tolerance allows, with what the
    /// comparison will be able to detect: worth a re-bless on a quieter runner.
    pub insensitive: Vec<(String, String)>,
    /// Where the runs came from when the bless did not run them itself, for the review (`from
    /// the history …: 10 runs from … to …`).
    pub source: Option<String>,
    /// The unit the diff shows rates in ([`BlessOptions::rate`]).
    pub rate: Rate,
}

/// One selected trial as every blessed run measured it, in run order: what a bless records it
/// from, whether the runs were just run or are read back from the history.
#[derive(Clone, Debug)]
pub struct TrialRounds {
    pub name: String,
    pub tolerances: Tolerances,
    /// Each run's figures; `None` for a run that measured no passes of it.
    pub runs: Vec<Option<TakenRun>>,
    /// Why a run did not measure it (`did not run: …`): said when the trial is kept or removed.
    pub why_missing: String,
}

/// One blessed run of a trial: its figures, and its confirmation runs for judging whether it is
/// within noise of the trial's old entry.
#[derive(Clone, Debug)]
pub struct TakenRun {
    pub figures: RunFigures,
    pub confirmations: Vec<RunFigures>,
}

/// What a bless records from, however the runs were had.
pub(crate) struct Blessed<'a> {
    pub trials: Vec<TrialRounds>,
    /// The runs' fingerprint, the latest run's where they were not run together.
    pub fingerprint: &'a Fingerprint,
    /// Every trial the suites define and every trial the runs recorded, when the suites are known:
    /// the baseline trials no suite defines any more are then removed or kept.
    pub defined: Option<(&'a BTreeSet<String>, BTreeSet<&'a str>)>,
    /// Each blessed run's control reading.
    pub controls: Vec<Option<&'a ControlReading>>,
}

/// Writes the baseline from `runs`: one or more complete runs of the same trials (fresh workers,
/// interleaved trial by trial), whose spread is what later comparisons measure noise by. The first
/// run's fingerprint and suites stand for all.
pub fn bless(
    runs: &[RunResults<'_>],
    options: &BlessOptions<'_>,
) -> Result<BlessOutcome, BlessError> {
    let path = options.baseline_path;
    let Some(run) = runs.first() else {
        return Err(BlessError::Nothing {
            path: path.to_path_buf(),
            why: "no run to take figures from".into(),
            help: "pass --runs 1 or more".into(),
        });
    };
    refuse_in_ci(options)?;
    let records: Vec<&[TrialRecord]> = runs.iter().map(|run| run.records).collect();
    let rounds = selected_rounds(&records, options.filter);
    refuse_failures(rounds.iter().flatten().copied())?;
    let blessed = Blessed {
        trials: rounds.iter().map(|records| rounds_of(records)).collect(),
        fingerprint: run.fingerprint,
        defined: run.defined.map(|defined| {
            (
                defined,
                run.records.iter().map(|r| r.name.as_str()).collect(),
            )
        }),
        controls: runs.iter().map(|run| run.control).collect(),
    };
    record(&blessed, options)
}

/// A trial's records of every blessed run as the bless takes them: a run's figures only where
/// it passed its own checks with measured passes.
fn rounds_of(records: &[&TrialRecord]) -> TrialRounds {
    let first = records[0];
    let why_missing = match first.checks {
        _ if first.status == Outcome::Limited => first.limited_line().unwrap_or_default(),
        Status::Ignored => format!(
            "did not run: {}",
            first.reason.as_deref().unwrap_or("no reason given")
        ),
        _ => "no measured repetitions".to_string(),
    };
    TrialRounds {
        name: first.name.clone(),
        tolerances: Tolerances::of(&first.spec.expect),
        runs: records
            .iter()
            .map(|record| {
                let m = record
                    .measurement
                    .as_ref()
                    .filter(|m| record.checks == Status::Passed && !m.gbps.is_empty())?;
                Some(TakenRun {
                    figures: RunFigures::of(m),
                    confirmations: record.confirmations.iter().map(RunFigures::of).collect(),
                })
            })
            .collect(),
        why_missing,
    }
}

/// The gate's report folder when `--out` does not name one.
const DEFAULT_OUT: &str = "target/gds-gate";

/// Refuses in CI with the commands that bless on the runner, or from this run's saved report.
pub(crate) fn refuse_in_ci(options: &BlessOptions<'_>) -> Result<(), BlessError> {
    if !options.ci {
        return Ok(());
    }
    let command = |scope: &Scope| {
        bless_command(
            options.runner,
            options.baseline_path,
            scope,
            None,
            options.accept_fingerprint,
            options.remove_missing,
        ) + &options.filter.to_args()
    };
    let local = command(options.scope);
    // A bless that already reads a saved report or the history has no other way to offer.
    let from_report = if options.scope.reads_saved() {
        local.clone()
    } else {
        let out = options
            .scope
            .out
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_OUT));
        command(
            &options
                .scope
                .with_source(Source::Report(out.join("report.json"))),
        )
    };
    Err(BlessError::InCi { from_report, local })
}

/// Writes the baseline from `blessed`'s trials: refuses a runner that changed (without
/// `--accept-fingerprint`) or trials whose path or checksum differ between the runs, keeps what
/// is within noise, and writes the file only when something changed.
pub(crate) fn record(
    blessed: &Blessed<'_>,
    options: &BlessOptions<'_>,
) -> Result<BlessOutcome, BlessError> {
    let path = options.baseline_path;
    let old = match file::read(path)? {
        Loaded::Present(baseline) => Some(baseline),
        Loaded::Absent => None,
    };
    refuse_unstable(&blessed.trials)?;
    let differences = old
        .as_ref()
        .map(|b| fingerprint::diff(&b.fingerprint, blessed.fingerprint))
        .unwrap_or_default();
    let runner_changed = fingerprint::changed(&differences).next().is_some();
    if runner_changed && !options.accept_fingerprint {
        let details: String = fingerprint::changed(&differences)
            .map(|change| format!("  {change}\n"))
            .collect();
        return Err(BlessError::FingerprintChanged {
            path: path.to_path_buf(),
            changes: differences.clone(),
            details,
            command: bless_command(
                options.runner,
                path,
                options.scope,
                None,
                true,
                options.remove_missing,
            ) + &options.filter.to_args(),
        });
    }

    let mut trials = old.as_ref().map(|b| b.trials.clone()).unwrap_or_default();
    let mut outcome = BlessOutcome {
        path: path.to_path_buf(),
        rate: options.rate,
        created: old.is_none(),
        written: false,
        fingerprint: differences
            .iter()
            .filter(|c| c.kind != fingerprint::ChangeKind::NotObserved)
            .cloned()
            .collect(),
        changes: Vec::new(),
        unchanged: Vec::new(),
        kept: Vec::new(),
        insensitive: Vec::new(),
        source: None,
    };
    let re_record_all = options.refresh || runner_changed;
    for trial in &blessed.trials {
        take(trial, &mut trials, options, re_record_all, &mut outcome);
    }
    if let Some((defined, recorded)) = &blessed.defined {
        remove_undefined(defined, recorded, options, &mut trials, &mut outcome);
    }

    let fingerprint = match &old {
        Some(b) => blessed.fingerprint.merged_over(&b.fingerprint),
        None => blessed.fingerprint.clone(),
    };
    let fingerprint_same = old.as_ref().is_some_and(|b| b.fingerprint == fingerprint);
    // A filter that selects nothing is a mistake (a pasted command without its `--suite`, a
    // typo), even when the baseline has trials of its own to keep: "up to date" would hide it.
    // Dropping trials no suite defines (`--remove-missing`) selects none and still changes the file.
    if blessed.trials.is_empty() && outcome.changes.is_empty() {
        return Err(BlessError::Nothing {
            path: path.to_path_buf(),
            why: "no trial of this run matches the filter".into(),
            help: "check the filter and --suite against `cargo xtask gds-gate --list` (with the same --suite)".into(),
        });
    }
    // The control of this bless's runs, or the one blessed before when these runs had none (a
    // bless from a saved report, a run with `--control-size 0`).
    let control = ControlBaseline::from_readings(&blessed.controls)
        .or_else(|| old.as_ref().and_then(|b| b.control.clone()));
    let control_same = old.as_ref().is_some_and(|b| b.control == control);
    if outcome.changes.is_empty() && fingerprint_same && control_same {
        return Ok(outcome);
    }
    if trials.is_empty() {
        return Err(BlessError::Nothing {
            path: path.to_path_buf(),
            why: "no trial would be left in it: none of the selected trials passed with measured passes".into(),
            help: "run the trials on this runner first; ignored trials (no GPU) cannot be blessed"
                .into(),
        });
    }
    let baseline = Baseline {
        schema_version: SCHEMA_VERSION,
        runner: options.runner.to_string(),
        fingerprint,
        provenance: options.provenance.clone(),
        control,
        trials,
    };
    file::write(path, &baseline)?;
    outcome.written = true;
    Ok(outcome)
}

fn refuse_failures<'a>(records: impl Iterator<Item = &'a TrialRecord>) -> Result<(), BlessError> {
    let failed: Vec<&TrialRecord> = records
        // A failure for its runner's recorded limitation is not blessed, and does not refuse.
        .filter(|record| record.checks == Status::Failed && record.status != Outcome::Limited)
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    let details = failed
        .iter()
        .map(|record| {
            format!(
                "  {}: {}\n",
                record.name,
                record.reason.as_deref().unwrap_or("failed")
            )
        })
        .collect();
    let mut trials: Vec<String> = failed.iter().map(|record| record.name.clone()).collect();
    trials.dedup();
    Err(BlessError::FailedTrials { trials, details })
}

/// A trial whose path or checksum differs between the blessed runs has no baseline to speak of.
fn refuse_unstable(trials: &[TrialRounds]) -> Result<(), BlessError> {
    let mut details = String::new();
    for trial in trials {
        let seen: Vec<(&gds_model::path::Path, Option<u64>)> = trial
            .runs
            .iter()
            .flatten()
            .map(|run| (&run.figures.path, run.figures.checksum))
            .collect();
        if seen.windows(2).any(|pair| pair[0] != pair[1]) {
            let runs: Vec<String> = seen
                .iter()
                .enumerate()
                .map(|(i, (path, checksum))| {
                    let checksum = checksum.map_or_else(|| "none".into(), gds_model::hex::format);
                    format!("run {}: path {path}, checksum {checksum}", i + 1)
                })
                .collect();
            let _ = writeln!(details, "  {}: {}", trial.name, runs.join("; "));
        }
    }
    if details.is_empty() {
        Ok(())
    } else {
        Err(BlessError::Unstable { details })
    }
}

/// A selected trial that cannot see a drop of [`WANTED_DROP`](crate::decision::WANTED_DROP) from the runs so far, where more
/// runs would let it: the one with the widest run-to-run spread.
#[derive(Clone, Debug, PartialEq)]
pub struct Unseen {
    pub trial: String,
    /// Its run-to-run spread over the runs so far (log scale, ≈ CV).
    pub spread: f64,
    /// The runs it would need at that spread.
    pub runs: usize,
}

/// Whether one more blessed run is worth it: the trial of `runs` (each run's records, in run
/// order) that `filter` selects, measured in every run, that [`Unseen`] describes
/// ([`runs_to_see`]).
pub fn unseen(runs: &[&[TrialRecord]], filter: &Filter) -> Option<Unseen> {
    selected_rounds(runs, filter)
        .iter()
        .filter_map(|records| {
            let trial = rounds_of(records);
            let rates: Vec<Vec<f64>> = trial
                .runs
                .iter()
                .map(|run| Some(run.as_ref()?.figures.gbps.clone()))
                .collect::<Option<_>>()?;
            let (spread, runs) = runs_to_see(&rates, trial.tolerances.throughput)?;
            Some(Unseen {
                trial: trial.name,
                spread,
                runs,
            })
        })
        .max_by(|a, b| a.spread.total_cmp(&b.spread))
}

/// Every run's record of each trial of the first run that `filter` selects, in run order.
fn selected_rounds<'r>(runs: &[&'r [TrialRecord]], filter: &Filter) -> Vec<Vec<&'r TrialRecord>> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|record| filter.matches(&record.name, Some(record.spec.reader.name())))
        .map(|first| {
            runs.iter()
                .filter_map(|run| run.iter().find(|r| r.name == first.name))
                .collect()
        })
        .collect()
}

/// One selected trial, as every blessed run measured it: add, update or keep its entry.
fn take(
    trial: &TrialRounds,
    trials: &mut BTreeMap<String, TrialBaseline>,
    options: &BlessOptions<'_>,
    re_record_all: bool,
    outcome: &mut BlessOutcome,
) {
    let name = trial.name.clone();
    let measured: Option<Vec<&TakenRun>> = trial.runs.iter().map(Option::as_ref).collect();
    let Some(measured) = measured.filter(|runs| !runs.is_empty()) else {
        let reason = trial.why_missing.clone();
        match trials.remove(&name) {
            Some(old) if options.remove_missing => outcome.changes.push(TrialChange::Removed {
                trial: name,
                old,
                why: reason,
            }),
            Some(old) => {
                trials.insert(name.clone(), old);
                outcome.kept.push((name, reason));
            }
            None => {}
        }
        return;
    };
    let figures: Vec<&RunFigures> = measured.iter().map(|run| &run.figures).collect();
    let new = TrialBaseline::from_runs(&figures, &options.provenance);
    let sensitivity =
        Throughput::measure(&new.runs, &new.runs[0], trial.tolerances.throughput).advise();
    if sensitivity.spread_exceeds_tolerance() || sensitivity.spread.is_none() {
        outcome
            .insensitive
            .push((name.clone(), threshold(options.rate, &sensitivity)));
    }
    match trials.get(&name) {
        None => {
            trials.insert(name.clone(), new.clone());
            outcome
                .changes
                .push(TrialChange::Added { trial: name, new });
        }
        Some(old) => {
            // A level that moved past the tolerance is a change, however noisy each run: after a
            // creep (each run within the noise, the level below the baseline), the gate fails
            // until the new level is recorded, and its message tells the maintainer to bless.
            let within_noise = measured.iter().all(|run| {
                let judged = judge_run(
                    old,
                    None,
                    &run.figures,
                    &run.confirmations,
                    trial.tolerances,
                );
                matches!(judged, Judgement::Pass { .. })
            }) && level_within(old, &new, trial.tolerances.throughput);
            if old.same_figures(&new) || (within_noise && !re_record_all) {
                outcome.unchanged.push(name);
            } else {
                let old = old.clone();
                trials.insert(name.clone(), new.clone());
                outcome.changes.push(TrialChange::Updated {
                    trial: name,
                    old,
                    new,
                });
            }
        }
    }
}

/// The new blessed runs' level (as runs are judged against it) is within `tolerance` of the old
/// one's, either way.
fn level_within(old: &TrialBaseline, new: &TrialBaseline, tolerance: f64) -> bool {
    let level = |entry: &TrialBaseline| crate::decision::BlessedRuns::of(&entry.runs).level();
    let ratio = level(new) / level(old);
    (1.0 - tolerance..=1.0 + tolerance).contains(&ratio)
}

/// Selected baseline trials that no suite defines any more (known only when the suites are).
fn remove_undefined(
    defined: &BTreeSet<String>,
    recorded: &BTreeSet<&str>,
    options: &BlessOptions<'_>,
    trials: &mut BTreeMap<String, TrialBaseline>,
    outcome: &mut BlessOutcome,
) {
    let stale: Vec<String> = trials
        .keys()
        .filter(|name| options.filter.matches(name, None) && !defined.contains(*name))
        .filter(|name| !recorded.contains(name.as_str()))
        .cloned()
        .collect();
    for name in stale {
        let why = "no suite defines it".to_string();
        if options.remove_missing {
            if let Some(old) = trials.remove(&name) {
                outcome.changes.push(TrialChange::Removed {
                    trial: name,
                    old,
                    why,
                });
            }
        } else {
            outcome.kept.push((name, why));
        }
    }
}
