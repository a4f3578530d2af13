//! The YAML model of a suite file, exactly as written: every key optional where a default exists,
//! unknown keys rejected, lists accepted wherever a scalar is (a list is a matrix axis).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU32;
use std::path::PathBuf;

use serde::de::{self, IntoDeserializer};
use serde::{Deserialize, Deserializer, Serialize};

use super::size::{ByteSize, Fraction, PositiveSize};

/// A suite file. `defaults` and the scenarios are read as `D` and `S`: [`ScenarioFields`], or
/// [`de::IgnoredAny`] where a pass over a file with errors checks the other keys alone.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile<D = ScenarioFields, S = ScenarioFields> {
    /// Name used in trial names; defaults to the file stem.
    pub suite: Option<String>,
    pub description: Option<String>,
    /// Interpreter for the KvikIO worker.
    pub python: Option<String>,
    /// Fail KvikIO trials when python, kvikio or cupy is missing, instead of ignoring them.
    #[serde(default)]
    pub require_kvikio: bool,
    /// The wall time a run of this suite should fit (`5m`): `--budget` when not given.
    pub budget: Option<super::size::Budget>,
    #[serde(default)]
    pub defaults: D,
    pub scenarios: Vec<S>,
}

/// The keys of one scenario. `defaults` uses the same keys (except `name`), so a key means the same
/// thing wherever it appears.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub files: Option<Files>,
    pub reader: Option<OneOrMany<Reader>>,
    /// `read` (default), `write` or `roundtrip`.
    pub op: Option<OneOrMany<Op>>,
    pub compat_mode: Option<OneOrMany<CompatMode>>,
    pub nthreads: Option<OneOrMany<NonZeroU32>>,
    pub task_size: Option<OneOrMany<PositiveSize>>,
    pub gds_threshold: Option<OneOrMany<ByteSize>>,
    pub bounce_buffer_size: Option<OneOrMany<PositiveSize>>,
    /// `cufile-batch`: batches in flight at once; `cufile-async`: CUDA streams.
    pub queue_depth: Option<OneOrMany<NonZeroU32>>,
    /// `cufile-batch`: I/Os per `cuFileBatchIOSubmit`, at most cuFile's `properties.io_batchsize`.
    pub batch_size: Option<OneOrMany<NonZeroU32>>,
    /// `kvikio`: `pread` (default) or `async` (`raw_read_async`, or `raw_write_async` for a
    /// writing trial, on `queue_depth` CUDA streams).
    pub kvikio_api: Option<OneOrMany<KvikioApi>>,
    /// cufile.json overrides: a dotted JSON path (`execution.max_io_threads`) → value.
    pub cufile: Option<BTreeMap<String, serde_json::Value>>,
    /// `whole`, `{ chunks: SIZE }` or `{ random: {...} }`: a one-key map, not a YAML tag.
    #[serde(default, with = "yaml_serde::with::singleton_map")]
    pub pattern: Option<Pattern>,
    pub cache: Option<OneOrMany<Cache>>,
    pub warmup: Option<u32>,
    pub repetitions: Option<NonZeroU32>,
    /// The measured passes split over this many fresh workers, interleaved with the other
    /// trials' (see [`super::TrialSpec::round`]).
    pub rounds: Option<NonZeroU32>,
    pub buffer: Option<OneOrMany<BufferKind>>,
    pub gpu: Option<OneOrMany<u32>>,
    /// `whole`, `auto` or a window size such as `1GiB`: streaming reads (see [`crate::window`]).
    pub window: Option<OneOrMany<super::window_mode::WindowMode>>,
    /// `all` or a list of GPU indices: one trial over several GPUs at once (not a matrix axis).
    pub gpus: Option<GpuSet>,
    /// A number of ranks or each rank's reader: workers reading at once on one GPU.
    pub ranks: Option<super::Ranks>,
    /// Of the ranks, how many write (and read back) beside the others' reads.
    pub writers: Option<u32>,
    pub expect: Option<Expect>,
}

/// What a scenario reads: generated files (`size`, `seed`, `count`) or one existing file (`path`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Files {
    pub size: Option<PositiveSize>,
    pub seed: Option<u64>,
    pub count: Option<NonZeroU32>,
    pub path: Option<PathBuf>,
}

#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Reader {
    /// POSIX `pread` into host memory, KvikIO's task split: the CPU baseline.
    Posix,
    /// POSIX read into pinned host memory, then a copy to the GPU: what a fallback does.
    H2d,
    /// cuFile reads straight into GPU memory.
    Cufile,
    /// The real KvikIO, from Python.
    Kvikio,
    /// cuFile's batch API: the plan's tasks submitted `batch_size` at a time with
    /// `cuFileBatchIOSubmit`, `queue_depth` batches in flight.
    #[serde(rename = "cufile-batch")]
    CufileBatch,
    /// cuFile's stream-ordered API: every task enqueued with `cuFileReadAsync` (a writing trial:
    /// `cuFileWriteAsync`) on one of `queue_depth` registered CUDA streams, then the streams
    /// synchronised.
    #[serde(rename = "cufile-async")]
    CufileAsync,
    /// PyTorch's `torch.cuda.gds.GdsFile`: `load_storage` (a writing trial: `save_storage`) of
    /// each segment into a CUDA storage, from Python.
    Torch,
}

