//! One gate run: load suites, expand trials, prepare data, run the trials through libtest-mimic,
//! write reports, and turn the outcome into an exit code.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use libtest_mimic::{Failed, FormatSetting, Trial};

use crate::baseline::Judgement;
use crate::cli::RunArgs;
use crate::console;
use crate::error::Error;
use crate::exit;

mod ahead;
pub(crate) mod baseline;
mod control;
pub(crate) mod limits;
pub(crate) mod rehearsal;
mod rounds;
use crate::escape::terminal;
use crate::host::HostFacts;
use crate::launch::Launcher;
use crate::outcome::Totals;
use crate::prepare::DataSet;
use crate::report::{self, PreparedFileRecord, Report, SuiteRef};
use gds_model::plan::{PlannedFile, ReadPlan};
use gds_model::record::{Status, TrialRecord};
use gds_model::scenario::Reader;
use gds_model::scenario::{self, GpuSet, Suite, TrialSpec};
use gds_model::timing::RunTime;

/// Loads every suite; the error holds every one that does not load.
pub fn load_suites(paths: &[std::path::PathBuf]) -> Result<Vec<Suite>, Error> {
    let mut suites = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        // Outside the repository the default suite is not there: say what to pass instead of
        // "cannot read scenario file".
        if path == std::path::Path::new(crate::cli::DEFAULT_SUITE) && !path.exists() {
            return Err(Error::Usage(format!(
                "no --suite given, and the default suite `{}` is not in this folder ({})\n  next: run from the gds-gate repository (`cargo xtask gds-gate`), or pass --suite PATH (or set GDS_GATE_SUITE) to a suite file",
                crate::cli::DEFAULT_SUITE,
                std::env::current_dir()
                    .map_or_else(|_| "?".into(), |dir| dir.display().to_string())
            )));
        }
        match scenario::load(path) {
            Ok(suite) => suites.push(suite),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(suites)
    } else {
        Err(Error::Suites(errors))
    }
}

/// A run that shows nothing of its own but errors (a bless's runs): libtest writes its lines to
/// `libtest_log`, and the doctor's line is shown only when `doctor` is set.
pub struct Quiet {
    pub libtest_log: std::path::PathBuf,
    pub doctor: bool,
}

/// What a run of the trials produced: the records, each with its outcome, and the judgements
/// against the baseline that decided them.
pub struct RunOutput {
    pub report: Report,
    /// Every trial name the suites define (selected or not), and the baseline's trials no suite
    /// defines that the selection left out: the comparison leaves both unjudged when not run.
    pub defined: BTreeSet<String>,
    /// Each trial's judgement against the baseline, made once as it ran.
    pub judged: BTreeMap<String, Judgement>,
    /// libtest's count of failed trials, which must be the totals' failures.
    pub libtest_failed: usize,
}

/// `gds-gate [OPTIONS] [FILTER]`: the trials, then the baseline comparison, then the reports;
/// the exit code of the run's outcome.
pub fn run_gate(args: RunArgs, command: Vec<String>) -> Result<u8, Error> {
    crate::interrupt::install();
    // The baseline is read before the first trial: a damaged file stops the gate at once, and the
    // trials are judged against it as they run.
    let against = baseline::Against::load(&args)?;
    let _out = claim_out(&args)?;
    match run_trials(&args, command, Some(&against), None, None)? {
        Some(output) => baseline::finish_run(&args, output, &against),
        None => Ok(exit::PASSED),
    }
}

/// Takes `--out` for this run ([`crate::out_lock`]) before the first trial: another gate writing
/// there, or a folder that cannot be written, stops the run before anything is measured. Listing
/// trials writes nothing and needs no lock (`None`).
pub(crate) fn claim_out(args: &RunArgs) -> Result<Option<crate::out_lock::OutLock>, Error> {
    if args.libtest.list {
        return Ok(None);
    }
    Ok(Some(crate::out_lock::claim(&args.out)?))
}

