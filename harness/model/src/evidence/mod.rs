//! What a trial's worker saw about the path its bytes took: KvikIO's per-backend totals, cuFile's
//! per-GPU counters, `gds_stats` text, nvidia-fs's proc counters and cufile.log lines. The workers
//! fill an [`Evidence`]; [`crate::verdict`] turns it into the path and the diagnosis.
//!
//! Every source is optional: a host without gds_stats or nvidia-fs still gets a verdict, and a
//! missing source is reported as missing rather than read as "all zero".

pub mod cufile_log;
pub mod gds_stats;
pub mod nvfs_stats;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::cufile_abi::GpuCounters;
use crate::scenario::{CompatMode, KvikioApi, Op, Reader};

pub use cufile_log::{CufileLogFindings, FindingKind, LogFinding};
pub use gds_stats::{GdsGpu, GdsReadStats, GdsStats, GdsStatsError};
pub use nvfs_stats::{NvfsReads, NvfsStats, NvfsStatsDelta, NvfsStatsError};

/// cuFile's level-3 per-GPU counters (`CUfilePerGpuStats_t`), as deltas over one trial, of the
/// direction the trial moved data in ([`CufileGpuCounters::from_api`]): a writing trial's
/// `n_posix_writes` land in `n_posix_reads`, and so on, so that one verdict judges both.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CufileGpuCounters {
    pub gpu: u32,
    pub n_total_reads: u64,
    /// Reads through the nvidia-fs kernel module: the GDS path.
    pub n_nvfs_reads: u64,
    /// Reads through PCIe P2PDMA: GDS without nvidia-fs.
    pub n_p2p_reads: u64,
    /// cuFile's compat mode: POSIX reads into host bounce buffers, then a copy.
    pub n_posix_reads: u64,
    /// Dynamic routing through another GPU's bounce buffer (a subset of the reads above).
    pub n_dr_reads: u64,
    pub n_unaligned_reads: u64,
    pub n_reads_err: u64,
    pub read_bytes: u64,
}

impl CufileGpuCounters {
    /// `self - earlier`, field by field; a counter that went backwards (a reset) gives 0.
    pub fn since(&self, earlier: &CufileGpuCounters) -> CufileGpuCounters {
        CufileGpuCounters {
            gpu: self.gpu,
            n_total_reads: self.n_total_reads.saturating_sub(earlier.n_total_reads),
            n_nvfs_reads: self.n_nvfs_reads.saturating_sub(earlier.n_nvfs_reads),
            n_p2p_reads: self.n_p2p_reads.saturating_sub(earlier.n_p2p_reads),
            n_posix_reads: self.n_posix_reads.saturating_sub(earlier.n_posix_reads),
            n_dr_reads: self.n_dr_reads.saturating_sub(earlier.n_dr_reads),
            n_unaligned_reads: self
                .n_unaligned_reads
                .saturating_sub(earlier.n_unaligned_reads),
            n_reads_err: self.n_reads_err.saturating_sub(earlier.n_reads_err),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
        }
    }
}

impl CufileGpuCounters {
    /// The counters of the direction `op` moved data in, from the stats API: reads for a read,
    /// writes for a write, both added for a roundtrip (whose writes and reads both went through
    /// the path under test). The verdict then judges them alike.
    pub fn from_api(g: &GpuCounters, op: Op) -> CufileGpuCounters {
        let reads = CufileGpuCounters {
            gpu: g.index,
            n_total_reads: g.n_total_reads,
            n_nvfs_reads: g.n_nvfs_reads,
            n_p2p_reads: g.n_p2p_reads,
            n_posix_reads: g.n_posix_reads,
            n_dr_reads: g.n_dr_reads,
            n_unaligned_reads: g.n_unaligned_reads,
            n_reads_err: g.n_reads_err,
            read_bytes: g.read_bytes,
        };
        let writes = CufileGpuCounters {
            gpu: g.index,
            n_total_reads: g.n_total_writes,
            n_nvfs_reads: g.n_nvfs_writes,
            n_p2p_reads: g.n_p2p_writes,
            n_posix_reads: g.n_posix_writes,
            n_dr_reads: g.n_dr_writes,
            n_unaligned_reads: g.n_unaligned_writes,
            n_reads_err: g.n_writes_err,
            read_bytes: g.writes_bytes,
        };
        match op {
            Op::Read | Op::Load => reads,
            Op::Write => writes,
            Op::Roundtrip => reads.plus(&writes),
        }
    }

