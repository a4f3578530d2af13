//! Trials over several GPUs (`gpus: all` or `gpus: [0, 1]`): the read plan is split into one
//! shard per GPU ([`gds_model::shard`]); one worker per GPU is started at the same time, each on its
//! own thread through the same machinery as a one-GPU trial, with its shard and `gpu` set to its
//! GPU, in `<trial>/gpu<N>`. Each worker verifies its shard on its own GPU and is judged on its own
//! path evidence (its cuFile counters, its cufile.log, its `gds_stats` sample). The trial's record
//! then aggregates them ([`aggregate`]): per-repetition throughput over all GPUs, each GPU's own
//! result in `measurement.per_gpu`, and a verdict that fails when any GPU fails, naming it.
//!
//! Ranks (`ranks:`) use the same machinery with one worker per rank on the trial's GPU, each in
//! `<trial>/rank<N>` with its rank's reader; writing ranks (`writers:`) write the copies of their
//! shard's files and read them back while the others read. A [`Part`] is one such worker.
//!
//! # Limitations
//!
//! - The workers start together but are **not synchronised pass by pass**: each runs its own
//!   warmup and repetitions, drops the page cache of its own files before each of its passes and
//!   times its own read sections. Repetition *r* of one GPU overlaps repetition *r* of another only
//!   as far as they keep pace; a GPU whose worker starts late or finishes early reads part of the
//!   time alone, with less contention, so the aggregate can overstate what all GPUs sustain
//!   together. Start-up times are in each GPU's result to judge the skew.
//! - Shards of one file (fewer files than GPUs) share its page cache: one worker's cold-cache drop
//!   evicts pages another worker of the same file has read. Whole files per GPU (at least as many
//!   files as GPUs) avoid it.
//! - `/proc/driver/nvidia-fs/stats` is system-wide, so each GPU's delta includes the reads of the
//!   others that ran at the same time; cuFile's own counters are per process, hence per GPU.

use std::io;
use std::path::Path;
use std::sync::OnceLock;

use super::{Launcher, slug, timeout_for};
use crate::cause::Cause;
use gds_model::cost::{CpuTime, PassCost, PassLatencies};
use gds_model::cufile_abi::{GpuCounters, Stats};
use gds_model::evidence::KvikioBackends;
use gds_model::integrity::IntegrityResult;
use gds_model::numbers::median;
use gds_model::plan::{PlannedFile, ReadPlan};
use gds_model::protocol::Unavailable;
use gds_model::record::{
    CufileEvidence, Ending, GpuShardResult, KvikioEvidence, Measurement, MemoryPeak, Status,
    TrialRecord, WorkerRun, workers,
};
use gds_model::scenario::{GpuSet, Op, Reader, TrialSpec};

/// What `gpus:` means on this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// These GPUs, in this order.
    Gpus(Vec<u32>),
    /// `gpus: all` on a host with no GPU: the trial is ignored with this reason.
    NoGpu(String),
    /// A listed GPU the host does not have: the trial fails with this reason.
    Invalid(String),
}

/// Why this host's GPUs could not be counted: CUDA's probe did not say, and the driver's list of
/// GPUs could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot count the GPUs: {cuda}, and /proc/driver/nvidia/gpus")]
pub struct GpuCountError {
    /// Why the probe did not count them.
    pub cuda: Unavailable,
    #[source]
    pub proc: io::Error,
}

/// Resolves the set against the host's GPU count (`Err`: why it is unknown).
pub fn resolve(set: &GpuSet, count: &Result<u32, GpuCountError>) -> Resolved {
    match (set, count) {
        (GpuSet::All, Ok(0)) => Resolved::NoGpu(
            "`gpus: all` found no GPU on this host (CUDA and /proc/driver/nvidia/gpus list none)"
                .into(),
        ),
        (GpuSet::All, Ok(count)) => Resolved::Gpus((0..*count).collect()),
        (GpuSet::All, Err(why)) => {
            Resolved::NoGpu(format!("`gpus: all`: {}", gds_model::error_line(why)))
        }
        (GpuSet::List(list), Ok(count)) => match list.iter().find(|gpu| **gpu >= *count) {
            Some(missing) => Resolved::Invalid(format!(
                "`gpus: {set}` names GPU {missing}, but this host has {count} GPU(s){}",
                if *count > 0 {
                    format!(", numbered 0 to {}", count - 1)
                } else {
                    String::new()
                }
            )),
            None => Resolved::Gpus(list.clone()),
        },
        // The workers will say which GPU they could not open.
        (GpuSet::List(list), Err(_)) => Resolved::Gpus(list.clone()),
    }
}

