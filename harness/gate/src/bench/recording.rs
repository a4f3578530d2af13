//! What recording one read call's latency costs, timed in this process on the code the readers
//! run around each call: two clock reads and a histogram increment. Beside each reader's mean call
//! latency it bounds the share of a read that recording takes, a figure the on/off runs of the
//! parity bench cannot resolve below the disk's run-to-run noise.

use std::hint::black_box;
use std::time::Instant;

use gds_model::cost::Histogram;

/// Nanoseconds per recorded call, the median of `rounds` rounds of `calls` calls each.
pub fn cost_per_call_ns(rounds: usize, calls: u64) -> f64 {
    let mut histogram = Histogram::default();
    let mut per_round: Vec<f64> = (0..rounds.max(1))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                let call = Instant::now();
                black_box(&mut histogram);
                histogram.record(call.elapsed().as_nanos() as u64);
            }
            start.elapsed().as_nanos() as f64 / calls.max(1) as f64
        })
        .collect();
    black_box(&histogram);
    per_round.sort_by(f64::total_cmp);
    per_round[per_round.len() / 2]
}

/// Recording's share of a call of `mean_call_us`, in percent.
pub fn share_percent(cost_ns: f64, mean_call_us: f64) -> f64 {
    cost_ns / (mean_call_us * 1000.0) * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recording_a_call_costs_some_time_but_far_less_than_a_millisecond() {
        let ns = cost_per_call_ns(3, 10_000);
        assert!(ns > 0.0 && ns < 1_000_000.0, "{ns} ns per call");
    }

    #[test]
    fn the_share_is_the_cost_over_the_call() {
        assert!((share_percent(50.0, 10.0) - 0.5).abs() < 1e-12);
    }
}
