//! One run against its runner's baseline: a judgement per trial, as data, with what the
//! baseline expected and the fingerprint changes that are the likely cause of any difference.
//! [`super::message`] words them when a report is written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cost::Cost;
use super::decision::{Throughput, Verdict};
use super::figures::RunFigures;
use super::file::{Loaded, TrialBaseline};
use super::fingerprint::{self, FieldChange, Fingerprint};
use super::judgement::{Cleared, Expected, Judgement, Missing, Severity};
use crate::control::ControlReading;
use gds_model::cost::Percentile;
use gds_model::record::{LoadStep, Status, TrialRecord};
use gds_model::scenario::Expectations;

/// What a run produced, as the comparison and bless need it.
#[derive(Clone, Copy, Debug)]
pub struct RunResults<'a> {
    /// Every trial the run selected (passed, failed or ignored).
    pub records: &'a [TrialRecord],
    /// Every trial name the loaded suites define, selected or not. It tells a trial left out by a
    /// filter (not judged) from one no suite defines any more (reported as missing). `None` when
    /// unknown (a saved report): then every baseline trial absent from `records` is missing.
    pub defined: Option<&'a BTreeSet<String>>,
    pub fingerprint: &'a Fingerprint,
    /// The runner's control read at the start of the run, when it had one.
    pub control: Option<&'a ControlReading>,
    /// Judgements already made while the trials ran; a record without one is judged here.
    pub judged: Option<&'a BTreeMap<String, Judgement>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialJudgement {
    pub trial: String,
    pub judgement: Judgement,
    /// The baseline's entry for the trial, as the judgement's words quote it; absent for a
    /// trial the baseline does not have.
    #[serde(default)]
    pub expected: Option<Expected>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    pub runner: String,
    pub baseline_path: PathBuf,
    pub baseline_found: bool,
    /// Every fingerprint difference, real changes first in the messages.
    pub fingerprint_changes: Vec<FieldChange>,
    /// Sorted by trial name.
    pub trials: Vec<TrialJudgement>,
    /// Baseline trials the run's filter left out: not judged.
    pub not_selected: usize,
}

impl Comparison {
    pub fn worst(&self) -> Severity {
        self.trials
            .iter()
            .map(|t| t.judgement.severity())
            .max()
            .unwrap_or(Severity::Ok)
    }

    pub fn get(&self, trial: &str) -> Option<&TrialJudgement> {
        self.trials.iter().find(|t| t.trial == trial)
    }

    /// Real fingerprint changes (known before and now, different).
    pub fn runner_changed(&self) -> bool {
        fingerprint::changed(&self.fingerprint_changes)
            .next()
            .is_some()
    }
}

/// Judges `run` against the baseline at `path` (already read: a corrupt file must have stopped
/// the caller with its error, never arrive here as [`Loaded::Absent`]).
pub fn compare(loaded: &Loaded, path: &Path, runner: &str, run: &RunResults<'_>) -> Comparison {
    let baseline = loaded.present();
    let fingerprint_changes = baseline
        .map(|b| fingerprint::diff(&b.fingerprint, run.fingerprint))
        .unwrap_or_default();
    let records: BTreeMap<&str, &TrialRecord> =
        run.records.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut judged: BTreeMap<String, (Judgement, Option<&TrialBaseline>)> = BTreeMap::new();
    for (&name, record) in &records {
        let entry = baseline.and_then(|b| b.trials.get(name));
        let judgement = match (baseline, run.judged.and_then(|judged| judged.get(name))) {
            (None, _) => Judgement::NoBaseline,
            (Some(_), Some(judged)) => judged.clone(),
            (Some(baseline), None) => judge_record(baseline, record),
        };
        judged.insert(name.to_string(), (judgement, entry));
    }
    let mut not_selected = 0;
    for (name, entry) in baseline.iter().flat_map(|b| &b.trials) {
        if records.contains_key(name.as_str()) {
            continue;
        }
        let cause = match run.defined {
            Some(defined) if defined.contains(name) => {
                not_selected += 1;
                continue;
            }
            Some(_) => Missing::NotDefined,
            None => Missing::NotRun,
        };
        judged.insert(
            name.clone(),
            (Judgement::MissingTrial { cause }, Some(entry)),
        );
    }
    let trials = judged
        .into_iter()
        .map(|(trial, (judgement, entry))| TrialJudgement {
            trial,
            judgement,
            expected: entry.map(TrialBaseline::expected),
        })
        .collect();
    Comparison {
        runner: runner.to_string(),
        baseline_path: path.to_path_buf(),
        baseline_found: baseline.is_some(),
        fingerprint_changes,
        trials,
        not_selected,
    }
}

