//! What the binary prints for people to type next, run as they would paste it, and the command
//! line itself: `--version`, help that names the program and lists only working flags, usage
//! errors that exit 2 before anything runs.

pub mod support;

use std::process::Command;

use support::{GATE, Run, SMALL, Scratch, pin_baseline};

/// The repository root, where people run the gate.
fn repo() -> String {
    env!("CARGO_MANIFEST_DIR").to_owned() + "/../.."
}

/// A history for these tests' runs, which must not append to the repository's own.
const HISTORY: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/hints-history.jsonl");

/// Runs the gate with `args` only, from the repository root, outside CI.
fn gate(args: &[&str]) -> Run {
    Command::new(GATE)
        .args(args)
        .current_dir(repo())
        .env("GDS_GATE_HISTORY", HISTORY)
        // The runner's control at test size (256 MiB by default).
        .env("GDS_GATE_CONTROL_SIZE", "1MiB")
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap()
        .into()
}

/// The command on the line after the first `next:` that ends in "bless it on this runner:".
fn bless_hint(output: &str) -> String {
    let mut lines = output.lines();
    lines
        .find(|line| {
            line.trim_start().starts_with("next:") && line.ends_with("bless it on this runner:")
        })
        .unwrap_or_else(|| panic!("no bless hint in\n{output}"));
    lines.next().unwrap().trim().to_string()
}

/// Median of a trial in a baseline file.
fn baseline_median(path: &std::path::Path, trial: &str) -> f64 {
    use gds_gate::baseline::{Loaded, file};
    let Loaded::Present(baseline) = file::read(path).unwrap() else {
        panic!("no baseline at {}", path.display());
    };
    baseline.trials[trial].median_gbps
}