/// Loads the suites and runs the selected trials, each judged against `against`'s baseline (when
/// it has one) as soon as it ran; or, for a rehearsal, each trial on both stacks, B judged
/// against A. `None` when it only listed them.
pub fn run_trials(
    args: &RunArgs,
    command: Vec<String>,
    against: Option<&baseline::Against>,
    quiet: Option<&Quiet>,
    rehearsal: Option<&rehearsal::Plan>,
) -> Result<Option<RunOutput>, Error> {
    let mut libtest = args.libtest.clone();
    // Listing prints to stdout as asked, and writes nothing to --out.
    if let Some(quiet) = quiet.filter(|_| !libtest.list) {
        libtest.logfile = Some(quiet.libtest_log.display().to_string());
    }
    let started_at = SystemTime::now();
    let started = Instant::now();
    let suites = load_suites(&args.inputs.suite_paths())?;
    let specs: Vec<TrialSpec> = suites.iter().flat_map(scenario::expand).collect();
    let pairing = rehearsal.map(|plan| rehearsal::Pairing::new(plan, &specs));
    let specs = match rehearsal {
        Some(plan) => plan.sides(specs),
        None => specs,
    };
    if let Some(duplicate) = first_duplicate_name(&specs) {
        return Err(Error::Usage(format!(
            "trial `{duplicate}` is defined twice; give the suites different `suite:` names"
        )));
    }
    // Throughput trials share the machine's storage and memory bandwidth: one at a time.
    libtest.test_threads = Some(1);
    if libtest.list {
        let trials = specs.iter().map(listed).collect();
        let _ = libtest_mimic::run(&libtest, trials);
        return Ok(None);
    }

    let host = HostFacts::probe();
    let selected: Vec<&TrialSpec> = specs
        .iter()
        .filter(|spec| !libtest.is_filtered_out(&listed(spec)))
        .collect();
    // Before anything is prepared or written: a run of nothing must not replace the reports of
    // the last real one.
    if selected.is_empty() {
        return Err(nothing_selected(args, specs.len()));
    }
    crate::prepare::check_data_dir(&args.inputs.data_dir)
        .map_err(|error| Error::Setup(gds_model::error_chain(&error)))?;
    // The doctor's short form first, so that a host that cannot do GDS says so before the trials.
    let selected_specs: Vec<TrialSpec> = selected.iter().map(|spec| (*spec).clone()).collect();
    let preflight =
        crate::doctor::preflight(&args.inputs.data_dir, &selected_specs, args.require_gpu);
    let doctor = crate::doctor::short_summary(&preflight);
    let limits = limits::Limits::load(&args.baselines, &preflight)?;
    let limits = Arc::new(match &pairing {
        Some(pairing) => limits.with_sides(pairing.sides()),
        None => limits,
    });
    match &host.gpu_unavailable {
        _ if quiet.is_some_and(|q| !q.doctor) => {}
        Some(reason) if !args.require_gpu && !args.doctor => {
            console::say(&crate::doctor::cpu_only_line(&preflight, reason));
        }
        // What the doctor finds is what this runner is known not to do: once, not as a failure.
        _ if !args.doctor && limits.cover_the_doctors_findings() => {
            console::say(&limits.doctor_line());
        }
        _ => {
            for line in &doctor {
                console::say(line);
            }
        }
    }
    // A run (not a bless, which needs every trial) planned to fit its budget, said up front.
    let plan = against.and_then(|against| budget_plan(args, &suites, &selected, &host, against));
    let selected: Vec<&TrialSpec> = match &plan {
        Some(plan) => {
            console::say(&plan.intro());
            selected
                .into_iter()
                .filter(|spec| plan.kept.contains(&spec.name))
                .collect()
        }
        None => selected,
    };
    let left_out = |spec: &TrialSpec| {
        plan.as_ref()
            .is_some_and(|plan| plan.left_out.iter().any(|(name, _)| *name == spec.name))
    };
    let runnable = selected
        .iter()
        .copied()
        .filter(|spec| unavailable(spec, &host).is_none());
    let data = DataSet::prepare(&args.inputs.data_dir, runnable);
    let gate = crate::job::worker_program().map_err(|error| {
        Error::Setup(format!(
            "cannot find the gate's own binary to start workers: {}",
            gds_model::error_chain(&error)
        ))
    })?;
    let launcher = Launcher {
        gate,
        trials_dir: args.out.join("trials"),
        strict: args.strict,
        timeout: args.timeout.map(std::time::Duration::from_secs),
        gds_stats: crate::launch::find_gds_stats(),
        env: Vec::new(),
    };
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
        host: host.clone(),
        require_gpu: args.require_gpu,
        launcher,
        against: against.filter(|a| a.baseline().is_some()).cloned(),
        confirm: usize::from(args.confirm),
        confirm_delay: std::time::Duration::from_secs(args.confirm_delay),
        settler,
        judged: Mutex::default(),
        schedule: {
            let trials = selected.iter().map(|spec| (*spec).clone()).collect();
            match rehearsal {
                Some(plan) => rounds::Schedule::rehearsal(trials, plan.budget),
                None => rounds::Schedule::new(trials),
            }
        },
        ahead_room: preflight
            .facts
            .room_for_two_workers()
            .filter(|_| !args.one_worker_at_a_time),
        ahead: Mutex::default(),
        pairing,
    });

    let records: Arc<Mutex<Vec<TrialRecord>>> = Arc::default();
    let show_summary = quiet.is_none()
        && !libtest.quiet
        && matches!(libtest.format, None | Some(FormatSetting::Pretty));
    let mut trials: Vec<Trial> = specs
        .iter()
        .filter(|spec| !left_out(spec))
        .map(|spec| {
            let (spec, executor, records, limits) = (
                spec.clone(),
                Arc::clone(&executor),
                Arc::clone(&records),
                Arc::clone(&limits),
            );
            let (kind, name) = (spec.reader.name(), spec.name.clone());
            Trial::ignorable_test(name, move || {
                let mut record = executor.execute_and_confirm(spec);
                let failure = executor.judge(&mut record);
                limits.apply(&mut record);
                if show_summary && record.checks != Status::Ignored {
                    print!("{} ", terminal(&record.summary()));
                    let _ = std::io::stdout().flush();
                }
                let outcome = crate::report::libtest::result(&record, failure);
                records
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(record);
                outcome
            })
            .with_kind(kind)
        })
        .collect();
    // Baseline trials no suite defines any more fail on lines of their own, as trials do; those
    // the selection leaves out are not part of the run.
    let mut defined: BTreeSet<String> = specs.iter().map(|spec| spec.name.clone()).collect();
    let mut undefined = 0;
    for (name, message) in against.map_or_else(Vec::new, |a| a.undefined(&defined)) {
        let trial = Trial::test(name.clone(), move || Err(Failed::from(terminal(&message))))
            .with_kind("missing");
        if libtest.is_filtered_out(&trial) {
            defined.insert(name);
        } else {
            trials.push(trial);
            undefined += 1;
        }
    }
    let schedule = &executor.schedule;
    crate::progress::begin(
        schedule
            .jobs
            .iter()
            .map(|&job| schedule.spec(job))
            .filter(|spec| unavailable(spec, &host).is_none())
            .map(|spec| crate::progress::planned_bytes(&spec))
            .collect(),
    );
    let libtest_failed = match crate::interrupt::received() {
        // Stopped before the first trial (during the doctor's probe or the data): no libtest
        // run, whose summary would read "ok. 0 passed"; every selected trial is not run.
        Some(signal) => {
            let mut records = records
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            for spec in &selected {
                let mut record = crate::interrupt::not_run((*spec).clone(), signal);
                executor.judge(&mut record);
                records.push(record);
            }
            0
        }
        None => libtest_mimic::run(&libtest, trials).num_failed as usize,
    };
    // Started for a trial that did not run after all (an interrupt, a panic).
    executor.stop_held();
    crate::progress::end();

    let trials = std::mem::take(
        &mut *records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    let judged = std::mem::take(
        &mut *executor
            .judged
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    let totals = Totals::of(&trials, undefined, specs.len() - selected.len());
    let mut notes = notes(&trials, args.require_gpu);
    notes.extend(plan.as_ref().and_then(crate::budget::Plan::note));
    notes.extend(limits.notes());
    let duration_seconds = started.elapsed().as_secs_f64();
    let mut report = Report {
        schema_version: report::SCHEMA_VERSION,
        gate_version: env!("CARGO_PKG_VERSION").into(),
        started_at: humantime::format_rfc3339_seconds(started_at).to_string(),
        duration_seconds,
        time: Some(RunTime::of(&trials, duration_seconds)),
        command,
        host,
        data_dir: args.inputs.data_dir.clone(),
        suites: suites
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
        doctor,
        runner: None,
        fingerprint: None,
        baseline: None,
        control: control_reading,
        direct_vs_posix: Vec::new(),
        rehearsal: executor.pairing.as_ref().map(rehearsal::Pairing::finish),
        registered_vs_unregistered: Vec::new(),
        scope: args.scope(),
    };
    // A rehearsal compares each trial with itself on the other stack, not with the posix reader.
    if report.rehearsal.is_none() {
        report.compare_within_run(&preflight.facts.topology(), args.posix_tolerance);
    }
    if quiet.is_none() {
        for note in &report.notes {
            console::note(note);
        }
        let pairs = report::direct::console(&report.direct_vs_posix);
        if !pairs.is_empty() {
            console::say(&pairs);
        }
        for pair in &report.direct_vs_posix {
            if let Some(warning) = pair.warning() {
                console::warning(&format!("{}: {warning}", pair.gpu_trial));
            }
        }
    }
    Ok(Some(RunOutput {
        report,
        defined,
        judged,
        libtest_failed,
    }))
}

/// A trial as libtest lists and filters it: its name and, as its kind, the reader. Filters match
/// `[kind] name`, so the selection made here for data preparation is the one libtest runs.
pub(crate) fn listed(spec: &TrialSpec) -> Trial {
    Trial::test(spec.name.clone(), || Ok(())).with_kind(spec.reader.name())
}

/// Drops the page cache a trial's reads left behind, outside every worker's clock. No trial then
/// inherits the pages of the ones before it (a name filter cannot change a result, and a warm
/// trial warms the cache with its own warmup passes), and a cold trial does not pay for evicting
/// its predecessor's pages in its start-up: on the H200 host that took 0.4-0.5 s for 4 GiB read
/// by 8 threads. (A worker started ahead may still drop the same file beside the previous
/// worker's own last drop, before its hold.) Best effort: a cold trial's own drop reports what
/// fails.
fn leave_uncached(paths: &[std::path::PathBuf]) {
    for path in paths {
        let _ = gds_model::cache::drop_path(path);
    }
}

/// What every trial needs to run: the prepared data, the host's facts, how to start workers, and
/// what to judge them against.
struct Executor {
    data: DataSet,
    host: HostFacts,
    require_gpu: bool,
    launcher: Launcher,
    against: Option<baseline::Against>,
    /// Confirmation runs a trial that looks slower gets (`--confirm`), each after a pause.
    confirm: usize,
    confirm_delay: std::time::Duration,
    /// Waits for the runner's control before a confirmation run, when the baseline has one.
    settler: Option<crate::control::Settler>,
    /// Each trial's judgement against the baseline, as [`Executor::judge`] made it.
    judged: Mutex<BTreeMap<String, Judgement>>,
    /// The trials libtest runs, in its order, and their rounds' workers in the order they run:
    /// whose worker may start during the one before.
    schedule: rounds::Schedule,
    /// The smallest GPU's memory, when a GPU trial's worker may start as the previous one
    /// answers ([`ahead`]): every GPU lets two processes hold a CUDA context at once, and the
    /// run is not `--one-worker-at-a-time`.
    ahead_room: Option<u64>,
    /// The next trial's worker, started ahead ([`ahead`]).
    ahead: Mutex<Option<(usize, crate::launch::Held)>>,
    /// A rehearsal's stacks and the pairs judged so far; `None` in a run or a bless.
    pairing: Option<rehearsal::Pairing>,
}

impl Executor {
    /// Judges the trial against the baseline (in a rehearsal: a B side against its A), once, and
    /// settles its outcome; returns the message of a failure against the baseline (a rehearsal's
    /// failure is said by the record's reason and details, as a failed check is).
    fn judge(&self, record: &mut TrialRecord) -> Option<String> {
        if let Some(pairing) = &self.pairing {
            pairing.judge(record);
            return None;
        }
        let against = self.against.as_ref()?;
        let judgement = against.judge(record)?;
        crate::outcome::settle(record, Some(&judgement));
        let failure = (record.status.is_failure() && record.checks != Status::Failed)
            .then(|| against.explain(record, &judgement));
        self.judged
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(record.name.clone(), judgement);
        failure
    }

    /// Runs the trial's rounds ([`rounds`]), then the trial again (fresh workers, own folder) for
    /// as long as it looks slower than its baseline and confirmations are left: a slow run that
    /// does not repeat is noise. The trial's time is its rounds' windows and its confirmations.
    fn execute_and_confirm(&self, spec: TrialSpec) -> TrialRecord {
        let Some((rounds, windows)) = self.run_rounds(&spec) else {
            return self.execute_catching_panics(spec, &self.launcher, None);
        };
        let started = std::time::Instant::now();
        let mut record = crate::launch::rounds::join(&spec, rounds);
        if unavailable(&spec, &self.host).is_none() {
            record.wall_seconds = Some(windows.as_secs_f64());
            record.measured_seconds = record.wall_seconds;
        }
        let Some(against) = &self.against else {
            return record;
        };
        let needs = gds_model::record::Needs::of(&spec);
        while against.wants_confirmation(&record, self.confirm) {
            // The next trial's worker waits until the confirmations are done: stopped, its
            // start-up hid none of this run's exit after all.
            if self.stop_held()
                && let Some(worker) = record.worker.as_mut()
            {
                worker.exit_beside_next_seconds = None;
            }
            let n = record.confirmations.len() + 1;
            crate::interrupt::sleep(self.confirm_delay);
            let check = self
                .settler
                .as_ref()
                .and_then(|settler| control::settle(settler, needs));
            if crate::interrupt::received().is_some() {
                record.runner_checks.extend(check);
                break;
            }
            let launcher = Launcher {
                trials_dir: self.launcher.trials_dir.join(format!("confirmation-{n}")),
                ..self.launcher.clone()
            };
            // The host is read over the confirmation run too: another job may start the moment
            // the wait for the runner ends.
            let window = check
                .as_ref()
                .and_then(|_| control::start_window(self.data.data_dir()));
            let repeat = self.confirmation_run(&spec, &launcher);
            if let (Some(settler), Some(mut check)) = (&self.settler, check) {
                control::end_window(settler, &mut check, window, spec.nthreads);
                record.runner_checks.push(check);
            }
            match repeat.measurement {
                Some(measurement) if repeat.checks == Status::Passed => {
                    record.confirmations.push(measurement);
                }
                // A repeat that fails its own checks is a failure like any other, never noise.
                _ => {
                    let reason = format!(
                        "confirmation run {n} did not pass: {}",
                        repeat.reason.as_deref().unwrap_or("no reason given")
                    );
                    record.fail(reason, repeat.details.unwrap_or_default());
                    break;
                }
            }
        }
        if let Some(wall) = record.wall_seconds.as_mut() {
            *wall += started.elapsed().as_secs_f64();
        }
        record
    }

    /// A panic in the gate fails that trial with a record, instead of leaving a hole in the reports.
    /// A job of the schedule (`job`: its place) may start the next job's worker as it answers
    /// ([`ahead`]); a confirmation run may not, as another confirmation may follow.
    fn execute_catching_panics(
        &self,
        spec: TrialSpec,
        launcher: &Launcher,
        job: Option<usize>,
    ) -> TrialRecord {
        let copy = spec.clone();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.execute(spec, launcher, job)
        }))
        .unwrap_or_else(|panic| {
            let message = gds_model::panic_message(panic.as_ref());
            let details =
                "  next: this is a bug in gds-gate; please report it with report.json".to_string();
            TrialRecord::failed(copy, format!("the gate panicked: {message}"), details, None)
        })
    }

    fn execute(&self, spec: TrialSpec, launcher: &Launcher, job: Option<usize>) -> TrialRecord {
        if let Some(signal) = crate::interrupt::received() {
            return crate::interrupt::not_run(spec, signal);
        }
        match unavailable(&spec, &self.host) {
            None => match self.data.files_for(&spec) {
                Ok(files) => self.read(spec, files, launcher, job),
                Err(error) => {
                    let details = format!(
                        "{}\n  next: fix the data problem above and run again",
                        crate::assess::where_(&spec)
                    );
                    TrialRecord::failed(
                        spec,
                        format!("test data unavailable: {}", gds_model::error_chain(&error)),
                        details,
                        None,
                    )
                }
            },
            Some(reason) if self.require_gpu && spec.reader.uses_gpu() => {
                let details = format!(
                    "  the run was started with --require-gpu, and reader `{}` needs a GPU\n  next: run on a host with the NVIDIA driver and GDS installed (check it with `cargo xtask doctor`), or drop --require-gpu",
                    spec.reader.name()
                );
                TrialRecord::failed(
                    spec,
                    format!("GPU trial could not run: {reason}"),
                    details,
                    None,
                )
            }
            Some(reason) => TrialRecord::ignored(spec, reason),
        }
    }
}