    /// Field by field sum (saturating).
    pub fn plus(&self, other: &CufileGpuCounters) -> CufileGpuCounters {
        CufileGpuCounters {
            gpu: self.gpu,
            n_total_reads: self.n_total_reads.saturating_add(other.n_total_reads),
            n_nvfs_reads: self.n_nvfs_reads.saturating_add(other.n_nvfs_reads),
            n_p2p_reads: self.n_p2p_reads.saturating_add(other.n_p2p_reads),
            n_posix_reads: self.n_posix_reads.saturating_add(other.n_posix_reads),
            n_dr_reads: self.n_dr_reads.saturating_add(other.n_dr_reads),
            n_unaligned_reads: self
                .n_unaligned_reads
                .saturating_add(other.n_unaligned_reads),
            n_reads_err: self.n_reads_err.saturating_add(other.n_reads_err),
            read_bytes: self.read_bytes.saturating_add(other.read_bytes),
        }
    }
}

/// One backend of KvikIO's `SummaryMonitor().get().by_backend`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct BackendTotals {
    pub num_ops: u64,
    pub bytes_transferred: u64,
}

/// KvikIO's own account (≥ 26.10). `GDS` only means "handed to cuFile": cuFile may still have
/// read with POSIX (its compat mode), which only cuFile's counters show.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KvikioBackends {
    /// Keys as KvikIO spells them: `POSIX`, `GDS`, `MMAP`, ...
    pub by_backend: BTreeMap<String, BackendTotals>,
}

impl KvikioBackends {
    pub const GDS: &'static str = "GDS";

    /// Totals of the `GDS` backend (any spelling of the key).
    pub fn gds(&self) -> BackendTotals {
        self.by_backend
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(Self::GDS))
            .fold(BackendTotals::default(), |sum, (_, t)| add_totals(sum, *t))
    }

    /// Every backend but `GDS`: each of them reads through host memory.
    pub fn host_backends(&self) -> impl Iterator<Item = (&str, BackendTotals)> {
        self.by_backend
            .iter()
            .filter(|(name, _)| !name.eq_ignore_ascii_case(Self::GDS))
            .map(|(name, t)| (name.as_str(), *t))
    }

    pub fn total_bytes(&self) -> u64 {
        self.by_backend
            .values()
            .fold(0u64, |sum, t| sum.saturating_add(t.bytes_transferred))
    }
}

fn add_totals(a: BackendTotals, b: BackendTotals) -> BackendTotals {
    BackendTotals {
        num_ops: a.num_ops.saturating_add(b.num_ops),
        bytes_transferred: a.bytes_transferred.saturating_add(b.bytes_transferred),
    }
}

/// `/proc/driver/nvidia-fs/stats` over the trial, or why it could not be had.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NvfsEvidence {
    Delta(NvfsStatsDelta),
    /// E.g. "no /proc/driver/nvidia-fs/stats (nvidia-fs is not loaded)".
    Unavailable {
        note: String,
    },
}

/// Everything a worker knows about one trial's path. Sources it could not collect stay `None`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub reader: Reader,
    /// What the trial did: the cuFile counters are of that direction (`write`: cuFile's write
    /// counters), and the verdict says "writes" for them.
    #[serde(default)]
    pub op: Op,
    /// Bytes the reader delivered per repetition (what the verdict splits between paths).
    pub bytes_read: u64,
    #[serde(default)]
    pub kvikio: Option<KvikioBackends>,
    /// cuFile stats API (level 3), one entry per GPU, deltas over the trial.
    #[serde(default)]
    pub cufile: Option<Vec<CufileGpuCounters>>,
    /// `gds_stats -p PID -l 3` sampled from the worker after its reads.
    #[serde(default)]
    pub gds_stats: Option<GdsStats>,
    #[serde(default)]
    pub nvfs: Option<NvfsEvidence>,
    #[serde(default)]
    pub cufile_log: Option<CufileLogFindings>,
    /// `/sys/module/nvidia_fs` exists.
    #[serde(default)]
    pub nvidia_fs_loaded: Option<bool>,
    /// `/run/udev` exists where the worker ran: KvikIO AUTO tries cuFile only then.
    #[serde(default)]
    pub run_udev: Option<bool>,
    /// `KVIKIO_COMPAT_MODE` the worker ran with (kvikio reader).
    #[serde(default)]
    pub compat_mode: Option<CompatMode>,
    /// `KVIKIO_GDS_THRESHOLD` in bytes (kvikio reader).
    #[serde(default)]
    pub gds_threshold: Option<u64>,
    #[serde(default)]
    pub task_size: Option<u64>,
    /// The smallest read the reader issued (a chunk, or the file's tail task).
    #[serde(default)]
    pub smallest_read: Option<u64>,
    /// `kvikio_api: async`: whether KvikIO's async reads could use cuFile's stream API, in words.
    #[serde(default)]
    pub kvikio_async: Option<String>,
    /// The KvikIO call the trial moved its bytes with (kvikio reader). KvikIO's statistics do not
    /// count its stream-ordered calls (`async`) when they reach cuFile, so the verdict places
    /// the bytes it did not count by cuFile's counters.
    #[serde(default)]
    pub kvikio_api: Option<KvikioApi>,
    /// Whether the device buffer was `cuFileBufRegister`ed.
    #[serde(default)]
    pub buffer_registered: Option<bool>,
    /// `properties.allow_compat_mode` as the trial's cufile.json overlay set it (None: not set,
    /// cuFile's default `true`).
    #[serde(default)]
    pub allow_compat_mode: Option<bool>,
    /// The worker's CPU seconds (user + system) per GiB moved, median of the measured passes: a
    /// path through host memory costs a multiple of cuFile's (measured on the H200: posix 1.2–1.6,
    /// cuFile's own POSIX path 0.10–0.16 s/GiB), and the baseline compares it.
    #[serde(default)]
    pub cpu_seconds_per_gib: Option<f64>,
}

