//! `--budget` (or a suite's `budget:`): a run planned to fit a wall time before its first trial.
//! Each trial is estimated from this runner's history (the gate's clock around the trial's last
//! passing run, without its confirmations), else from its planned bytes at an assumed rate plus
//! its reader's start-up. Trials are kept in suite order while they fit, and a trial whose last
//! run failed is kept whatever it costs; the rest are left out, said before the first trial and
//! again in the reports. A trial left out is not selected, as one a filter leaves out: neither a
//! pass nor missing from the baseline.

use std::collections::BTreeMap;
use std::time::Duration;

use gds_model::scenario::size::Budget;
use gds_model::scenario::{Reader, TrialSpec};

use crate::baseline::history::HistoryLine;
use gds_model::outcome::Outcome;
use gds_model::record::Status;

/// The rate a trial this runner has no history of is estimated at: a modest disk, so that the
/// first run of a new suite errs towards fitting.
const ASSUMED_GBPS: f64 = 1.0;

/// Seconds from a worker's start to its first byte, by reader, as measured on the H200 runner
/// (posix 3 ms, h2d 0.3–0.6 s, cuFile 0.7–0.9 s, KvikIO 1.3–2.0 s, PyTorch 4.6–7.9 s).
fn startup_guess(reader: Reader) -> f64 {
    match reader {
        Reader::Posix => 0.0,
        Reader::H2d => 0.5,
        Reader::Cufile | Reader::CufileBatch | Reader::CufileAsync => 0.9,
        Reader::Kvikio => 2.0,
        Reader::Torch => 8.0,
    }
}

/// What a runner's history says of a trial for planning a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Last {
    /// The gate's clock around its latest passing run's own measuring (confirmations and the
    /// waits before them left out: a trial is not priced by its last slow spell).
    pub seconds: Option<f64>,
    /// Its latest run's outcome failed that run: it is never left out, whatever it costs.
    pub failed: bool,
}

/// Each trial's [`Last`] in a runner's history, oldest line first.
pub fn last_runs(lines: &[HistoryLine]) -> BTreeMap<String, Last> {
    let mut last: BTreeMap<String, Last> = BTreeMap::new();
    for line in lines {
        for (name, trial) in &line.trials {
            let entry = last.entry(name.clone()).or_default();
            let outcome = trial.bless.as_ref().map(|facts| facts.outcome);
            entry.failed = outcome.map_or(trial.status == Status::Failed, Outcome::is_failure);
            if trial.status == Status::Passed
                && let Some(seconds) = trial.measured_seconds.or(trial.wall_seconds)
            {
                entry.seconds = Some(seconds);
            }
        }
    }
    last
}

/// One trial's expected wall time, and whether this runner's history gave it.
fn estimate(spec: &TrialSpec, last: Option<&Last>) -> (f64, bool) {
    if let Some(seconds) = last.and_then(|last| last.seconds) {
        return (seconds, true);
    }
    let bytes = crate::progress::planned_bytes(spec).unwrap_or(0) as f64;
    (
        startup_guess(spec.reader) + bytes / (ASSUMED_GBPS * 1e9),
        false,
    )
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub budget: Budget,
    /// The trials that fit, in suite order.
    pub kept: Vec<String>,
    /// The trials left out, each with its estimate in seconds.
    pub left_out: Vec<(String, f64)>,
    /// Seconds the kept trials are expected to take.
    pub expected: f64,
    /// How many estimates came from this runner's history.
    pub from_history: usize,
}