impl Reader {
    pub fn name(self) -> &'static str {
        match self {
            Reader::Posix => "posix",
            Reader::H2d => "h2d",
            Reader::Cufile => "cufile",
            Reader::Kvikio => "kvikio",
            Reader::CufileBatch => "cufile-batch",
            Reader::CufileAsync => "cufile-async",
            Reader::Torch => "torch",
        }
    }

    /// Whether the gate's own worker calls libcufile for this reader (KvikIO calls it itself).
    pub fn native_cufile(self) -> bool {
        matches!(
            self,
            Reader::Cufile | Reader::CufileBatch | Reader::CufileAsync
        )
    }

    /// Whether `queue_depth` applies: the readers that keep I/O in flight without threads.
    pub fn queues(self) -> bool {
        matches!(self, Reader::CufileBatch | Reader::CufileAsync)
    }

    /// Whether the bytes go through libcufile (natively, through KvikIO or through PyTorch), so
    /// that the trial gets a cufile.json overlay, a cuFile log and cuFile's counters.
    pub fn uses_cufile(self) -> bool {
        self.native_cufile() || self.python()
    }

    /// Whether the trial runs in the Python worker (KvikIO and PyTorch are Python libraries).
    pub fn python(self) -> bool {
        matches!(self, Reader::Kvikio | Reader::Torch)
    }

    /// Whether the reader can also write (`op: write` and `roundtrip`).
    pub fn writes(self) -> bool {
        self != Reader::CufileBatch
    }

    /// Whether the reader can run a load (`op: load`): open and register its files again every
    /// pass.
    pub fn loads(self) -> bool {
        matches!(
            self,
            Reader::Posix | Reader::H2d | Reader::Cufile | Reader::Kvikio | Reader::Torch
        )
    }

    pub fn uses_gpu(self) -> bool {
        !matches!(self, Reader::Posix)
    }
}

/// What a trial does with its files.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read the files into the reader's destination and verify them there.
    #[default]
    Read,
    /// Write the generator's bytes to a file of the trial's own through the path under test, then
    /// verify the file on disk with an independent `O_DIRECT` read.
    Write,
    /// Write as `write` does, drop the file's pages, read it back through the reader under test
    /// and verify what arrived.
    Roundtrip,
    /// Load the files as a model loader does: every pass opens and registers each file, registers
    /// the destination where the reader does, and reads the files whole; the pass's time is the
    /// load's, and the set-up steps and the time to the first byte are figures of their own.
    Load,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Roundtrip => "roundtrip",
            Op::Load => "load",
        }
    }

    /// Whether the trial writes a file (of its own, in the data dir).
    pub fn writes(self) -> bool {
        matches!(self, Op::Write | Op::Roundtrip)
    }

    /// What the trial did to its bytes, after a size: `1.00 GiB read`, `… written`, and for a
    /// roundtrip, whose bytes go through the path twice, `… written and read back`.
    pub fn moved(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "written",
            Op::Roundtrip => "written and read back",
            Op::Load => "loaded",
        }
    }

    /// One transfer of the trial, as a noun: `smallest read`, `write errors`.
    pub fn transfer(self) -> &'static str {
        match self {
            Op::Read | Op::Load => "read",
            Op::Write => "write",
            Op::Roundtrip => "write and read",
        }
    }

    /// Transfers of the trial, plural: `256 posix reads`, `no writes counted`.
    pub fn transfers(self) -> &'static str {
        match self {
            Op::Read | Op::Load => "reads",
            Op::Write => "writes",
            Op::Roundtrip => "reads and writes",
        }
    }
}

/// `KVIKIO_COMPAT_MODE`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum CompatMode {
    #[serde(alias = "on")]
    ON,
    #[serde(alias = "off")]
    OFF,
    #[serde(alias = "auto")]
    AUTO,
}

impl fmt::Display for CompatMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    /// The page cache is dropped before every repetition: the storage is measured.
    Cold,
    /// Files stay cached: the host path is measured.
    Warm,
}

/// Which KvikIO call the `kvikio` reader reads with.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum KvikioApi {
    /// `CuFile.pread`: KvikIO's thread pool, `task_size` tasks.
    #[default]
    Pread,
    /// `CuFile.raw_read_async` (writing: `raw_write_async`) on CUDA streams, one call per
    /// `task_size` task, checked with `IOFutureStream.check_bytes_done()` after the streams are
    /// synchronised.
    Async,
}

impl KvikioApi {
    pub fn name(self) -> &'static str {
        match self {
            KvikioApi::Pread => "pread",
            KvikioApi::Async => "async",
        }
    }
}

