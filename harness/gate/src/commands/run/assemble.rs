//! A run's last stage: the report of what ran, its within-run comparisons, and the notes said on
//! the terminal.

use std::time::{Instant, SystemTime};

use super::select::Selection;
use super::setup::Setup;
use super::trials::Ran;
use super::{RunOutput, notes, rehearsal};
use crate::cli::RunArgs;
use crate::console::Console;
use crate::outcome::Totals;
use crate::report::{self, PreparedFileRecord, Report, SuiteRef};
use gds_model::timing::RunTime;

/// When the run started, by the wall clock (for the report) and by a monotonic one (its length).
pub(super) struct Started {
    pub at: SystemTime,
    pub instant: Instant,
}

impl Started {
    pub fn now() -> Started {
        Started {
            at: SystemTime::now(),
            instant: Instant::now(),
        }
    }
}

pub(super) fn output(
    args: &RunArgs,
    command: Vec<String>,
    started: &Started,
    selection: &Selection,
    setup: Setup,
    ran: Ran,
) -> RunOutput {
    let trials = ran.records;
    let skipped = selection.specs.len() - setup.executor.schedule.trials.len();
    let totals = Totals::of(&trials, ran.undefined, skipped);
    let mut notes = notes(&trials, args.require_gpu);
    notes.extend(setup.plan.as_ref().and_then(crate::budget::Plan::note));
    notes.extend(setup.limits.notes());
    let duration_seconds = started.instant.elapsed().as_secs_f64();
    let executor = &setup.executor;
    let mut report = Report {
        schema_version: report::SCHEMA_VERSION,
        gate_version: env!("CARGO_PKG_VERSION").into(),
        started_at: humantime::format_rfc3339_seconds(started.at).to_string(),
        duration_seconds,
        time: Some(RunTime::of(&trials, duration_seconds)),
        command,
        host: executor.host.clone(),
        data_dir: args.inputs.data_dir.clone(),
        suites: selection
            .suites
            .iter()
            .map(|suite| SuiteRef {
                name: suite.name.clone(),
                path: suite.path.clone(),
            })
            .collect(),
        data: executor
            .data
            .log
            .iter()
            .map(PreparedFileRecord::from)
            .collect(),
        trials,
        totals,
        notes,
        doctor: setup.doctor,
        runner: None,
        fingerprint: None,
        baseline: None,
        control: setup.control_reading,
        direct_vs_posix: Vec::new(),
        rehearsal: executor.pairing.as_ref().map(rehearsal::Pairing::finish),
        registered_vs_unregistered: Vec::new(),
        scope: args.scope(),
        rate: args.rate,
    };
    // A rehearsal compares each trial with itself on the other stack, not with the posix reader.
    if report.rehearsal.is_none() {
        report.compare_within_run(&setup.preflight.facts.topology(), args.posix_tolerance);
    }
    RunOutput {
        report,
        defined: ran.defined,
        judged: ran.judged,
        libtest_failed: ran.libtest_failed,
    }
}

/// The report's notes and its GDS-against-POSIX pairs, on the terminal.
pub(super) fn say(console: &Console, report: &Report) {
    for note in &report.notes {
        console.note(note);
    }
    let pairs = report::direct::console(&report.direct_vs_posix);
    if !pairs.is_empty() {
        console.say(&pairs);
    }
    for pair in &report.direct_vs_posix {
        if let Some(warning) = pair.warning(report.rate) {
            console.warning(&format!("{}: {warning}", pair.gpu_trial));
        }
    }
}
