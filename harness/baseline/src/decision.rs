//! The throughput decision: is this run slower than the runner's blessed runs can explain?
//!
//! The unit of evidence is the run, not the pass. Passes of one run share the disk's, the page
//! cache's and the host's state, so they agree to a few percent while the level of whole runs
//! moves by far more (on the H200 test machine: passes within 2–8%, run medians of an unchanged
//! system 7.5–18.6% CV). A test that treats passes as independent samples is over-confident and
//! cries wolf on most clean runs, which is what the gate did before this rule.
//!
//! So a baseline holds several blessed runs (fresh workers, interleaved trial by trial), and a run
//! is judged by its median against them:
//! - **level**: the geometric mean of the blessed run medians, less runs far slower than the rest
//!   ([`crate::slow_runs`]: one slow run at bless must not hide a real drop);
//! - **spread**: the standard deviation of their logs (≈ CV), never less than what the passes'
//!   own noise puts into a run median (σ_within·√(π/2n)), so that a few lucky blessed runs cannot
//!   make the bound razor-thin, nor than the spread of its scenario's trials on the same path,
//!   pooled ([`Throughput::with_spread_floor`]), so that a quiet bless of one trial cannot either;
//! - **prediction bound**: a new run of the unchanged system falls below
//!   `level · exp(−t(1−α; k−1) · spread · √(1 + 1/k))` with probability α (Student t, k blessed
//!   runs: it pays for estimating the level and the spread from k runs).
//!
//! A run looks **slower** when its ratio to the level is below both `1 − tolerance` and the lower
//! prediction bound: beyond what the trial allows and beyond what this runner's noise explains.
//! The gate then re-runs the trial (fresh worker) and fails only if every confirmation run is
//! slower too. Path, checksum and missing trials need no confirmation: they are not noisy.
//!
//! α = 5% per run, one confirmation and six blessed runs keep false alarms under 1% of trial-runs
//! while a halved disk is still caught; the figures, for stated and for fitted noise, come from
//! `cargo xtask bench --stats` (`simulate`). A lower α with one confirmation was chosen over a
//! higher α with more: consecutive runs of a drifting runner are not fully independent, and one
//! confirmation at 5% leans less on their independence than two at 10%. With fewer than [`MIN_RUNS`] blessed runs the spread
//! is unknown: the tolerance and the confirmation decide alone, and every message says so.

use serde::{Deserialize, Serialize};

use super::slow_runs::{ALPHA_SLOW, kept, slow_runs};
use super::stats::{Summary, log_mean_sd, median, student_t_quantile};

/// One-sided level of the prediction bound, per run (the first and each confirmation).
pub const ALPHA: f64 = 0.05;

/// Blessed runs needed to estimate a runner's run-to-run spread.
pub const MIN_RUNS: usize = 3;

/// Runs a bless records unless told otherwise: with one confirmation at [`ALPHA`], six runs keep
/// a halved disk caught in over 99% of runs at 12% run-to-run CV (five: 98.8%).
pub const BLESS_RUNS: u16 = 6;

/// The most runs a bless that chose its own count (no `--runs`) grows to: after its
/// [`BLESS_RUNS`], one more at a time while a trial's spread hides a drop of [`WANTED_DROP`]
/// that more runs would show. At the stated runner (12% between runs) it adds about 0.7 runs
/// and brings the median smallest drop flagged from 21.9% to 19.6%, for 0.92% false alarms
/// against 0.83% (growing on a wide spread favours runs that narrow it; `bench --stats`, the
/// blessed runs table's last row).
pub const MOST_BLESS_RUNS: usize = 10;

/// The rule a bless grows by ([`MOST_BLESS_RUNS`]): the blessed runs' spread (log scale) and the
/// runs that would see a drop of [`WANTED_DROP`] at it, when `runs` cannot and some number up to
/// 100 could. The gate's bless and the simulation of it both ask this.
pub fn runs_to_see(runs: &[Vec<f64>], tolerance: f64) -> Option<(f64, usize)> {
    let advice = Throughput::measure(runs, runs.first()?, tolerance).advise();
    Some((advice.spread?, advice.to_see?.runs?))
}

/// The drop every trial should be able to see; a trial that cannot says what would let it.
pub const WANTED_DROP: f64 = 0.20;

