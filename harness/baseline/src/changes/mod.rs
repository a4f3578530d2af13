//! Change points over a trial's history: where the level of its run medians shifted on one runner,
//! and whether the shifts added up to a creep below its baseline that no single run shows.
//!
//! Each run is judged against the baseline alone (`decision`), so three upgrades that each cost 5%
//! stay inside a 14–24% noise band and never fail, yet together cost 15%. The history sees them.
//!
//! **Method: E-Divisive means**, as MongoDB's and Apache Otava's performance CI run it (Daly et al.,
//! ICPE 2020; Fleming et al., "Hunter", ICPE 2023): hierarchical (binary) segmentation of the
//! whole history. A segment is split where the two sides' means differ most (E-Divisive's
//! divergence with exponent 2 is the difference of means weighted by `nm/(n+m)`, the two-sample
//! statistic), and the split is kept when it is significant; then each side is searched again.
//! - **Log scale.** Throughput noise is multiplicative, so the values are the logs of the run
//!   medians (as in `decision`): a level shift of −5% is the same step at 1 GB/s and at 20 GB/s.
//! - **The run is the sample.** Run medians of an unchanged system move by 7.5–18.6% CV on the
//!   H200 runner while passes agree to 2–8%, so only run medians go in.
//! - **Significance pays for the search.** The best of ~190 splits of pure noise is far more
//!   extreme than one split chosen beforehand, and by how much depends on the history's length,
//!   so a fixed per-split threshold cannot hold a false-alarm rate. The p-value of the best split
//!   is family-wise over every split searched: Student's t (Hunter's replacement for E-Divisive's
//!   permutations: deterministic, O(n)) turned into the z with the same tail, then the
//!   approximation of James, James & Siegmund (1987) for the maximum of the standardized
//!   statistic over all splits, with Siegmund's discrete-time correction ([`split`]). A split is
//!   kept at p ≤ [`ALPHA`] = 0.5%: 0.3–0.5% of simulated stationary histories of 200 runs show
//!   any change point, half the ≤ 1% target, leaving room for runs that are not quite
//!   independent (a drifting runner), which the simulation does not have.
//! - **Minimum segment [`MIN_SEGMENT`] = 5 runs**, so a change point can be seen five runs after
//!   it (a halved disk five runs on is a t above 10), but it is only **confirmed** once the new
//!   level held for [`CONFIRM_RUNS`] = 10 runs, as Perfherder waits for a fore window of 12:
//!   before that it is shown, marked tentative, and fails nothing.
//! - **Robust to a wild run.** Each segment's logs are winsorized at [`WINSOR`] = 3 robust standard
//!   deviations (1.4826 × MAD) from its median before the means are taken, so a run slowed by a
//!   neighbour's burst counts as one unusual run rather than a level; the levels reported are the
//!   same winsorized geometric means.
//!
//! [`creep`] answers the gate's question: is the level after the latest confirmed change point
//! (up to the next one or the latest run) below the baseline's level by more than the trial's
//! tolerance? A single shift inside the tolerance does not fail; shifts that add up past it do.
//! `crate::creep` asks it in a gate run, over the trial's runs since its bless, through
//! [`held_creep`]: a creep found at any of the last [`HOLD_RUNS`] runs holds until the level is
//! found back, so that one fast run does not clear it.
//!
//! What it can see is set by the runner's run-to-run spread, not by the tolerance; from
//! `cargo xtask bench --stats` ([`simulate`]), three −5% steps 20 runs apart, 10 runs after the
//! third: at 7.5% CV all are flagged; at 12%, 93% (the gate, asking [`held_creep`], fails on 73%
//! then against the true level, on 90% after 25 runs); at 18.6%, 47% (flagged in 90% after 40
//! runs). A step too small to be told apart from its neighbour leaves the latest segment mixing
//! two levels, which is why the gate answers later than the change point is flagged. The price,
//! at 12%: one −5% step, within a 10% tolerance, fails the gate 50 runs on in 4.3% of histories
//! against the true level, and in 9.5% against a level blessed from 6 runs, whose own noise it
//! inherits.
//!
//! The bless is a change point too ([`shift_at_bless`]): a level that moved with the bless has
//! none among the runs after it. At 12%, every run 20% below the blessed level fails the gate on
//! the creep alone by run 11 in 59% of histories.

