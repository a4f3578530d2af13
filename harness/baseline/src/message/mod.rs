//! The words of a judgement: a one-line headline and a one-screen message with what was
//! expected, what was seen, the likely cause and the exact command to run next. Rendered when a
//! sink writes them ([`Explainer`]), never stored beside the judgement.

mod creep;
mod latency;
mod load;
mod rise;
mod scope;

pub use scope::{Scope, Source};

use std::fmt::Write;
use std::path::Path;

use super::compare::{Comparison, TrialJudgement};
use super::cost::Cost;
use super::decision::{BLESS_RUNS, Throughput, ToSee, WANTED_DROP};
use super::fingerprint::{self, FieldChange, Fingerprint};
use super::judgement::{Cleared, Expected, Judgement, Missing};
use super::stats::Summary;
use crate::control::{describe, host, words};
use gds_model::cost::format_micros;
use gds_model::hex;
use gds_model::record::{TrialRecord, short_time};
use gds_model::units::Rate;

pub struct Context<'a> {
    pub runner: &'a str,
    pub baseline_path: &'a Path,
    pub scope: &'a Scope,
    /// The unit rates are shown in (`--units`).
    pub rate: Rate,
    pub changes: &'a [FieldChange],
    /// Whether nvidia-fs was loaded for the run; `true` when unknown, so that no hint blames it.
    pub nvidia_fs_loaded: bool,
}

/// A judgement in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Words {
    /// One line, for the summary table and next to `ok` / `FAILED`.
    pub headline: String,
    /// One screen: what was expected, what was seen, the likely cause, what to do.
    pub message: String,
}

/// Words a whole comparison's judgements, with the run's records and fingerprint it quotes, and
/// the run's scope that its bless commands carry.
#[derive(Clone, Copy)]
pub struct Explainer<'a> {
    pub comparison: &'a Comparison,
    pub records: &'a [TrialRecord],
    pub fingerprint: Option<&'a Fingerprint>,
    pub scope: &'a Scope,
    /// The unit rates are shown in (`--units`).
    pub rate: Rate,
}

impl Explainer<'_> {
    pub fn words(&self, judged: &TrialJudgement) -> Words {
        let context = Context {
            runner: &self.comparison.runner,
            baseline_path: &self.comparison.baseline_path,
            scope: self.scope,
            rate: self.rate,
            changes: &self.comparison.fingerprint_changes,
            nvidia_fs_loaded: self.fingerprint.is_none_or(|f| f.nvidia_fs_loaded),
        };
        let record = self.records.iter().find(|r| r.name == judged.trial);
        explain(
            &context,
            &judged.trial,
            judged.expected.as_ref(),
            record,
            &judged.judgement,
        )
    }
}

impl Context<'_> {
    fn runner_changed(&self) -> bool {
        fingerprint::changed(self.changes).next().is_some()
    }

    /// `the runner changed since the baseline was blessed: driver 570.86 → 580.159; …`
    fn fingerprint_cause(&self) -> Option<String> {
        let changes: Vec<String> = fingerprint::changed(self.changes)
            .map(ToString::to_string)
            .collect();
        (!changes.is_empty()).then(|| {
            format!(
                "the runner changed since the baseline was blessed: {}",
                changes.join("; ")
            )
        })
    }
}

/// The bless command for this runner (and one trial), with `--accept-fingerprint` when the
/// runner changed, since bless refuses without it, and the run's selection flags.
pub fn bless_command(
    runner: &str,
    baseline_path: &Path,
    scope: &Scope,
    trial: Option<&str>,
    accept_fingerprint: bool,
    remove_missing: bool,
) -> String {
    let mut command = format!("cargo xtask gds-gate bless --runner {}", quote(runner));
    if let Some(dir) = baseline_path.parent()
        && dir != Path::new("baselines")
        && !dir.as_os_str().is_empty()
    {
        let _ = write!(
            command,
            " --baselines {}",
            quote(&dir.display().to_string())
        );
    }
    if accept_fingerprint {
        command.push_str(" --accept-fingerprint");
    }
    if remove_missing {
        command.push_str(" --remove-missing");
    }
    command.push_str(&scope.args());
    if let Some(trial) = trial {
        let _ = write!(command, " --exact {}", quote(trial));
    }
    command
}

