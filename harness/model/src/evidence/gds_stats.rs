//! `gds_stats -p PID -l 3` text: the cuFile counters of a live process, as printed by NVIDIA's
//! tool. Parsed by `name=value` tokens, never by position, because fields come and go between
//! versions (`dr=`, `nvfs=`, `pcie p2pdma=` appear in newer builds); unknown fields are kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CufileGpuCounters, Token, clip, tokenize};
use crate::scenario::Op;

const MIB: u64 = 1 << 20;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GdsStatsError {
    #[error(
        "not `gds_stats` output: no `cuFile STATS VERSION` line and no `GPU <n> Read: ...` line (line 1 reads `{first_line}`); save what `gds_stats -p PID -l 3` prints while the process still runs"
    )]
    NotGdsStats { first_line: String },
    #[error(
        "the `gds_stats` output has no per-GPU read lines (`GPU <n> Read: n=... posix=...`) in its {lines} lines: it was printed below level 3, which does not say which path reads took; set `profile.cufile_stats: 3` in cufile.json and run `gds_stats -p PID -l 3`"
    )]
    NoPerGpuStats { lines: usize },
}

/// One `gds_stats -l 3` sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GdsStats {
    /// `cuFile STATS VERSION : 3` → `3`.
    pub version: Option<String>,
    /// GLOBAL STATS lines, `Total Read Size (MiB)` → `78193`, as printed.
    pub global: BTreeMap<String, String>,
    /// `PER_GPU STATS` lines, in GPU order.
    pub gpus: Vec<GdsGpu>,
    /// Lines that looked like stats but could not be read, with their line numbers.
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GdsGpu {
    pub gpu: u32,
    pub read: GdsReadStats,
    /// `BufRegister: n=8 err=0 free=0 MiB=8`.
    pub buf_register: BTreeMap<String, String>,
    /// `Write:` and any section a newer build adds, name → fields, as printed.
    pub other: BTreeMap<String, BTreeMap<String, String>>,
}

/// The `Read:` section of a per-GPU line. Fields the build did not print stay `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GdsReadStats {
    pub n: Option<u64>,
    pub posix: Option<u64>,
    pub nvfs: Option<u64>,
    /// `p2p=` or `pcie p2pdma=`.
    pub p2p: Option<u64>,
    pub dr: Option<u64>,
    pub unalign: Option<u64>,
    pub err: Option<u64>,
    pub mib: Option<u64>,
    /// `bw=`, GiB/s.
    pub bw: Option<f64>,
    /// `util(%)=`.
    pub util_percent: Option<f64>,
    /// Every other field, verbatim (`r_sparse`, `r_inline`, ...).
    pub other: BTreeMap<String, String>,
}

impl GdsStats {
    /// Parses the text; tolerates prompts, `. . .` elisions, truncation and unknown fields.
    pub fn parse(text: &str) -> Result<GdsStats, GdsStatsError> {
        let mut stats = GdsStats::default();
        let mut section = String::new();
        let mut saw_stats_header = false;
        let mut lines = 0;
        for (index, raw) in text.lines().enumerate() {
            lines = index + 1;
            let line = raw.trim();
            if let Some(rest) = strip_prefix_ignore_case(line, "cuFile STATS VERSION") {
                stats.version = Some(rest.trim_start_matches([' ', ':', '\t']).trim().to_string());
            } else if let Some(name) = section_header(line) {
                saw_stats_header |= name == "GLOBAL STATS" || name == "PER_GPU STATS";
                section = name;
            } else if starts_with_gpu(line) {
                if let Some(gpu) = parse_gpu_line(line, lines, &mut stats.warnings) {
                    match stats.gpus.iter_mut().find(|seen| seen.gpu == gpu.gpu) {
                        Some(seen) => {
                            stats.warnings.push(format!(
                                "line {lines}: GPU {} appears again; the later line is used",
                                gpu.gpu
                            ));
                            *seen = gpu;
                        }
                        None => stats.gpus.push(gpu),
                    }
                }
            } else if (section.is_empty() || section == "GLOBAL STATS")
                && let Some((name, value)) = line.split_once(':')
            {
                let (name, value) = (name.trim(), value.trim());
                if !name.is_empty() && !value.is_empty() && !name.contains('>') {
                    stats.global.insert(name.to_string(), value.to_string());
                }
            }
        }
        if stats.gpus.is_empty() {
            return Err(if stats.version.is_some() || saw_stats_header {
                GdsStatsError::NoPerGpuStats { lines }
            } else {
                GdsStatsError::NotGdsStats {
                    first_line: clip(text.lines().next().unwrap_or(""), 80),
                }
            });
        }
        stats.gpus.sort_by_key(|gpu| gpu.gpu);
        Ok(stats)
    }

