//! Launching and watching workers. One trial = one fresh worker process: cuFile reads its config
//! once per process and KvikIO its environment, and a crash or hang in the stack under test must
//! fail one trial, not the gate. The orchestrator writes the spec, starts the worker (`gds-gate
//! worker` for the Rust readers, the shipped Python worker for KvikIO) with the trial's
//! environment and `cufile.json`, enforces the timeout, and turns whatever happened into a
//! [`TrialRecord`], whose path [`crate::assess`] then judges. Probes and the GPU bench run in
//! workers too ([`crate::job`]).

mod ahead;
pub mod multi;
pub mod rounds;
mod sampling;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{self, Job};
use gds_model::conformance;
use gds_model::plan::ReadPlan;
use gds_model::protocol::{PROTOCOL_VERSION, WorkerFailure, WorkerResult, WorkerSpec};
use gds_model::record::{TrialRecord, WorkerRun};
use gds_model::scenario::{Reader, TrialSpec};
use gds_runner::hang;

/// Lines of the worker's stderr shown with a failure.
const TAIL_LINES: usize = 15;

/// The Python worker, shipped inside the gate and written into each KvikIO or PyTorch trial's
/// folder.
pub const KVIKIO_WORKER: &str = include_str!("../../../worker/kvikio_worker.py");
/// The Python worker's pass loops, a module it imports from beside it.
pub const PASSES: &str = include_str!("../../../worker/passes.py");
/// The Python worker's `torch` reader, a module it imports from beside it.
pub const TORCH_READER: &str = include_str!("../../../worker/torch_reader.py");
/// The verification kernels, written beside the Python worker, which compiles them with cupy:
/// the Rust worker's own source (gds-worker's `gpu/kernels.cu`), so both verify with one.
pub const KERNELS: &str = include_str!("../../../worker/src/gpu/kernels.cu");
/// The Python worker's native half (harness/pyworker), the file cargo builds with the gate: beside
/// the gate, or in the `deps/` folder of the gate's cargo build.
const EXTENSION: &str = "libgds_pass.so";
/// The name the Python worker imports it by, from its trial folder.
const EXTENSION_MODULE: &str = "gds_pass.abi3.so";

/// What the orchestrator needs to start workers.
#[derive(Clone)]
pub struct Launcher {
    /// The gate binary (its hidden `worker` subcommand).
    pub gate: PathBuf,
    /// Trial folders go under `<reports dir>/trials/`.
    pub trials_dir: PathBuf,
    /// A crash after a complete result fails the trial instead of warning.
    pub strict: bool,
    /// Overrides the per-trial timeout derived from the bytes a trial moves.
    pub timeout: Option<Duration>,
    /// The `gds_stats` tool, when the host has one ([`find_gds_stats`]).
    pub gds_stats: Option<PathBuf>,
    /// Variables every worker gets besides the trial's own; the benches set
    /// `GDS_GATE_LIBCUFILE` and `GDS_GATE_RECORD_COST` here, a rehearsal its stack's, a gate run
    /// none.
    pub env: Vec<(String, String)>,
    /// The run's live view, which a waiting worker's progress file feeds; none outside a run.
    pub progress: Option<std::sync::Arc<crate::progress::View>>,
}

use crate::cause::Cause;
pub use ahead::{Held, Moment};
pub use sampling::find_tool as find_gds_stats;

/// A worker that ran: what it was asked, how it ended, its answer (or why there is none), and
/// nvidia-fs's counters from before it started.
/// Why a worker left no usable answer.
#[derive(Debug, thiserror::Error)]
enum NoResult {
    #[error("no result")]
    Missing,
    #[error("the worker's answer is not a valid result: {0}")]
    Invalid(serde_json::Error),
}

struct Ran {
    asked: WorkerSpec,
    finished: process::Finished,
    result: Result<WorkerResult, NoResult>,
    nvfs_before: Option<String>,
    /// When the next trial's worker was started, as this one ran or answered ([`ahead`]).
    next_started_unix_ns: Option<u64>,
    /// What the worker left when it hung: collected before it was killed at its timeout.
    hang: Option<std::io::Result<hang::Bundle>>,
}

/// A worker set up in its folder and started, not yet watched.
struct Started {
    asked: WorkerSpec,
    running: process::Running,
    program: PathBuf,
    sampler: Option<sampling::Sampler>,
    progress_path: PathBuf,
    view: Option<std::sync::Arc<crate::progress::View>>,
    result_path: PathBuf,
    nvfs_before: Option<String>,
    /// How to collect a hang bundle, should the worker reach its timeout.
    hang: HangWatch,
}

/// What a hang bundle is collected with ([`hang::Collect`], less the pid).
struct HangWatch {
    trial_dir: PathBuf,
    python: bool,
    gds_stats: Option<PathBuf>,
}

enum StartError {
    /// The worker's program does not exist (no python).
    Missing(String),
    Setup(String),
}