pub mod series;
pub mod simulate;
pub mod split;

use serde::{Deserialize, Serialize};

pub use series::series;

/// Family-wise significance a split must reach (see the module documentation).
pub const ALPHA: f64 = 0.005;

/// The fewest runs a split may leave on either side.
pub const MIN_SEGMENT: usize = 5;

/// Runs a new level must hold before its change point is confirmed and may fail the gate.
pub const CONFIRM_RUNS: usize = 10;

/// Robust standard deviations beyond which a run's log level is pulled in before means are taken.
pub const WINSOR: f64 = 3.0;

/// Runs either side of a change point within which a change on the runner is attached to it: the
/// search cannot place a change point more finely than its minimum segment.
pub const NEAR_RUNS: usize = MIN_SEGMENT;

/// One run of one trial on one runner, in the order the runs happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// When the run started (RFC 3339, as `history.jsonl` keeps it).
    pub time: String,
    /// The run's median, GB/s.
    pub median_gbps: f64,
    /// What changed on the runner at this run against the one before it, one line each
    /// (`driver: 570.86 → 580.159`); empty when nothing did.
    pub changes: Vec<String>,
}

/// The search's knobs; [`Options::default`] is what the gate uses and `bench --stats` measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    pub alpha: f64,
    pub min_segment: usize,
    pub confirm_runs: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: ALPHA,
            min_segment: MIN_SEGMENT,
            confirm_runs: CONFIRM_RUNS,
        }
    }
}

/// A run left out of the search, with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// Index into the runs given to [`find`].
    pub index: usize,
    pub time: String,
    pub reason: String,
}

/// A change on the runner near a change point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NearbyChange {
    /// Index of the run it was first seen at, into the runs searched (from 0).
    pub index: usize,
    pub time: String,
    pub change: String,
}

/// A level shift of a trial's run medians.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangePoint {
    /// The first run at the new level, as an index into the runs searched (from 0; for a creep,
    /// the trial's runs on this runner since its bless).
    pub index: usize,
    /// That run's time.
    pub time: String,
    /// The last run at the new level (before the next change point, or the latest run), as an
    /// index into the runs searched.
    pub last_index: usize,
    /// That run's time.
    pub last_time: String,
    /// Level of the runs since the previous change point (winsorized geometric mean), GB/s.
    pub before: f64,
    /// Level of the runs up to the next change point, GB/s.
    pub after: f64,
    /// `after / before` (0.95 = 5% slower).
    pub ratio: f64,
    /// The chance that the segment it was found in, without any shift, shows a split this strong
    /// somewhere (family-wise over every split searched).
    pub p_value: f64,
    /// Runs at the new level: up to the next change point, or to the latest run.
    pub runs_after: usize,
    /// The new level held for 10 runs (`CONFIRM_RUNS`): only then may it fail a run.
    pub confirmed: bool,
    /// Changes on the runner within 5 runs of it (`NEAR_RUNS`; each to its nearest change point).
    pub runner_changes: Vec<NearbyChange>,
}

/// What [`find`] saw in a history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Changes {
    /// In run order.
    pub change_points: Vec<ChangePoint>,
    /// Runs the search left out.
    pub skipped: Vec<Skipped>,
    /// Runs the search used.
    pub runs: usize,
    /// Why no change point could be looked for, when the history is too short.
    pub too_short: Option<String>,
    /// The runs before the first change point (every run when there is none): the level the
    /// runs started at, which [`shift_at_bless`] compares with the blessed runs.
    #[serde(skip)]
    pub first: Option<Segment>,
}