    /// The per-GPU counters in the stats-API shape, so both sources are judged alike. Builds
    /// that print no `nvfs=` get `n − posix − p2p` as nvfs reads (see [`GdsGpu::nvfs_reads`]).
    pub fn counters(&self) -> Vec<CufileGpuCounters> {
        self.gpus.iter().map(GdsGpu::counters).collect()
    }

    /// [`GdsStats::counters`] of the direction `op` moved data in.
    pub fn counters_for(&self, op: Op) -> Vec<CufileGpuCounters> {
        self.gpus.iter().map(|gpu| gpu.counters_for(op)).collect()
    }

    /// True when some GPU that read anything printed no `nvfs=` (its nvfs count is inferred).
    pub fn nvfs_inferred(&self) -> bool {
        self.gpus
            .iter()
            .any(|gpu| gpu.read.n.unwrap_or(0) > 0 && gpu.read.nvfs.is_none())
    }

    /// Read errors: the larger of GLOBAL `Total Read Errors` and the per-GPU `err=` sum.
    pub fn read_errors(&self) -> u64 {
        let per_gpu = self.gpus.iter().fold(0u64, |sum, gpu| {
            sum.saturating_add(gpu.read.err.unwrap_or(0))
        });
        let global = self
            .global
            .get("Total Read Errors")
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(0);
        per_gpu.max(global)
    }

    /// `BufRegister: err=` summed over GPUs.
    pub fn buf_register_errors(&self) -> u64 {
        self.gpus.iter().fold(0u64, |sum, gpu| {
            let err = gpu
                .buf_register
                .get("err")
                .and_then(|v| v.parse::<u64>().ok());
            sum.saturating_add(err.unwrap_or(0))
        })
    }
}

impl GdsGpu {
    /// nvfs reads and whether they were inferred. Older builds print `n=` and `posix=` but no
    /// `nvfs=`: they predate P2PDMA, so a read that was not POSIX went through nvidia-fs. Without
    /// `posix=` nothing can be inferred and the reads stay unclassified.
    pub fn nvfs_reads(&self) -> Option<(u64, bool)> {
        nvfs_of(&self.read)
    }

    pub fn counters(&self) -> CufileGpuCounters {
        counters_of(self.gpu, &self.read)
    }

    /// The `Write:` section read like the `Read:` one (same field names in the tool's output).
    pub fn write_stats(&self) -> GdsReadStats {
        let mut write = GdsReadStats::default();
        let mut ignored = Vec::new();
        for (key, value) in self.other.get("Write").into_iter().flatten() {
            read_field(&mut write, key.clone(), value.clone(), 0, &mut ignored);
        }
        write
    }

    /// The counters of the direction `op` moved data in, shaped as the stats API's
    /// ([`CufileGpuCounters::from_api`]).
    pub fn counters_for(&self, op: Op) -> CufileGpuCounters {
        let writes = || counters_of(self.gpu, &self.write_stats());
        match op {
            Op::Read | Op::Load => self.counters(),
            Op::Write => writes(),
            Op::Roundtrip => self.counters().plus(&writes()),
        }
    }
}

fn nvfs_of(stats: &GdsReadStats) -> Option<(u64, bool)> {
    match (stats.nvfs, stats.posix) {
        (Some(nvfs), _) => Some((nvfs, false)),
        (None, Some(posix)) => Some((
            stats
                .n
                .unwrap_or(0)
                .saturating_sub(posix)
                .saturating_sub(stats.p2p.unwrap_or(0)),
            true,
        )),
        (None, None) => None,
    }
}

fn counters_of(gpu: u32, stats: &GdsReadStats) -> CufileGpuCounters {
    CufileGpuCounters {
        gpu,
        n_total_reads: stats.n.unwrap_or(0),
        n_nvfs_reads: nvfs_of(stats).map_or(0, |(nvfs, _)| nvfs),
        n_p2p_reads: stats.p2p.unwrap_or(0),
        n_posix_reads: stats.posix.unwrap_or(0),
        n_dr_reads: stats.dr.unwrap_or(0),
        n_unaligned_reads: stats.unalign.unwrap_or(0),
        n_reads_err: stats.err.unwrap_or(0),
        read_bytes: stats.mib.unwrap_or(0).saturating_mul(MIB),
    }
}

fn strip_prefix_ignore_case<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let head = line.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &line[prefix.len()..])
}

/// `GLOBAL STATS:`, `READ-WRITE SIZE HISTOGRAM :`, `PER_GPU STATS:` → the name.
fn section_header(line: &str) -> Option<String> {
    let name = line.strip_suffix(':')?.trim();
    let is_header = !name.is_empty()
        && name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || matches!(c, ' ' | '_' | '-'));
    is_header.then(|| name.to_string())
}

fn starts_with_gpu(line: &str) -> bool {
    line.get(..3).is_some_and(|head| head == "GPU")
}