impl Launcher {
    pub fn run_trial(&self, spec: TrialSpec, plan: ReadPlan) -> TrialRecord {
        self.run_trial_then(spec, plan, &mut |_| None)
    }

    /// [`Launcher::run_trial`], calling `ahead` once as the worker runs and once as its answer
    /// appears ([`Moment`]): either may start the next trial's worker
    /// ([`Launcher::start_ahead`]); each says when it was started, if it was.
    pub fn run_trial_then(
        &self,
        spec: TrialSpec,
        plan: ReadPlan,
        ahead: &mut dyn FnMut(Moment) -> Option<u64>,
    ) -> TrialRecord {
        let (dir, timeout) = self.folder_and_timeout(&spec, &plan);
        self.run_trial_in(spec, plan, &dir, timeout, ahead)
    }

    fn folder_and_timeout(&self, spec: &TrialSpec, plan: &ReadPlan) -> (PathBuf, Duration) {
        let dir = self.trials_dir.join(slug(&spec.name));
        let timeout = self.timeout.unwrap_or_else(|| timeout_for(spec, plan));
        (dir, timeout)
    }

    /// One worker reading `plan` in `dir`, killed after `timeout`: a whole trial, or one GPU's
    /// share of a trial over several GPUs ([`multi`]).
    fn run_trial_in(
        &self,
        spec: TrialSpec,
        plan: ReadPlan,
        dir: &Path,
        timeout: Duration,
        ahead: &mut dyn FnMut(Moment) -> Option<u64>,
    ) -> TrialRecord {
        let started = self.start(&spec, plan, dir, timeout, false);
        self.conclude(spec, dir, started, ahead)
    }

    /// Watches a started worker to its end, calling `ahead` as it runs and as its answer
    /// appears, and turns what happened into the trial's record.
    fn conclude(
        &self,
        spec: TrialSpec,
        dir: &Path,
        started: Result<Started, StartError>,
        ahead: &mut dyn FnMut(Moment) -> Option<u64>,
    ) -> TrialRecord {
        match started.and_then(|started| Self::finish(started, ahead)) {
            Ok(ran) => self.assess(spec, dir, ran),
            Err(StartError::Missing(what)) if spec.reader.python() => {
                let needs = match spec.reader {
                    Reader::Torch => "torch and cupy",
                    _ => "kvikio and cupy",
                };
                let hint = format!(
                    "install Python 3, or point GDS_GATE_PYTHON (or the suite's `python:`) at an interpreter with {needs}"
                );
                self.missing(spec, format!("{what}: {hint}"))
            }
            Err(StartError::Missing(reason) | StartError::Setup(reason)) => {
                Cause::NotStarted(reason).fail(spec)
            }
        }
    }