#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum BufferKind {
    /// `cuFileBufRegister`ed device buffer.
    Registered,
    Unregistered,
}

/// How a file is cut into reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Pattern {
    /// Each file in one read call (the reader splits it into tasks).
    Whole,
    /// Consecutive reads of this size cover each file.
    Chunks(PositiveSize),
    /// Reads at offsets drawn from a seed.
    Random(RandomReads),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RandomReads {
    pub size: PositiveSize,
    pub count: NonZeroU32,
    #[serde(default)]
    pub seed: u64,
    /// Offsets are multiples of this (4 KiB by default, what `O_DIRECT` wants).
    #[serde(default = "default_alignment")]
    pub align: PositiveSize,
}

impl RandomReads {
    /// How many aligned offsets a whole read fits at in a file of `file_size` bytes (at least
    /// `size`): the choices each read's offset is drawn from.
    pub fn offsets(&self, file_size: u64) -> u64 {
        file_size.saturating_sub(self.size.bytes()) / self.align.bytes() + 1
    }
}

fn default_alignment() -> PositiveSize {
    PositiveSize(ByteSize(4096))
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub path: Option<ExpectedPath>,
    pub max_fallback_bytes: Option<ByteSize>,
    pub integrity: Option<Integrity>,
    /// Allowed throughput drop against the baseline.
    pub tolerance: Option<Fraction>,
    /// Allowed rise of CPU seconds per GiB against the baseline.
    pub cpu_tolerance: Option<Fraction>,
    /// Allowed rise of a load's set-up steps (`op: load`) against the baseline.
    pub load_tolerance: Option<Fraction>,
    /// Allowed rise of a read-latency percentile beside writes (`writers:`).
    pub latency_tolerance: Option<Fraction>,
}

/// The path the bytes are expected to take (judged by the path verdict).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExpectedPath {
    Nvfs,
    P2p,
    /// nvfs or p2p.
    Gds,
    CufilePosix,
    KvikioPosix,
    Host,
    Bounce,
    Any,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Integrity {
    /// Regenerate every word and compare (generated files only).
    Exact,
    /// The position-keyed checksum against the file's.
    Checksum,
    /// Not verified (reported as such).
    None,
}

/// The GPUs one trial reads into at once (`gpus: all` or `gpus: [0, 1]`): one worker per GPU,
/// each reading its shard of the files concurrently. `all` is resolved when the trial runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GpuSet {
    /// Every GPU of the host the trial runs on.
    All,
    /// These GPU indices (CUDA ordinals), in this order.
    List(Vec<u32>),
}

impl fmt::Display for GpuSet {
    /// `all`, or the indices joined with `+` (`0+1`), as trial names show them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuSet::All => f.write_str("all"),
            GpuSet::List(gpus) => {
                let shown: Vec<String> = gpus.iter().map(u32::to_string).collect();
                f.write_str(&shown.join("+"))
            }
        }
    }
}

impl Serialize for GpuSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            GpuSet::All => serializer.serialize_str("all"),
            GpuSet::List(gpus) => gpus.serialize(serializer),
        }
    }
}

impl schemars::JsonSchema for GpuSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GpuSet".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`all`, or the GPU indices (CUDA ordinals) the trial reads into at once.",
            "anyOf": [
                { "const": "all" },
                { "type": "array", "items": { "type": "integer", "minimum": 0 }, "minItems": 1 }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for GpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = GpuSet;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`all` or a list of GPU indices such as `[0, 1]`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if v == "all" {
                    Ok(GpuSet::All)
                } else {
                    Err(E::custom(format!(
                        "`gpus: {v}`: expected `all` or a list of GPU indices such as `[0, 1]`"
                    )))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "`gpus: {v}`: expected `all` or a list of GPU indices such as `[0, 1]`; for one GPU write `gpu: {v}`"
                )))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut gpus = Vec::new();
                while let Some(gpu) = seq.next_element::<u32>()? {
                    gpus.push(gpu);
                }
                if gpus.is_empty() {
                    return Err(de::Error::custom(
                        "`gpus` is an empty list: expected `all` or at least one GPU index",
                    ));
                }
                Ok(GpuSet::List(gpus))
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

/// One value, or a list of values that makes a matrix axis.
#[derive(Clone, Debug, PartialEq)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<T>(PhantomData<T>);

        // Scalars are handed back to `T` so that its own error (with the position yaml_serde
        // attaches) is what the user sees, not "did not match any variant".
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for Visitor<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut values = Vec::new();
                while let Some(value) = seq.next_element()? {
                    values.push(value);
                }
                if values.is_empty() {
                    return Err(de::Error::custom(
                        "expected at least one value, found an empty list",
                    ));
                }
                Ok(OneOrMany(values))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|value| OneOrMany(vec![value]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|value| OneOrMany(vec![value]))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|value| OneOrMany(vec![value]))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|value| OneOrMany(vec![value]))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|value| OneOrMany(vec![value]))
            }
        }

        deserializer.deserialize_any(Visitor(PhantomData))
    }
}