#[test]
fn pasted_bless_hints_bless_the_run_that_printed_them() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let baseline = scratch.path("baselines/box.yaml");
    let scope = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(ToString::to_string).collect();
        for (flag, value) in [
            ("--suite", suite.clone()),
            ("--data-dir", scratch.data()),
            ("--out", scratch.out()),
            ("--baselines", scratch.path("baselines")),
        ] {
            all.push(flag.into());
            all.push(value.display().to_string());
        }
        all
    };
    let blessed = gate(
        &scope(&["bless", "--runner", "box", "--runs", "1", "--interval", "0"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(blessed.code, 0, "{blessed:?}");
    // A level this host cannot reach, with no spread: the next run is slower whatever the load.
    pin_baseline(&baseline, 1000.0);
    let slower = gate(
        &scope(&["--runner", "box", "--confirm", "0"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(slower.code, 3, "{slower:?}");
    let hint = bless_hint(&slower.stdout);
    let pasted = hint
        .strip_prefix("cargo xtask gds-gate ")
        .unwrap_or_else(|| panic!("the hint is not a gds-gate command: {hint}"));
    for flag in ["--suite", "--data-dir", "--out", "--baselines", "--exact"] {
        assert!(pasted.contains(flag), "{flag} missing from {hint}");
    }
    // As a user pastes it (the shell does the quoting), with no wait between blessed runs.
    let rerun: Run = Command::new("sh")
        .arg("-c")
        .arg(format!("\"$GATE\" {pasted}"))
        .env("GATE", GATE)
        .env("GDS_GATE_BLESS_INTERVAL", "0")
        .env("GDS_GATE_HISTORY", HISTORY)
        .env("GDS_GATE_CONTROL_SIZE", "1MiB")
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .current_dir(repo())
        .output()
        .unwrap()
        .into();
    assert_eq!(rerun.code, 0, "{hint}\n{rerun:?}");
    assert!(rerun.stdout.contains("updating:"), "{rerun:?}");
    // The bless pull request shows summary.md: the blessed runs are drawn there.
    let summary = std::fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("```mermaid\nxychart-beta\n    title \"small::read\""),
        "{summary}"
    );
    let median = baseline_median(&baseline, "small::read");
    assert!(
        median < 1000.0,
        "the pasted bless left the pinned level: {median}"
    );
}

#[test]
fn a_bless_whose_filter_matches_nothing_fails() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let suite = suite.to_str().unwrap();
    let baselines = scratch.path("baselines");
    let out = scratch.out();
    let data = scratch.data();
    let common = [
        "--runner",
        "box",
        "--runs",
        "1",
        "--interval",
        "0",
        "--suite",
        suite,
        "--baselines",
        baselines.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ];
    let first = gate(&[&["bless"], &common[..]].concat());
    assert_eq!(first.code, 0, "{first:?}");
    // The baseline has a trial of its own to keep: still not "up to date".
    let none = gate(&[&["bless"], &common[..], &["no-such-trial"]].concat());
    assert_ne!(none.code, 0, "{none:?}");
    assert!(!none.stdout.contains("up to date"), "{none:?}");
    assert!(
        none.stderr
            .contains("no trial of this run matches the filter")
            || none.stderr.contains("matches none"),
        "{none:?}"
    );
}

#[test]
fn version_and_help_name_the_program_and_only_working_flags() {
    let version = gate(&["--version"]);
    assert_eq!(version.code, 0, "{version:?}");
    assert_eq!(
        version.stdout.trim(),
        format!("gds-gate {}", env!("CARGO_PKG_VERSION"))
    );
    for args in [&["--help"][..], &["bless", "--help"]] {
        let help = gate(args);
        assert_eq!(help.code, 0, "{help:?}");
        let first = help.stdout.lines().next().unwrap_or_default();
        assert!(first.starts_with("gds-gate"), "{args:?}: {first}");
        assert!(help.stdout.contains("Usage: gds-gate"), "{help:?}");
        assert!(help.stdout.contains("Exit status:"), "{help:?}");
        assert!(help.stdout.contains("--exact"), "{help:?}");
        for gone in [
            "--test-threads",
            "--nocapture",
            "--show-output",
            "--bench",
            "--ignored",
            "-Z",
            "in parallel",
            "USAGE: [OPTIONS]",
        ] {
            assert!(
                !help.stdout.contains(gone),
                "{args:?} lists {gone}:\n{}",
                help.stdout
            );
        }
    }
    // Hidden, still accepted: cargo's runners pass some of them.
    let listed = gate(&[
        "--suite",
        "scenarios/smoke.yaml",
        "--list",
        "--test-threads",
        "1",
    ]);
    assert_eq!(listed.code, 0, "{listed:?}");
}

#[test]
fn mistyped_subcommands_are_suggested() {
    for (typo, meant) in [
        ("doctr", "doctor"),
        ("explian", "explain"),
        ("reprot", "report"),
        ("blss", "bless"),
    ] {
        let run = gate(&[typo]);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(
            run.stderr
                .contains(&format!("did you mean `gds-gate {meant}`")),
            "{typo}: {run:?}"
        );
    }
}

#[test]
fn usage_errors_exit_2_before_anything_runs() {
    let few = gate(&["bench", "--runs", "3"]);
    assert_eq!(few.code, 2, "{few:?}");
    assert!(few.stderr.contains("--runs"), "{few:?}");

    // Not gds_stats output: refused before any verdict is printed.
    let wrong = gate(&["explain", "--gds-stats", "README.md"]);
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.stdout.is_empty(), "a verdict was printed: {wrong:?}");
    assert!(wrong.stderr.contains("README.md"), "{wrong:?}");
}

#[test]
fn explain_judges_against_the_expected_path() {
    // cuFile's guide's sample: its reads went through nvidia-fs.
    let fixture = repo() + "/harness/model/tests/fixtures/gds_stats_l3_nvidia_guide.txt";
    let explain = |expect: &str| gate(&["explain", "--gds-stats", &fixture, "--expect", expect]);
    let gds = explain("gds");
    assert_eq!(gds.code, 0, "{gds:?}");
    let posix = explain("cufile-posix");
    assert_eq!(posix.code, 1, "{posix:?}");
    let bad = explain("fast");
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("cufile-posix"), "{bad:?}");
}

#[test]
fn outside_the_repository_the_missing_default_suite_is_explained() {
    let scratch = Scratch::new();
    let run: Run = Command::new(GATE)
        .args(["--list"])
        .current_dir(scratch.path(""))
        .env_remove("GDS_GATE_SUITE")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("the default suite `scenarios/default.yaml` is not in this folder")
            && run.stderr.contains("--suite PATH"),
        "{run:?}"
    );
}
