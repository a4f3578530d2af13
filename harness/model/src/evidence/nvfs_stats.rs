//! `/proc/driver/nvidia-fs/stats`: the nvidia-fs kernel module's system-wide counters.
//!
//! The format is `nvfs_stats_show()` in NVIDIA/gds-nvidia-fs `src/nvfs-stat.c`: a label, tabs,
//! then `: name=value ...`. The `Reads` line carries `n= ok= err= readMiB=` only while IO stats are
//! enabled (`/sys/module/nvidia_fs/parameters/rw_stats_enabled` = 1); otherwise it is
//! `Reads : err= io_state_err=` and nothing here says how many reads nvidia-fs did. Compat-mode and
//! P2PDMA reads are never counted here: only the nvfs path is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Token, clip, tokenize};

/// Why a delta has no read counts when IO stats are off, and how to turn them on.
pub const IO_STATS_DISABLED: &str = "nvidia-fs IO stats are disabled (`/sys/module/nvidia_fs/parameters/rw_stats_enabled` is 0), so its read counters stay empty; enable them with `echo 1 | sudo tee /sys/module/nvidia_fs/parameters/rw_stats_enabled`";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvfsStatsError {
    #[error(
        "not `/proc/driver/nvidia-fs/stats` output: no `NVFS statistics`, `NVFS Driver` or `Reads :` line (line 1 reads `{first_line}`); save `cat /proc/driver/nvidia-fs/stats` from the host that ran the reads"
    )]
    NotNvfsStats { first_line: String },
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvfsStats {
    pub gds_version: Option<String>,
    /// `NVFS statistics(ver: 4.0)` → `4.0`.
    pub stats_version: Option<String>,
    /// `NVFS Driver(version: 2.25.7)` → `2.25.7`.
    pub driver_version: Option<String>,
    /// `IO stats: Enabled|Disabled`.
    pub io_stats_enabled: Option<bool>,
    pub peer_io_stats_enabled: Option<bool>,
    /// The read counters, present only while IO stats are enabled.
    pub reads: Option<NvfsReads>,
    /// `err=` of the `Reads` line, printed in both forms.
    pub read_errors: Option<u64>,
    pub read_io_state_errors: Option<u64>,
    /// Every `Label : name=value ...` line, label → fields (`Mmap`, `Bar1-map`, `Ops`, ...).
    pub sections: BTreeMap<String, BTreeMap<String, String>>,
    pub gpus: Vec<NvfsGpu>,
}

/// `Reads : n= ok= err= readMiB=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvfsReads {
    pub n: u64,
    pub ok: u64,
    pub err: u64,
    pub read_mib: u64,
}

/// `GPU 0000:01:00.0  uuid:... : Registered_MiB=0 Cache_MiB=0 max_pinned_MiB=1`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvfsGpu {
    pub bdf: String,
    pub uuid: Option<String>,
    pub fields: BTreeMap<String, String>,
}

/// What nvidia-fs counted over a trial (or since it was loaded, from a single snapshot).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvfsStatsDelta {
    pub io_stats_enabled: Option<bool>,
    /// Reads nvidia-fs did, system-wide; `None` when IO stats are off or the counters reset.
    pub reads: Option<NvfsReads>,
    pub read_errors: Option<u64>,
    /// Counted since nvidia-fs was loaded (one snapshot), not over the trial alone.
    #[serde(default)]
    pub cumulative: bool,
    /// Why `reads` is missing, with the fix.
    pub note: Option<String>,
}

