//! The one statistical step of the change-point search: the strongest split of a segment of log
//! run levels into two, and how likely a segment without any shift is to show a split that strong
//! somewhere (a family-wise p-value over every split searched).

use super::super::stats::student_t_cdf;

/// The strongest split of one segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// Values before the split, so the new level starts at `at` (`min_segment ≤ at ≤ n − min_segment`).
    pub at: usize,
    /// Student's t of the difference of the two sides' means (after − before), pooled variance.
    pub t: f64,
    /// The probability that a segment of this length without a shift shows, at some split, a
    /// |t| at least this large.
    pub p_value: f64,
}

/// Pulls each log level further than `limit` robust standard deviations (1.4826 × the median
/// absolute deviation) from the median in to that bound, so that one run slowed by a neighbour's
/// burst counts as an unusual run, not as a level. Left alone when over half the values are equal
/// (a zero deviation would pull every value onto the median).
pub fn winsorize(values: &[f64], limit: f64) -> Vec<f64> {
    let centre = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - centre).abs()).collect();
    let scale = 1.4826 * median(&deviations);
    if scale.is_nan() || scale <= 0.0 {
        return values.to_vec();
    }
    let (low, high) = (centre - limit * scale, centre + limit * scale);
    values.iter().map(|v| v.clamp(low, high)).collect()
}

/// Mean of the winsorized values: the segment's log level.
pub fn robust_mean(values: &[f64], limit: f64) -> f64 {
    let values = winsorize(values, limit);
    values.iter().sum::<f64>() / values.len() as f64
}

fn median(values: &[f64]) -> f64 {
    gds_model::numbers::median(values)
}

/// The split of `values` (finite log levels) with the largest |t|, each side keeping at least
/// `min_segment` values; `None` when the segment is shorter than two of those.
pub fn best_split(values: &[f64], min_segment: usize, winsor: f64) -> Option<Split> {
    let n = values.len();
    let min_segment = min_segment.max(2);
    if n < 2 * min_segment {
        return None;
    }
    // Centred first, so that the sums of squares below do not cancel.
    let values = winsorize(values, winsor);
    let centre = values.iter().sum::<f64>() / n as f64;
    let (mut sum, mut squares) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    for (i, v) in values.iter().enumerate() {
        let x = v - centre;
        sum[i + 1] = sum[i] + x;
        squares[i + 1] = squares[i] + x * x;
    }
    let mut best: Option<(usize, f64)> = None;
    for at in min_segment..=n - min_segment {
        let (left, right) = (at as f64, (n - at) as f64);
        let (left_mean, right_mean) = (sum[at] / left, (sum[n] - sum[at]) / right);
        let within = (squares[at] - left * left_mean * left_mean)
            + (squares[n] - squares[at] - right * right_mean * right_mean);
        let spread = (within.max(0.0) / (n as f64 - 2.0)).sqrt();
        let difference = right_mean - left_mean;
        let t = if spread > 1e-12 * (1.0 + difference.abs()) {
            difference / (spread * (1.0 / left + 1.0 / right).sqrt())
        } else if difference.abs() > 1e-12 {
            // No scatter at all on either side: a clean step.
            difference.signum() * f64::INFINITY
        } else {
            0.0
        };
        if best.is_none_or(|(_, b)| t.abs() > b.abs()) {
            best = Some((at, t));
        }
    }
    let (at, t) = best?;
    Some(Split {
        at,
        t,
        p_value: max_split_p_value(t, n, min_segment),
    })
}