/// `GPU 2 Read: bw=... n=... posix=... Write: ... BufRegister: ...`; `None` for GPU lines of other
/// sections (pool buffers, RDMA), which carry no `Read:`.
fn parse_gpu_line(line: &str, number: usize, warnings: &mut Vec<String>) -> Option<GdsGpu> {
    let tokens = tokenize(line);
    if !tokens
        .iter()
        .any(|token| matches!(token, Token::Section(name) if name == "Read"))
    {
        return None;
    }
    // `GPU 2 Read:`, `GPU 0(...) Read:` or `GPU2 Read:`: the index is the first digits after `GPU`.
    let after = line[3..].trim_start();
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    let Ok(index) = digits.parse::<u32>() else {
        warnings.push(format!(
            "line {number}: a `GPU ... Read:` line without a GPU number: `{}`",
            clip(line, 60)
        ));
        return None;
    };
    let mut gpu = GdsGpu {
        gpu: index,
        ..GdsGpu::default()
    };
    let mut section = String::new();
    for token in tokens {
        match token {
            Token::Section(name) => section = name,
            Token::Pair(key, value) => match section.as_str() {
                "Read" => read_field(&mut gpu.read, key, value, number, warnings),
                "BufRegister" => {
                    gpu.buf_register.insert(key, value);
                }
                _ => {
                    gpu.other
                        .entry(section.clone())
                        .or_default()
                        .insert(key, value);
                }
            },
        }
    }
    Some(gpu)
}

fn read_field(
    read: &mut GdsReadStats,
    key: String,
    value: String,
    line: usize,
    warnings: &mut Vec<String>,
) {
    let slot = match key.as_str() {
        "n" => &mut read.n,
        "posix" => &mut read.posix,
        "nvfs" => &mut read.nvfs,
        "p2p" | "p2pdma" | "pcie p2pdma" => &mut read.p2p,
        "dr" => &mut read.dr,
        "unalign" => &mut read.unalign,
        "err" => &mut read.err,
        "MiB" | "mib" => &mut read.mib,
        "bw" | "util(%)" => {
            let target = if key == "bw" {
                &mut read.bw
            } else {
                &mut read.util_percent
            };
            match value.parse::<f64>() {
                Ok(number) => *target = Some(number),
                Err(_) => {
                    read.other.insert(key, value);
                }
            }
            return;
        }
        _ => {
            read.other.insert(key, value);
            return;
        }
    };
    match value.parse::<u64>() {
        Ok(number) => *slot = Some(number),
        Err(_) => {
            warnings.push(format!(
                "line {line}: `{key}={}` in the Read section is not a count",
                clip(&value, 30)
            ));
            read.other.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{GdsStats, GdsStatsError};

    #[test]
    fn newer_fields_and_two_word_keys() {
        let text = "cuFile STATS VERSION : 4\nPER_GPU STATS:\n\
            GPU 0 Read: bw=5.6 util(%)=778 n=100 pcie p2pdma=10 nvfs=60 posix=30 unalign=0 dr=5 err=1 MiB=100 new=7 Write: n=0\n";
        let stats = GdsStats::parse(text).unwrap();
        let read = &stats.gpus[0].read;
        assert_eq!(
            (read.p2p, read.nvfs, read.posix),
            (Some(10), Some(60), Some(30))
        );
        assert_eq!(read.other.get("new").map(String::as_str), Some("7"));
        assert_eq!(stats.gpus[0].other["Write"]["n"], "0");
        let counters = stats.counters();
        assert_eq!(counters[0].n_nvfs_reads, 60);
        assert_eq!(counters[0].read_bytes, 100 << 20);
        assert!(!stats.nvfs_inferred());
    }

    #[test]
    fn old_builds_infer_nvfs_from_n_minus_posix() {
        let stats =
            GdsStats::parse("GPU 0  Read: bw=2.89 n=6711 posix=11 err=0 MiB=6711\n").unwrap();
        assert_eq!(stats.gpus[0].nvfs_reads(), Some((6700, true)));
        assert!(stats.nvfs_inferred());
    }

    #[test]
    fn a_bad_count_is_a_warning_not_a_panic() {
        let stats = GdsStats::parse("GPU 1 Read: n=x posix=0\n").unwrap();
        assert_eq!(stats.gpus[0].read.n, None);
        assert!(
            stats.warnings[0].starts_with("line 1: `n=x`"),
            "{:?}",
            stats.warnings
        );
    }

    #[test]
    fn below_level_3_says_how_to_get_level_3() {
        let text = "cuFile STATS VERSION : 3\nGLOBAL STATS:\nTotal Files: 8\n";
        let error = GdsStats::parse(text).unwrap_err();
        assert_eq!(error, GdsStatsError::NoPerGpuStats { lines: 3 });
        assert!(error.to_string().contains("gds_stats -p PID -l 3"));
        assert!(matches!(
            GdsStats::parse("hello\n"),
            Err(GdsStatsError::NotGdsStats { .. })
        ));
    }
}
