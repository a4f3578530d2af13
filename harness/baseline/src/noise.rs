//! The noise model fitted to real samples: from the run history, the spread of repetitions within
//! a run and the drift of a trial's level from run to run, both on the log scale (multiplicative
//! noise), so that `bench --stats` can check the decision rule against this runner's own noise.
//! Fit it to runs of an unchanged system: a real regression in the history counts as drift.

use std::collections::BTreeMap;
use std::fmt;

use super::history::History;
use gds_model::record::Status;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FittedNoise {
    /// Coefficient of variation of one repetition within a run.
    pub within_cv: f64,
    /// Coefficient of variation of a trial's level from one run to the next, beyond what the
    /// within-run noise explains. The rank test assumes it is zero; the tolerance absorbs it.
    pub between_cv: f64,
    /// Runs of passed trials with at least two repetitions that went into the fit.
    pub runs: usize,
    pub trials: usize,
}

/// `None` when the history holds no trial with two runs of two repetitions or more.
pub fn fit(history: &History) -> Option<FittedNoise> {
    // Per trial, per run: the logs of the repetitions.
    let mut by_trial: BTreeMap<&str, Vec<Vec<f64>>> = BTreeMap::new();
    for line in &history.lines {
        for (name, trial) in &line.trials {
            let usable = trial.status == Status::Passed
                && trial.gbps.len() >= 2
                && trial.gbps.iter().all(|g| g.is_finite() && *g > 0.0);
            if usable {
                let logs = trial.gbps.iter().map(|g| g.ln()).collect();
                by_trial.entry(name).or_default().push(logs);
            }
        }
    }
    let (mut within_sum, mut within_df, mut runs) = (0.0, 0.0, 0);
    // Per trial with two runs or more: the run means, and the share σ²/n of the within-run noise
    // that each run mean carries (averaged over its runs).
    let mut levels: Vec<(Vec<f64>, f64)> = Vec::new();
    for run_logs in by_trial.values() {
        let means: Vec<f64> = run_logs.iter().map(|logs| mean(logs)).collect();
        for (logs, m) in run_logs.iter().zip(&means) {
            within_sum += logs.iter().map(|x| (x - m).powi(2)).sum::<f64>();
            within_df += (logs.len() - 1) as f64;
        }
        runs += run_logs.len();
        if run_logs.len() >= 2 {
            let share = mean(
                &run_logs
                    .iter()
                    .map(|l| 1.0 / l.len() as f64)
                    .collect::<Vec<_>>(),
            );
            levels.push((means, share));
        }
    }
    if within_df == 0.0 || levels.is_empty() {
        return None;
    }
    let within = within_sum / within_df;
    let (mut between_sum, mut between_df) = (0.0, 0.0);
    for (means, share) in &levels {
        let grand = mean(means);
        let df = (means.len() - 1) as f64;
        between_sum += means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() - df * share * within;
        between_df += df;
    }
    Some(FittedNoise {
        within_cv: cv(within),
        between_cv: cv((between_sum / between_df).max(0.0)),
        runs,
        trials: levels.len(),
    })
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The CV of a log-normal with log-variance `variance`.
fn cv(variance: f64) -> f64 {
    (variance.exp() - 1.0).sqrt()
}

impl fmt::Display for FittedNoise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "noise fitted to {} run(s) of {} trial(s) in the history: {:.1}% CV within a run, {:.1}% CV between runs",
            self.runs,
            self.trials,
            self.within_cv * 100.0,
            self.between_cv * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::history::HistoryLine;

    fn history(runs: &[&[f64]]) -> History {
        History {
            lines: runs
                .iter()
                .map(|gbps| {
                    let records = [fixtures::passed("s::a", gbps, "nvfs", 1)];
                    HistoryLine::new(String::new(), "r", "h", &fixtures::fingerprint(), &records)
                })
                .collect(),
            skipped: Vec::new(),
        }
    }

    #[test]
    fn within_and_between_run_noise() {
        // Two runs with the same spread, one 20% above the other.
        let fitted = fit(&history(&[&[1.0, 1.1, 0.9], &[1.2, 1.32, 1.08]])).unwrap();
        assert!((fitted.within_cv - 0.1).abs() < 0.01, "{fitted}");
        assert!(fitted.between_cv > 0.1, "{fitted}");
        // Identical levels: no drift.
        let fitted = fit(&history(&[&[1.0, 1.1, 0.9], &[1.1, 0.9, 1.0]])).unwrap();
        assert_eq!(fitted.between_cv, 0.0, "{fitted}");
        assert_eq!((fitted.runs, fitted.trials), (2, 1));
    }

    #[test]
    fn too_little_history_fits_nothing() {
        assert_eq!(fit(&History::default()), None);
        assert_eq!(fit(&history(&[&[1.0, 1.1]])), None);
    }
}