/// A trial against `baseline`: compared with its entry, or new to it.
pub fn judge_record(baseline: &super::Baseline, record: &TrialRecord) -> Judgement {
    match baseline.trials.get(&record.name) {
        Some(entry) => judge(entry, baseline.spread_floor(&record.name), record),
        None => unexpected(record),
    }
}

/// What a trial allows before it is judged slower or costlier: `expect.tolerance`,
/// `expect.cpu_tolerance`, `expect.load_tolerance` and `expect.latency_tolerance`, as fractions
/// (0.10 = 10%).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerances {
    pub throughput: f64,
    pub cpu: f64,
    pub load: f64,
    pub latency: f64,
}

/// A read-latency percentile that rose by less than this is never judged higher, whatever its
/// ratio: a few microseconds on a page-cache read are noise no KV-cache user waits for.
pub const LATENCY_FLOOR_US: f64 = 50.0;

/// A run whose CPU seconds per GiB rose by less than this is never judged costlier, whatever
/// its ratio. What the comparison is for, a fallback through host memory that keeps its GB/s,
/// costs about ten times the cuFile path's CPU (H200 runner: posix 1.2-1.6 s/GiB, cuFile's own
/// POSIX path 0.10-0.16); rises below a tenth of a core-second per GiB are what a small pass's
/// CPU clock and the host's page cache move (CPU host: a clean posix run at +0.073 s/GiB, 1.35x
/// its level, was confirmed, and another failed as costlier although its first confirmation
/// rose by 0.08).
pub const CPU_FLOOR_SECONDS_PER_GIB: f64 = 0.1;

/// A load's step that rose by less than this is never judged costlier, whatever its ratio:
/// opening a file on the page cache takes microseconds, and a rise of a few of them is noise
/// no loader's user waits for.
pub const LOAD_STEP_FLOOR_SECONDS: f64 = 0.001;

impl Tolerances {
    pub fn of(expect: &Expectations) -> Tolerances {
        Tolerances {
            throughput: expect.tolerance,
            cpu: expect.cpu_tolerance,
            load: expect.load_tolerance,
            latency: expect.latency_tolerance,
        }
    }
}

/// A trial the baseline has. Order matters: the wrong bytes explain everything else, and a changed
/// path explains a changed speed.
/// `spread_floor`: see [`super::Baseline::spread_floor`].
pub fn judge(entry: &TrialBaseline, spread_floor: Option<f64>, record: &TrialRecord) -> Judgement {
    if let (Status::Ignored, Some(signal)) = (record.checks, &record.interrupted_by) {
        return Judgement::MissingTrial {
            cause: Missing::Interrupted {
                signal: signal.clone(),
            },
        };
    }
    let m = match (record.checks, &record.measurement) {
        (Status::Ignored, _) => {
            return Judgement::MissingTrial {
                cause: Missing::Ignored {
                    reason: record
                        .reason
                        .clone()
                        .unwrap_or_else(|| "no reason given".into()),
                },
            };
        }
        (Status::Failed, _) => {
            return Judgement::NotJudged {
                reason: "the trial failed; its own failure is reported above".into(),
            };
        }
        (Status::Passed, Some(m)) if !m.gbps.is_empty() => m,
        (Status::Passed, _) => {
            return Judgement::NotJudged {
                reason: "the trial has no measured repetitions".into(),
            };
        }
    };
    let confirmations: Vec<RunFigures> = record.confirmations.iter().map(RunFigures::of).collect();
    judge_run(
        entry,
        spread_floor,
        &RunFigures::of(m),
        &confirmations,
        Tolerances::of(&record.spec.expect),
    )
}

