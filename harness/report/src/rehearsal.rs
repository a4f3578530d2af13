//! A rehearsal's comparison (`gds-gate rehearse`): each trial run on stack A and on stack B in
//! alternating rounds, judged as B against A from the paired rounds. A round of A and the round
//! of B beside it read at nearly the same moment of the runner's drift, so their ratio carries
//! the stacks' difference and little of the drift; the rounds' spread of that ratio gives the
//! confidence interval. B fails when its bytes took another path than A's, or when the interval
//! lies wholly below the tolerance.

use std::fmt::Write;

use gds_baseline::outcome::Outcome;
use gds_model::numbers::median;
use gds_model::path::Path;
use gds_model::record::{LoadedCufile, Status, TrialRecord};
use gds_model::stack::Stacks;
use gds_model::units::Rate;
use serde::{Deserialize, Serialize};

use crate::direct::{path_text, ratio_text};
use gds_runner::escape::{markdown as text, markdown_code as code};

/// How a side's trial is named: `trial @stack`. A filter on the trial's name selects both sides.
pub fn side_name(trial: &str, stack: &str) -> String {
    format!("{trial} @{stack}")
}

/// The rehearsal in report.json: the stacks, the rounds asked for, and a pair per trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rehearsal {
    pub stacks: Stacks,
    /// Rounds each side of each trial ran (fresh workers, A and B in turn): as asked, or as many
    /// as the budget fitted.
    pub rounds: u32,
    pub pairs: Vec<Pair>,
}

/// One trial on both stacks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pair {
    /// The trial's name in its suite (each side's trial adds ` @stack`).
    pub trial: String,
    pub a: Side,
    pub b: Side,
    /// B's median GB/s over A's, round by round, in the order the rounds ran.
    pub round_ratios: Vec<f64>,
    /// The rounds' geometric mean ratio, and its 95% confidence interval (Student's t over the
    /// rounds' log ratios; at least two rounds).
    pub ratio: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The first round from which the interval of the rounds so far excluded 1 to the end: how
    /// many rounds it took to be sure the stacks differ. `None` where they could be alike.
    pub sure_after: Option<u32>,
    pub verdict: Verdict,
    /// One line of what was found, for people.
    pub headline: String,
}

/// What one stack did with the trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Side {
    /// The side's trial, `trial @stack`.
    pub trial: String,
    pub status: Outcome,
    pub path: Option<Path>,
    pub median_gbps: Option<f64>,
    /// Median GB/s of each round.
    pub round_gbps: Vec<f64>,
    /// Mean read-call latency over the rounds, where the reader times its calls.
    pub latency_mean_us: Option<f64>,
    /// Median CPU seconds per GiB of the passes, where recorded.
    pub cpu_seconds_per_gib: Option<f64>,
    /// The stack as its workers found it: the libcufile they loaded, KvikIO's and PyTorch's
    /// versions, where the reader reports them.
    pub libcufile: Option<LoadedCufile>,
    pub kvikio_version: Option<String>,
    pub torch_version: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within the tolerance, or not sure of a difference beyond it.
    Same,
    /// Sure to be slower than A by more than the tolerance: B fails (exit 3).
    Slower,
    /// Sure to be faster than A by more than the tolerance.
    Faster,
    /// B's bytes took another path than A's: B fails (exit 1).
    PathChanged,
    /// A side did not pass its own checks or measured too little to compare.
    NotJudged,
}

impl Side {
    fn of(record: &TrialRecord) -> Side {
        let m = record.measurement.as_ref();
        let cpu = m.map(|m| m.cpu_per_gib()).unwrap_or_default();
        Side {
            trial: record.name.clone(),
            status: record.status,
            path: m.map(|m| m.path.clone()),
            median_gbps: m.and_then(|m| m.median_gbps),
            round_gbps: m.map(round_medians).unwrap_or_default(),
            latency_mean_us: m.and_then(|m| m.latency.as_ref()).map(|l| l.mean_us),
            cpu_seconds_per_gib: (!cpu.is_empty()).then(|| median(&cpu)),
            libcufile: m.and_then(|m| m.libcufile.clone()),
            kvikio_version: m
                .and_then(|m| m.kvikio.as_ref())
                .map(|k| k.kvikio_version.clone()),
            torch_version: m
                .and_then(|m| m.torch.as_ref())
                .map(|t| t.torch_version.clone()),
        }
    }
}

