//! `--budget` (or a suite's `budget:`): a run planned to fit a wall time before its first trial.
//! Each trial is estimated from this runner's history (the gate's clock around the trial's last
//! passing run), else from its planned bytes at an assumed rate plus its reader's start-up. Trials
//! are kept in suite order while they fit; the rest are left out, said before the first trial and
//! again in the reports. A trial left out is not selected, as one a filter leaves out: neither a
//! pass nor missing from the baseline.

use std::collections::BTreeMap;
use std::time::Duration;

use gds_model::scenario::size::Budget;
use gds_model::scenario::{Reader, TrialSpec};

use crate::baseline::history::HistoryLine;

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

/// The gate's clock around each trial's latest passing run in a runner's history.
pub fn last_walls(lines: &[HistoryLine]) -> BTreeMap<String, f64> {
    let mut walls = BTreeMap::new();
    for line in lines {
        for (name, trial) in &line.trials {
            if trial.status == gds_model::record::Status::Passed
                && let Some(wall) = trial.wall_seconds
            {
                walls.insert(name.clone(), wall);
            }
        }
    }
    walls
}

/// One trial's expected wall time, and whether this runner's history gave it.
fn estimate(spec: &TrialSpec, walls: &BTreeMap<String, f64>) -> (f64, bool) {
    if let Some(&wall) = walls.get(&spec.name) {
        return (wall, true);
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

/// Keeps `specs` in order while their estimates fit in `budget`; `runs` says which start a
/// worker (the others cost nothing).
pub fn plan(
    specs: &[&TrialSpec],
    runs: impl Fn(&TrialSpec) -> bool,
    budget: Budget,
    walls: &BTreeMap<String, f64>,
) -> Plan {
    let mut plan = Plan {
        budget,
        kept: Vec::new(),
        left_out: Vec::new(),
        expected: 0.0,
        from_history: 0,
    };
    for spec in specs {
        let (seconds, known) = if runs(spec) {
            estimate(spec, walls)
        } else {
            (0.0, true)
        };
        if plan.left_out.is_empty() && plan.expected + seconds <= budget.0.as_secs_f64() {
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

    #[test]
    fn trials_are_kept_in_suite_order_while_they_fit_by_history_or_estimate() {
        let specs = specs();
        let refs: Vec<&TrialSpec> = specs.iter().collect();
        let walls = BTreeMap::from([(specs[0].name.clone(), 20.0)]);
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
            (specs[0].name.clone(), 5.0),
            (specs[1].name.clone(), 50.0),
            (specs[2].name.clone(), 1.0),
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
    fn plan_all(specs: &[&TrialSpec], walls: &BTreeMap<String, f64>) -> Plan {
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