/// The GPUs CUDA numbers on this host: cuDeviceGetCount, asked in a worker (it honours
/// `CUDA_VISIBLE_DEVICES`, as the workers' ordinals do), else the entries of
/// `/proc/driver/nvidia/gpus`. Counted once per process.
pub fn host_gpu_count() -> &'static Result<u32, GpuCountError> {
    static COUNT: OnceLock<Result<u32, GpuCountError>> = OnceLock::new();
    COUNT.get_or_init(|| {
        let cuda = match crate::job::probe::gpu_count() {
            Ok(count) => return Ok(count),
            Err(why) => why,
        };
        match std::fs::read_dir("/proc/driver/nvidia/gpus") {
            Ok(entries) => Ok(entries.flatten().count() as u32),
            Err(proc) => Err(GpuCountError { cuda, proc }),
        }
    })
}

/// One worker of a trial over several GPUs or ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub gpu: u32,
    /// Its rank, in a trial with `ranks:`.
    pub rank: Option<u32>,
    pub reader: Reader,
    /// `Roundtrip` for a writing rank (`writers:`), else the trial's.
    pub op: Op,
}

impl Part {
    /// One worker per GPU, each with the trial's reader.
    pub fn per_gpu(spec: &TrialSpec, gpus: &[u32]) -> Vec<Part> {
        gpus.iter()
            .map(|&gpu| Part {
                gpu,
                rank: None,
                reader: spec.reader,
                op: spec.op,
            })
            .collect()
    }

    /// One worker per rank of `spec.ranks`, all on the trial's GPU; the last `spec.writers`
    /// write and read back.
    pub fn per_rank(spec: &TrialSpec) -> Vec<Part> {
        let readers = spec.ranks.len().saturating_sub(spec.writers as usize);
        (0..)
            .zip(&spec.ranks)
            .map(|(rank, &reader)| Part {
                gpu: spec.gpu,
                rank: Some(rank),
                reader,
                op: if rank as usize >= readers {
                    Op::Roundtrip
                } else {
                    spec.op
                },
            })
            .collect()
    }

    fn folder(&self) -> String {
        match self.rank {
            Some(rank) => format!("rank{rank}"),
            None => format!("gpu{}", self.gpu),
        }
    }
}

impl Launcher {
    /// One worker per part, each reading its shard of `plan` at the same time; the record
    /// aggregates them. A writing part writes and reads back `written`, the copies of `plan`'s
    /// files in their order.
    pub fn run_multi(
        &self,
        spec: TrialSpec,
        plan: ReadPlan,
        parts: &[Part],
        written: &[PlannedFile],
    ) -> TrialRecord {
        let dir = self.trials_dir.join(slug(&spec.name));
        let shards = match gds_model::shard::split(&plan, parts.len(), spec.task_size) {
            Ok(shards) => shards,
            Err(error) => return Cause::Split(error).fail(spec),
        };
        // Earlier runs may have used more GPUs or ranks: no stale folder may remain.
        let _ = std::fs::remove_dir_all(&dir);
        // The workers share the storage: each gets the time the whole plan would need, written
        // and read back where a part writes.
        let mut longest = spec.clone();
        if let Some(part) = parts.iter().find(|part| part.op.writes()) {
            longest.op = part.op;
        }
        let timeout = self.timeout.unwrap_or_else(|| timeout_for(&longest, &plan));
        let results: Vec<(Part, TrialRecord)> = std::thread::scope(|scope| {
            let running: Vec<_> = parts
                .iter()
                .zip(shards)
                .map(|(&part, mut shard)| {
                    let mut one = spec.clone();
                    one.gpu = part.gpu;
                    one.reader = part.reader;
                    one.op = part.op;
                    if part.op.writes() {
                        shard.files = copies(&plan, &shard, written);
                    }
                    let part_dir = dir.join(part.folder());
                    let copy = one.clone();
                    let handle = scope.spawn(move || {
                        self.run_trial_in(one, shard, &part_dir, timeout, &mut |_| None)
                    });
                    (part, copy, handle)
                })
                .collect();
            running
                .into_iter()
                .map(|(part, copy, handle)| {
                    let record = handle.join().unwrap_or_else(|panic| {
                        let message = gds_model::panic_message(panic.as_ref());
                        crate::cause::Cause::Panicked(message).fail(copy)
                    });
                    (part, record)
                })
                .collect()
        });
        aggregate(spec, &plan, &dir, results)
    }
}

