//! A whole comparison for people: the console text after the trials, and the section of
//! `summary.md` with a table and the plots.

use std::fmt::Write;
use std::path::Path;

use super::compare::Comparison;
use super::decision::Throughput;
use super::fingerprint::{self, ChangeKind};
use super::judgement::{Judgement, Severity};
use super::message::{Explainer, bless_command, change, number, threshold};
use super::plot::PlotFile;
use gds_model::units::Rate;

/// The console text, short: libtest has already shown each failure's message on its own.
/// One line with the baseline and its counts, the runner's changes when it changed, one line per
/// slow run its confirmation cleared. The trials that cannot see a drop as small as their
/// tolerance are counted on the first line; summary.md lists each.
pub fn console(explainer: &Explainer<'_>) -> String {
    let comparison = explainer.comparison;
    let mut out = String::new();
    let file = comparison.baseline_path.display();
    if !comparison.baseline_found {
        let _ = writeln!(
            out,
            "baseline: none for runner `{}` (`{file}` does not exist): throughput, path and checksum were not compared\n  next: on this runner, record one: {}",
            comparison.runner,
            bless_command(
                &comparison.runner,
                &comparison.baseline_path,
                explainer.scope,
                None,
                false,
                false
            )
        );
        return out;
    }
    let counts = [
        (
            count(comparison, |j| matches!(j, Judgement::Pass { .. })),
            "as fast",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::Regression { .. })),
            "slower",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::Creep { .. })),
            "crept below the baseline over the history",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::CpuCostlier { .. })),
            "costlier in CPU",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::LoadCostlier { .. })),
            "slower to set up a load",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::LatencyHigher { .. })),
            "slower reads beside writes (latency)",
        ),
        (
            count(comparison, |j| j.severity() == Severity::Failure),
            "changed or missing",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::Faster { .. })),
            "faster (consider blessing)",
        ),
        (
            count(comparison, |j| matches!(j, Judgement::NewTrial)),
            "new",
        ),
        (comparison.not_selected, "not selected"),
    ];
    let counts: Vec<String> = counts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let blind: Vec<f64> = blind(comparison)
        .map(|(_, t)| 1.0 - t.slower_below())
        .collect();
    let sensitivity = if blind.is_empty() {
        String::new()
    } else {
        let worst = blind.iter().copied().fold(0.0_f64, f64::max);
        format!(
            "; {} cannot tell a drop as small as their tolerance from this runner's noise (up to {:.0}%: summary.md says what each can see)",
            blind.len(),
            100.0 * worst
        )
    };
    let _ = writeln!(
        out,
        "baseline: `{file}` (runner `{}`): {}{sensitivity}",
        comparison.runner,
        counts.join(", ")
    );
    out.push_str(&fingerprint_block(explainer));
    for line in cleared(explainer) {
        let _ = writeln!(out, "warning: {line}");
    }
    out
}

/// Trials whose first run looked slower and whose confirmation run did not: passed, but worth
/// seeing, since a run that is often cleared this way is a runner getting noisier.
fn cleared<'a>(explainer: &'a Explainer<'a>) -> impl Iterator<Item = String> + 'a {
    explainer.comparison.trials.iter().filter_map(|trial| {
        // A creep fails however its run's confirmation went: that is not a cleared run.
        let Judgement::Pass { throughput: t, .. } = &trial.judgement else {
            return None;
        };
        t.cleared_by_confirmation()
            .then(|| format!("{}: {}", trial.trial, explainer.words(trial).headline))
    })
}

/// Trials whose tolerance this runner's spread cannot honour (or whose spread is unknown), with
/// their throughput comparison.
fn blind(comparison: &Comparison) -> impl Iterator<Item = (&str, &Throughput)> + '_ {
    comparison.trials.iter().filter_map(|trial| {
        let t = trial.judgement.throughput()?;
        (t.spread_exceeds_tolerance() || t.spread.is_none()).then_some((trial.trial.as_str(), t))
    })
}

/// [`blind`] trials in words: the gate says what each can detect instead of failing or passing
/// silently.
fn insensitive(comparison: &Comparison, rate: Rate) -> impl Iterator<Item = String> + '_ {
    blind(comparison).map(move |(trial, t)| format!("{trial}: {}", threshold(rate, t)))
}

fn count(comparison: &Comparison, test: impl Fn(&Judgement) -> bool) -> usize {
    comparison
        .trials
        .iter()
        .filter(|t| test(&t.judgement))
        .count()
}