/// Blessed runs beyond which [`ToSee::runs`] gives up: more would not be taken in practice.
const MOST_RUNS: usize = 100;

/// What would let a trial see a drop of [`WANTED_DROP`], when its spread hides one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToSee {
    /// Blessed runs that would do at this spread; `None` when no number up to 100 would.
    pub runs: Option<usize>,
    /// The run-to-run spread that would do with as many blessed runs as now (log scale, ≈ CV).
    pub spread: f64,
    /// How many times as many independent draws a run would need to narrow to [`Self::spread`]:
    /// the factor to raise `rounds:` (and the passes) by where runs differ process by process,
    /// as the GPU runner's did at eight threads (`schedule::CUFILE_EIGHT_THREADS`).
    #[serde(default)]
    pub rounds_factor: f64,
}

/// What one run (and its confirmations) says about a trial's speed against its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Throughput {
    /// The blessed runs' medians, GB/s.
    pub baseline: Summary,
    /// The baseline's level: geometric mean of the blessed run medians, GB/s.
    pub level: f64,
    /// This run's passes, GB/s.
    pub run: Summary,
    /// This run's median over the level (1.0 = same speed).
    pub ratio: f64,
    /// Run-to-run spread the bounds use (log-scale standard deviation, about the CV); `None` when
    /// the baseline has fewer than [`MIN_RUNS`] runs.
    pub spread: Option<f64>,
    /// The trial's own blessed spread, where the spread pooled over its scenario's trials on the
    /// same path was wider and replaced it ([`Throughput::with_spread_floor`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_spread: Option<f64>,
    /// Blessed runs far slower than the others (their places in the baseline, from 0), left out
    /// of the level and the spread ([`crate::slow_runs`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<usize>,
    /// The lowest ratio this runner's spread explains at [`ALPHA`].
    pub lower_bound: Option<f64>,
    /// The highest ratio it explains.
    pub upper_bound: Option<f64>,
    /// The allowed drop, as a fraction (0.10 = 10%).
    pub tolerance: f64,
    /// Ratios of the confirmation runs, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<f64>,
    /// What would let this trial see a drop of 20% (`WANTED_DROP`); absent when it does, when
    /// the spread is unknown, or when nobody asked ([`Throughput::advise`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_see: Option<ToSee>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Same,
    Slower,
    Faster,
}

impl Throughput {
    /// `baseline_runs`: each blessed run's pass samples; `run`: this run's. Neither may be empty
    /// (the baseline file and the comparison check that before).
    pub fn measure(baseline_runs: &[Vec<f64>], run: &[f64], tolerance: f64) -> Throughput {
        let medians: Vec<f64> = baseline_runs.iter().map(|passes| median(passes)).collect();
        let blessed = BlessedRuns::of(baseline_runs);
        let spread = blessed.spread();
        let margin = spread.map(|spread| spread * margin_per_spread(blessed.kept.len()));
        let level = blessed.level();
        Throughput {
            baseline: Summary::of(&medians),
            level,
            run: Summary::of(run),
            ratio: median(run) / level,
            spread,
            own_spread: None,
            left_out: blessed.left_out,
            lower_bound: margin.map(|m| (-m).exp()),
            upper_bound: margin.map(f64::exp),
            tolerance,
            confirmations: Vec::new(),
            to_see: None,
        }
    }

    /// Raises the spread to `floor` where that is wider: the spread pooled over the trials of the
    /// same scenario and path ([`crate::Baseline::spread_floor`]), so that a bless that happened
    /// to be quiet for one trial does not set a bound its runner cannot keep (on the CPU host a
    /// trial blessed at 5.3% beside two at 9.1–9.3% failed a clean run at −14%). The t quantile
    /// stays that of this trial's own runs: the trials' blessed runs shared their moments, so
    /// pooling them adds no independent runs.
    pub fn with_spread_floor(mut self, floor: Option<f64>) -> Throughput {
        let (Some(spread), Some(floor)) = (self.spread, floor) else {
            return self;
        };
        if floor > spread {
            let margin = floor * margin_per_spread(self.runs_used());
            self.own_spread = Some(spread);
            self.spread = Some(floor);
            self.lower_bound = Some((-margin).exp());
            self.upper_bound = Some(margin.exp());
        }
        self
    }

