//! Why a trial failed, as a type: before a worker could read for it (the run's causes), because
//! its worker could not start, failed it or answered with nothing usable, or because some of the
//! workers of a trial over several did. [`Cause::fail`] builds its record, so that the words of
//! each cause (what happened, where, what to do) live in one place. (`assess` then refines a
//! record from the trial's evidence, and the verdicts judge it.)

use std::path::PathBuf;

use crate::assess::where_;
use gds_model::record::{Ending, GpuShardResult, Measurement, TrialRecord, workers};
use gds_model::scenario::TrialSpec;
use gds_model::shard::ShardError;

pub(crate) enum Cause<'a> {
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
    /// The worker started ahead could not be released to read: `file` could not be written.
    NotReleased {
        file: PathBuf,
        error: std::io::Error,
    },
    /// A piece of the KvikIO stack is missing, and the suite sets `require_kvikio: true`.
    KvikioRequired(String),
    /// The worker answered in another protocol version.
    Protocol(u32),
    /// The worker answered with neither a measurement nor a failure; `tail` is its output's
    /// last lines as the message shows them (empty when it printed nothing).
    EmptyAnswer { tail: String },
    /// The worker failed the trial itself (a short read, wrong bytes, a refused call): its own
    /// reason and next step, and its output's `tail`.
    WorkerFailed {
        reason: String,
        next: String,
        tail: String,
    },
    /// Under `--strict`: the worker crashed during teardown after a complete result (`warning`
    /// says how, as the record's warning does without `--strict`).
    TeardownCrash { warning: String, tail: String },
    /// The read plan could not be split among the trial's workers.
    Split(ShardError),
    /// Workers of a trial over several (`all` names them) failed it.
    WorkersFailed {
        all: String,
        failed: Vec<&'a GpuShardResult>,
    },
    /// Some workers of a trial over several did not run while the others did.
    WorkersNotRun {
        all: String,
        not_run: Vec<&'a GpuShardResult>,
    },
    /// A trial over several workers gave none of them a share.
    NoShares,
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

impl Cause<'_> {
    pub(crate) fn fail(self, spec: TrialSpec) -> TrialRecord {
        self.fail_with(spec, None)
    }

    /// The failed record, keeping what the worker measured before it failed.
    pub(crate) fn fail_with(
        self,
        spec: TrialSpec,
        measurement: Option<Measurement>,
    ) -> TrialRecord {
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
            Cause::NotReleased { file, error } => (
                format!(
                    "cannot release the worker: cannot write `{}`: {error}",
                    file.display()
                ),
                format!("{at}\n  next: check that the reports directory is writable"),
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
            Cause::WorkerFailed { reason, next, tail } => {
                (reason, format!("{at}\n  next: {next}{tail}"))
            }
            Cause::TeardownCrash { warning, tail } => (
                warning,
                format!(
                    "{at}\n  next: --strict turns a crash during teardown into a failure{tail}"
                ),
            ),
            Cause::Split(error) => (
                error.to_string(),
                format!("{at}\n  next: {}", error.next_step()),
            ),
            Cause::WorkersFailed { all, failed } => {
                let said = |shard: &GpuShardResult| {
                    format!(
                        "{}: {}",
                        shard.label(),
                        shard.reason.as_deref().unwrap_or("failed")
                    )
                };
                let first = failed.first().map_or_else(String::new, |shard| said(shard));
                let reason = match failed.len() {
                    1 => first,
                    _ => format!("{} failed; {first}", workers(failed.iter().copied())),
                };
                let mut details =
                    format!("{at}\n  a trial over {all}: it fails when any of them fails");
                for shard in &failed {
                    details.push_str(&format!(
                        "\n  {} ({}): {}\n{}",
                        shard.label(),
                        shard
                            .worker
                            .as_ref()
                            .map_or_else(String::new, |w| w.dir.display().to_string()),
                        shard.reason.as_deref().unwrap_or("failed"),
                        shard.details.as_deref().unwrap_or("")
                    ));
                }
                (reason, details)
            }
            Cause::WorkersNotRun { all, not_run } => {
                // Never green by accident: a trial over N workers that ran on fewer did not pass.
                let reason = not_run.first().map_or_else(String::new, |first| {
                    format!(
                        "{} did not run ({}) while the others did: a trial over several workers runs them all",
                        first.label(),
                        first.reason.as_deref().unwrap_or("no reason given")
                    )
                });
                let labels: Vec<String> = not_run.iter().map(|shard| shard.label()).collect();
                (
                    reason,
                    format!("{at}\n  {all}; not run: {}", labels.join(", ")),
                )
            }
            Cause::NoShares => ("no worker was given a share of the trial".into(), at),
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
        TrialRecord::failed(spec, reason, details, measurement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::fixtures;
    use gds_model::record::Status;

    /// A worker that failed its trial after measuring keeps what it measured beside its words.
    #[test]
    fn a_worker_failure_keeps_the_measurement_and_says_what_to_do() {
        let measurement = fixtures::measurement(&[1.0, 1.1], "host", 7);
        let record = Cause::WorkerFailed {
            reason: "posix read 10 bytes of 20 in pass 2".into(),
            next: "check the files and the storage".into(),
            tail: "\n  worker output: x".into(),
        }
        .fail_with(fixtures::spec("s::t"), Some(measurement.clone()));
        assert_eq!(record.checks, Status::Failed);
        assert_eq!(
            record.reason.as_deref(),
            Some("posix read 10 bytes of 20 in pass 2")
        );
        let details = record.details.unwrap();
        assert!(
            details.ends_with("\n  next: check the files and the storage\n  worker output: x"),
            "{details}"
        );
        assert_eq!(record.measurement, Some(measurement));
    }
}