/// The runner's changes, shown before anything else: they are the likely cause of what follows.
fn fingerprint_block(explainer: &Explainer<'_>) -> String {
    let comparison = explainer.comparison;
    let mut out = String::new();
    let changed: Vec<_> = fingerprint::changed(&comparison.fingerprint_changes).collect();
    if !changed.is_empty() {
        let _ = writeln!(
            out,
            "the runner changed since the baseline was blessed; these changes are the likely cause of any difference below:"
        );
        for change in &changed {
            let _ = writeln!(out, "  {change}");
        }
        let _ = writeln!(
            out,
            "  once the new setup is checked and passes, record it: {}",
            bless_command(
                &comparison.runner,
                &comparison.baseline_path,
                explainer.scope,
                None,
                true,
                false
            )
        );
    }
    let unobserved: Vec<&str> = comparison
        .fingerprint_changes
        .iter()
        .filter(|c| c.kind == ChangeKind::NotObserved)
        .map(|c| c.field.as_str())
        .collect();
    if !unobserved.is_empty() {
        let _ = writeln!(
            out,
            "  not observed in this run (kept from the baseline): {}",
            unobserved.join(", ")
        );
    }
    out
}

/// The `summary.md` section: the fingerprint changes, a table with one row per judged trial, and
/// a link to each trial's plot (paths relative to `summary_dir`, where summary.md is written).
pub fn markdown(explainer: &Explainer<'_>, plots: &[PlotFile], summary_dir: &Path) -> String {
    use gds_runner::escape::{markdown as text, markdown_block, markdown_code as code};
    let comparison = explainer.comparison;
    let mut out = String::new();
    let file = code(&comparison.baseline_path.display().to_string());
    let _ = writeln!(out, "### Baseline {}\n", code(&comparison.runner));
    if !comparison.baseline_found {
        let _ = writeln!(
            out,
            "No baseline ({file} does not exist): throughput, path and checksum were not compared. On this runner: {}\n",
            code(&bless_command(
                &comparison.runner,
                &comparison.baseline_path,
                explainer.scope,
                None,
                false,
                false
            ))
        );
    }
    let changed: Vec<String> = fingerprint::changed(&comparison.fingerprint_changes)
        .map(|change| text(&change.to_string()))
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(
            out,
            "> **The runner changed since the baseline** (the likely cause of any difference): {}\n",
            changed.join("; ")
        );
    }
    let rate = explainer.rate;
    let label = rate.label();
    let _ = writeln!(
        out,
        "| trial | vs baseline | baseline {label} | run {label} | change | slower below | plot |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---|");
    for trial in &comparison.trials {
        let (base, run, delta, below) = match trial.judgement.throughput() {
            Some(t) => (
                number(rate, t.level),
                number(rate, t.run.median),
                change(t.ratio),
                change(t.slower_below()),
            ),
            None => Default::default(),
        };
        let mark = match trial.judgement.severity() {
            Severity::Failure => "**FAILED**: ",
            Severity::Regression => "**REGRESSION**: ",
            Severity::Notice | Severity::Ok => "",
        };
        // The SVG's place in the run's artifact: a relative link would lead nowhere in the
        // Actions UI or a pull request; the chart below the table is drawn there.
        let plot = plots
            .iter()
            .find(|plot| plot.trial == trial.trial)
            .map(|plot| {
                let svg = plot.path.strip_prefix(summary_dir).unwrap_or(&plot.path);
                code(&svg.display().to_string())
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {mark}{} | {base} | {run} | {delta} | {below} | {plot} |",
            code(&trial.trial),
            text(&super::message::label(&trial.judgement))
        );
    }
    for line in cleared(explainer).chain(insensitive(comparison, explainer.rate)) {
        let _ = writeln!(out, "\n> **Warning:** {}", text(&line));
    }
    let failing: Vec<_> = comparison
        .trials
        .iter()
        .filter(|t| t.judgement.severity() >= Severity::Regression)
        .collect();
    if !failing.is_empty() {
        out.push_str("\n<details><summary>What to do</summary>\n\n");
        let messages: Vec<String> = failing.iter().map(|t| explainer.words(t).message).collect();
        out.push_str(&markdown_block("text", &messages.join("\n\n")));
        out.push_str("\n</details>\n");
    }
    let _ = writeln!(
        out,
        "\nBaseline {label} is the level of the blessed runs (geometric mean of their medians), run {label} this run's median; a trial is slower below the tolerance and below what this runner's run-to-run spread explains, and only when its confirmation run agrees. Baseline: {file}{}.",
        if comparison.not_selected > 0 {
            format!(", {} trial(s) not selected", comparison.not_selected)
        } else {
            String::new()
        }
    );
    let charts = super::plot::markdown_charts(plots, summary_dir, rate);
    if !charts.is_empty() {
        let _ = write!(out, "\n{charts}");
    }
    out
}
