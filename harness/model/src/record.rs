//! What a trial did and how it was judged: the unit every report is made of.

use std::cmp::Ordering;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cost::{Latency, PassCost};
use crate::cufile_abi::{DriverProperties, Stats};
use crate::integrity::IntegrityResult;
pub use crate::outcome::{Outcome, Status};
use crate::plan::PlannedFile;
pub use crate::runner_check::{Needs, RunnerCheck, Shortfall};
use crate::scenario::TrialSpec;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialRecord {
    pub name: String,
    /// The trial's outcome: its own checks and its baseline judgement together, as every report
    /// shows it. Until the gate judges it against a baseline, the outcome of its own checks.
    pub status: Outcome,
    /// The trial's own checks (path, bytes, the worker's run), before any baseline.
    pub checks: Status,
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
    /// The runner's control read before each confirmation run, in the same order: whether the
    /// disk and the CPU were at their blessed level when the trial was measured again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runner_checks: Vec<RunnerCheck>,
    /// The gate's clock around the whole trial: its worker, confirmation runs and waits for the
    /// runner. Where it went is [`crate::timing::TrialTime`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// Outcome `limited`: the runner's recorded limitation it failed for, as recorded (the
    /// doctor's reason why the trial cannot pass on this runner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limitation: Option<String>,
    /// Of `wall_seconds`, the trial's own run (its rounds), without its confirmation runs and
    /// the waits before them: what `--budget` prices the trial at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_seconds: Option<f64>,
    /// Not run because the gate was interrupted by this signal (e.g. `SIGTERM`) before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkerRun {
    /// The trial's folder: spec.json, result.json, stdout.log, stderr.log, cufile.json, cufile.log.
    pub dir: std::path::PathBuf,
    pub ending: Ending,
    pub seconds: f64,
    /// Of `seconds`, the time after the worker's answer was complete: writing it, a cold trial's
    /// last page cache drop finishing, and the process's exit, where the kernel tears down what it
    /// held (a CUDA context, pinned memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_answer_seconds: Option<f64>,
    /// Of `after_answer_seconds`, what ran beside the next trial's worker starting up, which
    /// the gate had started as this one answered: part of that trial's time, not this one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_beside_next_seconds: Option<f64>,
}

/// How a worker process ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    Exited {
        code: i32,
    },
    Signalled {
        signal: i32,
        name: String,
        core_dumped: bool,
    },
    TimedOut {
        after_seconds: u64,
    },
    /// Stopped by the gate (SIGTERM, grace, SIGKILL) because the gate itself got this signal.
    Interrupted {
        signal: i32,
        name: String,
    },
}