/// Keeps `specs` in order while their estimates fit in `budget`, and every trial whose latest run
/// failed whatever it costs; `runs` says which start a worker (the others cost nothing).
pub fn plan(
    specs: &[&TrialSpec],
    runs: impl Fn(&TrialSpec) -> bool,
    budget: Budget,
    last: &BTreeMap<String, Last>,
) -> Plan {
    let mut plan = Plan {
        budget,
        kept: Vec::new(),
        left_out: Vec::new(),
        expected: 0.0,
        from_history: 0,
    };
    for spec in specs {
        let last = last.get(&spec.name);
        let (seconds, known) = if runs(spec) {
            estimate(spec, last)
        } else {
            (0.0, true)
        };
        let fits = plan.left_out.is_empty() && plan.expected + seconds <= budget.0.as_secs_f64();
        // A trial that failed last time is what the run is for: leaving it out would pass a
        // regression by not looking.
        if fits || last.is_some_and(|last| last.failed) {
            plan.expected += seconds;
            plan.from_history += usize::from(known);
            plan.kept.push(spec.name.clone());
        } else {
            // Suite order is the user's priority: once one trial does not fit, neither do the
            // ones after it, so that a run never skips a trial to squeeze in a later one.
            plan.left_out.push((spec.name.clone(), seconds));
        }
    }
    plan
}

impl Plan {
    /// The line said before the first trial.
    pub fn intro(&self) -> String {
        let total = self.kept.len() + self.left_out.len();
        let basis = match self.kept.len() - self.from_history {
            0 => "by this runner's history".to_string(),
            guessed => format!(
                "{guessed} estimated at {ASSUMED_GBPS:.0} GB/s with no history of them here"
            ),
        };
        if self.kept.is_empty() {
            return format!(
                "budget {}: none of the {total} trials fits; {}",
                self.budget,
                self.left_out_text()
            );
        }
        let expected = duration(self.expected);
        if self.left_out.is_empty() {
            return format!(
                "budget {}: all {total} trials, about {expected} ({basis})",
                self.budget
            );
        }
        format!(
            "budget {}: {} of {total} trials, about {expected} ({basis}); {}",
            self.budget,
            self.kept.len(),
            self.left_out_text()
        )
    }

    /// What was left out and why, for the reports' notes; `None` when nothing was.
    pub fn note(&self) -> Option<String> {
        (!self.left_out.is_empty())
            .then(|| format!("budget {}: {}", self.budget, self.left_out_text()))
    }

    fn left_out_text(&self) -> String {
        let seconds: f64 = self.left_out.iter().map(|(_, s)| s).sum();
        let names: Vec<&str> = self.left_out.iter().map(|(n, _)| n.as_str()).collect();
        format!(
            "left out {} trial(s) of about {} that would not fit: {}; they run with a larger --budget",
            names.len(),
            duration(seconds),
            names.join(", ")
        )
    }
}

