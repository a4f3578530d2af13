//! Bless from history: which runs it takes, that it records them as a bless that ran them would,
//! and what it refuses. Fixture histories: runs two minutes apart at chosen levels.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::{options, run, scratch};
use crate::bless::history::{Selection, Suites, bless_from_history};
use crate::bless::{BlessError, BlessOptions, Filter, TrialChange, bless};
use crate::compare::RunResults;
use crate::control::ControlReading;
use crate::file::{self, Baseline, Loaded};
use crate::fingerprint::Fingerprint;
use crate::fixtures::{self, BASE, CHECKSUM};
use crate::history::{History, HistoryLine};
use gds_model::outcome::Outcome;
use gds_model::record::TrialRecord;

/// Run levels, every one different, so that a baseline's run medians say which runs it took.
fn level(i: usize) -> f64 {
    1.0 + 0.01 * i as f64
}

/// Run `i`'s records: `s::a` and `s::b` at [`level`] `i`, with CPU cost, and a GPU trial that
/// could not run here.
fn records(i: usize) -> Vec<TrialRecord> {
    let passes = BASE.map(|g| g * level(i));
    vec![
        fixtures::with_cpu(
            fixtures::passed("s::a", &passes, "nvfs", CHECKSUM),
            &[0.40, 0.41, 0.39, 0.40, 0.42],
        ),
        fixtures::passed("s::b", &passes, "nvfs", CHECKSUM),
        fixtures::ignored("s::gpu"),
    ]
}

fn control(i: usize) -> ControlReading {
    ControlReading {
        size: 1 << 20,
        disk_gbps: vec![1.5 * level(i), 1.6],
        cpu_gib_per_s: vec![3.0, 3.1],
        cpu_share: vec![1.0, 0.99],
        memory_gbps: vec![8.0, 8.2],
        host: Some(crate::fixtures::host(0.3, 0.02)),
        direct: true,
    }
}

/// Run `i`, two minutes after run `i - 1`.
fn line(i: usize, records: &[TrialRecord], fingerprint: &Fingerprint) -> HistoryLine {
    let time = format!("2026-03-01T10:{:02}:00Z", 2 * i);
    HistoryLine {
        control: Some(control(i)),
        ..HistoryLine::new(time, "r1", "gpu01", fingerprint, records)
    }
}

fn history(lines: Vec<HistoryLine>) -> History {
    History {
        lines,
        skipped: Vec::new(),
    }
}

fn read(path: &Path) -> Baseline {
    match file::read(path).unwrap() {
        Loaded::Present(baseline) => baseline,
        Loaded::Absent => panic!("no baseline at {}", path.display()),
    }
}

/// Ten runs over 18 minutes: enough for the defaults.
fn ten_runs() -> Vec<HistoryLine> {
    let fp = fixtures::fingerprint();
    (0..10).map(|i| line(i, &records(i), &fp)).collect()
}

#[test]
fn ten_passing_runs_give_the_baseline_a_bless_of_those_runs_gives() {
    let (s, other) = (scratch(), scratch());
    let from_history = &other.path;
    let filter = Filter::default();
    let lines = ten_runs();
    let outcome = bless_from_history(
        &history(lines.clone()),
        Path::new("h.jsonl"),
        Selection::default(),
        None,
        &options(from_history, &filter),
    )
    .unwrap();
    assert!(outcome.written, "{outcome}");
    let shown = outcome.to_string();
    assert!(shown.contains("+ s::a: level"), "{shown}");
    assert!(
        shown.contains(
            "from the history `h.jsonl`: 10 run(s) from 2026-03-01T10:00:00Z to 2026-03-01T10:18:00Z (18m)"
        ),
        "{shown}"
    );

    let fp = fixtures::fingerprint();
    let rounds: Vec<Vec<TrialRecord>> = (0..10).map(records).collect();
    let controls: Vec<ControlReading> = (0..10).map(control).collect();
    let runs: Vec<RunResults> = rounds
        .iter()
        .zip(&controls)
        .map(|(records, control)| RunResults {
            control: Some(control),
            ..run(records, &fp)
        })
        .collect();
    bless(&runs, &options(&s.path, &filter)).unwrap();
    let (ran, taken) = (read(&s.path), read(from_history));
    assert_eq!(taken.trials, ran.trials);
    assert_eq!(taken.control, ran.control);
    assert_eq!(taken.fingerprint, ran.fingerprint);
    assert!(taken.trials["s::a"].cpu_runs.is_some());
    assert!(!taken.trials.contains_key("s::gpu"), "it did not run");
}