impl Ending {
    pub fn is_clean(&self) -> bool {
        *self == Ending::Exited { code: 0 }
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited { code } => write!(f, "exited with status {code}"),
            Ending::Signalled {
                signal,
                name,
                core_dumped,
            } => {
                write!(
                    f,
                    "killed by signal {signal} ({name}){}",
                    if *core_dumped { ", core dumped" } else { "" }
                )
            }
            Ending::TimedOut { after_seconds } => write!(
                f,
                "did not finish within {after_seconds} s and was killed (SIGTERM, then SIGKILL)"
            ),
            Ending::Interrupted { name, .. } => write!(
                f,
                "was stopped because the gate was interrupted by {name} (SIGTERM, then SIGKILL)"
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    pub path: crate::path::Path,
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
    /// When the worker's answer was complete, just before it was written: what the gate's clock
    /// measures after it is the process's exit ([`WorkerRun::after_answer_seconds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_unix_ns: Option<u64>,
    /// Where the start-up time went, in order (`gpu context`, `libcufile load`, `cuFileDriverOpen`, ...).
    #[serde(default)]
    pub setup: Vec<(String, f64)>,
    /// Untimed preparation after the start-up: the page cache dropped and the destination
    /// cleared before each later pass, written files blanked, their pages dropped after `fsync`,
    /// a roundtrip's destination cleared. `None` from workers that did not count it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation_seconds: Option<f64>,
    /// The GPU read into (`h2d`, `cufile`, `kvikio`).
    pub gpu: Option<String>,
    pub cufile: Option<CufileEvidence>,
    #[serde(default)]
    pub kvikio: Option<KvikioEvidence>,
    /// PyTorch's account of a `torch` trial: which build made the cuFile calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchEvidence>,
    /// A trial over several GPUs (`gpus:`): each GPU's own result. The fields above then hold the
    /// aggregate (the gate's multi-GPU launcher): `seconds` is the slowest GPU's time of each
    /// repetition and `gbps` all GPUs' bytes over it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_gpu: Vec<GpuShardResult>,
    /// What each measured pass cost (read calls, IOPS, CPU time, latency), in the order of
    /// `seconds`; empty from a worker that predates it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<PassCost>,
    /// Read-call latency over all measured passes (the threads' histograms merged).
    #[serde(default)]
    pub latency: Option<Latency>,
    /// The libcufile the worker actually had loaded: the real file behind the symbols it called,
    /// and its version. KvikIO loads the one of its wheels, the cufile reader the toolkit's (or
    /// `GDS_GATE_LIBCUFILE`'s).
    #[serde(default)]
    pub libcufile: Option<LoadedCufile>,
    /// The window the passes read through ([`crate::window`]); `None`: one buffer of the whole
    /// pass.
    #[serde(default)]
    pub window: Option<u64>,
    /// The worker's peak memory over the trial; `None` from a worker that predates it.
    #[serde(default)]
    pub memory: Option<MemoryPeak>,
    /// A writing trial's own figures (`op: write` or `roundtrip`); `seconds` and `gbps` above are
    /// then its write section's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<WriteFigures>,
    /// A load's set-up figures (`op: load`); `seconds` and `gbps` above are then the whole
    /// load's, opening and registering included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadFigures>,
    /// The reading rank's latency percentiles per pass in a trial with writing ranks
    /// (`writers:`), which is judged by them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_latency: Option<crate::cost::PassLatencies>,
    /// A trial of several rounds (`rounds:`): the measured passes of each round's worker, in
    /// the order of `seconds`; empty for a trial of one worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<u32>,
}

/// What a writing trial measures besides its write section, per measured pass in the order of
/// `Measurement::seconds`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteFigures {
    /// `fsync` of every written file after the writes: durability's cost, apart from the
    /// write throughput (the page cache can absorb a write that the disk has not seen).
    pub fsync_seconds: Vec<f64>,
    /// Seconds of the independent `O_DIRECT` read that verified the files on the disk (the
    /// check of its bytes is in `verify_seconds`).
    pub verify_read_seconds: Vec<f64>,
    /// `roundtrip`: the read back through the reader under test, after the pages were dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_back_seconds: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_back_gbps: Vec<f64>,
}

/// What a load (`op: load`) spent before its bytes arrived, per measured pass in the order of
/// `Measurement::seconds`: the costs a GB/s over the read calls leaves out, and what a model
/// load's user waits for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadFigures {
    /// Opening every file, and registering it with cuFile where the reader does
    /// (`cuFileHandleRegister`).
    pub open_seconds: Vec<f64>,
    /// `cuFileBufRegister` of the destination; empty where the reader registers none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub register_seconds: Vec<f64>,
    /// From the load's start (the first open) to the first read call's bytes in the
    /// destination.
    pub first_byte_seconds: Vec<f64>,
}

/// The first pass's preparation, timed into the start-up by the worker (the pass cannot start
/// without it) but no part of starting: clearing the destination, which for a 4 GiB host buffer
/// takes seconds, and waiting for the page cache drop that runs beside it.
pub const DROPPED_PHASE: &str = "page cache dropped";
pub const CLEARED_PHASE: &str = "destination cleared";
/// A writing trial's first pass: its files created where absent and blanked.
pub const BLANKED_PHASE: &str = "files blanked";
/// The wait for the previous trial's worker to be gone ([`crate::protocol::RELEASED`]): neither
/// start-up nor preparation, but that worker's exit, which this one's start-up did not hide.
pub const HELD_PHASE: &str = "held for the previous worker's exit";
/// Of a worker started ahead, its start-up and hold before its trial's time began: they ran
/// within the previous trial's time (beside its I/O), so they are neither start-up nor exit of
/// this one ([`Measurement::started_beside_previous`]).
pub const BESIDE_PREVIOUS_PHASE: &str = "started beside the previous trial";

