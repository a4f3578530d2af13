//! nvidia-fs, the host and cufile.log held against what cuFile's counters said, and the trial's
//! settings, as lines of the evidence table.

use super::builder::Builder;
use super::ops::Ops;
use super::{Path, Source};
use crate::evidence::{Bytes, Evidence, FindingKind, NvfsEvidence};

/// nvidia-fs, the host and cufile.log against what the counters said.
pub(super) fn cross_check(e: &Evidence, v: &mut Builder, ops: Option<&Ops>) {
    let nvfs_reads = ops.map_or(0, |o| o.nvfs);
    let noun = e.op.transfers();
    // nvidia-fs's parsed counters are its `Reads:` line: they say nothing of a trial's writes.
    let compare_reads = !e.op.writes();
    let claims_nvfs = nvfs_reads > 0 || v.marked.contains(&Path::Nvfs);
    match &e.nvfs {
        Some(NvfsEvidence::Delta(delta)) => {
            let span = if delta.cumulative {
                "since it was loaded"
            } else {
                "during the trial"
            };
            match delta.reads {
                Some(reads) => {
                    v.line(
                        Source::NvidiaFs,
                        format!(
                            "{} reads ({} MiB, {} errors) {span}, system-wide",
                            reads.n, reads.read_mib, reads.err
                        ),
                    );
                    if !compare_reads {
                        v.notes.push(format!("nvidia-fs's read counters are not compared with cuFile's nvfs {noun}: they do not count writes"));
                    } else if claims_nvfs && reads.n == 0 {
                        v.conflicts.push(format!(
                            "cuFile counted {nvfs_reads} nvfs reads but nvidia-fs counted none {span}"
                        ));
                    } else if !claims_nvfs && reads.n > 0 && !delta.cumulative {
                        v.notes.push(format!("nvidia-fs counted {} reads during the trial that this trial's cuFile counters do not show as nvfs (another process on the host?)", reads.n));
                    }
                }
                None => v.line(
                    Source::NvidiaFs,
                    delta
                        .note
                        .clone()
                        .unwrap_or_else(|| "no read counters".into()),
                ),
            }
            if let Some(errors) = delta.read_errors.filter(|n| *n > 0) {
                let text = format!("nvidia-fs counted {errors} read errors {span}");
                if delta.cumulative {
                    v.notes.push(text);
                } else {
                    v.errors.push(text);
                }
            }
        }
        Some(NvfsEvidence::Unavailable { note }) => v.line(Source::NvidiaFs, note.clone()),
        None => v.line(Source::NvidiaFs, "stats not collected"),
    }
    match e.nvidia_fs_loaded {
        Some(true) => v.line(Source::Host, "nvidia-fs is loaded"),
        Some(false) => {
            v.line(
                Source::Host,
                "nvidia-fs is not loaded (no /sys/module/nvidia_fs)",
            );
            if claims_nvfs {
                v.conflicts.push(format!(
                    "cuFile counted {nvfs_reads} nvfs {noun} but nvidia-fs is not loaded"
                ));
            }
        }
        None => {}
    }
    let Some(log) = &e.cufile_log else {
        v.line(Source::CufileLog, "not collected");
        return;
    };
    if log.findings.is_empty() {
        v.line(
            Source::CufileLog,
            format!("nothing of note in {} lines", log.lines),
        );
    }
    for finding in &log.findings {
        let repeats = if finding.count > 1 {
            format!(" (×{})", finding.count)
        } else {
            String::new()
        };
        v.line(
            Source::CufileLog,
            format!("line {}{repeats}: `{}`", finding.line_number, finding.line),
        );
    }
    let compat = [FindingKind::CompatMode, FindingKind::NvidiaFsNotLoaded]
        .into_iter()
        .find_map(|kind| log.first(kind));
    if let (true, Some(finding), Some(_)) = (claims_nvfs, compat, ops) {
        v.conflicts.push(format!(
            "cuFile counted {nvfs_reads} nvfs {noun} but cufile.log line {} says `{}`",
            finding.line_number,
            super::diagnose::quote(&finding.line)
        ));
    }
}

pub(super) fn settings(e: &Evidence, v: &mut Builder) {
    let mut parts = Vec::new();
    if let Some(mode) = e.compat_mode {
        parts.push(format!("KVIKIO_COMPAT_MODE={mode}"));
    }
    if let Some(threshold) = e.gds_threshold {
        parts.push(format!("KVIKIO_GDS_THRESHOLD={}", Bytes(threshold)));
    }
    if let Some(task) = e.task_size {
        parts.push(format!("task size {}", Bytes(task)));
    }
    if let Some(smallest) = e.smallest_read {
        parts.push(format!("smallest {} {}", e.op.transfer(), Bytes(smallest)));
    }
    if let Some(path) = &e.kvikio_async {
        parts.push(format!(
            "KvikIO {}: {path}",
            super::builder::stream_ordered_calls(e.op)
        ));
    }
    if let Some(registered) = e.buffer_registered {
        parts.push(
            if registered {
                "buffer registered"
            } else {
                "buffer not registered"
            }
            .into(),
        );
    }
    if let Some(allow) = e.allow_compat_mode {
        parts.push(format!("properties.allow_compat_mode={allow}"));
    }
    if let Some(udev) = e.run_udev {
        parts.push(
            if udev {
                "/run/udev present"
            } else {
                "/run/udev missing"
            }
            .into(),
        );
    }
    if !parts.is_empty() {
        v.line(Source::Settings, parts.join(", "));
    }
}
