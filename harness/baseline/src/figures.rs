//! What a baseline keeps of one run of a trial: its passes' rates and CPU cost, its IOPS and
//! latency, its path and checksum, a load's set-up steps, the read latency beside writes. Taken from a run's measurement or from the run's line in the
//! history, so that a bless from history records exactly what a bless that ran the trials would,
//! and a run is judged against its baseline the same way from either.

use gds_model::cost::PassLatencies;
use gds_model::path::Path;
use gds_model::record::{LoadFigures, Measurement};

#[derive(Clone, Debug, PartialEq)]
pub struct RunFigures {
    /// Each measured pass, GB/s.
    pub gbps: Vec<f64>,
    /// CPU seconds per GiB of each measured pass; empty when the run did not record CPU time.
    pub cpu_per_gib: Vec<f64>,
    /// Median read calls per second over the passes.
    pub iops: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    /// The path verdict, e.g. `nvfs`, `cufile-posix`, `host`.
    pub path: Path,
    pub checksum: Option<u64>,
    /// A load's set-up steps per pass (`op: load`).
    pub load: Option<LoadFigures>,
    /// The reading rank's latency percentiles per pass beside writing ranks (`writers:`).
    pub read_latency: Option<PassLatencies>,
}

impl RunFigures {
    pub fn of(m: &Measurement) -> RunFigures {
        RunFigures {
            gbps: m.gbps.clone(),
            cpu_per_gib: m.cpu_per_gib(),
            iops: m.median_iops(),
            latency_p50_us: m.latency.as_ref().and_then(|l| l.p50_us),
            latency_p99_us: m.latency.as_ref().and_then(|l| l.p99_us),
            path: m.path.clone(),
            checksum: m.integrity.checksum,
            load: m.load.clone(),
            read_latency: m.read_latency.clone(),
        }
    }
}