/// A run that passed its own checks, with measured passes, and its confirmation runs: the same
/// judgement whether the figures come from the run itself or from its line in the history.
pub fn judge_run(
    entry: &TrialBaseline,
    spread_floor: Option<f64>,
    run: &RunFigures,
    confirmations: &[RunFigures],
    tolerances: Tolerances,
) -> Judgement {
    if let (Some(from), Some(to)) = (entry.checksum, run.checksum)
        && from != to
    {
        return Judgement::ChecksumChanged {
            from: Some(from),
            to: Some(to),
        };
    }
    let mut throughput = Throughput::measure(&entry.runs, &run.gbps, tolerances.throughput)
        .with_spread_floor(spread_floor)
        .advise();
    for repeat in confirmations.iter().filter(|r| !r.gbps.is_empty()) {
        throughput.confirm(&repeat.gbps);
    }
    if entry.path != run.path {
        return Judgement::PathChanged {
            from: entry.path.clone(),
            to: run.path.clone(),
            throughput,
        };
    }
    // A slower set-up step explains a slower load (whose time includes it).
    let steps = load_steps(entry, run, confirmations, tolerances.load);
    if let Some((step, cost)) = steps
        .iter()
        .find(|(_, c)| risen(c, LOAD_STEP_FLOOR_SECONDS))
    {
        return Judgement::LoadCostlier {
            throughput,
            step: *step,
            cost: cost.clone(),
        };
    }
    // Beside writes, the reads' latency is what a KV-cache user feels first.
    let latencies = latencies(entry, run, confirmations, tolerances.latency);
    if let Some((percentile, cost)) = latencies.iter().find(|(_, c)| risen(c, LATENCY_FLOOR_US)) {
        return Judgement::LatencyHigher {
            throughput,
            percentile: *percentile,
            cost: cost.clone(),
        };
    }
    let verdict = throughput.verdict();
    if verdict == Verdict::Slower {
        // Slower explains a changed CPU cost per GiB too; one regression is enough.
        return Judgement::Regression { throughput };
    }
    // A fallback through host memory that keeps its GB/s is what the CPU cost is judged for: a
    // cost that rose with the speed's drop is the runner's slow moment.
    let cpu =
        cpu_cost(entry, run, confirmations, tolerances.cpu).filter(|_| throughput.first_run_held());
    if let Some(cpu) = cpu
        .as_ref()
        .filter(|c| throughput.speed_held() && risen(c, CPU_FLOOR_SECONDS_PER_GIB))
    {
        return Judgement::CpuCostlier {
            throughput,
            cpu: cpu.clone(),
        };
    }
    if verdict == Verdict::Faster {
        return Judgement::Faster { throughput };
    }
    // What the confirmation runs of a run that passes were for, in the order judged above.
    let cleared = (!confirmations.is_empty())
        .then(|| {
            let load = steps
                .into_iter()
                .find(|(_, c)| looked_higher(c, LOAD_STEP_FLOOR_SECONDS))
                .map(|(step, cost)| Cleared::Load { step, cost });
            let latency = || {
                latencies
                    .into_iter()
                    .find(|(_, c)| looked_higher(c, LATENCY_FLOOR_US))
                    .map(|(percentile, cost)| Cleared::Latency { percentile, cost })
            };
            let cpu = || {
                cpu.filter(|c| looked_higher(c, CPU_FLOOR_SECONDS_PER_GIB))
                    .map(|cost| Cleared::Cpu { cost })
            };
            load.or_else(latency).or_else(cpu)
        })
        .flatten();
    Judgement::Pass {
        throughput,
        cleared,
    }
}

/// The run's CPU cost per GiB against its blessed runs, with every confirmation that recorded
/// CPU time; `None` where the baseline or the run has none.
fn cpu_cost(
    entry: &TrialBaseline,
    run: &RunFigures,
    confirmations: &[RunFigures],
    cpu_tolerance: f64,
) -> Option<Cost> {
    measured(
        entry.cpu_runs.as_ref()?,
        &run.cpu_per_gib,
        confirmations
            .iter()
            .map(|repeat| repeat.cpu_per_gib.as_slice()),
        cpu_tolerance,
    )
}

