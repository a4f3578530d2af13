//! After a worker ran: gather every source of path evidence (what the worker measured, the
//! trial's cufile.log, nvidia-fs counters around the trial, the host's udev and nvidia-fs state)
//! and judge the trial's path against its expectation.

pub mod raw_cufile;

use std::path::Path;

use gds_model::evidence::{
    CufileGpuCounters, CufileLogFindings, Evidence, NvfsEvidence, NvfsStats,
};
use gds_model::record::{Measurement, Status, TrialRecord};
use gds_model::scenario::{BufferKind, Reader, TrialSpec};
use gds_model::verdict;

pub const NVFS_STATS: &str = "/proc/driver/nvidia-fs/stats";

/// `/proc/driver/nvidia-fs/stats` now, if nvidia-fs is loaded.
pub fn nvfs_snapshot() -> Option<String> {
    std::fs::read_to_string(NVFS_STATS).ok()
}

/// Judges the path of `record` and records the verdict: a path that does not meet `expect.path`
/// fails the trial with the evidence table, the likely cause and the fix. A trial that already
/// failed keeps its reason and gains the diagnosis.
pub fn apply(record: &mut TrialRecord, trial_dir: &Path, nvfs_before: Option<String>) {
    let evidence = evidence(
        &record.spec,
        record.measurement.as_ref(),
        trial_dir,
        nvfs_before,
    );
    let judgement = verdict::judge_path_of_trial(&evidence, &record.spec.expect);
    if let Some(m) = record.measurement.as_mut() {
        m.path = judgement.verdict.path.clone();
        m.path_evidence = Some(judgement.to_string());
    }
    match record.checks {
        Status::Passed if !judgement.passed => {
            let details = format!(
                "{}\n{}",
                where_(&record.spec),
                indent(&judgement.to_string())
            );
            record.fail(format!("path: {}", judgement.summary), details);
        }
        Status::Failed if record.spec.reader.uses_cufile() => {
            if let Some(refused) = verdict::diagnose::refused_call(evidence.cufile_log.as_ref()) {
                // cuFile's own refusal, said first: the trial failed, and not for the gate's or
                // the storage's sake.
                if let Some(reason) = record.reason.as_mut() {
                    *reason = format!("refused by cuFile: {reason}");
                }
                let details = record.details.get_or_insert_with(String::new);
                details.push_str(&format!(
                    "\n  likely cause: {}\n  fix: {}",
                    refused.cause, refused.fix
                ));
            }
            if let (Some(cause), Some(fix)) = (&judgement.likely_cause, &judgement.fix) {
                let details = record.details.get_or_insert_with(String::new);
                details.push_str(&format!("\n  likely cause: {cause}\n  fix: {fix}"));
            }
        }
        _ => {}
    }
}

fn evidence(
    spec: &TrialSpec,
    m: Option<&Measurement>,
    trial_dir: &Path,
    nvfs_before: Option<String>,
) -> Evidence {
    let passes = m.map_or(0, |m| (m.warmup_seconds.len() + m.seconds.len()) as u64);
    // A roundtrip moves its bytes through the path twice: written, then read back.
    let directions = if spec.op == gds_model::scenario::Op::Roundtrip {
        2
    } else {
        1
    };
    let mut evidence = Evidence::new(
        spec.reader,
        m.map_or(0, |m| m.bytes_per_repetition * passes * directions),
    );
    evidence.op = spec.op;
    if let Some(m) = m {
        evidence.kvikio = m.kvikio.as_ref().map(|k| k.backends.clone());
        evidence.cufile = m
            .cufile
            .as_ref()
            .and_then(|c| c.stats.as_ref())
            .map(|stats| {
                stats
                    .gpus
                    .iter()
                    .map(|g| CufileGpuCounters::from_api(g, spec.op))
                    .collect()
            });
        evidence.smallest_read = smallest_read(spec, m);
        let cpu = m.cpu_per_gib();
        evidence.cpu_seconds_per_gib = (!cpu.is_empty()).then(|| gds_model::numbers::median(&cpu));
    }
    evidence.cufile_log = cufile_log(trial_dir);
    evidence.gds_stats =
        std::fs::read_to_string(trial_dir.join(gds_model::protocol::GDS_STATS_TEXT))
            .ok()
            .and_then(|text| gds_model::evidence::GdsStats::parse(&text).ok());
    evidence.nvfs = Some(
        match (
            nvfs_before.as_deref().map(NvfsStats::parse),
            nvfs_snapshot().as_deref().map(NvfsStats::parse),
        ) {
            (Some(Ok(before)), Some(Ok(after))) => {
                NvfsEvidence::Delta(NvfsStats::delta(&before, &after))
            }
            (None, _) | (_, None) => NvfsEvidence::Unavailable {
                note: format!("no {NVFS_STATS} (nvidia-fs is not loaded)"),
            },
            (Some(Err(error)), _) | (_, Some(Err(error))) => NvfsEvidence::Unavailable {
                note: format!("{NVFS_STATS} unreadable: {error}"),
            },
        },
    );
    let host = crate::host::gds();
    evidence.nvidia_fs_loaded = Some(host.nvidia_fs_loaded);
    evidence.run_udev = Some(host.run_udev);
    if spec.reader == Reader::Kvikio {
        evidence.kvikio_async = m
            .and_then(|m| m.kvikio.as_ref())
            .and_then(|k| k.async_path.clone());
        evidence.kvikio_api = Some(spec.kvikio_api);
        evidence.compat_mode = spec.compat_mode;
        evidence.gds_threshold = Some(spec.gds_threshold);
    }
    evidence.task_size = Some(spec.task_size);
    evidence.buffer_registered = Some(spec.buffer == BufferKind::Registered);
    evidence.allow_compat_mode = spec
        .cufile
        .get("properties.allow_compat_mode")
        .and_then(serde_json::Value::as_bool);
    evidence
}

