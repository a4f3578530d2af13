//! The change points of a runner's history in summary.md: one row per level shift of a trial's
//! run medians, with the runs around it and what changed on the runner near it. The whole
//! history, for people; a run fails on a creep over the runs since its trial's bless alone
//! ([`crate::creep`]).

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::changes::{ALPHA, CONFIRM_RUNS, MIN_SEGMENT, find, series};
use crate::history::History;
use gds_runner::escape::{markdown as text, markdown_code as code};

/// The section, or nothing when no trial of `runner` has a change point.
pub fn markdown(history: &History, runner: &str) -> String {
    let trials: BTreeSet<&str> = history
        .lines
        .iter()
        .filter(|line| line.runner == runner)
        .flat_map(|line| line.trials.keys().map(String::as_str))
        .collect();
    let mut rows = String::new();
    for trial in trials {
        let runs = series(history, runner, trial);
        for point in find(&runs).change_points {
            let near: Vec<String> = point
                .runner_changes
                .iter()
                .map(|c| format!("{} (run {})", c.change, c.index + 1))
                .collect();
            let _ = writeln!(
                rows,
                "| {} | {} of {} | {} | {:.2} → {:.2} | {} | {} | {} |",
                code(trial),
                point.index + 1,
                runs.len(),
                text(&point.time),
                point.before,
                point.after,
                crate::message::change(point.ratio),
                if point.confirmed {
                    format!("yes ({} runs)", point.runs_after)
                } else {
                    format!("not yet ({} runs)", point.runs_after)
                },
                text(&near.join("; "))
            );
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n#### Level shifts over the history\n\nWhere a trial's run medians on this runner moved to a new level and stayed (E-Divisive means on their logs, p ≤ {}, segments of at least {} runs; confirmed after {} runs at the new level), with the runner's changes near each. A creep of steps each inside the noise shows here before any single run fails.\n\n| trial | first run at the new level | time | level GB/s | change | confirmed | runner changes near it |\n|---|---:|---|---:|---:|---|---|\n{rows}",
        ALPHA, MIN_SEGMENT, CONFIRM_RUNS
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, CHECKSUM};
    use crate::history::HistoryLine;

    /// Fixture: 30 runs of one trial, the last 15 at 80% of the first 15's level, a driver
    /// upgrade at the step.
    fn history() -> History {
        let lines = (0..30)
            .map(|i| {
                let level = if i < 15 { 2.0 } else { 1.6 };
                let wobble = 1.0 + 0.01 * f64::from(i % 3);
                let records = [fixtures::passed(
                    "s::a",
                    &[level * wobble; 3],
                    "nvfs",
                    CHECKSUM,
                )];
                let mut fingerprint = fixtures::fingerprint();
                if i >= 15 {
                    fingerprint.driver = Some("590.10".into());
                }
                HistoryLine::new(
                    format!("2026-03-{:02}T00:00:00Z", i % 28 + 1),
                    "r1",
                    "h",
                    &fingerprint,
                    &records,
                )
            })
            .collect();
        History {
            lines,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn a_lasting_step_is_listed_with_the_runner_change_beside_it() {
        let section = markdown(&history(), "r1");
        assert!(
            section.contains("#### Level shifts over the history"),
            "{section}"
        );
        assert!(section.contains("| `s::a` | 16 of 30 |"), "{section}");
        assert!(section.contains("| −20.0% |"), "{section}");
        assert!(section.contains("yes (15 runs)"), "{section}");
        assert!(
            section.contains("driver: 580.159 → 590.10 (run 16)"),
            "{section}"
        );
        assert_eq!(markdown(&history(), "another runner"), "");
    }
}