/// Peak memory of a worker over its trial: what bounds the file sizes a runner can read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryPeak {
    /// Peak resident set of the worker process (`VmHWM`).
    pub host_rss_bytes: Option<u64>,
    /// Peak GPU memory in use (total − free, sampled after allocation and after each window),
    /// which includes other processes' use of the same GPU (the next trial's worker, where it
    /// starts up beside this one, among them); `None` for host readers.
    pub device_bytes: Option<u64>,
}

impl MemoryPeak {
    /// The larger of each figure (the peak of a trial over several workers).
    pub fn max(self, other: MemoryPeak) -> MemoryPeak {
        let max = |a: Option<u64>, b: Option<u64>| a.max(b);
        MemoryPeak {
            host_rss_bytes: max(self.host_rss_bytes, other.host_rss_bytes),
            device_bytes: max(self.device_bytes, other.device_bytes),
        }
    }
}

impl Measurement {
    /// A measurement of `files` before anything was measured: no pass, the path unknown, the
    /// bytes not checked, no evidence. Workers fill it in as they go.
    pub fn unmeasured(files: Vec<PlannedFile>, bytes_per_repetition: u64) -> Measurement {
        Measurement {
            files,
            bytes_per_repetition,
            warmup_seconds: Vec::new(),
            seconds: Vec::new(),
            gbps: Vec::new(),
            median_gbps: None,
            path: crate::path::Path::Unknown,
            path_evidence: None,
            integrity: IntegrityResult::not_checked(crate::scenario::Integrity::None),
            resident_after_drop: None,
            verify_seconds: 0.0,
            total_seconds: 0.0,
            startup_seconds: None,
            answered_unix_ns: None,
            setup: Vec::new(),
            preparation_seconds: None,
            gpu: None,
            cufile: None,
            kvikio: None,
            torch: None,
            per_gpu: Vec::new(),
            costs: Vec::new(),
            latency: None,
            libcufile: None,
            window: None,
            memory: None,
            write: None,
            rounds: Vec::new(),
            load: None,
            read_latency: None,
        }
    }

    /// Counts untimed preparation after the start-up ([`Measurement::preparation_seconds`]).
    pub fn add_preparation(&mut self, time: std::time::Duration) {
        *self.preparation_seconds.get_or_insert(0.0) += time.as_secs_f64();
    }

    /// `(start-up, first-pass preparation)` in seconds: the start-up to the first byte without
    /// the phases of [`DROPPED_PHASE`], [`CLEARED_PHASE`] and [`BLANKED_PHASE`], and those phases;
    /// the start-up is also without [`HELD_PHASE`] ([`Measurement::held_seconds`]) and
    /// [`BESIDE_PREVIOUS_PHASE`].
    pub fn startup_split(&self) -> Option<(f64, f64)> {
        let total = self.startup_seconds?;
        let preparation = self.phases(&[DROPPED_PHASE, CLEARED_PHASE, BLANKED_PHASE]);
        let elsewhere = self.held_seconds() + self.beside_previous_seconds();
        Some(((total - preparation - elsewhere).max(0.0), preparation))
    }

    /// Of the start-up, what ran within the previous trial's time ([`BESIDE_PREVIOUS_PHASE`]).
    pub fn beside_previous_seconds(&self) -> f64 {
        self.phases(&[BESIDE_PREVIOUS_PHASE])
    }

    /// A worker started ahead whose trial's time began `seconds` after the worker started: that
    /// much of its start-up, and then of its hold, ran within the previous trial's time. It
    /// moves out of both into [`BESIDE_PREVIOUS_PHASE`]: a worker starts up, then holds, then
    /// prepares its first pass ([`crate::protocol::RELEASED`]).
    pub fn started_beside_previous(&mut self, seconds: f64) {
        let Some((startup, _)) = self.startup_split() else {
            return;
        };
        let of_startup = seconds.clamp(0.0, startup);
        let of_hold = (seconds - of_startup).clamp(0.0, self.held_seconds());
        if let Some((_, held)) = self
            .setup
            .iter_mut()
            .rfind(|(phase, _)| phase == HELD_PHASE)
        {
            *held -= of_hold;
        }
        if of_startup + of_hold > 0.0 {
            let phase = (BESIDE_PREVIOUS_PHASE.to_string(), of_startup + of_hold);
            self.setup.push(phase);
        }
    }

