//! One gate run: load suites, expand trials, prepare data, run the trials through libtest-mimic,
//! write reports, and turn the outcome into an exit code. [`run_trials`] composes the stages, each
//! a module with its own input and output: [`select`] (the trials), [`setup`] (doctor, budget,
//! data, control, executor), [`trials`] (libtest, each trial judged as it ran) and [`assemble`]
//! (the report).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use libtest_mimic::{FormatSetting, Trial};

use crate::baseline::Judgement;
use crate::cause::Cause;
use crate::cli::RunArgs;
use crate::error::Error;
use crate::exit;
use crate::host::HostFacts;
use crate::launch::Launcher;
use crate::launch::multi::Part;
use crate::prepare::DataSet;
use crate::report::Report;
use gds_model::plan::{PlannedFile, ReadPlan};
use gds_model::record::{Status, TrialRecord};
use gds_model::scenario::{self, GpuSet, Suite, TrialSpec};

mod ahead;
mod assemble;
pub(crate) mod baseline;
mod control;
pub(crate) mod limits;
pub(crate) mod rehearsal;
mod rounds;
mod select;
mod setup;
mod trials;

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
    let started = assemble::Started::now();
    let mut libtest = args.libtest.clone();
    // Listing prints to stdout as asked, and writes nothing to --out.
    if let Some(quiet) = quiet.filter(|_| !libtest.list) {
        libtest.logfile = Some(quiet.libtest_log.display().to_string());
    }
    // Throughput trials share the machine's storage and memory bandwidth: one at a time.
    libtest.test_threads = Some(1);
    let Some(mut selection) = select::select(args, &libtest, rehearsal)? else {
        return Ok(None);
    };
    let pairing = selection.pairing.take();
    let setup = setup::set_up(args, &selection, pairing, against, quiet, rehearsal)?;
    let summaries = (quiet.is_none()
        && !libtest.quiet
        && matches!(libtest.format, None | Some(FormatSetting::Pretty)))
    .then_some(args.rate);
    let ran = trials::run(&libtest, &selection, &setup, against, summaries);
    let output = assemble::output(args, command, &started, &selection, setup, ran);
    if quiet.is_none() {
        assemble::say(&args.console, &output.report);
    }
    Ok(Some(output))
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
    /// Where the run's lines go.
    console: crate::console::Console,
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
    /// The smallest GPU's memory, when a GPU trial's worker may start during the previous one
    /// ([`ahead`]): every GPU lets two processes hold a CUDA context at once, and the run is not
    /// `--one-worker-at-a-time`.
    ahead_room: Option<u64>,
    /// The next trial's worker, started ahead ([`ahead`]).
    ahead: Mutex<Option<ahead::Ahead>>,
    /// A rehearsal's stacks and the pairs judged so far; `None` in a run or a bless.
    pairing: Option<rehearsal::Pairing>,
    /// The run's live view: which trial runs, how far it is, what it waits for.
    progress: Arc<crate::progress::View>,
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
                .and_then(|settler| control::settle(&self.console, settler, needs, &self.progress));
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
            Cause::Panicked(gds_model::panic_message(panic.as_ref()).to_string()).fail(copy)
        })
    }

    fn execute(&self, spec: TrialSpec, launcher: &Launcher, job: Option<usize>) -> TrialRecord {
        if let Some(signal) = crate::interrupt::received() {
            return crate::interrupt::not_run(spec, signal);
        }
        match unavailable(&spec, &self.host) {
            None => match self.files_of(&spec) {
                Ok((files, written)) => self.read(spec, files, &written, launcher, job),
                Err(error) => Cause::NoData(gds_model::error_chain(&error)).fail(spec),
            },
            Some(reason) if self.require_gpu && spec.uses_gpu() => {
                Cause::GpuRequired(reason).fail(spec)
            }
            Some(reason) => TrialRecord::ignored(spec, reason),
        }
    }
}

impl Executor {
    /// The trial's files, and their written copies where some of its ranks write.
    fn files_of(
        &self,
        spec: &TrialSpec,
    ) -> Result<(Vec<PlannedFile>, Vec<PlannedFile>), crate::prepare::PrepareError> {
        let files = self.data.files_for(spec)?;
        let written = match spec.writers {
            0 => Vec::new(),
            _ => self.data.written_for(spec)?,
        };
        Ok((files, written))
    }

    /// Reads the prepared `files` as the trial says, in one worker, one per GPU or one per rank
    /// (whose writing ranks write and read back `written`).
    fn read(
        &self,
        spec: TrialSpec,
        files: Vec<PlannedFile>,
        written: &[PlannedFile],
        launcher: &Launcher,
        job: Option<usize>,
    ) -> TrialRecord {
        let plan = match checked_plan(&spec, files) {
            Ok(plan) => plan,
            Err(problem) => return Cause::Plan(problem.to_string()).fail(spec),
        };
        // A writing trial's files stay for the next run, which blanks them in place before each
        // pass: removing 1 GiB costs as much as writing it on a `discard` mount (a TRIM).
        let paths: Vec<_> = plan.files.iter().map(|file| file.path.clone()).collect();
        let record = match spec.gpus.clone() {
            Some(set) => {
                self.stop_held();
                self.execute_on_gpus(spec, plan, &set, launcher)
            }
            None if !spec.ranks.is_empty() => {
                self.stop_held();
                let parts = Part::per_rank(&spec);
                launcher.run_multi(spec, plan, &parts, written)
            }
            None => {
                let bytes = plan.total_bytes();
                let ahead = &mut |moment| self.start_next_after(job?, bytes, moment);
                match job.and_then(|at| self.take_held(at)) {
                    Some((held, begins)) => launcher.run_held(held, begins, ahead),
                    None => launcher.run_trial_then(spec, plan, ahead),
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
            Resolved::Gpus(gpus) => {
                let parts = Part::per_gpu(&spec, &gpus);
                launcher.run_multi(spec, plan, &parts, &[])
            }
            Resolved::NoGpu(reason) if self.require_gpu => Cause::NoGpus(reason).fail(spec),
            Resolved::NoGpu(reason) => TrialRecord::ignored(spec, reason),
            Resolved::Invalid(reason) => Cause::UnknownGpus(reason).fail(spec),
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
    // KvikIO too: it needs libcuda.so.1 even for host reads.
    spec.uses_gpu()
        .then(|| host.gpu_unavailable.clone())
        .flatten()
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
        entry.1 += usize::from(trial.spec.uses_gpu());
    }
    let ran_gpu = trials
        .iter()
        .any(|trial| trial.spec.uses_gpu() && trial.checks != Status::Ignored);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::fixtures;
    use gds_model::scenario::Reader;

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
