//! The runner's control in a run: read once at the start (recorded in the report, which a bless
//! keeps), and, when the baseline has a blessed control, the [`Settler`] that confirmation runs
//! wait on. Nothing here can fail a run: without a control, confirmations simply do not wait.

use std::time::Duration;

use crate::baseline::Baseline;
use crate::cli::RunArgs;
use crate::control::{Control, ControlReading, Settler, describe};
use crate::escape::terminal;
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
    let median = gds_model::numbers::median;
    let mut line = format!(
        "control: the data dir's disk {:.2} GB/s, checking its bytes {:.2} GiB per CPU second",
        median(&reading.disk_gbps),
        median(&reading.cpu_gib_per_s)
    );
    if let Some(c) = condition {
        line.push_str(&format!(
            " ({}{})",
            describe(c.disk, c.cpu, c.cpu_share),
            if c.below_level() {
                ": the runner starts this run below its level"
            } else {
                ""
            }
        ));
    }
    eprintln!("{}", terminal(&line));
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
    eprintln!(
        "warning: no control read this run ({}): a trial that looks slower is confirmed without waiting for the runner",
        terminal(why)
    );
}

/// Waits for the runner before `trial`'s confirmation run, saying so when it waited or the
/// runner stayed slow.
pub(super) fn settle(settler: &Settler, trial: &str) -> Option<RunnerCheck> {
    match settler.settle(&crate::interrupt::sleep) {
        Ok(check) => {
            if check.waited_s > 0.0 || check.still_slow {
                eprintln!(
                    "\nrunner: before the confirmation run of {}: the control read {}; {}",
                    terminal(trial),
                    describe(check.disk_before, check.cpu_before, check.cpu_share_before),
                    describe_wait(&check)
                );
            }
            Some(check)
        }
        Err(why) => {
            warn(&why);
            None
        }
    }
}

fn describe_wait(check: &RunnerCheck) -> String {
    match (check.still_slow, check.waited_s > 0.0) {
        (false, _) => format!(
            "after {:.0} s it was back ({})",
            check.waited_s,
            describe(check.disk, check.cpu, check.cpu_share)
        ),
        (true, true) => format!(
            "after {:.0} s it was still below ({}): confirming on a slow or busy runner",
            check.waited_s,
            describe(check.disk, check.cpu, check.cpu_share)
        ),
        (true, false) => {
            "it stayed below for a whole wait earlier in this run: confirming without waiting again"
                .into()
        }
    }
}
