//! Comparison of runs against a baseline: one test per kind of judgement.

use std::collections::BTreeSet;
use std::path::Path;

use super::{blessed, judge, judge_one, run, scratch, slow_then};
use crate::compare::RunResults;
use crate::fingerprint::Fingerprint;
use crate::fixtures::{self, BASE, CHECKSUM, FAST, NOISE, SLOW, host};
use crate::judgement::{Cleared, Judgement, Missing, Severity};
use crate::render;
use gds_model::record::{RunnerCheck, Shortfall};

#[test]
fn clear_regression_fails_with_exit_3_and_says_what_to_do() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    let Judgement::Regression { throughput } = &a.judgement else {
        panic!("{a:?}");
    };
    assert!(
        throughput.drop() > 0.15 && throughput.lower_bound.unwrap() > 0.9,
        "{throughput:?}"
    );
    assert_eq!(comparison.worst(), Severity::Regression);
    for needle in [
        "s::a: slower than its baseline by 19.",
        "expected: about 2.00 GB/s (5 blessed run(s), run medians 1.94–2.06",
        "slower means below 1.80 GB/s (−10.0% of the level 2.00 GB/s): the tolerance of 10% (this runner's run-to-run spread, 2.2%, explains less)",
        "seen:     1.61 GB/s median of 5 passes",
        "likely cause: the runner's fingerprint (GPU, driver",
        "cargo xtask gds-gate bless --runner r1 --baselines",
        "--exact s::a",
    ] {
        assert!(a.message.contains(needle), "{needle}\n{}", a.message);
    }
    assert!(!a.message.contains("--accept-fingerprint"), "{}", a.message);
    assert!(a.message.lines().count() <= 12, "{}", a.message);
}

#[test]
fn noise_only_passes() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    assert!(
        a.headline
            .starts_with("as fast as the baseline: 2.01 vs 2.00 GB/s"),
        "{}",
        a.headline
    );
    // s::b and s::gpu were filtered out: not judged.
    assert_eq!(comparison.trials.len(), 1);
    assert_eq!(comparison.not_selected, 2);
    assert!(comparison.worst() <= Severity::Notice);
    assert_eq!(comparison.worst(), Severity::Ok);
    // When the suites are unknown, a baseline trial absent from the run is missing.
    let records = [fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM)];
    let fp = fixtures::fingerprint();
    let comparison = judge(&s.path, &run(&records, &fp));
    assert!(matches!(
        comparison.get("s::b").unwrap().judgement,
        Judgement::MissingTrial {
            cause: Missing::NotRun
        }
    ));
}

/// A trial the gate did not reach because it was stopped is missing for that reason, in words
/// that blame neither the trial nor the runner.
#[test]
fn a_trial_not_reached_before_an_interrupt_says_so() {
    let s = scratch();
    blessed(&s.path);
    let mut record = fixtures::ignored("s::a");
    record.reason = Some("not run: the gate was interrupted by SIGTERM".into());
    record.interrupted_by = Some("SIGTERM".into());
    let comparison = judge_one(&s.path, record, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(&a.judgement, Judgement::MissingTrial { cause: Missing::Interrupted { signal } } if signal == "SIGTERM"),
        "{a:?}"
    );
    assert!(
        a.message.contains("interrupted by SIGTERM before it") && !a.message.contains("is gone"),
        "{}",
        a.message
    );
}

/// A first run that looked slower and a confirmation run at the usual speed: a pass, and the
/// headline says why, instead of "as fast as" beside a first run 19% down.
#[test]
fn a_slow_run_cleared_by_its_confirmation_passes_and_says_so() {
    let comparison = slow_then(&NOISE, None);
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    assert!(
        a.headline
            .starts_with("not slower: the first run looked slower (1.61 vs 2.00 GB/s, −19.")
            && a.headline
                .contains("its confirmation run did not: 2.01 GB/s"),
        "{}",
        a.headline
    );
    assert!(comparison.worst() <= Severity::Notice);
}

