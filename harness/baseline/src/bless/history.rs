//! `bless --from-history`: a baseline from the runs the history already holds, instead of
//! running the suite again. Each selected trial takes its last [`Selection::runs`] passing runs
//! of this runner's current fingerprint, and earlier ones too while they span less than
//! [`Selection::min_span`]: runs close together understate the run-to-run spread the comparison
//! allows for, which is why a bless that runs the suite spaces its runs out too. A history that
//! holds too few such runs, or too short a time, is refused.
//!
//! "Passing" is the trial's outcome in that run, its own checks and its baseline judgement
//! together: a run that was slower, costlier, failed or took another path is not taken, so that a
//! regression CI saw is never blessed by accident. Runs of another fingerprint (driver, kernel,
//! `cufile.json`, …) than the latest run's are not taken either: they measured another stack.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{BlessError, BlessOptions, BlessOutcome, Blessed, TakenRun, TrialRounds};
use crate::compare::Tolerances;
use crate::decision::{BLESS_RUNS, MIN_RUNS};
use crate::fingerprint;
use crate::history::{History, HistoryLine};
use crate::message::{Scope, Source, bless_command};
use gds_model::record::{Outcome, Status};

/// Passing runs per trial a bless from history takes (at least) unless told otherwise. History runs cost
/// nothing to take, and more blessed runs pin the spread down, so the bound need not allow for an
/// unlucky estimate of it. At the stated runner's noise (5% CV within a run, 12% between runs,
/// one confirmation), `cargo xtask bench --stats` gives for 6 blessed runs (a bless that runs the
/// suite) 0.83% false alarms, 99.46% of halved disks caught and a smallest drop flagged of 21.9%;
/// for 10: 0.53%, 99.92% and 20.2%; 15 gain little more (0.41%, 19.5%).
pub const DEFAULT_RUNS: u16 = 10;

/// The least time from the first to the last taken run unless told otherwise: ten minutes, so
/// that ten runs are on average a minute apart, as a bless that runs the suite spaces them
/// (`--interval 60`), and span the minutes over which a shared disk's level was seen to move.
pub const DEFAULT_MIN_SPAN: Duration = Duration::from_secs(600);

/// How many runs a bless from history takes, and the least time they must span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    pub runs: usize,
    pub min_span: Duration,
}

impl Default for Selection {
    fn default() -> Selection {
        Selection {
            runs: usize::from(DEFAULT_RUNS),
            min_span: DEFAULT_MIN_SPAN,
        }
    }
}

/// The trials the loaded suites define, and those of them the command line selects (its filter
/// and `--skip`): a trial the history holds but no suite defines any more is never blessed back.
#[derive(Clone, Copy, Debug)]
pub struct Suites<'a> {
    pub defined: &'a BTreeSet<String>,
    pub selected: &'a BTreeSet<String>,
}

/// Writes the baseline from the history at `path` (already read): see the module's doc. Without
/// `suites`, every trial of the history that the filter matches is taken.
pub fn bless_from_history(
    history: &History,
    path: &Path,
    selection: Selection,
    suites: Option<Suites<'_>>,
    options: &BlessOptions<'_>,
) -> Result<BlessOutcome, BlessError> {
    super::refuse_in_ci(options)?;
    let refuse = |why: String, help: String| BlessError::FromHistory {
        path: path.to_path_buf(),
        why,
        help,
    };
    let ours: Vec<&HistoryLine> = history
        .lines
        .iter()
        .filter(|line| line.runner == options.runner)
        .collect();
    let Some(latest) = ours.last() else {
        let why = if history.lines.is_empty() && !path.exists() {
            "there is no such file: no gate run on this runner has written it yet".to_string()
        } else if history.lines.is_empty() {
            format!(
                "it holds no readable run ({} unreadable line(s))",
                history.skipped.len()
            )
        } else {
            format!(
                "it holds no run of runner `{}` ({} run(s) of other runners)",
                options.runner,
                history.lines.len()
            )
        };
        return Err(refuse(why, accumulate_help(options, path)));
    };
    let (same, other): (Vec<&HistoryLine>, Vec<&HistoryLine>) =
        ours.iter().partition(|line| same_stack(line, latest));
    let trials = select(&same, selection, suites, options);
    let short: Vec<&Taken> = trials.iter().filter(|t| t.short(selection)).collect();
    if !short.is_empty() {
        let mut why = format!(
            "too few passing runs, or too short a time between them, for a baseline ({} runs over at least {} wanted):\n",
            selection.runs,
            humantime::format_duration(selection.min_span)
        );
        for line in grouped(&short) {
            let _ = writeln!(why, "  {line}");
        }
        if !other.is_empty() {
            let _ = writeln!(
                why,
                "  not taken: {} run(s) of another fingerprint than the latest run's ({})",
                other.len(),
                changes_since(other[other.len() - 1], latest)
            );
        }
        let mut help = accumulate_help(options, path);
        if let Some(fewer) = fewer_command(options, path, &short) {
            let _ = write!(
                help,
                "; or take what there is, knowing that fewer or closer runs understate the runner's spread: {fewer}"
            );
        }
        return Err(refuse(why.trim_end().to_string(), help));
    }
    let used: BTreeSet<usize> = trials
        .iter()
        .flat_map(|t| t.runs.iter().map(|run| run.line))
        .collect();
    let names: Vec<String> = trials.iter().map(|t| t.rounds.name.clone()).collect();
    let taken: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let blessed = Blessed {
        defined: suites.map(|suites| (suites.defined, taken)),
        trials: trials.into_iter().map(|t| t.rounds).collect(),
        fingerprint: &latest.fingerprint,
        controls: used.iter().map(|&i| same[i].control.as_ref()).collect(),
    };
    let mut outcome = super::record(&blessed, options)?;
    outcome.source = Some(source(path, &used, &same, other.len()));
    Ok(outcome)
}