    /// Fills [`Throughput::to_see`]: a judgement people read says what would let the trial see
    /// a 20% drop. Apart from [`Throughput::measure`], which the simulations call by the
    /// hundred thousand: this takes a few more Student t quantiles.
    pub fn advise(mut self) -> Throughput {
        let runs = self.runs_used();
        self.to_see = self.spread.and_then(|spread| to_see(spread, runs));
        self
    }

    /// The blessed runs the level and spread rest on: all less those left out as slow.
    pub fn runs_used(&self) -> usize {
        self.baseline.count - self.left_out.len()
    }

    /// Adds a confirmation run's passes.
    pub fn confirm(&mut self, run: &[f64]) {
        self.confirmations.push(median(run) / self.level);
    }

    /// Below this ratio a run counts as slower: beyond the tolerance and beyond the spread.
    pub fn slower_below(&self) -> f64 {
        (1.0 - self.tolerance).min(self.lower_bound.unwrap_or(1.0))
    }

    pub fn faster_above(&self) -> f64 {
        (1.0 + self.tolerance).max(self.upper_bound.unwrap_or(1.0))
    }

    /// What the first run alone says.
    pub fn first_run(&self) -> Verdict {
        if self.ratio < self.slower_below() {
            Verdict::Slower
        } else if self.ratio > self.faster_above() {
            Verdict::Faster
        } else {
            Verdict::Same
        }
    }

    /// The verdict: slower only when the first run and every confirmation run are slower.
    pub fn verdict(&self) -> Verdict {
        match self.first_run() {
            Verdict::Slower if !self.all_confirmations_slower() => Verdict::Same,
            verdict => verdict,
        }
    }

    fn all_confirmations_slower(&self) -> bool {
        self.confirmations.iter().all(|&r| r < self.slower_below())
    }

    /// The run and every confirmation read within the tolerance of the level (or faster): the
    /// speed held. A cost that rose beside a held speed is the read path's; one that rose with
    /// the speed's drop, inside the runner's spread, is the runner's slow moment, whose CPU per
    /// GiB rises with it (the CPU host's disk reads at 1.6 or at 0.7 GB/s, the latter at about
    /// three times the CPU per GiB).
    pub fn speed_held(&self) -> bool {
        self.first_run_held()
            && self
                .confirmations
                .iter()
                .all(|&r| r >= 1.0 - self.tolerance)
    }

    /// The first run alone read within the tolerance of the level (or faster).
    pub fn first_run_held(&self) -> bool {
        self.ratio >= 1.0 - self.tolerance
    }

    /// The first run looked slower and a confirmation run did not: noise, not a regression.
    pub fn cleared_by_confirmation(&self) -> bool {
        self.first_run() == Verdict::Slower && self.verdict() == Verdict::Same
    }

    /// Whether another confirmation run could still change the verdict, with `wanted` in all,
    /// and one more where the bless saw far slower runs: a runner that has slow spells must show a
    /// slowdown once more before it is blamed on the trial (the one-thread schedules model,
    /// `schedule::CUFILE_ONE_THREAD`, 20 blessed runs from history and 5 rounds: false alarms
    /// 2.05% of trial-runs with one confirmation, 1.10% with two).
    pub fn wants_confirmation(&self, wanted: usize) -> bool {
        self.first_run() == Verdict::Slower
            && self.confirmations.len() < wanted + usize::from(!self.left_out.is_empty())
            && self.all_confirmations_slower()
    }

    /// The smallest drop this decision flags (0.10 = 10%): the tolerance, or more when this
    /// runner's spread does not allow it.
    pub fn detectable_drop(&self) -> f64 {
        1.0 - self.slower_below()
    }

    /// The spread, not the tolerance, sets the detectable drop: on this runner the trial's
    /// tolerance cannot be honoured without false alarms.
    pub fn spread_exceeds_tolerance(&self) -> bool {
        self.lower_bound
            .is_some_and(|bound| bound < 1.0 - self.tolerance)
    }

    /// The drop as a positive fraction (0.15 = 15% slower); negative when faster.
    pub fn drop(&self) -> f64 {
        1.0 - self.ratio
    }
}

/// The run-to-run spread of blessed `runs` (each run's passes), far slower runs left out: the
/// standard deviation of the logs of their medians, never less than the passes' own noise puts
/// into a median; `None` with fewer than [`MIN_RUNS`] runs.
pub fn spread_of(runs: &[Vec<f64>]) -> Option<f64> {
    BlessedRuns::of(runs).spread()
}

