//! One run holding every kind of outcome, told by every sink: report.json, libtest's result per
//! trial, junit.xml, summary.md, the GitHub annotations and `report --merge` must agree on each
//! trial's outcome, on the totals and on the exit code.
//!
//! The run is made of fixtures (records with chosen samples, path and checksum) judged by the
//! real comparison against a real blessed baseline, so that each judgement is the one the gate
//! would make.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::{Report, annotations, direct, junit, markdown, merge};
use gds_baseline::bless::{BlessOptions, Filter, bless};
use std::time::{Duration, SystemTime};

use gds_baseline::Judgement;
use gds_baseline::compare::{RunResults, compare, judge};
use gds_baseline::creep::RunnerHistory;
use gds_baseline::file::{self, Loaded, Provenance};
use gds_baseline::fixtures::{self, BASE, CHECKSUM, NOISE, SLOW};
use gds_baseline::history::HistoryLine;
use gds_baseline::limitations::{self, Limitation};
use gds_baseline::outcome::{self, Outcome, Totals};
use gds_model::record::TrialRecord;
use gds_model::scenario::{FileSet, Reader};
use gds_runner::exit;

const CPU: [f64; 5] = [0.4; 5];

/// The doctor's reason, recorded and found again in the run, that `s::limited` cannot pass.
const LIMITED_REASON: &str =
    "expects path gds, but its reads would take cufile-posix here: nvidia-fs is not loaded";

fn measured(name: &str, gbps: &[f64], path: &str, checksum: u64, cpu: f64) -> TrialRecord {
    fixtures::with_cpu(fixtures::passed(name, gbps, path, checksum), &[cpu; 5])
}

/// The run, each trial with the outcome it must have; `s::gone` is in the baseline only.
fn every_outcome() -> (Vec<TrialRecord>, BTreeMap<&'static str, Outcome>) {
    let trials = vec![
        (
            measured("s::pass", &NOISE, "nvfs", CHECKSUM, 0.4),
            Outcome::Passed,
        ),
        (
            measured("s::slow", &SLOW, "nvfs", CHECKSUM, 0.4),
            Outcome::Slower,
        ),
        (
            measured("s::costly", &NOISE, "nvfs", CHECKSUM, 0.8),
            Outcome::Costlier,
        ),
        (
            measured("s::path", &NOISE, "cufile-posix", CHECKSUM, 0.4),
            Outcome::PathChanged,
        ),
        (
            measured("s::bytes", &NOISE, "nvfs", CHECKSUM ^ 1, 0.4),
            Outcome::ChecksumChanged,
        ),
        // As fast as the baseline allows alone; its history since the bless crept 15% below.
        (
            measured("s::creep", &BASE.map(|g| g * 0.91), "nvfs", CHECKSUM, 0.4),
            Outcome::Slower,
        ),
        (fixtures::failed("s::broken", &NOISE), Outcome::Failed),
        // Fails its own checks for its runner's recorded limitation (applied in `judged_run`).
        (fixtures::failed("s::limited", &NOISE), Outcome::Limited),
        (fixtures::ignored("s::gpu"), Outcome::Missing),
        (fixtures::ignored("s::new-gpu"), Outcome::Ignored),
        // New to the baseline, so passed; the GPU reader 22% below the posix reader of the same
        // file and reads (a file of their own): a warning on it, in every sink.
        (
            direct("s::direct[reader=posix]", 1.30, "host"),
            Outcome::Passed,
        ),
        (
            direct("s::direct[reader=cufile]", 1.01, "cufile-posix"),
            Outcome::Passed,
        ),
    ];
    let expected = trials.iter().map(|(r, o)| (leak(&r.name), *o)).collect();
    (trials.into_iter().map(|(r, _)| r).collect(), expected)
}

/// A fixture record of a trial reading a file no other trial reads, through the reader its name
/// ends in (`[reader=cufile]`), at `gbps` on `path`.
fn direct(name: &str, gbps: f64, path: &str) -> TrialRecord {
    let mut record = measured(name, &[gbps; 3], path, CHECKSUM, 0.4);
    record.spec.files = FileSet::Generated {
        size: 1 << 20,
        seed: 99,
        count: 1,
    };
    if name.ends_with("[reader=cufile]") {
        record.spec.reader = Reader::Cufile;
    }
    record
}

const SLOWER_THAN_POSIX: &str = "s::direct[reader=cufile]";

fn leak(name: &str) -> &'static str {
    Box::leak(name.to_string().into_boxed_str())
}