/// Single quotes unless the word is plainly safe for a POSIX shell.
pub fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `3.10 GB/s` (or GiB/s under `--units gib`).
pub fn gbps(rate: Rate, value: f64) -> String {
    rate.rate(value)
}

/// `3.10`: a throughput beside one printed with its label.
pub fn number(rate: Rate, value: f64) -> String {
    rate.number(value, 2)
}

pub fn cpu_per_gib(value: f64) -> String {
    format!("{value:.3} CPU s/GiB")
}

/// `−15.2%` / `+3.0%` for a run/baseline ratio.
pub fn change(ratio: f64) -> String {
    let percent = (ratio - 1.0) * 100.0;
    if percent < 0.0 {
        format!("−{:.1}%", -percent)
    } else {
        format!("+{percent:.1}%")
    }
}

fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// `5 blessed run(s), run medians 1.16–1.41, blessed 2026-03-01T12:00:00Z in `baselines/r1.yaml``
fn baseline_figures(rate: Rate, entry: &Expected, file: &Path) -> String {
    let medians = Summary::of(&entry.run_medians_gbps);
    format!(
        "{} blessed run(s), run medians {}–{}, blessed {} in `{}`",
        medians.count,
        number(rate, medians.min),
        number(rate, medians.max),
        entry.blessed_at,
        file.display()
    )
}

