//! A runner's recorded limitation, end to end on a host without a GPU: with `--require-gpu` the
//! cufile trial cannot pass here, for the doctor's reason, as `strict-gds` cannot where
//! nvidia-fs is not loaded. Recorded, the run passes with the trial `limited` in every sink, and
//! bless and bless from history work; the same trial failing for another reason still fails.

pub mod support;

use std::fs;

use support::Scratch;

const SUITE: &str = "suite: lim\nscenarios:\n  - name: read\n    files: { size: 2MiB, seed: 5 }\n    reader: [posix, cufile]\n    warmup: 0\n    repetitions: 2\n";
const CUFILE: &str = "lim::read[reader=cufile]";

fn args<'a>(suite: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = more.to_vec();
    args.extend(["--suite", suite, "--require-gpu", "--runner", "cpu-host"]);
    args
}

fn status(scratch: &Scratch, trial: &str) -> String {
    scratch.report()["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == trial)
        .map(|t| t["status"].as_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn a_recorded_limitation_passes_the_run_fails_for_another_reason_and_lets_bless_work() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SUITE);
    let suite = suite.to_str().unwrap();
    let first = scratch.gate(&args(suite, &[]));
    if !first.stdout.contains("GPU trial could not run") {
        eprintln!("skipped: this host runs GPU trials");
        return;
    }
    assert_eq!(first.code, 1, "{first:?}");

    // In CI a limitation is never recorded: it is reviewed, as a baseline is.
    let in_ci = scratch.gate_with(&args(suite, &["limitation", "record"]), &[("CI", "true")]);
    assert_eq!(in_ci.code, 2, "{in_ci:?}");
    assert!(in_ci.stderr.contains("refusing to record"), "{in_ci:?}");

    let record = scratch.gate(&args(suite, &["limitation", "record"]));
    assert_eq!(record.code, 0, "{record:?}");
    assert!(
        record
            .stdout
            .contains(&format!("+ {CUFILE}: GPU trial could not run")),
        "{record:?}"
    );
    assert!(
        record
            .stdout
            .contains("not recorded: lim::read[reader=posix]"),
        "{record:?}"
    );
    let file = scratch.path("baselines/limitations/cpu-host.yaml");
    assert!(fs::read_to_string(&file).unwrap().contains(CUFILE));

    let limited = scratch.gate_with(&args(suite, &[]), &[("GITHUB_ACTIONS", "true")]);
    assert_eq!(limited.code, 0, "{limited:?}");
    assert!(
        limited
            .stdout
            .contains("limited by this runner, as recorded: GPU trial could not run"),
        "{limited:?}"
    );
    assert!(
        limited.stdout.contains("::notice ") && limited.stdout.contains("limited by this runner"),
        "{limited:?}"
    );
    assert!(
        limited
            .stderr
            .contains("a recorded limitation of this runner"),
        "{limited:?}"
    );
    assert_eq!(status(&scratch, CUFILE), "limited");
    assert_eq!(scratch.report()["totals"]["limited"], 1);
    let junit = fs::read_to_string(scratch.out().join("junit.xml")).unwrap();
    assert!(junit.contains("type=\"limited\""), "{junit}");
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("1 passed, 1 limited")
            && summary.contains(&format!("| `{CUFILE}` | limited |")),
        "{summary}"
    );
    support::validate_reports(&scratch.out());

    let blessed = scratch.gate_with(
        &args(suite, &["bless", "--runs", "2"]),
        &[("GDS_GATE_BLESS_INTERVAL", "0")],
    );
    assert_eq!(blessed.code, 0, "{blessed:?}");
    let baseline = fs::read_to_string(scratch.path("baselines/cpu-host.yaml")).unwrap();
    assert!(
        !baseline.contains(CUFILE),
        "a limited trial has no level to bless:\n{baseline}"
    );
    let from_history = scratch.gate(&args(
        suite,
        &[
            "bless",
            "--from-history",
            "--history-runs",
            "2",
            "--min-span",
            "0s",
        ],
    ));
    assert_eq!(from_history.code, 0, "{from_history:?}");

    // Fixture: the doctor's finding as a host whose reason changed would have recorded it.
    let text = fs::read_to_string(&file).unwrap();
    fs::write(
        &file,
        text.replace("GPU trial could not run", "GPU trial could not run, once"),
    )
    .unwrap();
    let other = scratch.gate(&args(suite, &[]));
    assert_eq!(other.code, 1, "{other:?}");
    assert!(
        other
            .stdout
            .contains("not the runner's recorded limitation: the doctor now gives another reason"),
        "{other:?}"
    );
    assert_eq!(status(&scratch, CUFILE), "failed");

    let dropped = scratch.gate(&args(suite, &["limitation", "drop", CUFILE, "--exact"]));
    assert_eq!(dropped.code, 0, "{dropped:?}");
    assert!(
        dropped.stdout.contains(&format!("- {CUFILE}")),
        "{dropped:?}"
    );
    assert!(!file.exists());
}
