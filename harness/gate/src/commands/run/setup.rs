//! A run's second stage: the host checked and its findings said, the budget applied, the data
//! prepared, the control started, and the executor that every trial runs through.

use std::sync::{Arc, Mutex};

use super::limits::Limits;
use super::select::Selection;
use super::{Executor, Quiet, baseline, control, rehearsal, rounds, unavailable};
use crate::baseline::control::ControlReading;
use crate::cli::RunArgs;
use crate::doctor::DoctorReport;
use crate::error::Error;
use crate::host::HostFacts;
use crate::launch::Launcher;
use crate::prepare::DataSet;
use gds_model::scenario::{Suite, TrialSpec};

pub(super) struct Setup {
    pub preflight: DoctorReport,
    /// The doctor's short form, for the report.
    pub doctor: Vec<String>,
    pub limits: Arc<Limits>,
    /// The trials kept to fit the run's budget, when it has one.
    pub plan: Option<crate::budget::Plan>,
    pub executor: Arc<Executor>,
    pub control_reading: Option<ControlReading>,
}

pub(super) fn set_up(
    args: &RunArgs,
    selection: &Selection,
    pairing: Option<rehearsal::Pairing>,
    against: Option<&baseline::Against>,
    quiet: Option<&Quiet>,
    rehearsal: Option<&rehearsal::Plan>,
) -> Result<Setup, Error> {
    let host = HostFacts::probe();
    crate::prepare::check_data_dir(&args.inputs.data_dir)
        .map_err(|error| Error::Setup(gds_model::error_chain(&error)))?;
    // The doctor's short form first, so that a host that cannot do GDS says so before the trials.
    let preflight =
        crate::doctor::preflight(&args.inputs.data_dir, &selection.selected, args.require_gpu);
    let doctor = crate::doctor::short_summary(&preflight);
    let limits = Limits::load(&args.baselines, &preflight)?;
    let limits = Arc::new(match &pairing {
        Some(pairing) => limits.with_sides(pairing.sides()),
        None => limits,
    });
    if quiet.is_none_or(|q| q.doctor) {
        say_doctor(args, &host, &preflight, &doctor, &limits);
    }
    // A run (not a bless, which needs every trial) planned to fit its budget, said up front.
    let selected: Vec<&TrialSpec> = selection.selected.iter().collect();
    let plan =
        against.and_then(|against| budget_plan(args, &selection.suites, &selected, &host, against));
    let scheduled: Vec<TrialSpec> = match &plan {
        Some(plan) => {
            args.console.say(&plan.intro());
            selected
                .into_iter()
                .filter(|spec| plan.kept.contains(&spec.name))
                .cloned()
                .collect()
        }
        None => selection.selected.clone(),
    };
    let data = DataSet::prepare(
        &args.inputs.data_dir,
        scheduled
            .iter()
            .filter(|spec| unavailable(spec, &host).is_none()),
        args.rate,
        &args.console,
    );
    let schedule = match rehearsal {
        Some(plan) => rounds::Schedule::rehearsal(scheduled, plan.budget),
        None => rounds::Schedule::new(scheduled),
    };
    let progress = Arc::new(crate::progress::View::begin(
        schedule
            .jobs
            .iter()
            .map(|&job| schedule.spec(job))
            .filter(|spec| unavailable(spec, &host).is_none())
            .map(|spec| crate::progress::planned_bytes(&spec))
            .collect(),
        args.rate,
    ));
    let launcher = launcher(args, Arc::clone(&progress))?;
    // The runner's control is read in every run that has a trial to run: a bless records it, a
    // run's history line keeps it for a bless from history, and a baseline that has one compares
    // it and lets confirmation runs wait on it.
    let (control_reading, settler) = if data.any_ready() {
        control::start(args, against.and_then(baseline::Against::baseline))
    } else {
        (None, None)
    };
    let executor = Arc::new(Executor {
        data,
        require_gpu: args.require_gpu,
        launcher,
        against: against.filter(|a| a.baseline().is_some()).cloned(),
        confirm: usize::from(args.confirm),
        confirm_delay: std::time::Duration::from_secs(args.confirm_delay),
        settler,
        judged: Mutex::default(),
        schedule,
        ahead_room: preflight
            .facts
            .room_for_two_workers()
            .filter(|_| !args.one_worker_at_a_time),
        ahead: Mutex::default(),
        pairing,
        host,
        progress,
        console: args.console.clone(),
    });
    Ok(Setup {
        preflight,
        doctor,
        limits,
        plan,
        executor,
        control_reading,
    })
}

/// What the doctor found, before the trials: one line on a host that will run only CPU trials,
/// one for findings this runner is known for (recorded limitations), else every finding.
fn say_doctor(
    args: &RunArgs,
    host: &HostFacts,
    preflight: &DoctorReport,
    doctor: &[String],
    limits: &Limits,
) {
    match &host.gpu_unavailable {
        Some(reason) if !args.require_gpu && !args.doctor => {
            args.console
                .say(&crate::doctor::cpu_only_line(preflight, reason));
        }
        // What the doctor finds is what this runner is known not to do: once, not as a failure.
        _ if !args.doctor && limits.cover_the_doctors_findings() => {
            args.console.say(&limits.doctor_line());
        }
        _ => {
            for line in doctor {
                args.console.say(line);
            }
        }
    }
}

/// How the run starts its workers; they feed the run's `progress` view as they read.
fn launcher(args: &RunArgs, progress: Arc<crate::progress::View>) -> Result<Launcher, Error> {
    let gate = crate::job::worker_program().map_err(|error| {
        Error::Setup(format!(
            "cannot find the gate's own binary to start workers: {}",
            gds_model::error_chain(&error)
        ))
    })?;
    Ok(Launcher {
        gate,
        trials_dir: args.out.join("trials"),
        strict: args.strict,
        timeout: args.timeout.map(std::time::Duration::from_secs),
        gds_stats: crate::launch::find_gds_stats(),
        env: Vec::new(),
        progress: Some(progress),
    })
}

/// The plan that fits `--budget` (else the suites' smallest `budget:`), when there is one; the
/// estimates come from `against`'s runner's history, which a run that cannot read it goes without.
fn budget_plan(
    args: &RunArgs,
    suites: &[Suite],
    selected: &[&TrialSpec],
    host: &HostFacts,
    against: &baseline::Against,
) -> Option<crate::budget::Plan> {
    let budget = args
        .budget
        .or_else(|| suites.iter().filter_map(|suite| suite.budget).min())?;
    let last = crate::budget::last_runs(against.history().lines());
    Some(crate::budget::plan(
        selected,
        |spec| unavailable(spec, host).is_none(),
        budget,
        &last,
    ))
}