impl Executor {
    /// Reads the prepared `files` as the trial says, in one worker or one per GPU.
    fn read(
        &self,
        spec: TrialSpec,
        files: Vec<PlannedFile>,
        launcher: &Launcher,
        job: Option<usize>,
    ) -> TrialRecord {
        let plan = match checked_plan(&spec, files) {
            Ok(plan) => plan,
            Err(problem) => {
                let details = format!(
                    "{}\n  next: change the scenario as the reason says",
                    crate::assess::where_(&spec)
                );
                return TrialRecord::failed(spec, format!("read plan: {problem}"), details, None);
            }
        };
        // A writing trial's files stay for the next run, which blanks them in place before each
        // pass: removing 1 GiB costs as much as writing it on a `discard` mount (a TRIM).
        let paths: Vec<_> = plan.files.iter().map(|file| file.path.clone()).collect();
        let record = match spec.gpus.clone() {
            Some(set) => {
                self.stop_held();
                self.execute_on_gpus(spec, plan, &set, launcher)
            }
            None => {
                let bytes = plan.total_bytes();
                let on_answer = &mut || self.start_next_after(job?, bytes);
                match job.and_then(|at| self.take_held(at)) {
                    Some(held) => launcher.run_held(held, on_answer),
                    None => launcher.run_trial_then(spec, plan, on_answer),
                }
            }
        };
        leave_uncached(&paths);
        record
    }