/// `45 s`, `3 min 10 s`: as the live view says time left.
fn duration(seconds: f64) -> String {
    crate::progress::rounded(Duration::from_secs_f64(seconds.max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixture: trials of a real suite, 64 MiB cold reads, 3 passes.
    fn specs() -> Vec<TrialSpec> {
        let suite = gds_model::scenario::parse(
            std::path::Path::new("s.yaml"),
            "suite: s\nscenarios:\n  - name: a\n    files: { size: 64MiB }\n    warmup: 0\n    repetitions: 3\n    reader: [posix, cufile, torch]\n",
        )
        .unwrap();
        gds_model::scenario::expand(&suite)
    }

    fn budget(text: &str) -> Budget {
        Budget::parse(text).unwrap()
    }

    /// A trial whose latest passing run's own measuring took `seconds`.
    fn took(seconds: f64) -> Last {
        Last {
            seconds: Some(seconds),
            failed: false,
        }
    }

    #[test]
    fn a_trial_whose_last_run_failed_is_never_left_out() {
        let specs = specs();
        let refs: Vec<&TrialSpec> = specs.iter().collect();
        let last = BTreeMap::from([
            (specs[0].name.clone(), took(5.0)),
            (specs[1].name.clone(), took(50.0)),
            (
                specs[2].name.clone(),
                Last {
                    failed: true,
                    ..took(50.0)
                },
            ),
        ]);
        let plan = plan(&refs, |_| true, budget("10s"), &last);
        assert_eq!(plan.kept, [specs[0].name.clone(), specs[2].name.clone()]);
        assert_eq!(plan.left_out.len(), 1);
    }

    #[test]
    fn a_trial_is_priced_by_its_own_measuring_not_its_confirmations() {
        let spec = &specs()[0];
        let record = |seconds: f64, measured: f64, outcome: Outcome| {
            let mut record = gds_baseline::fixtures::passed(&spec.name, &[1.0], "host", 1);
            record.wall_seconds = Some(seconds);
            record.measured_seconds = Some(measured);
            record.status = outcome;
            record
        };
        let line = |records: &[gds_model::record::TrialRecord]| {
            HistoryLine::new(
                "2026-12-06T15:00:00Z".into(),
                "r",
                "h",
                &gds_baseline::fixtures::fingerprint(),
                records,
            )
        };
        // Slower, confirmed after a wait for the runner: 130 s in all, 12 s of its own.
        let lines = [
            line(&[record(12.0, 12.0, Outcome::Passed)]),
            line(&[record(130.0, 12.0, Outcome::Slower)]),
        ];
        let last = last_runs(&lines);
        assert_eq!(
            last[&spec.name],
            Last {
                seconds: Some(12.0),
                failed: true
            }
        );
    }

    #[test]
    fn trials_are_kept_in_suite_order_while_they_fit_by_history_or_estimate() {
        let specs = specs();
        let refs: Vec<&TrialSpec> = specs.iter().collect();
        let walls = BTreeMap::from([(specs[0].name.clone(), took(20.0))]);
        // posix from history 20 s; cufile estimated 0.9 s + 201 MB at 1 GB/s; torch 8.2 s.
        let plan = plan(&refs, |_| true, budget("25s"), &walls);
        assert_eq!(plan.kept, [specs[0].name.clone(), specs[1].name.clone()]);
        assert_eq!(plan.left_out.len(), 1);
        assert!((plan.expected - 21.101_326_592).abs() < 1e-6, "{plan:?}");
        assert_eq!(plan.from_history, 1);
        assert_eq!(
            plan.intro(),
            "budget 25s: 2 of 3 trials, about 21 s (1 estimated at 1 GB/s with no history of them here); left out 1 trial(s) of about 8 s that would not fit: s::a[reader=torch]; they run with a larger --budget"
        );
        assert!(
            plan.note()
                .unwrap()
                .starts_with("budget 25s: left out 1 trial(s)")
        );
    }

    #[test]
    fn a_trial_that_does_not_fit_leaves_out_every_later_one_and_trials_that_cannot_run_are_free() {
        let specs = specs();
        let refs: Vec<&TrialSpec> = specs.iter().collect();
        let walls = BTreeMap::from([
            (specs[0].name.clone(), took(5.0)),
            (specs[1].name.clone(), took(50.0)),
            (specs[2].name.clone(), took(1.0)),
        ]);
        let plan = plan(&refs, |_| true, budget("10s"), &walls);
        assert_eq!(plan.kept.len(), 1);
        assert_eq!(
            plan.left_out.len(),
            2,
            "the later, short trial is not squeezed in"
        );
        let only_posix = plan_all(&refs, &walls);
        assert_eq!(only_posix.kept.len(), 3);
        assert_eq!(only_posix.note(), None);
        assert!(
            only_posix
                .intro()
                .starts_with("budget 10s: all 3 trials, about 5 s (by this runner's history)")
        );
    }

    /// Only the posix trial starts a worker: the others cost nothing.
    fn plan_all(specs: &[&TrialSpec], walls: &BTreeMap<String, Last>) -> Plan {
        plan(
            specs,
            |spec| spec.reader == Reader::Posix,
            budget("10s"),
            walls,
        )
    }

    #[test]
    fn a_budget_is_a_duration_above_zero() {
        assert_eq!(budget("5m").0, Duration::from_secs(300));
        let error = Budget::parse("0s").unwrap_err().to_string();
        assert!(
            error.contains("`0s` is not a time budget (it is zero)"),
            "{error}"
        );
        let error = Budget::parse("soon").unwrap_err().to_string();
        assert!(error.contains("write a duration such as `5m`"), "{error}");
    }
}
