use rand::SeedableRng;
use rand::rngs::StdRng;

use super::simulate::Noise;
use super::*;

/// Run medians scattered by `cv` run to run (passes by half that), one per entry of `speeds`.
fn history(seed: u64, cv: f64, speeds: &[f64]) -> Vec<Run> {
    let noise = Noise {
        within_cv: cv / 2.0,
        between_cv: cv,
        passes: 5,
    };
    let mut runs = noise.history(&mut StdRng::seed_from_u64(seed), speeds);
    for (i, run) in runs.iter_mut().enumerate() {
        run.time = format!("2026-03-01T{:02}:{:02}:00Z", i / 60, i % 60);
    }
    runs
}

/// `n` runs at 1.0, then at each `(from, speed)` the speed changes.
fn speeds(n: usize, steps: &[(usize, f64)]) -> Vec<f64> {
    (0..n)
        .map(|i| {
            steps
                .iter()
                .rev()
                .find(|(from, _)| i >= *from)
                .map_or(1.0, |&(_, speed)| speed)
        })
        .collect()
}

fn indices(changes: &Changes) -> Vec<usize> {
    changes.change_points.iter().map(|cp| cp.index).collect()
}

/// The change points are where `expected` says, give or take `slack` runs.
fn found_near(changes: &Changes, expected: &[usize], slack: usize) -> bool {
    let found = indices(changes);
    found.len() == expected.len()
        && found
            .iter()
            .zip(expected)
            .all(|(f, e)| f.abs_diff(*e) <= slack)
}

#[test]
fn stationary_histories_have_no_change_points() {
    for seed in 0..20 {
        for cv in [0.02, 0.12, 0.186] {
            let changes = find(&history(seed, cv, &[1.0; 200]));
            assert!(
                changes.change_points.is_empty(),
                "seed {seed}, cv {cv}: {:?}",
                changes.change_points
            );
            assert_eq!((changes.runs, changes.too_short.as_deref()), (200, None));
        }
    }
}

#[test]
fn a_clear_step_is_found_at_its_run() {
    let runs = history(1, 0.05, &speeds(60, &[(37, 0.8)]));
    let changes = find(&runs);
    assert_eq!(indices(&changes), [37], "{changes:?}");
    let cp = &changes.change_points[0];
    assert_eq!(cp.time, runs[37].time);
    assert!((cp.ratio - 0.8).abs() < 0.04, "{cp:?}");
    assert!(
        (cp.before - 1.0).abs() < 0.03 && (cp.after - 0.8).abs() < 0.03,
        "{cp:?}"
    );
    assert!(cp.p_value < 1e-6, "{cp:?}");
    assert_eq!((cp.runs_after, cp.confirmed), (23, true));
}

#[test]
fn three_steps_of_five_percent_are_each_found() {
    let steps = [(20, 0.95), (40, 0.95 * 0.95), (60, 0.95 * 0.95 * 0.95)];
    let changes = find(&history(2, 0.01, &speeds(80, &steps)));
    // A step of 5% at 1% noise is placed within a few runs: here a fast run just after the first
    // step moves it by three.
    assert!(found_near(&changes, &[20, 40, 60], 3), "{changes:?}");
    for cp in &changes.change_points {
        assert!((cp.ratio - 0.95).abs() < 0.015, "{cp:?}");
        assert!(cp.confirmed && cp.p_value <= ALPHA, "{cp:?}");
    }
}

#[test]
fn a_runner_change_is_attached_to_the_change_point_it_coincides_with() {
    let mut runs = history(3, 0.05, &speeds(80, &[(40, 0.75)]));
    runs[40].changes = vec!["driver: 570.86 → 580.159".into()];
    // Far from any change point: attached to none.
    runs[10].changes = vec!["kernel: 6.8.0 → 6.8.1".into()];
    let changes = find(&runs);
    assert_eq!(indices(&changes), [40], "{changes:?}");
    assert_eq!(
        changes.change_points[0].runner_changes,
        [NearbyChange {
            index: 40,
            time: runs[40].time.clone(),
            change: "driver: 570.86 → 580.159".into(),
        }]
    );
}

#[test]
fn too_short_a_history_gives_nothing_and_says_why() {
    for n in [0, 1, 9] {
        let changes = find(&history(4, 0.01, &speeds(n, &[(n / 2, 0.5)])));
        assert!(changes.change_points.is_empty(), "{changes:?}");
        let why = changes.too_short.expect("a reason");
        assert!(why.starts_with(&format!("{n} usable run(s)")), "{why}");
    }
    // Ten runs are enough for a halved disk.
    let changes = find(&history(4, 0.01, &speeds(10, &[(5, 0.5)])));
    assert_eq!(indices(&changes), [5]);
    assert!(!changes.change_points[0].confirmed);
}

