//! libtest's line for a trial: its outcome, with the words of its failure.

use gds_model::outcome::Outcome;
use gds_model::record::TrialRecord;
use gds_runner::escape::terminal;

/// libtest's result for a trial, from its outcome: a failure against the baseline with that
/// comparison's message, a failure of its own checks with its reason and details.
pub fn result(
    record: &TrialRecord,
    baseline_failure: Option<String>,
) -> Result<libtest_mimic::Completion, libtest_mimic::Failed> {
    match (record.status, baseline_failure) {
        (Outcome::Passed, _) => Ok(libtest_mimic::Completion::Completed),
        (Outcome::Ignored, _) => Ok(libtest_mimic::Completion::ignored_with(terminal(
            record.reason.as_deref().unwrap_or_default(),
        ))),
        // libtest has no word for it: counted as ignored there, named `limited` in the line.
        (Outcome::Limited, _) => Ok(libtest_mimic::Completion::ignored_with(terminal(
            &record.limited_line().unwrap_or_default(),
        ))),
        (_, Some(message)) => Err(libtest_mimic::Failed::from(terminal(&message))),
        (_, None) => Err(libtest_mimic::Failed::from(terminal(&format!(
            "{}\n{}",
            record.reason.as_deref().unwrap_or("failed"),
            record.details.as_deref().unwrap_or("")
        )))),
    }
}
