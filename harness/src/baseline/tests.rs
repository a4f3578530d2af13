//! Comparison and bless on synthetic sample sets.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::bless::{BlessError, BlessOptions, Filter, TrialChange, bless};
use super::compare::{Judgement, Missing, RunResults, Severity, compare};
use super::file::{self, Loaded, Provenance};
use super::fingerprint::Fingerprint;
use super::fixtures::{self, BASE, CHECKSUM, FAST, NOISE, SLOW};
use super::render;
use super::saved;
use crate::cli::exit;
use crate::record::TrialRecord;

struct Scratch {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let path = file::path_for(&dir.path().join("baselines"), "r1").unwrap();
    Scratch { _dir: dir, path }
}

fn provenance() -> Provenance {
    Provenance {
        blessed_at: "2026-03-01T12:00:00Z".into(),
        gate_version: "0.1.0".into(),
        host: "gpu01".into(),
        revision: Some("abc1234".into()),
    }
}

fn options<'a>(path: &'a Path, filter: &'a Filter) -> BlessOptions<'a> {
    BlessOptions {
        runner: "r1",
        baseline_path: path,
        filter,
        accept_fingerprint: false,
        remove_missing: false,
        refresh: false,
        ci: false,
        provenance: provenance(),
    }
}

fn run<'a>(records: &'a [TrialRecord], fingerprint: &'a Fingerprint) -> RunResults<'a> {
    RunResults {
        records,
        defined: None,
        fingerprint,
    }
}

/// A baseline at `path` for `s::a` and `s::b` (both BASE, path nvfs) and `s::gpu`.
fn blessed(path: &Path) {
    let records = [
        fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
        fixtures::passed("s::b", &BASE, "nvfs", CHECKSUM),
        fixtures::passed("s::gpu", &BASE, "nvfs", CHECKSUM),
    ];
    let fp = fixtures::fingerprint();
    let outcome = bless(&run(&records, &fp), &options(path, &Filter::default())).unwrap();
    assert!(outcome.written);
}

/// Compares one record; the baseline's other trials count as filtered out.
fn judge_one(path: &Path, record: TrialRecord, fingerprint: &Fingerprint) -> super::Comparison {
    let loaded = file::read(path).unwrap();
    let defined: BTreeSet<String> = ["s::a", "s::b", "s::gpu", "s::new"]
        .map(String::from)
        .into();
    let records = [record];
    let results = RunResults {
        records: &records,
        defined: Some(&defined),
        fingerprint,
    };
    compare(&loaded, path, "r1", &results)
}

#[test]
fn clear_regression_fails_with_exit_3_and_says_what_to_do() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    let Judgement::Regression { throughput } = &a.judgement else {
        panic!("{a:?}");
    };
    assert!(
        throughput.drop() > 0.15 && throughput.p_slower <= 0.05,
        "{throughput:?}"
    );
    assert_eq!(comparison.exit_code(), Some(exit::REGRESSION));
    for needle in [
        "s::a: slower than its baseline by 19.",
        "expected: about 2.00 GB/s, at most 10% slower",
        "seen:     1.61 GB/s median of 5",
        "Mann–Whitney p = 0.004",
        "likely cause: the runner's fingerprint (GPU, driver",
        "cargo xtask gds-gate bless --runner r1 --baselines",
        "--exact s::a",
    ] {
        assert!(a.message.contains(needle), "{needle}\n{}", a.message);
    }
    assert!(!a.message.contains("--accept-fingerprint"), "{}", a.message);
    assert!(a.message.lines().count() <= 12, "{}", a.message);
}

#[test]
fn noise_only_passes() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Pass { .. }), "{a:?}");
    assert!(
        a.headline
            .starts_with("as fast as the baseline: 2.01 vs 2.00 GB/s"),
        "{}",
        a.headline
    );
    // s::b and s::gpu were filtered out: not judged.
    assert_eq!(comparison.trials.len(), 1);
    assert_eq!(comparison.not_selected, 2);
    assert_eq!(comparison.exit_code(), None);
    assert_eq!(comparison.worst(), Severity::Ok);
    // When the suites are unknown, a baseline trial absent from the run is missing.
    let records = [fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM)];
    let fp = fixtures::fingerprint();
    let comparison = compare(
        &file::read(&s.path).unwrap(),
        &s.path,
        "r1",
        &run(&records, &fp),
    );
    assert!(matches!(
        comparison.get("s::b").unwrap().judgement,
        Judgement::MissingTrial {
            cause: Missing::NotRun
        }
    ));
}