/// Each round's median GB/s: the passes split by `rounds` (passes per round; one round when
/// empty).
fn round_medians(m: &gds_model::record::Measurement) -> Vec<f64> {
    let counts = match m.rounds.is_empty() {
        true => vec![m.gbps.len() as u32],
        false => m.rounds.clone(),
    };
    let mut passes = m.gbps.as_slice();
    let mut medians = Vec::new();
    for count in counts {
        let (round, rest) = passes.split_at((count as usize).min(passes.len()));
        if !round.is_empty() {
            medians.push(median(round));
        }
        passes = rest;
    }
    medians
}

/// The geometric mean of `ratios` and its 95% interval; `None` for fewer than two.
fn interval(ratios: &[f64]) -> Option<(f64, f64, f64)> {
    let n = ratios.len();
    if n < 2 || ratios.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let variance = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = gds_baseline::stats::student_t_quantile(0.975, (n - 1) as f64)
        * (variance / n as f64).sqrt();
    Some((mean.exp(), (mean - half).exp(), (mean + half).exp()))
}

/// Judges B's record against A's: the pair, and B's outcome with its reason where the pair
/// fails it. `names` are the stacks' names, for the words.
pub fn judge(trial: &str, a: &TrialRecord, b: &mut TrialRecord, stacks: &Stacks) -> Pair {
    let (a_side, b_side) = (Side::of(a), Side::of(b));
    let round_ratios: Vec<f64> = a_side
        .round_gbps
        .iter()
        .zip(&b_side.round_gbps)
        .map(|(a, b)| b / a)
        .collect();
    let (an, bn) = (&stacks.a.name, &stacks.b.name);
    let found = interval(&round_ratios);
    // The first round from which every interval, to the last round's, excluded 1 on the side
    // the last one did: an early interval that excluded it and a later one that did not is luck.
    let side = |k: usize| {
        interval(&round_ratios[..k]).and_then(|(_, low, high)| {
            (high < 1.0)
                .then_some(false)
                .or((low > 1.0).then_some(true))
        })
    };
    let last = side(round_ratios.len());
    let sure_after = last.map(|faster| {
        (2..=round_ratios.len())
            .rev()
            .take_while(|&k| side(k) == Some(faster))
            .last()
            .unwrap_or(round_ratios.len()) as u32
    });
    let tolerance = stacks.tolerance;
    let (verdict, headline) = if b.checks != Status::Passed {
        (
            Verdict::NotJudged,
            format!("not compared: {bn} did not pass its own checks"),
        )
    } else if a.checks != Status::Passed {
        (
            Verdict::NotJudged,
            format!("not compared: {an} did not pass its own checks"),
        )
    } else if a_side.path != b_side.path {
        (
            Verdict::PathChanged,
            format!(
                "the bytes took {} with {bn}, {} with {an}",
                path_text(&b_side.path),
                path_text(&a_side.path)
            ),
        )
    } else if let Some((ratio, low, high)) = found {
        let figures = format!(
            "{bn} reads at {ratio:.2}× {an} (95% interval {low:.2}–{high:.2} over {} rounds)",
            round_ratios.len()
        );
        if high < 1.0 - tolerance {
            (
                Verdict::Slower,
                format!(
                    "{figures}: slower by more than the {:.0}% tolerance",
                    tolerance * 100.0
                ),
            )
        } else if low > 1.0 + tolerance {
            (Verdict::Faster, format!("{figures}: faster"))
        } else {
            (Verdict::Same, figures)
        }
    } else {
        (
            Verdict::NotJudged,
            format!(
                "not compared: {} paired rounds measured, at least 2 are needed",
                round_ratios.len()
            ),
        )
    };
    // The outcome a failing verdict gives B, and what to do about it.
    let failing = match verdict {
        Verdict::Slower => Some((
            Outcome::Slower,
            "next: compare the two sides' cuFile counters and cufile.log in their trial folders; if the difference is meant, roll B out and bless it",
        )),
        Verdict::PathChanged => Some((
            Outcome::PathChanged,
            "next: see why the path differs in the two sides' cufile.log (docs/concepts/path.md); a stack that falls back to POSIX must not be rolled out unnoticed",
        )),
        _ => None,
    };
    if let Some((outcome, next)) = failing {
        b.status = outcome;
        b.reason = Some(headline.clone());
        b.details = Some(format!(
            "rounds' ratios {bn}/{an}: {}\n  {next}",
            round_ratios
                .iter()
                .map(|r| format!("{r:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let (ratio, low, high) =
        found.map_or((None, None, None), |(r, l, h)| (Some(r), Some(l), Some(h)));
    Pair {
        trial: trial.to_string(),
        a: a_side,
        b: b_side,
        round_ratios,
        ratio,
        low,
        high,
        sure_after,
        verdict,
        headline,
    }
}

impl Rehearsal {
    /// A line per pair for the terminal.
    pub fn console(&self) -> String {
        let mut out = format!(
            "rehearsal: {} against {}, {} rounds each, tolerance {:.0}%",
            self.stacks.b.name,
            self.stacks.a.name,
            self.rounds,
            self.stacks.tolerance * 100.0
        );
        for pair in &self.pairs {
            let _ = write!(out, "\n  {}: {}", pair.trial, pair.headline);
        }
        out
    }

    /// summary.md's section: the stacks, a table of the pairs and a chart of the rounds' ratios.
    pub fn markdown(&self, rate: Rate) -> String {
        let (a, b) = (&self.stacks.a, &self.stacks.b);
        let mut out = format!(
            "## Rehearsal: `{}` against `{}`\n\nEach trial ran on both stacks in alternating rounds ({} each, fresh workers); B fails when its path differs or when it is sure to read more than {:.0}% slower than A.\n\n| stack | environment | libcufile | KvikIO |\n|---|---|---|---|\n",
            b.name,
            a.name,
            self.rounds,
            self.stacks.tolerance * 100.0
        );
        for (stack, pick) in [(a, 0), (b, 1)] {
            let sides = || {
                self.pairs
                    .iter()
                    .map(move |p| if pick == 0 { &p.a } else { &p.b })
            };
            let env = stack
                .env
                .iter()
                .map(|(k, v)| code(&format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(" ");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                code(&stack.name),
                if env.is_empty() {
                    "the gate's".into()
                } else {
                    env
                },
                distinct(sides().filter_map(|s| s.libcufile.as_ref().map(|l| format!(
                    "{} ({})",
                    l.version,
                    l.path.display()
                )))),
                distinct(sides().filter_map(|s| s.kvikio_version.clone())),
            );
        }
        let _ = writeln!(
            out,
            "\n| trial | A {unit} | B {unit} | B/A | 95% interval | sure after | path A | path B | CPU s/GiB A → B | latency A → B | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|",
            unit = rate.label()
        );
        let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        for pair in &self.pairs {
            let gbps = |v: Option<f64>| num(v, &|g| rate.number(g, 2));

            let micros = |v: Option<f64>| num(v, &gds_model::cost::format_micros);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} → {} | {} → {} | {} |",
                code(&pair.trial),
                gbps(pair.a.median_gbps),
                gbps(pair.b.median_gbps),
                ratio_text(pair.ratio),
                match (pair.low, pair.high) {
                    (Some(l), Some(h)) => format!("{l:.2}–{h:.2}"),
                    _ => "-".into(),
                },
                pair.sure_after
                    .map_or("-".into(), |k| format!("{k} rounds")),
                text(&path_text(&pair.a.path)),
                text(&path_text(&pair.b.path)),
                ratio_text(pair.a.cpu_seconds_per_gib),
                ratio_text(pair.b.cpu_seconds_per_gib),
                micros(pair.a.latency_mean_us),
                micros(pair.b.latency_mean_us),
                match pair.verdict {
                    Verdict::Slower | Verdict::PathChanged => {
                        format!("**{}**", text(&pair.headline))
                    }
                    _ => text(&pair.headline),
                },
            );
        }
        out.push_str(&self.chart());
        out
    }

    /// A Mermaid chart of each pair's round ratios beside the tolerance's floor.
    fn chart(&self) -> String {
        let drawn: Vec<&Pair> = self
            .pairs
            .iter()
            .filter(|p| !p.round_ratios.is_empty())
            .collect();
        let Some(longest) = drawn.iter().map(|p| p.round_ratios.len()).max() else {
            return String::new();
        };
        let series = |values: &mut dyn Iterator<Item = f64>| {
            values
                .map(|v| format!("{v:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let highest = drawn
            .iter()
            .flat_map(|p| p.round_ratios.iter().copied())
            .fold(1.0f64, f64::max);
        let mut out = String::from(
            "\n#### B/A round by round\n\nOne line per trial, in table order; the flat line is 1 − tolerance.\n\n```mermaid\nxychart-beta\n",
        );
        let _ = writeln!(
            out,
            "    x-axis \"round\" [{}]",
            (1..=longest)
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(out, "    y-axis \"B/A\" 0 --> {:.2}", highest * 1.15);
        for pair in drawn {
            let _ = writeln!(
                out,
                "    line [{}]",
                series(&mut pair.round_ratios.iter().copied())
            );
        }
        let _ = writeln!(
            out,
            "    line [{}]",
            series(&mut std::iter::repeat_n(
                1.0 - self.stacks.tolerance,
                longest
            ))
        );
        out.push_str("```\n");
        out
    }
}

/// The distinct values, in first-seen order, joined; `-` for none.
fn distinct(values: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    match seen.is_empty() {
        true => "-".into(),
        false => seen.iter().map(|v| text(v)).collect::<Vec<_>>().join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_baseline::fixtures::{self, CHECKSUM};
    use gds_model::stack::Stack;

    fn stacks() -> Stacks {
        let stack = |name: &str| Stack {
            name: name.into(),
            env: Default::default(),
        };
        Stacks {
            a: stack("old"),
            b: stack("new"),
            tolerance: 0.05,
        }
    }

    /// A side's record (fixture): one pass per round at `gbps`, through `path`.
    fn side(stack: &str, gbps: &[f64], path: &str) -> TrialRecord {
        let mut record = fixtures::passed(&side_name("s::t", stack), gbps, path, CHECKSUM);
        let m = record.measurement.as_mut().unwrap();
        m.rounds = vec![1; gbps.len()];
        record
    }

    #[test]
    fn a_b_sure_to_be_slower_beyond_the_tolerance_fails_as_slower() {
        let a = side("old", &[2.0, 1.6, 2.1, 1.7, 2.0, 1.8], "gds");
        let mut b = side("new", &[1.6, 1.3, 1.7, 1.35, 1.62, 1.44], "gds");
        let pair = judge("s::t", &a, &mut b, &stacks());
        assert_eq!(pair.verdict, Verdict::Slower, "{}", pair.headline);
        assert_eq!(b.status, Outcome::Slower);
        let (low, high) = (pair.low.unwrap(), pair.high.unwrap());
        assert!(
            low < 0.8 && high < 0.95 && low < pair.ratio.unwrap(),
            "{low} {high}"
        );
        assert!(
            pair.sure_after.is_some_and(|k| k <= 3),
            "{:?}",
            pair.sure_after
        );
        assert!(b.reason.as_deref().unwrap().starts_with("new reads at 0.8"));
        assert!(b.details.as_deref().unwrap().contains("next:"));
    }

    #[test]
    fn drift_that_moves_both_sides_alike_is_not_a_difference() {
        // The runner's level swings by a third between rounds; B follows A within 2%.
        let a = side("old", &[2.0, 1.3, 2.2, 1.4, 1.9], "gds");
        let mut b = side("new", &[1.98, 1.32, 2.17, 1.41, 1.89], "gds");
        let pair = judge("s::t", &a, &mut b, &stacks());
        assert_eq!(pair.verdict, Verdict::Same, "{}", pair.headline);
        assert_eq!(b.status, Outcome::Passed);
        assert!(pair.low.unwrap() > 0.95 && pair.high.unwrap() < 1.05);
        assert_eq!(b.reason, None);
    }

    #[test]
    fn a_small_sure_difference_within_the_tolerance_passes_but_is_named() {
        let a = side("old", &[2.0, 2.0, 2.0, 2.0], "gds");
        let mut b = side("new", &[1.96, 1.961, 1.959, 1.96], "gds");
        let pair = judge("s::t", &a, &mut b, &stacks());
        assert_eq!((pair.verdict, b.status), (Verdict::Same, Outcome::Passed));
        assert_eq!(pair.sure_after, Some(2), "sure of 2% after two rounds");
    }

    #[test]
    fn a_difference_the_later_rounds_take_back_was_never_sure() {
        // Rounds 1-3 say B is slower, the rounds after them say it is not.
        let a = side("old", &[2.0, 2.0, 2.0, 2.0, 2.0, 2.0], "gds");
        let mut b = side("new", &[1.9, 1.91, 1.9, 2.2, 2.1, 2.15], "gds");
        let pair = judge("s::t", &a, &mut b, &stacks());
        assert!(pair.low.unwrap() < 1.0 && pair.high.unwrap() > 1.0);
        assert_eq!(pair.sure_after, None);
    }

    #[test]
    fn another_path_fails_b_whatever_the_speed() {
        let a = side("old", &[2.0, 2.0], "gds");
        let mut b = side("new", &[2.0, 2.0], "cufile-posix");
        let pair = judge("s::t", &a, &mut b, &stacks());
        assert_eq!(pair.verdict, Verdict::PathChanged);
        assert_eq!(b.status, Outcome::PathChanged);
        assert_eq!(
            pair.headline,
            "the bytes took cufile-posix with new, gds with old"
        );
    }

    #[test]
    fn one_round_or_a_failed_side_is_not_judged() {
        let a = side("old", &[2.0], "gds");
        let mut b = side("new", &[1.0], "gds");
        let pair = judge("s::t", &a, &mut b, &stacks());
        assert_eq!(
            (pair.verdict, b.status),
            (Verdict::NotJudged, Outcome::Passed)
        );
        let mut failed = side("old", &[2.0, 2.0], "gds");
        failed.fail("wrong bytes".into(), String::new());
        let mut b = side("new", &[1.0, 1.0], "gds");
        let pair = judge("s::t", &failed, &mut b, &stacks());
        assert_eq!(pair.verdict, Verdict::NotJudged);
        assert!(pair.headline.contains("old did not pass"));
    }

    #[test]
    fn the_summary_has_the_stacks_the_pairs_and_a_chart() {
        let a = side("old", &[2.0, 1.6, 2.1], "gds");
        let mut b = side("new", &[1.0, 0.8, 1.05], "gds");
        let rehearsal = Rehearsal {
            stacks: stacks(),
            rounds: 3,
            pairs: vec![judge("s::t", &a, &mut b, &stacks())],
        };
        let md = rehearsal.markdown(Rate::Gb);
        assert!(md.contains("## Rehearsal: `new` against `old`"), "{md}");
        assert!(md.contains("| `s::t` | 2.00 | 1.00 | 0.50 |"), "{md}");
        assert!(md.contains("line [0.500, 0.500, 0.500]"), "{md}");
        assert!(md.contains("line [0.950, 0.950, 0.950]"), "{md}");
        assert!(rehearsal.console().contains("s::t: new reads at 0.50× old"));
    }
}
