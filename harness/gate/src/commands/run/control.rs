//! The runner's control in a run: read once at the start (recorded in the report, which a bless
//! keeps), and, when the baseline has a blessed control, the [`Settler`] that confirmation runs
//! wait on. Nothing here can fail a run: without a control, confirmations simply do not wait.

use std::time::Duration;

use crate::baseline::Baseline;
use crate::cli::RunArgs;
use crate::console;
use crate::control::{Control, ControlReading, Settler, describe};
use gds_model::error_chain;
use gds_model::record::RunnerCheck;

/// Pause between control reads while a confirmation waits for the runner.
const POLL: Duration = Duration::from_secs(10);

/// Prepares and reads the control; returns the reading and, when `baseline` blessed a control,
/// the settler for confirmations.
pub(super) fn start(
    args: &RunArgs,
    baseline: Option<&Baseline>,
) -> (Option<ControlReading>, Option<Settler>) {
    if args.control_size == 0 {
        return (None, None);
    }
    let control = match Control::prepare(&args.inputs.data_dir, args.control_size) {
        Ok(control) => control,
        Err(error) => {
            warn(&error_chain(&error));
            return (None, None);
        }
    };
    let reading = match control.read() {
        Ok(reading) => reading,
        Err(error) => {
            warn(&error.to_string());
            return (None, None);
        }
    };
    let blessed = baseline.and_then(|b| b.control.clone());
    let condition = blessed.as_ref().and_then(|b| b.condition(&reading));
    // Said only when it matters to this run's figures: the runner starts below its blessed
    // level. report.json keeps every reading.
    if let Some(c) = condition.filter(|c| c.below_level()) {
        console::say(&format!(
            "control: {}: the runner starts this run below its level",
            describe(c.disk, c.cpu, c.cpu_share)
        ));
    }
    let settler = blessed.map(|blessed| {
        Settler::new(
            Box::new(move || control.read()),
            blessed,
            Duration::from_secs(args.runner_wait),
            POLL,
        )
    });
    (Some(reading), settler)
}

fn warn(why: &str) {
    console::warning(&format!(
        "no control read this run ({why}): a trial that looks slower is confirmed without waiting for the runner"
    ));
}

/// Waits for the runner before a confirmation run. Silent, so that the trial's libtest line is
/// not split: the check is recorded, and the trial's message says what it found.
pub(super) fn settle(settler: &Settler) -> Option<RunnerCheck> {
    match settler.settle(&crate::interrupt::sleep) {
        Ok(check) => Some(check),
        Err(why) => {
            warn(&gds_model::error_line(&why));
            None
        }
    }
}