    /// Sets up the trial's folder and starts its worker; one started `held` waits before its
    /// first pass's preparation for [`Launcher::run_held`].
    fn start(
        &self,
        spec: &TrialSpec,
        plan: ReadPlan,
        dir: &Path,
        timeout: Duration,
        held: bool,
    ) -> Result<Started, StartError> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|error| {
            StartError::Setup(format!(
                "cannot create the trial folder `{}`: {error}",
                dir.display()
            ))
        })?;
        let write = |name: &str, contents: &str| {
            let path = dir.join(name);
            std::fs::write(&path, contents)
                .map(|()| path.clone())
                .map_err(|error| {
                    StartError::Setup(format!("cannot write `{}`: {error}", path.display()))
                })
        };
        let mut env = self.env.clone();
        if spec.reader.uses_cufile() {
            // The trial's file is the overlay's and is named last: a stack's own file (a
            // rehearsal's `CUFILE_ENV_PATH_JSON`) is its base.
            let base = self
                .env
                .iter()
                .rfind(|(key, value)| key == "CUFILE_ENV_PATH_JSON" && !value.is_empty())
                .map(|(_, value)| Path::new(value));
            let config = gds_model::cufile_config::write_for_trial(base, &spec.cufile, dir)
                .map_err(|error| StartError::Setup(gds_model::error_chain(&error)))?;
            env.push((
                "CUFILE_ENV_PATH_JSON".to_string(),
                config.display().to_string(),
            ));
        }
        let result_path = dir.join("result.json");
        // The worker reports each pass here; the run's live view shows it (crate::progress).
        let progress_path = dir.join("progress");
        env.push((
            gds_model::progress::ENV.to_string(),
            progress_path.display().to_string(),
        ));
        let (program, mut args): (PathBuf, Vec<OsString>) = if spec.reader.python() {
            if spec.reader == Reader::Kvikio {
                env.extend(kvikio_env(spec));
            }
            let script = write("kvikio_worker.py", KVIKIO_WORKER)?;
            write("passes.py", PASSES)?;
            write("torch_reader.py", TORCH_READER)?;
            write("kernels.cu", KERNELS)?;
            link_extension(&self.gate, dir)?;
            (python(spec).into(), vec![script.into()])
        } else {
            (self.gate.clone(), vec!["worker".into()])
        };
        args.extend([
            "--spec".into(),
            dir.join("spec.json").into(),
            "--result".into(),
            result_path.clone().into(),
        ]);
        // Stamped last, so that preparing the folder is not counted as the worker's start-up.
        let mut worker_spec = WorkerSpec::new(spec.clone(), plan);
        let sampler = self
            .gds_stats
            .clone()
            .filter(|_| spec.reader.uses_cufile())
            .map(|tool| sampling::Sampler::new(tool, dir));
        if sampler.is_some() {
            worker_spec.hold_for_sampling = Some(dir.to_path_buf());
        }
        if held {
            // A `released` left from an earlier run (its folder could not be removed) would
            // let the worker go before the previous one is gone.
            let released = dir.join(gds_model::protocol::RELEASED);
            let _ = std::fs::remove_file(&released);
            if released.exists() {
                return Err(StartError::Setup(format!(
                    "cannot remove `{}` left by an earlier run",
                    released.display()
                )));
            }
            worker_spec.hold_for_release = Some(dir.to_path_buf());
        }
        write(
            "spec.json",
            &serde_json::to_string_pretty(&worker_spec).unwrap_or_default(),
        )?;
        let job = Job {
            program: program.clone(),
            args,
            env,
            dir: dir.to_path_buf(),
            timeout,
        };
        let nvfs_before = crate::assess::nvfs_snapshot();
        let running = process::spawn(&job).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => {
                StartError::Missing(format!("`{}` not found", program.display()))
            }
            _ => StartError::Setup(format!(
                "cannot start the worker `{}`: {error}",
                program.display()
            )),
        })?;
        Ok(Started {
            asked: worker_spec,
            running,
            program,
            sampler,
            progress_path,
            view: self.progress.clone(),
            result_path,
            nvfs_before,
            hang: HangWatch {
                trial_dir: dir.to_path_buf(),
                python: spec.reader.python(),
                gds_stats: self.gds_stats.clone(),
            },
        })
    }

    /// Watches the worker to its end and reads its answer.
    fn finish(
        started: Started,
        ahead: &mut dyn FnMut(Moment) -> Option<u64>,
    ) -> Result<Ran, StartError> {
        let Started {
            asked,
            running,
            program,
            mut sampler,
            progress_path,
            view,
            result_path,
            nvfs_before,
            hang: watch,
        } = started;
        let mut next_started_unix_ns = None;
        let (mut told_running, mut answered) = (false, false);
        let mut hang = None;
        let finished = running.watch(|pid, time_left| {
            if time_left.is_zero() && hang.is_none() {
                // The timeout is reached: the evidence first, while the worker is still stuck.
                hang = Some(hang::collect(&hang::Collect {
                    pid,
                    trial_dir: &watch.trial_dir,
                    python: watch.python,
                    gds_stats: watch.gds_stats.as_deref(),
                }));
                return;
            }
            if let Some(sampler) = sampler.as_mut() {
                sampler.poll(pid, time_left);
            }
            if let Some(view) = &view {
                view.poll(&progress_path);
            }
            if !told_running {
                told_running = true;
                next_started_unix_ns = ahead(Moment::Running);
            }
            // The answer is written whole (renamed into place): the worker's I/O is over.
            if !answered && result_path.exists() {
                answered = true;
                next_started_unix_ns = ahead(Moment::Answered);
            }
        });
        let finished = finished.map_err(|error| {
            StartError::Setup(format!(
                "lost track of the worker `{}`: {error}",
                program.display()
            ))
        })?;
        let result = match std::fs::read_to_string(&result_path) {
            Err(_) => Err(NoResult::Missing),
            Ok(text) => serde_json::from_str::<WorkerResult>(&text).map_err(NoResult::Invalid),
        };
        Ok(Ran {
            asked,
            finished,
            result,
            nvfs_before,
            next_started_unix_ns,
            hang,
        })
    }

    /// A missing piece of the KvikIO stack, or an entry point the host's libcufile lacks: ignored
    /// with how to get it, or, for KvikIO, a failure when the suite requires KvikIO.
    fn missing(&self, spec: TrialSpec, reason: String) -> TrialRecord {
        if spec.require_kvikio && spec.reader == Reader::Kvikio {
            Cause::KvikioRequired(reason).fail(spec)
        } else {
            TrialRecord::ignored(spec, reason)
        }
    }

    /// Every way a worker can end, turned into one record.
    fn assess(&self, spec: TrialSpec, dir: &Path, ran: Ran) -> TrialRecord {
        let Ran {
            asked,
            finished,
            result,
            nvfs_before,
            next_started_unix_ns,
            hang,
        } = ran;
        let tail = finished.tail(TAIL_LINES);
        let shown_tail = if tail.trim().is_empty() {
            String::new()
        } else {
            format!("\n  last lines of the worker's output:\n{}", indent(&tail))
        };
        let answered = result
            .as_ref()
            .ok()
            .and_then(|r| r.measurement.as_ref()?.answered_unix_ns);
        let run = WorkerRun {
            dir: dir.to_path_buf(),
            ending: finished.ending.clone(),
            seconds: finished.elapsed.as_secs_f64(),
            after_answer_seconds: answered
                .map(|answered| finished.ended_unix_ns.saturating_sub(answered) as f64 / 1e9),
            exit_beside_next_seconds: next_started_unix_ns.map(|next| {
                let from = answered.map_or(next, |answered| answered.max(next));
                finished.ended_unix_ns.saturating_sub(from) as f64 / 1e9
            }),
        };
        let result = result.map(|mut result| {
            if let (Some(m), Some(raw)) = (result.measurement.as_mut(), result.raw_cufile.take()) {
                crate::assess::raw_cufile::cufile_evidence(raw, &spec, m);
            }
            // Only a complete answer to the spec can pass: anything less is the worker's failure.
            if let (Some(m), None) = (&result.measurement, &result.failure)
                && let Err(problem) = conformance::check(&asked, m) {
                    result.failure = Some(WorkerFailure {
                        reason: format!("the worker's result is incomplete: {problem}"),
                        next: format!("the worker did not do what its spec asked and did not say why: a bug in it, or a worker of another gate version; its spec and result are in `{}`", dir.display()),
                        missing: None,
                    });
                }
            result
        });
        let mut record = match result {
            Ok(result) if result.protocol != PROTOCOL_VERSION => {
                Cause::Protocol(result.protocol).fail(spec.clone())
            }
            Ok(WorkerResult {
                failure:
                    Some(WorkerFailure {
                        missing: Some(_),
                        reason,
                        next,
                    }),
                ..
            }) => {
                return self.missing(spec, format!("{reason}; {next}"));
            }
            Ok(WorkerResult {
                measurement,
                failure: Some(failure),
                ..
            }) => Cause::WorkerFailed {
                reason: failure.reason,
                next: failure.next,
                tail: shown_tail,
            }
            .fail_with(spec.clone(), measurement),
            Ok(WorkerResult {
                measurement: Some(measurement),
                failure: None,
                ..
            }) => {
                let mut record = TrialRecord::passed(spec.clone(), measurement);
                if !finished.ending.is_clean() {
                    // Seen on real hardware: KvikIO with cuda.bindings loaded segfaults at
                    // interpreter exit, after a complete result.
                    let warning = format!(
                        "the worker {} after writing a complete result",
                        finished.ending
                    );
                    if self.strict {
                        record = Cause::TeardownCrash {
                            warning,
                            tail: shown_tail,
                        }
                        .fail_with(spec.clone(), record.measurement);
                    } else {
                        record.warnings.push(warning);
                    }
                }
                record
            }
            Ok(WorkerResult {
                measurement: None,
                failure: None,
                ..
            }) => Cause::EmptyAnswer { tail: shown_tail }.fail(spec.clone()),
            Err(problem) => {
                // Where it hung: the call the worker's watchdog named, else the system calls its
                // threads were in when the gate gave up on it.
                let hung_in = gds_model::stuck::first_call(&tail)
                    .map(str::to_string)
                    .or_else(|| hang.as_ref()?.as_ref().ok()?.blocked_in.clone());
                let bundle = match &hang {
                    Some(Ok(bundle)) => format!(
                        "\n  hang bundle (every thread's stack, cuFile counters, cufile.log, for a bug report): `{}`",
                        bundle.dir.display()
                    ),
                    Some(Err(error)) => format!("\n  no hang bundle: cannot write it: {error}"),
                    None => String::new(),
                };
                Cause::NoAnswer {
                    ending: finished.ending.clone(),
                    invalid: match problem {
                        NoResult::Missing => None,
                        NoResult::Invalid(error) => Some(error.to_string()),
                    },
                    hung_in,
                    folder: dir.to_path_buf(),
                    bundle,
                    tail: shown_tail,
                }
                .fail(spec.clone())
            }
        };
        record.worker = Some(run);
        crate::assess::apply(&mut record, dir, nvfs_before);
        record
    }
}

