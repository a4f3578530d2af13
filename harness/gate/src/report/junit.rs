//! `junit.xml`: one test suite per scenario suite, one test case per trial.

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

use super::Report;
use crate::baseline::compare::TrialJudgement;
use crate::baseline::{Judgement, Severity};
use gds_model::record::Status;

/// `regression` for a confirmed slowdown or CPU-cost rise, `baseline` for a changed path or checksum or a missing
/// trial: CI test views then tell a slow disk from a broken path.
fn baseline_failure(judged: &TrialJudgement) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_type(match judged.judgement {
        Judgement::Regression { .. } | Judgement::CpuCostlier { .. } => "regression",
        _ => "baseline",
    });
    status.set_message(judged.headline.clone());
    status.set_description(judged.message.clone());
    status
}

pub fn render(report: &Report) -> String {
    let mut junit = quick_junit::Report::new("gds-gate");
    junit.set_time(Duration::from_secs_f64(report.duration_seconds.max(0.0)));
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    let judged = |name: &str| {
        report
            .baseline
            .as_ref()
            .and_then(|comparison| comparison.get(name))
            .filter(|judged| judged.judgement.severity() >= Severity::Regression)
    };
    for trial in &report.trials {
        // A trial that fails against the baseline is a failure here too, with its own type.
        let against_baseline = judged(&trial.name).filter(|_| trial.status != Status::Failed);
        let mut status = match (against_baseline, trial.status) {
            (Some(judged), _) => baseline_failure(judged),
            (None, Status::Passed) => TestCaseStatus::success(),
            (None, Status::Failed) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_message(trial.reason.clone().unwrap_or_default());
                status.set_description(trial.details.clone().unwrap_or_default());
                status
            }
            (None, Status::Ignored) => {
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
    // Baseline trials this run has no record of: failures in a suite of their own.
    let recorded = |name: &str| report.trials.iter().any(|t| t.name == name);
    for judged in report.baseline.iter().flat_map(|c| &c.trials) {
        if !recorded(&judged.trial) && judged.judgement.severity() >= Severity::Regression {
            let case = TestCase::new(judged.trial.as_str(), baseline_failure(judged));
            suites
                .entry("baseline")
                .or_insert_with(|| TestSuite::new("baseline"))
                .add_test_case(case);
        }
    }
    junit.add_test_suites(suites.into_values());
    // Serialising owned strings into memory cannot fail; keep the report rather than panic if it does.
    junit
        .to_string()
        .unwrap_or_else(|error| format!("<!-- junit serialisation failed: {error} -->\n"))
}
