//! The run's truth, decided once: each trial's [`Outcome`] from its own checks and its
//! judgement against the baseline, the run's [`Totals`] over those outcomes, and the exit code
//! from the totals. Every report, the terminal and `report --merge` take them from here.

use serde::{Deserialize, Serialize};

use crate::Judgement;
pub use gds_model::outcome::Outcome;
use gds_model::record::{Status, TrialRecord};
use gds_runner::exit;

/// A trial's outcome: a failure of its own checks explains everything after it; else the
/// baseline's judgement, where it found a difference that fails the run; else its own checks.
pub fn decide(checks: Status, judgement: Option<&Judgement>) -> Outcome {
    let own = Outcome::of_checks(checks);
    if checks == Status::Failed {
        return own;
    }
    match judgement {
        // A level that crept below the baseline is slower, as a slow run is: one exit code.
        Some(Judgement::Regression { .. } | Judgement::Creep { .. }) => Outcome::Slower,
        Some(
            Judgement::CpuCostlier { .. }
            | Judgement::LoadCostlier { .. }
            | Judgement::LatencyHigher { .. },
        ) => Outcome::Costlier,
        Some(Judgement::PathChanged { .. }) => Outcome::PathChanged,
        Some(Judgement::ChecksumChanged { .. }) => Outcome::ChecksumChanged,
        Some(Judgement::MissingTrial { .. }) => Outcome::Missing,
        Some(
            Judgement::Pass { .. }
            | Judgement::Faster { .. }
            | Judgement::NewTrial
            | Judgement::NoBaseline
            | Judgement::NotJudged { .. },
        )
        | None => own,
    }
}

/// Sets the record's outcome from its checks and `judgement`.
pub fn settle(record: &mut TrialRecord, judgement: Option<&Judgement>) {
    record.status = decide(record.checks, judgement);
}

/// How many trials ended in each outcome. Each trial of the run is counted once; a baseline
/// trial that no suite defines any more (and that the selection did not leave out) counts as
/// `missing` though it has no record.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub slower: usize,
    pub costlier: usize,
    pub path_changed: usize,
    pub checksum_changed: usize,
    pub missing: usize,
    pub ignored: usize,
    /// Trials that failed for their runner's recorded limitation.
    #[serde(default)]
    pub limited: usize,
    /// Trials the filter left out: not part of the run.
    pub filtered_out: usize,
}

impl Totals {
    /// The counts of `trials`, plus `undefined` baseline trials no suite defines.
    pub fn of(trials: &[TrialRecord], undefined: usize, filtered_out: usize) -> Totals {
        let mut totals = Totals {
            filtered_out,
            missing: undefined,
            ..Totals::default()
        };
        for trial in trials {
            *totals.count_mut(trial.status) += 1;
        }
        totals
    }

    pub fn count(&self, outcome: Outcome) -> usize {
        match outcome {
            Outcome::Passed => self.passed,
            Outcome::Failed => self.failed,
            Outcome::Slower => self.slower,
            Outcome::Costlier => self.costlier,
            Outcome::PathChanged => self.path_changed,
            Outcome::ChecksumChanged => self.checksum_changed,
            Outcome::Missing => self.missing,
            Outcome::Ignored => self.ignored,
            Outcome::Limited => self.limited,
        }
    }

    fn count_mut(&mut self, outcome: Outcome) -> &mut usize {
        match outcome {
            Outcome::Passed => &mut self.passed,
            Outcome::Failed => &mut self.failed,
            Outcome::Slower => &mut self.slower,
            Outcome::Costlier => &mut self.costlier,
            Outcome::PathChanged => &mut self.path_changed,
            Outcome::ChecksumChanged => &mut self.checksum_changed,
            Outcome::Missing => &mut self.missing,
            Outcome::Ignored => &mut self.ignored,
            Outcome::Limited => &mut self.limited,
        }
    }

    /// The sum of two runs' totals (`report --merge`).
    pub fn add(&mut self, other: &Totals) {
        for outcome in Outcome::ALL {
            *self.count_mut(outcome) += other.count(outcome);
        }
        self.filtered_out += other.filtered_out;
    }

