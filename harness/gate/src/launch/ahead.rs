//! A trial's worker started ahead of its trial, while the previous trial's worker reads or as it
//! answers. A GPU worker's start-up takes 0.7-7 s (CUDA, libcufile, KvikIO, PyTorch) and its exit
//! 0.1-0.25 s on the H200 runner (the kernel tears down its CUDA context and pinned memory):
//! started early, the next worker's start-up hides behind the previous trial. It waits, started
//! up, before its first pass's preparation until the previous worker is gone and judged
//! ([`gds_model::protocol::RELEASED`]), so no two workers ever time I/O or touch the trials'
//! files at once, and its trial is judged as any other.

use std::path::PathBuf;
use std::time::Instant;

use super::{Launcher, Started};
use crate::cause::Cause;
use gds_model::plan::ReadPlan;
use gds_model::protocol::RELEASED;
use gds_model::record::TrialRecord;
use gds_model::scenario::TrialSpec;

/// When the run may start the next trial's worker: as the current worker runs (released, or
/// started), or as its answer appears ([`Launcher::run_trial_then`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    Running,
    Answered,
}

/// A worker started ahead of its trial, waiting for [`Launcher::run_held`].
pub struct Held {
    spec: TrialSpec,
    dir: PathBuf,
    started: Started,
    /// When it was started: where its trial's time begins.
    pub since: Instant,
    /// The same, on the wall clock (ns since the epoch), to compare with a worker's stamps.
    pub since_unix_ns: u64,
}

impl Held {
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Ends a held worker whose trial does not run next (a confirmation run or a trial over
    /// several GPUs comes first, or the run was interrupted), and removes its half-filled folder:
    /// the trial, when it runs, starts in a fresh one.
    pub fn stop(self) {
        self.started.running.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Launcher {
    /// Starts `spec`'s worker now, held; `None` when it cannot start, which its trial, run as
    /// usual, then reports.
    pub fn start_ahead(&self, spec: TrialSpec, plan: ReadPlan) -> Option<Held> {
        let (dir, timeout) = self.folder_and_timeout(&spec, &plan);
        let (since, since_unix_ns) = (Instant::now(), gds_model::protocol::now_unix_ns());
        let started = self.start(&spec, plan, &dir, timeout, true).ok()?;
        Some(Held {
            spec,
            dir,
            started,
            since,
            since_unix_ns,
        })
    }

    /// Releases a held worker and runs its trial to the end as [`Launcher::run_trial_then`]
    /// does; its trial's time began at `begins`, what of its start-up and hold came before is
    /// said as such ([`gds_model::record::Measurement::started_beside_previous`]). The previous
    /// worker must be gone.
    pub fn run_held(
        &self,
        held: Held,
        begins: Instant,
        ahead: &mut dyn FnMut(Moment) -> Option<u64>,
    ) -> TrialRecord {
        let Held {
            spec,
            dir,
            mut started,
            since,
            ..
        } = held;
        // Its timeout counts from here: a previous worker slow to exit is not this one's hang.
        started.running.extend_timeout(since.elapsed());
        // nvidia-fs's counters are the host's: those from its start would count the previous
        // trial's reads.
        started.nvfs_before = crate::assess::nvfs_snapshot();
        let released = dir.join(RELEASED);
        if let Err(error) = std::fs::write(&released, b"") {
            started.running.stop();
            let file = released;
            return Cause::NotReleased { file, error }.fail(spec);
        }
        let mut record = self.conclude(spec, &dir, Ok(started), ahead);
        if let Some(m) = record.measurement.as_mut() {
            m.started_beside_previous(begins.saturating_duration_since(since).as_secs_f64());
        }
        record
    }
}