    /// How long the worker waited, ready, for the previous trial's worker to exit.
    pub fn held_seconds(&self) -> f64 {
        self.phases(&[HELD_PHASE])
    }

    fn phases(&self, names: &[&str]) -> f64 {
        self.setup
            .iter()
            .filter(|(phase, _)| names.contains(&phase.as_str()))
            .map(|(_, seconds)| seconds)
            .sum()
    }

    /// `4 ms + 0.2 s first-pass preparation` (or `4 ms` when there was none to speak of), with
    /// what ran beside the previous trial, if any: `4 ms (1.2 s more beside the previous trial)`.
    pub fn startup_text(&self) -> Option<String> {
        let (startup, preparation) = self.startup_split()?;
        Some(startup_text(
            startup,
            self.beside_previous_seconds(),
            preparation,
        ))
    }

    /// CPU seconds per GiB of the measured passes that have the figure.
    pub fn cpu_per_gib(&self) -> Vec<f64> {
        crate::cost::cpu_per_gib(&self.costs)
    }

    /// Median read calls per second of the measured passes.
    pub fn median_iops(&self) -> Option<f64> {
        let iops: Vec<f64> = self.costs.iter().map(|c| c.iops).collect();
        (!iops.is_empty()).then(|| crate::numbers::median(&iops))
    }

    /// `CPU 0.41 s/GiB, 310 IOPS, p50 3.1 ms p99 9.8 ms`: the cost beside a trial's speed; empty
    /// when nothing was recorded.
    pub fn cost_line(&self) -> String {
        let mut parts = Vec::new();
        let cpu = self.cpu_per_gib();
        if !cpu.is_empty() {
            parts.push(format!("CPU {:.3} s/GiB", crate::numbers::median(&cpu)));
        }
        if let Some(iops) = self.median_iops() {
            parts.push(format!("{} IOPS", crate::cost::format_iops(iops)));
        }
        if let Some(l) = &self.latency {
            match (l.p50_us, l.p99_us) {
                (Some(p50), Some(p99)) => parts.push(format!(
                    "p50 {} p99 {}",
                    crate::cost::format_micros(p50),
                    crate::cost::format_micros(p99)
                )),
                _ => parts.push(format!("mean {}", crate::cost::format_micros(l.mean_us))),
            }
        }
        parts.join(", ")
    }
}

/// A libcufile as loaded: its real path (symlinks resolved) and `major.minor` version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadedCufile {
    pub path: PathBuf,
    /// `major.minor` from `cuFileGetVersion`.
    pub version: String,
}

/// One GPU's share of a trial over several GPUs: its worker's measurement (throughput, cuFile
/// counters, path verdict, integrity of its shard), and how it was judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuShardResult {
    pub gpu: u32,
    /// Its rank in a trial with `ranks:` (several workers on `gpu`); `None` in a trial over
    /// several GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Its rank's reader, where the trial's ranks name theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<crate::scenario::Reader>,
    /// Its op where it is not the trial's: `roundtrip` for a rank that writes (`writers:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<crate::scenario::Op>,
    pub status: Status,
    pub reason: Option<String>,
    pub details: Option<String>,
    pub measurement: Option<Measurement>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Its worker, in `<trial>/gpu<N>` (`<trial>/rank<N>`).
    pub worker: Option<WorkerRun>,
}

impl GpuShardResult {
    /// `GPU 1`, or `rank 2`, with what sets the rank apart: `rank 2 (kvikio)` where the ranks
    /// name their readers, `rank 3 (roundtrip)` for a writing rank.
    pub fn label(&self) -> String {
        let Some(rank) = self.rank else {
            return format!("GPU {}", self.gpu);
        };
        let apart: Vec<&str> = [self.reader.map(|r| r.name()), self.op.map(|op| op.name())]
            .into_iter()
            .flatten()
            .collect();
        match apart.is_empty() {
            true => format!("rank {rank}"),
            false => format!("rank {rank} ({})", apart.join(", ")),
        }
    }
}