impl NvfsStats {
    pub fn parse(text: &str) -> Result<NvfsStats, NvfsStatsError> {
        let mut stats = NvfsStats::default();
        // Where a wrapped continuation line (leading whitespace, no label) belongs.
        let mut last: Option<Target> = None;
        for raw in text.lines() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            let continuation = raw.starts_with([' ', '\t']) && !line.contains(':');
            if let Some(rest) = line.strip_prefix("GDS Version:") {
                stats.gds_version = Some(rest.trim().to_string());
            } else if let Some(rest) = line.strip_prefix("NVFS statistics(ver:") {
                stats.stats_version = Some(until_paren(rest));
            } else if let Some(rest) = line.strip_prefix("NVFS Driver(version:") {
                stats.driver_version = Some(until_paren(rest));
            } else if let Some(rest) = line.strip_prefix("IO stats:") {
                let (io, peer) = rest.split_once(',').unwrap_or((rest, ""));
                stats.io_stats_enabled = enabled(io);
                stats.peer_io_stats_enabled =
                    peer.trim().strip_prefix("peer IO stats:").and_then(enabled);
            } else if line.starts_with("GPU ") {
                stats.gpus.push(parse_gpu(line));
                last = Some(Target::Gpu(stats.gpus.len() - 1));
            } else if continuation {
                let fields = match &last {
                    Some(Target::Gpu(index)) => &mut stats.gpus[*index].fields,
                    Some(Target::Section(label)) => {
                        stats.sections.entry(label.clone()).or_default()
                    }
                    None => continue,
                };
                fields.extend(pairs(line));
            } else if let Some((label, rest)) = line.split_once(':') {
                let label = label.trim().to_string();
                let fields = stats.sections.entry(label.clone()).or_default();
                let found = pairs(rest);
                if found.is_empty() && !rest.trim().is_empty() {
                    fields.insert("value".into(), rest.trim().to_string());
                }
                fields.extend(found);
                last = Some(Target::Section(label));
            }
        }
        if stats.stats_version.is_none()
            && stats.driver_version.is_none()
            && !stats.sections.contains_key("Reads")
        {
            return Err(NvfsStatsError::NotNvfsStats {
                first_line: clip(text.lines().next().unwrap_or(""), 80),
            });
        }
        if let Some(reads) = stats.sections.get("Reads") {
            let count = |key: &str| reads.get(key).and_then(|v| v.parse::<u64>().ok());
            stats.read_errors = count("err");
            stats.read_io_state_errors = count("io_state_err");
            if let (Some(n), Some(ok), Some(read_mib)) = (count("n"), count("ok"), count("readMiB"))
            {
                stats.reads = Some(NvfsReads {
                    n,
                    ok,
                    err: count("err").unwrap_or(0),
                    read_mib,
                });
            }
        }
        Ok(stats)
    }

    /// Whether the read counters are live: as printed, or, on a build that does not print it,
    /// whether `Reads` carries `n=`.
    pub fn io_stats_enabled(&self) -> bool {
        self.io_stats_enabled.unwrap_or(self.reads.is_some())
    }

    /// What nvidia-fs counted between two snapshots taken around a trial.
    pub fn delta(before: &NvfsStats, after: &NvfsStats) -> NvfsStatsDelta {
        let read_errors = match (before.read_errors, after.read_errors) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b)),
            _ => None,
        };
        let (reads, note) = match (before.reads, after.reads) {
            (Some(b), Some(a)) if a.n < b.n || a.read_mib < b.read_mib => (
                None,
                Some("nvidia-fs read counters went backwards during the trial: the module was reloaded or its stats were reset".to_string()),
            ),
            (Some(b), Some(a)) => (
                Some(NvfsReads {
                    n: a.n - b.n,
                    ok: a.ok.saturating_sub(b.ok),
                    err: a.err.saturating_sub(b.err),
                    read_mib: a.read_mib - b.read_mib,
                }),
                None,
            ),
            _ => (None, Some(IO_STATS_DISABLED.to_string())),
        };
        NvfsStatsDelta {
            io_stats_enabled: Some(before.io_stats_enabled() && after.io_stats_enabled()),
            reads,
            read_errors,
            cumulative: false,
            note,
        }
    }

    /// One snapshot read as "everything since nvidia-fs was loaded" (for `explain`).
    pub fn since_load(&self) -> NvfsStatsDelta {
        NvfsStatsDelta {
            io_stats_enabled: Some(self.io_stats_enabled()),
            reads: self.reads,
            read_errors: self.read_errors,
            cumulative: true,
            note: self.reads.is_none().then(|| IO_STATS_DISABLED.to_string()),
        }
    }
}

enum Target {
    Gpu(usize),
    Section(String),
}

fn until_paren(text: &str) -> String {
    text.split(')').next().unwrap_or("").trim().to_string()
}

fn enabled(text: &str) -> Option<bool> {
    match text.trim() {
        word if word.eq_ignore_ascii_case("enabled") => Some(true),
        word if word.eq_ignore_ascii_case("disabled") => Some(false),
        _ => None,
    }
}

fn pairs(text: &str) -> Vec<(String, String)> {
    tokenize(text)
        .into_iter()
        .filter_map(|token| match token {
            Token::Pair(key, value) => Some((key, value)),
            Token::Section(_) => None,
        })
        .collect()
}

fn parse_gpu(line: &str) -> NvfsGpu {
    let mut words = line.split_whitespace().skip(1);
    let bdf = words.next().unwrap_or("").to_string();
    let uuid = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("uuid:"))
        .map(str::to_string);
    // Fields follow the ` : ` after the uuid; the BDF and uuid hold colons of their own.
    let fields = line
        .find(" : ")
        .map(|at| pairs(&line[at + 3..]))
        .unwrap_or_default();
    NvfsGpu {
        bdf,
        uuid,
        fields: fields.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{IO_STATS_DISABLED, NvfsReads, NvfsStats};

    const ENABLED: &str = "NVFS statistics(ver: 4.0)\nIO stats: Enabled, peer IO stats: Disabled\n\
        Reads\t\t\t\t: n=10 ok=10 err=0 readMiB=40 io_state_err=0\n\
        Reads\t\t\t\t: Bandwidth(MiB/s)=5 Avg-Latency(usec)=7\n";

    #[test]
    fn both_reads_lines_merge() {
        let stats = NvfsStats::parse(ENABLED).unwrap();
        assert_eq!(stats.io_stats_enabled, Some(true));
        assert_eq!(stats.peer_io_stats_enabled, Some(false));
        assert_eq!(stats.reads.map(|r| r.read_mib), Some(40));
        assert_eq!(stats.sections["Reads"]["Bandwidth(MiB/s)"], "5");
    }

    #[test]
    fn delta_counts_the_trial_and_notices_a_reset() {
        let before = NvfsStats::parse(ENABLED).unwrap();
        let after = NvfsStats::parse(
            &ENABLED
                .replace("n=10 ok=10", "n=266 ok=266")
                .replace("readMiB=40", "readMiB=1064"),
        )
        .unwrap();
        let delta = NvfsStats::delta(&before, &after);
        assert_eq!(
            delta.reads,
            Some(NvfsReads {
                n: 256,
                ok: 256,
                err: 0,
                read_mib: 1024
            })
        );
        let reset = NvfsStats::delta(&after, &before);
        assert_eq!(reset.reads, None);
        assert!(reset.note.unwrap().contains("went backwards"));
    }

    #[test]
    fn disabled_io_stats_say_so() {
        let stats = NvfsStats::parse("NVFS Driver(version: 2.25.7)\nIO stats: Disabled, peer IO stats: Disabled\nReads : err=0 io_state_err=0\n").unwrap();
        assert_eq!(stats.reads, None);
        assert_eq!(stats.read_errors, Some(0));
        assert_eq!(stats.since_load().note.as_deref(), Some(IO_STATS_DISABLED));
    }
}
