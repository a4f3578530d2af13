//! The creep as part of a trial's judgement in a gate run: the trial's runs on this runner since
//! its baseline was blessed, this run included, searched for level shifts
//! ([`crate::changes::find`]); a run that passes on its own is judged [`Judgement::Creep`] when
//! the latest confirmed level is below the baseline by more than the trial's tolerance, or was
//! at one of the last runs and has not been found back ([`crate::changes::held_creep`]). The
//! bless itself counts as a change point when the runs since it sit at a level its runs do not
//! explain ([`crate::changes::shift_at_bless`]): a drop that came with the bless fails too.
//!
//! Only the runs since the bless are searched. They were judged against this baseline's level;
//! older runs were judged against another one, and a maintainer who blessed the new level after a
//! creep (bless re-records a level that moved past the tolerance) must see the gate stop failing.

use std::time::SystemTime;

use crate::changes::{Creep, Reference, held_creep, series};
use crate::decision::BlessedRuns;
use crate::file::TrialBaseline;
use crate::history::{History, HistoryLine};
use crate::judgement::Judgement;
use crate::slow_runs::ALPHA_SLOW_CREEP;

/// The runner's history before this run, as the creep reads it.
#[derive(Clone, Debug, Default)]
pub struct RunnerHistory {
    runner: String,
    lines: Vec<HistoryLine>,
}

impl RunnerHistory {
    /// The lines of `history` that are `runner`'s.
    pub fn of(history: History, runner: &str) -> RunnerHistory {
        RunnerHistory {
            runner: runner.to_string(),
            lines: history
                .lines
                .into_iter()
                .filter(|line| line.runner == runner)
                .collect(),
        }
    }

    /// The runner's lines, oldest first.
    pub fn lines(&self) -> &[HistoryLine] {
        &self.lines
    }

    /// `judgement` of the trial `run` holds, made against `entry`, with the creep over the
    /// history since `entry` was blessed: a run that passes alone (as fast, or faster) fails when
    /// the level it belongs to crept below the baseline. Any other judgement already says more.
    pub fn judge(
        &self,
        judgement: Judgement,
        trial: &str,
        entry: &TrialBaseline,
        run: &HistoryLine,
    ) -> Judgement {
        let throughput = match &judgement {
            Judgement::Pass { throughput, .. } | Judgement::Faster { throughput } => throughput,
            _ => return judgement,
        };
        // The level a run is judged against, and the blessed runs a shift at the bless is tested
        // against: far slower ones left out, at the creep's looser rule.
        let kept = BlessedRuns::at(&entry.runs, ALPHA_SLOW_CREEP).medians;
        let reference = Reference {
            level: throughput.level,
            runs: &kept,
        };
        match self.creep(
            trial,
            &entry.blessed_at,
            run,
            reference,
            throughput.tolerance,
        ) {
            Some(creep) => Judgement::Creep {
                throughput: throughput.clone(),
                creep,
                since: entry.blessed_at.clone(),
            },
            None => judgement,
        }
    }

    /// The creep of `trial` over the runs since `blessed_at` and `run`, against `reference`
    /// and `tolerance`.
    pub fn creep(
        &self,
        trial: &str,
        blessed_at: &str,
        run: &HistoryLine,
        reference: Reference<'_>,
        tolerance: f64,
    ) -> Option<Creep> {
        // The baseline file refuses a `blessed_at` that is not a time.
        let since = time(blessed_at)?;
        let lines: Vec<HistoryLine> = self
            .lines
            .iter()
            .filter(|line| time(&line.time).is_some_and(|t| t >= since))
            .chain(std::iter::once(run))
            .cloned()
            .collect();
        let history = History {
            lines,
            skipped: Vec::new(),
        };
        let runs = series(&history, &self.runner, trial);
        // The level and the tolerance come from a checked baseline and suite: never refused here.
        held_creep(&runs, reference, tolerance).ok().flatten()
    }
}

fn time(rfc3339: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(rfc3339).ok()
}

#[cfg(test)]
mod tests;