#[test]
fn a_trial_no_suite_defines_any_more_is_not_blessed_back() {
    let s = scratch();
    let filter = Filter::default();
    let history = history(ten_runs());
    let path = Path::new("h.jsonl");
    bless_from_history(
        &history,
        path,
        Selection::default(),
        None,
        &options(&s.path, &filter),
    )
    .unwrap();
    assert!(read(&s.path).trials.contains_key("s::b"));
    // `s::b` left its suite; `s::gpu` is defined but not selected.
    let defined: BTreeSet<String> = ["s::a", "s::gpu"].map(String::from).into();
    let selected: BTreeSet<String> = ["s::a"].map(String::from).into();
    let suites = Suites {
        defined: &defined,
        selected: &selected,
    };
    let remove = BlessOptions {
        remove_missing: true,
        ..options(&s.path, &filter)
    };
    let outcome =
        bless_from_history(&history, path, Selection::default(), Some(suites), &remove).unwrap();
    let removed: Vec<&str> = outcome
        .changes
        .iter()
        .filter_map(|change| match change {
            TrialChange::Removed { trial, why, .. } => Some((trial.as_str(), why.as_str())),
            _ => None,
        })
        .map(|(trial, why)| {
            assert_eq!(why, "no suite defines it");
            trial
        })
        .collect();
    assert_eq!(removed, ["s::b"], "{outcome}");
    assert_eq!(read(&s.path).trials.keys().collect::<Vec<_>>(), ["s::a"]);
}

#[test]
fn runs_that_did_not_pass_or_measured_another_stack_are_not_taken() {
    let s = scratch();
    let fp = fixtures::fingerprint();
    let old_driver = Fingerprint {
        driver: Some("570.86".into()),
        ..fp.clone()
    };
    let mut lines: Vec<HistoryLine> = (0..2).map(|i| line(i, &records(i), &old_driver)).collect();
    for i in 2..14 {
        let mut records = records(i);
        // Run 5 was slower than the baseline of the day; run 9 took another path.
        match i {
            5 => records[0].status = Outcome::Slower,
            9 => records[0].status = Outcome::PathChanged,
            _ => {}
        }
        lines.push(line(i, &records, &fp));
    }
    let selection = Selection {
        runs: 10,
        min_span: Duration::from_secs(600),
    };
    let filter = Filter::default();
    let outcome = bless_from_history(
        &history(lines),
        Path::new("h.jsonl"),
        selection,
        None,
        &options(&s.path, &filter),
    )
    .unwrap();
    // Runs 2 to 13 are taken by one trial or the other; 0 and 1 ran on the old driver.
    let shown = outcome.to_string();
    assert!(
        shown.contains(": 12 run(s) from 2026-03-01T10:04:00Z to 2026-03-01T10:26:00Z (22m); 2 run(s) of another fingerprint not taken"),
        "{shown}"
    );
    let baseline = read(&s.path);
    let taken = |trial: &str| -> Vec<usize> {
        let medians = &baseline.trials[trial].run_medians_gbps;
        (0..14)
            .filter(|&i| medians.contains(&gds_model::numbers::round_rate(2.0 * level(i))))
            .collect()
    };
    assert_eq!(taken("s::a"), [2, 3, 4, 6, 7, 8, 10, 11, 12, 13]);
    assert_eq!(taken("s::b"), (4..14).collect::<Vec<_>>());
    assert_eq!(baseline.fingerprint.driver.as_deref(), Some("580.159"));
}