/// `GPUs 0, 1, 3`, or `ranks 0, 1, 2 on GPU 0`.
pub fn workers<'a>(shards: impl IntoIterator<Item = &'a GpuShardResult>) -> String {
    let shards: Vec<&GpuShardResult> = shards.into_iter().collect();
    let joined = |numbers: &mut dyn Iterator<Item = u32>| {
        numbers
            .map(|number| number.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match shards.first() {
        Some(first) if first.rank.is_some() => format!(
            "ranks {} on GPU {}",
            joined(&mut shards.iter().filter_map(|shard| shard.rank)),
            first.gpu
        ),
        _ => format!("GPUs {}", joined(&mut shards.iter().map(|shard| shard.gpu))),
    }
}

/// cuFile's own account of a trial: which library, how its driver runs, and its counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CufileEvidence {
    pub library: PathBuf,
    pub version: String,
    /// Every libcufile mapped into the worker; more than one means two cuFile drivers.
    pub loaded_copies: Vec<PathBuf>,
    pub properties: Option<DriverProperties>,
    /// Counters over the whole trial (warmup and measured passes).
    pub stats: Option<Stats>,
    /// Counters over the measured passes of a reading trial only: cuFile's own count and mean
    /// latency of the very calls whose latency the gate measured, beside the gate's figures.
    #[serde(default)]
    pub measured_stats: Option<Stats>,
    /// Why there are no counters, when there are none.
    pub stats_unavailable: Option<String>,
    /// Bytes the trial asked cuFile to read (passes × plan), to check the counters against.
    pub requested_bytes: u64,
}

/// KvikIO's own account of a trial (from inside the Python worker).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KvikioEvidence {
    pub kvikio_version: String,
    pub cupy_version: String,
    pub python: String,
    /// `kvikio.defaults.get(...)` as the trial ran: compat_mode, num_threads, task_size, ...
    pub settings: std::collections::BTreeMap<String, serde_json::Value>,
    /// `SummaryMonitor().get().by_backend` over all passes.
    pub backends: crate::evidence::KvikioBackends,
    /// KvikIO's own throughput of the measured passes (`busy_bytes_per_sec`), GB/s, to check the
    /// gate's timing against.
    pub own_gbps: Option<f64>,
    /// The gate's throughput over the same passes, aggregated as KvikIO does (bytes over summed
    /// time), for the comparison with `own_gbps`.
    #[serde(default)]
    pub gate_aggregate_gbps: Option<f64>,
    /// The largest fraction of a file still in the page cache after a cold drop (`mincore`), as
    /// the measurement's `resident_after_drop`; `None` where nothing was dropped.
    pub cached_after_drop: Option<f64>,
    /// `kvikio_api: async`: whether KvikIO's `raw_read_async` (`raw_write_async`) could use
    /// cuFile's stream API or falls back to a stream synchronisation and a synchronous read
    /// (write), and why, in words (KvikIO does not report it: the worker infers it from KvikIO's
    /// own rules).
    #[serde(default)]
    pub async_path: Option<String>,
}

/// The PyTorch that ran a `torch` trial (from inside the Python worker). Its `GdsFile` calls
/// cuFile with no POSIX path of its own, so the path verdict rests on cuFile's counters; these
/// say which build made the calls, for the baseline's provenance and a changed result's cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TorchEvidence {
    /// `torch.__version__`, e.g. `2.11.0+cu130`.
    pub torch_version: String,
    /// `torch.version.cuda`: the CUDA the build targets.
    pub cuda_version: Option<String>,
    pub cupy_version: String,
    pub python: String,
    /// The `GdsFile` methods the trial called (`load_storage`, `save_storage`), with the buffer
    /// registration (`gds_register_buffer`) when `buffer: registered`.
    pub calls: Vec<String>,
}

impl TrialRecord {
    pub fn passed(spec: TrialSpec, measurement: Measurement) -> TrialRecord {
        TrialRecord {
            name: spec.name.clone(),
            status: Outcome::Passed,
            checks: Status::Passed,
            reason: None,
            details: None,
            spec,
            measurement: Some(measurement),
            warnings: Vec::new(),
            worker: None,
            confirmations: Vec::new(),
            runner_checks: Vec::new(),
            wall_seconds: None,
            limitation: None,
            measured_seconds: None,
            interrupted_by: None,
        }
    }

