//! A trial's worker started ahead of its trial, as the previous trial's worker answers. A GPU
//! worker's exit takes 0.1-0.25 s on the H200 runner (the kernel tears down its CUDA context and
//! pinned memory) and a start-up 0.7-7 s (CUDA, libcufile, KvikIO, PyTorch): started early, the
//! next worker's start-up hides the exit. It waits, ready, just before its first timed byte until
//! the previous worker is gone and judged ([`gds_model::protocol::RELEASED`]), so no two workers
//! ever time I/O at once, and its trial is judged as any other.

use std::path::PathBuf;
use std::time::Instant;

use super::{Launcher, Started};
use crate::cause::Cause;
use gds_model::plan::ReadPlan;
use gds_model::protocol::RELEASED;
use gds_model::record::TrialRecord;
use gds_model::scenario::TrialSpec;

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
    /// does. The previous worker must be gone.
    pub fn run_held(&self, held: Held, on_answer: &mut dyn FnMut() -> Option<u64>) -> TrialRecord {
        let Held {
            spec,
            dir,
            mut started,
            since,
            ..
        } = held;
        // Its timeout counts from here: a previous worker slow to exit is not this one's hang.
        started.running.extend_timeout(since.elapsed());
        let released = dir.join(RELEASED);
        if let Err(error) = std::fs::write(&released, b"") {
            started.running.stop();
            let file = released;
            return Cause::NotReleased { file, error }.fail(spec);
        }
        self.conclude(spec, &dir, Ok(started), on_answer)
    }
}
