//! What a trial did and how it was judged: the unit every report is made of.

use serde::{Deserialize, Serialize};

use crate::integrity::IntegrityResult;
use crate::plan::PlannedFile;
use crate::scenario::TrialSpec;
use crate::worker::process::Ending;
use crate::worker::{CufileEvidence, KvikioEvidence};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    /// Did not run, with the reason. Never counted as a pass.
    Ignored,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub name: String,
    pub status: Status,
    /// One line: why it failed or was ignored.
    pub reason: Option<String>,
    /// The one-screen explanation of a failure: what was expected, what was seen, what to do.
    pub details: Option<String>,
    pub spec: TrialSpec,
    pub measurement: Option<Measurement>,
    /// Things that did not fail the trial but should be seen (a crash after a complete result).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// How the worker process ran.
    pub worker: Option<WorkerRun>,
    /// A trial whose run looked slower than its baseline is run again (fresh worker, same
    /// invocation) before it fails: these are the confirmation runs' measurements, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<Measurement>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerRun {
    /// The trial's folder: spec.json, result.json, stdout.log, stderr.log, cufile.json, cufile.log.
    pub dir: std::path::PathBuf,
    pub ending: Ending,
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub files: Vec<PlannedFile>,
    pub bytes_per_repetition: u64,
    pub warmup_seconds: Vec<f64>,
    /// Read-section time of each measured repetition.
    pub seconds: Vec<f64>,
    /// Throughput of each measured repetition, GB/s (10^9 bytes per second).
    pub gbps: Vec<f64>,
    /// `None` when no measured pass completed.
    pub median_gbps: Option<f64>,
    /// The path the bytes took, as the verdict judged it from every source of evidence.
    pub path: String,
    /// The verdict in full: which source said what, and the diagnosis.
    #[serde(default)]
    pub path_evidence: Option<String>,
    /// The last verification (every repetition is verified; the first failure stops the trial).
    pub integrity: IntegrityResult,
    /// Largest fraction of a file still in the page cache after dropping it (cold trials).
    pub resident_after_drop: Option<f64>,
    pub verify_seconds: f64,
    /// Wall time of the trial inside the worker (opening, reading, verifying).
    pub total_seconds: f64,
    /// From the orchestrator starting the worker to the first read: never part of a throughput.
    pub startup_seconds: Option<f64>,
    /// Where the start-up time went, in order (`gpu context`, `libcufile load`, `cuFileDriverOpen`, ...).
    #[serde(default)]
    pub setup: Vec<(String, f64)>,
    /// The GPU read into (`h2d`, `cufile`, `kvikio`).
    pub gpu: Option<String>,
    pub cufile: Option<CufileEvidence>,
    #[serde(default)]
    pub kvikio: Option<KvikioEvidence>,
    /// A trial over several GPUs (`gpus:`): each GPU's own result. The fields above then hold the
    /// aggregate (see [`crate::worker::multi`]): `seconds` is the slowest GPU's time of each
    /// repetition and `gbps` all GPUs' bytes over it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_gpu: Vec<GpuShardResult>,
}

/// One GPU's share of a trial over several GPUs: its worker's measurement (throughput, cuFile
/// counters, path verdict, integrity of its shard), and how it was judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuShardResult {
    pub gpu: u32,
    pub status: Status,
    pub reason: Option<String>,
    pub details: Option<String>,
    pub measurement: Option<Measurement>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Its worker, in `<trial>/gpu<N>`.
    pub worker: Option<WorkerRun>,
}

impl TrialRecord {
    pub fn passed(spec: TrialSpec, measurement: Measurement) -> TrialRecord {
        TrialRecord {
            name: spec.name.clone(),
            status: Status::Passed,
            reason: None,
            details: None,
            spec,
            measurement: Some(measurement),
            warnings: Vec::new(),
            worker: None,
            confirmations: Vec::new(),
        }
    }

    pub fn ignored(spec: TrialSpec, reason: String) -> TrialRecord {
        TrialRecord {
            name: spec.name.clone(),
            status: Status::Ignored,
            reason: Some(reason),
            details: None,
            spec,
            measurement: None,
            warnings: Vec::new(),
            worker: None,
            confirmations: Vec::new(),
        }
    }

    pub fn failed(
        spec: TrialSpec,
        reason: String,
        details: String,
        measurement: Option<Measurement>,
    ) -> TrialRecord {
        TrialRecord {
            name: spec.name.clone(),
            status: Status::Failed,
            reason: Some(reason),
            details: Some(details),
            spec,
            measurement,
            warnings: Vec::new(),
            worker: None,
            confirmations: Vec::new(),
        }
    }

    /// `4.12 GB/s, host, checksum 0x…`: the line shown next to `ok`.
    pub fn summary(&self) -> String {
        let Some(m) = &self.measurement else {
            return self.reason.clone().unwrap_or_default();
        };
        let checksum = m.integrity.checksum.map_or_else(
            || "not verified".into(),
            |c| format!("checksum {}", crate::hex::format(c)),
        );
        let speed = m.median_gbps.map_or_else(
            || "no measured pass".into(),
            |g| format!("{g:.2} GB/s median of {}", m.gbps.len()),
        );
        let startup = m
            .startup_seconds
            .map_or_else(String::new, |s| format!(", start {:.0} ms", s * 1e3));
        let gpus = if m.per_gpu.is_empty() {
            String::new()
        } else {
            let each: Vec<String> = m
                .per_gpu
                .iter()
                .map(|shard| {
                    let speed = shard
                        .measurement
                        .as_ref()
                        .and_then(|m| m.median_gbps)
                        .map_or_else(|| "-".into(), |g| format!("{g:.2}"));
                    format!("GPU {} {speed}", shard.gpu)
                })
                .collect();
            format!(" over {} GPUs ({})", m.per_gpu.len(), each.join(", "))
        };
        format!("{speed}{gpus}, path {}, {checksum}{startup}", m.path)
    }
}

/// Median of samples (mean of the middle two for an even count); NaN for no samples.
pub fn median(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
