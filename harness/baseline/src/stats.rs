//! Small-sample statistics for throughput: summaries, and the Student t quantile behind the
//! prediction bound of the run-level decision (see `decision`).
//!
//! Throughput noise is multiplicative (a slower disk slows every pass by a factor), so levels and
//! spreads are taken on the log scale: a log-scale standard deviation of 0.10 is about 10% CV.

use serde::{Deserialize, Serialize};

pub use gds_model::numbers::median;

/// Median, spread and range of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// Mean and sample standard deviation of the logs of `values` (all positive); the deviation is
/// 0 for fewer than two values.
pub fn log_mean_sd(values: &[f64]) -> (f64, f64) {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    if logs.len() < 2 {
        return (mean, 0.0);
    }
    let variance = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance.sqrt())
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom (`df` ≥ 1), by
/// bisection on its distribution function. Exact to far below the noise of any throughput.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    let (mut low, mut high) = (0.0, 1.0);
    while student_t_cdf(high, df) < p {
        high *= 2.0;
    }
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        if student_t_cdf(mid, df) < p {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low + high) / 2.0
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom, through the regularized incomplete beta
/// function: P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = incomplete_beta(df / 2.0, 0.5, df / (df + t * t)) / 2.0;
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's method,
/// as in Numerical Recipes §6.4), using the symmetry I_x(a, b) = 1 − I_{1−x}(b, a) where that
/// converges faster.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        for numerator in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + numerator * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + numerator / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = COEFFICIENTS[1..]
        .iter()
        .enumerate()
        .fold(COEFFICIENTS[0], |sum, (i, c)| {
            sum + c / (x + i as f64 + 1.0)
        });
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
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
    fn t_quantiles_match_the_tables() {
        // Two-sided 90%, 95% and 99% points of common tables.
        for (p, df, expected) in [
            (0.95, 1.0, 6.314),
            (0.95, 4.0, 2.132),
            (0.975, 4.0, 2.776),
            (0.99, 4.0, 3.747),
            (0.95, 9.0, 1.833),
            (0.99, 30.0, 2.457),
        ] {
            let t = student_t_quantile(p, df);
            assert!(
                (t - expected).abs() < 1e-3,
                "t({p}, {df}) = {t}, tables say {expected}"
            );
        }
        assert!((student_t_quantile(0.05, 4.0) + 2.132).abs() < 1e-3);
    }

    #[test]
    fn log_spread_of_run_levels() {
        let (mean, sd) = log_mean_sd(&[1.0, std::f64::consts::E]);
        assert!((mean - 0.5).abs() < 1e-12);
        assert!((sd - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(log_mean_sd(&[2.0]).1, 0.0);
    }
}
