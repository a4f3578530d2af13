//! Small-sample statistics for throughput: summaries, the exact Mann–Whitney test and the
//! Hodges–Lehmann estimate of the run/baseline ratio.
//!
//! Why Mann–Whitney with exact p-values rather than a bootstrap confidence interval of the median
//! ratio: at the default 5 repetitions a bootstrap has only 126 distinct resamples per side, its
//! percentile interval is too narrow (it under-covers, which is a false alarm in waiting), and it
//! needs a random generator in the gate. The rank test is distribution-free (throughput noise is
//! skewed: a slow outlier is common, a fast one rare), exact at any sample size through the
//! permutation distribution below (ties included), and deterministic: the same samples always give
//! the same verdict. Its smallest possible one-sided p-value with 5 against 5 samples is
//! 1/252 ≈ 0.004, so it can reach significance at the default repetitions.
//!
//! The size of a change is estimated by Hodges–Lehmann (the median of all run/baseline sample
//! ratios) rather than by the ratio of the two medians: with 5 samples it has about two thirds of
//! the variance, which is what lets a 15% drop clear a 10% tolerance reliably (see `simulate`).

use serde::{Deserialize, Serialize};

pub use gds_model::numbers::median;

/// Median, spread and range of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
    pub min: f64,
    pub max: f64,
    pub count: usize,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Summary {
        let median = median(samples);
        let deviations: Vec<f64> = samples.iter().map(|x| (x - median).abs()).collect();
        Summary {
            median,
            mad: median_or_zero(&deviations),
            min: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max: samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            count: samples.len(),
        }
    }
}

fn median_or_zero(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        0.0
    } else {
        median(samples)
    }
}

/// Hodges–Lehmann estimate of `run / baseline`: the median over all pairs of `run_j / base_i`,
/// taken on the log scale so that a halving and a doubling are symmetric.
pub fn ratio_estimate(baseline: &[f64], run: &[f64]) -> f64 {
    let logs: Vec<f64> = run
        .iter()
        .flat_map(|r| baseline.iter().map(move |b| (r / b).ln()))
        .collect();
    median(&logs).exp()
}

/// One-sided exact p-values of the Mann–Whitney (Wilcoxon rank-sum) test of `run` against
/// `baseline`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankTest {
    /// Probability, were both sets drawn from one distribution, of a run at least this much slower.
    pub p_slower: f64,
    /// The same for faster.
    pub p_faster: f64,
    /// The smallest one-sided p-value these sample counts can produce: when it is above the
    /// significance level, the test cannot detect anything and says so.
    pub p_min: f64,
}

/// Above this many pooled samples the exact distribution gives way to the normal approximation
/// (its cost grows as N³; 200 samples is far beyond any sensible repetition count).
const EXACT_LIMIT: usize = 200;

pub fn rank_test(baseline: &[f64], run: &[f64]) -> RankTest {
    let (m, n) = (run.len(), baseline.len());
    if m == 0 || n == 0 {
        return RankTest {
            p_slower: 1.0,
            p_faster: 1.0,
            p_min: 1.0,
        };
    }
    // Doubled mid-ranks keep tied ranks integral.
    let ranks = doubled_midranks(baseline, run);
    let observed: usize = ranks[n..].iter().sum();
    if m + n > EXACT_LIMIT {
        return normal_approximation(&ranks, m, observed);
    }
    let counts = rank_sum_counts(&ranks, m);
    let total: f64 = counts.iter().sum();
    let below: f64 = counts[..=observed].iter().sum();
    let above: f64 = counts[observed..].iter().sum();
    let lowest = counts.iter().find(|&&c| c > 0.0).copied().unwrap_or(total);
    let highest = counts
        .iter()
        .rev()
        .find(|&&c| c > 0.0)
        .copied()
        .unwrap_or(total);
    RankTest {
        p_slower: below / total,
        p_faster: above / total,
        p_min: lowest.min(highest) / total,
    }
}

/// Twice the mid-rank (1-based) of every sample in `baseline ++ run`, in that order.
fn doubled_midranks(baseline: &[f64], run: &[f64]) -> Vec<usize> {
    let pooled: Vec<f64> = baseline.iter().chain(run).copied().collect();
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
    let mut ranks = vec![0; pooled.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && pooled[order[end]] == pooled[order[start]] {
            end += 1;
        }
        // Ranks start+1 ..= end share their mean; doubled, that is start + 1 + end.
        for &index in &order[start..end] {
            ranks[index] = start + 1 + end;
        }
        start = end;
    }
    ranks
}