#[test]
fn improvement_is_reported_not_failed() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &FAST, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Faster { .. }), "{a:?}");
    assert!(
        a.headline
            .starts_with("faster than baseline — consider blessing"),
        "{}",
        a.headline
    );
    assert_eq!(a.judgement.severity(), Severity::Notice);
}

#[test]
fn a_trial_that_vanished_fails() {
    let s = scratch();
    blessed(&s.path);
    let defined: BTreeSet<String> = ["s::a", "s::gpu"].map(String::from).into();
    let records = [
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        fixtures::ignored("s::gpu"),
    ];
    let fp = fixtures::fingerprint();
    let results = RunResults {
        records: &records,
        defined: Some(&defined),
        fingerprint: &fp,
    };
    let comparison = compare(&file::read(&s.path).unwrap(), &s.path, "r1", &results);
    assert_eq!(comparison.exit_code(), Some(exit::TRIAL_FAILED));
    let gpu = comparison.get("s::gpu").unwrap();
    assert!(
        matches!(&gpu.judgement, Judgement::MissingTrial { cause: Missing::Ignored { reason } } if reason.contains("libcuda")),
        "{gpu:?}"
    );
    assert!(
        gpu.message.contains("in the baseline, but did not run"),
        "{}",
        gpu.message
    );
    assert!(
        gpu.message.contains("--remove-missing --exact s::gpu"),
        "{}",
        gpu.message
    );
    // s::b is defined by no suite any more.
    let b = comparison.get("s::b").unwrap();
    assert!(matches!(
        b.judgement,
        Judgement::MissingTrial {
            cause: Missing::NotDefined
        }
    ));
    assert!(b.message.contains("renamed or removed"), "{}", b.message);
}

#[test]
fn a_path_change_fails_and_names_nvidia_fs() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "cufile-posix", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(&a.judgement, Judgement::PathChanged { from, to, .. } if from == "nvfs" && to == "cufile-posix"),
        "{a:?}"
    );
    assert_eq!(comparison.exit_code(), Some(exit::TRIAL_FAILED));
    assert!(a.message.contains("−19."), "{}", a.message);
    let unloaded = Fingerprint {
        nvidia_fs_loaded: false,
        ..fixtures::fingerprint()
    };
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "cufile-posix", CHECKSUM),
        &unloaded,
    );
    let message = &comparison.get("s::a").unwrap().message;
    assert!(
        message.contains("nvidia_fs_loaded: true → false"),
        "{message}"
    );
    assert!(
        message.contains("nvidia-fs is not loaded on this runner"),
        "{message}"
    );
}

#[test]
fn a_checksum_change_fails() {
    let s = scratch();
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &BASE, "nvfs", 0xdead),
        &fixtures::fingerprint(),
    );
    let a = comparison.get("s::a").unwrap();
    assert!(
        matches!(a.judgement, Judgement::ChecksumChanged { .. }),
        "{a:?}"
    );
    assert!(
        a.headline
            .contains("0x0123456789abcdef → 0x000000000000dead"),
        "{}",
        a.headline
    );
    assert_eq!(comparison.exit_code(), Some(exit::TRIAL_FAILED));
}