/// Links the gate's extension module into a Python trial's folder, where its worker imports it.
fn link_extension(gate: &Path, dir: &Path) -> Result<(), StartError> {
    let folder = gate.parent().unwrap_or(Path::new("."));
    let Some(extension) = [folder.join(EXTENSION), folder.join("deps").join(EXTENSION)]
        .into_iter()
        .find(|path| path.is_file())
    else {
        return Err(StartError::Setup(format!(
            "the Python worker's extension `{EXTENSION}` is neither beside the gate `{}` nor in its `deps/`: build the gate with `cargo build -p gds-gate-bin` (which builds it), or copy it beside the gate",
            gate.display()
        )));
    };
    let link = dir.join(EXTENSION_MODULE);
    std::os::unix::fs::symlink(&extension, &link).map_err(|error| {
        StartError::Setup(format!(
            "cannot link `{}` to `{}`: {error}",
            link.display(),
            extension.display()
        ))
    })
}

/// The interpreter the trial's KvikIO worker runs in ([`crate::tools::python`]).
fn python(spec: &TrialSpec) -> String {
    crate::tools::python(Some(&spec.python)).0
}

/// KvikIO reads these once, at import: the trial's settings go in the worker's environment.
fn kvikio_env(spec: &TrialSpec) -> Vec<(String, String)> {
    let mut env = vec![
        ("KVIKIO_NTHREADS".to_string(), spec.nthreads.to_string()),
        ("KVIKIO_TASK_SIZE".to_string(), spec.task_size.to_string()),
        (
            "KVIKIO_GDS_THRESHOLD".to_string(),
            spec.gds_threshold.to_string(),
        ),
        (
            "KVIKIO_BOUNCE_BUFFER_SIZE".to_string(),
            spec.bounce_buffer_size.to_string(),
        ),
    ];
    if let Some(mode) = spec.compat_mode {
        env.push(("KVIKIO_COMPAT_MODE".to_string(), mode.to_string()));
    }
    env
}