#[test]
fn unusable_medians_are_skipped_with_a_reason_and_indices_stay_the_callers() {
    let mut runs = history(5, 0.03, &speeds(40, &[(20, 0.7)]));
    for (i, bad) in [(3, f64::NAN), (7, 0.0), (11, f64::INFINITY), (25, -1.0)] {
        runs[i].median_gbps = bad;
    }
    runs[30].median_gbps = f64::MIN_POSITIVE / 2.0; // subnormal: its log is finite
    let changes = find(&runs);
    let skipped: Vec<usize> = changes.skipped.iter().map(|s| s.index).collect();
    assert_eq!(skipped, [3, 7, 11, 25]);
    assert!(
        changes.skipped[0]
            .reason
            .contains("NaN GB/s is not a positive finite rate"),
        "{:?}",
        changes.skipped
    );
    assert_eq!(changes.runs, 36);
    // The subnormal run is one wild run among many: the step is still where it was.
    assert_eq!(indices(&changes), [20], "{changes:?}");
    // Nothing usable at all.
    let none = find(&vec![runs[3].clone(); 30]);
    assert_eq!((none.runs, none.skipped.len()), (0, 30));
    assert!(none.change_points.is_empty() && none.too_short.is_some());
}

#[test]
fn one_wild_run_is_not_a_level() {
    let mut runs = history(6, 0.12, &[1.0; 120]);
    runs[118].median_gbps /= 3.0;
    runs[60].median_gbps /= 3.0;
    assert!(find(&runs).change_points.is_empty());
}

fn creep_of(changes: &Changes, baseline: f64) -> Option<Creep> {
    creep(changes, Reference::exact(baseline), 0.10).unwrap()
}

#[test]
fn steps_that_add_up_past_the_tolerance_creep() {
    let steps = [(20, 0.95), (40, 0.95 * 0.95), (60, 0.95 * 0.95 * 0.95)];
    let changes = find(&history(2, 0.01, &speeds(80, &steps)));
    let found = creep_of(&changes, 1.0).expect("a creep");
    assert_eq!(found.change_point.index, changes.change_points[2].index);
    assert!((found.drop() - 0.143).abs() < 0.015, "{found:?}");
    // Two steps (9.75%) stay inside a 10% tolerance.
    let two = find(&history(2, 0.01, &speeds(60, &steps[..2])));
    assert!(found_near(&two, &[20, 40], 3), "{two:?}");
    assert_eq!(creep_of(&two, 1.0), None);
    // Against a baseline blessed after the first step, three steps are 9.75% too.
    assert_eq!(creep_of(&changes, 0.95), None);
}

#[test]
fn a_tentative_change_point_neither_fails_nor_clears() {
    // Halved six runs ago: seen, not confirmed, no creep yet.
    let changes = find(&history(7, 0.03, &speeds(100, &[(94, 0.5)])));
    assert_eq!(indices(&changes), [94]);
    assert!(!changes.change_points[0].confirmed);
    assert_eq!(creep_of(&changes, 1.0), None);
    // Slow for 40 runs, then back six runs ago: the slow level still stands until the recovery
    // is confirmed.
    let changes = find(&history(7, 0.03, &speeds(100, &[(54, 0.8), (94, 1.0)])));
    assert_eq!(indices(&changes), [54, 94]);
    assert_eq!(creep_of(&changes, 1.0).unwrap().change_point.index, 54);
    // Once the recovery held for ten runs, it clears.
    let changes = find(&history(7, 0.03, &speeds(104, &[(54, 0.8), (94, 1.0)])));
    assert_eq!(indices(&changes), [54, 94]);
    assert_eq!(creep_of(&changes, 1.0), None);
}