    /// A trial over several GPUs (`gpus:`): `all` becomes this host's GPUs (one GPU runs as one
    /// shard); none found is a trial ignored with the reason, or failed under --require-gpu.
    fn execute_on_gpus(
        &self,
        spec: TrialSpec,
        plan: ReadPlan,
        set: &GpuSet,
        launcher: &Launcher,
    ) -> TrialRecord {
        use crate::launch::multi::{Resolved, host_gpu_count, resolve};
        match resolve(set, host_gpu_count()) {
            Resolved::Gpus(gpus) => launcher.run_multi(spec, plan, &gpus),
            Resolved::NoGpu(reason) if self.require_gpu => {
                let details = format!(
                    "{}\n  the run was started with --require-gpu\n  next: run on a host whose GPUs CUDA can see (check CUDA_VISIBLE_DEVICES and `nvidia-smi`)",
                    crate::assess::where_(&spec)
                );
                TrialRecord::failed(
                    spec,
                    format!("GPU trial could not run: {reason}"),
                    details,
                    None,
                )
            }
            Resolved::NoGpu(reason) => TrialRecord::ignored(spec, reason),
            Resolved::Invalid(reason) => {
                let details = format!(
                    "{}\n  next: list GPUs this host has in `gpus:`, or write `gpus: all`",
                    crate::assess::where_(&spec)
                );
                TrialRecord::failed(spec, reason, details, None)
            }
        }
    }
}

