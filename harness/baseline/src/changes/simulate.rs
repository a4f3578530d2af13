//! `cargo xtask bench --stats`, change points: how often [`find`](super::find) reports a change
//! point in a history where nothing changed, and how soon it flags a creep of three small steps,
//! measured on simulated histories with a fixed seed, for several runners' noise.
//!
//! Noise model, on the log scale as in `baseline::simulate`: every run has its own level,
//! `exp(σ_between·Z)` around the true one, and its passes scatter around that level by
//! `exp(σ_within·Z)`; the history holds each run's median. Levels are geometric (median 1), so
//! the baseline "at the true level" is exactly 1. The runs are independent: a runner whose level
//! drifts over hours gives neighbouring runs that agree more than this, and more false change
//! points than measured here; [`super::ALPHA`] keeps half the target in hand for that.
//!
//! Scenarios, per runner:
//! - **stationary**: [`STATIONARY_RUNS`] runs of an unchanged system; a false change point is any
//!   change point found, tentative or confirmed.
//! - **creep**: [`LEAD_RUNS`] runs at the old level, then three steps of −5%, [`STEP_SPACING`] runs
//!   apart, judged [`super::CONFIRM_RUNS`] runs after the third (the first moment a change point at
//!   the third step can be confirmed): 200 runs in all. *Flagged*: a confirmed change point to a
//!   lower level. *The gate fails*: the gate's own question, [`super::held_creep`] (a creep found
//!   over the history as it stood at any of the last [`super::HOLD_RUNS`] runs), says yes at
//!   tolerance 10%, once with the baseline at the true old level and once with a baseline blessed
//!   from 6 runs of it (the default bless), whose own noise the comparison inherits.

use std::fmt;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rayon::prelude::*;

use super::super::decision::BLESS_RUNS;
use super::super::history::History;
use super::super::noise;
use super::super::simulate::{Scale, standard_normal};
use super::{Changes, Options, Reference, Run, find_with, hold, recent_searches};
use crate::slow_runs::{ALPHA_SLOW, ALPHA_SLOW_CREEP, kept, slow_runs};
use crate::stats::log_mean_sd;

/// Runs in a stationary history.
pub const STATIONARY_RUNS: usize = 200;
/// Runs at the old level before the first step of a creep.
pub const LEAD_RUNS: usize = 150;
/// Runs between the steps of a creep.
pub const STEP_SPACING: usize = 20;
/// Steps in a creep.
pub const STEPS: usize = 3;
/// Each step's drop.
pub const STEP: f64 = 0.05;
/// The trial tolerance the gate's creep question is asked with.
pub const TOLERANCE: f64 = 0.10;
/// A drop that comes with the bless: every run after it this much below the blessed level.
pub const BLESS_DROP: f64 = 0.20;

/// At most this share of stationary histories may show a change point.
pub const FALSE_TARGET: f64 = 0.01;
/// At least this share of creeps must be flagged by the third step.
pub const DETECTION_TARGET: f64 = 0.90;

/// A runner's noise: the CV of one pass around its run's level, of the run level from one run to
/// the next, and the passes per run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Noise {
    pub within_cv: f64,
    pub between_cv: f64,
    pub passes: usize,
}

impl Noise {
    /// One run's median at `speed` times the true level.
    pub fn run_median(&self, rng: &mut StdRng, speed: f64) -> f64 {
        let level = speed.ln() + sigma(self.between_cv) * standard_normal(rng);
        let mut passes: Vec<f64> = (0..self.passes.max(1))
            .map(|_| (level + sigma(self.within_cv) * standard_normal(rng)).exp())
            .collect();
        passes.sort_by(f64::total_cmp);
        gds_model::numbers::median(&passes)
    }

    /// A history of one run per entry of `speeds`.
    pub fn history(&self, rng: &mut StdRng, speeds: &[f64]) -> Vec<Run> {
        speeds
            .iter()
            .map(|&speed| Run {
                time: String::new(),
                median_gbps: self.run_median(rng, speed),
                changes: Vec::new(),
            })
            .collect()
    }
}