/// The smallest single read of the plan: a chunk, a random read, or a file's last task.
fn smallest_read(spec: &TrialSpec, m: &Measurement) -> Option<u64> {
    let plan = gds_model::plan::ReadPlan::new(m.files.clone(), &spec.pattern);
    // KvikIO's pread and PyTorch's load_storage take whole segments; the others read tasks.
    let reads = if spec.reader.python() {
        plan.segments
    } else {
        plan.tasks(spec.task_size)
    };
    reads.iter().map(|read| read.len).min()
}

fn cufile_log(dir: &Path) -> Option<CufileLogFindings> {
    gds_model::evidence::cufile_log::read_logs(dir).map(|text| CufileLogFindings::scan(&text))
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `scenario `cold-read` at scenarios/smoke.yaml:12, reader posix`.
pub fn where_(spec: &TrialSpec) -> String {
    format!(
        "  scenario: `{}` at {}:{}, reader {}",
        spec.scenario,
        spec.source_file.display(),
        spec.source_line,
        spec.reader.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_model::scenario::Reader;

    /// The lines libcufile 1.15 wrote when it refused `cuFileReadAsync` (a fixture from an H200
    /// without nvidia-fs), and the failure the worker reported for it.
    #[test]
    fn a_call_cufile_refused_is_reported_as_its_refusal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cufile.log"),
            " 03-12-2026 09:41:28:898 [pid=777 tid=778] NOTICE  cufio-drv:851 running in compatible mode\n \
             03-12-2026 09:41:29:189 [pid=777 tid=790] ERROR  cufio_async:731 async IO sinfo 0x556d97acc830 buf_offset + size  4194304 4194304 exceeds registered length: 4194304\n",
        )
        .unwrap();
        let mut spec = crate::baseline::fixtures::spec("entry-points::async");
        spec.reader = Reader::CufileAsync;
        let reason =
            "cuFileReadAsync of 4194304 bytes at offset 4194304 of `f`, when its stream ran it";
        let mut record =
            TrialRecord::failed(spec.clone(), reason.into(), "  scenario: x".into(), None);
        apply(&mut record, dir.path(), None);
        assert_eq!(record.checks, Status::Failed, "a refused call is no pass");
        assert_eq!(
            record.reason.as_deref(),
            Some(format!("refused by cuFile: {reason}").as_str())
        );
        let details = record.details.unwrap();
        assert!(details.contains("exceeds registered length"), "{details}");
        assert!(details.contains("`buffer: registered`"), "{details}");

        // Without the log's word for it, the failure stays as the worker said.
        std::fs::write(dir.path().join("cufile.log"), "").unwrap();
        let mut record = TrialRecord::failed(spec, reason.into(), "  scenario: x".into(), None);
        apply(&mut record, dir.path(), None);
        assert_eq!(record.reason.as_deref(), Some(reason));
    }
}