/// The trial's read plan, once its files are known: a user's own file is measured only then, and
/// its plan is checked before it is built.
fn checked_plan(
    spec: &TrialSpec,
    files: Vec<PlannedFile>,
) -> Result<ReadPlan, scenario::limits::PlanTooLarge> {
    let sizes: Vec<u64> = files.iter().map(|file| file.size).collect();
    scenario::limits::check_plan(&sizes, 1, &spec.pattern, spec.task_size)?;
    Ok(ReadPlan::new(files, &spec.pattern))
}

/// Why a trial cannot run on this host or build, if it cannot.
fn unavailable(spec: &TrialSpec, host: &HostFacts) -> Option<String> {
    match spec.reader {
        Reader::Posix => None,
        _ if host.gpu_unavailable.is_some() => host.gpu_unavailable.clone(),
        // KvikIO too: it needs libcuda.so.1 even for host reads.
        Reader::H2d
        | Reader::Cufile
        | Reader::CufileBatch
        | Reader::CufileAsync
        | Reader::Kvikio
        | Reader::Torch => None,
    }
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

/// Plain sentences for what did not run, grouped by reason, so a green run on a host without a GPU
/// never reads as a tested GPU path. When no GPU trial ran, one sentence says so with the
/// reasons, instead of one per reason.
fn notes(trials: &[TrialRecord], require_gpu: bool) -> Vec<String> {
    // Per reason: the trials that did not run, and how many of them were GPU trials.
    let mut by_reason: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for trial in trials
        .iter()
        .filter(|trial| trial.checks == Status::Ignored)
    {
        let entry = by_reason
            .entry(trial.reason.as_deref().unwrap_or("no reason given"))
            .or_default();
        entry.0 += 1;
        entry.1 += usize::from(trial.spec.reader.uses_gpu());
    }
    let ran_gpu = trials
        .iter()
        .any(|trial| trial.spec.reader.uses_gpu() && trial.checks != Status::Ignored);
    let skipped_gpu = by_reason.values().any(|(_, gpu)| *gpu > 0);
    let no_gpu_part = skipped_gpu && !ran_gpu && !require_gpu;
    let mut notes: Vec<String> = by_reason
        .iter()
        .filter(|(_, (count, gpu))| !(no_gpu_part && gpu == count))
        .map(|(reason, (count, gpu))| {
            // "GPU trial(s)" only when every trial of the group is one (an interrupt stops
            // posix trials too).
            let what = if gpu == count {
                "GPU trial(s)"
            } else {
                "trial(s)"
            };
            format!("{count} {what} did not run: {reason}")
        })
        .collect();
    if no_gpu_part {
        let reasons: Vec<&str> = by_reason
            .iter()
            .filter(|(_, (_, gpu))| *gpu > 0)
            .map(|(reason, _)| *reason)
            .collect();
        notes.push(format!(
            "the GPU part of the gate did not run ({}): this result covers the CPU (posix) trials only; pass --require-gpu to make that a failure",
            reasons.join("; ")
        ));
    }
    notes
}

/// A filter that selects nothing is most often a typo, of a trial or of a subcommand
/// (`gds-gate valdate` is the filter `valdate`): the error says which, and the run ends before it
/// writes anything. A word near a subcommand is a usage error; otherwise nothing ran.
fn nothing_selected(args: &RunArgs, trials: usize) -> Error {
    let Some(filter) = args.libtest.filter.as_deref().map(terminal) else {
        return Error::NothingSelected(format!(
            "none of the {trials} trials is selected (--skip, --exact or --ignored left none); `--list` shows their names; the reports of the last run are left as they were"
        ));
    };
    let subcommands = crate::cli::subcommand_names();
    let names: Vec<&str> = subcommands.iter().map(String::as_str).collect();
    if let Some(command) = gds_model::suggest::nearest(&filter, &names) {
        return Error::Usage(format!(
            "`{filter}` is not a subcommand, and as a trial filter it matches none of the {trials} trials\n  help: did you mean `gds-gate {command}`?"
        ));
    }
    Error::NothingSelected(format!(
        "the filter `{filter}` matches none of the {trials} trials; `--list` shows their names; the reports of the last run are left as they were"
    ))
}

fn first_duplicate_name(specs: &[TrialSpec]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    specs
        .iter()
        .map(|spec| spec.name.as_str())
        .find(|name| !seen.insert(*name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::fixtures;

    fn ignored(name: &str, reader: Reader, reason: &str) -> TrialRecord {
        let mut spec = fixtures::spec(name);
        spec.reader = reader;
        TrialRecord::ignored(spec, reason.into())
    }

    #[test]
    fn trials_stopped_by_an_interrupt_are_not_all_called_gpu_trials() {
        let stopped = "not run: the gate was interrupted by SIGINT";
        let trials = [
            ignored("s::posix", Reader::Posix, stopped),
            ignored("s::cufile", Reader::Cufile, stopped),
            ignored("s::kvikio", Reader::Kvikio, "no NVIDIA driver"),
        ];
        let notes = notes(&trials, false);
        assert!(
            notes.contains(&format!("2 trial(s) did not run: {stopped}")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n
                .starts_with("the GPU part of the gate did not run (no NVIDIA driver; not run")),
            "{notes:?}"
        );
        assert!(
            !notes.iter().any(|n| n.contains("GPU trial(s)")),
            "{notes:?}"
        );
    }
}
