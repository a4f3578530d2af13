//! What the orchestrator and a worker process say to each other: one spec in (JSON file), one
//! result out (JSON file, written atomically and before any teardown, so that a crash while the
//! process exits cannot take a complete result with it).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::plan::ReadPlan;
use crate::record::Measurement;
use crate::scenario::TrialSpec;

/// Start-up phases that are CUDA's and cuFile's own work, not the gate's; the start-up bench
/// finds them by these names.
pub const GPU_CONTEXT: &str = "gpu context";
pub const CUFILE_DRIVER_OPEN: &str = "libcufile load and cuFileDriverOpen";

/// The `gds_stats` hand-shake in the trial's folder: the worker writes [`IO_DONE`] after its last
/// pass and waits (at most [`WORKER_WAIT`]) for [`SAMPLED`], which the orchestrator writes once it
/// has saved [`GDS_STATS_TEXT`].
pub const IO_DONE: &str = "io-done";
pub const SAMPLED: &str = "sampled";
pub const GDS_STATS_TEXT: &str = "gds_stats.txt";

/// The hand-over between trials: a worker started while the previous trial's worker still runs
/// waits, started up and before its first pass's preparation (its page cache drop, its clear),
/// for [`RELEASED`] in its folder, which the orchestrator writes once the previous worker is
/// gone. Its start-up runs beside the other's I/O or teardown, and no two workers ever time I/O
/// or touch the trials' files at once. The trial's timeout bounds the wait.
pub const RELEASED: &str = "released";

/// How long a worker waits for the sample before it goes on (the orchestrator may have no tool).
pub const WORKER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Bumped when either side changes shape; a worker refuses a spec of another version. 2: the
/// streaming `window` and the trial's memory; 3: with `op` (writing trials) and their figures;
/// 4: the `cufile-batch` and `cufile-async` readers, `queue_depth`, `batch_size`, `kvikio_api`,
/// KvikIO's async path and the probe's entry points; 5: the hand-over ([`RELEASED`]); 6: the
/// Python worker runs the Rust worker's pass loop (the `gds_pass` extension), so the spec no
/// longer carries verification regions, windows and length terms for it; 7: a held worker waits
/// before its first preparation, not just before its first timed byte.
pub const PROTOCOL_VERSION: u32 = 7;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSpec {
    pub protocol: u32,
    pub trial: TrialSpec,
    pub plan: ReadPlan,
    /// When the orchestrator started the process (Unix ns), for the start-to-first-byte time.
    pub spawned_at_unix_ns: u64,
    /// What a correct pass checksums to ([`crate::integrity::expected_checksum`]), computed once
    /// by the orchestrator so that no worker needs a generator of its own.
    pub expected_checksum: u64,
    /// When set, the worker writes `io-done` here after its last pass and waits for `sampled`
    /// (the orchestrator runs `gds_stats` on it meanwhile).
    #[serde(default)]
    pub hold_for_sampling: Option<PathBuf>,
    /// When set, the worker waits for [`RELEASED`] in this folder before its first preparation.
    #[serde(default)]
    pub hold_for_release: Option<PathBuf>,
}