/// The two-sided p-value of Welch's t for a difference between the means of `before` and
/// `after` (each winsorized at `winsor` on its own first); `before` empty stands for a mean
/// known exactly, `known`. `after` needs two values, `before` none or two.
pub fn welch_p_value(before: &[f64], known: f64, after: &[f64], winsor: f64) -> Option<f64> {
    let side = |values: &[f64]| {
        let values = winsorize(values, winsor);
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, variance / n, n - 1.0)
    };
    if after.len() < 2 || before.len() == 1 {
        return None;
    }
    let (after_mean, after_error, after_df) = side(after);
    let (before_mean, before_error, before_df) = if before.is_empty() {
        (known, 0.0, f64::INFINITY)
    } else {
        side(before)
    };
    let difference = after_mean - before_mean;
    let error = before_error + after_error;
    if error <= 1e-24 {
        // No scatter on either side: any difference is a clean step.
        return Some(if difference.abs() > 1e-12 { 0.0 } else { 1.0 });
    }
    // Welch–Satterthwaite degrees of freedom.
    let df = error * error
        / (before_error * before_error / before_df + after_error * after_error / after_df);
    let t = difference / error.sqrt();
    Some((2.0 * student_t_cdf(-t.abs(), df)).min(1.0))
}

/// P(max over the splits `m ≤ k ≤ n − m` of |Z_k| ≥ b) for the standardized two-sample statistic
/// of a segment of `n` independent values without a shift, by the approximation of James, James &
/// Siegmund (1987, "Tests for a change-point", Biometrika 74) with Siegmund's correction ν for
/// discrete time:
///
/// `p ≈ b·φ(b) · Σ_k n/(k(n−k)) · ν(b·√(n/(k(n−k))))`
///
/// The observed t is first turned into the z with the same tail (Student t, n − 2 degrees of
/// freedom), which keeps short segments, whose variance is poorly known, honest. `bench --stats`
/// measures what this gives on simulated stationary histories.
fn max_split_p_value(t: f64, n: usize, min_segment: usize) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    let tail = student_t_cdf(-t.abs(), n as f64 - 2.0);
    let b = z_with_upper_tail(tail);
    let n_f = n as f64;
    let splits = n - 2 * min_segment + 1;
    let weights: f64 = (min_segment..=n - min_segment)
        .map(|k| {
            let k = k as f64;
            let w = n_f / (k * (n_f - k));
            w * nu(b * w.sqrt())
        })
        .sum();
    // The approximation is for large b. Whatever b, the p-value lies between that of one split
    // chosen beforehand and the Bonferroni bound over every split searched: with one split only
    // (n = 2·min_segment) it is exact, and a |t| near 0 gets p = 1, not the approximation's 0.
    let one = (2.0 * tail).min(1.0);
    (b * normal_density(b) * weights).clamp(one, (splits as f64 * one).min(1.0))
}

/// Siegmund's ν(x) ≈ (2/x)(Φ(x/2) − ½) / ((x/2)Φ(x/2) + φ(x/2)): the overshoot correction that
/// turns the continuous-time crossing rate into the discrete one.
fn nu(x: f64) -> f64 {
    if x < 1e-9 {
        return 1.0;
    }
    let h = x / 2.0;
    let big_phi = 1.0 - normal_upper_tail(h);
    (2.0 / x) * (big_phi - 0.5) / (h * big_phi + normal_density(h))
}