    pub fn ignored(spec: TrialSpec, reason: String) -> TrialRecord {
        TrialRecord {
            name: spec.name.clone(),
            status: Outcome::Ignored,
            checks: Status::Ignored,
            reason: Some(reason),
            details: None,
            spec,
            measurement: None,
            warnings: Vec::new(),
            worker: None,
            confirmations: Vec::new(),
            runner_checks: Vec::new(),
            wall_seconds: None,
            limitation: None,
            measured_seconds: None,
            interrupted_by: None,
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
            status: Outcome::Failed,
            checks: Status::Failed,
            reason: Some(reason),
            details: Some(details),
            spec,
            measurement,
            warnings: Vec::new(),
            worker: None,
            confirmations: Vec::new(),
            runner_checks: Vec::new(),
            wall_seconds: None,
            limitation: None,
            measured_seconds: None,
            interrupted_by: None,
        }
    }

    /// Fails a trial its own checks had passed: its checks and its outcome both say so.
    pub fn fail(&mut self, reason: String, details: String) {
        self.checks = Status::Failed;
        self.status = Outcome::Failed;
        self.reason = Some(reason);
        self.details = Some(details);
    }

    /// Outcome `limited`: the runner's recorded limitation it failed for, in one line.
    pub fn limited_line(&self) -> Option<String> {
        Some(format!(
            "limited by this runner, as recorded: {}",
            self.limitation.as_deref()?
        ))
    }

    /// `4.12 GB/s, host, checksum 0x…`: the line shown next to `ok`, its rates in `rate`.
    pub fn summary(&self, rate: crate::units::Rate) -> String {
        let Some(m) = &self.measurement else {
            return self.reason.clone().unwrap_or_default();
        };
        let checksum = m.integrity.checksum.map_or_else(
            || "not verified".into(),
            |c| format!("checksum {}", crate::hex::format(c)),
        );
        let speed = m.median_gbps.map_or_else(
            || "no measured pass".into(),
            |g| format!("{} median of {}", rate.rate(g), m.gbps.len()),
        );
        let startup = m
            .startup_text()
            .map_or_else(String::new, |text| format!(", start-up {text}"));
        let gpus = if m.per_gpu.is_empty() {
            String::new()
        } else {
            let speed = |shard: &GpuShardResult| shard.measurement.as_ref()?.median_gbps;
            let each: Vec<String> = m
                .per_gpu
                .iter()
                .map(|shard| {
                    let shown = speed(shard).map_or_else(|| "-".into(), |g| rate.number(g, 2));
                    format!("{} {shown}", shard.label())
                })
                .collect();
            let slowest = m
                .per_gpu
                .iter()
                .filter(|shard| speed(shard).is_some())
                .min_by(|a, b| speed(a).partial_cmp(&speed(b)).unwrap_or(Ordering::Equal))
                .filter(|_| m.per_gpu.len() > 1)
                .map_or_else(String::new, |shard| format!("; slowest {}", shard.label()));
            let workers = match m.per_gpu[0].rank {
                Some(_) => "ranks",
                None => "GPUs",
            };
            format!(
                " over {} {workers} ({}{slowest})",
                m.per_gpu.len(),
                each.join(", ")
            )
        };
        let cost = m.cost_line();
        let cost = if cost.is_empty() {
            cost
        } else {
            format!("; {cost}")
        };
        let write = m
            .write
            .as_ref()
            .map_or_else(String::new, |write| write.line(rate));
        let load = m.load.as_ref().map_or_else(String::new, LoadFigures::line);
        format!(
            "{speed}{gpus}{write}{load}, path {}, {checksum}{startup}{cost}",
            m.path
        )
    }
}

impl WriteFigures {
    /// `, written; fsync 12 ms median` and for a roundtrip `, read back 1.23 GB/s median`: what
    /// the console line adds for a writing trial (its GB/s are the writes').
    pub fn line(&self, rate: crate::units::Rate) -> String {
        let median = |values: &[f64]| (!values.is_empty()).then(|| crate::numbers::median(values));
        let mut line = String::from(" written");
        if let Some(fsync) = median(&self.fsync_seconds) {
            line.push_str(&format!(", fsync {:.0} ms median", fsync * 1e3));
        }
        if let Some(read_back) = median(&self.read_back_gbps) {
            line.push_str(&format!(", read back {} median", rate.rate(read_back)));
        }
        line
    }
}

/// One set-up step of a load, as judged against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LoadStep {
    FirstByte,
    Open,
    Register,
}

