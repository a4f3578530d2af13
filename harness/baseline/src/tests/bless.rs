//! Bless: what it refuses, what it writes, and the diff it prints.

use std::collections::BTreeSet;

use super::{blessed, options, run, scratch};
use crate::bless::{BlessError, Filter, TrialChange, bless};
use crate::compare::RunResults;
use crate::file::{self, Loaded};
use crate::fingerprint::Fingerprint;
use crate::fixtures::{self, BASE, CHECKSUM, FAST, NOISE, SLOW};
use gds_model::record::TrialRecord;

#[test]
fn bless_refuses_a_failing_run_and_writes_nothing() {
    let s = scratch();
    let records = [
        fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
        fixtures::failed("s::b", &BASE),
    ];
    let fp = fixtures::fingerprint();
    let error = bless(&[run(&records, &fp)], &options(&s.path, &Filter::default())).unwrap_err();
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
        bless(&[run(&records, &fp)], &options(&s.path, &filter))
            .unwrap()
            .written
    );
}

#[test]
fn bless_takes_the_trials_a_run_with_the_same_filter_runs() {
    // libtest matches `[reader] name`: `posix` selects a posix trial whatever its name.
    let filter = Filter {
        patterns: vec!["posix".into()],
        exact: false,
    };
    assert!(filter.matches("s::multi-file", Some("posix")));
    assert!(!filter.matches("s::multi-file", Some("cufile")));
    assert!(!filter.matches("s::multi-file", None));
    let exact = Filter {
        patterns: vec!["[posix] s::a".into()],
        exact: true,
    };
    assert!(exact.matches("s::a", Some("posix")));
    assert!(!exact.matches("s::ab", Some("posix")));
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
    let shown = bless(&[run(&records, &fp)], &options)
        .unwrap_err()
        .to_string();
    assert!(
        shown.starts_with("refusing to write baselines in CI"),
        "{shown}"
    );
    assert!(shown.contains("bless --runner r1 --baselines"), "{shown}");
    assert!(shown.contains(" 'kvikio[compat=OFF]'"), "{shown}");
    assert!(
        shown.contains(" --from target/gds-gate/report.json 'kvikio[compat=OFF]'"),
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
    let error = bless(&[run(&records, &upgraded)], &options(&s.path, &filter)).unwrap_err();
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
    let outcome = bless(&[run(&records, &upgraded)], &accepting).unwrap();
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
    let outcome = bless(&[run(&records, &fp)], &options(&s.path, &filter)).unwrap();
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
    let outcome = bless(&[run(&records, &fp)], &later).unwrap();
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
        shown.contains("  + s::c: 2.58 GB/s from 1 run of 5 passes (2.50–2.62), path host"),
        "{shown}"
    );
    assert!(shown.contains("unchanged: 1 trial(s)"), "{shown}");
    // Blessed from one run, the new trial's spread is unknown: counted in one line, and the
    // outcome keeps what it means.
    assert!(
        shown.contains("  note: 3 trial(s) spread more from run to run than their tolerance"),
        "{shown}"
    );
    let c = outcome
        .insensitive
        .iter()
        .find(|(trial, _)| trial == "s::c");
    assert!(
        c.is_some_and(|(_, threshold)| threshold.contains("slower means below 2.32 GB/s (−10.0% of the level 2.58 GB/s): the tolerance of 10% alone, since 1 blessed run(s) cannot show")),
        "{:?}",
        outcome.insensitive
    );
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
        judged: None,
        records: &records,
        defined: Some(&defined),
        fingerprint: &fp,
        control: None,
    };
    let filter = Filter::default();
    let outcome = bless(std::slice::from_ref(&results), &options(&s.path, &filter)).unwrap();
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
    let outcome = bless(std::slice::from_ref(&results), &removing).unwrap();
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
        let error =
            bless(&[run(&records, &fp)], &options(&s.path, &Filter::default())).unwrap_err();
        assert!(matches!(error, BlessError::Baseline(_)), "{error}");
        assert_eq!(std::fs::read_to_string(&s.path).unwrap(), text);
    }
}

/// A bless without `--runs` grows while a trial cannot see a 20% drop: the GPU runner's drill
/// bless whose posix run medians were 1.33, 1.54, 1.63, 1.84, 1.63, 1.54 GB/s (10.7% spread) is
/// told to take another run; its cufile trial (1.76–2.11, 8.1%) is not, nor a trial filtered out.
#[test]
fn a_spread_that_hides_a_20_percent_drop_asks_for_another_run() {
    use crate::bless::unseen;
    let medians = |runs: &[f64]| -> Vec<Vec<f64>> {
        runs.iter().map(|m| vec![m * 0.99, *m, m * 1.01]).collect()
    };
    let posix = medians(&[1.3276, 1.5378, 1.6289, 1.8441, 1.6257, 1.5402]);
    let cufile = medians(&[1.7614, 1.7622, 1.8879, 1.9119, 2.1122, 1.6842]);
    let runs: Vec<Vec<TrialRecord>> = posix
        .iter()
        .zip(&cufile)
        .map(|(p, c)| {
            vec![
                fixtures::passed("drill::posix", p, "host", CHECKSUM),
                fixtures::passed("drill::cufile", c, "cufile-posix", CHECKSUM),
            ]
        })
        .collect();
    let records: Vec<&[TrialRecord]> = runs.iter().map(Vec::as_slice).collect();
    let found = unseen(&records, &Filter::default()).expect("posix cannot see 20% from 6 runs");
    assert_eq!(found.trial, "drill::posix");
    assert!((found.spread - 0.107).abs() < 0.005, "{found:?}");
    assert_eq!(found.runs, 7, "{found:?}");
    let cufile_only = Filter {
        patterns: vec!["drill::cufile".into()],
        exact: true,
    };
    assert_eq!(unseen(&records, &cufile_only), None);
    // Fewer than 3 runs measure no spread: nothing to grow on.
    assert_eq!(unseen(&records[..2], &Filter::default()), None);
}
