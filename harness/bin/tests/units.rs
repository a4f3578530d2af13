//! `--units gib`: every throughput a person reads is in GiB/s, labelled so, while report.json
//! and the baseline keep GB/s.

pub mod support;

use std::process::Command;

use gds_model::units::Rate;
use support::{GATE, Run, SMALL, Scratch, pin_baseline};

#[test]
fn gib_changes_what_is_shown_and_not_what_is_stored() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let suite = suite.to_str().unwrap();
    let blessed = Run::from(
        Command::new(GATE)
            .args(["bless", "--interval", "0", "--runs", "1", "--units", "gib"])
            .args(["--suite", suite, "--runner", "box", "--baselines"])
            .arg(scratch.path("baselines"))
            .arg("--data-dir")
            .arg(scratch.data())
            .arg("--out")
            .arg(scratch.out())
            .current_dir(env!("CARGO_MANIFEST_DIR").to_owned() + "/../..")
            // The runner's control at test size (256 MiB by default).
            .env("GDS_GATE_CONTROL_SIZE", "1MiB")
            .env("GDS_GATE_HISTORY", scratch.history())
            .env_remove("CI")
            .env_remove("GITHUB_ACTIONS")
            .output()
            .unwrap(),
    );
    assert_eq!(blessed.code, 0, "{blessed:?}");
    assert!(blessed.stdout.contains(" GiB/s from 1 run"), "{blessed:?}");
    assert!(!blessed.stdout.contains("GB/s"), "{blessed:?}");

    // 1000 GB/s stored, 931.32 GiB/s shown: a regression whose message names both levels.
    let baseline = scratch.path("baselines/box.yaml");
    pin_baseline(&baseline, 1000.0);
    let stored = std::fs::read_to_string(&baseline).unwrap();
    let args = ["--suite", suite, "--runner", "box", "--confirm-delay", "0"];
    let run = scratch.gate(&[&args[..], &["--units", "gib"]].concat());
    assert_eq!(run.code, 3, "{run:?}");
    let report = scratch.report();
    let median = report["trials"][0]["measurement"]["median_gbps"]
        .as_f64()
        .unwrap();
    let shown = format!("{} median of 2", Rate::Gib.format(median, 2));
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("small::read") && l.contains(" median of "));
    assert!(line.is_some_and(|l| l.contains(&shown)), "{shown}: {run:?}");
    assert!(run.stdout.contains("about 931.32 GiB/s"), "{run:?}");
    assert!(!run.stdout.contains("GB/s"), "{run:?}");
    let summary = std::fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(summary.contains("| GiB/s (median) |"), "{summary}");
    assert!(
        summary.contains("| baseline GiB/s | run GiB/s |"),
        "{summary}"
    );
    assert!(summary.contains("| 931.32 |"), "{summary}");
    assert!(!summary.contains("GB/s"), "{summary}");

    // What is stored is GB/s: the baseline untouched, the report's figures those of GB/s.
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), stored);
    let judged = &report["baseline"]["trials"][0]["judgement"]["throughput"];
    let level = judged["level"].as_f64().unwrap();
    assert!((level - 1000.0).abs() < 1e-9, "{judged}");
    let run_median = judged["run"]["median"].as_f64().unwrap();
    assert!((run_median - median).abs() < 1e-9 * median, "{judged}");
    let m = &report["trials"][0]["measurement"];
    let bytes = m["bytes_per_repetition"].as_f64().unwrap();
    let mut rates: Vec<f64> = m["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| bytes / s.as_f64().unwrap() / 1e9)
        .collect();
    rates.sort_by(f64::total_cmp);
    assert!(
        (rates.iter().sum::<f64>() / 2.0 - median).abs() < 1e-9 * median,
        "{m}"
    );
}