#[test]
fn a_burst_of_close_runs_takes_earlier_runs_until_they_span_enough() {
    let s = scratch();
    let fp = fixtures::fingerprint();
    let mut lines = ten_runs();
    // Ten more runs an hour later, 5 s apart: the last ten span 45 s.
    lines.extend((10..20).map(|i| {
        let time = format!("2026-03-01T11:00:{:02}Z", 5 * (i - 10));
        HistoryLine::new(time, "r1", "gpu01", &fp, &records(i))
    }));
    let filter = Filter::default();
    let outcome = bless_from_history(
        &history(lines),
        Path::new("h.jsonl"),
        Selection::default(),
        None,
        &options(&s.path, &filter),
    )
    .unwrap();
    let shown = outcome.to_string();
    assert!(
        shown.contains("11 run(s) from 2026-03-01T10:18:00Z to 2026-03-01T11:00:45Z"),
        "{shown}"
    );
    assert_eq!(read(&s.path).trials["s::a"].runs.len(), 11);
}

#[test]
fn too_few_runs_or_too_short_a_span_are_refused_with_what_was_found_and_what_to_do() {
    let s = scratch();
    let filter = Filter::default();
    let lines = ten_runs();
    let refuse = |lines: &[HistoryLine], selection: Selection| {
        let error = bless_from_history(
            &history(lines.to_vec()),
            Path::new("runs/h.jsonl"),
            selection,
            None,
            &options(&s.path, &filter),
        )
        .unwrap_err();
        assert!(matches!(error, BlessError::FromHistory { .. }), "{error}");
        assert_eq!(file::read(&s.path).unwrap(), Loaded::Absent);
        error.to_string()
    };
    let shown = refuse(&lines[..5], Selection::default());
    assert!(
        shown
            .starts_with("refusing to bless from the history `runs/h.jsonl`: too few passing runs"),
        "{shown}"
    );
    assert!(
        shown.contains("(10 runs over at least 10m wanted)"),
        "{shown}"
    );
    assert!(
        shown.contains("s::a, s::b: 5 passing run(s) over 8m"),
        "{shown}"
    );
    assert!(shown.contains("accumulate in `runs/h.jsonl`"), "{shown}");
    assert!(
        shown.contains("--history-runs 5 --min-span 480s"),
        "{shown}"
    );
    // Ten runs, but over 18 minutes where an hour is asked for.
    let hour = Selection {
        runs: 10,
        min_span: Duration::from_secs(3600),
    };
    let shown = refuse(&lines, hour);
    assert!(shown.contains("10 passing run(s) over 18m"), "{shown}");
    // Lines of a gate that did not record outcomes are named as such, never taken.
    let mut old = lines.clone();
    for line in &mut old[..6] {
        for trial in line.trials.values_mut() {
            trial.bless = None;
        }
    }
    let shown = refuse(&old, Selection::default());
    assert!(
        shown.contains("4 passing run(s) over 6m; not taken: 6 from an older gate that did not record the outcome"),
        "{shown}"
    );
    // Too few to measure a spread at all: no smaller bless is offered.
    let shown = refuse(&lines[..2], Selection::default());
    assert!(!shown.contains("--history-runs"), "{shown}");
}

#[test]
fn no_history_another_runners_or_ci_are_refused_plainly() {
    let s = scratch();
    let filter = Filter::default();
    let attempt = |history: &History, options: &BlessOptions<'_>| {
        bless_from_history(
            history,
            &s.path.with_file_name("none.jsonl"),
            Selection::default(),
            None,
            options,
        )
        .unwrap_err()
        .to_string()
    };
    let shown = attempt(&History::default(), &options(&s.path, &filter));
    assert!(shown.contains("there is no such file"), "{shown}");
    assert!(
        shown.contains("bless by running the suite 6 times"),
        "{shown}"
    );
    let others = history(ten_runs());
    let other_runner = BlessOptions {
        runner: "r2",
        ..options(&s.path, &filter)
    };
    let shown = attempt(&others, &other_runner);
    assert!(
        shown.contains("holds no run of runner `r2` (10 run(s) of other runners)"),
        "{shown}"
    );
    let ci = BlessOptions {
        ci: true,
        ..options(&s.path, &filter)
    };
    let shown = attempt(&others, &ci);
    assert!(
        shown.contains("refusing to write baselines in CI"),
        "{shown}"
    );
}
