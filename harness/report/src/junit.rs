//! `junit.xml`: one test suite per scenario suite, one test case per trial.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use super::Report;
use gds_baseline::outcome::Outcome;

/// Text for the XML: control characters shown escaped, since XML 1.0 cannot hold most C0
/// characters even as references and quick-junit would silently drop them (and whole ANSI
/// sequences), leaving a reason that no longer says what the worker printed. Line breaks and
/// tabs are legal and kept.
fn xml(text: &str) -> String {
    gds_runner::escape::controls(text, &['\n', '\t'])
}

/// A failing outcome as JUnit says it. The type tells CI test views a slow disk (`regression`)
/// from a broken path or missing trial (`baseline`) from a trial's own failure (`gds-gate`).
fn failure(outcome: Outcome, message: String, description: String) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_type(match outcome {
        Outcome::Failed => "gds-gate",
        o if o.is_regression() => "regression",
        _ => "baseline",
    });
    status.set_message(xml(&message));
    status.set_description(xml(&description));
    status
}

pub fn render(report: &Report) -> String {
    let mut junit = quick_junit::Report::new("gds-gate");
    junit.set_time(Duration::from_secs_f64(report.duration_seconds.max(0.0)));
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for trial in &report.trials {
        let status = match (trial.status, report.failure_of(trial)) {
            (Outcome::Passed, _) => TestCaseStatus::success(),
            (Outcome::Ignored, _) => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(xml(trial.reason.as_deref().unwrap_or_default()));
                status
            }
            (Outcome::Limited, _) => {
                let mut status = TestCaseStatus::skipped();
                status.set_type("limited");
                status.set_message(xml(&trial.limited_line().unwrap_or_default()));
                status
            }
            (outcome, failing) => {
                let (message, description) =
                    failing.map(|w| (w.headline, w.message)).unwrap_or_default();
                failure(outcome, message, description)
            }
        };
        let mut case = TestCase::new(xml(&trial.name), status);
        case.set_classname(xml(&format!(
            "{}::{}",
            trial.spec.suite, trial.spec.scenario
        )));
        if let Some(measurement) = &trial.measurement {
            case.set_time(Duration::from_secs_f64(measurement.total_seconds.max(0.0)));
            case.set_system_out(xml(&trial.summary(report.rate)));
        }
        // What did not fail the trial but should be seen (a GPU reader slower than POSIX, a
        // crash after a complete result), as the annotations' `::warning`s say it.
        if !trial.warnings.is_empty() {
            let warnings: Vec<String> = trial
                .warnings
                .iter()
                .map(|warning| format!("warning: {warning}"))
                .collect();
            case.set_system_err(xml(&warnings.join("\n")));
        }
        suites
            .entry(trial.spec.suite.as_str())
            .or_insert_with(|| TestSuite::new(xml(&trial.spec.suite)))
            .add_test_case(case);
    }
    // Baseline trials no suite defines any more: failures in a suite of their own.
    for judged in report.missing_without_record() {
        let words = report.words(judged);
        let (headline, message) = words.map(|w| (w.headline, w.message)).unwrap_or_default();
        let status = failure(Outcome::Missing, headline, message);
        suites
            .entry("baseline")
            .or_insert_with(|| TestSuite::new("baseline"))
            .add_test_case(TestCase::new(xml(&judged.trial), status));
    }
    junit.add_test_suites(suites.into_values());
    // Serialising owned strings into memory cannot fail; keep the report rather than panic if it does.
    junit
        .to_string()
        .unwrap_or_else(|error| format!("<!-- junit serialisation failed: {error} -->\n"))
}
