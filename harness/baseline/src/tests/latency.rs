//! Read latency beside writing ranks against the baseline (fixtures, not measured): a percentile
//! higher beyond the tolerance and the spread is its own regression, judged from the tail; the
//! same latencies, a rise of microseconds and a rise its confirmation does not repeat pass.

use std::path::Path;

use super::{judge_one, run, scratch};
use crate::fixtures::{self, BASE, CHECKSUM, NOISE};
use crate::judgement::{Judgement, Severity};
use crate::render;
use gds_model::cost::Percentile;
use gds_model::record::TrialRecord;

/// Blessed runs at `levels` of the percentiles (p50, p95, p99 in µs).
fn bless_latencies(path: &Path, levels: &[f64], percentiles: [f64; 3]) {
    let fp = fixtures::fingerprint();
    let rounds: Vec<Vec<TrialRecord>> = levels
        .iter()
        .map(|level| vec![kv(&BASE, percentiles.map(|p| p * level))])
        .collect();
    let runs: Vec<_> = rounds.iter().map(|records| run(records, &fp)).collect();
    let filter = crate::Filter::default();
    let outcome = crate::bless(&runs, &super::options(path, &filter)).unwrap();
    assert!(outcome.written);
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("latency_runs:") && text.contains("p95_us:"),
        "{text}"
    );
}

/// Five blessed runs: 400 µs, 900 µs and 2 ms, within ±3%.
fn blessed(path: &Path) {
    bless_latencies(path, &[1.0, 1.03, 0.97, 1.01, 0.99], [400.0, 900.0, 2000.0]);
}

fn kv(gbps: &[f64; 5], percentiles: [f64; 3]) -> TrialRecord {
    let record = fixtures::passed("s::kv", gbps, "cufile-posix", CHECKSUM);
    fixtures::with_read_latency(record, percentiles)
}

#[test]
fn a_doubled_tail_beside_writes_is_slower_reads_at_the_same_throughput() {
    let s = scratch();
    blessed(&s.path);
    let run = kv(&NOISE, [410.0, 1900.0, 4200.0]);
    let comparison = judge_one(&s.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::kv").unwrap();
    let Judgement::LatencyHigher {
        percentile, cost, ..
    } = &a.judgement
    else {
        panic!("{a:?}");
    };
    assert_eq!(*percentile, Percentile::P99);
    assert!((cost.ratio() - 2.1).abs() < 0.1, "{cost:?}");
    assert_eq!(comparison.worst(), Severity::Regression);
    assert!(
        a.headline
            .starts_with("slower reads beside writes: p99 read latency 4.20 ms vs 2.00 ms (×2)"),
        "{}",
        a.headline
    );
    for needle in [
        "s::kv: the reading rank's p99 read-call latency beside the writing ranks is 2× as high as its baseline's,",
        "beyond the latency tolerance of 50%",
        "seen:     4.20 ms median of 5 passes",
        "wait longer behind the writes",
        "--exact s::kv",
    ] {
        assert!(a.message.contains(needle), "{needle}\n{}", a.message);
    }
    assert!(
        render::console(&comparison.explainer())
            .contains(": 1 slower reads beside writes (latency)")
    );
}

#[test]
fn the_same_latency_a_rise_of_microseconds_and_an_unrepeated_rise_pass() {
    let s = scratch();
    blessed(&s.path);
    let passes = |path: &Path, record: TrialRecord| {
        let comparison = judge_one(path, record, &fixtures::fingerprint());
        let a = comparison.get("s::kv").unwrap();
        assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    };
    passes(&s.path, kv(&NOISE, [401.0, 905.0, 2010.0]));
    // Blessed at 20 µs from the page cache, now 60 µs: three times, and nobody waits for it.
    let quick = scratch();
    bless_latencies(&quick.path, &[1.0, 1.02, 0.98], [10.0, 15.0, 20.0]);
    passes(&quick.path, kv(&NOISE, [30.0, 45.0, 60.0]));
    // Doubled in the run, back at its level in the confirmation run.
    let mut record = kv(&NOISE, [400.0, 900.0, 4000.0]);
    record
        .confirmations
        .push(kv(&NOISE, [400.0, 900.0, 2000.0]).measurement.unwrap());
    passes(&s.path, record);
}
