//! The one median every figure of the gate is taken with, and the checks and rounding of the
//! rates that baselines store.

/// Median of samples (mean of the middle two for an even count); NaN for no samples.
pub fn median(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The distribution-free 95% confidence interval of the median of `samples`: the k-th smallest
/// and k-th largest sample, with k the largest rank for which they enclose the true median with
/// at least 95% probability whatever the samples' distribution (how many samples fall below the
/// median is Binomial(n, 1/2)). None below 6 samples, where even the smallest and largest
/// enclose it less often than that.
pub fn median_interval_95(samples: &[f64]) -> Option<(f64, f64)> {
    let n = samples.len();
    // k: how many samples each end may leave out, the most with P(Binomial(n, 1/2) < k) <= 2.5%.
    let mut k = 0;
    let mut below = 0.0;
    let mut ln_choose = 0.0; // ln C(n, k)
    loop {
        below += (ln_choose - n as f64 * std::f64::consts::LN_2).exp();
        // P(Binomial(n, 1/2) <= n/2) >= 1/2, so the first test ends the loop before k passes
        // n/2; the second only makes that plain.
        if below > 0.025 || k >= n / 2 {
            break;
        }
        ln_choose += ((n - k) as f64 / (k + 1) as f64).ln();
        k += 1;
    }
    if k == 0 {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((sorted[k - 1], sorted[n - k]))
}

/// Non-empty, every value finite and positive: a list of rates a comparison can use.
pub fn positive_rates(values: &[f64]) -> bool {
    !values.is_empty() && values.iter().all(|x| x.is_finite() && *x > 0.0)
}

/// A rate rounded to four decimals (0.1 MB/s for GB/s), so that a baseline re-blessed with
/// unchanged figures writes unchanged text.
pub fn round_rate(rate: f64) -> f64 {
    (rate * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::{median, median_interval_95};

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn the_medians_interval_leaves_out_as_many_samples_as_the_binomial_allows() {
        // Published order statistics for a 95% interval of the median: n = 6 → 1st and 6th,
        // n = 25 → 8th and 18th, n = 50 → 18th and 33rd.
        let ranks = |n: usize| {
            let samples: Vec<f64> = (1..=n).rev().map(|i| i as f64).collect();
            median_interval_95(&samples)
        };
        assert_eq!(ranks(5), None);
        assert_eq!(ranks(6), Some((1.0, 6.0)));
        assert_eq!(ranks(25), Some((8.0, 18.0)));
        assert_eq!(ranks(50), Some((18.0, 33.0)));
        assert_eq!(median_interval_95(&[]), None);
    }
}