#[test]
fn a_changed_fingerprint_is_the_likely_cause_and_is_shown_even_when_all_pass() {
    let s = scratch();
    blessed(&s.path);
    let upgraded = Fingerprint {
        driver: Some("590.10".into()),
        kvikio: None,
        ..fixtures::fingerprint()
    };
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM),
        &upgraded,
    );
    assert!(comparison.runner_changed());
    let a = comparison.get("s::a").unwrap();
    assert!(
        a.message
            .contains("likely cause: the runner changed since the baseline was blessed: driver: 580.159 → 590.10"),
        "{}",
        a.message
    );
    assert!(
        a.message.contains("--accept-fingerprint --exact s::a"),
        "{}",
        a.message
    );
    // Passing trials still show the change, in the console text and in summary.md.
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        &upgraded,
    );
    let text = render::console(&comparison);
    assert!(
        text.contains("the runner changed since the baseline was blessed"),
        "{text}"
    );
    assert!(text.contains("  driver: 580.159 → 590.10"), "{text}");
    assert!(
        text.contains("not observed in this run (kept from the baseline): kvikio"),
        "{text}"
    );
    let markdown = render::markdown(&comparison, &[], Path::new("target/gds-gate"));
    assert!(
        markdown.contains("**The runner changed since the baseline**"),
        "{markdown}"
    );
}

#[test]
fn no_baseline_and_new_trials_are_notices() {
    let s = scratch();
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    assert!(!comparison.baseline_found);
    assert!(matches!(
        comparison.trials[0].judgement,
        Judgement::NoBaseline
    ));
    assert_eq!(comparison.exit_code(), None);
    assert!(render::console(&comparison).contains("cargo xtask gds-gate bless --runner r1"));
    blessed(&s.path);
    let comparison = judge_one(
        &s.path,
        fixtures::passed("s::new", &BASE, "nvfs", CHECKSUM),
        &fixtures::fingerprint(),
    );
    let new = comparison.get("s::new").unwrap();
    assert!(matches!(new.judgement, Judgement::NewTrial));
    assert!(new.message.contains("--exact s::new"), "{}", new.message);
}

#[test]
fn bless_refuses_a_failing_run_and_writes_nothing() {
    let s = scratch();
    let records = [
        fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
        fixtures::failed("s::b", &BASE),
    ];
    let fp = fixtures::fingerprint();
    let error = bless(&run(&records, &fp), &options(&s.path, &Filter::default())).unwrap_err();
    let shown = error.to_string();
    assert!(matches!(error, BlessError::FailedTrials { .. }), "{shown}");
    assert!(
        shown.contains("refusing to bless from a failing run"),
        "{shown}"
    );
    assert!(shown.contains("s::b: wrong path"), "{shown}");
    assert_eq!(file::read(&s.path).unwrap(), Loaded::Absent);
    // Narrowed to the trial that passed, it goes through.
    let filter = Filter {
        patterns: vec!["s::a".into()],
        exact: true,
    };
    assert!(
        bless(&run(&records, &fp), &options(&s.path, &filter))
            .unwrap()
            .written
    );
}

#[test]
fn bless_refuses_in_ci_and_prints_the_local_command() {
    let s = scratch();
    let records = [fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM)];
    let fp = fixtures::fingerprint();
    let filter = Filter {
        patterns: vec!["kvikio[compat=OFF]".into()],
        exact: false,
    };
    let mut options = options(&s.path, &filter);
    options.ci = true;
    let shown = bless(&run(&records, &fp), &options)
        .unwrap_err()
        .to_string();
    assert!(
        shown.starts_with("refusing to write baselines in CI"),
        "{shown}"
    );
    assert!(shown.contains("bless --runner r1 --baselines"), "{shown}");
    assert!(shown.contains(" 'kvikio[compat=OFF]'"), "{shown}");
    assert!(
        shown.contains("bless --from target/gds-gate/report.json --runner r1"),
        "{shown}"
    );
    assert_eq!(file::read(&s.path).unwrap(), Loaded::Absent);
}

