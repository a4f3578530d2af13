//! cuFile's read counters summed over GPUs, from the stats API or gds_stats, and how they read
//! as a claim (`cuFile: 256 posix reads, 0 nvfs`) and as a table line.

use std::collections::BTreeSet;

use super::{Path, Source};
use crate::evidence::{Bytes, CufileGpuCounters};

/// cuFile's read counters summed over GPUs, from one source.
#[derive(Clone, Debug)]
pub(super) struct Ops {
    pub(super) source: Source,
    pub(super) total: u64,
    pub(super) nvfs: u64,
    pub(super) p2p: u64,
    pub(super) posix: u64,
    pub(super) err: u64,
    pub(super) read_bytes: u64,
    pub(super) per_gpu: Vec<CufileGpuCounters>,
    /// gds_stats printed no `nvfs=`: nvfs is `n − posix`.
    pub(super) nvfs_inferred: bool,
    /// What the counters count: `reads`, `writes` (cuFile's write counters, for a writing
    /// trial) or `reads and writes` (a roundtrip's, added).
    pub(super) noun: &'static str,
}

impl Ops {
    pub(super) fn of(source: Source, counters: &[CufileGpuCounters]) -> Ops {
        let sum = |field: fn(&CufileGpuCounters) -> u64| {
            counters
                .iter()
                .fold(0u64, |sum, gpu| sum.saturating_add(field(gpu)))
        };
        Ops {
            source,
            total: sum(|g| g.n_total_reads),
            nvfs: sum(|g| g.n_nvfs_reads),
            p2p: sum(|g| g.n_p2p_reads),
            posix: sum(|g| g.n_posix_reads),
            err: sum(|g| g.n_reads_err),
            read_bytes: sum(|g| g.read_bytes),
            per_gpu: counters.to_vec(),
            nvfs_inferred: false,
            noun: "reads",
        }
    }

    pub(super) fn classified(&self) -> u64 {
        self.nvfs
            .saturating_add(self.p2p)
            .saturating_add(self.posix)
    }

    /// Reads in all: `n_total_reads`, or the classified ones if a build under-reports it.
    pub(super) fn reads(&self) -> u64 {
        self.total.max(self.classified())
    }

    /// Read counts per path; reads no counter classifies go to [`Path::Cufile`].
    pub(super) fn buckets(&self) -> [(Path, u64); 4] {
        [
            (Path::Nvfs, self.nvfs),
            (Path::P2p, self.p2p),
            (Path::CufilePosix, self.posix),
            (Path::Cufile, self.reads() - self.classified()),
        ]
    }

    pub(super) fn classes(&self) -> BTreeSet<Path> {
        self.buckets()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(path, _)| path)
            .collect()
    }

    /// `cuFile: 256 posix reads, 0 nvfs`: the largest count first, nvfs and posix always shown.
    pub(super) fn claim(&self) -> String {
        let who = self.source.label();
        if self.reads() == 0 {
            return format!("{who}: no {} counted", self.noun);
        }
        let mut parts = vec![("posix", self.posix), ("nvfs", self.nvfs)];
        if self.p2p > 0 {
            parts.push(("p2p", self.p2p));
        }
        parts.sort_by_key(|part| std::cmp::Reverse(part.1));
        let mut text = format!("{who}: {} {} {}", parts[0].1, parts[0].0, self.noun);
        for (name, n) in &parts[1..] {
            text.push_str(&format!(", {n} {name}"));
        }
        let unclassified = self.reads() - self.classified();
        if unclassified > 0 {
            text.push_str(&format!(", {unclassified} unclassified"));
        }
        if self.nvfs_inferred {
            text.push_str(" (nvfs = n − posix)");
        }
        text
    }

    pub(super) fn describe(&self) -> String {
        let busy: Vec<String> = self
            .per_gpu
            .iter()
            .filter(|g| g.n_total_reads > 0 || g.n_posix_reads > 0 || g.n_nvfs_reads > 0)
            .map(|g| {
                format!(
                    "GPU {}: {} {}: {} nvfs, {} p2p, {} posix, {} unaligned, {} dr, {} errors, {}",
                    g.gpu,
                    g.n_total_reads,
                    self.noun,
                    g.n_nvfs_reads,
                    g.n_p2p_reads,
                    g.n_posix_reads,
                    g.n_unaligned_reads,
                    g.n_dr_reads,
                    g.n_reads_err,
                    Bytes(g.read_bytes)
                )
            })
            .collect();
        let mut text = if busy.is_empty() {
            format!("no {} counted on {} GPU(s)", self.noun, self.per_gpu.len())
        } else {
            busy.join("; ")
        };
        if self.nvfs_inferred {
            text.push_str(" (this gds_stats prints no `nvfs=`: nvfs = n − posix)");
        }
        text
    }
}
