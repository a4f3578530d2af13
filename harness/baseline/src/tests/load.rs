//! A load's set-up steps against the baseline (fixtures, not measured): a step that takes longer
//! beyond the tolerance and the spread is its own regression, also when it makes the whole load
//! slower; the same steps, a rise of microseconds and a rise its confirmation does not repeat
//! pass.

use std::path::Path;

use super::{judge_one, run, scratch};
use crate::fixtures::{self, BASE, CHECKSUM, NOISE};
use crate::judgement::{Judgement, Severity};
use crate::render;
use gds_model::record::{LoadStep, TrialRecord};

/// Blessed runs at `levels` of the steps (seconds to the first byte, to open, to register).
fn bless_loads(path: &Path, levels: &[f64], steps: [f64; 3]) {
    let fp = fixtures::fingerprint();
    let rounds: Vec<Vec<TrialRecord>> = levels
        .iter()
        .map(|level| {
            let [first_byte, open, register] = steps.map(|s| s * level);
            vec![load(&BASE.map(|g| g * level), first_byte, open, register)]
        })
        .collect();
    let runs: Vec<_> = rounds.iter().map(|records| run(records, &fp)).collect();
    let filter = crate::Filter::default();
    let outcome = crate::bless(&runs, &super::options(path, &filter)).unwrap();
    assert!(outcome.written);
}

/// Five blessed runs: 20 ms to the first byte, 8 ms to open, 3 ms to register, within ±3%.
fn blessed_loads(path: &Path) {
    bless_loads(path, &[1.0, 1.03, 0.97, 1.01, 0.99], [0.020, 0.008, 0.003]);
}

fn load(gbps: &[f64; 5], first_byte: f64, open: f64, register: f64) -> TrialRecord {
    let record = fixtures::passed("s::load", gbps, "nvfs", CHECKSUM);
    fixtures::with_load(record, first_byte, open, register)
}

#[test]
fn a_tripled_buffer_registration_is_a_slower_load_step_not_a_slower_load() {
    let s = scratch();
    blessed_loads(&s.path);
    // The whole load 15% slower and the first byte 6 ms later because of it: the step that grew
    // is what is reported.
    let run = load(&BASE.map(|g| g * 0.85), 0.032, 0.008, 0.009);
    let comparison = judge_one(&s.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::load").unwrap();
    let Judgement::LoadCostlier { step, cost, .. } = &a.judgement else {
        panic!("{a:?}");
    };
    assert_eq!(*step, LoadStep::Register);
    assert!((cost.ratio() - 3.0).abs() < 0.1, "{cost:?}");
    assert_eq!(comparison.worst(), Severity::Regression);
    assert!(
        a.headline
            .starts_with("slower to load: buffer registration 9.0 ms vs 3.0 ms (×3)"),
        "{}",
        a.headline
    );
    for needle in [
        "s::load: a load's buffer registration takes 3× as long as its baseline's time",
        "beyond the load tolerance of 50%",
        "seen:     9.0 ms median of 5 loads",
        "`cuFileBufRegister` takes longer",
        "--exact s::load",
    ] {
        assert!(a.message.contains(needle), "{needle}\n{}", a.message);
    }
    assert!(render::console(&comparison.explainer()).contains(": 1 slower to set up a load"));
}

#[test]
fn the_same_steps_a_rise_of_microseconds_and_an_unrepeated_rise_pass() {
    let s = scratch();
    blessed_loads(&s.path);
    let passes = |record: TrialRecord| {
        let comparison = judge_one(&s.path, record, &fixtures::fingerprint());
        let a = comparison.get("s::load").unwrap();
        assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    };
    passes(load(&NOISE, 0.0201, 0.0079, 0.003));
    // Blessed at 10 µs to open, now 100 µs: ten times, and no loader's user waits for it.
    let quick = scratch();
    bless_loads(&quick.path, &[1.0, 1.02, 0.98], [0.002, 10e-6, 0.001]);
    let run = load(&NOISE, 0.0021, 100e-6, 0.001);
    let comparison = judge_one(&quick.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::load").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    // Doubled to the first byte in the run, back at its level in the confirmation run.
    let mut record = load(&NOISE, 0.040, 0.008, 0.003);
    record
        .confirmations
        .push(load(&NOISE, 0.020, 0.008, 0.003).measurement.unwrap());
    passes(record);
}