impl WorkerSpec {
    pub fn new(trial: TrialSpec, plan: ReadPlan) -> WorkerSpec {
        WorkerSpec {
            protocol: PROTOCOL_VERSION,
            expected_checksum: crate::integrity::expected_checksum(&plan),
            trial,
            plan,
            spawned_at_unix_ns: now_unix_ns(),
            hold_for_sampling: None,
            hold_for_release: None,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerResult {
    pub protocol: u32,
    /// What was measured, also when the trial failed part-way.
    pub measurement: Option<Measurement>,
    pub failure: Option<WorkerFailure>,
    /// cuFile's structs as bytes, from a worker that cannot decode them itself (Python): the
    /// orchestrator decodes them with the layout of the library's version.
    #[serde(default)]
    pub raw_cufile: Option<RawCufile>,
}

impl WorkerResult {
    /// An answer without a measurement: what went wrong and what to do.
    pub fn failed(reason: String, next: String) -> WorkerResult {
        WorkerResult {
            protocol: PROTOCOL_VERSION,
            measurement: None,
            failure: Some(WorkerFailure {
                reason,
                next,
                missing: None,
            }),
            raw_cufile: None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RawCufile {
    pub library: PathBuf,
    /// `cuFileGetVersion`.
    pub version: i32,
    pub loaded_copies: Vec<PathBuf>,
    /// `CUfileDrvProps_t`, hex.
    pub properties_hex: Option<String>,
    /// `CUfileStatsLevel3_t` before the first and after the last pass, hex.
    pub stats_before_hex: Option<String>,
    pub stats_after_hex: Option<String>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerFailure {
    /// One line: what went wrong.
    pub reason: String,
    /// What to do about it.
    pub next: String,
    /// A piece of software the trial needs and the host lacks (`kvikio`, `cupy`): the trial is
    /// then ignored with that reason, or failed when the suite requires it.
    #[serde(default)]
    pub missing: Option<String>,
}

/// Why a part of an answer could not be learnt or measured, as the worker words it: the reason
/// in the `Err` of a probe's or a bench's `Result`. On the wire it is that text alone
/// (`{"Err": "…"}`), exactly as when these parts were `Result<_, String>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct Unavailable(pub String);

impl Unavailable {
    /// Why, in `error`'s words and its causes' (one `caused by:` line each).
    pub fn chain(error: &dyn std::error::Error) -> Unavailable {
        Unavailable(crate::error_chain(error))
    }
}

impl From<String> for Unavailable {
    fn from(why: String) -> Unavailable {
        Unavailable(why)
    }
}

impl From<&str> for Unavailable {
    fn from(why: &str) -> Unavailable {
        Unavailable(why.to_string())
    }
}

/// The reason as text, for the reports and facts that record it as such.
impl From<Unavailable> for String {
    fn from(why: Unavailable) -> String {
        why.0
    }
}

pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A probe of what the worker side can load and see, asked by the gate, which links neither CUDA
/// nor cuFile itself (`gds-gate worker --job probe`): a crash inside libcuda or libcufile then
/// fails the probe, not the gate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProbeSpec {
    pub protocol: u32,
    /// `cuDriverGetVersion` (no `cuInit`).
    pub cuda_version: bool,
    /// `cuDeviceGetCount` (`cuInit`: honours `CUDA_VISIBLE_DEVICES`, as the workers' ordinals do).
    pub gpu_count: bool,
    pub cufile: CufileProbeDepth,
}

/// How far the probe goes with libcufile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CufileProbeDepth {
    /// Leave it alone.
    None,
    /// Load it and read its version.
    Load,
    /// Also `cuFileDriverOpen` (which reads the host's cufile.json) and the driver's properties.
    OpenDriver,
}

/// The probe's answer; every part the spec did not ask for is `None`, every part that could not
/// be learnt says why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub protocol: u32,
    /// Whether `libcuda.so.1` loads: GPU work needs it, and KvikIO needs it even for host reads.
    pub libcuda: Result<(), Unavailable>,
    /// `major.minor` of the CUDA version the driver supports.
    pub cuda_version: Option<Result<String, Unavailable>>,
    pub gpu_count: Option<Result<u32, Unavailable>>,
    pub cufile: Option<CufileProbe>,
    /// The NVRTC library that loads (GPU verification compiles its kernels with it), or why none
    /// does; `None` from a worker that did not ask.
    #[serde(default)]
    pub nvrtc: Option<Result<String, Unavailable>>,
}

impl ProbeResult {
    /// The answer when the probe itself could not run or answer: every asked part says why.
    pub fn failed(spec: &ProbeSpec, why: &str) -> ProbeResult {
        ProbeResult {
            protocol: PROTOCOL_VERSION,
            libcuda: Err(format!("cannot tell whether libcuda.so.1 loads: {why}").into()),
            cuda_version: spec.cuda_version.then(|| Err(why.into())),
            gpu_count: spec.gpu_count.then(|| Err(why.into())),
            cufile: (spec.cufile != CufileProbeDepth::None).then(|| CufileProbe {
                searched: Vec::new(),
                library: Err(why.into()),
                driver: DriverProbe::NotAttempted(format!("not attempted: {why}")),
                entry_points: None,
            }),
            nvrtc: Some(Err(format!("cannot tell whether NVRTC loads: {why}").into())),
        }
    }
}

/// libcufile as the probe found it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CufileProbe {
    /// Where it looked, in order (`GDS_GATE_LIBCUFILE` alone when that is set).
    pub searched: Vec<String>,
    pub library: Result<LoadedCufile, Unavailable>,
    pub driver: DriverProbe,
    /// Which of the optional entry points the readers use the library exports (by `dlsym`);
    /// `None` from workers of older gates or when no library loaded.
    #[serde(default)]
    pub entry_points: Option<Vec<String>>,
}

pub use crate::record::LoadedCufile;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverProbe {
    /// Why `cuFileDriverOpen` was not called.
    NotAttempted(String),
    Opened {
        properties: Result<crate::cufile_abi::DriverProperties, Unavailable>,
    },
    Failed {
        error: String,
    },
}

/// `bench --gpu`'s measurements that need a GPU, made in a worker (`gds-gate worker --job
/// gpu-bench`): the verification kernels over a device buffer, and the cufile reader against `dd`
/// on a cold file, interleaved run by run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GpuBenchSpec {
    pub protocol: u32,
    /// Bytes of the device buffer the kernels run over.
    pub size: u64,
    pub runs: usize,
    /// The generated file the readers read (the gate prepared it).
    pub file: crate::plan::PlannedFile,
    /// Reader settings, each `(threads, task size)`.
    pub settings: Vec<(u32, u64)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GpuBenchResult {
    pub protocol: u32,
    /// The GPU, by name; or why none could be opened, when nothing was measured.
    pub gpu: Result<String, Unavailable>,
    /// TB/s per run of each kernel, or why they could not run.
    pub kernels: Option<Result<KernelRates, Unavailable>>,
    pub storage: Option<Result<StorageRates, Unavailable>>,
}

impl GpuBenchResult {
    /// Nothing measured, and why.
    pub fn failed(why: String) -> GpuBenchResult {
        GpuBenchResult {
            protocol: PROTOCOL_VERSION,
            gpu: Err(why.into()),
            kernels: None,
            storage: None,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct KernelRates {
    pub plain_read: Vec<f64>,
    pub exact_compare: Vec<f64>,
    pub checksum: Vec<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StorageRates {
    /// GB/s of each `dd iflag=direct bs=16M` run.
    pub dd: Vec<f64>,
    /// Per setting of the spec: GB/s of each run, and its ratio to the dd run before it.
    pub readers: Vec<(Vec<f64>, Vec<f64>)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured pass as the Python worker writes it (KvikIO: a mean latency, no percentiles)
    /// and as the Rust worker does (percentiles), through JSON and back; and a result of a worker
    /// that predates the costs still reads, with none.
    #[test]
    fn costs_and_the_loaded_libcufile_round_trip() {
        let json = serde_json::json!({
            "protocol": PROTOCOL_VERSION,
            "measurement": {
                "files": [], "bytes_per_repetition": 1u64 << 30, "warmup_seconds": [],
                "seconds": [0.5], "gbps": [2.147], "median_gbps": 2.147, "path": "kvikio",
                "integrity": {"method": "none", "checksum": null, "expected_checksum": null,
                              "bad_words": 0, "first_bad": null, "seconds": 0.0},
                "resident_after_drop": null, "verify_seconds": 0.0, "total_seconds": 1.0,
                "startup_seconds": null,
                "costs": [{"read_calls": 256, "iops": 512.0,
                           "cpu": {"user_seconds": 0.1, "system_seconds": 0.3},
                           "cpu_seconds_per_gib": 0.4,
                           "latency": {"calls": 256, "mean_us": 1900.0, "p50_us": null,
                                       "p90_us": null, "p99_us": null, "p999_us": null,
                                       "max_us": null}}],
                "latency": {"calls": 256, "mean_us": 1900.0, "p50_us": null, "p90_us": null,
                            "p99_us": null, "p999_us": null, "max_us": null},
                "libcufile": {"path": "/opt/venv/nvidia/cu13/lib/libcufile.so.0",
                              "version": "1.16"},
            },
            "failure": null,
            "raw_cufile": null,
        });
        let result: WorkerResult = serde_json::from_value(json).unwrap();
        let m = result.measurement.as_ref().unwrap();
        assert_eq!(m.cpu_per_gib(), [0.4]);
        assert_eq!(m.median_iops(), Some(512.0));
        assert_eq!(m.libcufile.as_ref().unwrap().version, "1.16");
        assert_eq!(m.cost_line(), "CPU 0.400 s/GiB, 512 IOPS, mean 1.90 ms");
        let back: WorkerResult =
            serde_json::from_str(&serde_json::to_string(&result).unwrap()).unwrap();
        assert_eq!(back.measurement, result.measurement);

        let mut old = serde_json::to_value(&result).unwrap();
        let object = old["measurement"].as_object_mut().unwrap();
        for key in ["costs", "latency", "libcufile"] {
            object.remove(key);
        }
        let old: WorkerResult = serde_json::from_value(old).unwrap();
        let m = old.measurement.unwrap();
        assert!(m.costs.is_empty() && m.latency.is_none() && m.cost_line().is_empty());
    }

    /// Probe and bench answers as the worker wrote them while their reasons were
    /// `Result<_, String>` (each line verbatim from that serializer) read back, and are written
    /// again byte for byte: a gate and a worker of either side of the change understand each other.
    #[test]
    fn reasons_keep_their_wire_format() {
        let probe = r#"{"protocol":4,"libcuda":{"Ok":null},"cuda_version":{"Ok":"13.0"},"gpu_count":{"Err":"cuDeviceGetCount failed (CUDA_ERROR_NO_DEVICE)"},"cufile":{"searched":["libcufile.so.0"],"library":{"Ok":{"path":"/usr/lib/libcufile.so.0","version":"1.16"}},"driver":{"opened":{"properties":{"Err":"cuFileDriverGetProperties failed"}}},"entry_points":["cuFileReadAsync"]},"nvrtc":{"Err":"NVRTC not found (looked for libnvrtc.so and 3 other names)"}}"#;
        let failed = r#"{"protocol":4,"libcuda":{"Err":"cannot tell whether libcuda.so.1 loads: the probe failed: x"},"cuda_version":{"Err":"the probe failed: x"},"gpu_count":{"Err":"the probe failed: x"},"cufile":{"searched":[],"library":{"Err":"the probe failed: x"},"driver":{"not_attempted":"not attempted: the probe failed: x"},"entry_points":null},"nvrtc":{"Err":"cannot tell whether NVRTC loads: the probe failed: x"}}"#;
        let bench = r#"{"protocol":4,"gpu":{"Ok":"NVIDIA H200"},"kernels":{"Ok":{"plain_read":[3.5],"exact_compare":[2.25],"checksum":[3.0]}},"storage":{"Err":"dd failed: exit status: 1"}}"#;
        let bench_failed = r#"{"protocol":4,"gpu":{"Err":"no GPU"},"kernels":null,"storage":null}"#;

        let read: ProbeResult = serde_json::from_str(probe).unwrap();
        assert_eq!(
            read.gpu_count,
            Some(Err(Unavailable(
                "cuDeviceGetCount failed (CUDA_ERROR_NO_DEVICE)".into()
            )))
        );
        assert_eq!(serde_json::to_string(&read).unwrap(), probe);

        let read: ProbeResult = serde_json::from_str(failed).unwrap();
        let spec = ProbeSpec {
            protocol: 4,
            cuda_version: true,
            gpu_count: true,
            cufile: CufileProbeDepth::Load,
        };
        let made = ProbeResult {
            protocol: 4,
            ..ProbeResult::failed(&spec, "the probe failed: x")
        };
        assert_eq!(read, made);
        assert_eq!(serde_json::to_string(&made).unwrap(), failed);

        let read: GpuBenchResult = serde_json::from_str(bench).unwrap();
        assert_eq!(read.gpu, Ok("NVIDIA H200".to_string()));
        assert_eq!(serde_json::to_string(&read).unwrap(), bench);
        let made = GpuBenchResult {
            protocol: 4,
            ..GpuBenchResult::failed("no GPU".into())
        };
        assert_eq!(serde_json::to_string(&made).unwrap(), bench_failed);
        let read: GpuBenchResult = serde_json::from_str(bench_failed).unwrap();
        assert_eq!(read.gpu, Err(Unavailable("no GPU".into())));
    }
}