/// A stretch of usable runs at one level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segment {
    /// The logs of their medians, in run order.
    pub logs: Vec<f64>,
    /// Its first and last run, as indices into the runs searched, and their times.
    pub first: usize,
    pub last: usize,
    pub first_time: String,
    pub last_time: String,
}

/// Finds the level shifts in `runs` (one trial on one runner, in time order) with the default
/// [`Options`]. Runs whose median is not a positive finite number are left out, each with a reason.
pub fn find(runs: &[Run]) -> Changes {
    find_with(runs, &Options::default())
}

pub fn find_with(runs: &[Run], options: &Options) -> Changes {
    let mut skipped = Vec::new();
    // Indices (into `runs`) and logs of the usable runs.
    let mut kept: Vec<usize> = Vec::with_capacity(runs.len());
    let mut logs: Vec<f64> = Vec::with_capacity(runs.len());
    for (index, run) in runs.iter().enumerate() {
        let m = run.median_gbps;
        if m.is_finite() && m > 0.0 && m.ln().is_finite() {
            kept.push(index);
            logs.push(m.ln());
        } else {
            skipped.push(Skipped {
                index,
                time: run.time.clone(),
                reason: format!("median {m} GB/s is not a positive finite rate; left out"),
            });
        }
    }
    let min_segment = options.min_segment.max(2);
    let needed = 2 * min_segment;
    let first_segment = |end: usize| {
        (end > 0).then(|| Segment {
            logs: logs[..end].to_vec(),
            first: kept[0],
            last: kept[end - 1],
            first_time: runs[kept[0]].time.clone(),
            last_time: runs[kept[end - 1]].time.clone(),
        })
    };
    if logs.len() < needed {
        return Changes {
            change_points: Vec::new(),
            skipped,
            runs: logs.len(),
            too_short: Some(format!(
                "{} usable run(s); a change point needs {min_segment} runs on each side, so {needed} at least",
                logs.len()
            )),
            first: first_segment(logs.len()),
        };
    }
    let splits = segment(&logs, min_segment, options.alpha);
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(splits.iter().map(|(at, _)| *at));
    bounds.push(logs.len());
    let levels: Vec<f64> = bounds
        .windows(2)
        .map(|w| split::robust_mean(&logs[w[0]..w[1]], WINSOR).exp())
        .collect();
    let mut change_points: Vec<ChangePoint> = splits
        .iter()
        .enumerate()
        .map(|(i, &(at, p_value))| {
            let runs_after = bounds[i + 2] - at;
            let index = kept[at];
            let last_index = kept[bounds[i + 2] - 1];
            ChangePoint {
                index,
                time: runs[index].time.clone(),
                last_index,
                last_time: runs[last_index].time.clone(),
                before: levels[i],
                after: levels[i + 1],
                ratio: levels[i + 1] / levels[i],
                p_value,
                runs_after,
                confirmed: runs_after >= options.confirm_runs,
                runner_changes: Vec::new(),
            }
        })
        .collect();
    attach_runner_changes(runs, &mut change_points);
    Changes {
        change_points,
        skipped,
        runs: logs.len(),
        too_short: None,
        first: first_segment(bounds[1]),
    }
}

/// Binary segmentation: the significant splits of `logs`, as (position, p-value), in order.
fn segment(logs: &[f64], min_segment: usize, alpha: f64) -> Vec<(usize, f64)> {
    let mut found = Vec::new();
    let mut pending = vec![(0, logs.len())];
    while let Some((start, end)) = pending.pop() {
        let Some(best) = split::best_split(&logs[start..end], min_segment, WINSOR) else {
            continue;
        };
        if best.p_value <= alpha {
            let at = start + best.at;
            found.push((at, best.p_value));
            pending.push((start, at));
            pending.push((at, end));
        }
    }
    found.sort_by_key(|&(at, _)| at);
    found
}

