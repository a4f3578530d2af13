//! Matrix expansion: a scenario with lists becomes one trial per combination.
//!
//! Axes that do not apply to a reader are dropped for it (`compat_mode` means nothing to the `posix`
//! reader), so no two trials of a scenario do the same thing. A trial is named
//! `suite::scenario[axis=value,...]`, listing only the axes the scenario varies.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::model::{
    BufferKind, Cache, CompatMode, ExpectedPath, GpuSet, Integrity, KvikioApi, Op, Pattern, Reader,
};
use super::size::ByteSize;
use super::{Scenario, Suite};

/// Everything one trial needs, fully resolved. It is also what a worker process receives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialSpec {
    pub name: String,
    pub suite: String,
    pub scenario: String,
    pub source_file: PathBuf,
    pub source_line: usize,
    pub files: FileSet,
    pub reader: Reader,
    /// Read (records of older gates have none), write or roundtrip.
    #[serde(default)]
    pub op: Op,
    /// Only for the `kvikio` reader.
    pub compat_mode: Option<CompatMode>,
    pub nthreads: u32,
    pub task_size: u64,
    pub gds_threshold: u64,
    pub bounce_buffer_size: u64,
    /// `cufile-batch`: batches in flight, `cufile-async`: streams (records of older gates have
    /// none: 1).
    #[serde(default = "one")]
    pub queue_depth: u32,
    /// `cufile-batch`: I/Os per batch.
    #[serde(default = "default_batch_size")]
    pub batch_size: u32,
    /// `kvikio`: `pread` (records of older gates have none) or `async`.
    #[serde(default)]
    pub kvikio_api: KvikioApi,
    pub cufile: BTreeMap<String, serde_json::Value>,
    pub pattern: Pattern,
    pub cache: Cache,
    pub warmup: u32,
    pub repetitions: u32,
    /// The measured passes split over this many workers, each started fresh in its own round
    /// of the run (records of older gates have none: 1).
    #[serde(default = "one")]
    pub rounds: u32,
    pub buffer: BufferKind,
    pub gpu: u32,
    /// `gpus:`: one worker per GPU, each reading its shard of the files at the same time (see
    /// [`crate::shard`] and the gate's multi-GPU launcher). `None`: one worker on `gpu`.
    #[serde(default)]
    pub gpus: Option<GpuSet>,
    /// `ranks:`: one worker per entry, each with this reader, reading its own files at the same
    /// time on `gpu` (see [`crate::shard`]). Empty: one worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<Reader>,
    /// `writers:`: the last this many ranks write their files' copies and read them back
    /// (`op: roundtrip`) while the others read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub writers: u32,
    /// Whole buffer, a window, or `auto` (resolved by the worker, which knows its memory).
    #[serde(default)]
    pub window: super::window_mode::WindowMode,
    pub expect: Expectations,
    /// Interpreter of the KvikIO worker: the suite's `python`, else `python3`
    /// (`GDS_GATE_PYTHON` overrides both when the trial runs).
    pub python: String,
    /// A missing python, kvikio or cupy fails the trial instead of ignoring it.
    pub require_kvikio: bool,
}

impl TrialSpec {
    /// Whether any of its workers writes (a writing rank counts).
    pub fn writes(&self) -> bool {
        self.op.writes() || self.writers > 0
    }

    /// Whether any of its workers reads into a GPU (a rank's reader counts).
    pub fn uses_gpu(&self) -> bool {
        self.reader.uses_gpu() || self.ranks.iter().any(|reader| reader.uses_gpu())
    }

    /// Warm-up and measured passes together, in a type they cannot overflow (a worker given
    /// `warmup: 4294967295, repetitions: 1` in 32 bits would run none).
    pub fn passes(&self) -> u64 {
        u64::from(self.warmup) + u64::from(self.repetitions)
    }

    /// What round `k` (from 0) of [`TrialSpec::rounds`] runs: the trial with its share of the
    /// measured passes (the first rounds take one more where they do not divide evenly) and its
    /// own warm-up, as every fresh worker needs. `None` past the last round.
    pub fn round(&self, k: u32) -> Option<TrialSpec> {
        let rounds = self.round_count();
        (k < rounds).then(|| TrialSpec {
            repetitions: passes_in_round(self.repetitions, rounds, k),
            rounds: 1,
            ..self.clone()
        })
    }

    /// The rounds the trial's passes are split over: [`TrialSpec::rounds`], at most one per
    /// measured pass.
    pub fn round_count(&self) -> u32 {
        self.rounds.clamp(1, self.repetitions.max(1))
    }
}