impl Evidence {
    /// Evidence with no sources yet: the worker fills in what it collected.
    pub fn new(reader: Reader, bytes_read: u64) -> Evidence {
        Evidence {
            reader,
            op: Op::Read,
            bytes_read,
            kvikio: None,
            cufile: None,
            gds_stats: None,
            nvfs: None,
            cufile_log: None,
            nvidia_fs_loaded: None,
            run_udev: None,
            compat_mode: None,
            gds_threshold: None,
            task_size: None,
            smallest_read: None,
            kvikio_async: None,
            kvikio_api: None,
            buffer_registered: None,
            cpu_seconds_per_gib: None,
            allow_compat_mode: None,
        }
    }
}

/// `1.00 GiB`, `16.0 KiB`, `512 B`: sizes in evidence tables, binary units like the suite files.
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match crate::units::binary_scale(self.0) {
            (_, "B") => write!(f, "{} B", self.0),
            (value, unit) => {
                let digits = if value >= 100.0 {
                    0
                } else if value >= 10.0 {
                    1
                } else {
                    2
                };
                write!(f, "{value:.digits$} {unit}")
            }
        }
    }
}

/// One `name=value` or `Section:` token of a stats line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    Section(String),
    Pair(String, String),
}

/// Splits a stats line into `Section:` markers and `name=value` pairs without relying on
/// positions, because gds_stats and nvidia-fs add fields between versions. Bare words before a
/// pair join its name (`pcie p2pdma=0` → `pcie p2pdma`); anything else (`...`, `:0/0`) is skipped.
pub(crate) fn tokenize(line: &str) -> Vec<Token> {
    const MAX_PREFIX_WORDS: usize = 3;
    let mut tokens = Vec::new();
    let mut prefix: Vec<&str> = Vec::new();
    for word in line.split_whitespace() {
        if let Some((name, value)) = word.split_once('=') {
            let mut key = prefix.join(" ");
            if !name.is_empty() {
                if !key.is_empty() {
                    key.push(' ');
                }
                key.push_str(name);
            }
            prefix.clear();
            if !key.is_empty() {
                tokens.push(Token::Pair(key, value.to_string()));
            }
        } else if let Some(name) = word.strip_suffix(':').filter(|name| is_word(name)) {
            prefix.clear();
            tokens.push(Token::Section(name.to_string()));
        } else if is_word(word) {
            if prefix.len() == MAX_PREFIX_WORDS {
                prefix.remove(0);
            }
            prefix.push(word);
        } else {
            prefix.clear();
        }
    }
    tokens
}

fn is_word(text: &str) -> bool {
    !text.is_empty()
        && text.chars().any(|c| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '(' | ')' | '%' | '/'))
}

/// A line cut to a length a table can show, on a character boundary.
pub(crate) fn clip(line: &str, max_chars: usize) -> String {
    let line = line.trim();
    match line.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Bytes, Token, tokenize};

    fn pair(k: &str, v: &str) -> Token {
        Token::Pair(k.into(), v.into())
    }

    #[test]
    fn tokens_keep_two_word_keys_and_sections() {
        let tokens =
            tokenize("GPU 0 Read: bw=5.6 util(%)=778 pcie p2pdma=0 ... nvfs=3 BufRegister: n=4");
        assert_eq!(
            tokens,
            vec![
                Token::Section("Read".into()),
                pair("bw", "5.6"),
                pair("util(%)", "778"),
                pair("pcie p2pdma", "0"),
                pair("nvfs", "3"),
                Token::Section("BufRegister".into()),
                pair("n", "4"),
            ]
        );
    }

    #[test]
    fn bytes_are_shown_in_binary_units() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(16 << 10).to_string(), "16.0 KiB");
        assert_eq!(Bytes(1 << 30).to_string(), "1.00 GiB");
        assert_eq!(Bytes(78193 << 20).to_string(), "76.4 GiB");
        assert_eq!(Bytes(u64::MAX).to_string(), "16.0 EiB");
    }
}