/// Generous: a minute to start, plus every pass at 50 MB/s. A hang is caught, a slow disk is not
/// mistaken for one. A writing pass moves its bytes twice (written, then read back to verify).
fn timeout_for(spec: &TrialSpec, plan: &ReadPlan) -> Duration {
    let moves = if spec.op.writes() { 2 } else { 1 };
    let bytes = plan
        .total_bytes()
        .saturating_mul(spec.passes())
        .saturating_mul(moves);
    Duration::from_secs(60 + bytes / 50_000_000)
}

/// Longest slug before its hash suffix: with it, well under the 255 bytes of a folder name.
const SLUG_MAX: usize = 200;

/// A trial name as a folder name: the characters folder names and shells take kept, the others
/// `_`, and then, because two names can come out alike (`t::x[nthreads=1]` and
/// `t::x_nthreads_1_`), a hash of the whole name, so that no trial's folder is another's.
pub(crate) fn slug(name: &str) -> String {
    let mut slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(SLUG_MAX)
        .collect();
    if slug != name {
        let hash = gds_model::verify::checksum_file_bytes(name.as_bytes());
        slug.push_str(&format!("-{:08x}", hash >> 32));
    }
    slug
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use gds_model::plan::PlannedFile;
    use gds_model::record::{Measurement, Status};
    use gds_model::scenario::Pattern;

    /// A stand-in for the gate binary: a shell script that misbehaves as told. `$5` is the result
    /// path (`worker --spec S --result R`).
    fn launcher(dir: &Path, script: &str, strict: bool) -> Launcher {
        let path = dir.join("fake-gate");
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Launcher {
            gate: path,
            trials_dir: dir.join("trials"),
            strict,
            timeout: Some(Duration::from_millis(500)),
            gds_stats: None,
            env: Vec::new(),
            progress: None,
        }
    }

    /// One measured pass of one byte, not verified: what [`valid_result`] answers in full.
    fn trial() -> (TrialSpec, ReadPlan) {
        let suite = gds_model::scenario::parse(
            Path::new("s.yaml"),
            "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    warmup: 0\n    repetitions: 1\n    expect: { integrity: none }\n",
        )
        .unwrap();
        let spec = gds_model::scenario::expand(&suite).remove(0);
        (spec, ReadPlan::new(vec![planned_file()], &Pattern::Whole))
    }

    fn planned_file() -> PlannedFile {
        PlannedFile {
            path: "f".into(),
            size: 1,
            seed: None,
            checksum: 0,
        }
    }

    fn valid_result(dir: &Path) -> PathBuf {
        let measurement = Measurement {
            seconds: vec![1.0],
            gbps: vec![1e-9],
            median_gbps: Some(1e-9),
            path: "host".into(),
            total_seconds: 1.0,
            gpu: Some("stand-in GPU".into()),
            cufile: Some(Default::default()),
            ..Measurement::unmeasured(vec![planned_file()], 1)
        };
        let result = WorkerResult {
            protocol: PROTOCOL_VERSION,
            measurement: Some(measurement),
            failure: None,
            raw_cufile: None,
        };
        let path = dir.join("canned-result.json");
        std::fs::write(&path, serde_json::to_string(&result).unwrap()).unwrap();
        path
    }

    fn run(script: &str, strict: bool) -> TrialRecord {
        let dir = tempfile::tempdir().unwrap();
        let canned = valid_result(dir.path());
        let script = script.replace("CANNED", &canned.display().to_string());
        let (spec, plan) = trial();
        launcher(dir.path(), &script, strict).run_trial(spec, plan)
    }

    /// A worker started as the previous one answers starts up beside that one's exit, and is
    /// released only once it is gone. The stand-in's first worker answers, then takes 0.4 s to
    /// exit; the second, held, checks at its release that the first is gone.
    #[test]
    fn a_worker_started_ahead_starts_beside_the_last_exit_and_runs_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let canned = valid_result(dir.path());
        let root = dir.path().display();
        let script = format!(
            "if grep -q '\"hold_for_release\": \"' \"$3\"; then
               while [ ! -f \"$(dirname \"$5\")/released\" ]; do sleep 0.01; done
               kill -0 $(cat {root}/first.pid) 2>/dev/null && echo alive > {root}/verdict
               cp {c} \"$5\"
             else
               echo $$ > {root}/first.pid; cp {c} \"$5\"; sleep 0.4
             fi",
            c = canned.display()
        );
        let mut launcher = launcher(dir.path(), &script, false);
        launcher.timeout = Some(Duration::from_secs(20));
        let (first, plan) = trial();
        let mut second = first.clone();
        second.name = "s::second".into();
        let mut held = None;
        let record = launcher.run_trial_then(first, plan.clone(), &mut |moment| {
            if moment != Moment::Answered {
                return None;
            }
            let ahead = launcher.start_ahead(second.clone(), plan.clone())?;
            let since = ahead.since_unix_ns;
            held = Some(ahead);
            Some(since)
        });
        assert_eq!(record.checks, Status::Passed, "{record:#?}");
        let beside = record.worker.unwrap().exit_beside_next_seconds.unwrap();
        assert!(
            beside > 0.3,
            "the first exit ran {beside} s beside the next start-up"
        );
        let held = held.expect("the second worker was started ahead");
        assert_eq!(held.name(), "s::second");
        let record = launcher.run_held(held, std::time::Instant::now(), &mut |_| None);
        assert_eq!(record.checks, Status::Passed, "{record:#?}");
        assert!(
            !dir.path().join("verdict").exists(),
            "released before the first was gone"
        );
    }

    #[test]
    fn an_aborting_worker_fails_its_trial_with_the_signal_and_its_last_words() {
        let record = run("echo 'cuFile: driver exploded' >&2; kill -ABRT $$", false);
        assert_eq!(record.checks, Status::Failed);
        assert_eq!(
            record.reason.as_deref(),
            Some("the worker killed by signal 6 (SIGABRT) without a result")
        );
        assert!(record.details.unwrap().contains("cuFile: driver exploded"));
    }

    #[test]
    fn a_hanging_worker_is_killed_and_fails_its_trial() {
        let record = run("sleep 30", false);
        assert_eq!(record.checks, Status::Failed);
        assert!(record.reason.unwrap().contains("did not finish within"));
    }

    #[test]
    fn a_worker_stuck_in_a_library_call_fails_naming_the_call() {
        let stuck = gds_model::stuck::line(
            "cuFileBatchIOSubmit",
            "a batch of 32 entries",
            Duration::from_secs(10),
            Duration::from_secs(10),
        );
        let record = run(&format!("echo '{stuck}' >&2; sleep 30"), false);
        assert_eq!(record.checks, Status::Failed);
        let reason = record.reason.unwrap();
        assert!(reason.contains("did not finish within"), "{reason}");
        assert!(
            reason.starts_with(
                "the worker hung in cuFileBatchIOSubmit (a batch of 32 entries): it did not finish"
            ),
            "{reason}"
        );
    }

    /// A worker that hangs where no watchdog looks leaves a bundle before it is killed, and the
    /// failure names the system call its threads were in and where the bundle is.
    #[test]
    fn a_hung_worker_leaves_a_bundle_naming_its_system_call() {
        let dir = tempfile::tempdir().unwrap();
        let (spec, plan) = trial();
        let record = launcher(dir.path(), "exec sleep 30", false).run_trial(spec, plan);
        let reason = record.reason.unwrap();
        assert!(
            reason.starts_with("the worker hung in ")
                && reason.contains("nanosleep (1 of 1 thread)"),
            "{reason}"
        );
        let details = record.details.unwrap();
        let bundle = details
            .split_once("hang bundle")
            .and_then(|(_, rest)| rest.split('`').nth(1))
            .unwrap_or_else(|| panic!("no bundle named: {details}"));
        let threads = std::fs::read_to_string(Path::new(bundle).join("threads.txt")).unwrap();
        assert!(threads.contains("`sleep`: state S, in "), "{threads}");
    }

    #[test]
    fn garbage_instead_of_a_result_fails_the_trial() {
        let record = run("echo 'not json' > \"$5\"", false);
        assert_eq!(record.checks, Status::Failed);
        assert!(
            record
                .reason
                .unwrap()
                .starts_with("the worker's answer is not a valid result")
        );
        let record = run("exit 0", false);
        assert_eq!(
            record.reason.as_deref(),
            Some("the worker exited without writing its result")
        );
    }

    fn kvikio_trial(python: &str, require: bool) -> TrialRecord {
        python_trial(Reader::Kvikio, python, require)
    }

    fn python_trial(reader: Reader, python: &str, require: bool) -> TrialRecord {
        // This test's binary, in cargo's `deps/` beside the extension (a dev-dependency).
        python_trial_beside(std::env::current_exe().unwrap(), reader, python, require)
    }

    fn python_trial_beside(
        gate: PathBuf,
        reader: Reader,
        python: &str,
        require: bool,
    ) -> TrialRecord {
        let dir = tempfile::tempdir().unwrap();
        let (mut spec, plan) = trial();
        spec.reader = reader;
        spec.python = python.into();
        spec.require_kvikio = require;
        let launcher = Launcher {
            gate,
            trials_dir: dir.path().join("trials"),
            strict: false,
            timeout: Some(Duration::from_secs(60)),
            gds_stats: None,
            progress: None,
            env: Vec::new(),
        };
        launcher.run_trial(spec, plan)
    }

    #[test]
    fn kvikio_trials_without_python_are_ignored_with_the_fix() {
        let record = kvikio_trial("/nonexistent/python3", false);
        assert_eq!(record.checks, Status::Ignored);
        let reason = record.reason.unwrap();
        assert!(
            reason.starts_with("`/nonexistent/python3` not found")
                && reason.contains("GDS_GATE_PYTHON"),
            "{reason}"
        );
        assert_eq!(
            kvikio_trial("/nonexistent/python3", true).checks,
            Status::Failed
        );
    }

    /// A gate copied without its extension fails a Python trial before it starts, saying how to
    /// build it, whatever the host's Python has.
    #[test]
    fn python_trials_of_a_gate_without_its_extension_fail_saying_how_to_build_it() {
        let folder = tempfile::tempdir().unwrap();
        let record = python_trial_beside(
            folder.path().join("gds-gate"),
            Reader::Kvikio,
            "python3",
            false,
        );
        assert_eq!(record.checks, Status::Failed);
        let reason = record.reason.unwrap();
        assert!(
            reason.contains("`libgds_pass.so` is neither beside the gate")
                && reason.contains("cargo build -p gds-gate-bin"),
            "{reason}"
        );
    }

    /// Whether this host's python3 imports `module`.
    fn python_has(module: &str) -> bool {
        std::process::Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|out| out.status.success())
    }

    /// The real Python worker, on a host without kvikio (hosted CI): ignored, naming the module
    /// and how to install it.
    #[test]
    fn kvikio_trials_without_kvikio_are_ignored_with_the_install_command() {
        if python_has("kvikio") {
            eprintln!("skipped: this host has kvikio");
            return;
        }
        let record = kvikio_trial("python3", false);
        assert_eq!(record.checks, Status::Ignored, "{record:?}");
        let reason = record.reason.unwrap();
        assert!(
            reason.contains("kvikio")
                && reason.contains("not found by")
                && reason.contains("pip install kvikio-cu13"),
            "{reason}"
        );
        let record = kvikio_trial("python3", true);
        assert_eq!(record.checks, Status::Failed);
        assert!(record.details.unwrap().contains("require_kvikio"));
    }

    /// The real Python worker, on a host without PyTorch (hosted CI): the `torch` trial is
    /// ignored, naming torch and how to install a CUDA build; `require_kvikio` is about KvikIO.
    #[test]
    fn torch_trials_without_torch_are_ignored_with_the_install_command() {
        if python_has("torch") {
            eprintln!("skipped: this host has torch");
            return;
        }
        for require in [false, true] {
            let record = python_trial(Reader::Torch, "python3", require);
            assert_eq!(record.checks, Status::Ignored, "{record:?}");
            let reason = record.reason.unwrap();
            assert!(
                reason.contains("torch")
                    && reason.contains("not found by")
                    && reason.contains(
                        "pip install torch --index-url https://download.pytorch.org/whl/cu130"
                    ),
                "{reason}"
            );
        }
        let record = python_trial(Reader::Torch, "/nonexistent/python3", false);
        assert_eq!(record.checks, Status::Ignored);
        assert!(record.reason.unwrap().contains("with torch and cupy"));
    }

    /// A libcufile without the batch API: the worker answers that a piece is missing, and the
    /// trial is ignored with the reason, whatever `require_kvikio` says (it is about KvikIO).
    #[test]
    fn a_missing_entry_point_ignores_the_trial_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let result = WorkerResult {
            protocol: PROTOCOL_VERSION,
            measurement: None,
            failure: Some(WorkerFailure {
                reason: "`/lib/libcufile.so.0` (cuFile 1.15) has no `cuFileBatchIOSetUp`".into(),
                next: "use a newer libcufile".into(),
                missing: Some("cuFileBatchIOSetUp".into()),
            }),
            raw_cufile: None,
        };
        let canned = dir.path().join("missing.json");
        std::fs::write(&canned, serde_json::to_string(&result).unwrap()).unwrap();
        let script = format!("cp {} \"$5\"", canned.display());
        let (mut spec, plan) = trial();
        spec.reader = Reader::CufileBatch;
        spec.require_kvikio = true;
        let record = launcher(dir.path(), &script, false).run_trial(spec, plan);
        assert_eq!(record.checks, Status::Ignored, "{record:#?}");
        let reason = record.reason.unwrap();
        assert!(
            reason.contains("has no `cuFileBatchIOSetUp`") && reason.contains("newer libcufile"),
            "{reason}"
        );
    }

    /// A stand-in worker that announces the end of its I/O and waits for the sample, sampled by a
    /// stand-in `gds_stats` running `tool`: the trial's record and the saved gds_stats.txt.
    fn sampled_by(tool: &str, timeout: Duration) -> (TrialRecord, String) {
        let dir = tempfile::tempdir().unwrap();
        let canned = valid_result(dir.path());
        let stand_in = dir.path().join("gds_stats");
        std::fs::write(&stand_in, format!("#!/bin/sh\n{tool}\n")).unwrap();
        std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
        let script = format!(
            "d=$(dirname \"$5\"); touch \"$d/io-done\"; while [ ! -f \"$d/sampled\" ]; do sleep 0.01; done; cp {} \"$5\"",
            canned.display()
        );
        let mut launcher = launcher(dir.path(), &script, false);
        launcher.gds_stats = Some(stand_in);
        launcher.timeout = Some(timeout);
        let (mut spec, plan) = trial();
        spec.reader = Reader::Cufile;
        let record = launcher.run_trial(spec, plan);
        let trial_dir = record.worker.as_ref().unwrap().dir.clone();
        let text = std::fs::read_to_string(trial_dir.join("gds_stats.txt")).unwrap_or_default();
        (record, text)
    }

    /// The orchestrator samples the holding worker with `gds_stats` (a stand-in printing NVIDIA's
    /// published level-3 sample) and the verdict uses the text.
    #[test]
    fn gds_stats_is_sampled_while_the_worker_holds() {
        let sample = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../model/tests/fixtures/gds_stats_l3_nvidia_guide.txt"
        );
        let (record, text) = sampled_by(&format!("cat {sample}"), Duration::from_secs(20));
        assert!(text.contains("GPU 2 Read: bw=6.32129"), "{text}");
        let evidence = record.measurement.unwrap().path_evidence.unwrap();
        assert!(evidence.contains("gds_stats"), "{evidence}");
    }

    /// A hung `gds_stats` (a stand-in that sleeps) is killed within what is left of the trial's
    /// timeout: it neither hangs the gate nor stretches `--timeout` by more than the hang
    /// bundle's bounded look (where it is asked once more).
    #[test]
    fn a_hung_gds_stats_is_killed_within_the_trials_timeout() {
        let started = std::time::Instant::now();
        let (_, text) = sampled_by("exec sleep 120", Duration::from_secs(2));
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "took {:?}",
            started.elapsed()
        );
        assert!(text.contains("did not finish within"), "{text}");
    }

    /// Issue 15, case 10: two trials whose names differ only in characters a folder name cannot
    /// keep shared one folder, and the second deleted the first one's evidence.
    #[test]
    fn trial_folders_are_distinct_and_fit_a_file_name() {
        let (a, b) = (slug("t::x[nthreads=1]"), slug("t::x_nthreads_1_"));
        assert_ne!(a, b);
        assert!(a.starts_with("t__x_nthreads_1_-"), "{a}");
        assert_eq!(slug("plain-name_1.0"), "plain-name_1.0");
        let long = slug(&"é".repeat(1000));
        assert!(long.len() <= 255 && long.is_ascii(), "{long}");
        assert_ne!(long, slug(&"é".repeat(1001)));
    }

    /// Issue 15, case 2: a well-formed answer without its measured pass passed as "not verified
    /// ok"; the check of a result against its spec (`conformance`) fails it, saying what lacks.
    #[test]
    fn an_incomplete_result_fails_its_trial() {
        let script = "sed 's/\"seconds\":\\[1.0\\]/\"seconds\":[]/' CANNED > \"$5\"";
        let record = run(script, false);
        assert_eq!(record.checks, Status::Failed, "{record:#?}");
        assert_eq!(
            record.reason.as_deref(),
            Some(
                "the worker's result is incomplete: it reports 0 measured passes, the spec asked 1"
            )
        );
    }

    #[test]
    fn a_crash_after_a_complete_result_warns_or_fails_under_strict() {
        let record = run("cp CANNED \"$5\"; kill -SEGV $$", false);
        assert_eq!(record.checks, Status::Passed);
        assert_eq!(
            record.warnings,
            ["the worker killed by signal 11 (SIGSEGV) after writing a complete result"]
        );
        let record = run("cp CANNED \"$5\"; kill -SEGV $$", true);
        assert_eq!(record.checks, Status::Failed);
        assert!(record.measurement.is_some());
    }
}
