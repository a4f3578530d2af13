//! Bless after a creep: the level moved past the tolerance while every run stayed inside a noisy
//! runner's band, and the gate fails on the creep until the new level is recorded.

use super::{options, run, scratch};
use crate::bless::{Filter, TrialChange, bless};
use crate::compare::RunResults;
use crate::file::{self, Loaded};
use crate::fixtures::{self, BASE, CHECKSUM};
use crate::judgement::Judgement;
use gds_model::record::TrialRecord;

/// Six runs of `s::a`, each at BASE times `level` times its factor.
fn rounds(level: f64, factors: &[f64]) -> Vec<Vec<TrialRecord>> {
    factors
        .iter()
        .map(|f| {
            let passes = BASE.map(|g| g * level * f);
            vec![fixtures::passed("s::a", &passes, "nvfs", CHECKSUM)]
        })
        .collect()
}

#[test]
fn a_level_past_the_tolerance_is_re_recorded_though_each_run_is_within_noise() {
    let s = scratch();
    let fp = fixtures::fingerprint();
    let filter = Filter::default();
    // A noisy runner: run levels about 10% apart.
    let noisy = rounds(1.0, &[1.0, 1.15, 0.87, 1.05, 0.92, 1.02]);
    let runs: Vec<RunResults> = noisy.iter().map(|records| run(records, &fp)).collect();
    assert!(bless(&runs, &options(&s.path, &filter)).unwrap().written);
    // The level crept to 85%: each run is within that runner's noise...
    let crept = rounds(0.85, &[1.0, 1.02, 0.98, 1.01, 0.99, 1.0]);
    let Loaded::Present(old) = file::read(&s.path).unwrap() else {
        panic!("blessed")
    };
    for records in &crept {
        let judgement = crate::compare::judge(&old.trials["s::a"], None, &records[0]);
        assert!(matches!(judgement, Judgement::Pass { .. }), "{judgement:?}");
    }
    // ...and the new level is recorded all the same.
    let runs: Vec<RunResults> = crept.iter().map(|records| run(records, &fp)).collect();
    let mut later = options(&s.path, &filter);
    later.provenance.blessed_at = "2026-03-09T08:00:00Z".into();
    let outcome = bless(&runs, &later).unwrap();
    assert!(outcome.written, "{outcome}");
    assert!(
        matches!(&outcome.changes[..], [TrialChange::Updated { trial, .. }] if trial == "s::a"),
        "{outcome}"
    );
    let Loaded::Present(new) = file::read(&s.path).unwrap() else {
        panic!("blessed")
    };
    let entry = &new.trials["s::a"];
    assert_eq!(entry.blessed_at, "2026-03-09T08:00:00Z");
    assert!((entry.median_gbps / old.trials["s::a"].median_gbps - 0.85).abs() < 0.03);
}
