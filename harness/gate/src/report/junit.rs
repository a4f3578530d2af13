//! `junit.xml`: one test suite per scenario suite, one test case per trial.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use super::Report;
use gds_model::record::Status;

pub fn render(report: &Report) -> String {
    let mut junit = quick_junit::Report::new("gds-gate");
    junit.set_time(Duration::from_secs_f64(report.duration_seconds.max(0.0)));
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for trial in &report.trials {
        let mut status = match trial.status {
            Status::Passed => TestCaseStatus::success(),
            Status::Failed => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_message(trial.reason.clone().unwrap_or_default());
                status.set_description(trial.details.clone().unwrap_or_default());
                status
            }
            Status::Ignored => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(trial.reason.clone().unwrap_or_default());
                status
            }
        };
        if trial.status == Status::Failed {
            status.set_type("gds-gate");
        }
        let mut case = TestCase::new(trial.name.as_str(), status);
        case.set_classname(format!("{}::{}", trial.spec.suite, trial.spec.scenario));
        if let Some(measurement) = &trial.measurement {
            case.set_time(Duration::from_secs_f64(measurement.total_seconds.max(0.0)));
            case.set_system_out(trial.summary());
        }
        suites
            .entry(trial.spec.suite.as_str())
            .or_insert_with(|| TestSuite::new(trial.spec.suite.as_str()))
            .add_test_case(case);
    }
    junit.add_test_suites(suites.into_values());
    // Serialising owned strings into memory cannot fail; keep the report rather than panic if it does.
    junit
        .to_string()
        .unwrap_or_else(|error| format!("<!-- junit serialisation failed: {error} -->\n"))
}
