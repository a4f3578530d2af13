//! The runner's control in a run: read once at the start (recorded in the report, which a bless
//! keeps), and, when the baseline has a blessed control, the [`Settler`] that confirmation runs
//! wait on. Nothing here can fail a run: without a control, confirmations simply do not wait.

use std::path::Path;
use std::time::Duration;

use crate::baseline::Baseline;
use crate::cli::RunArgs;
use crate::console::Console;
use crate::control::{Control, ControlReading, Settler, words};
use gds_model::busy::{Disk, Snapshot};
use gds_model::error_chain;
use gds_model::record::{Needs, RunnerCheck};

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
            warn(&args.console, &error_chain(&error));
            return (None, None);
        }
    };
    let reading = match control.read() {
        Ok(reading) => reading,
        // Stopped by Ctrl-C: the run ends next, and says why.
        Err(_) if crate::interrupt::received().is_some() => return (None, None),
        Err(error) => {
            warn(&args.console, &error.to_string());
            return (None, None);
        }
    };
    let blessed = baseline.and_then(|b| b.control.clone());
    if let Some(blessed) = &blessed {
        say_how_the_runner_starts(&args.console, blessed, &reading);
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

/// Said only when it matters to this run's figures: the runner starts below its blessed level,
/// or the baseline cannot say whether it is (blessed by an older gate). report.json keeps every
/// reading.
fn say_how_the_runner_starts(
    console: &Console,
    blessed: &crate::control::ControlBaseline,
    reading: &ControlReading,
) {
    let Some(condition) = blessed.condition(reading) else {
        return;
    };
    let below = blessed.shortfalls(&condition, Needs::ALL);
    if !below.is_empty() {
        let check = RunnerCheck {
            disk: condition.disk,
            cpu: condition.cpu,
            cpu_share: condition.cpu_share,
            memory: condition.memory,
            host: condition.host,
            host_blessed: blessed.host_level(),
            below,
            ..RunnerCheck::default()
        };
        console.say(&format!(
            "control: the runner starts this run below its level: {}",
            words::what_was_off(&check)
        ));
    }
    let mut missing = Vec::new();
    if blessed.memory_runs.is_empty() {
        missing.push("copies in memory (what a warm read depends on)");
    }
    if blessed.host_runs.is_empty() {
        missing.push("how busy the host was");
    }
    if !missing.is_empty() {
        console.note(&format!(
            "the baseline's control has no {}: it was blessed by an older gate, so confirmations do not wait for them and a slowdown is not called a trial's own; bless again to record them",
            missing.join(" and ")
        ));
    }
}

fn warn(console: &Console, why: &str) {
    console.warning(&format!(
        "no control read this run ({why}): a trial that looks slower is confirmed without waiting for the runner"
    ));
}

/// Waits for the runner before a confirmation run of a trial that `needs` what it says. A wait
/// is said as progress (it can take minutes); the check is recorded, and the trial's message
/// says what it found.
pub(super) fn settle(
    console: &Console,
    settler: &Settler,
    needs: Needs,
    progress: &crate::progress::View,
) -> Option<RunnerCheck> {
    let waiting = |text: &str| progress.trial_waits("waiting for the runner", text);
    match settler.settle(needs, &crate::interrupt::sleep, &waiting) {
        Ok(check) => Some(check),
        Err(why) => {
            warn(console, &gds_model::error_line(&why));
            None
        }
    }
}

/// The host's counters before a confirmation run, the data dir's disk among them, to say how
/// busy it was while the run ran; `None` where `/proc` cannot be read (then nothing is said).
pub(super) fn start_window(data_dir: &Path) -> Option<Snapshot> {
    Snapshot::take(Disk::of(data_dir)).ok()
}

/// Records in `check` how busy the host was since `start`, under a trial of `threads` threads.
pub(super) fn end_window(
    settler: &Settler,
    check: &mut RunnerCheck,
    start: Option<Snapshot>,
    threads: u32,
) {
    if let Some(reading) = start.and_then(|start| start.until_now().ok()) {
        settler.during(check, reading, threads);
    }
}