#[test]
fn a_level_that_moved_with_the_bless_creeps_once_it_held() {
    // Every run since the bless at half the blessed level: no change point among them, but the
    // bless is one.
    let runs = history(8, 0.05, &[0.5; 60]);
    let changes = find(&runs);
    assert!(changes.change_points.is_empty());
    let found = creep_of(&changes, 1.0).expect("a creep at the bless");
    let point = &found.change_point;
    assert_eq!(
        (point.index, point.last_index, point.runs_after),
        (0, 59, 60)
    );
    assert_eq!(
        (point.before, point.time.as_str()),
        (1.0, runs[0].time.as_str())
    );
    // Nine runs: seen, not yet confirmed.
    assert_eq!(creep_of(&find(&runs[..9]), 1.0), None);
    // Runs at the blessed level, however noisy, do not.
    assert_eq!(creep_of(&find(&history(8, 0.15, &[1.0; 60])), 1.0), None);
}

/// As the CPU host's drill saw it: six blessed runs, one of them slow (0.87 among ~1.55), then
/// the disk capped for 11 runs at 1.09: each run inside the band the slow run widened, no change
/// point among them, yet the level is 23% below the baseline's.
#[test]
fn a_drop_after_a_bless_with_a_slow_run_is_a_creep_at_the_bless() {
    let blessed = [1.55, 1.60, 1.50, 0.87, 1.58, 1.52];
    let level = (blessed.iter().map(|m: &f64| m.ln()).sum::<f64>() / 6.0).exp();
    let reference = Reference {
        level,
        runs: &blessed,
    };
    let capped: Vec<Run> = history(3, 0.03, &[1.0; 11])
        .into_iter()
        .map(|run| Run {
            median_gbps: run.median_gbps * 1.09,
            ..run
        })
        .collect();
    let found = held_creep(&capped, reference, 0.10)
        .unwrap()
        .expect("a creep");
    assert_eq!(found.change_point.index, 0);
    assert!((found.ratio - 1.09 / level).abs() < 0.03, "{found:?}");
    // Ten runs are one too few for a level to hold.
    assert_eq!(held_creep(&capped[..9], reference, 0.10).unwrap(), None);
    // At the blessed level the same runs pass.
    let clean: Vec<Run> = capped
        .iter()
        .map(|run| Run {
            median_gbps: run.median_gbps / 1.09 * 1.55,
            ..run.clone()
        })
        .collect();
    assert_eq!(held_creep(&clean, reference, 0.10).unwrap(), None);
}

#[test]
fn a_baseline_or_tolerance_that_cannot_be_compared_is_refused() {
    let changes = Changes::default();
    for level in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let error = creep(&changes, Reference::exact(level), 0.1).unwrap_err();
        assert!(matches!(error, CreepError::BaselineLevel(_)), "{error}");
    }
    for tolerance in [-0.1, 1.0, f64::NAN] {
        let error = creep(&changes, Reference::exact(1.0), tolerance).unwrap_err();
        assert!(error.to_string().contains("expect.tolerance"), "{error}");
    }
}

/// A 15% creep confirmed by 12 runs at 0.85, then one run at full speed: searched afresh, some
/// histories lose the change point over that one run (the creep drill saw it); held, none does.
/// Simulated noise at the H200 runner's 12% run-to-run CV.
#[test]
fn one_fast_run_does_not_clear_a_confirmed_creep() {
    let mut lost = 0;
    for seed in 0..300 {
        let mut runs = history(seed, 0.12, &speeds(32, &[(20, 0.85)]));
        let mut fast = runs[31].clone();
        fast.median_gbps = 1.0;
        fast.time = "2026-03-01T01:00:00Z".into();
        if creep_of(&find(&runs), 1.0).is_none() {
            continue; // no confirmed creep before the fast run
        }
        runs.push(fast);
        if creep_of(&find(&runs), 1.0).is_none() {
            lost += 1;
        }
        assert!(
            held_creep(&runs, Reference::exact(1.0), 0.10)
                .unwrap()
                .is_some(),
            "seed {seed}: the fast run cleared the creep"
        );
    }
    assert!(
        lost > 0,
        "no history lost its creep to one fast run: the test shows nothing"
    );
}

/// The level found back (a confirmed change point up to within the tolerance) clears a creep;
/// a creep no search finds for HOLD_RUNS runs lapses.
#[test]
fn a_confirmed_recovery_clears_a_held_creep() {
    let back = history(7, 0.02, &speeds(45, &[(20, 0.80), (32, 1.0)]));
    assert!(creep_of(&find(&back[..32]), 1.0).is_some());
    assert_eq!(
        held_creep(&back, Reference::exact(1.0), 0.10).unwrap(),
        None
    );
    // Held while the recovery is tentative.
    assert!(
        held_creep(&back[..36], Reference::exact(1.0), 0.10)
            .unwrap()
            .is_some()
    );
}