/// `counts[s]`: how many ways `m` of the pooled samples have doubled rank sum `s` (the exact
/// permutation distribution, ties included). Counts are f64: C(200, 100) overflows integers.
fn rank_sum_counts(ranks: &[usize], m: usize) -> Vec<f64> {
    let max_sum: usize = ranks.iter().sum();
    // ways[k][s]: subsets of size k of the ranks seen so far with sum s.
    let mut ways = vec![vec![0.0f64; max_sum + 1]; m + 1];
    ways[0][0] = 1.0;
    let mut reach = 0;
    for &rank in ranks {
        reach += rank;
        for k in (1..=m).rev() {
            let (lower, upper) = ways.split_at_mut(k);
            let (from, to) = (&lower[k - 1], &mut upper[0]);
            for s in (rank..=reach).rev() {
                to[s] += from[s - rank];
            }
        }
    }
    ways.swap_remove(m)
}

fn normal_approximation(ranks: &[usize], m: usize, observed: usize) -> RankTest {
    let total = ranks.len() as f64;
    let m = m as f64;
    let mean_rank = ranks.iter().sum::<usize>() as f64 / total;
    let variance_rank = ranks
        .iter()
        .map(|&r| (r as f64 - mean_rank).powi(2))
        .sum::<f64>()
        / (total - 1.0);
    let mean = m * mean_rank;
    let sd = (m * (total - m) / total * variance_rank).sqrt();
    // Continuity correction of half a rank, which is one unit of the doubled scale.
    let z_slower = (observed as f64 + 1.0 - mean) / sd;
    let z_faster = (observed as f64 - 1.0 - mean) / sd;
    RankTest {
        p_slower: normal_cdf(z_slower),
        p_faster: 1.0 - normal_cdf(z_faster),
        p_min: 0.0,
    }
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 through erf; error below 1.5e-7).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_samples() {
        let s = Summary::of(&[2.0, 1.0, 3.0, 10.0, 2.5]);
        assert_eq!((s.median, s.min, s.max, s.count), (2.5, 1.0, 10.0, 5));
        // Deviations 0.5, 1.5, 0.5, 7.5, 0: median 0.5.
        assert_eq!(s.mad, 0.5);
    }

    #[test]
    fn complete_separation_gives_the_smallest_exact_p() {
        let baseline = [2.0, 2.1, 2.2, 2.3, 2.4];
        let run = [1.0, 1.1, 1.2, 1.3, 1.4];
        let test = rank_test(&baseline, &run);
        assert!((test.p_slower - 1.0 / 252.0).abs() < 1e-12, "{test:?}");
        assert!((test.p_faster - 1.0).abs() < 1e-12);
        assert!((test.p_min - 1.0 / 252.0).abs() < 1e-12);
        let reverse = rank_test(&run, &baseline);
        assert!((reverse.p_faster - 1.0 / 252.0).abs() < 1e-12);
    }

    #[test]
    fn one_inversion_doubles_the_tail() {
        // Run ranks 1,2,3,4,6: only {1,2,3,4,5} and this set have a sum ≤ 16.
        let test = rank_test(&[5.0, 7.0, 8.0, 9.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 6.0]);
        assert!((test.p_slower - 2.0 / 252.0).abs() < 1e-12, "{test:?}");
    }

    #[test]
    fn matches_the_textbook_table_for_unequal_sizes() {
        // m = 3 run, n = 4 baseline, U = 0 or 1: P = 2 / C(7,3) = 2/35.
        let test = rank_test(&[4.0, 5.0, 6.0, 7.0], &[1.0, 2.0, 4.5]);
        assert!((test.p_slower - 2.0 / 35.0).abs() < 1e-12, "{test:?}");
    }

    #[test]
    fn identical_samples_are_not_significant_either_way() {
        let test = rank_test(&[1.0; 5], &[1.0; 5]);
        assert_eq!((test.p_slower, test.p_faster), (1.0, 1.0));
    }

    #[test]
    fn too_few_samples_cannot_reach_one_percent() {
        assert!(rank_test(&[2.0, 2.1, 2.2], &[1.0, 1.1, 1.2]).p_min > 0.01);
        assert!(rank_test(&[2.0; 1], &[1.0; 1]).p_min >= 0.5);
        assert_eq!(rank_test(&[], &[1.0]).p_slower, 1.0);
    }

    #[test]
    fn large_samples_use_the_normal_approximation_sensibly() {
        let baseline: Vec<f64> = (0..150).map(|i| 2.0 + f64::from(i) * 1e-3).collect();
        let run: Vec<f64> = baseline.iter().map(|x| x * 0.8).collect();
        let test = rank_test(&baseline, &run);
        assert!(test.p_slower < 1e-6 && test.p_faster > 0.99, "{test:?}");
        let same = rank_test(&baseline, &baseline);
        assert!(same.p_slower > 0.4 && same.p_faster > 0.4, "{same:?}");
    }

    #[test]
    fn hodges_lehmann_ratio() {
        let baseline = [2.0, 2.0, 2.0];
        let run = [1.7, 1.7, 1.7];
        assert!((ratio_estimate(&baseline, &run) - 0.85).abs() < 1e-12);
        assert!((ratio_estimate(&[1.0, 1.0], &[1.0, 4.0]) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
        assert!((normal_cdf(-2.326) - 0.01).abs() < 1e-4);
    }
}