/// Two confirmations, the first slower too: the headline says which cleared the run, not "did
/// not" of both.
#[test]
fn a_slow_run_cleared_by_its_second_confirmation_says_the_first_looked_slower_too() {
    let s = scratch();
    blessed(&s.path);
    let mut record = fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM);
    for passes in [&SLOW, &NOISE] {
        let repeat = fixtures::passed("s::a", passes, "nvfs", CHECKSUM);
        record.confirmations.push(repeat.measurement.unwrap());
    }
    let comparison = judge_one(&s.path, record, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    assert!(
        a.headline
            .contains("and so did confirmation run 1 (1.61 GB/s (−19.")
            && a.headline
                .contains("; confirmation run 2 did not: 2.01 GB/s"),
        "{}",
        a.headline
    );
}

/// Fixture: what the control said before a confirmation run.
fn check(disk_before: f64, disk: f64, waited_s: f64, still_slow: bool) -> RunnerCheck {
    RunnerCheck {
        disk_before,
        cpu_before: 1.0,
        cpu_share_before: 0.99,
        disk,
        cpu: 1.0,
        cpu_share: 0.99,
        waited_s,
        still_slow,
        below: if still_slow {
            vec![Shortfall::Disk]
        } else {
            Vec::new()
        },
        host: Some(host(0.4, 0.03)),
        host_blessed: Some(host(0.3, 0.02)),
        ..RunnerCheck::default()
    }
}

/// A first run slowed with the whole runner: the confirmation waited for the runner to come
/// back, cleared the trial, and the headline says how far the runner had dropped.
#[test]
fn a_slow_run_during_a_runner_wide_dip_says_the_runner_came_back() {
    let comparison = slow_then(&NOISE, Some(check(0.7, 0.98, 30.0, false)));
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    assert!(
        a.headline.contains(
            "taken once the runner was back (its control read went from disk 0.70 and CPU 1.00 of their blessed levels, 99% of a core for its check to disk 0.98 and CPU 1.00 of their blessed levels, 99% of a core for its check in 30 s)"
        ),
        "{}",
        a.headline
    );
}

/// A confirmed regression names the runner or the trial as the place to look, by the control.
#[test]
fn a_confirmed_regression_says_whether_the_runner_was_slow_too() {
    for (runner, needle) in [
        (
            check(0.5, 0.5, 120.0, true),
            "likely cause: the runner was not at its level when the confirmation ran, so the slowdown is not shown to be this trial's: the control's disk 0.50 of the blessed level, after waiting 120 s for it; look at the host and the disk first",
        ),
        (
            check(0.99, 0.99, 0.0, false),
            "likely cause: the runner was at its level when the confirmation ran (the gate's control read: disk 0.99 and CPU 1.00 of their blessed levels, 99% of a core for its check; the host: load 0.40 on 2 cores, 3% of CPU time in other processes, CPU pressure 0% (at bless: load 0.30, 2%, 0%)), so the slowdown is this trial's own; the runner's fingerprint",
        ),
    ] {
        let comparison = slow_then(&SLOW, Some(runner));
        let a = comparison.get("s::a").unwrap();
        assert!(matches!(a.judgement, Judgement::Regression { .. }), "{a:?}");
        assert!(a.message.contains(needle), "{needle}\n{}", a.message);
    }
}

#[test]
fn improvement_is_reported_not_failed() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &FAST, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Faster { .. }), "{a:?}");
    assert!(
        a.headline
            .starts_with("faster than baseline — consider blessing"),
        "{}",
        a.headline
    );
    assert_eq!(a.judgement.severity(), Severity::Notice);
}

#[test]
fn a_trial_that_vanished_fails() {
    let s = scratch();
    blessed(&s.path);
    let defined: BTreeSet<String> = ["s::a", "s::gpu"].map(String::from).into();
    let records = [
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        fixtures::ignored("s::gpu"),
    ];
    let fp = fixtures::fingerprint();
    let results = RunResults {
        judged: None,
        records: &records,
        defined: Some(&defined),
        fingerprint: &fp,
        control: None,
    };
    let comparison = judge(&s.path, &results);
    assert_eq!(comparison.worst(), Severity::Failure);
    let gpu = comparison.get("s::gpu").unwrap();
    assert!(
        matches!(&gpu.judgement, Judgement::MissingTrial { cause: Missing::Ignored { reason } } if reason.contains("libcuda")),
        "{gpu:?}"
    );
    assert!(
        gpu.message.contains("in the baseline, but did not run"),
        "{}",
        gpu.message
    );
    assert!(
        gpu.message.contains("--remove-missing --exact s::gpu"),
        "{}",
        gpu.message
    );
    // s::b is defined by no suite any more.
    let b = comparison.get("s::b").unwrap();
    assert!(matches!(
        b.judgement,
        Judgement::MissingTrial {
            cause: Missing::NotDefined
        }
    ));
    assert!(b.message.contains("renamed or removed"), "{}", b.message);
}

