//! `cargo xtask gds-gate explain`: the path verdict and diagnosis from outputs someone saved by
//! hand on a host (`gds_stats -p PID -l 3`, `/proc/driver/nvidia-fs/stats`, cufile.log), judged
//! as a trial that expected GDS would be.

use std::fmt;

use crate::evidence::{CufileLogFindings, Evidence, GdsStats, NvfsEvidence, NvfsStats};
use crate::path::Path;
use crate::scenario::{ExpectedPath, Reader};
use crate::verdict::{PathJudgement, Source, judge_path};

/// What `explain` prints: the verdict, one line per GPU that read, the evidence and the diagnosis.
#[derive(Clone, Debug)]
pub struct ExplainOutput {
    pub judgement: PathJudgement,
    /// `GPU 2 read 78193 MiB with posix=0 → nvfs`, for each GPU that read.
    pub gpus: Vec<String>,
    /// Inputs that could not be read, and why.
    pub problems: Vec<String>,
}

/// Judges saved outputs (file contents; any may be missing) as one cuFile process that expected
/// GDS. A missing or unreadable input is reported, never read as "all zero".
pub fn explain(
    gds_stats: Option<&str>,
    nvfs_stats: Option<&str>,
    cufile_log: Option<&str>,
) -> ExplainOutput {
    explain_expecting(gds_stats, nvfs_stats, cufile_log, ExpectedPath::Gds)
}

/// As [`explain`], judged against `expected` instead of GDS (`explain --expect posix`).
pub fn explain_expecting(
    gds_stats: Option<&str>,
    nvfs_stats: Option<&str>,
    cufile_log: Option<&str>,
    expected: ExpectedPath,
) -> ExplainOutput {
    let mut problems = Vec::new();
    let mut gpus = Vec::new();
    let mut evidence = Evidence::new(Reader::Cufile, 0);
    if gds_stats.is_none() {
        problems.push("no --gds-stats: without cuFile's counters the path cannot be confirmed; save `gds_stats -p PID -l 3` while the process runs".into());
    }
    if let Some(text) = gds_stats {
        match GdsStats::parse(text) {
            Ok(stats) => {
                evidence.bytes_read = stats
                    .counters()
                    .iter()
                    .fold(0u64, |sum, gpu| sum.saturating_add(gpu.read_bytes));
                gpus = stats.gpus.iter().filter_map(gpu_line).collect();
                problems.extend(stats.warnings.iter().map(|w| format!("--gds-stats: {w}")));
                evidence.gds_stats = Some(stats);
            }
            Err(error) => problems.push(format!("--gds-stats: {error}")),
        }
    }
    if let Some(text) = nvfs_stats {
        match NvfsStats::parse(text) {
            Ok(stats) => {
                // The proc file exists only while the module is loaded.
                evidence.nvidia_fs_loaded = Some(true);
                evidence.nvfs = Some(NvfsEvidence::Delta(stats.since_load()));
            }
            Err(error) => problems.push(format!("--nvfs-stats: {error}")),
        }
    }
    if let Some(text) = cufile_log {
        evidence.cufile_log = Some(CufileLogFindings::scan(text));
    }
    ExplainOutput {
        judgement: judge_path(&evidence, expected, 0),
        gpus,
        problems,
    }
}

/// `GPU 2 read 78193 MiB with posix=0 → nvfs`; `None` for a GPU that read nothing.
fn gpu_line(gpu: &crate::evidence::GdsGpu) -> Option<String> {
    let read = &gpu.read;
    let n = read.n.unwrap_or(0);
    if n == 0 && read.mib.unwrap_or(0) == 0 {
        return None;
    }
    let mut fields = Vec::new();
    for (name, value) in [
        ("posix", read.posix),
        ("nvfs", read.nvfs),
        ("p2p", read.p2p),
    ] {
        if let Some(value) = value {
            fields.push(format!("{name}={value}"));
        }
    }
    let counters = gpu.counters();
    let kinds: Vec<Path> = [
        (Path::Nvfs, counters.n_nvfs_reads),
        (Path::P2p, counters.n_p2p_reads),
        (Path::CufilePosix, counters.n_posix_reads),
    ]
    .into_iter()
    .filter(|(_, count)| *count > 0)
    .map(|(path, _)| path)
    .collect();
    let path = match kinds.as_slice() {
        [] => format!("{} (no counter classifies the reads)", Path::Unknown),
        [one] => one.to_string(),
        _ => Path::Mixed.to_string(),
    };
    let with = if fields.is_empty() {
        "no path counters".to_string()
    } else {
        fields.join(", ")
    };
    let mib = read
        .mib
        .map_or_else(|| format!("{n} reads"), |mib| format!("{mib} MiB"));
    Some(format!("GPU {} read {mib} with {with} → {path}", gpu.gpu))
}

impl fmt::Display for ExplainOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let judgement = &self.judgement;
        writeln!(f, "verdict: {}", judgement.verdict)?;
        for gpu in &self.gpus {
            writeln!(f, "  {gpu}")?;
        }
        writeln!(f, "{}", judgement.summary)?;
        writeln!(f, "evidence:")?;
        let lines: Vec<_> = judgement
            .verdict
            .lines
            .iter()
            .filter(|line| line.source != Source::Reader)
            .collect();
        let width = lines
            .iter()
            .map(|line| line.source.label().len())
            .max()
            .unwrap_or(0);
        for line in lines {
            writeln!(f, "  {:width$}  {}", line.source.label(), line.said)?;
        }
        for note in &judgement.verdict.notes {
            writeln!(f, "  note: {note}")?;
        }
        if judgement.passed {
            writeln!(f, "diagnosis: the reads went through GPUDirect Storage")?;
        } else {
            for reason in &judgement.reasons {
                writeln!(f, "problem: {reason}")?;
            }
            if let (Some(cause), Some(fix)) = (&judgement.likely_cause, &judgement.fix) {
                writeln!(f, "likely cause: {cause}")?;
                writeln!(f, "fix: {fix}")?;
            }
            for other in &judgement.other_causes {
                writeln!(f, "also possible: {}", other.cause)?;
                writeln!(f, "  fix: {}", other.fix)?;
            }
        }
        for problem in &self.problems {
            writeln!(f, "input: {problem}")?;
        }
        Ok(())
    }
}