/// Blesses every trial but `s::new-gpu`, plus `s::gone`, from five quiet runs.
fn bless_baseline(path: &std::path::Path) {
    let names = [
        "s::pass",
        "s::slow",
        "s::costly",
        "s::path",
        "s::bytes",
        "s::creep",
        "s::broken",
        "s::gpu",
        "s::gone",
    ];
    let rounds: Vec<Vec<TrialRecord>> = [1.0, 1.03, 0.97, 1.01, 0.99]
        .iter()
        .map(|level: &f64| {
            let passes = BASE.map(|g| g * level);
            names
                .map(|name| {
                    fixtures::with_cpu(fixtures::passed(name, &passes, "nvfs", CHECKSUM), &CPU)
                })
                .to_vec()
        })
        .collect();
    let fp = fixtures::fingerprint();
    let runs: Vec<RunResults> = rounds
        .iter()
        .map(|records| RunResults {
            judged: None,
            records,
            defined: None,
            fingerprint: &fp,
            control: None,
        })
        .collect();
    let options = BlessOptions {
        runner: "r1",
        baseline_path: path,
        scope: &gds_baseline::message::Scope::default(),
        rate: gds_model::units::Rate::Gb,
        filter: &Filter::default(),
        accept_fingerprint: false,
        remove_missing: false,
        refresh: false,
        ci: false,
        provenance: Provenance::now("gpu01", None),
    };
    assert!(bless(&runs, &options).expect("bless").written);
}

/// The run judged as the gate judges it: each trial's outcome settled from its judgement, the
/// totals over those outcomes and the baseline's trials no suite defines.
fn judged_run(dir: &std::path::Path) -> (Report, BTreeMap<&'static str, Outcome>) {
    let path = file::path_for(&dir.join("baselines"), "r1").unwrap();
    bless_baseline(&path);
    let loaded = file::read(&path).unwrap();
    let (mut records, expected) = every_outcome();
    let defined: BTreeSet<String> = records.iter().map(|r| r.name.clone()).collect();
    let fp = fixtures::fingerprint();
    let judged = creep_judged(&loaded, &records);
    let comparison = compare(
        &loaded,
        &path,
        "r1",
        &RunResults {
            judged: Some(&judged),
            records: &records,
            defined: Some(&defined),
            fingerprint: &fp,
            control: None,
        },
    );
    let recorded = Limitation {
        reason: LIMITED_REASON.into(),
        recorded_at: "2026-12-06T15:00:00Z".into(),
        host: "gpu01".into(),
    };
    for record in &mut records {
        let judgement = comparison.get(&record.name).map(|j| &j.judgement);
        outcome::settle(record, judgement);
        if record.name == "s::limited" {
            limitations::apply(record, &recorded, Some(LIMITED_REASON));
        }
    }
    let mut report = crate::test_support::report(records);
    report.runner = Some("r1".into());
    report.baseline = Some(comparison);
    let undefined = report.missing_without_record().count();
    report.totals = Totals::of(&report.trials, undefined, 0);
    report.compare_within_run(&crate::test_support::topology(), direct::DEFAULT_TOLERANCE);
    (report, expected)
}

/// `s::creep` judged as the gate judges it while it runs: alone against the baseline, then over
/// a history since the bless (fixture: 30 runs at the baseline's level, then 10 each at 95%, 90%
/// and 85% of it, the last of them this run). Every other trial is left to the comparison.
fn creep_judged(loaded: &Loaded, records: &[TrialRecord]) -> BTreeMap<String, Judgement> {
    let entry = &loaded.present().expect("blessed").trials["s::creep"];
    let record = records.iter().find(|r| r.name == "s::creep").unwrap();
    // An hour apart from a minute after the bless, which was made now.
    let first = SystemTime::now() + Duration::from_secs(60);
    let medians = fixtures::creep_medians(entry.median_gbps, 30, 10);
    let history = fixtures::history("s::creep", "r1", first, &medians[..medians.len() - 1]);
    let now = first + Duration::from_secs(3600 * (medians.len() as u64 - 1));
    let line = HistoryLine::new(
        humantime::format_rfc3339_seconds(now).to_string(),
        "r1",
        "h",
        &fixtures::fingerprint(),
        std::slice::from_ref(record),
    );
    let judgement = RunnerHistory::of(history, "r1").judge(
        judge(entry, None, record),
        &record.name,
        entry,
        &line,
    );
    assert!(
        matches!(judgement, Judgement::Creep { .. }),
        "{judgement:?}"
    );
    BTreeMap::from([(record.name.clone(), judgement)])
}

