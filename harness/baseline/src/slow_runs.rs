//! Which blessed runs a trial's level and spread rest on: all of them less the runs far slower
//! than the rest.
//!
//! One slow run at bless (a moment of contention, a disk whose burst credits the runs before it
//! spent) drags the level down and widens the spread, so that a real drop then reads as this
//! runner's noise. On the CPU host a bless from a history with one run capped at 0.6 of the
//! others let single runs at 0.63–0.76 of the true level pass as fast for eight runs; only the
//! creep check caught them.
//!
//! The rule is Rosner's generalised extreme Studentised deviate test, one-sided: set aside the
//! lowest run, then the next lowest, up to a third of the runs; at step i, compare the run set
//! aside with the runs above it (how far below their mean, in units of their spread, as a
//! prediction for one more run: Student t with their count less one degrees of freedom). The slow
//! runs are the lowest j for the largest step j whose statistic exceeds its critical value, so
//! that two slow runs do not hide each other. The critical value is the t quantile at 1 − α/n
//! (α: [`ALPHA_SLOW`] for the level, [`ALPHA_SLOW_CREEP`] for the creep): on a runner with normal
//! run-to-run noise a bless leaves a run out with a probability of about α.
//!
//! The spread of the runs above is never taken below what the passes' own noise puts into a run
//! median, so that runs that agree by luck cannot make an ordinary run look like an outlier.

use super::stats::{log_mean_sd, student_t_quantile};

/// At most this chance per bless that a run of an unchanged, normally noisy runner is left out of
/// the level and spread a run is judged against.
pub const ALPHA_SLOW: f64 = 0.01;

/// The same, for the blessed runs a creep is tested against ([`crate::changes::shift_at_bless`]).
/// Looser: a creep also needs ten runs held beyond the tolerance, so a normal run left out of its
/// reference costs little, while a slow one left in hides a drop that came with the bless (on the
/// CPU host a slow history run 4.5 of the others' spreads below them, kept at 1%, let the drill's
/// capped runs at 0.65–0.79 of the level pass 11 times).
pub const ALPHA_SLOW_CREEP: f64 = 0.05;

/// Runs above a candidate needed to judge it: the spread of fewer says little.
const LEAST_ABOVE: usize = 3;

/// The indices (into `medians`, the blessed runs' medians) of the runs far slower than the rest
/// at `alpha` ([`ALPHA_SLOW`] or [`ALPHA_SLOW_CREEP`]), lowest first. `noise_floor`: the least
/// spread (log scale) the runs above are given.
pub fn slow_runs(medians: &[f64], noise_floor: f64, alpha: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..medians.len()).collect();
    order.sort_by(|&a, &b| medians[a].total_cmp(&medians[b]));
    let most = (medians.len() / 3).min(medians.len().saturating_sub(LEAST_ABOVE));
    let n = medians.len() as f64;
    let slow = (1..=most)
        .filter(|&i| {
            let candidate = medians[order[i - 1]].ln();
            let above: Vec<f64> = order[i..].iter().map(|&k| medians[k]).collect();
            let (mean, sd) = log_mean_sd(&above);
            let m = above.len() as f64;
            let statistic = (mean - candidate) / (sd.max(noise_floor) * (1.0 + 1.0 / m).sqrt());
            statistic > student_t_quantile(1.0 - alpha / n, m - 1.0)
        })
        .max()
        .unwrap_or(0);
    order[..slow].to_vec()
}

/// `items` less those at the places `left_out`, in order.
pub fn kept<T: Copy>(items: &[T], left_out: &[usize]) -> Vec<T> {
    (items.iter().enumerate())
        .filter(|(k, _)| !left_out.contains(k))
        .map(|(_, item)| *item)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_slow_run_at_bless_is_left_out() {
        // The CPU host's bless from history: run 3 capped at 0.6 of the first run's rate.
        let medians = [1.560, 1.442, 1.075, 1.527, 1.521, 1.556];
        assert_eq!(slow_runs(&medians, 0.01, ALPHA_SLOW), vec![2]);
    }

    #[test]
    fn the_creep_leaves_out_a_slow_run_the_judgement_keeps() {
        // The CPU host's second bless-shift drill: runs 1.20–1.45, the slow one at 0.85.
        let medians = [1.446, 1.238, 0.853, 1.454, 1.202, 1.438];
        assert!(slow_runs(&medians, 0.01, ALPHA_SLOW).is_empty());
        assert_eq!(slow_runs(&medians, 0.01, ALPHA_SLOW_CREEP), vec![2]);
    }

    #[test]
    fn two_slow_runs_do_not_hide_each_other() {
        let medians = [1.84, 1.80, 1.05, 1.82, 1.02, 1.86];
        assert_eq!(slow_runs(&medians, 0.01, ALPHA_SLOW), vec![4, 2]);
        // The H200's cufile trial: two of six blessed runs at about 1.05, but the other four
        // spread over 1.62–1.84, too wide to call two runs out of six far below them.
        assert!(slow_runs(&[1.84, 1.66, 1.08, 1.62, 1.02, 1.84], 0.01, ALPHA_SLOW).is_empty());
    }

    #[test]
    fn an_ordinary_spread_leaves_every_run_in() {
        for medians in [
            [1.30, 1.41, 1.16, 1.35, 1.25, 1.32],
            [1.30, 1.55, 1.10, 1.45, 1.15, 1.32],
            [1.76, 1.47, 1.39, 1.42, 1.31, 1.27],
        ] {
            assert_eq!(
                slow_runs(&medians, 0.01, ALPHA_SLOW),
                Vec::<usize>::new(),
                "{medians:?}"
            );
        }
    }

    #[test]
    fn the_pass_noise_floor_keeps_a_lucky_bless_from_leaving_runs_out() {
        // Five runs that agree to 0.1% and one 4% below: an outlier only if the runs' agreement
        // were real, which passes scattered by 3% say it is not.
        let medians = [2.000, 2.001, 2.002, 1.999, 2.000, 1.92];
        assert_eq!(slow_runs(&medians, 0.0, ALPHA_SLOW), vec![5]);
        assert!(slow_runs(&medians, 0.03, ALPHA_SLOW).is_empty());
    }

    #[test]
    fn a_normally_noisy_runner_seldom_has_a_run_left_out() {
        use rand::{SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(3);
        for runs in [6, 10, 30] {
            let blesses = 4_000;
            let left_out = (0..blesses)
                .filter(|_| {
                    let medians: Vec<f64> = (0..runs)
                        .map(|_| (0.16 * crate::simulate::standard_normal(&mut rng)).exp())
                        .collect();
                    !slow_runs(&medians, 0.0, ALPHA_SLOW).is_empty()
                })
                .count();
            let share = left_out as f64 / blesses as f64;
            assert!(share < 2.0 * ALPHA_SLOW, "{runs} runs: {share}");
        }
    }

    #[test]
    fn few_runs_leave_none_out() {
        assert!(slow_runs(&[1.0, 1.0, 0.5], 0.0, ALPHA_SLOW).is_empty());
        assert!(slow_runs(&[], 0.0, ALPHA_SLOW).is_empty());
    }
}