#[test]
fn a_path_change_fails_and_names_nvidia_fs() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "cufile-posix", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(&a.judgement, Judgement::PathChanged { from, to, .. } if *from == gds_model::path::Path::Nvfs && *to == gds_model::path::Path::CufilePosix),
        "{a:?}"
    );
    assert_eq!(comparison.worst(), Severity::Failure);
    assert!(a.message.contains("−19."), "{}", a.message);
    let unloaded = Fingerprint {
        nvidia_fs_loaded: false,
        ..fixtures::fingerprint()
    };
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "cufile-posix", CHECKSUM),
        &unloaded,
    );
    let message = &comparison.get("s::a").unwrap().message;
    assert!(
        message.contains("nvidia_fs_loaded: true → false"),
        "{message}"
    );
    assert!(
        message.contains("nvidia-fs is not loaded on this runner"),
        "{message}"
    );
}

#[test]
fn a_checksum_change_fails() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &BASE, "nvfs", 0xdead),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(a.judgement, Judgement::ChecksumChanged { .. }),
        "{a:?}"
    );
    assert!(
        a.headline
            .contains("0x0123456789abcdef → 0x000000000000dead"),
        "{}",
        a.headline
    );
    assert_eq!(comparison.worst(), Severity::Failure);
}

#[test]
fn a_changed_fingerprint_is_the_likely_cause_and_is_shown_even_when_all_pass() {
    let s = scratch();
    blessed(&s.path);
    let upgraded = Fingerprint {
        driver: Some("590.10".into()),
        kvikio: None,
        torch: None,
        ..fixtures::fingerprint()
    };
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM),
        &upgraded,
    );
    assert!(comparison.runner_changed());
    let a = comparison.get("s::a").unwrap();
    assert!(
        a.message
            .contains("likely cause: the runner changed since the baseline was blessed: driver: 580.159 → 590.10"),
        "{}",
        a.message
    );
    assert!(
        a.message.contains("--accept-fingerprint --exact s::a"),
        "{}",
        a.message
    );
    // Passing trials still show the change, in the console text and in summary.md.
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        &upgraded,
    );
    let text = render::console(&comparison.explainer());
    assert!(
        text.contains("the runner changed since the baseline was blessed"),
        "{text}"
    );
    assert!(text.contains("  driver: 580.159 → 590.10"), "{text}");
    assert!(
        text.contains("not observed in this run (kept from the baseline): kvikio"),
        "{text}"
    );
    let markdown = render::markdown(&comparison.explainer(), &[], Path::new("target/gds-gate"));
    assert!(
        markdown.contains("**The runner changed since the baseline**"),
        "{markdown}"
    );
}

#[test]
fn no_baseline_and_new_trials_are_notices() {
    let s = scratch();
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    assert!(!comparison.baseline_found);
    assert!(matches!(
        comparison.trials[0].judgement,
        Judgement::NoBaseline
    ));
    assert!(comparison.worst() <= Severity::Notice);
    assert!(
        render::console(&comparison.explainer()).contains("cargo xtask gds-gate bless --runner r1")
    );
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::new", &BASE, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let new = comparison.get("s::new").unwrap();
    assert!(matches!(new.judgement, Judgement::NewTrial));
    assert!(new.message.contains("--exact s::new"), "{}", new.message);
}

/// Fixture, not measured: the five blessed runs read at 0.40 CPU s/GiB per pass (±1%).
const CPU: [f64; 5] = [0.40, 0.404, 0.396, 0.402, 0.398];