impl LoadStep {
    /// In the order a trial's line shows them: the first byte, which sums up the others and the
    /// first read call, then the steps.
    pub const ALL: [LoadStep; 3] = [LoadStep::FirstByte, LoadStep::Open, LoadStep::Register];

    pub fn name(self) -> &'static str {
        match self {
            LoadStep::FirstByte => "first byte",
            LoadStep::Open => "open",
            LoadStep::Register => "buffer registration",
        }
    }
}

impl LoadFigures {
    /// The step's seconds, one per measured pass.
    pub fn of(&self, step: LoadStep) -> &[f64] {
        match step {
            LoadStep::FirstByte => &self.first_byte_seconds,
            LoadStep::Open => &self.open_seconds,
            LoadStep::Register => &self.register_seconds,
        }
    }

    /// ` loaded, first byte 4.1 ms, open 1.2 ms, buffer registration 310 µs (medians)`: what the
    /// console line adds for a load (its GB/s are the whole loads').
    pub fn line(&self) -> String {
        let median = |values: &[f64]| (!values.is_empty()).then(|| crate::numbers::median(values));
        let mut line = String::from(" loaded");
        for step in LoadStep::ALL {
            if let Some(seconds) = median(self.of(step)) {
                line.push_str(&format!(", {} {}", step.name(), short_time(seconds)));
            }
        }
        line.push_str(" (medians)");
        line
    }
}

/// `310 µs`, `4.1 ms`, `1.25 s`: a set-up step's time, to two or three figures.
pub fn short_time(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{:.0} µs", seconds * 1e6)
    } else if seconds < 1.0 {
        format!("{:.1} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// `4 ms (1.2 s more beside the previous trial) + 0.2 s first-pass preparation`; the time beside
/// and the preparation left out below half a millisecond.
fn startup_text(startup: f64, beside: f64, preparation: f64) -> String {
    let time = |s: f64| {
        if s < 1.0 {
            format!("{:.0} ms", s * 1e3)
        } else {
            format!("{s:.1} s")
        }
    };
    let mut text = time(startup);
    if beside >= 0.0005 {
        text += &format!(" ({} more beside the previous trial)", time(beside));
    }
    if preparation >= 0.0005 {
        text += &format!(" + {} first-pass preparation", time(preparation));
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn start_up_and_first_pass_preparation_are_told_apart() {
        assert_eq!(
            super::startup_text(0.004, 0.0, 0.2),
            "4 ms + 200 ms first-pass preparation"
        );
        assert_eq!(
            super::startup_text(0.03, 0.0, 6.2),
            "30 ms + 6.2 s first-pass preparation"
        );
        assert_eq!(super::startup_text(1.25, 0.0, 0.0001), "1.2 s");
        assert_eq!(
            super::startup_text(0.0, 1.5, 0.002),
            "0 ms (1.5 s more beside the previous trial) + 2 ms first-pass preparation"
        );
    }

    /// A worker's phases as a worker started ahead reports them: 1.5 s of start-up, then held
    /// 2 s, then 0.1 s of preparation; its trial's time began `beside` after it started.
    fn started_ahead(beside: f64) -> super::Measurement {
        let mut m = super::Measurement::unmeasured(Vec::new(), 0);
        m.startup_seconds = Some(3.6);
        m.setup = vec![
            (super::HELD_PHASE.into(), 2.0),
            (super::DROPPED_PHASE.into(), 0.1),
        ];
        m.started_beside_previous(beside);
        m
    }

    #[test]
    fn a_start_beside_the_previous_trial_leaves_its_start_up_then_its_hold() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let m = started_ahead(1.0);
        let (startup, preparation) = m.startup_split().unwrap();
        assert!(close(startup, 0.5) && close(preparation, 0.1), "{startup}");
        assert!(close(m.held_seconds(), 2.0));
        assert!(close(m.beside_previous_seconds(), 1.0));
        // The previous trial ended after all of the start-up and part of the hold.
        let m = started_ahead(2.5);
        assert!(close(m.startup_split().unwrap().0, 0.0));
        assert!(close(m.held_seconds(), 1.0), "{}", m.held_seconds());
        assert!(close(m.beside_previous_seconds(), 2.5));
        // Never more than the start-up and the hold together.
        let m = started_ahead(10.0);
        assert!(close(m.held_seconds(), 0.0) && close(m.beside_previous_seconds(), 3.5));
    }
}