/// `1.08 GB/s (−18.2%), 1.10 GB/s (−16.7%)`: each ratio as GB/s and as a change.
fn at_level(rate: Rate, t: &Throughput, ratios: &[f64]) -> String {
    ratios
        .iter()
        .map(|r| format!("{} ({})", gbps(rate, r * t.level), change(*r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `, its confirmation run did not: …`, or with earlier confirmations that looked slower too
/// (confirmations run for as long as each looks slower): `, and so did confirmation run 1 (…);
/// confirmation run 2 did not: …`.
fn cleared_by(rate: Rate, t: &Throughput) -> String {
    let Some((last, before)) = t.confirmations.split_last() else {
        return String::new();
    };
    let last = at_level(rate, t, &[*last]);
    match before.len() {
        0 => format!(", its confirmation run did not: {last}"),
        1 => format!(
            ", and so did confirmation run 1 ({}); confirmation run 2 did not: {last}",
            at_level(rate, t, before)
        ),
        n => format!(
            ", and so did confirmation runs 1-{n} ({}); confirmation run {} did not: {last}",
            at_level(rate, t, before),
            n + 1
        ),
    }
}

/// `; its CPU per GiB looked higher (0.526 vs 0.229 CPU s/GiB); confirmation run(s): 0.210 CPU
/// s/GiB`: why a run that passed took confirmation runs.
fn cleared_cost(cleared: &Cleared) -> String {
    let (what, cost, shown): (String, &Cost, fn(f64) -> String) = match cleared {
        Cleared::Cpu { cost } => ("CPU per GiB looked higher".into(), cost, cpu_per_gib),
        Cleared::Load { step, cost } => {
            (format!("{} looked longer", step.name()), cost, short_time)
        }
        Cleared::Latency { percentile, cost } => (
            format!("{} read latency looked higher", percentile.name()),
            cost,
            format_micros,
        ),
    };
    let confirmations: Vec<String> = cost
        .confirmation_ratios()
        .iter()
        .map(|ratio| shown(ratio * cost.level()))
        .collect();
    format!(
        "; its {what} ({} vs {}); confirmation run(s): {}",
        shown(cost.run_median()),
        shown(cost.level()),
        confirmations.join(", ")
    )
}

fn run_figures(rate: Rate, t: &Throughput) -> String {
    let mut text = format!(
        "{} median of {} passes, range {}–{}",
        gbps(rate, t.run.median),
        t.run.count,
        number(rate, t.run.min),
        number(rate, t.run.max)
    );
    if !t.confirmations.is_empty() {
        let _ = write!(
            text,
            "; confirmation run(s): {}",
            at_level(rate, t, &t.confirmations)
        );
    }
    text
}

/// `; to see a 20% drop: …`: what would bring the bound within [`WANTED_DROP`].
fn to_see(needed: &ToSee, runs: usize) -> String {
    let spread = format!(
        "a run-to-run spread of {:.1}% or less (a quieter disk, or {:.1}× the `rounds:` and passes where runs differ process by process)",
        needed.spread * 100.0,
        needed.rounds_factor
    );
    match needed.runs {
        Some(more) => format!(
            "; to see a {} drop: bless from {more} runs instead of {runs}, or {spread}",
            percent(WANTED_DROP)
        ),
        None => format!(
            "; to see a {} drop: {spread}; no number of blessed runs would do at this spread",
            percent(WANTED_DROP)
        ),
    }
}

/// `run 3 and run 5 far slower than the rest, left out`: the blessed runs (places from 0) a
/// level and spread leave out ([`crate::slow_runs`]), as bless and the threshold line say it.
pub fn runs_left_out(runs: &[usize]) -> String {
    let runs: Vec<String> = runs.iter().map(|k| format!("run {}", k + 1)).collect();
    format!("{} far slower than the rest, left out", runs.join(" and "))
}

/// Where the line between noise and slower lies for this trial, and what set it.
pub fn threshold(rate: Rate, t: &Throughput) -> String {
    let left_out = match t.left_out.as_slice() {
        [] => String::new(),
        runs => format!(
            ", over {} of {} blessed runs: {}",
            t.runs_used(),
            t.baseline.count,
            runs_left_out(runs)
        ),
    };
    let line = format!(
        "slower means below {} ({} of the level {}{left_out})",
        gbps(rate, t.level * t.slower_below()),
        change(t.slower_below()),
        gbps(rate, t.level)
    );
    // A spread that is its scenario's, pooled, says so: the trial's own was narrower.
    let spread_text = |spread: f64| match t.own_spread {
        Some(own) => format!(
            "{:.1}%, pooled over its scenario's trials on this path; its own {:.1}%",
            spread * 100.0,
            own * 100.0
        ),
        None => format!("{:.1}%", spread * 100.0),
    };
    match (t.spread, t.lower_bound) {
        (Some(spread), Some(bound)) if t.spread_exceeds_tolerance() => format!(
            "{line}: this runner's run-to-run spread ({}) explains drops up to {}, more than the tolerance of {}: smaller drops cannot be told from noise here{}",
            spread_text(spread),
            percent(1.0 - bound),
            percent(t.tolerance),
            t.to_see
                .map_or_else(String::new, |needed| to_see(&needed, t.runs_used()))
        ),
        (Some(spread), Some(_)) => format!(
            "{line}: the tolerance of {} (this runner's run-to-run spread, {}, explains less)",
            percent(t.tolerance),
            spread_text(spread)
        ),
        _ => format!(
            "{line}: the tolerance of {} alone, since {} blessed run(s) cannot show this runner's run-to-run spread (bless with --runs {} or more)",
            percent(t.tolerance),
            t.baseline.count,
            BLESS_RUNS
        ),
    }
}

/// What the runner's control said before the last confirmation run, as the start of a likely
/// cause: a slow or busy runner points away from the GDS stack, a runner at its level in
/// everything the trial depends on (and a host no busier than at bless) points at it.
fn runner_condition(record: &TrialRecord) -> String {
    let Some(check) = record.runner_checks.last() else {
        return String::new();
    };
    let waited = if check.waited_s > 0.0 {
        format!(", after waiting {:.0} s for it", check.waited_s)
    } else {
        String::new()
    };
    let mut now = describe(check.disk, check.cpu, check.cpu_share);
    if let Some(memory) = check.memory {
        let _ = write!(now, ", memory {memory:.2} of its blessed level");
    }
    if !check.at_level_throughout() {
        let off: Vec<String> = [words::what_was_off(check), words::busy_during(check)]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect();
        if off.is_empty() {
            // A report of an older gate: it recorded that the runner was slow, not what.
            return format!(
                "the runner itself is slower or busier than when it was blessed (the gate's control read: {now}{waited}); look at the disk and the host first (an I/O throttle, a degraded or busier disk, other jobs or VMs on the host); "
            );
        }
        return format!(
            "the runner was not at its level when the confirmation ran, so the slowdown is not shown to be this trial's: {}{waited}; look at the host and the disk first (other jobs or VMs on the host, another gate on the same runner, an I/O throttle, a degraded disk) and run again on a quiet runner; ",
            off.join("; ")
        );
    }
    let host = check.host.map_or_else(String::new, |h| {
        format!(
            "; the host: {}",
            host::describe(&h, check.host_blessed.as_ref(), &[])
        )
    });
    let missing = check.not_compared();
    if !missing.is_empty() {
        let baseline_lacks =
            check.host_blessed.is_none() || (check.needs.memory && check.memory.is_none());
        let why = if baseline_lacks {
            "whose baseline lacks them (bless again to record them)"
        } else {
            "since /proc could not be read"
        };
        return format!(
            "the gate's control read was at its level ({now}{host}{waited}), but {} could not be compared with the bless, {why}, so the slowdown is not shown to be this trial's own; ",
            missing.join(" and ")
        );
    }
    format!(
        "the runner was at its level when the confirmation ran (the gate's control read: {now}{host}{waited}), so the slowdown is this trial's own; "
    )
}

/// `, while the host was busy`: a headline's note that the last confirmation ran on a host
/// busier than at bless, so that a slower verdict under load says so where it is listed.
fn busy_note(record: Option<&TrialRecord>) -> &'static str {
    let busy = record
        .and_then(|r| r.runner_checks.last())
        .is_some_and(|c| c.below.iter().chain(&c.busy_during).any(|s| s.of_host()));
    if busy {
        ", while the host was busy"
    } else {
        ""
    }
}

/// For a slow run its confirmation cleared after waiting for the runner: how far the runner had
/// dropped and how long it took to come back.
fn runner_came_back(record: &TrialRecord) -> String {
    match record.runner_checks.last() {
        Some(check) if check.waited_s > 0.0 && !check.still_slow => format!(
            ", taken once the runner was back (its control read went from {} to {} in {:.0} s)",
            describe(check.disk_before, check.cpu_before, check.cpu_share_before),
            describe(check.disk, check.cpu, check.cpu_share),
            check.waited_s
        ),
        _ => String::new(),
    }
}

/// A judgement in a few words, for a table cell.
pub fn label(judgement: &Judgement) -> String {
    match judgement {
        Judgement::Pass { .. } => "as fast".into(),
        Judgement::Regression { .. } => "slower".into(),
        Judgement::Creep { creep, .. } => {
            format!("crept below the baseline ({})", change(creep.ratio))
        }
        Judgement::Faster { .. } => "faster — consider blessing".into(),
        Judgement::CpuCostlier { cpu, .. } => {
            format!("more CPU per GiB ({})", change(cpu.ratio()))
        }
        Judgement::LoadCostlier { step, cost, .. } => {
            format!(
                "slower to load: {} ({})",
                step.name(),
                rise::ratio(cost.ratio())
            )
        }
        Judgement::LatencyHigher {
            percentile, cost, ..
        } => {
            format!(
                "slower reads beside writes: {} latency ({})",
                percentile.name(),
                rise::ratio(cost.ratio())
            )
        }
        Judgement::PathChanged { from, to, .. } => format!("path {from} → {to}"),
        Judgement::ChecksumChanged { .. } => "checksum changed".into(),
        Judgement::MissingTrial { cause } => match cause {
            Missing::Ignored { reason } => format!("did not run: {reason}"),
            Missing::NotDefined => "no suite defines it".into(),
            Missing::NotRun => "not in this run".into(),
            Missing::Interrupted { signal } => {
                format!("not run: the gate was interrupted by {signal}")
            }
        },
        Judgement::NewTrial => "new trial".into(),
        Judgement::NoBaseline => "no baseline".into(),
        Judgement::NotJudged { reason } => format!("not compared: {reason}"),
    }
}

/// One trial's judgement in words.
pub fn explain(
    ctx: &Context<'_>,
    trial: &str,
    entry: Option<&Expected>,
    record: Option<&TrialRecord>,
    judgement: &Judgement,
) -> Words {
    let (headline, message) = explain_parts(ctx, trial, entry, record, judgement);
    Words { headline, message }
}

fn explain_parts(
    ctx: &Context<'_>,
    trial: &str,
    entry: Option<&Expected>,
    record: Option<&TrialRecord>,
    judgement: &Judgement,
) -> (String, String) {
    let rate = ctx.rate;
    let file = ctx.baseline_path.display();
    let figures = |entry| baseline_figures(rate, entry, ctx.baseline_path);
    let bless = bless_command(
        ctx.runner,
        ctx.baseline_path,
        ctx.scope,
        Some(trial),
        ctx.runner_changed(),
        false,
    );
    let cause = |otherwise: &str| {
        ctx.fingerprint_cause()
            .unwrap_or_else(|| otherwise.to_string())
    };
    let unchanged = format!(
        "{}the runner's fingerprint (GPU, driver, CUDA, cuFile, KvikIO, nvidia-fs, kernel, file system, cufile.json) is unchanged",
        record.map_or_else(String::new, runner_condition)
    );
    match (judgement, entry) {
        (
            Judgement::Pass {
                throughput: t,
                cleared,
            },
            _,
        ) => {
            let headline = if t.cleared_by_confirmation() {
                // "as fast as" would read wrong beside a first run 30% down: say what cleared it.
                format!(
                    "not slower: the first run looked slower ({} vs {}, {}){}{}",
                    number(rate, t.run.median),
                    gbps(rate, t.level),
                    change(t.ratio),
                    cleared_by(rate, t),
                    record.map_or_else(String::new, runner_came_back)
                )
            } else {
                format!(
                    "as fast as the baseline: {} vs {} ({}){}",
                    number(rate, t.run.median),
                    gbps(rate, t.level),
                    change(t.ratio),
                    cleared.as_ref().map_or_else(String::new, cleared_cost)
                )
            };
            let message = format!("{trial}: {headline}");
            (headline, message)
        }
        (Judgement::Regression { throughput: t }, Some(entry)) => {
            let headline = format!(
                "slower than the baseline: {} vs {} ({}){}{}",
                number(rate, t.run.median),
                gbps(rate, t.level),
                change(t.ratio),
                match t.confirmations.len() {
                    0 => String::new(),
                    n => format!(", confirmed by {n} more run(s)"),
                },
                busy_note(record)
            );
            let message = format!(
                "{trial}: slower than its baseline by {:.1}%, beyond the tolerance of {} and beyond this runner's run-to-run spread\n  expected: about {} ({}), path `{}`; {}\n  seen:     {}\n  likely cause: {}\n  next: find and fix the cause; if the new speed is intended, bless it on this runner:\n        {bless}",
                t.drop() * 100.0,
                percent(t.tolerance),
                gbps(rate, t.level),
                figures(entry),
                entry.path,
                threshold(rate, t),
                run_figures(rate, t),
                cause(&format!(
                    "{unchanged}: look at the storage (other jobs on the disk, a degraded array, a fuller file system, thermal throttling) and at changes to this trial's settings"
                )),
            );
            (headline, message)
        }
        (
            Judgement::Creep {
                throughput,
                creep,
                since,
            },
            Some(entry),
        ) => {
            let facts = creep::CreepFacts {
                throughput,
                creep,
                since,
                entry,
            };
            creep::words(ctx, trial, &facts, &bless)
        }
        (
            Judgement::LoadCostlier {
                throughput,
                step,
                cost,
            },
            Some(entry),
        ) => {
            let facts = load::rise(*step, cost, throughput, entry);
            let likely = cause(&format!("{unchanged}: {}", load::likely_cause(*step)));
            rise::words(rate, trial, &facts, &likely, &bless)
        }
        (
            Judgement::LatencyHigher {
                throughput,
                percentile,
                cost,
            },
            Some(entry),
        ) => {
            let facts = latency::rise(*percentile, cost, throughput, entry);
            let likely = cause(&format!("{unchanged}: {}", latency::LIKELY_CAUSE));
            rise::words(rate, trial, &facts, &likely, &bless)
        }
        (Judgement::CpuCostlier { throughput: t, cpu }, Some(entry)) => {
            let headline = format!(
                "more CPU per GiB than the baseline: {} vs {} ({}){}",
                cpu_per_gib(cpu.run_median()),
                cpu_per_gib(cpu.level()),
                change(cpu.ratio()),
                match cpu.confirmation_ratios().len() {
                    0 => String::new(),
                    n => format!(", confirmed by {n} more run(s)"),
                }
            );
            let confirmations = cpu
                .confirmation_ratios()
                .iter()
                .map(|r| format!("{} ({})", cpu_per_gib(r * cpu.level()), change(*r)))
                .collect::<Vec<_>>()
                .join(", ");
            // A writing trial's cost is of its write section (a roundtrip's read back is timed apart).
            let (moved, path_kind) = match record.map(|r| r.spec.op) {
                Some(op) if op.writes() => ("written", "write"),
                _ => ("read", "read"),
            };
            let message = format!(
                "{trial}: costs {} more CPU per GiB {moved} than its baseline, beyond the CPU tolerance of {} and beyond this runner's run-to-run spread (more CPU above {})\n  expected: about {} (user + system time of the worker process) at {} ({}), path `{}`\n  seen:     {} median of {} passes at {}{}\n  likely cause: {}\n  next: find and fix the cause; if the new cost is intended, bless it on this runner:\n        {bless}",
                change(cpu.ratio()).trim_start_matches('+'),
                percent(cpu.tolerance),
                cpu_per_gib(cpu.level() * cpu.costlier_above()),
                cpu_per_gib(cpu.level()),
                gbps(rate, t.level),
                figures(entry),
                entry.path,
                cpu_per_gib(cpu.run_median()),
                cpu.efficiency.run.count,
                gbps(rate, t.run.median),
                if confirmations.is_empty() {
                    String::new()
                } else {
                    format!("; confirmation run(s): {confirmations}")
                },
                cause(&format!(
                    "{unchanged}: the same bytes now cost more host CPU: a {path_kind} path that copies through host memory (cuFile's compat mode, a bounce buffer, a smaller task size or more threads), or a changed cufile.json; the trial's cuFile counters and cufile.log say which path the bytes took"
                )),
            );
            (headline, message)
        }
        (Judgement::Faster { throughput: t }, Some(entry)) => {
            let headline = format!(
                "faster than baseline — consider blessing: {} vs {} ({})",
                number(rate, t.run.median),
                gbps(rate, t.level),
                change(t.ratio)
            );
            let message = format!(
                "{trial}: faster than baseline — consider blessing ({}, beyond the tolerance of {} and this runner's run-to-run spread)\n  expected: about {} ({}), path `{}`\n  seen:     {}\n  likely cause: {}\n  next: if the speed-up is expected, record it so that a later drop is measured from the new level:\n        {bless}",
                change(t.ratio),
                percent(t.tolerance),
                gbps(rate, t.level),
                figures(entry),
                entry.path,
                run_figures(rate, t),
                cause(&format!(
                    "{unchanged}: a quieter or emptier disk, or a change to this trial's settings"
                )),
            );
            (headline, message)
        }
        (
            Judgement::PathChanged {
                from,
                to,
                throughput: t,
            },
            Some(entry),
        ) => {
            let headline = format!("path changed from the baseline: {from} → {to}");
            let mut likely = ctx.fingerprint_cause();
            if to.is_posix_fallback() && !ctx.nvidia_fs_loaded {
                let hint = "nvidia-fs is not loaded on this runner, so cuFile reads through POSIX and host bounce buffers (its compat mode)";
                likely = Some(likely.map_or(hint.to_string(), |c| format!("{c}; {hint}")));
            }
            let message = format!(
                "{trial}: the bytes took another path than in the baseline: {from} → {to}\n  expected: path `{from}` at about {} ({})\n  seen:     path `{to}` at {} ({} against the baseline)\n  likely cause: {}\n  next: if the new path is a fault, repair the runner (`cargo xtask doctor` checks the usual causes); if it is intended, bless it:\n        {bless}",
                gbps(rate, entry.median_gbps),
                figures(entry),
                run_figures(rate, t),
                change(t.ratio),
                likely.unwrap_or_else(|| format!("{unchanged}: check cufile.log in the trial's folder and this trial's settings (compat_mode, cufile overrides)")),
            );
            (headline, message)
        }
        (Judgement::ChecksumChanged { from, to }, Some(entry)) => {
            let show = |c: &Option<u64>| c.map_or_else(|| "none".into(), hex::format);
            let headline = format!(
                "checksum changed from the baseline: {} → {}",
                show(from),
                show(to)
            );
            let message = format!(
                "{trial}: the bytes read are not the bytes the baseline measured: checksum {} → {}\n  expected: checksum {} (the files measured at the bless of {})\n  seen:     checksum {}; the run verified its own reads, so the files changed, not the transfer\n  likely cause: the trial's files changed: their size, seed or count in the suite, or your own file (`files: {{ path }}`) was replaced\n  next: if the new data is intended, bless the trial:\n        {bless}\n        otherwise restore the files",
                show(from),
                show(to),
                show(from),
                entry.blessed_at,
                show(to),
            );
            (headline, message)
        }
        (Judgement::MissingTrial { cause: why }, entry) => missing(ctx, trial, entry, why),
        (Judgement::NewTrial, _) => {
            let seen = record
                .and_then(|r| r.measurement.as_ref())
                .map(|m| {
                    let median = gds_model::numbers::median(&m.gbps);
                    format!(
                        "{} median of {}, path `{}`",
                        gbps(rate, median),
                        m.gbps.len(),
                        m.path
                    )
                })
                .unwrap_or_default();
            let headline = "not in the baseline yet (new trial)".to_string();
            let message = format!(
                "{trial}: not in the baseline yet (`{file}`)\n  seen:     {seen}\n  next: once it passes as it should, record it:\n        {bless}"
            );
            (headline, message)
        }
        (Judgement::NoBaseline, _) => {
            let headline = format!("no baseline for runner `{}`", ctx.runner);
            let message = format!(
                "{trial}: runner `{}` has no baseline (`{file}` does not exist); throughput, path and checksum were not compared\n  next: on this runner, record one:\n        {}",
                ctx.runner,
                bless_command(ctx.runner, ctx.baseline_path, ctx.scope, None, false, false)
            );
            (headline, message)
        }
        (Judgement::NotJudged { reason }, _) => {
            let headline = format!("not compared with the baseline: {reason}");
            (headline.clone(), format!("{trial}: {headline}"))
        }
        // Every judgement that needs a baseline entry is made with one; only a hand-edited
        // report lacks it.
        (judgement, None) => {
            let headline = label(judgement);
            (headline.clone(), format!("{trial}: {headline}"))
        }
    }
}

fn missing(
    ctx: &Context<'_>,
    trial: &str,
    entry: Option<&Expected>,
    why: &Missing,
) -> (String, String) {
    let rate = ctx.rate;
    let expected = entry.map_or_else(String::new, |entry| {
        format!(
            "{}, path `{}` ({})",
            gbps(rate, entry.median_gbps),
            entry.path,
            baseline_figures(rate, entry, ctx.baseline_path)
        )
    });
    let drop = bless_command(
        ctx.runner,
        ctx.baseline_path,
        ctx.scope,
        Some(trial),
        ctx.runner_changed(),
        true,
    );
    match why {
        Missing::Ignored { reason } => (
            format!("in the baseline, but did not run: {reason}"),
            format!(
                "{trial}: in the baseline, but did not run\n  expected: a measurement like the baseline's: {expected}\n  seen:     ignored: {reason}\n  likely cause: {}\n  next: restore the runner (`cargo xtask doctor` says what is missing); if the trial cannot run here any more on purpose, drop it from the baseline:\n        {drop}",
                ctx.fingerprint_cause().unwrap_or_else(|| {
                    "a GPU, driver, library or mount the runner had when the baseline was blessed is gone".into()
                })
            ),
        ),
        Missing::NotDefined => (
            "in the baseline, but no suite defines it".to_string(),
            format!(
                "{trial}: in the baseline, but no suite defines it any more\n  expected: the trial of the baseline: {expected}\n  seen:     no scenario of the loaded suites has this name\n  likely cause: the scenario was renamed or removed, or a suite file is missing from --suite\n  next: if that was intended, drop it from the baseline:\n        {drop}\n        otherwise restore the scenario or pass its suite"
            ),
        ),
        Missing::Interrupted { signal } => (
            format!("not run: the gate was interrupted by {signal} before it"),
            format!(
                "{trial}: not run: the gate was interrupted by {signal} before it\n  expected: a measurement like the baseline's: {expected}\n  seen:     nothing: the run stopped first\n  next: run the gate again; this run says nothing about the trial or the runner"
            ),
        ),
        Missing::NotRun => (
            "in the baseline, but not in this run".to_string(),
            format!(
                "{trial}: in the baseline, but not among this run's trials\n  expected: the trial of the baseline: {expected}\n  seen:     no record of it\n  next: run it (check the filter and --suite), or drop it from the baseline:\n        {drop}"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_quote_what_the_shell_would_mangle() {
        assert_eq!(quote("gpu-01"), "gpu-01");
        assert_eq!(
            quote("s::a[compat=OFF,nthreads=8]"),
            "'s::a[compat=OFF,nthreads=8]'"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(
            bless_command(
                "r1",
                Path::new("baselines/r1.yaml"),
                &Scope::default(),
                Some("s::a"),
                true,
                false
            ),
            "cargo xtask gds-gate bless --runner r1 --accept-fingerprint --exact s::a"
        );
        assert_eq!(
            bless_command(
                "r1",
                Path::new("ci/base/r1.yaml"),
                &Scope::default(),
                None,
                false,
                true
            ),
            "cargo xtask gds-gate bless --runner r1 --baselines ci/base --remove-missing"
        );
    }

    #[test]
    fn changes_are_signed_percentages() {
        assert_eq!(change(0.848), "−15.2%");
        assert_eq!(change(1.25), "+25.0%");
    }

    /// Six blessed runs whose medians are `levels`, each of three passes within ±1%.
    fn at(levels: &[f64]) -> Throughput {
        let runs: Vec<Vec<f64>> = levels
            .iter()
            .map(|&l| vec![l * 0.99, l, l * 1.01])
            .collect();
        Throughput::measure(&runs, &[1.3], 0.10).advise()
    }

    #[test]
    fn a_trial_blind_to_20_percent_says_what_would_let_it_see() {
        let more_runs = threshold(Rate::Gb, &at(&[1.30, 1.55, 1.10, 1.45, 1.15, 1.32]));
        assert!(
            more_runs.contains("; to see a 20% drop: bless from 44 runs instead of 6")
                && more_runs.contains(", or a run-to-run spread of 10.3% or less (a quieter disk, or 1.6× the `rounds:` and passes"),
            "{more_runs}"
        );
        let quieter = threshold(Rate::Gb, &at(&[1.84, 1.66, 1.08, 1.62, 1.02, 1.84]));
        assert!(
            quieter.contains("no number of blessed runs would do at this spread"),
            "{quieter}"
        );
        let sees = threshold(Rate::Gb, &at(&[1.30, 1.45, 1.20, 1.40, 1.25, 1.32]));
        assert!(!sees.contains("to see"), "{sees}");
    }

    #[test]
    fn the_threshold_names_the_blessed_runs_left_out() {
        let line = threshold(Rate::Gb, &at(&[1.84, 1.80, 1.05, 1.82, 1.02, 1.86]));
        assert!(
            line.contains(
                ", over 4 of 6 blessed runs: run 3 and run 5 far slower than the rest, left out)"
            ),
            "{line}"
        );
        let none = threshold(Rate::Gb, &at(&[1.30, 1.45, 1.20, 1.40, 1.25, 1.32]));
        assert!(!none.contains("left out"), "{none}");
    }
}
