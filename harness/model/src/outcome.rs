//! A trial's [`Status`] (its own checks) and its [`Outcome`] (its own checks and its judgement
//! against the runner's baseline, as one word). The gate decides the outcome once per trial
//! (`gds_gate::outcome::decide`); every report shows that word and counts it the same way.

use serde::{Deserialize, Serialize};

/// The result of a trial's own checks (its path, its bytes, its worker's run), before any
/// baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    /// Did not run, with the reason. Never counted as a pass.
    Ignored,
}

/// Ordered from harmless to the failure that explains the most, so that the worst of a run is
/// its maximum.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Its own checks passed and, where a baseline has it, it is as fast as the baseline (or
    /// faster, or its slow run did not repeat).
    Passed,
    /// Did not run, for an accepted reason the baseline does not contradict.
    Ignored,
    /// Failed its own checks for the reason recorded as this runner's known limitation (e.g.
    /// `strict-gds` where nvidia-fs is not loaded): counted apart, failing nothing.
    Limited,
    /// Slower than its baseline, in the run and in every confirmation run; or its level over the
    /// runner's history since the bless crept below the baseline by more than the tolerance.
    Slower,
    /// As fast, but more CPU seconds per GiB than its baseline, confirmed.
    Costlier,
    /// Its own checks failed: wrong path for `expect.path`, wrong bytes, a crash, a timeout.
    Failed,
    /// Passed its own checks, but the bytes took another path than in the baseline.
    PathChanged,
    /// Passed its own checks, but the bytes read are not the bytes the baseline read.
    ChecksumChanged,
    /// The baseline has it and this run did not run it (ignored, or no suite defines it).
    Missing,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Passed,
        Outcome::Ignored,
        Outcome::Limited,
        Outcome::Slower,
        Outcome::Costlier,
        Outcome::Failed,
        Outcome::PathChanged,
        Outcome::ChecksumChanged,
        Outcome::Missing,
    ];

    /// The outcome of a trial's own checks, before any baseline is consulted.
    pub fn of_checks(checks: Status) -> Outcome {
        match checks {
            Status::Passed => Outcome::Passed,
            Status::Failed => Outcome::Failed,
            Status::Ignored => Outcome::Ignored,
        }
    }

    /// Fails the run: everything but passed, ignored and limited. libtest counts these as
    /// `failed`.
    pub fn is_failure(self) -> bool {
        !matches!(self, Outcome::Passed | Outcome::Ignored | Outcome::Limited)
    }

    /// A failure against the baseline's figures (exit 3), not of correctness (exit 1).
    pub fn is_regression(self) -> bool {
        matches!(self, Outcome::Slower | Outcome::Costlier)
    }

    /// The word of report.json and of the totals, e.g. `path-changed`.
    pub fn key(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Ignored => "ignored",
            Outcome::Limited => "limited",
            Outcome::Slower => "slower",
            Outcome::Costlier => "costlier",
            Outcome::Failed => "failed",
            Outcome::PathChanged => "path-changed",
            Outcome::ChecksumChanged => "checksum-changed",
            Outcome::Missing => "missing",
        }
    }

    /// How a table cell or a result line shows it: failures in capitals.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Passed => "ok",
            Outcome::Ignored => "ignored",
            Outcome::Limited => "limited",
            Outcome::Slower => "SLOWER",
            Outcome::Costlier => "COSTLIER",
            Outcome::Failed => "FAILED",
            Outcome::PathChanged => "PATH CHANGED",
            Outcome::ChecksumChanged => "CHECKSUM CHANGED",
            Outcome::Missing => "MISSING",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serialised_word_is_the_key() {
        for outcome in Outcome::ALL {
            let json = serde_json::to_string(&outcome).expect("serialises");
            assert_eq!(json, format!("\"{}\"", outcome.key()));
        }
    }

    #[test]
    fn only_passed_ignored_and_limited_do_not_fail_a_run() {
        let failing: Vec<Outcome> = Outcome::ALL
            .into_iter()
            .filter(|o| o.is_failure())
            .collect();
        assert_eq!(failing.len(), 6);
        assert!(failing.iter().all(|o| *o > Outcome::Limited));
    }
}
