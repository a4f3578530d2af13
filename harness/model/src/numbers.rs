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
    use super::median;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