fn blessed_with_cpu(path: &Path) {
    blessed_with_cpu_at(path, 1.0);
}

/// [`blessed_with_cpu`] with every CPU figure `scale` times as large.
fn blessed_with_cpu_at(path: &Path, scale: f64) {
    blessed_with_cpu_levels(path, &[1.0, 1.03, 0.97, 1.01, 0.99], scale);
}

/// Blessed runs at `levels` times [`BASE`] and [`CPU`] (times `scale`).
fn blessed_with_cpu_levels(path: &Path, levels: &[f64], scale: f64) {
    let fp = fixtures::fingerprint();
    let rounds: Vec<Vec<gds_model::record::TrialRecord>> = levels
        .iter()
        .map(|level: &f64| {
            let passes = BASE.map(|g| g * level);
            let cpu = CPU.map(|c| c * level * scale);
            vec![fixtures::with_cpu(
                fixtures::passed("s::a", &passes, "nvfs", CHECKSUM),
                &cpu,
            )]
        })
        .collect();
    let runs: Vec<RunResults> = rounds.iter().map(|records| run(records, &fp)).collect();
    let filter = crate::Filter::default();
    let outcome = crate::bless(&runs, &super::options(path, &filter)).unwrap();
    assert!(outcome.written);
}

/// A run of `s::a` at the blessed speed whose passes cost `scale` times [`CPU`].
fn costing(scale: f64) -> gds_model::record::TrialRecord {
    at_speed_costing(1.0, scale)
}

/// A run of `s::a` at `speed` times the blessed speed whose passes cost `scale` times [`CPU`].
fn at_speed_costing(speed: f64, scale: f64) -> gds_model::record::TrialRecord {
    fixtures::with_cpu(
        fixtures::passed("s::a", &NOISE.map(|g| g * speed), "nvfs", CHECKSUM),
        &CPU.map(|c| c * scale),
    )
}