/// Log-scale standard deviation of a log-normal with coefficient of variation `cv`.
fn sigma(cv: f64) -> f64 {
    (1.0 + cv * cv).ln().sqrt()
}

/// The speeds of a creep of `steps` drops of `step`, judged `after` runs after the last.
pub fn creep_speeds(step: f64, steps: usize, after: usize) -> Vec<f64> {
    let mut speeds = vec![1.0; LEAD_RUNS];
    for s in 1..=steps {
        let runs = if s == steps { after } else { STEP_SPACING };
        speeds.extend(std::iter::repeat_n((1.0 - step).powi(s as i32), runs));
    }
    speeds
}

/// A runner the figures are given for.
#[derive(Clone, Debug, PartialEq)]
pub struct Runner {
    pub name: String,
    pub noise: Noise,
}

/// The runners `bench --stats` always shows: the H200 runner's quietest and noisiest trials and
/// the stated runner of `baseline::simulate` between them (DESIGN.md, eight back-to-back runs:
/// posix 7.5%, cuFile 12.7%, KvikIO AUTO 18.6% CV of run medians; passes within 2–8%, taken as 5%).
pub fn stated_runners() -> Vec<Runner> {
    let h200 = |name: &str, between_cv| Runner {
        name: name.into(),
        noise: Noise {
            within_cv: 0.05,
            between_cv,
            passes: 5,
        },
    };
    vec![
        h200("H200 posix", 0.075),
        h200("stated runner", 0.12),
        h200("H200 KvikIO AUTO", 0.186),
    ]
}

#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub runner: Runner,
    pub histories: usize,
    /// Stationary histories with any change point.
    pub false_any: f64,
    /// Stationary histories with a confirmed change point.
    pub false_confirmed: f64,
    /// Creeps with a confirmed change point down, [`super::CONFIRM_RUNS`] runs after the third step.
    pub flagged: f64,
    /// Creeps the gate fails, baseline at the true level.
    pub gate_true_baseline: f64,
    /// Creeps the gate fails, baseline blessed from [`BLESS_RUNS`] runs.
    pub gate_blessed: f64,
    /// A lone step of −5% (inside the tolerance), 50 runs on: shares of histories the gate fails,
    /// against the true level and against a blessed baseline. Not a creep: these are false
    /// failures, and the blessed baseline's own noise is most of them.
    pub lone_step_true_baseline: f64,
    pub lone_step_blessed: f64,
    /// Every run since a bless [`BLESS_DROP`] below its level: share of histories the gate fails
    /// on [`super::CONFIRM_RUNS`] + 1 runs on, against a baseline blessed from [`BLESS_RUNS`]
    /// runs ([`super::shift_at_bless`]).
    pub drop_at_bless: f64,
    /// Runs after the third step until [`DETECTION_TARGET`] of creeps are flagged: the first of
    /// 10, 15, 20, 25, 30, 40, 50, 60, 80, 100 that does.
    pub runs_to_flag: Option<usize>,
    /// Runs after the third step until the gate fails on [`DETECTION_TARGET`] of creeps, with the
    /// baseline at the true level, tried at the same run counts.
    pub runs_to_fail: Option<usize>,
    /// The smallest creep (total drop of three equal steps) flagged in [`DETECTION_TARGET`] of
    /// histories [`super::CONFIRM_RUNS`] runs after the third step.
    pub smallest_flagged: Option<f64>,
}

impl Figures {
    pub fn meets_false_target(&self) -> bool {
        self.false_any <= FALSE_TARGET
    }

    pub fn meets_detection_target(&self) -> bool {
        self.flagged >= DETECTION_TARGET
    }
}

