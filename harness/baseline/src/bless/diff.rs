//! The diff a bless prints: `updating: <file>`, then one line per trial added, updated or
//! removed, and what was kept as it was.

use std::fmt;

use super::{BlessOutcome, TrialChange};
use crate::decision::BlessedRuns;
use crate::file::TrialBaseline;
use crate::message::{change, gbps, number, runs_left_out};
use crate::stats::{Summary, log_mean_sd};
use gds_model::units::Rate;

impl fmt::Display for BlessOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.written {
            let verb = if self.created { "creating" } else { "updating" };
            writeln!(f, "{verb}: {}", self.path.display())?;
        } else {
            writeln!(f, "up to date: {} (nothing changed)", self.path.display())?;
        }
        if let Some(source) = &self.source {
            writeln!(f, "  {source}")?;
        }
        for change in &self.fingerprint {
            writeln!(f, "  fingerprint: {change}")?;
        }
        for change in &self.changes {
            match change {
                TrialChange::Added { trial, new } => writeln!(
                    f,
                    "  + {trial}: {}, path {}{}",
                    runs_figures(self.rate, new),
                    new.path,
                    new.checksum
                        .map(|c| format!(", checksum {}", gds_model::hex::format(c)))
                        .unwrap_or_default()
                )?,
                TrialChange::Updated { trial, old, new } => {
                    writeln!(f, "  ~ {trial}: {}", describe_update(self.rate, old, new))?
                }
                TrialChange::Removed { trial, old, why } => writeln!(
                    f,
                    "  - {trial}: removed ({why}); was {}, path {}",
                    gbps(self.rate, old.median_gbps),
                    old.path
                )?,
            }
        }
        for (trial, why) in &self.kept {
            writeln!(
                f,
                "  kept: {trial} ({why}); pass --remove-missing to drop it"
            )?;
        }
        if !self.insensitive.is_empty() {
            writeln!(
                f,
                "  note: {} trial(s) spread more from run to run than their tolerance; the next run's summary.md says the smallest drop each can see",
                self.insensitive.len()
            )?;
        }
        if !self.unchanged.is_empty() {
            writeln!(
                f,
                "  unchanged: {} trial(s) within noise of their baseline (pass --refresh to re-record them)",
                self.unchanged.len()
            )?;
        }
        Ok(())
    }
}

/// `level 1.29 GB/s over 5 runs (run medians 1.16–1.41, spread 7.5%)`, the level and spread being
/// what runs are compared with ([`BlessedRuns`]: far slower runs left out, and named); or the passes of
/// one run.
fn runs_figures(rate: Rate, trial: &TrialBaseline) -> String {
    let medians = &trial.run_medians_gbps;
    if medians.len() < 2 {
        return format!(
            "{} from 1 run of {} passes ({}–{})",
            gbps(rate, trial.median_gbps),
            trial.samples,
            number(rate, trial.min_gbps),
            number(rate, trial.max_gbps)
        );
    }
    let blessed = BlessedRuns::of(&trial.runs);
    let spread = blessed.spread().unwrap_or_else(|| log_mean_sd(medians).1);
    let left_out = match blessed.left_out.as_slice() {
        [] => String::new(),
        runs => format!("; {}", runs_left_out(runs)),
    };
    let range = Summary::of(medians);
    format!(
        "level {} over {} runs (run medians {}–{}, spread {:.1}%{left_out})",
        gbps(rate, blessed.level()),
        medians.len(),
        number(rate, range.min),
        number(rate, range.max),
        spread * 100.0
    )
}

fn describe_update(rate: Rate, old: &TrialBaseline, new: &TrialBaseline) -> String {
    let mut parts = vec![format!(
        "median {} → {} ({}), {}",
        number(rate, old.median_gbps),
        gbps(rate, new.median_gbps),
        change(new.median_gbps / old.median_gbps),
        runs_figures(rate, new)
    )];
    if old.path != new.path {
        parts.push(format!("path {} → {}", old.path, new.path));
    }
    if old.checksum != new.checksum {
        let show = |c: Option<u64>| c.map_or_else(|| "none".into(), gds_model::hex::format);
        parts.push(format!(
            "checksum {} → {}",
            show(old.checksum),
            show(new.checksum)
        ));
    }
    parts.join("; ")
}