#[test]
fn bless_refuses_a_changed_fingerprint_unless_accepted() {
    let s = scratch();
    blessed(&s.path);
    let before = std::fs::read(&s.path).unwrap();
    let upgraded = Fingerprint {
        kernel: Some("6.11.0".into()),
        ..fixtures::fingerprint()
    };
    let records = [fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM)];
    let filter = Filter::default();
    let error = bless(&run(&records, &upgraded), &options(&s.path, &filter)).unwrap_err();
    let shown = error.to_string();
    assert!(
        shown.contains("the runner changed since its baseline was blessed"),
        "{shown}"
    );
    assert!(
        shown.contains("kernel: 6.8.0-60-generic → 6.11.0"),
        "{shown}"
    );
    assert!(shown.contains("--accept-fingerprint"), "{shown}");
    assert_eq!(std::fs::read(&s.path).unwrap(), before);
    let mut accepting = options(&s.path, &filter);
    accepting.accept_fingerprint = true;
    let outcome = bless(&run(&records, &upgraded), &accepting).unwrap();
    let shown = outcome.to_string();
    assert!(
        shown.contains("fingerprint: kernel: 6.8.0-60-generic → 6.11.0"),
        "{shown}"
    );
    // On a new stack every selected trial is re-measured, even within noise.
    assert!(shown.contains("~ s::a: median 2.00 → 2.01 GB/s"), "{shown}");
    let Loaded::Present(baseline) = file::read(&s.path).unwrap() else {
        panic!()
    };
    assert_eq!(baseline.fingerprint.kernel.as_deref(), Some("6.11.0"));
}

#[test]
fn bless_writes_only_what_changed_and_prints_the_diff() {
    let s = scratch();
    blessed(&s.path);
    let before = std::fs::read_to_string(&s.path).unwrap();
    let fp = fixtures::fingerprint();
    let filter = Filter::default();
    // Noise only: nothing to write, the file is untouched.
    let records = [
        fixtures::passed("s::a", &NOISE, "nvfs", CHECKSUM),
        fixtures::passed("s::b", &NOISE, "nvfs", CHECKSUM),
    ];
    let outcome = bless(&run(&records, &fp), &options(&s.path, &filter)).unwrap();
    assert!(!outcome.written);
    assert!(outcome.to_string().starts_with("up to date: "), "{outcome}");
    assert!(
        outcome
            .to_string()
            .contains("unchanged: 2 trial(s) within noise"),
        "{outcome}"
    );
    assert_eq!(std::fs::read_to_string(&s.path).unwrap(), before);
    // A slower s::a, a new s::c, s::b within noise: only s::a and s::c change.
    let records = [
        fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM),
        fixtures::passed("s::b", &NOISE, "nvfs", CHECKSUM),
        fixtures::passed("s::c", &FAST, "host", CHECKSUM),
    ];
    let mut later = options(&s.path, &filter);
    later.provenance.blessed_at = "2026-03-02T08:00:00Z".into();
    let outcome = bless(&run(&records, &fp), &later).unwrap();
    let shown = outcome.to_string();
    assert!(
        shown.starts_with(&format!("updating: {}\n", s.path.display())),
        "{shown}"
    );
    assert!(
        shown.contains("  ~ s::a: median 2.00 → 1.61 GB/s (−19.5%)"),
        "{shown}"
    );
    assert!(
        shown.contains("  + s::c: 2.58 GB/s median of 5 (2.50–2.62), path host"),
        "{shown}"
    );
    assert!(shown.contains("unchanged: 1 trial(s)"), "{shown}");
    let after = std::fs::read_to_string(&s.path).unwrap();
    let changed_lines = diff_lines(&before, &after);
    // s::a's figures and bless time, s::c's block, and the file's provenance; nothing of s::b.
    assert!(
        changed_lines.iter().all(|line| !line.contains("s::b")),
        "{changed_lines:?}"
    );
    assert!(changed_lines.len() < 40, "{changed_lines:?}");
}

/// Lines of `after` that a line diff against `before` shows as added (longest common subsequence).
fn diff_lines(before: &str, after: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut added) = (0, 0, Vec::new());
    while j < b.len() {
        if i < a.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            added.push(b[j].to_string());
            j += 1;
        }
    }
    added
}

