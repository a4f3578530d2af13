//! The words of a creep ([`Judgement::Creep`](crate::Judgement::Creep)): what level the trial's
//! runs crept to and over which runs, since which bless; the steps that added up to it and the
//! runner's changes near each; what to do next.

use std::fmt::Write;

use super::{Context, baseline_figures, change, gbps, number, percent, run_figures};
use crate::changes::{CONFIRM_RUNS, ChangePoint, Creep};
use crate::decision::Throughput;
use crate::judgement::Expected;
use gds_model::units::Rate;

/// What the creep's judgement needs said, beside the trial's name and the bless command.
pub(super) struct CreepFacts<'a> {
    pub throughput: &'a Throughput,
    pub creep: &'a Creep,
    pub since: &'a str,
    pub entry: &'a Expected,
}

/// `runs 51–60`: a change point's runs at its new level, counted from 1 since the bless.
fn runs_of(point: &ChangePoint) -> String {
    format!("runs {}–{}", point.index + 1, point.last_index + 1)
}

/// `run 31 (2026-03-02T06:00:00Z) 2.00 → 1.90 (−5.0%)`
fn step(rate: Rate, point: &ChangePoint) -> String {
    format!(
        "run {} ({}) {} → {} ({})",
        point.index + 1,
        point.time,
        number(rate, point.before),
        number(rate, point.after),
        change(point.ratio)
    )
}

/// The runner's changes near a change point, or `None` when its fingerprint saw none.
fn near(point: &ChangePoint) -> Option<String> {
    (!point.runner_changes.is_empty()).then(|| {
        let changes: Vec<String> = point
            .runner_changes
            .iter()
            .map(|c| format!("{} (run {}, {})", c.change, c.index + 1, c.time))
            .collect();
        format!("near run {}: {}", point.index + 1, changes.join("; "))
    })
}

pub(super) fn words(
    ctx: &Context<'_>,
    trial: &str,
    facts: &CreepFacts<'_>,
    bless: &str,
) -> (String, String) {
    let CreepFacts {
        throughput: t,
        creep,
        since,
        entry,
    } = facts;
    let point = &creep.change_point;
    let rate = ctx.rate;
    let headline = format!(
        "level crept below the baseline: {} vs {} ({}) over {} since the bless",
        number(rate, point.after),
        gbps(rate, t.level),
        change(creep.ratio),
        runs_of(point)
    );
    let mut steps: Vec<String> = creep.earlier.iter().map(|p| step(rate, p)).collect();
    steps.push(step(rate, point));
    let mut nearby: Vec<String> = creep.earlier.iter().filter_map(near).collect();
    nearby.extend(near(point));
    let cause = if nearby.is_empty() {
        let mut cause = format!(
            "the runner's fingerprint (GPU, driver, CUDA, cuFile, KvikIO, nvidia-fs, kernel, file system, cufile.json) did not change near these steps: look at what changed on the runner around run {} that it does not see (storage firmware, a fuller or busier disk, an I/O throttle, other jobs, the trial's settings)",
            point.index + 1
        );
        if let Some(since_bless) = ctx.fingerprint_cause() {
            let _ = write!(cause, "; {since_bless}");
        }
        cause
    } else {
        nearby.join("; ")
    };
    let message = format!(
        "{trial}: the level of its runs fell by {:.1}% over {} of the {} since the bless of {since}, below the baseline by more than the tolerance of {}: the runs since the bless show what this run alone does not\n  expected: about {} ({}), path `{}`\n  seen:     {} over {} ({} to {}), a level shift confirmed once it held for {CONFIRM_RUNS} runs (p = {:.1e}); the steps since the bless: {}; this run alone ({}): {}\n  likely cause: {cause}\n  next: find what changed near run {} ({}) and undo it (the gate passes again once the restored level has held for {CONFIRM_RUNS} runs); summary.md's level shifts and the trial's plot show every step; if the new level is intended, bless it on this runner:\n        {bless}",
        creep.drop() * 100.0,
        runs_of(point),
        creep.runs,
        percent(creep.tolerance),
        gbps(rate, t.level),
        baseline_figures(rate, entry, ctx.baseline_path),
        entry.path,
        gbps(rate, point.after),
        runs_of(point),
        point.time,
        point.last_time,
        point.p_value,
        steps.join(", "),
        change(t.ratio),
        run_figures(rate, t),
        point.index + 1,
        point.time,
    );
    (headline, message)
}
