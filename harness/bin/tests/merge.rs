//! `report --merge` over real reports (the gate run on a tiny posix suite as two runners), and the
//! GitHub annotations of a report with a failed trial.

pub mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use gds_gate::console::Console;
use gds_gate::exit;
use gds_gate::report::Report;
use gds_gate::report::annotations::github_annotations_in;
use gds_gate::report::merge::{self, MergeError};
use gds_model::units::Rate;

const GATE: &str = env!("CARGO_BIN_EXE_gds-gate");

const TINY: &str = "suite: tiny\nscenarios:\n  - name: read\n    files: { size: 1MiB, seed: 3 }\n    repetitions: 1\n";

struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Scratch {
        let scratch = Scratch(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap());
        fs::write(scratch.path("suite.yaml"), TINY).unwrap();
        scratch
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    /// The gate on the tiny suite as `runner`, its reports in `dir`.
    fn run(&self, runner: &str, dir: &str) -> PathBuf {
        let out = self.path(dir);
        let output = Command::new(GATE)
            .arg("--suite")
            .arg(self.path("suite.yaml"))
            .args(["--runner", runner])
            .arg("--out")
            .arg(&out)
            .arg("--data-dir")
            .arg(self.path("data"))
            .arg("--baselines")
            .arg(self.path("baselines"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .env("GDS_GATE_HISTORY", self.path("history.jsonl"))
            // The runner's control at test size (256 MiB by default).
            .env("GDS_GATE_CONTROL_SIZE", "1MiB")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GDS_GATE_REQUIRE_GPU")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        out
    }
}

fn read(dir: &Path) -> Report {
    serde_json::from_str(&fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

/// Rewrites a report's JSON in place.
fn edit(dir: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("report.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    change(&mut value);
    fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

fn fail_first_trial(value: &mut serde_json::Value) {
    let trial = &mut value["trials"][0];
    trial["status"] = "failed".into();
    trial["reason"] = "wrong bytes at offset 0x100, 5% of words".into();
    trial["details"] = "  expected: 0x1\n  seen: 0x2".into();
    value["totals"]["passed"] = 0.into();
    value["totals"]["failed"] = 1.into();
}

#[test]
fn runs_merge_into_one_report_with_each_runners_trials_named_apart() {
    let scratch = Scratch::new();
    let dirs = vec![scratch.run("a", "a"), scratch.run("b", "b")];
    let out = scratch.path("merged");
    let merged = merge::merge_dirs(&dirs, &out, Rate::Gb).unwrap();

    let report = &merged.report.report;
    let names: Vec<&str> = report.trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a/tiny::read", "b/tiny::read"]);
    assert_eq!(report.totals.passed, 2);
    assert_eq!(report.totals.failed, 0);
    assert_eq!(merged.report.runs.len(), 2);
    assert_eq!(merged.report.runs[0].label, "a");
    assert_eq!(merged.report.runs[1].source, dirs[1].join("report.json"));
    assert_eq!(merged.report.exit_code(), exit::PASSED);
    assert_eq!(
        merged.written,
        ["merged.json", "merged-junit.xml", "merged-summary.md"].map(|name| out.join(name))
    );

    let junit = fs::read_to_string(out.join("merged-junit.xml")).unwrap();
    assert!(junit.contains("<testsuite name=\"a/tiny\""), "{junit}");
    assert!(junit.contains("<testsuite name=\"b/tiny\""), "{junit}");
    let summary = fs::read_to_string(out.join("merged-summary.md")).unwrap();
    assert!(
        summary.starts_with("## gds-gate: 2 runs merged"),
        "{summary}"
    );
    assert!(summary.contains("| `a` |") && summary.contains("| `b` |"));
    assert!(summary.contains("| `b/tiny::read` | ok |"), "{summary}");
    assert!(summary.contains("### Baseline `a`"), "{summary}");

    // merged.json is a report too (plus `runs`): tools that read report.json read it.
    let again: Report =
        serde_json::from_str(&fs::read_to_string(out.join("merged.json")).unwrap()).unwrap();
    assert_eq!(again.totals, report.totals);
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("merged.json")).unwrap()).unwrap();
    assert_eq!(json["runs"][1]["runner"], "b");
}

#[test]
fn a_failure_on_one_runner_fails_the_merge_and_the_same_runner_twice_stays_apart() {
    let scratch = Scratch::new();
    let first = scratch.run("a", "one");
    let second = scratch.run("a", "two");
    edit(&second, fail_first_trial);
    let console = Console::buffer();
    let code = gds_gate::commands::report::merge(
        &[first.clone(), second.clone()],
        &scratch.path("m"),
        Rate::Gb,
        &console,
    );
    assert_eq!(code.ok(), Some(exit::TRIAL_FAILED));
    let said = console.said();
    assert!(
        said.starts_with("merged 2 run(s): ") && said.contains("\nreports: "),
        "{said}"
    );
    let merged: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(scratch.path("m").join("merged.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = merged["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            format!("a@{}/tiny::read", first.display()),
            format!("a@{}/tiny::read", second.display())
        ]
    );
    assert_eq!(merged["totals"]["failed"], 1);
    assert_eq!(merged["runs"][1]["exit_code"], 1);
}

#[test]
fn a_slowdown_on_one_runner_is_counted_and_said_in_the_merge() {
    let scratch = Scratch::new();
    let dirs = vec![scratch.run("a", "a"), scratch.run("b", "b")];
    // Runner b's trial was slower than its baseline, as the gate records it: its status and
    // its run's totals.
    edit(&dirs[1], |value| {
        value["trials"][0]["status"] = "slower".into();
        value["totals"]["passed"] = 0.into();
        value["totals"]["slower"] = 1.into();
    });
    let out = scratch.path("merged");
    let merged = merge::merge_dirs(&dirs, &out, Rate::Gb).unwrap();
    assert_eq!(merged.report.report.totals.slower, 1);
    assert_eq!(merged.report.exit_code(), 3);
    assert_eq!(merged.report.runs[1].exit_code, 3);
    let summary = fs::read_to_string(out.join("merged-summary.md")).unwrap();
    assert!(
        summary.contains("## gds-gate: SLOWER than the baseline"),
        "{summary}"
    );
}

#[test]
fn unreadable_and_foreign_reports_are_errors_naming_the_file() {
    let scratch = Scratch::new();
    let good = scratch.run("a", "good");

    let missing = scratch.path("crashed");
    fs::create_dir_all(&missing).unwrap();
    let error = merge::merge_dirs(
        &[good.clone(), missing.clone()],
        &scratch.path("m"),
        Rate::Gb,
    )
    .unwrap_err();
    assert!(matches!(error, MergeError::Read { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains(&missing.join("report.json").display().to_string()),
        "{error}"
    );
    assert_eq!(
        gds_gate::commands::report::merge(
            &[good.clone(), missing],
            &scratch.path("m"),
            Rate::Gb,
            &Console::buffer()
        )
        .map_err(|error| error.exit_code()),
        Err(exit::SETUP)
    );
    assert!(!scratch.path("m").join("merged.json").exists());

    let newer = scratch.run("b", "newer");
    edit(&newer, |value| {
        value["schema_version"] = 3.into();
        value["trials"] = "changed meaning".into();
    });
    let error = merge::merge_dirs(&[good.clone(), newer.clone()], &scratch.path("m"), Rate::Gb)
        .unwrap_err();
    let shown = error.to_string();
    assert!(
        shown.contains(&newer.join("report.json").display().to_string())
            && shown.contains("schema version 3")
            && shown.contains("reads version 2"),
        "{shown}"
    );

    let not_json = scratch.path("not-json");
    fs::create_dir_all(&not_json).unwrap();
    fs::write(not_json.join("report.json"), "{\"hello\": 1}").unwrap();
    let error = merge::merge_dirs(&[not_json], &scratch.path("m"), Rate::Gb).unwrap_err();
    assert!(matches!(error, MergeError::NotAReport { .. }), "{error:?}");

    let error = merge::merge_dirs(
        &[good.clone(), good.join("report.json")],
        &scratch.path("m"),
        Rate::Gb,
    )
    .unwrap_err();
    assert!(matches!(error, MergeError::Duplicate { .. }), "{error:?}");
    assert_eq!(
        gds_gate::commands::report::merge(&[], &scratch.path("m"), Rate::Gb, &Console::buffer())
            .map_err(|error| error.exit_code()),
        Err(exit::USAGE)
    );
}

#[test]
fn annotations_point_at_the_scenario_of_each_failed_trial() {
    let scratch = Scratch::new();
    let dir = scratch.run("a", "run");
    edit(&dir, fail_first_trial);
    let report = read(&dir);
    let lines = github_annotations_in(&report, Some(scratch.0.path()));
    assert_eq!(
        lines[0],
        "::error file=suite.yaml,line=3,title=tiny%3A%3Aread::wrong bytes at offset 0x100, 5%25 of words%0A  expected: 0x1%0A  seen: 0x2"
    );
    // The runner has no baseline yet: summary.md says so, the annotations do not.
    assert_eq!(lines.len(), 1, "{lines:#?}");
}

#[test]
fn annotations_carry_the_baseline_failures_at_the_scenario_or_the_baseline_file() {
    let scratch = Scratch::new();
    let dir = scratch.run("a", "run");
    edit(&dir, |value| {
        // The judgement decided the trial's outcome: both are in the report, as the gate
        // writes them.
        value["trials"][0]["status"] = "checksum-changed".into();
        let baseline = &mut value["baseline"];
        baseline["baseline_found"] = true.into();
        let expected = serde_json::json!({
            "median_gbps": 2.0,
            "run_medians_gbps": [1.9, 2.0, 2.1],
            "path": "host",
            "blessed_at": "2026-03-01T00:00:00Z"
        });
        // Judgements as data: the words are rendered from them when a sink writes.
        baseline["trials"] = serde_json::json!([
            {
                "trial": "tiny::gone",
                "judgement": { "kind": "missing-trial", "cause": { "why": "not-defined" } },
                "expected": expected
            },
            {
                "trial": "tiny::read",
                "judgement": { "kind": "checksum-changed", "from": "0x0000000000000001", "to": "0x0000000000000002" },
                "expected": expected
            },
            {
                "trial": "tiny::new",
                "judgement": { "kind": "new-trial" },
                "expected": null
            }
        ]);
    });
    let lines = github_annotations_in(&read(&dir), Some(scratch.0.path()));
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "::error file=suite.yaml,line=3,title=tiny%3A%3Aread::tiny::read: the bytes read are not the bytes the baseline measured: checksum 0x0000000000000001 → 0x0000000000000002%0A  expected: checksum 0x0000000000000001 (the files measured at the bless of 2026-03-01T00:00:00Z)"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(
            "::error file=baselines/a.yaml,title=tiny%3A%3Agone::tiny::gone: in the baseline, but no suite defines it any more%0A  expected: the trial of the baseline: 2.00 GB/s, path `host` (3 blessed run(s), run medians 1.90–2.10"
        ),
        "{}",
        lines[1]
    );
}

/// Every report this test wrote matches the published schema.
impl Drop for Scratch {
    fn drop(&mut self) {
        support::validate_reports(self.0.path());
    }
}