/// The blessed runs a level and spread rest on: all less the far slower ones.
pub struct BlessedRuns<'a> {
    kept: Vec<&'a [f64]>,
    /// The kept runs' medians.
    pub medians: Vec<f64>,
    /// The runs left out (their places among the blessed runs, from 0), in order.
    pub left_out: Vec<usize>,
}

impl<'a> BlessedRuns<'a> {
    /// What a run is judged against: far slower runs left out at [`ALPHA_SLOW`].
    pub fn of(runs: &'a [Vec<f64>]) -> BlessedRuns<'a> {
        BlessedRuns::at(runs, ALPHA_SLOW)
    }

    /// Far slower runs left out at `alpha`.
    pub fn at(runs: &'a [Vec<f64>], alpha: f64) -> BlessedRuns<'a> {
        let all: Vec<&[f64]> = runs.iter().map(Vec::as_slice).collect();
        let medians: Vec<f64> = all.iter().map(|passes| median(passes)).collect();
        let mut left_out = slow_runs(&medians, median_noise(&all), alpha);
        left_out.sort_unstable();
        BlessedRuns {
            kept: kept(&all, &left_out),
            medians: kept(&medians, &left_out),
            left_out,
        }
    }

    /// The geometric mean of the kept runs' medians.
    pub fn level(&self) -> f64 {
        log_mean_sd(&self.medians).0.exp()
    }

    /// As [`spread_of`].
    pub fn spread(&self) -> Option<f64> {
        (self.kept.len() >= MIN_RUNS)
            .then(|| log_mean_sd(&self.medians).1.max(median_noise(&self.kept)))
    }
}

/// The prediction bound's margin (log scale) per unit of spread, for `runs` blessed runs.
fn margin_per_spread(runs: usize) -> f64 {
    student_t_quantile(1.0 - ALPHA, (runs - 1) as f64) * (1.0 + 1.0 / runs as f64).sqrt()
}

/// What would bring the bound at `spread` with `runs` blessed runs within [`WANTED_DROP`]: the
/// runs that would (the t quantile and the bless's own uncertainty shrink with more), and the
/// spread that would with as many runs as now. `None` when it is within already.
fn to_see(spread: f64, runs: usize) -> Option<ToSee> {
    let allowed = -(1.0 - WANTED_DROP).ln();
    if spread * margin_per_spread(runs) <= allowed {
        return None;
    }
    // The margin falls as runs are added: bisect for the fewest that do.
    let fits = |k: usize| spread * margin_per_spread(k) <= allowed;
    let runs_that_do = fits(MOST_RUNS).then(|| {
        let (mut low, mut high) = (runs, MOST_RUNS);
        while high - low > 1 {
            let mid = (low + high) / 2;
            if fits(mid) {
                high = mid;
            } else {
                low = mid;
            }
        }
        high
    });
    let wanted = allowed / margin_per_spread(runs);
    Some(ToSee {
        runs: runs_that_do,
        spread: wanted,
        rounds_factor: (spread / wanted).powi(2),
    })
}

/// The spread a run median gets from its own passes' noise: the within-run scatter of the logs,
/// times √(π/2n) (the median's standard error for n passes). 0 when no run has two passes.
///
/// The scatter is robust (1.4826 × the median absolute deviation of each pass from its run's
/// median, pooled): a run is judged by its median, which one wild pass does not move, so one wild
/// pass in a blessed run must not widen the bound either. A standard deviation did: one pass at a
/// third of the speed, during a moment of contention, blinded a bless to a halved disk.
fn median_noise(runs: &[&[f64]]) -> f64 {
    let usable: Vec<&[f64]> = runs
        .iter()
        .copied()
        .filter(|passes| passes.len() >= 2)
        .collect();
    if usable.is_empty() {
        return 0.0;
    }
    let deviations: Vec<f64> = usable
        .iter()
        .flat_map(|run| {
            let centre = median(run).ln();
            run.iter().map(move |pass| (pass.ln() - centre).abs())
        })
        .collect();
    let per_run = deviations.len() as f64 / usable.len() as f64;
    1.4826 * median(&deviations) * (std::f64::consts::PI / (2.0 * per_run)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five blessed runs whose medians are `levels`, each of five passes within ±1%.
    fn blessed(levels: &[f64]) -> Vec<Vec<f64>> {
        levels
            .iter()
            .map(|&l| vec![l * 0.99, l * 1.0, l * 1.01, l * 0.995, l * 1.005])
            .collect()
    }

    fn passes(level: f64) -> Vec<f64> {
        vec![level * 0.99, level, level * 1.01]
    }

    #[test]
    fn a_run_within_the_spread_is_same_and_a_halved_run_is_slower() {
        let base = blessed(&[1.30, 1.41, 1.16, 1.35, 1.25]);
        let same = Throughput::measure(&base, &passes(1.12), 0.10);
        assert_eq!(same.verdict(), Verdict::Same, "{same:?}");
        let halved = Throughput::measure(&base, &passes(0.65), 0.10);
        assert_eq!(halved.first_run(), Verdict::Slower, "{halved:?}");
        let faster = Throughput::measure(&base, &passes(2.2), 0.10);
        assert_eq!(faster.verdict(), Verdict::Faster);
    }

    #[test]
    fn the_bound_widens_with_the_runners_spread() {
        let quiet = Throughput::measure(&blessed(&[1.30, 1.31, 1.29, 1.30, 1.32]), &[1.0], 0.10);
        let noisy = Throughput::measure(&blessed(&[1.30, 1.60, 1.05, 1.40, 1.15]), &[1.0], 0.10);
        assert!(quiet.lower_bound.unwrap() > noisy.lower_bound.unwrap());
        // Quiet: the tolerance sets the threshold; noisy: the spread does, and it says so.
        assert!(!quiet.spread_exceeds_tolerance());
        assert!((quiet.detectable_drop() - 0.10).abs() < 1e-12);
        assert!(noisy.spread_exceeds_tolerance());
        assert!(noisy.detectable_drop() > 0.2, "{noisy:?}");
    }

    #[test]
    fn a_spread_floor_widens_a_quiet_bless_and_keeps_its_own_runs_t() {
        let quiet = blessed(&[1.30, 1.31, 1.29, 1.30, 1.32]);
        let alone = Throughput::measure(&quiet, &passes(1.2), 0.10);
        let pooled = alone.clone().with_spread_floor(Some(0.08));
        assert_eq!(
            (pooled.spread, pooled.own_spread),
            (Some(0.08), alone.spread)
        );
        let bound = (-0.08 * margin_per_spread(5)).exp();
        assert!((pooled.lower_bound.unwrap() - bound).abs() < 1e-12);
        assert!(pooled.detectable_drop() > alone.detectable_drop());
        // A floor below the trial's own spread, or none, changes nothing.
        let noisy = Throughput::measure(&blessed(&[1.30, 1.60, 1.05, 1.40, 1.15]), &[1.0], 0.10);
        assert_eq!(noisy.clone().with_spread_floor(Some(0.01)), noisy);
        assert_eq!(noisy.clone().with_spread_floor(None), noisy);
    }

    #[test]
    fn within_tolerance_is_same_however_quiet_the_runner() {
        let base = blessed(&[2.00, 2.001, 2.002, 1.999, 2.0]);
        let t = Throughput::measure(&base, &passes(1.90), 0.10);
        assert!(t.ratio < t.lower_bound.unwrap());
        assert_eq!(t.verdict(), Verdict::Same);
    }

    #[test]
    fn pass_noise_sets_a_floor_under_the_spread() {
        // Identical run medians, but passes scattered by ±10%: the medians' agreement is luck.
        let runs: Vec<Vec<f64>> = (0..5).map(|_| vec![0.9, 1.0, 1.1, 0.95, 1.05]).collect();
        let t = Throughput::measure(&runs, &[1.0], 0.10);
        assert!(t.spread.unwrap() > 0.03, "{t:?}");
    }

    #[test]
    fn one_wild_pass_does_not_widen_the_bound() {
        // As seen on a CPU host: six steady runs, one of which had a pass at a third of the speed.
        let mut runs = blessed(&[1.94, 2.01, 1.99, 1.95, 1.91, 2.01]);
        runs[2][1] = 0.64;
        let t = Throughput::measure(&runs, &passes(1.1), 0.10);
        assert!(t.spread.unwrap() < 0.05, "{t:?}");
        assert_eq!(t.first_run(), Verdict::Slower, "{t:?}");
    }

    #[test]
    fn a_far_slower_blessed_run_is_left_out_and_asks_for_one_more_confirmation() {
        // The CPU host's bless from history (run 3 capped at 0.6), then a disk capped at 0.65
        // of the slowest level: a run at 0.74 of the true level passed as fast with run 3 in.
        let runs = blessed(&[1.560, 1.442, 1.075, 1.527, 1.521, 1.556]);
        let mut t = Throughput::measure(&runs, &passes(1.13), 0.10);
        assert_eq!(t.left_out, vec![2]);
        assert_eq!((t.runs_used(), t.baseline.count), (5, 6));
        let kept = [1.560, 1.442, 1.527, 1.521, 1.556];
        let level = (kept.iter().map(|m: &f64| m.ln()).sum::<f64>() / 5.0).exp();
        assert!((t.level - level).abs() < 1e-9, "{t:?}");
        assert_eq!(t.spread, spread_of(&blessed(&kept)));
        assert_eq!(t.first_run(), Verdict::Slower, "{t:?}");
        t.confirm(&passes(1.12));
        assert!(
            t.wants_confirmation(1),
            "a second confirmation where runs were left out"
        );
        t.confirm(&passes(1.14));
        assert!(!t.wants_confirmation(1));
        assert_eq!(t.verdict(), Verdict::Slower);
    }

    #[test]
    fn a_slow_first_run_needs_every_confirmation_to_agree() {
        let base = blessed(&[1.30, 1.31, 1.29, 1.30, 1.32]);
        let mut t = Throughput::measure(&base, &passes(0.9), 0.10);
        assert_eq!(t.first_run(), Verdict::Slower);
        assert!(t.wants_confirmation(2));
        t.confirm(&passes(0.91));
        assert_eq!(t.verdict(), Verdict::Slower);
        assert!(t.wants_confirmation(2) && !t.wants_confirmation(1));
        t.confirm(&passes(1.31));
        assert_eq!(t.verdict(), Verdict::Same);
        assert!(t.cleared_by_confirmation());
        assert!(
            !t.wants_confirmation(5),
            "a cleared trial needs no more runs"
        );
    }

    #[test]
    fn a_trial_that_cannot_see_20_percent_says_what_would_let_it() {
        // 7% spread over 6 runs: the bound is −14%, within reach.
        let quiet =
            Throughput::measure(&blessed(&[1.30, 1.45, 1.20, 1.40, 1.25, 1.32]), &[1.3], 0.1)
                .advise();
        assert!(quiet.detectable_drop() <= WANTED_DROP, "{quiet:?}");
        assert_eq!(quiet.to_see, None);
        // 13%: more blessed runs would do, or a spread of 10.3% with six.
        let wider =
            Throughput::measure(&blessed(&[1.30, 1.55, 1.10, 1.45, 1.15, 1.32]), &[1.3], 0.1)
                .advise();
        let needed = wider.to_see.expect("cannot see 20%");
        let runs = needed.runs.expect("some number of runs would do");
        assert!(runs > 6 && runs < MOST_RUNS, "{needed:?}");
        assert!(wider.spread.unwrap() * margin_per_spread(runs - 1) > -(0.8f64.ln()));
        assert!((needed.spread + 0.8f64.ln() / margin_per_spread(6)).abs() < 1e-12);
        assert!(needed.spread < wider.spread.unwrap());
        // With that many runs at that spread the bound is within 20%.
        assert!(wider.spread.unwrap() * margin_per_spread(runs) <= 0.2232);
        // Over 22.3%/1.645 = 13.6%, no number of runs would: the spread itself must fall.
        let noisy =
            Throughput::measure(&blessed(&[1.84, 1.66, 1.08, 1.62, 1.02, 1.84]), &[1.5], 0.1)
                .advise();
        assert_eq!(noisy.to_see.unwrap().runs, None, "{noisy:?}");
    }

    #[test]
    fn too_few_blessed_runs_leave_the_tolerance_alone() {
        let t = Throughput::measure(&[vec![2.0, 2.1, 1.9]], &passes(1.7), 0.10);
        assert_eq!((t.spread, t.lower_bound), (None, None));
        assert_eq!(t.first_run(), Verdict::Slower);
        assert!((t.detectable_drop() - 0.10).abs() < 1e-12);
    }
}