/// The passes of round `k` (from 0) when `passes` are split over `rounds` (1 or more): the first
/// rounds take one more where they do not divide evenly.
pub fn passes_in_round(passes: u32, rounds: u32, k: u32) -> u32 {
    passes / rounds + u32::from(k < passes % rounds)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileSet {
    /// `count` files of `size` bytes with seeds `seed`, `seed + 1`, ...
    Generated {
        size: u64,
        seed: u64,
        count: u32,
    },
    User {
        path: PathBuf,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Expectations {
    pub path: ExpectedPath,
    pub max_fallback_bytes: Option<u64>,
    pub integrity: Integrity,
    pub tolerance: f64,
    /// Allowed rise of CPU seconds per GiB (0.25 = 25% more CPU per GiB), judged like the
    /// throughput; absent in records of older gates.
    #[serde(default = "default_cpu_tolerance")]
    pub cpu_tolerance: f64,
    /// Allowed rise of a load's time to the first byte, opening and buffer registration (0.5 =
    /// 50% longer), judged like the throughput; absent in records of older gates.
    #[serde(default = "default_load_tolerance")]
    pub load_tolerance: f64,
    /// The allowed rise of a read-latency percentile of a trial with writing ranks.
    #[serde(default = "default_latency_tolerance")]
    pub latency_tolerance: f64,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn one() -> u32 {
    1
}

fn default_batch_size() -> u32 {
    super::defaults::BATCH_SIZE
}

fn default_cpu_tolerance() -> f64 {
    super::defaults::CPU_TOLERANCE
}

fn default_load_tolerance() -> f64 {
    super::defaults::LOAD_TOLERANCE
}

fn default_latency_tolerance() -> f64 {
    super::defaults::LATENCY_TOLERANCE
}

/// Every trial of every scenario of the suite, in file order.
pub fn expand(suite: &Suite) -> Vec<TrialSpec> {
    suite
        .scenarios
        .iter()
        .flat_map(|scenario| expand_scenario(suite, scenario))
        .collect()
}

/// How many trials `scenario` expands into, counted without expanding it (saturating), so that
/// a matrix of millions is refused before it is built.
pub(super) fn trial_count(scenario: &Scenario) -> u64 {
    scenario
        .readers
        .iter()
        .map(|&reader| {
            axes_for(reader, scenario)
                .iter()
                .fold(1, |product: u64, axis| {
                    product.saturating_mul(axis.len as u64)
                })
        })
        .fold(0, u64::saturating_add)
}

/// One matrix axis: its label in trial names, how many values it has in the scenario, and how to
/// apply value `i` to a trial (returning the value as shown in the name).
struct Axis<'a> {
    label: &'static str,
    len: usize,
    apply: Apply<'a>,
}

fn expand_scenario(suite_def: &Suite, scenario: &Scenario) -> Vec<TrialSpec> {
    let (suite, path) = (suite_def.name.as_str(), &suite_def.path);
    let mut trials = Vec::new();
    for &reader in &scenario.readers {
        let base = TrialSpec {
            name: String::new(),
            suite: suite.to_string(),
            scenario: scenario.name.clone(),
            source_file: path.to_path_buf(),
            source_line: scenario.line,
            files: scenario.files.clone(),
            reader,
            op: scenario.ops[0],
            compat_mode: None,
            nthreads: scenario.nthreads[0],
            task_size: scenario.task_sizes[0],
            gds_threshold: scenario.gds_thresholds[0],
            bounce_buffer_size: scenario.bounce_buffer_sizes[0],
            queue_depth: scenario.queue_depths[0],
            batch_size: scenario.batch_sizes[0],
            kvikio_api: scenario.kvikio_apis[0],
            cufile: scenario.cufile.clone(),
            pattern: scenario.pattern.clone(),
            cache: scenario.caches[0],
            warmup: scenario.warmup,
            repetitions: scenario.repetitions,
            rounds: scenario.rounds,
            buffer: scenario.buffers[0],
            gpu: scenario.gpus[0],
            gpus: scenario.gpu_set.clone(),
            ranks: scenario
                .ranks
                .as_ref()
                .map_or_else(Vec::new, |ranks| ranks.readers(reader)),
            writers: scenario.writers,
            window: scenario.windows[0],
            expect: scenario.expect.clone(),
            python: suite_def.python.clone().unwrap_or_else(|| "python3".into()),
            require_kvikio: suite_def.require_kvikio,
        };
        let axes = axes_for(reader, scenario);
        let mut odometer = vec![0; axes.len()];
        loop {
            let mut trial = base.clone();
            let mut shown = Vec::new();
            if scenario.readers.len() > 1 {
                shown.push(format!("reader={}", reader.name()));
            }
            for (axis, &index) in axes.iter().zip(&odometer) {
                let value = (axis.apply)(&mut trial, index);
                if axis.len > 1 {
                    shown.push(format!("{}={value}", axis.label));
                }
            }
            // Not an axis, but a different trial: always in the name (`gpus=all`, `gpus=0+1`).
            if let Some(set) = &trial.gpus {
                shown.push(format!("gpus={set}"));
            }
            if !trial.ranks.is_empty() {
                shown.push(format!("ranks={}", super::ranks::shown(&trial.ranks)));
            }
            if trial.writers > 0 {
                shown.push(format!("writers={}", trial.writers));
            }
            trial.name = if shown.is_empty() {
                format!("{suite}::{}", scenario.name)
            } else {
                format!("{suite}::{}[{}]", scenario.name, shown.join(","))
            };
            trials.push(trial);
            if !advance(&mut odometer, &axes) {
                break;
            }
        }
    }
    trials
}

/// Moves to the next combination; false after the last one.
fn advance(odometer: &mut [usize], axes: &[Axis<'_>]) -> bool {
    for position in (0..odometer.len()).rev() {
        odometer[position] += 1;
        if odometer[position] < axes[position].len {
            return true;
        }
        odometer[position] = 0;
    }
    false
}

type Apply<'a> = Box<dyn Fn(&mut TrialSpec, usize) -> String + 'a>;

fn axis<'a>(applies: bool, label: &'static str, len: usize, apply: Apply<'a>) -> Option<Axis<'a>> {
    applies.then_some(Axis { label, len, apply })
}

fn axes_for(reader: Reader, s: &Scenario) -> Vec<Axis<'_>> {
    let kvikio = reader == Reader::Kvikio;
    let batch = reader == Reader::CufileBatch;
    // KvikIO's async reads take a depth of streams; its preads have none, so a depth multiplies
    // only a scenario that reads with `async` alone.
    let kvikio_streams = kvikio && s.kvikio_apis.iter().all(|api| *api == KvikioApi::Async);
    [
        axis(
            true,
            "op",
            s.ops.len(),
            Box::new(|t, i| {
                t.op = s.ops[i];
                t.op.name().to_string()
            }),
        ),
        axis(
            kvikio,
            "compat",
            s.compat_modes.len(),
            Box::new(|t, i| {
                t.compat_mode = Some(s.compat_modes[i]);
                s.compat_modes[i].to_string()
            }),
        ),
        // PyTorch reads each segment with one `load_storage` call from one thread: no threads
        // and no task split of its own to vary.
        axis(
            !reader.queues() && reader != Reader::Torch,
            "nthreads",
            s.nthreads.len(),
            Box::new(|t, i| {
                t.nthreads = s.nthreads[i];
                t.nthreads.to_string()
            }),
        ),
        axis(
            reader != Reader::Torch,
            "task",
            s.task_sizes.len(),
            Box::new(|t, i| {
                t.task_size = s.task_sizes[i];
                ByteSize(t.task_size).to_string()
            }),
        ),
        axis(
            kvikio,
            "api",
            s.kvikio_apis.len(),
            Box::new(|t, i| {
                t.kvikio_api = s.kvikio_apis[i];
                t.kvikio_api.name().to_string()
            }),
        ),
        axis(
            reader.queues() || kvikio_streams,
            "depth",
            s.queue_depths.len(),
            Box::new(|t, i| {
                t.queue_depth = s.queue_depths[i];
                t.queue_depth.to_string()
            }),
        ),
        axis(
            batch,
            "batch",
            s.batch_sizes.len(),
            Box::new(|t, i| {
                t.batch_size = s.batch_sizes[i];
                t.batch_size.to_string()
            }),
        ),
        axis(
            kvikio,
            "threshold",
            s.gds_thresholds.len(),
            Box::new(|t, i| {
                t.gds_threshold = s.gds_thresholds[i];
                ByteSize(t.gds_threshold).to_string()
            }),
        ),
        axis(
            kvikio || reader == Reader::H2d,
            "bounce",
            s.bounce_buffer_sizes.len(),
            Box::new(|t, i| {
                t.bounce_buffer_size = s.bounce_buffer_sizes[i];
                ByteSize(t.bounce_buffer_size).to_string()
            }),
        ),
        axis(
            true,
            "cache",
            s.caches.len(),
            Box::new(|t, i| {
                t.cache = s.caches[i];
                format!("{:?}", t.cache).to_lowercase()
            }),
        ),
        axis(
            reader.uses_cufile(),
            "buffer",
            s.buffers.len(),
            Box::new(|t, i| {
                t.buffer = s.buffers[i];
                format!("{:?}", t.buffer).to_lowercase()
            }),
        ),
        axis(
            true,
            "window",
            s.windows.len(),
            Box::new(|t, i| {
                t.window = s.windows[i];
                t.window.to_string()
            }),
        ),
        axis(
            reader.uses_gpu(),
            "gpu",
            s.gpus.len(),
            Box::new(|t, i| {
                t.gpu = s.gpus[i];
                t.gpu.to_string()
            }),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}