#[test]
fn the_same_speed_at_twice_the_cpu_is_a_regression_with_exit_3() {
    let s = scratch();
    blessed_with_cpu(&s.path);
    let run = costing(2.0);
    let comparison = judge_one(&s.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    let Judgement::CpuCostlier { cpu, throughput } = &a.judgement else {
        panic!("{a:?}");
    };
    assert!((cpu.ratio() - 2.0).abs() < 0.05, "{cpu:?}");
    assert!((throughput.ratio - 1.0).abs() < 0.05);
    assert_eq!(a.judgement.severity(), Severity::Regression);
    assert_eq!(comparison.worst(), Severity::Regression);
    assert!(
        a.headline
            .starts_with("more CPU per GiB than the baseline: 0.800 CPU s/GiB vs 0.400 CPU s/GiB"),
        "{}",
        a.headline
    );
    for needle in [
        "s::a: costs 100.",
        "beyond the CPU tolerance of 20%",
        "seen:     0.800 CPU s/GiB median of 5 passes",
        "--exact s::a",
    ] {
        assert!(a.message.contains(needle), "{needle}\n{}", a.message);
    }
    assert!(render::console(&comparison.explainer()).contains(": 1 costlier in CPU"));
    // The same CPU cost passes; a baseline without CPU figures does not compare them.
    let same = costing(1.0);
    let comparison = judge_one(&s.path, same, &fixtures::fingerprint());
    assert!(matches!(
        comparison.get("s::a").unwrap().judgement,
        Judgement::Pass { .. }
    ));
    let old = scratch();
    blessed(&old.path);
    let costly = costing(2.0);
    let comparison = judge_one(&old.path, costly, &fixtures::fingerprint());
    assert!(matches!(
        comparison.get("s::a").unwrap().judgement,
        Judgement::Pass { .. }
    ));
}

#[test]
fn a_cpu_cost_rise_that_its_confirmation_run_does_not_repeat_passes_and_says_so() {
    let s = scratch();
    blessed_with_cpu(&s.path);
    let mut record = costing(2.0);
    let repeat = costing(1.0);
    record.confirmations.push(repeat.measurement.unwrap());
    let comparison = judge_one(&s.path, record, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    let Judgement::Pass {
        cleared: Some(Cleared::Cpu { .. }),
        ..
    } = &a.judgement
    else {
        panic!("{a:?}");
    };
    assert!(
        a.headline.starts_with("as fast as the baseline: ")
            && a.headline.ends_with(
                "; its CPU per GiB looked higher (0.800 CPU s/GiB vs 0.400 CPU s/GiB); confirmation run(s): 0.400 CPU s/GiB"
            ),
        "{}",
        a.headline
    );
    assert!(comparison.worst() <= Severity::Notice);
    // A run that took no confirmation has nothing cleared to say.
    let comparison = judge_one(&s.path, costing(1.0), &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(a.judgement, Judgement::Pass { cleared: None, .. }),
        "{a:?}"
    );
}

#[test]
fn a_cpu_cost_rise_below_the_floor_passes_whatever_its_ratio() {
    let s = scratch();
    // Blessed at 0.04 CPU s/GiB: twice that is a rise of 0.04 s/GiB.
    blessed_with_cpu_at(&s.path, 0.1);
    let run = costing(0.2);
    let comparison = judge_one(&s.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    // Ten times the level rises beyond the floor.
    let run = costing(1.0);
    let comparison = judge_one(&s.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(a.judgement, Judgement::CpuCostlier { .. }),
        "{a:?}"
    );
}

#[test]
fn a_confirmation_whose_cpu_cost_rose_less_than_the_floor_does_not_confirm() {
    let s = scratch();
    blessed_with_cpu(&s.path);
    let mut record = costing(2.0);
    // 1.22 times 0.40 s/GiB: beyond the 20% tolerance, by 0.088 s/GiB.
    let repeat = costing(1.22);
    record.confirmations.push(repeat.measurement.unwrap());
    let comparison = judge_one(&s.path, record.clone(), &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    // The same confirmation 0.12 s/GiB above the level confirms.
    let repeat = costing(1.3);
    record.confirmations[0] = repeat.measurement.unwrap();
    let comparison = judge_one(&s.path, record, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(a.judgement, Judgement::CpuCostlier { .. }),
        "{a:?}"
    );
}

/// A runner whose run medians spread by about 20%: a run at 0.7 of the level is inside its band.
const NOISY: [f64; 6] = [1.0, 1.3, 0.75, 1.15, 0.85, 1.05];

#[test]
fn a_cpu_cost_that_rose_with_a_drop_in_speed_inside_the_band_is_the_runners() {
    let s = scratch();
    blessed_with_cpu_levels(&s.path, &NOISY, 1.0);
    let judged = |record| {
        let comparison = judge_one(&s.path, record, &fixtures::fingerprint());
        comparison.get("s::a").unwrap().judgement.clone()
    };
    // Three times the CPU at the level's speed is the path's.
    let judgement = judged(at_speed_costing(1.0, 3.0));
    assert!(
        matches!(judgement, Judgement::CpuCostlier { .. }),
        "{judgement:?}"
    );
    // The same at 0.7 of the speed, inside the band, is the runner's slow moment.
    let judgement = judged(at_speed_costing(0.7, 3.0));
    let Judgement::Pass { throughput, .. } = &judgement else {
        panic!("{judgement:?}");
    };
    assert!(throughput.slower_below() < 0.7, "{throughput:?}");
    // And so is a confirmation that read at 0.7 of it.
    let mut record = at_speed_costing(1.0, 3.0);
    let repeat = at_speed_costing(0.7, 3.0);
    record.confirmations.push(repeat.measurement.unwrap());
    let judgement = judged(record);
    assert!(matches!(judgement, Judgement::Pass { .. }), "{judgement:?}");
}

#[test]
fn a_writing_trial_that_costs_more_cpu_says_per_gib_written() {
    let s = scratch();
    blessed_with_cpu(&s.path);
    let mut run = costing(2.0);
    run.spec.op = gds_model::scenario::Op::Write;
    let comparison = judge_one(&s.path, run, &fixtures::fingerprint());
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(a.judgement, Judgement::CpuCostlier { .. }),
        "{a:?}"
    );
    assert!(
        a.message
            .contains("more CPU per GiB written than its baseline"),
        "{}",
        a.message
    );
    assert!(
        a.message.contains("a write path that copies"),
        "{}",
        a.message
    );
    assert!(!a.message.contains("GiB read"), "{}", a.message);
}

/// Verbatim figures of a CPU-host drill (`tools/drills/throughput.sh` on the 512 MiB posix suite
/// in 3 rounds, blessed with the defaults): `whole[nthreads=1]`'s bless happened to be quiet
/// (spread 5.3%) beside `whole[nthreads=4]`'s (9.3%), and its fourth clean run, at −14% and
/// confirmed at −15%, failed as slower on its own spread. Floored at the pair's pooled spread it
/// passes, and the floor says so; a 30% drop is still slower.
#[test]
fn a_quiet_bless_of_one_trial_is_floored_at_its_scenarios_pooled_spread() {
    let one = [
        [1.5377, 1.4362, 1.4924],
        [1.6887, 1.5269, 1.2261],
        [1.2479, 1.6137, 1.7088],
        [1.6075, 1.518, 1.4014],
        [1.6187, 1.2144, 1.4241],
        [1.4356, 1.3469, 1.3918],
    ];
    let four = [
        [1.1635, 1.0634, 1.5344],
        [1.0802, 1.7798, 1.1754],
        [1.3604, 1.4054, 1.3464],
        [1.6273, 1.4395, 1.2273],
        [1.3636, 1.0648, 1.4654],
        [1.1105, 1.4152, 1.5075],
    ];
    let provenance = crate::file::Provenance {
        blessed_at: "2026-12-06T09:12:02Z".into(),
        gate_version: "0.1.0".into(),
        host: "cpu-host".into(),
        revision: None,
    };
    let entry = |runs: &[[f64; 3]]| {
        let figures: Vec<crate::figures::RunFigures> = runs
            .iter()
            .map(|run| {
                crate::figures::RunFigures::of(&fixtures::measurement(run, "host", CHECKSUM))
            })
            .collect();
        let refs: Vec<&crate::figures::RunFigures> = figures.iter().collect();
        crate::file::TrialBaseline::from_runs(&refs, &provenance)
    };
    let mut baseline = crate::Baseline {
        schema_version: crate::file::SCHEMA_VERSION,
        runner: "cpu-host".into(),
        fingerprint: fixtures::fingerprint(),
        provenance: provenance.clone(),
        control: None,
        trials: [
            ("s::whole[nthreads=1]".to_string(), entry(&one)),
            ("s::whole[nthreads=4]".to_string(), entry(&four)),
        ]
        .into(),
    };
    let record = |gbps: &[f64], confirmation: &[f64]| {
        let mut record = fixtures::passed("s::whole[nthreads=1]", gbps, "host", CHECKSUM);
        record
            .confirmations
            .push(fixtures::measurement(confirmation, "host", CHECKSUM));
        record
    };
    let clean = record(&[1.2824, 1.4628, 1.2266], &[1.2639, 1.2224, 1.5761]);
    let name = "s::whole[nthreads=1]";
    let alone = crate::compare::judge(&baseline.trials[name], None, &clean);
    assert!(matches!(alone, Judgement::Regression { .. }), "{alone:?}");
    let Judgement::Pass { throughput, .. } = crate::compare::judge_record(&baseline, &clean) else {
        panic!("the pooled floor should clear it");
    };
    assert!(throughput.own_spread.unwrap() < 0.06, "{throughput:?}");
    assert!(throughput.spread.unwrap() > 0.07, "{throughput:?}");
    assert!(
        crate::message::threshold(gds_model::units::Rate::Gb, &throughput)
            .contains("pooled over its scenario's trials on this path; its own 5."),
        "{}",
        crate::message::threshold(gds_model::units::Rate::Gb, &throughput)
    );
    let slow = record(&[1.05; 3], &[1.05; 3]);
    let caught = crate::compare::judge_record(&baseline, &slow);
    assert!(matches!(caught, Judgement::Regression { .. }), "{caught:?}");
    baseline.trials.remove("s::whole[nthreads=4]");
    assert_eq!(baseline.spread_floor(name), None);
}
