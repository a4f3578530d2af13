//! What the orchestrator and a worker process say to each other: one spec in (JSON file), one
//! result out (JSON file, written atomically and before any teardown, so that a crash while the
//! process exits cannot take a complete result with it).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::gpu::cufile::{DriverProperties, Stats};
use crate::plan::ReadPlan;
use crate::record::Measurement;
use crate::scenario::TrialSpec;

/// Bumped when either side changes shape; a worker refuses a spec of another version.
pub const PROTOCOL_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSpec {
    pub protocol: u32,
    pub trial: TrialSpec,
    pub plan: ReadPlan,
    /// When the orchestrator started the process (Unix ns), for the start-to-first-byte time.
    pub spawned_at_unix_ns: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerResult {
    pub protocol: u32,
    /// What was measured, also when the trial failed part-way.
    pub measurement: Option<Measurement>,
    pub failure: Option<WorkerFailure>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerFailure {
    /// One line: what went wrong.
    pub reason: String,
    /// What to do about it.
    pub next: String,
}

/// cuFile's own account of a trial: which library, how its driver runs, and its counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CufileEvidence {
    pub library: PathBuf,
    pub version: String,
    /// Every libcufile mapped into the worker; more than one means two cuFile drivers.
    pub loaded_copies: Vec<PathBuf>,
    pub properties: Option<DriverProperties>,
    /// Counters over the whole trial (warmup and measured passes).
    pub stats: Option<Stats>,
    /// Why there are no counters, when there are none.
    pub stats_unavailable: Option<String>,
    /// Bytes the trial asked cuFile to read (passes × plan), to check the counters against.
    pub requested_bytes: u64,
}

pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