/// The written copies of `shard`'s files: each file of `plan` has its copy at the same index of
/// `written`.
fn copies(plan: &ReadPlan, shard: &ReadPlan, written: &[PlannedFile]) -> Vec<PlannedFile> {
    shard
        .files
        .iter()
        .map(|file| {
            plan.files
                .iter()
                .position(|planned| planned.path == file.path)
                .and_then(|at| written.get(at))
                .unwrap_or(file)
                .clone()
        })
        .collect()
}

/// One record for the trial from its workers' records (in order): see the module documentation.
pub fn aggregate(
    spec: TrialSpec,
    plan: &ReadPlan,
    dir: &Path,
    shards: Vec<(Part, TrialRecord)>,
) -> TrialRecord {
    // Ranks' readers are named where they differ.
    let mixed = spec.ranks.iter().any(|reader| *reader != spec.reader);
    let per_gpu: Vec<GpuShardResult> = shards
        .into_iter()
        .map(|(part, record)| GpuShardResult {
            gpu: part.gpu,
            rank: part.rank,
            reader: (mixed && part.rank.is_some()).then_some(part.reader),
            op: (part.op != spec.op).then_some(part.op),
            status: record.checks,
            reason: record.reason,
            details: record.details,
            measurement: record.measurement,
            warnings: record.warnings,
            worker: record.worker,
        })
        .collect();
    let worker = aggregate_worker(dir, &per_gpu);
    let measurement = per_gpu
        .iter()
        .any(|shard| shard.measurement.is_some())
        .then(|| aggregate_measurement(&spec, plan, &per_gpu));
    let of = |status: Status| -> Vec<&GpuShardResult> {
        per_gpu
            .iter()
            .filter(|shard| shard.status == status)
            .collect()
    };
    let (failed, ignored) = (of(Status::Failed), of(Status::Ignored));
    let all = workers(&per_gpu);
    let mut record = if !failed.is_empty() {
        Cause::WorkersFailed { all, failed }.fail_with(spec, measurement)
    } else if ignored.len() == per_gpu.len() && !per_gpu.is_empty() {
        // Typically the same reason for every worker (no kvikio): said once, so notes group it.
        let reasons: Vec<&str> = ignored
            .iter()
            .map(|shard| shard.reason.as_deref().unwrap_or(""))
            .collect();
        let reason = if reasons.iter().all(|reason| *reason == reasons[0]) {
            reasons[0].to_string()
        } else {
            ignored
                .iter()
                .zip(&reasons)
                .map(|(shard, reason)| format!("{}: {reason}", shard.label()))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let mut record = TrialRecord::ignored(spec, reason);
        record.measurement = measurement;
        record
    } else if !ignored.is_empty() {
        let not_run = ignored;
        Cause::WorkersNotRun { all, not_run }.fail_with(spec, measurement)
    } else if let Some(measurement) = measurement {
        let mut record = TrialRecord::passed(spec, measurement);
        record.warnings = per_gpu
            .iter()
            .flat_map(|shard| {
                shard
                    .warnings
                    .iter()
                    .map(move |warning| format!("{}: {warning}", shard.label()))
            })
            .collect();
        record
    } else {
        Cause::NoShares.fail(spec)
    };
    if let Some(m) = record.measurement.as_mut() {
        m.per_gpu = per_gpu;
    }
    record.worker = worker;
    record
}

/// The trial's measurement from its GPUs'. The GPUs ran concurrently, so the wall time of a pass
/// is its slowest shard: repetition `r` takes the longest of the GPUs' times for `r`, and its
/// throughput is all GPUs' bytes over that time. Only repetitions every GPU completed count.
fn aggregate_measurement(
    spec: &TrialSpec,
    plan: &ReadPlan,
    per_gpu: &[GpuShardResult],
) -> Measurement {
    let measured: Vec<(&GpuShardResult, &Measurement)> = per_gpu
        .iter()
        .filter_map(|shard| shard.measurement.as_ref().map(|m| (shard, m)))
        .collect();
    let everyone = measured.len() == per_gpu.len();
    let slowest = |samples: fn(&Measurement) -> &Vec<f64>| -> Vec<f64> {
        let completed = if everyone {
            measured
                .iter()
                .map(|(_, m)| samples(m).len())
                .min()
                .unwrap_or(0)
        } else {
            0
        };
        (0..completed)
            .map(|r| {
                measured
                    .iter()
                    .map(|(_, m)| samples(m)[r])
                    .fold(0.0, f64::max)
            })
            .collect()
    };
    let seconds = slowest(|m| &m.seconds);
    let bytes = plan.total_bytes();
    let only = only_worker(per_gpu);
    let costs = aggregate_costs(&measured, only, &seconds, bytes);
    let gbps: Vec<f64> = seconds.iter().map(|s| bytes as f64 / s / 1e9).collect();
    let max =
        |value: fn(&Measurement) -> f64| measured.iter().map(|(_, m)| value(m)).fold(0.0, f64::max);
    let max_option = |value: fn(&Measurement) -> Option<f64>| {
        measured
            .iter()
            .filter_map(|(_, m)| value(m))
            .reduce(f64::max)
    };
    // One path when every GPU's bytes took it, else mixed.
    let mut paths = measured
        .iter()
        .map(|(_, m)| &m.path)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter();
    let path = match (paths.next(), paths.next()) {
        (Some(one), None) => one.clone(),
        _ => gds_model::path::Path::Mixed,
    };
    let path_evidence: Vec<String> = measured
        .iter()
        .filter_map(|(shard, m)| {
            let evidence = m.path_evidence.as_ref()?;
            Some(format!("{}: {}\n{evidence}", shard.label(), m.path))
        })
        .collect();
    Measurement {
        files: plan.files.clone(),
        bytes_per_repetition: bytes,
        warmup_seconds: slowest(|m| &m.warmup_seconds),
        median_gbps: (!gbps.is_empty()).then(|| median(&gbps)),
        seconds,
        gbps,
        path,
        path_evidence: (!path_evidence.is_empty()).then(|| path_evidence.join("\n")),
        integrity: aggregate_integrity(spec, per_gpu, everyone),
        resident_after_drop: max_option(|m| m.resident_after_drop),
        verify_seconds: max(|m| m.verify_seconds),
        total_seconds: max(|m| m.total_seconds),
        startup_seconds: max_option(|m| m.startup_seconds),
        // Each shard's worker has its own exit, in its WorkerRun.
        answered_unix_ns: None,
        preparation_seconds: max_option(|m| m.preparation_seconds),
        setup: measured
            .iter()
            .flat_map(|(shard, m)| {
                m.setup
                    .iter()
                    .map(move |(phase, seconds)| (format!("{}: {phase}", shard.label()), *seconds))
            })
            .collect(),
        gpu: Some({
            // Ranks share their GPU: named once.
            let mut names: Vec<String> = measured
                .iter()
                .map(|(shard, m)| {
                    m.gpu
                        .clone()
                        .unwrap_or_else(|| format!("GPU {}", shard.gpu))
                })
                .collect();
            names.dedup();
            names.join(", ")
        }),
        cufile: aggregate_cufile(per_gpu),
        kvikio: aggregate_kvikio(&measured),
        // One PyTorch build in every worker (one interpreter): the first GPU's account.
        torch: measured.iter().find_map(|(_, m)| m.torch.clone()),
        per_gpu: Vec::new(),
        latency: only.and_then(|m| m.latency.clone()),
        libcufile: measured.iter().find_map(|(_, m)| m.libcufile.clone()),
        // Every shard resolves the same `window` key; the largest says what bounded memory.
        window: measured.iter().filter_map(|(_, m)| m.window).max(),
        memory: measured
            .iter()
            .filter_map(|(_, m)| m.memory)
            .reduce(MemoryPeak::max),
        write: None,
        rounds: Vec::new(),
        load: None,
        // Beside writing ranks, the reading rank's latency is what the trial is judged by.
        read_latency: (spec.writers > 0)
            .then(|| PassLatencies::from_costs(&costs))
            .flatten(),
        costs,
    }
}

/// The one reading worker's measurement when one worker did the trial's op: a trial on one GPU
/// (`gpus: all` on a one-GPU host), or one reading rank beside writing ones (`writers:`). Then its
/// latency percentiles are the trial's. Percentiles of several workers do not add up, so a trial
/// with several, even one whose other workers failed, has none of its own; each worker's are in
/// `per_gpu`.
fn only_worker(per_gpu: &[GpuShardResult]) -> Option<&Measurement> {
    let mut doing_the_op = per_gpu.iter().filter(|shard| shard.op.is_none());
    match (doing_the_op.next(), doing_the_op.next()) {
        (Some(one), None) => one.measurement.as_ref(),
        _ => None,
    }
}

/// Each repetition's cost over all GPUs: the workers' CPU time and read calls added (they share
/// the host's cores), over all GPUs' bytes and the slowest GPU's time, and the latency of a
/// single reading worker's pass (see [`only_worker`]; `seconds` is empty unless every GPU
/// measured). Repetitions some GPU has no cost for are left out.
fn aggregate_costs(
    measured: &[(&GpuShardResult, &Measurement)],
    only: Option<&Measurement>,
    seconds: &[f64],
    bytes: u64,
) -> Vec<PassCost> {
    seconds
        .iter()
        .enumerate()
        .map_while(|(r, &seconds)| {
            let shards: Vec<&PassCost> = measured
                .iter()
                .map(|(_, m)| m.costs.get(r))
                .collect::<Option<_>>()?;
            let calls = shards.iter().map(|c| c.read_calls).sum();
            let cpu = shards
                .iter()
                .try_fold(CpuTime::default(), |sum, c| Some(sum.plus(&c.cpu?)));
            let latency = only.and_then(|m| m.costs.get(r)?.latency.clone());
            Some(PassCost::new(bytes, seconds, calls, cpu, latency))
        })
        .collect()
}

/// The shards' checksums add up (each is a wrapping sum of range or file checksums, and the
/// shards split the plan), and so do their bad words; the first wrong byte is the lowest GPU's.
fn aggregate_integrity(
    spec: &TrialSpec,
    per_gpu: &[GpuShardResult],
    everyone: bool,
) -> IntegrityResult {
    let results: Vec<&IntegrityResult> = per_gpu
        .iter()
        .filter_map(|shard| shard.measurement.as_ref().map(|m| &m.integrity))
        .collect();
    let sum = |value: fn(&IntegrityResult) -> Option<u64>| -> Option<u64> {
        if !everyone {
            return None;
        }
        results
            .iter()
            .map(|result| value(result))
            .try_fold(0u64, |sum, value| {
                value.map(|value| sum.wrapping_add(value))
            })
    };
    IntegrityResult {
        method: spec.expect.integrity,
        checksum: sum(|result| result.checksum),
        expected_checksum: sum(|result| result.expected_checksum),
        bad_words: results.iter().map(|result| result.bad_words).sum(),
        first_bad: results.iter().find_map(|result| result.first_bad.clone()),
        seconds: results
            .iter()
            .map(|result| result.seconds)
            .fold(0.0, f64::max),
    }
}

/// cuFile's account over all GPUs: the per-GPU counter rows of every worker (each process counts
/// its own reads), summed where two workers report the same GPU.
fn aggregate_cufile(per_gpu: &[GpuShardResult]) -> Option<CufileEvidence> {
    let all: Vec<(&GpuShardResult, &CufileEvidence)> = per_gpu
        .iter()
        .filter_map(|shard| {
            let evidence = shard.measurement.as_ref()?.cufile.as_ref()?;
            Some((shard, evidence))
        })
        .collect();
    let (_, first) = all.first()?;
    let mut merged = CufileEvidence {
        requested_bytes: 0,
        stats: Some(Stats::default()),
        stats_unavailable: None,
        ..(*first).clone()
    };
    for (shard, evidence) in &all {
        merged.requested_bytes += evidence.requested_bytes;
        merged
            .loaded_copies
            .extend(evidence.loaded_copies.iter().cloned());
        match (merged.stats.as_mut(), &evidence.stats) {
            (Some(sum), Some(stats)) => {
                sum.read_ops_ok += stats.read_ops_ok;
                sum.read_ops_err += stats.read_ops_err;
                sum.read_bytes += stats.read_bytes;
                for row in &stats.gpus {
                    add_row(&mut sum.gpus, row);
                }
            }
            (_, None) => {
                merged.stats = None;
                merged.stats_unavailable.get_or_insert_with(|| {
                    format!(
                        "{}: {}",
                        shard.label(),
                        evidence
                            .stats_unavailable
                            .as_deref()
                            .unwrap_or("no cuFile statistics")
                    )
                });
            }
            (None, Some(_)) => {}
        }
    }
    merged.loaded_copies.sort();
    merged.loaded_copies.dedup();
    Some(merged)
}

fn add_row(rows: &mut Vec<GpuCounters>, row: &GpuCounters) {
    let same = |other: &&mut GpuCounters| {
        if row.uuid.is_empty() || other.uuid.is_empty() {
            other.index == row.index
        } else {
            other.uuid == row.uuid
        }
    };
    match rows.iter_mut().find(same) {
        Some(sum) => {
            sum.read_bytes += row.read_bytes;
            sum.n_total_reads += row.n_total_reads;
            sum.n_p2p_reads += row.n_p2p_reads;
            sum.n_nvfs_reads += row.n_nvfs_reads;
            sum.n_posix_reads += row.n_posix_reads;
            sum.n_unaligned_reads += row.n_unaligned_reads;
            sum.n_dr_reads += row.n_dr_reads;
            sum.n_reads_err += row.n_reads_err;
        }
        None => rows.push(row.clone()),
    }
}

/// KvikIO's account over all GPUs: bytes per backend summed. Its own throughput is per process,
/// so it stays in each GPU's result.
fn aggregate_kvikio(measured: &[(&GpuShardResult, &Measurement)]) -> Option<KvikioEvidence> {
    let all: Vec<&KvikioEvidence> = measured
        .iter()
        .filter_map(|(_, m)| m.kvikio.as_ref())
        .collect();
    let first = all.first()?;
    let mut backends = KvikioBackends::default();
    for evidence in &all {
        for (name, totals) in &evidence.backends.by_backend {
            let sum = backends.by_backend.entry(name.clone()).or_default();
            sum.num_ops += totals.num_ops;
            sum.bytes_transferred += totals.bytes_transferred;
        }
    }
    Some(KvikioEvidence {
        backends,
        own_gbps: None,
        gate_aggregate_gbps: None,
        cached_after_drop: all
            .iter()
            .filter_map(|evidence| evidence.cached_after_drop)
            .reduce(f64::max),
        ..(*first).clone()
    })
}

/// The trial's folder, the first worker that did not end cleanly (else a clean exit), and the
/// longest worker's time.
fn aggregate_worker(dir: &Path, per_gpu: &[GpuShardResult]) -> Option<WorkerRun> {
    let runs: Vec<&WorkerRun> = per_gpu
        .iter()
        .filter_map(|shard| shard.worker.as_ref())
        .collect();
    (!runs.is_empty()).then(|| WorkerRun {
        dir: dir.to_path_buf(),
        ending: runs
            .iter()
            .map(|run| run.ending.clone())
            .find(|ending| !ending.is_clean())
            .unwrap_or(Ending::Exited { code: 0 }),
        seconds: runs.iter().map(|run| run.seconds).fold(0.0, f64::max),
        after_answer_seconds: runs
            .iter()
            .filter_map(|run| run.after_answer_seconds)
            .reduce(f64::max),
        // A trial over several GPUs never starts beside another ([`crate::launch::Held`]).
        exit_beside_next_seconds: None,
    })
}

#[cfg(test)]
mod tests;