/// Gives each change on the runner to the nearest change point within [`NEAR_RUNS`] runs (the
/// earlier one on a tie).
fn attach_runner_changes(runs: &[Run], change_points: &mut [ChangePoint]) {
    for (index, run) in runs.iter().enumerate() {
        if run.changes.is_empty() {
            continue;
        }
        let nearest = change_points
            .iter()
            .enumerate()
            .map(|(i, cp)| (cp.index.abs_diff(index), i))
            .filter(|&(distance, _)| distance <= NEAR_RUNS)
            .min();
        if let Some((_, i)) = nearest {
            change_points[i]
                .runner_changes
                .extend(run.changes.iter().map(|change| NearbyChange {
                    index,
                    time: run.time.clone(),
                    change: change.clone(),
                }));
        }
    }
}

/// A creep: the level since a confirmed change point is below the baseline by more than the
/// tolerance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Creep {
    /// The latest confirmed change point, whose level is the one judged.
    pub change_point: ChangePoint,
    /// The change points before it, in run order: the steps that added up to it.
    #[serde(default)]
    pub earlier: Vec<ChangePoint>,
    /// Runs the search used.
    pub runs: usize,
    /// Its level over the baseline's (0.85 = 15% slower).
    pub ratio: f64,
    /// The baseline's level, GB/s.
    pub baseline_level: f64,
    /// The allowed drop, as a fraction (0.10 = 10%).
    pub tolerance: f64,
}

impl Creep {
    /// The drop below the baseline as a positive fraction (0.15 = 15% slower).
    pub fn drop(&self) -> f64 {
        1.0 - self.ratio
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CreepError {
    #[error(
        "a baseline level of {0} GB/s cannot be compared with; it must be a positive finite rate (bless the trial again)"
    )]
    BaselineLevel(f64),
    #[error(
        "a tolerance of {0} cannot be compared with; it must be a fraction from 0 up to 1 (`expect.tolerance`)"
    )]
    Tolerance(f64),
}

/// The baseline a creep is measured against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference<'a> {
    /// Its level, GB/s: the geometric mean of the blessed run medians.
    pub level: f64,
    /// The blessed run medians, GB/s, whose own scatter a shift at the bless must exceed; empty
    /// when the level is known exactly (a simulation's true level).
    pub runs: &'a [f64],
}

impl Reference<'_> {
    /// A level known exactly.
    pub fn exact(level: f64) -> Reference<'static> {
        Reference { level, runs: &[] }
    }
}

/// A shift at the bless itself: the runs since the bless, up to the first change point among
/// them, at a level the blessed runs do not explain (Welch's t on the logs, each side winsorized
/// as a segment is, two-sided p ≤ [`ALPHA`]). A level that moved with the bless (a throttle or an
/// upgrade that came with it, or a bless whose runs caught a fast spell) has no change point among
/// the runs after it, and when its runs stay inside a wide blessed band the run-by-run decision
/// does not see it either; without this it would pass for ever. `None` when the reference has
/// 1 or 2 runs (their scatter is unknown, as in `decision`) or the segment fewer than 2.
pub fn shift_at_bless(changes: &Changes, reference: Reference<'_>) -> Option<ChangePoint> {
    let segment = changes.first.as_ref()?;
    if (1..super::decision::MIN_RUNS).contains(&reference.runs.len()) {
        return None;
    }
    let blessed: Vec<f64> = reference.runs.iter().map(|m| m.ln()).collect();
    if blessed.iter().any(|l| !l.is_finite()) {
        return None;
    }
    let p_value = split::welch_p_value(&blessed, reference.level.ln(), &segment.logs, WINSOR)?;
    let after = split::robust_mean(&segment.logs, WINSOR).exp();
    (p_value <= ALPHA).then(|| ChangePoint {
        index: segment.first,
        time: segment.first_time.clone(),
        last_index: segment.last,
        last_time: segment.last_time.clone(),
        before: reference.level,
        after,
        ratio: after / reference.level,
        p_value,
        runs_after: segment.logs.len(),
        confirmed: segment.logs.len() >= CONFIRM_RUNS,
        runner_changes: Vec::new(),
    })
}