/// `from the history `h.jsonl`: 10 runs from 2026-12-04T18:25:48Z to 2026-12-04T18:36:00Z
/// (10m 12s); 3 runs of another fingerprint not taken`.
fn source(path: &Path, used: &BTreeSet<usize>, same: &[&HistoryLine], other: usize) -> String {
    let times: Vec<&str> = used.iter().map(|&i| same[i].time.as_str()).collect();
    let mut text = format!(
        "from the history `{}`: {} run(s)",
        path.display(),
        times.len()
    );
    if let (Some(first), Some(last)) = (times.first(), times.last()) {
        let span = humantime::parse_rfc3339_weak(first)
            .ok()
            .zip(humantime::parse_rfc3339_weak(last).ok())
            .and_then(|(a, b)| b.duration_since(a).ok())
            .map(|span| format!(" ({})", humantime::format_duration(span)))
            .unwrap_or_default();
        let _ = write!(text, " from {first} to {last}{span}");
    }
    if other > 0 {
        let _ = write!(text, "; {other} run(s) of another fingerprint not taken");
    }
    text
}

/// Whether `line` measured the same stack as `latest`: no fact known to both differs.
fn same_stack(line: &HistoryLine, latest: &HistoryLine) -> bool {
    let differences = fingerprint::diff(&line.fingerprint, &latest.fingerprint);
    fingerprint::changed(&differences).next().is_none()
}

