//! The baseline library through its public API, in the order the gate uses it: bless a run,
//! compare a later run, append the history, render the plots. No GPU, no binary.

use std::collections::BTreeSet;
use std::path::Path;

use gds_gate::baseline::Severity;
use gds_gate::baseline::bless::TrialChange;
use gds_gate::baseline::message::{Explainer, Scope};
use gds_gate::baseline::{
    self, BlessOptions, Filter, Fingerprint, Judgement, Loaded, Provenance, RunResults, file,
    history, render,
};
use gds_model::record::{Measurement, Status, TrialRecord};
use gds_model::scenario;
use gds_model::units::Rate;

fn records(gbps: &[f64], path: &str) -> Vec<TrialRecord> {
    let suite = scenario::parse(
        Path::new("api.yaml"),
        "suite: api\nscenarios:\n  - name: read\n    files: { size: 1MiB }\n    nthreads: [1, 8]\n",
    )
    .unwrap();
    scenario::expand(&suite)
        .into_iter()
        .map(|spec| {
            let mut record = TrialRecord::ignored(spec, String::new());
            record.checks = Status::Passed;
            record.status = gds_model::outcome::Outcome::Passed;
            record.reason = None;
            record.measurement = Some(measurement(gbps, path));
            record
        })
        .collect()
}

fn measurement(gbps: &[f64], path: &str) -> Measurement {
    serde_json::from_value(serde_json::json!({
        "files": [], "bytes_per_repetition": 1u64 << 30, "warmup_seconds": [],
        "seconds": gbps.iter().map(|g| 1.0 / g).collect::<Vec<_>>(), "gbps": gbps,
        "median_gbps": gbps[gbps.len() / 2], "path": path,
        "integrity": { "method": "checksum", "checksum": "0x00000000000000aa",
            "expected_checksum": "0x00000000000000aa", "bad_words": 0, "first_bad": null,
            "seconds": 0.0 },
        "resident_after_drop": null, "verify_seconds": 0.0, "total_seconds": 1.0,
    }))
    .unwrap()
}

#[test]
fn bless_then_compare_then_history_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let runner = baseline::default_runner("gpu01.lab.example");
    assert_eq!(runner, "gpu01");
    let path = file::path_for(&dir.path().join(baseline::DEFAULT_DIR), &runner).unwrap();
    let fingerprint = Fingerprint {
        driver: Some("580.159".into()),
        kernel: Some("6.8.0".into()),
        ..Fingerprint::default()
    };
    let filter = Filter::default();
    let scope = Scope {
        suites: vec!["suites/nightly.yaml".into()],
        ..Scope::default()
    };
    let options = BlessOptions {
        runner: &runner,
        baseline_path: &path,
        scope: &scope,
        rate: Rate::Gb,
        filter: &filter,
        accept_fingerprint: false,
        remove_missing: false,
        refresh: false,
        ci: false,
        provenance: Provenance::now("gpu01", None),
    };
    let first = records(&[2.0, 2.1, 1.9, 2.05, 1.95], "nvfs");
    let defined: BTreeSet<String> = first.iter().map(|r| r.name.clone()).collect();
    let run = RunResults {
        judged: None,
        records: &first,
        defined: Some(&defined),
        fingerprint: &fingerprint,
        control: None,
    };
    let outcome = baseline::bless(std::slice::from_ref(&run), &options).unwrap();
    assert!(outcome.written);
    assert!(matches!(outcome.changes[0], TrialChange::Added { .. }));
    assert!(outcome.to_string().starts_with("creating: "));

    let later = records(&[1.5, 1.55, 1.45, 1.52, 1.48], "nvfs");
    let run = RunResults {
        judged: None,
        records: &later,
        defined: Some(&defined),
        fingerprint: &fingerprint,
        control: None,
    };
    let Ok(loaded @ Loaded::Present(_)) = file::read(&path) else {
        panic!("the blessed baseline does not read back");
    };
    let comparison = baseline::compare(&loaded, &path, &runner, &run);
    assert_eq!(comparison.worst(), Severity::Regression);
    assert!(
        comparison
            .trials
            .iter()
            .all(|t| matches!(t.judgement, Judgement::Regression { .. }))
    );
    let explainer = Explainer {
        comparison: &comparison,
        records: &later,
        fingerprint: Some(&fingerprint),
        scope: &scope,
        rate: Rate::Gb,
    };
    let console = render::console(&explainer);
    assert!(console.contains("): 2 slower;"), "{console}");
    // Pasted, the printed bless runs the suite that was judged, not the default one.
    let words = explainer.words(&comparison.trials[0]);
    assert!(
        words
            .message
            .contains(" --suite suites/nightly.yaml --exact "),
        "{}",
        words.message
    );
    // report.json can carry the comparison (floats round-trip to within JSON's precision).
    let json = serde_json::to_string(&comparison).unwrap();
    let back: baseline::Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back.worst(), comparison.worst());
    let reread = Explainer {
        comparison: &back,
        ..explainer
    };
    assert_eq!(
        reread.words(&back.trials[1]),
        explainer.words(&comparison.trials[1])
    );

    let out = dir.path().join("out");
    let history_path = dir.path().join("history.jsonl");
    for (time, records) in [
        ("2026-03-01T00:00:00Z", &first),
        ("2026-03-02T00:00:00Z", &later),
    ] {
        let line = history::HistoryLine::new(time.into(), &runner, "gpu01", &fingerprint, records);
        history::append(&history_path, &line).unwrap();
    }
    let loaded = baseline::file::read(&path).unwrap();
    let report =
        baseline::plots_for_report(&out, &history_path, &loaded, &runner, Rate::Gb).unwrap();
    assert_eq!(report.plots.len(), 2);
    assert!(report.skipped.is_empty());
    assert!(
        report
            .markdown
            .contains("(every pass: `plots/api__read_nthreads_1-"),
        "{}",
        report.markdown
    );
    // The summary draws each trial's runs where GitHub shows it, and names the SVG without a
    // link that would lead nowhere there.
    let summary = render::markdown(&explainer, &report.plots, &out);
    assert!(summary.contains("| `plots/api__read"), "{summary}");
    assert!(!summary.contains("](plots/"), "{summary}");
    assert!(summary.contains("```mermaid\nxychart-beta\n"), "{summary}");
}