/// A load's set-up steps, in the order they are judged: opening and registering come before the
/// first byte, which adds them up with the first read call, so a judgement names the step that
/// grew.
fn load_steps(
    entry: &TrialBaseline,
    run: &RunFigures,
    confirmations: &[RunFigures],
    tolerance: f64,
) -> Vec<(LoadStep, Cost)> {
    each_measured(
        [LoadStep::Open, LoadStep::Register, LoadStep::FirstByte],
        |step| entry.load_step_runs(step),
        run.load.as_ref(),
        confirmations.iter().filter_map(|r| r.load.as_ref()),
        |figures, step| figures.of(step),
        tolerance,
    )
}

/// The reading rank's latency percentiles, from the tail.
fn latencies(
    entry: &TrialBaseline,
    run: &RunFigures,
    confirmations: &[RunFigures],
    tolerance: f64,
) -> Vec<(Percentile, Cost)> {
    each_measured(
        Percentile::ALL,
        |percentile| entry.latency_runs(percentile),
        run.read_latency.as_ref(),
        confirmations.iter().filter_map(|r| r.read_latency.as_ref()),
        |latencies, percentile| latencies.of(percentile),
        tolerance,
    )
}

/// Each of the figures `keys` names, measured ([`measured`]) against its blessed runs
/// (`blessed`) from this run's and each confirmation's `values`, where the baseline and the run
/// have it.
fn each_measured<'a, K: Copy, T: 'a>(
    keys: impl IntoIterator<Item = K>,
    blessed: impl Fn(K) -> Option<Vec<Vec<f64>>>,
    run: Option<&'a T>,
    confirmations: impl Iterator<Item = &'a T> + Clone,
    values: impl Fn(&'a T, K) -> &'a [f64],
    tolerance: f64,
) -> Vec<(K, Cost)> {
    let Some(run) = run else {
        return Vec::new();
    };
    keys.into_iter()
        .filter_map(|key| {
            let repeats = confirmations.clone().map(|repeat| values(repeat, key));
            let cost = measured(&blessed(key)?, values(run, key), repeats, tolerance)?;
            Some((key, cost))
        })
        .collect()
}

/// A per-pass figure against its blessed runs, with every confirmation that has it; `None`
/// where the run has none.
fn measured<'a>(
    baseline: &[Vec<f64>],
    run: &[f64],
    confirmations: impl Iterator<Item = &'a [f64]>,
    tolerance: f64,
) -> Option<Cost> {
    if run.is_empty() {
        return None;
    }
    let mut cost = Cost::measure(baseline, run, tolerance);
    for repeat in confirmations.filter(|values| !values.is_empty()) {
        cost.confirm(repeat);
    }
    Some(cost)
}

/// Higher than its baseline beyond the tolerance and the spread, and by more than `floor`, in
/// the run and in every confirmation: a confirmation that rose less did not confirm.
fn risen(cost: &Cost, floor: f64) -> bool {
    let beyond_floor = std::iter::once(cost.ratio())
        .chain(cost.confirmation_ratios())
        .all(|ratio| rose_beyond(cost, ratio, floor));
    cost.costlier() && beyond_floor
}

/// Higher than its baseline in the first run alone, as [`risen`] judges it.
fn looked_higher(cost: &Cost, floor: f64) -> bool {
    cost.efficiency.first_run() == Verdict::Slower && rose_beyond(cost, cost.ratio(), floor)
}

/// A run at `ratio` of the cost's level is more than `floor` above it.
fn rose_beyond(cost: &Cost, ratio: f64, floor: f64) -> bool {
    (ratio - 1.0) * cost.level() > floor
}

/// A trial the baseline does not have.
fn unexpected(record: &TrialRecord) -> Judgement {
    match record.checks {
        Status::Passed => Judgement::NewTrial,
        Status::Failed => Judgement::NotJudged {
            reason: "the trial failed and is not in the baseline".into(),
        },
        Status::Ignored => Judgement::NotJudged {
            reason: format!(
                "did not run ({}) and is not in the baseline",
                record.reason.as_deref().unwrap_or("no reason given")
            ),
        },
    }
}