/// `driver: 570.86 → 580.159`: what changed from the last run of another fingerprint.
fn changes_since(before: &HistoryLine, latest: &HistoryLine) -> String {
    let differences = fingerprint::diff(&before.fingerprint, &latest.fingerprint);
    fingerprint::changed(&differences)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One trial's taken runs and what the history held besides them.
struct Taken {
    rounds: TrialRounds,
    /// The taken runs, oldest first: their index in the lines of this fingerprint, and when each
    /// started.
    runs: Vec<RunAt>,
    /// Runs of this fingerprint that measured the trial but are not taken, by why.
    passed_over: BTreeMap<&'static str, usize>,
}

struct RunAt {
    line: usize,
    time: SystemTime,
}

impl Taken {
    fn span(&self) -> Duration {
        match (self.runs.first(), self.runs.last()) {
            (Some(first), Some(last)) => last.time.duration_since(first.time).unwrap_or_default(),
            _ => Duration::ZERO,
        }
    }

    /// Too few runs or too short a span; a trial no run measured is not short, it did not run
    /// (a GPU trial on a host without one), and is kept or left out as any bless does.
    fn short(&self, selection: Selection) -> bool {
        let measured = !self.runs.is_empty() || !self.passed_over.is_empty();
        measured && (self.runs.len() < selection.runs || self.span() < selection.min_span)
    }

    /// `4 passing run(s) over 3m 12s; not taken: 2 slower, 1 with an unreadable time`.
    fn describe(&self) -> String {
        let mut text = format!(
            "{} passing run(s) over {}",
            self.runs.len(),
            humantime::format_duration(self.span())
        );
        if !self.passed_over.is_empty() {
            let others: Vec<String> = self
                .passed_over
                .iter()
                .map(|(why, n)| format!("{n} {why}"))
                .collect();
            let _ = write!(text, "; not taken: {}", others.join(", "));
        }
        text
    }
}

/// Every selected trial of the runs of this fingerprint, with its last `selection.runs` passing
/// runs.
fn select(
    lines: &[&HistoryLine],
    selection: Selection,
    suites: Option<Suites<'_>>,
    options: &BlessOptions<'_>,
) -> Vec<Taken> {
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for line in lines {
        for (name, trial) in &line.trials {
            let reader = trial.bless.as_ref().map(|facts| facts.reader.as_str());
            let selected = suites.is_none_or(|suites| suites.selected.contains(name));
            if selected && options.filter.matches(name, reader) {
                names.insert(name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| take_runs(lines, name, selection))
        .collect()
}

/// The trial's last passing runs, newest first until there are enough and they span enough
/// time (a burst of runs on a busy CI is not the runner's spread), then put in the order they ran.
fn take_runs(lines: &[&HistoryLine], name: &str, selection: Selection) -> Taken {
    let mut runs: Vec<(RunAt, TakenRun)> = Vec::new();
    let mut passed_over: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut tolerances = None;
    let mut limited = false;
    for (index, line) in lines.iter().enumerate().rev() {
        let spanned = match (runs.first(), runs.last()) {
            (Some((newest, _)), Some((oldest, _))) => {
                newest.time.duration_since(oldest.time).unwrap_or_default()
            }
            _ => Duration::ZERO,
        };
        if runs.len() >= selection.runs && spanned >= selection.min_span {
            break;
        }
        let Some(trial) = line.trials.get(name) else {
            continue;
        };
        if trial.status == Status::Ignored {
            continue;
        }
        // Limited in the latest run: the runner cannot do it now, whatever it did before. Not
        // blessed, and not short of runs either (none taken, none passed over).
        let outcome = trial.bless.as_ref().map(|facts| facts.outcome);
        if outcome == Some(Outcome::Limited) && runs.is_empty() && passed_over.is_empty() {
            limited = true;
            break;
        }
        let why_not = match (&trial.bless, trial.figures()) {
            (None, _) => Some("from an older gate that did not record the outcome"),
            (Some(facts), _) if facts.outcome != Outcome::Passed => Some(not_passed(facts.outcome)),
            (Some(_), None) => Some("without measured passes"),
            (Some(facts), Some(figures)) => match humantime::parse_rfc3339_weak(&line.time) {
                Ok(time) => {
                    tolerances.get_or_insert(Tolerances {
                        throughput: trial.tolerance,
                        cpu: facts.cpu_tolerance,
                        load: facts.load_tolerance,
                        latency: facts.latency_tolerance,
                    });
                    runs.push((
                        RunAt { line: index, time },
                        TakenRun {
                            figures,
                            confirmations: Vec::new(),
                        },
                    ));
                    None
                }
                Err(_) => Some("with an unreadable time"),
            },
        };
        if let Some(why) = why_not {
            *passed_over.entry(why).or_default() += 1;
        }
    }
    runs.reverse();
    let (at, taken): (Vec<RunAt>, Vec<TakenRun>) = runs.into_iter().unzip();
    let why_missing = if limited {
        "limited by this runner in the latest run".to_string()
    } else if passed_over.is_empty() {
        "did not run in the history's runs of this fingerprint".to_string()
    } else {
        "no passing run in the history's runs of this fingerprint".to_string()
    };
    Taken {
        rounds: TrialRounds {
            name: name.to_string(),
            // A trial with no taken run records nothing: its tolerances are never used.
            tolerances: tolerances.unwrap_or(Tolerances {
                throughput: 0.0,
                cpu: 0.0,
                load: 0.0,
                latency: 0.0,
            }),
            runs: taken.into_iter().map(Some).collect(),
            why_missing,
        },
        runs: at,
        passed_over,
    }
}

fn not_passed(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Slower => "slower",
        Outcome::Costlier => "costlier",
        Outcome::Failed => "failed",
        Outcome::PathChanged => "path-changed",
        Outcome::ChecksumChanged => "checksum-changed",
        Outcome::Limited => "limited",
        Outcome::Missing | Outcome::Ignored | Outcome::Passed => "not passed",
    }
}

/// One line per distinct shortfall, naming its trials (the first three and how many more): a
/// suite whose trials all ran in the same runs gets one line, not one per trial.
fn grouped(short: &[&Taken]) -> Vec<String> {
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for taken in short {
        groups
            .entry(taken.describe())
            .or_default()
            .push(&taken.rounds.name);
    }
    groups
        .into_iter()
        .map(|(what, names)| {
            let mut shown = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            if names.len() > 3 {
                let _ = write!(shown, " and {} more", names.len() - 3);
            }
            format!("{shown}: {what}")
        })
        .collect()
}

/// Let CI runs accumulate, or bless by running the suite.
fn accumulate_help(options: &BlessOptions<'_>, history: &Path) -> String {
    let run_suite = bless_command(
        options.runner,
        options.baseline_path,
        &options.scope.with_source(Source::Run),
        None,
        options.accept_fingerprint,
        options.remove_missing,
    ) + &options.filter.to_args();
    format!(
        "let this runner's gate runs accumulate in `{}` (every run appends one line) and bless from it again, or bless by running the suite {BLESS_RUNS} times: {run_suite}",
        history.display()
    )
}

/// The same bless asking for what the history has: the fewest runs and the shortest span of the
/// short trials; none when a trial has fewer runs than measure a spread at all.
fn fewer_command(options: &BlessOptions<'_>, path: &Path, short: &[&Taken]) -> Option<String> {
    let runs = short.iter().map(|t| t.runs.len()).min().unwrap_or(0);
    if runs < MIN_RUNS {
        return None;
    }
    let span = short.iter().map(|t| t.span()).min().unwrap_or_default();
    let scope = Scope {
        history: (path != Path::new(crate::history::DEFAULT)).then(|| path.to_path_buf()),
        ..options.scope.with_source(Source::History)
    };
    let mut command = bless_command(
        options.runner,
        options.baseline_path,
        &scope,
        None,
        options.accept_fingerprint,
        options.remove_missing,
    );
    let _ = write!(
        command,
        " --history-runs {runs} --min-span {}s{}",
        span.as_secs(),
        options.filter.to_args()
    );
    Some(command)
}
