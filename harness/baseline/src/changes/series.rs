//! One trial's runs on one runner out of `history.jsonl`, with what changed on the runner at each,
//! for [`super::find`].

use super::super::fingerprint::{self, Fingerprint};
use super::super::history::History;
use super::Run;
use gds_model::path::Path;
use gds_model::record::Status;

/// The runs of `trial` on `runner`, in the history's order, each with the fingerprint fields that
/// changed since the runner's run before it (changed facts only: a fact a run did not observe is
/// not a change) and a change of the path the trial's bytes took. Runs whose own checks did not
/// pass are left out (their rate is not of the path the trial checks), as are runs without a
/// median; what changed on the runner meanwhile is carried to the next run kept.
pub fn series(history: &History, runner: &str, trial: &str) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut known: Option<Fingerprint> = None;
    let mut pending: Vec<String> = Vec::new();
    let mut last_path: Option<Path> = None;
    for line in history.lines.iter().filter(|line| line.runner == runner) {
        if let Some(before) = &known {
            let diff = fingerprint::diff(before, &line.fingerprint);
            pending.extend(fingerprint::changed(&diff).map(ToString::to_string));
        }
        known = Some(match known {
            Some(before) => line.fingerprint.merged_over(&before),
            None => line.fingerprint.clone(),
        });
        let Some(entry) = line.trials.get(trial) else {
            continue;
        };
        let Some(median) = entry.median_gbps.filter(|_| entry.status == Status::Passed) else {
            continue;
        };
        if let (Some(before), Some(now)) = (&last_path, &entry.path)
            && before != now
        {
            pending.push(format!("path: {before} → {now}"));
        }
        if entry.path.is_some() {
            last_path.clone_from(&entry.path);
        }
        // Changes before the trial's first run have no level before them to shift from.
        if runs.is_empty() {
            pending.clear();
        }
        runs.push(Run {
            time: line.time.clone(),
            median_gbps: median,
            changes: std::mem::take(&mut pending),
        });
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::history::HistoryLine;

    fn line(runner: &str, driver: &str, records: &[gds_model::record::TrialRecord]) -> HistoryLine {
        let fingerprint = Fingerprint {
            driver: Some(driver.into()),
            ..fixtures::fingerprint()
        };
        HistoryLine::new("t".into(), runner, "h", &fingerprint, records)
    }

    #[test]
    fn runs_of_one_trial_on_one_runner_with_what_changed() {
        let a = |g: f64, path: &str| fixtures::passed("s::a", &[g, g, g], path, 1);
        let history = History {
            lines: vec![
                line("r1", "570.86", &[a(2.0, "nvfs")]),
                line("r2", "999.0", &[a(9.0, "nvfs")]),
                line("r1", "570.86", &[a(2.1, "nvfs")]),
                // The trial failed its own checks here: left out, the driver change carried on.
                line("r1", "580.159", &[fixtures::failed("s::a", &[1.0])]),
                line("r1", "580.159", &[fixtures::ignored("s::a")]),
                line("r1", "580.159", &[a(1.9, "cufile-posix")]),
                line("r1", "580.159", &[a(1.8, "cufile-posix")]),
            ],
            skipped: Vec::new(),
        };
        let runs = series(&history, "r1", "s::a");
        let medians: Vec<f64> = runs.iter().map(|r| r.median_gbps).collect();
        assert_eq!(medians, [2.0, 2.1, 1.9, 1.8]);
        assert!(runs[0].changes.is_empty() && runs[1].changes.is_empty());
        assert_eq!(
            runs[2].changes,
            ["driver: 570.86 → 580.159", "path: nvfs → cufile-posix"]
        );
        assert!(runs[3].changes.is_empty());
        assert!(series(&history, "r1", "s::other").is_empty());
    }

    #[test]
    fn a_fact_a_run_did_not_observe_is_not_a_change() {
        let a = fixtures::passed("s::a", &[2.0], "nvfs", 1);
        let mut blind = line("r1", "570.86", std::slice::from_ref(&a));
        blind.fingerprint.driver = None;
        let history = History {
            lines: vec![
                line("r1", "570.86", std::slice::from_ref(&a)),
                blind,
                line("r1", "570.86", std::slice::from_ref(&a)),
            ],
            skipped: Vec::new(),
        };
        assert!(
            series(&history, "r1", "s::a")
                .iter()
                .all(|r| r.changes.is_empty())
        );
    }
}