    /// Trials that fail the run: what libtest and junit.xml count as failed.
    pub fn failures(&self) -> usize {
        Outcome::ALL
            .into_iter()
            .filter(|o| o.is_failure())
            .map(|o| self.count(o))
            .sum()
    }

    /// The exit code of a run with these totals: a failure of correctness (1) before a
    /// regression (3); a run in which nothing passed has not passed (5).
    pub fn exit_code(&self) -> u8 {
        let failing = |regression: bool| {
            Outcome::ALL
                .into_iter()
                .any(|o| o.is_failure() && o.is_regression() == regression && self.count(o) > 0)
        };
        if failing(false) {
            exit::TRIAL_FAILED
        } else if failing(true) {
            exit::REGRESSION
        } else if self.passed == 0 {
            exit::NOTHING_RAN
        } else {
            exit::PASSED
        }
    }

    /// The run's result in a word, as summary.md's title and the merged table say it.
    pub fn verdict(&self) -> &'static str {
        match self.exit_code() {
            exit::TRIAL_FAILED => "FAILED",
            exit::REGRESSION => "SLOWER than the baseline",
            exit::NOTHING_RAN => "NOTHING RAN",
            _ => "passed",
        }
    }

    /// `4 passed, 1 slower, 11 ignored`: every outcome that occurred, in a fixed order, and the
    /// trials the filter left out.
    pub fn counts(&self) -> String {
        let mut parts: Vec<String> = Outcome::ALL
            .into_iter()
            .filter(|o| self.count(*o) > 0 || *o == Outcome::Passed)
            .map(|o| format!("{} {}", self.count(o), o.key()))
            .collect();
        if self.filtered_out > 0 {
            parts.push(format!("{} filtered out", self.filtered_out));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Throughput;
    use crate::judgement::Missing;

    fn throughput() -> Throughput {
        Throughput::measure(&vec![vec![1.0; 5]; 6], &[1.0; 5], 0.1)
    }

    #[test]
    fn the_baseline_decides_only_for_a_trial_whose_own_checks_did_not_fail() {
        let slower = Judgement::Regression {
            throughput: throughput(),
        };
        assert_eq!(decide(Status::Passed, Some(&slower)), Outcome::Slower);
        assert_eq!(decide(Status::Failed, Some(&slower)), Outcome::Failed);
        let missing = Judgement::MissingTrial {
            cause: Missing::Ignored {
                reason: "no GPU".into(),
            },
        };
        assert_eq!(decide(Status::Ignored, Some(&missing)), Outcome::Missing);
        let faster = Judgement::Faster {
            throughput: throughput(),
        };
        assert_eq!(decide(Status::Passed, Some(&faster)), Outcome::Passed);
        assert_eq!(decide(Status::Ignored, None), Outcome::Ignored);
    }

    #[test]
    fn the_exit_code_puts_correctness_before_speed_and_nothing_ran_last() {
        let with = |outcome: Outcome| {
            let mut totals = Totals {
                passed: 3,
                ..Totals::default()
            };
            *totals.count_mut(outcome) += 1;
            totals.exit_code()
        };
        assert_eq!(with(Outcome::Passed), exit::PASSED);
        assert_eq!(with(Outcome::Ignored), exit::PASSED);
        assert_eq!(with(Outcome::Slower), exit::REGRESSION);
        assert_eq!(with(Outcome::Costlier), exit::REGRESSION);
        for failure in [
            Outcome::Failed,
            Outcome::PathChanged,
            Outcome::ChecksumChanged,
            Outcome::Missing,
        ] {
            assert_eq!(with(failure), exit::TRIAL_FAILED, "{failure:?}");
        }
        let both = Totals {
            slower: 1,
            missing: 1,
            ..Totals::default()
        };
        assert_eq!(both.exit_code(), exit::TRIAL_FAILED);
        assert_eq!(Totals::default().exit_code(), exit::NOTHING_RAN);
    }

    #[test]
    fn counts_name_every_outcome_that_occurred() {
        let totals = Totals {
            passed: 4,
            slower: 1,
            ignored: 11,
            filtered_out: 2,
            ..Totals::default()
        };
        assert_eq!(
            totals.counts(),
            "4 passed, 11 ignored, 1 slower, 2 filtered out"
        );
        assert_eq!(totals.failures(), 1);
    }
}