/// `name` → what junit.xml says of it: `ok`, `skipped` (or the skip's type) or the failure's type.
fn junit_cases(xml: &str) -> BTreeMap<String, String> {
    let mut cases = BTreeMap::new();
    for case in xml.split("<testcase ").skip(1) {
        let name = case
            .split("name=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let body = case.split("</testcase>").next().unwrap();
        let kind = if let Some(failure) = body.split("<failure").nth(1) {
            failure
                .split("type=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string()
        } else if let Some(skipped) = body.split("<skipped").nth(1) {
            // A typed skip (`limited`) by its type.
            skipped
                .split('>')
                .next()
                .and_then(|attributes| attributes.split("type=\"").nth(1))
                .and_then(|ty| ty.split('"').next())
                .unwrap_or("skipped")
                .to_string()
        } else {
            "ok".to_string()
        };
        cases.insert(name.to_string(), kind);
    }
    cases
}

#[test]
fn every_sink_tells_each_trials_outcome_the_totals_and_the_exit_code_alike() {
    let dir = tempfile::tempdir().unwrap();
    let (report, expected) = judged_run(dir.path());

    // report.json: the outcome is the trial's status; the totals count each once; each
    // judgement carries the words the other sinks show.
    let json = super::with_words(&report).unwrap();
    for trial in json["trials"].as_array().unwrap() {
        let name = trial["name"].as_str().unwrap();
        assert_eq!(trial["status"], expected[name].key(), "{name}");
    }
    let creep = json["baseline"]["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|judged| judged["trial"] == "s::creep")
        .unwrap();
    assert_eq!(creep["judgement"]["kind"], "creep", "{creep}");
    assert_eq!(
        creep["judgement"]["creep"]["change_point"]["index"], 50,
        "{creep}"
    );
    let comparison = report.baseline.as_ref().unwrap();
    for judged in json["baseline"]["trials"].as_array().unwrap() {
        let name = judged["trial"].as_str().unwrap();
        let words = report.words(comparison.get(name).unwrap()).unwrap();
        assert_eq!(judged["headline"], words.headline.as_str(), "{name}");
        assert_eq!(judged["message"], words.message.as_str(), "{name}");
    }
    // The GPU reader slower than POSIX: its pair, typed, and the warning on its trial.
    let pairs = json["direct_vs_posix"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(pairs[0]["gpu_trial"], SLOWER_THAN_POSIX);
    assert_eq!(pairs[0]["posix_trial"], "s::direct[reader=posix]");
    assert_eq!(pairs[0]["gpu_path"], "cufile-posix");
    assert_eq!(pairs[0]["posix_path"], "host");
    assert_eq!(pairs[0]["below_tolerance"], true);
    assert!((pairs[0]["ratio"].as_f64().unwrap() - 1.01 / 1.30).abs() < 1e-9);
    assert_eq!(pairs[0]["topology"]["disk"]["disk"], "vda");
    let warning = report.direct_vs_posix[0]
        .warning(gds_model::units::Rate::Gb)
        .unwrap();
    assert!(warning.starts_with("slower than POSIX: 0.78×"), "{warning}");
    assert!(warning.contains("\n  topology: GPU 0 at "), "{warning}");
    for trial in json["trials"].as_array().unwrap() {
        let warnings = trial["warnings"].as_array().unwrap();
        if trial["name"] == SLOWER_THAN_POSIX {
            assert_eq!(warnings, &[serde_json::Value::from(warning.clone())]);
        } else {
            assert!(warnings.is_empty(), "{trial}");
        }
    }
    // The terminal's lines after the trials.
    assert!(
        direct::console(&report.direct_vs_posix).contains(&format!(
            "  0.78 {SLOWER_THAN_POSIX} (cufile-posix) / s::direct[reader=posix] (host)  slower than POSIX"
        )),
        "{}",
        direct::console(&report.direct_vs_posix)
    );

    let totals = report.totals;
    for outcome in Outcome::ALL {
        let in_run = expected.values().filter(|o| **o == outcome).count();
        let gone = usize::from(outcome == Outcome::Missing);
        assert_eq!(
            totals.count(outcome),
            in_run + gone,
            "{outcome:?}: {totals:?}"
        );
    }
    assert_eq!(totals.failures(), 8);
    assert_eq!(totals.exit_code(), exit::TRIAL_FAILED);
    // Alone, the creep is a regression: exit 3, as a slower run.
    let creeping: Vec<TrialRecord> = report
        .trials
        .iter()
        .filter(|t| t.name == "s::creep" || t.name == "s::pass")
        .cloned()
        .collect();
    assert_eq!(Totals::of(&creeping, 0, 0).exit_code(), exit::REGRESSION);

    // libtest: the failing outcomes fail, ignored is ignored, passed passes.
    let mut libtest_failed = 0;
    for trial in &report.trials {
        let failure = report.failure_of(trial).map(|words| words.message);
        let result = crate::libtest::result(trial, failure);
        match expected[trial.name.as_str()] {
            Outcome::Passed => assert!(matches!(result, Ok(libtest_mimic::Completion::Completed))),
            Outcome::Ignored | Outcome::Limited => assert!(matches!(
                result,
                Ok(libtest_mimic::Completion::Ignored { .. })
            )),
            _ => {
                assert!(result.is_err(), "{}", trial.name);
                libtest_failed += 1;
            }
        }
    }
    // `s::gone` fails on a line of its own (run.rs's `missing` trials).
    assert_eq!(libtest_failed + 1, totals.failures());

    // junit.xml: the same failures, typed; the root counts them.
    let xml = junit::render(&report);
    let cases = junit_cases(&xml);
    for (name, outcome) in &expected {
        let kind = match outcome {
            Outcome::Passed => "ok",
            Outcome::Ignored => "skipped",
            Outcome::Limited => "limited",
            Outcome::Failed => "gds-gate",
            Outcome::Slower | Outcome::Costlier => "regression",
            _ => "baseline",
        };
        assert_eq!(cases[*name], kind, "{name}\n{xml}");
    }
    assert_eq!(cases["s::gone"], "baseline");
    // A warning does not fail its trial: in the case's system-err.
    let slower = xml
        .split("<testcase ")
        .find(|case| case.contains(&format!("name=\"{SLOWER_THAN_POSIX}\"")))
        .unwrap();
    assert!(
        slower.contains("<system-err>warning: slower than POSIX: 0.78×"),
        "{slower}"
    );
    assert_eq!(xml.matches("<system-err>").count(), 1, "{xml}");
    assert!(
        xml.contains(&format!("failures=\"{}\"", totals.failures())),
        "{xml}"
    );

    // summary.md: the title, the counts and each row's result.
    let summary = markdown::render(&report);
    assert!(summary.starts_with("## gds-gate: FAILED\n"), "{summary}");
    assert!(summary.contains(&totals.counts()), "{summary}");
    for (name, outcome) in &expected {
        let cell = match outcome {
            Outcome::Passed | Outcome::Ignored | Outcome::Limited => outcome.label().to_string(),
            failing => format!("**{}**", failing.label()),
        };
        assert!(
            summary.contains(&format!("| `{name}` | {cell} |")),
            "{name}\n{summary}"
        );
    }

    // The GDS vs POSIX section: the pair's row and its warning.
    assert!(summary.contains("### GDS vs POSIX"), "{summary}");
    assert!(
        summary.contains(&format!(
            "| `{SLOWER_THAN_POSIX}` | `s::direct[reader=posix]` | **0.78** | 1.01 | 1.30 | cufile-posix | host | **slower than POSIX** by 22% |"
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "> **Warning:** `{SLOWER_THAN_POSIX}`: slower than POSIX: 0.78×"
        )),
        "{summary}"
    );

    // Annotations: one error per failing trial, and the missing one at the baseline file.
    let errors: BTreeSet<String> = annotations::github_annotations_in(&report, None)
        .iter()
        .filter(|line| line.starts_with("::error "))
        .map(|line| {
            line.split("title=")
                .nth(1)
                .unwrap()
                .split("::")
                .next()
                .unwrap()
                .replace("%3A", ":")
        })
        .collect();
    let mut failing: BTreeSet<String> = expected
        .iter()
        .filter(|(_, o)| o.is_failure())
        .map(|(name, _)| name.to_string())
        .collect();
    failing.insert("s::gone".into());
    assert_eq!(errors, failing);
    let warnings: Vec<String> = annotations::github_annotations_in(&report, None)
        .into_iter()
        .filter(|line| line.starts_with("::warning "))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("title=s%3A%3Adirect[reader=cufile]::slower than POSIX: 0.78×"),
        "{warnings:?}"
    );
    let notices = annotations::github_annotations_in(&report, None);
    assert!(
        notices
            .iter()
            .any(|line| line.starts_with("::notice ") && line.contains("title=s%3A%3Alimited")),
        "{notices:?}"
    );

    // The merged report of two such runs: the same statuses, twice the totals, the same exit.
    let runs = [
        (PathBuf::from("a/report.json"), report.clone()),
        (PathBuf::from("b/report.json"), report.clone()),
    ];
    let merged = merge::merge(&runs).unwrap();
    for trial in &merged.report.trials {
        let own = trial.name.split_once('/').unwrap().1;
        assert_eq!(trial.status, expected[own], "{}", trial.name);
    }
    let mut twice = totals;
    twice.add(&totals);
    assert_eq!(merged.report.totals, twice);
    assert_eq!(merged.exit_code(), totals.exit_code());
    // Each run's pair, named as its trials are in the merged report.
    assert_eq!(merged.report.direct_vs_posix.len(), 2);
    for (pair, run) in merged.report.direct_vs_posix.iter().zip(&merged.runs) {
        assert_eq!(pair.gpu_trial, format!("{}/{SLOWER_THAN_POSIX}", run.label));
        for name in [&pair.gpu_trial, &pair.posix_trial] {
            assert!(
                merged.report.trials.iter().any(|t| &t.name == name),
                "{name}"
            );
        }
    }
    assert!(
        merged
            .runs
            .iter()
            .all(|run| run.exit_code == exit::TRIAL_FAILED)
    );
}
