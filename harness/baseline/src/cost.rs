//! A cost against the baseline, judged with the statistics of the throughput decision: a run's
//! CPU seconds per GiB, so that a read path that burns more cores for the same bytes (a fallback
//! through host bounce buffers that keeps its GB/s) fails like a slower one, and a load's
//! set-up steps (seconds to the first byte, to open, to register the buffer).
//!
//! A cost is the reciprocal of a rate: GiB per CPU second, loads per second of a step. A rise in cost is a drop in that rate,
//! so [`Throughput`] runs unchanged on the reciprocals: its geometric level, log-scale spread,
//! Student-t prediction bound and confirmation rule are all symmetric under `x → 1/x` (the median
//! of reciprocals is the reciprocal of the median for an odd number of passes, the mean of the
//! two middle ones otherwise, well inside any tolerance). Only the tolerance is translated: a
//! cost allowed to rise by `t` is a rate allowed to fall by `1 − 1/(1 + t)`.

use serde::{Deserialize, Serialize};

use super::decision::{Throughput, Verdict};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cost {
    /// The decision over the reciprocals of the passes' costs (GiB per CPU second).
    pub efficiency: Throughput,
    /// The allowed rise of the cost (0.20 = 20%).
    pub tolerance: f64,
}

fn reciprocals(values: &[f64]) -> Vec<f64> {
    values.iter().map(|x| 1.0 / x).collect()
}

impl Cost {
    /// `baseline_runs`: each blessed run's cost per pass (CPU s/GiB); `run`: this run's. Neither may be
    /// empty, and every value is positive (the baseline file and the record check that).
    pub fn measure(baseline_runs: &[Vec<f64>], run: &[f64], tolerance: f64) -> Cost {
        let runs: Vec<Vec<f64>> = baseline_runs.iter().map(|r| reciprocals(r)).collect();
        Cost {
            efficiency: Throughput::measure(
                &runs,
                &reciprocals(run),
                1.0 - 1.0 / (1.0 + tolerance),
            ),
            tolerance,
        }
    }

    pub fn confirm(&mut self, run: &[f64]) {
        self.efficiency.confirm(&reciprocals(run));
    }

    /// The baseline's level (CPU s/GiB, seconds).
    pub fn level(&self) -> f64 {
        1.0 / self.efficiency.level
    }

    /// This run's median cost.
    pub fn run_median(&self) -> f64 {
        1.0 / self.efficiency.run.median
    }

    /// This run's cost over the level (1.25 = 25% more).
    pub fn ratio(&self) -> f64 {
        1.0 / self.efficiency.ratio
    }

    /// Above this ratio a run costs more: beyond the tolerance and beyond the spread.
    pub fn costlier_above(&self) -> f64 {
        1.0 / self.efficiency.slower_below()
    }

    /// The confirmation runs' cost ratios.
    pub fn confirmation_ratios(&self) -> Vec<f64> {
        self.efficiency
            .confirmations
            .iter()
            .map(|r| 1.0 / r)
            .collect()
    }

    /// Costlier in the first run and in every confirmation run.
    pub fn costlier(&self) -> bool {
        self.efficiency.verdict() == Verdict::Slower
    }

    pub fn wants_confirmation(&self, wanted: usize) -> bool {
        self.efficiency.wants_confirmation(wanted)
    }

    /// The spread, not the tolerance, sets the detectable rise on this runner.
    pub fn spread_exceeds_tolerance(&self) -> bool {
        self.efficiency.spread_exceeds_tolerance()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixture, not measured: six blessed runs at 0.40–0.44 CPU s/GiB, five passes each within ±1%.
    fn blessed() -> Vec<Vec<f64>> {
        [0.40, 0.42, 0.44, 0.41, 0.43, 0.42]
            .iter()
            .map(|&c| vec![c * 0.99, c, c * 1.01, c * 0.995, c * 1.005])
            .collect()
    }

    #[test]
    fn a_doubled_cpu_cost_is_costlier_and_the_same_cost_is_not() {
        let same = Cost::measure(&blessed(), &[0.41, 0.43, 0.42], 0.20);
        assert!(!same.costlier(), "{same:?}");
        assert!((same.ratio() - 1.0).abs() < 0.03);
        let doubled = Cost::measure(&blessed(), &[0.84, 0.85, 0.83], 0.20);
        assert!(doubled.costlier(), "{doubled:?}");
        assert!((doubled.ratio() - 2.0).abs() < 0.05, "{}", doubled.ratio());
        assert!((doubled.run_median() - 0.84).abs() < 1e-9);
        assert!(
            (doubled.level() - 0.42).abs() < 0.005,
            "{}",
            doubled.level()
        );
        // Cheaper is never a failure.
        assert!(!Cost::measure(&blessed(), &[0.1], 0.20).costlier());
    }

    #[test]
    fn the_tolerance_is_a_rise_in_cost() {
        // Quiet runner: the tolerance sets the line, at exactly +20% CPU per GiB.
        let quiet: Vec<Vec<f64>> = (0..6).map(|_| vec![0.5, 0.5, 0.5]).collect();
        let c = Cost::measure(&quiet, &[0.5], 0.20);
        assert!((c.costlier_above() - 1.20).abs() < 1e-9, "{c:?}");
        assert!(!Cost::measure(&quiet, &[0.59], 0.20).costlier());
        assert!(Cost::measure(&quiet, &[0.61], 0.20).costlier());
    }

    #[test]
    fn a_confirmation_run_at_the_old_cost_clears_it() {
        let mut c = Cost::measure(&blessed(), &[0.84], 0.20);
        assert!(c.wants_confirmation(1));
        c.confirm(&[0.42]);
        assert!(!c.costlier() && !c.wants_confirmation(1));
        assert!((c.confirmation_ratios()[0] - 1.0).abs() < 0.03);
    }
}