/// The gate's question: is there a confirmed change point, the bless included
/// ([`shift_at_bless`]), whose level (the latest confirmed one, up to the next change point or
/// the latest run) is below the reference's level (GB/s) by more than `tolerance` (0.10 = 10%)?
///
/// A later tentative change point does not move the answer until it is confirmed: a dip of a few
/// runs does not fail the gate, and neither does an unconfirmed recovery clear it. Runs that
/// stayed at the blessed level, however noisy, never creep: that is the run-by-run decision's to
/// judge.
pub fn creep(
    changes: &Changes,
    reference: Reference<'_>,
    tolerance: f64,
) -> Result<Option<Creep>, CreepError> {
    let baseline_level = reference.level;
    if !(baseline_level.is_finite() && baseline_level > 0.0) {
        return Err(CreepError::BaselineLevel(baseline_level));
    }
    if !(0.0..1.0).contains(&tolerance) {
        return Err(CreepError::Tolerance(tolerance));
    }
    let points: Vec<ChangePoint> = shift_at_bless(changes, reference)
        .into_iter()
        .chain(changes.change_points.iter().cloned())
        .collect();
    let Some(at) = points.iter().rposition(|cp| cp.confirmed) else {
        return Ok(None);
    };
    let latest = &points[at];
    let ratio = latest.after / baseline_level;
    Ok((ratio < 1.0 - tolerance).then(|| Creep {
        change_point: latest.clone(),
        earlier: points[..at].to_vec(),
        runs: changes.runs,
        ratio,
        baseline_level,
        tolerance,
    }))
}

/// Runs for which a creep, once found, holds without being found again (see [`held_creep`]).
pub const HOLD_RUNS: usize = CONFIRM_RUNS;

/// [`creep`] as the gate asks it after each run: a creep found over the history as it stood at
/// any of the last [`HOLD_RUNS`] runs still holds, unless a search since found the level back (a
/// confirmed change point after the creep's, within the tolerance of the baseline). Searched
/// afresh at each run alone, one fast run right after a confirmed creep can tip the best split
/// below significance and clear it for that run (seen in the creep drill), so that a real creep
/// would fail only every other run. A creep no search finds for [`HOLD_RUNS`] runs lapses.
pub fn held_creep(
    runs: &[Run],
    reference: Reference<'_>,
    tolerance: f64,
) -> Result<Option<Creep>, CreepError> {
    hold(&recent_searches(runs), reference, tolerance)
}

/// The searches [`held_creep`] looks at, oldest first: the history as it stood at each of the
/// last [`HOLD_RUNS`] runs. The last is the whole history's.
pub fn recent_searches(runs: &[Run]) -> Vec<Changes> {
    (runs.len().saturating_sub(HOLD_RUNS - 1)..=runs.len())
        .map(|end| find(&runs[..end]))
        .collect()
}

/// [`held_creep`] over searches already made ([`recent_searches`]): asked against several
/// baselines, the searches are made once.
pub fn hold(
    searches: &[Changes],
    reference: Reference<'_>,
    tolerance: f64,
) -> Result<Option<Creep>, CreepError> {
    let baseline_level = reference.level;
    let mut held: Option<Creep> = None;
    for changes in searches {
        match creep(changes, reference, tolerance)? {
            Some(found) => held = Some(found),
            None => {
                let back = |creep: &Creep| {
                    changes.change_points.iter().any(|cp| {
                        cp.confirmed
                            && cp.index > creep.change_point.index
                            && cp.after / baseline_level >= 1.0 - tolerance
                    })
                };
                if held.as_ref().is_some_and(back) {
                    held = None;
                }
            }
        }
    }
    Ok(held)
}

#[cfg(test)]
mod tests;