fn normal_density(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// P(Z > z) for a standard normal Z.
pub fn normal_upper_tail(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The z with P(Z > z) = `tail` (0 < tail ≤ ½), by bisection; 40 for a tail below what a double
/// can tell apart.
fn z_with_upper_tail(tail: f64) -> f64 {
    const FAR: f64 = 40.0;
    if tail.is_nan() || tail <= 0.0 {
        return FAR;
    }
    let (mut low, mut high) = (0.0, FAR);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        if normal_upper_tail(mid) > tail {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low + high) / 2.0
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes (§6.2, `erfcc`):
/// fractional error below 1.2e-7 everywhere, far below what a p-value of a change point needs.
fn erfc(x: f64) -> f64 {
    const C: [f64; 10] = [
        -1.265_512_23,
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ];
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = C.iter().rev().fold(0.0, |acc, c| c + t * acc);
    let r = t * (-z * z + poly).exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_tail_matches_the_tables() {
        for (z, tail) in [
            (0.0, 0.5),
            (1.0, 0.158_655_25),
            (1.959_964, 0.025),
            (3.0, 1.349_898e-3),
            (5.0, 2.866_516e-7),
        ] {
            let got = normal_upper_tail(z);
            assert!(
                (got - tail).abs() <= 1e-6 * tail.max(1e-3),
                "P(Z > {z}) = {got}, tables say {tail}"
            );
        }
        assert!((normal_upper_tail(-1.0) - 0.841_344_75).abs() < 1e-7);
        assert!((z_with_upper_tail(0.025) - 1.959_964).abs() < 1e-5);
    }

    #[test]
    fn a_clean_step_is_found_where_it_is() {
        let values: Vec<f64> = (0..30).map(|i| if i < 18 { 0.0 } else { -0.1 }).collect();
        let split = best_split(&values, 5, 3.0).unwrap();
        assert_eq!(split.at, 18);
        assert!(split.t < 0.0 && split.p_value == 0.0, "{split:?}");
    }

    #[test]
    fn flat_and_short_segments() {
        let flat = best_split(&[0.5; 20], 5, 3.0).unwrap();
        assert_eq!((flat.t, flat.p_value), (0.0, 1.0));
        assert_eq!(best_split(&[0.0; 9], 5, 3.0), None);
    }

    #[test]
    fn the_p_value_of_the_best_split_pays_for_the_search() {
        // A |t| of 3 at one fixed split is p = 0.3%; found by searching 191 splits it is common.
        let p = max_split_p_value(3.0, 200, 5);
        assert!(p > 0.05 && p < 0.5, "{p}");
        // One split only: its own two-sided p.
        let one = max_split_p_value(2.0, 10, 5);
        assert!((one - 2.0 * student_t_cdf(-2.0, 8.0)).abs() < 1e-9, "{one}");
        assert_eq!(max_split_p_value(0.0, 200, 5), 1.0);
        // Larger t, smaller p; more splits searched, larger p.
        assert!(max_split_p_value(4.0, 200, 5) < 0.01);
        assert!(max_split_p_value(4.0, 400, 5) > max_split_p_value(4.0, 100, 5));
    }

    #[test]
    fn one_wild_run_is_pulled_in() {
        let mut values = vec![0.0, 0.01, -0.01, 0.02, -0.02, 0.0, 0.01];
        values[3] = -1.1; // a run at a third of the speed
        let pulled = winsorize(&values, 3.0);
        assert!(pulled[3] > -0.1, "{pulled:?}");
        assert_eq!(winsorize(&[1.0, 1.0, 1.0, 2.0], 3.0), [1.0, 1.0, 1.0, 2.0]);
    }

    #[test]
    fn welch_matches_the_textbook_and_pays_for_a_blessed_level_known_from_few_runs() {
        // One sample against a known mean: t = 2/√(1/3) = 3.464 with 2 degrees of freedom,
        // two-sided p = 0.0742.
        let p = welch_p_value(&[], 0.0, &[1.0, 2.0, 3.0], 3.0).unwrap();
        assert!((p - 0.0742).abs() < 5e-4, "{p}");
        // The same difference against a level known from four scattered runs is less sure.
        let from_runs = welch_p_value(&[-2.0, 2.0, -1.5, 1.5], 0.0, &[1.0, 2.0, 3.0], 3.0).unwrap();
        assert!(from_runs > p, "{from_runs} vs {p}");
        assert_eq!(welch_p_value(&[0.1], 0.0, &[1.0, 2.0], 3.0), None);
        assert_eq!(welch_p_value(&[], 0.0, &[1.0], 3.0), None);
        assert_eq!(welch_p_value(&[], 0.0, &[1.0, 1.0], 3.0), Some(0.0));
        assert_eq!(welch_p_value(&[], 1.0, &[1.0, 1.0], 3.0), Some(1.0));
    }
}