#[test]
fn missing_trials_are_kept_unless_asked_to_remove_them() {
    let s = scratch();
    blessed(&s.path);
    let defined: BTreeSet<String> = ["s::a", "s::gpu"].map(String::from).into();
    let records = [
        fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM),
        fixtures::ignored("s::gpu"),
    ];
    let fp = fixtures::fingerprint();
    let results = RunResults {
        records: &records,
        defined: Some(&defined),
        fingerprint: &fp,
    };
    let filter = Filter::default();
    let outcome = bless(&results, &options(&s.path, &filter)).unwrap();
    let shown = outcome.to_string();
    assert!(
        shown.contains("kept: s::gpu (did not run: no NVIDIA driver"),
        "{shown}"
    );
    assert!(
        shown.contains("kept: s::b (no suite defines it)"),
        "{shown}"
    );
    let mut removing = options(&s.path, &filter);
    removing.remove_missing = true;
    let outcome = bless(&results, &removing).unwrap();
    let removed: Vec<&str> = outcome
        .changes
        .iter()
        .filter_map(|c| match c {
            TrialChange::Removed { trial, .. } => Some(trial.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(removed, ["s::gpu", "s::b"]);
    let Loaded::Present(baseline) = file::read(&s.path).unwrap() else {
        panic!()
    };
    assert_eq!(baseline.trials.keys().collect::<Vec<_>>(), ["s::a"]);
}

#[test]
fn bless_never_overwrites_a_corrupt_or_newer_baseline() {
    let s = scratch();
    std::fs::create_dir_all(s.path.parent().unwrap()).unwrap();
    let records = [fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM)];
    let fp = fixtures::fingerprint();
    for text in [
        "schema_version: 1\nrunner: [\n",
        "schema_version: 7\nrunner: r1\n",
    ] {
        std::fs::write(&s.path, text).unwrap();
        let error = bless(&run(&records, &fp), &options(&s.path, &Filter::default())).unwrap_err();
        assert!(matches!(error, BlessError::Baseline(_)), "{error}");
        assert_eq!(std::fs::read_to_string(&s.path).unwrap(), text);
    }
}

#[test]
fn bless_from_a_saved_report() {
    let s = scratch();
    let records = vec![
        fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
        fixtures::ignored("s::gpu"),
    ];
    let host = crate::host::HostFacts::probe();
    let report = serde_json::json!({
        "schema_version": crate::report::SCHEMA_VERSION,
        "gate_version": "0.1.0",
        "started_at": "2026-03-01T12:00:00Z",
        "duration_seconds": 12.5,
        "command": ["gds-gate"],
        "host": host,
        "data_dir": "target/gds-gate/data",
        "suites": [],
        "data": [],
        "trials": records,
        "totals": { "passed": 1, "failed": 0, "ignored": 1, "filtered_out": 0 },
        "notes": [],
        "runner": "r1",
    });
    let report_path = s.path.with_file_name("report.json");
    std::fs::create_dir_all(report_path.parent().unwrap()).unwrap();
    std::fs::write(&report_path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    let saved = saved::load_report(&report_path).unwrap();
    assert_eq!(saved.runner.as_deref(), Some("r1"));
    assert_eq!(
        saved.fingerprint.kernel.as_deref(),
        Some(host.kernel.as_str())
    );
    let filter = Filter::default();
    let outcome = saved::bless_from_report(&report_path, &options(&s.path, &filter)).unwrap();
    assert!(outcome.written, "{outcome}");
    let Loaded::Present(baseline) = file::read(&s.path).unwrap() else {
        panic!()
    };
    assert_eq!(baseline.trials.keys().collect::<Vec<_>>(), ["s::a"]);
    assert_eq!(baseline.provenance.revision.as_deref(), Some("abc1234"));
    // A report from a newer gate, and a file that is not a report, are clear errors.
    let newer = report
        .to_string()
        .replace("\"schema_version\":1", "\"schema_version\":9");
    std::fs::write(&report_path, newer).unwrap();
    let shown = saved::load_report(&report_path).unwrap_err().to_string();
    assert!(shown.contains("report has schema_version 9"), "{shown}");
    std::fs::write(&report_path, "{\"schema_version\": 1,\n \"trials\": 3}").unwrap();
    let shown = saved::load_report(&report_path).unwrap_err().to_string();
    assert!(shown.contains("report.json:"), "{shown}");
    assert!(shown.contains("not a usable gds-gate report"), "{shown}");
}