/// For each of `N` questions, the share of `histories` seeded histories for which `judge` says
/// yes; each history has its own generator (seeded from `seed` and its number), so the figures do
/// not depend on how many threads ran them.
fn shares<const N: usize>(
    histories: usize,
    seed: u64,
    judge: impl Fn(&mut StdRng) -> [bool; N] + Sync,
) -> [f64; N] {
    let counts = (0..histories as u64)
        .into_par_iter()
        .map(|i| {
            let mut rng = StdRng::seed_from_u64(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            judge(&mut rng).map(usize::from)
        })
        .reduce(|| [0; N], |a, b| std::array::from_fn(|k| a[k] + b[k]));
    counts.map(|count| count as f64 / histories.max(1) as f64)
}

fn flagged(changes: &Changes) -> bool {
    changes
        .change_points
        .iter()
        .any(|cp| cp.confirmed && cp.ratio < 1.0)
}

/// Shares of creeps of three `step` drops flagged, and failing the gate against the true level,
/// `after` runs after the third.
fn creep_rates(noise: &Noise, step: f64, after: usize, histories: usize, seed: u64) -> [f64; 2] {
    let speeds = creep_speeds(step, STEPS, after);
    shares(histories, seed, |rng| {
        let searches = recent_searches(&noise.history(rng, &speeds));
        [
            flagged(whole(&searches)),
            gate_fails(&searches, Reference::exact(1.0)),
        ]
    })
}

/// The search over the whole history: the last of [`recent_searches`].
fn whole(searches: &[Changes]) -> &Changes {
    searches
        .last()
        .expect("a history's searches end with the whole history's")
}

/// Whether the gate fails on a creep, as it asks after a run ([`super::held_creep`]).
fn gate_fails(searches: &[Changes], baseline: Reference<'_>) -> bool {
    matches!(hold(searches, baseline, TOLERANCE), Ok(Some(_)))
}

/// A bless at the true level, as the gate reads it: the geometric mean of [`BLESS_RUNS`] run
/// medians less far slower ones, and the runs a shift at the bless is tested against (less those
/// far slower at the creep's looser rule). No pass noise floors the rule here: it leaves out at
/// least as many runs as the gate's.
fn blessed(noise: &Noise, rng: &mut StdRng) -> (f64, Vec<f64>) {
    let runs: Vec<f64> = (0..BLESS_RUNS)
        .map(|_| noise.run_median(rng, 1.0))
        .collect();
    let without_slow = |alpha: f64| kept(&runs, &slow_runs(&runs, 0.0, alpha));
    let level = log_mean_sd(&without_slow(ALPHA_SLOW)).0.exp();
    (level, without_slow(ALPHA_SLOW_CREEP))
}

/// The rates for one runner, `histories` histories each; no thresholds searched.
pub fn rates(runner: &Runner, histories: usize, seed: u64) -> Figures {
    let noise = runner.noise;
    let options = Options::default();
    let stationary = vec![1.0; STATIONARY_RUNS];
    let [false_any, false_confirmed] = shares(histories, seed, |rng| {
        let changes = find_with(&noise.history(rng, &stationary), &options);
        [
            !changes.change_points.is_empty(),
            changes.change_points.iter().any(|cp| cp.confirmed),
        ]
    });
    let speeds = creep_speeds(STEP, STEPS, options.confirm_runs);
    let [flagged_share, gate_true_baseline, gate_blessed] = shares(histories, seed + 1, |rng| {
        let searches = recent_searches(&noise.history(rng, &speeds));
        let (level, runs) = blessed(&noise, rng);
        [
            flagged(whole(&searches)),
            gate_fails(&searches, Reference::exact(1.0)),
            gate_fails(&searches, Reference { level, runs: &runs }),
        ]
    });
    let lone: Vec<f64> = creep_speeds(STEP, 1, STATIONARY_RUNS - LEAD_RUNS);
    let [lone_step_true_baseline, lone_step_blessed] = shares(histories, seed + 4, |rng| {
        let searches = recent_searches(&noise.history(rng, &lone));
        let (level, runs) = blessed(&noise, rng);
        [
            gate_fails(&searches, Reference::exact(1.0)),
            gate_fails(&searches, Reference { level, runs: &runs }),
        ]
    });
    let since_bless = vec![1.0 - BLESS_DROP; options.confirm_runs + 1];
    let [drop_at_bless] = shares(histories, seed + 5, |rng| {
        let searches = recent_searches(&noise.history(rng, &since_bless));
        let (level, runs) = blessed(&noise, rng);
        [gate_fails(&searches, Reference { level, runs: &runs })]
    });
    Figures {
        runner: runner.clone(),
        histories,
        drop_at_bless,
        false_any,
        false_confirmed,
        flagged: flagged_share,
        gate_true_baseline,
        gate_blessed,
        lone_step_true_baseline,
        lone_step_blessed,
        runs_to_flag: None,
        runs_to_fail: None,
        smallest_flagged: None,
    }
}

/// [`rates`], and the thresholds: how many runs after the third step a 3 × 5% creep needs to be
/// flagged and to fail the gate, and the smallest creep flagged by the third step; `histories`
/// (and the searches' share of them) at `scale`.
pub fn measure(runner: &Runner, histories: usize, seed: u64, scale: Scale) -> Figures {
    let noise = runner.noise;
    let confirm = Options::default().confirm_runs;
    // The searches take fewer histories per try: they only place a threshold (to ±1% or so at
    // 1000 histories), and look at coarser steps further out.
    let search = scale.of((histories / 4).max(200));
    let (mut runs_to_flag, mut runs_to_fail) = (None, None);
    let afters = (confirm..30)
        .step_by(5)
        .chain((30..60).step_by(10))
        .chain([60, 80, 100]);
    for after in afters {
        let [flag, fail] = creep_rates(&noise, STEP, after, search, seed + 2);
        if flag >= DETECTION_TARGET {
            runs_to_flag.get_or_insert(after);
        }
        if fail >= DETECTION_TARGET {
            runs_to_fail.get_or_insert(after);
        }
        if runs_to_flag.is_some() && runs_to_fail.is_some() {
            break;
        }
    }
    Figures {
        runs_to_flag,
        runs_to_fail,
        smallest_flagged: smallest_flagged(&noise, confirm, search, seed + 3),
        ..rates(runner, scale.of(histories), seed)
    }
}

/// Bisection on the step size (0.5% to 15% a step) for the smallest creep flagged in
/// [`DETECTION_TARGET`] of histories; `None` when even 15% steps are not.
fn smallest_flagged(noise: &Noise, after: usize, histories: usize, seed: u64) -> Option<f64> {
    let speeds = |step| creep_speeds(step, STEPS, after);
    let options = Options::default();
    let rate = |step| {
        let speeds = speeds(step);
        let [flagged_share] = shares(histories, seed, |rng| {
            [flagged(&find_with(&noise.history(rng, &speeds), &options))]
        });
        flagged_share
    };
    let (mut low, mut high) = (0.005, 0.15);
    if rate(high) < DETECTION_TARGET {
        return None;
    }
    while high - low > 0.0025 {
        let mid = (low + high) / 2.0;
        if rate(mid) >= DETECTION_TARGET {
            high = mid;
        } else {
            low = mid;
        }
    }
    Some(1.0 - (1.0 - high).powi(STEPS as i32))
}

/// The change-point part of `bench --stats`: the stated runners, then the noise fitted to
/// `history` when it holds enough runs, [`HISTORIES`] histories per figure at `scale`. Returns
/// the table and whether the false change point target holds for every runner and the detection
/// target for the stated runner (12%): the detection a noisier runner allows is a property of
/// that runner, shown, not a failure of the method.
pub fn bench_stats(history: &History, scale: Scale) -> (String, bool) {
    let mut runners = stated_runners();
    if let Some(fitted) = noise::fit(history) {
        runners.push(Runner {
            name: "this runner (fitted to its history)".into(),
            noise: Noise {
                within_cv: fitted.within_cv,
                between_cv: fitted.between_cv,
                passes: 5,
            },
        });
    }
    let figures: Vec<Figures> = runners
        .iter()
        .map(|runner| measure(runner, HISTORIES, SEED, scale))
        .collect();
    let met = figures.iter().all(Figures::meets_false_target)
        && figures
            .iter()
            .filter(|f| f.runner.name == "stated runner")
            .all(Figures::meets_detection_target);
    (Table(&figures).to_string(), met)
}

/// Histories per figure in `bench --stats` (a full run's): the false change point rate to ±0.2% or
/// so.
pub const HISTORIES: usize = 4_000;
pub const SEED: u64 = 0xc4a_9e5;

/// The figures as a Markdown table, with the method's parameters above it.
pub struct Table<'a>(pub &'a [Figures]);

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = Options::default();
        writeln!(
            f,
            "change points over history: binary segmentation of log run medians, family-wise p ≤ {}% per split search, segments ≥ {} runs, confirmed after {} runs; {} simulated histories per figure, seed {SEED:#x}",
            o.alpha * 100.0,
            o.min_segment,
            o.confirm_runs,
            self.0.first().map_or(HISTORIES, |f| f.histories),
        )?;
        writeln!(
            f,
            "creep: {LEAD_RUNS} runs, then {STEPS} steps of −{:.0}% each {STEP_SPACING} runs apart, judged {} runs after the third (200 runs); the gate fails on it at tolerance {:.0}%\n",
            STEP * 100.0,
            o.confirm_runs,
            TOLERANCE * 100.0
        )?;
        let target = DETECTION_TARGET * 100.0;
        let after = o.confirm_runs;
        writeln!(
            f,
            "| runner | run-to-run CV | false change points in {STATIONARY_RUNS} runs (≤ {:.0}%) | creep flagged {after} runs after the 3rd step (≥ {target:.0}%) | runs after the 3rd step to flag {target:.0}% | smallest creep flagged in {target:.0}%, {after} runs after | gate fails {after} runs after: true baseline / blessed from {BLESS_RUNS} runs | runs after the 3rd step until the gate fails {target:.0}% (true baseline) | gate fails on one −{:.0}% step, {} runs on: true baseline / blessed | gate fails on a level −{:.0}% since the bless, {} runs on (blessed) |",
            FALSE_TARGET * 100.0,
            STEP * 100.0,
            STATIONARY_RUNS - LEAD_RUNS,
            BLESS_DROP * 100.0,
            after + 1,
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
        let runs = |runs: Option<usize>| runs.map_or("over 100".into(), |runs| runs.to_string());
        for figures in self.0 {
            let n = &figures.runner.noise;
            writeln!(
                f,
                "| {} | {:.1}% (passes {:.1}%) | {:.2}% ({:.2}% confirmed) {} | {:.1}% {} | {} | {} | {:.1}% / {:.1}% | {} | {:.1}% / {:.1}% | {:.1}% |",
                figures.runner.name,
                n.between_cv * 100.0,
                n.within_cv * 100.0,
                figures.false_any * 100.0,
                figures.false_confirmed * 100.0,
                mark(figures.meets_false_target()),
                figures.flagged * 100.0,
                mark(figures.meets_detection_target()),
                runs(figures.runs_to_flag),
                figures
                    .smallest_flagged
                    .map_or("over 38.6%".into(), |creep| format!(
                        "{:.1}% (3 × {:.1}%)",
                        creep * 100.0,
                        (1.0 - (1.0 - creep).powf(1.0 / STEPS as f64)) * 100.0
                    )),
                figures.gate_true_baseline * 100.0,
                figures.gate_blessed * 100.0,
                runs(figures.runs_to_fail),
                figures.lone_step_true_baseline * 100.0,
                figures.lone_step_blessed * 100.0,
                figures.drop_at_bless * 100.0,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stated_runner_meets_both_targets() {
        let runner = &stated_runners()[1];
        let figures = rates(runner, 1_000, SEED);
        println!("{}", Table(std::slice::from_ref(&figures)));
        assert!(figures.meets_false_target(), "{figures:?}");
        assert!(figures.meets_detection_target(), "{figures:?}");
    }

    #[test]
    fn same_seed_same_figures() {
        // Determinism does not need many histories; each costs tens of milliseconds.
        let runner = &stated_runners()[0];
        assert_eq!(rates(runner, 20, 7), rates(runner, 20, 7));
    }

    #[test]
    fn a_creep_is_laid_out_as_stated() {
        let speeds = creep_speeds(0.05, 3, 10);
        assert_eq!(speeds.len(), 200);
        assert_eq!(speeds[149], 1.0);
        assert_eq!(speeds[150], 0.95);
        assert_eq!(speeds[170], 0.95 * 0.95);
        assert!((speeds[199] - 0.857_375).abs() < 1e-12);
    }
}
