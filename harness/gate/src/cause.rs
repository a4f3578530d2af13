//! Why a trial failed outside the worker's own checks, as a type: before a worker could read for
//! it (the run's causes), or because its worker could not start or answered with nothing usable.
//! [`Cause::fail`] builds its record, so that the words of each cause (what happened, where, what
//! to do) live in one place.

use std::path::PathBuf;

use crate::assess::where_;
use gds_model::record::{Ending, TrialRecord};
use gds_model::scenario::TrialSpec;

pub(crate) enum Cause {
    /// The gate itself panicked while running the trial.
    Panicked(String),
    /// The trial's data could not be generated or checked.
    NoData(String),
    /// The trial's read plan is refused (too many tasks, a task too large).
    Plan(String),
    /// A GPU trial that cannot run here, under `--require-gpu`.
    GpuRequired(String),
    /// `gpus:` found no GPU CUDA can see, under `--require-gpu`.
    NoGpus(String),
    /// `gpus:` lists a GPU this host does not have.
    UnknownGpus(String),
    /// The worker could not be set up or started.
    NotStarted(String),
    /// A piece of the KvikIO stack is missing, and the suite sets `require_kvikio: true`.
    KvikioRequired(String),
    /// The worker answered in another protocol version.
    Protocol(u32),
    /// The worker answered with neither a measurement nor a failure; `tail` is its output's
    /// last lines as the message shows them (empty when it printed nothing).
    EmptyAnswer { tail: String },
    /// The worker ended without a usable answer: it hung past its timeout (`hung_in` the call
    /// its watchdog or its threads named), was stopped by an interrupt, crashed, or wrote no
    /// valid result (`invalid`: why not). `folder` is the trial's; `bundle` and `tail` are the
    /// hang bundle's and the output's lines as the message shows them.
    NoAnswer {
        ending: Ending,
        invalid: Option<String>,
        hung_in: Option<String>,
        folder: PathBuf,
        bundle: String,
        tail: String,
    },
}

impl Cause {
    pub(crate) fn fail(self, spec: TrialSpec) -> TrialRecord {
        let at = where_(&spec);
        let (reason, details) = match self {
            Cause::Panicked(message) => (
                format!("the gate panicked: {message}"),
                "  next: this is a bug in gds-gate; please report it with report.json".to_string(),
            ),
            Cause::NoData(error) => (
                format!("test data unavailable: {error}"),
                format!("{at}\n  next: fix the data problem above and run again"),
            ),
            Cause::Plan(problem) => (
                format!("read plan: {problem}"),
                format!("{at}\n  next: change the scenario as the reason says"),
            ),
            Cause::GpuRequired(reason) => (
                format!("GPU trial could not run: {reason}"),
                format!(
                    "  the run was started with --require-gpu, and reader `{}` needs a GPU\n  next: run on a host with the NVIDIA driver and GDS installed (check it with `cargo xtask doctor`), or drop --require-gpu",
                    spec.reader.name()
                ),
            ),
            Cause::NoGpus(reason) => (
                format!("GPU trial could not run: {reason}"),
                format!(
                    "{at}\n  the run was started with --require-gpu\n  next: run on a host whose GPUs CUDA can see (check CUDA_VISIBLE_DEVICES and `nvidia-smi`)"
                ),
            ),
            Cause::UnknownGpus(reason) => (
                reason,
                format!("{at}\n  next: list GPUs this host has in `gpus:`, or write `gpus: all`"),
            ),
            Cause::NotStarted(reason) => (
                reason,
                format!(
                    "{at}\n  next: check that the reports directory is writable and the gate binary runs"
                ),
            ),
            Cause::KvikioRequired(reason) => (
                reason,
                format!(
                    "{at}\n  next: the suite sets `require_kvikio: true`; install the missing piece"
                ),
            ),
            Cause::Protocol(worker) => (
                format!(
                    "the worker speaks protocol {worker}, the gate {}",
                    gds_model::protocol::PROTOCOL_VERSION
                ),
                format!("{at}\n  next: rebuild the gate, or use the Python worker shipped with it"),
            ),
            Cause::EmptyAnswer { tail } => (
                "the worker answered with neither a measurement nor a failure".into(),
                format!("{at}{tail}"),
            ),
            Cause::NoAnswer {
                ending,
                invalid,
                hung_in,
                folder,
                bundle,
                tail,
            } => {
                let reason = match (&ending, invalid) {
                    (Ending::TimedOut { .. }, _) if let Some(call) = &hung_in => {
                        format!("the worker hung in {call}: it {ending}")
                    }
                    (Ending::TimedOut { .. } | Ending::Interrupted { .. }, _) => {
                        format!("the worker {ending}")
                    }
                    (_, Some(why)) => format!("the worker's answer is not a valid result: {why}"),
                    (Ending::Exited { code: 0 }, None) => {
                        "the worker exited without writing its result".to_string()
                    }
                    (ending, None) => format!("the worker {ending} without a result"),
                };
                let next = match ending {
                    Ending::Interrupted { .. } => {
                        "nothing is wrong with the trial; run the gate again to measure it"
                    }
                    Ending::TimedOut { .. } => {
                        "the stack under test hung or is far slower than expected: look at the worker's output and the trial's cufile.log"
                    }
                    _ => {
                        "the stack under test crashed the worker: look at its output and the trial's cufile.log"
                    }
                };
                (
                    reason,
                    format!(
                        "{at}\n  next: {next} (in `{}`){bundle}{tail}",
                        folder.display()
                    ),
                )
            }
        };
        TrialRecord::failed(spec, reason, details, None)
    }
}
