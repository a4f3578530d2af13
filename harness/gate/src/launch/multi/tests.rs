//! Trials over several GPUs without a GPU: aggregation of constructed per-GPU results, and the
//! orchestration with a stand-in worker program (a shell script in place of the gate binary that
//! answers with canned results), N workers at once.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use super::*;
use gds_model::cufile_abi::Stats;
use gds_model::integrity::BadByte;
use gds_model::plan::PlannedFile;
use gds_model::protocol::{PROTOCOL_VERSION, WorkerFailure, WorkerResult, WorkerSpec};
use gds_model::scenario::{Integrity, Pattern};

const MIB: u64 = 1 << 20;

/// A trial over GPUs `gpus` of the h2d reader, reading `count` generated files of 1 MiB.
fn spec(gpus: &str, count: u32) -> TrialSpec {
    let suite = gds_model::scenario::parse(
        Path::new("multi.yaml"),
        &format!(
            "scenarios:\n  - name: m\n    files: {{ size: 1MiB, count: {count} }}\n    reader: h2d\n    task_size: 64KiB\n    gpus: {gpus}\n    repetitions: 2\n"
        ),
    )
    .unwrap();
    gds_model::scenario::expand(&suite).remove(0)
}

fn plan(count: u64) -> ReadPlan {
    let files = (0..count)
        .map(|seed| PlannedFile {
            path: format!("/data/gen-{seed}").into(),
            size: MIB,
            seed: Some(seed),
            checksum: 0x1000 + seed,
        })
        .collect();
    ReadPlan::new(files, &Pattern::Whole)
}

/// A constructed measurement of one GPU's shard (not measured on hardware): `seconds` per
/// repetition, its checksum, and cuFile counters for its GPU.
fn constructed(gpu: u32, bytes: u64, seconds: &[f64], path: &str, checksum: u64) -> Measurement {
    Measurement {
        warmup_seconds: vec![seconds[0] * 2.0],
        seconds: seconds.to_vec(),
        gbps: seconds.iter().map(|s| bytes as f64 / s / 1e9).collect(),
        median_gbps: Some(median(
            &seconds
                .iter()
                .map(|s| bytes as f64 / s / 1e9)
                .collect::<Vec<_>>(),
        )),
        path: path.into(),
        path_evidence: Some(format!("{path}: constructed evidence")),
        integrity: IntegrityResult {
            method: Integrity::Exact,
            checksum: Some(checksum),
            expected_checksum: Some(checksum),
            bad_words: 0,
            first_bad: None,
            seconds: 0.01 * f64::from(gpu + 1),
        },
        resident_after_drop: Some(0.01 * f64::from(gpu)),
        verify_seconds: 0.1,
        total_seconds: 3.0 + f64::from(gpu),
        startup_seconds: Some(0.5 + f64::from(gpu) / 10.0),
        answered_unix_ns: None,
        setup: vec![("gpu context".into(), 0.2)],
        preparation_seconds: None,
        gpu: Some(format!("NVIDIA H200 (GPU {gpu})")),
        cufile: Some(CufileEvidence {
            library: "/usr/lib/libcufile.so.0".into(),
            version: "1.15.1".into(),
            requested_bytes: bytes * 3,
            stats: Some(Stats {
                read_ops_ok: 3,
                read_ops_err: 0,
                read_bytes: bytes * 3,
                gpus: vec![GpuCounters {
                    index: gpu,
                    uuid: format!("GPU-{gpu}"),
                    read_bytes: bytes * 3,
                    n_total_reads: 3,
                    n_posix_reads: 3,
                    ..GpuCounters::default()
                }],
                ..Stats::default()
            }),
            ..CufileEvidence::default()
        }),
        // Ten calls per pass, 0.1 s of user time per GPU index + 1 and 0.1 s of system time, and
        // a mean call of 1 ms per GPU index + 1.
        costs: seconds
            .iter()
            .map(|&s| {
                let cpu = CpuTime {
                    user_seconds: 0.1 * f64::from(gpu + 1),
                    system_seconds: 0.1,
                };
                PassCost::new(bytes, s, 10, Some(cpu), Some(latency(gpu)))
            })
            .collect(),
        latency: Some(latency(gpu)),
        ..Measurement::unmeasured(Vec::new(), bytes)
    }
}

fn latency(gpu: u32) -> gds_model::cost::Latency {
    let ms = 1000.0 * f64::from(gpu + 1);
    gds_model::cost::Latency {
        calls: 10,
        mean_us: ms,
        p50_us: Some(ms),
        p90_us: Some(ms),
        p95_us: Some(ms),
        p99_us: Some(ms),
        p999_us: Some(ms),
        max_us: Some(ms),
    }
}

fn passed(gpu: u32, m: Measurement) -> (Part, TrialRecord) {
    (on(gpu), TrialRecord::passed(spec("[0, 1, 2]", 3), m))
}

/// The worker of GPU `gpu` in a trial over several GPUs.
fn on(gpu: u32) -> Part {
    Part {
        gpu,
        rank: None,
        reader: Reader::H2d,
        op: Op::Read,
    }
}

/// Three constructed GPU results: the aggregate takes the slowest GPU of each repetition, keeps
/// every GPU's own result, sums the checksums and cuFile's per-GPU counters.
#[test]
fn aggregate_of_constructed_results_is_total_bytes_over_the_slowest_gpu() {
    let plan = plan(3);
    let share = plan.total_bytes() / 3;
    let shards = vec![
        passed(0, constructed(0, share, &[1.0, 2.0], "cufile-posix", 10)),
        passed(1, constructed(1, share, &[1.5, 1.0], "cufile-posix", 20)),
        passed(2, constructed(2, share, &[0.5, 0.5], "cufile-posix", 30)),
    ];
    let record = aggregate(spec("[0, 1, 2]", 3), &plan, Path::new("/t/m"), shards);
    assert_eq!(record.checks, Status::Passed, "{record:?}");
    let m = record.measurement.as_ref().unwrap();
    assert_eq!(m.seconds, [1.5, 2.0]);
    assert_eq!(m.warmup_seconds, [3.0]);
    let total = 3.0 * MIB as f64;
    assert_eq!(m.gbps, [total / 1.5 / 1e9, total / 2.0 / 1e9]);
    assert_eq!(
        m.median_gbps,
        Some((total / 1.5 / 1e9 + total / 2.0 / 1e9) / 2.0)
    );
    assert_eq!(m.bytes_per_repetition, 3 * MIB);
    assert_eq!(m.files.len(), 3);
    assert_eq!(m.path, gds_model::path::Path::CufilePosix);
    assert_eq!(m.integrity.checksum, Some(60));
    assert_eq!(m.integrity.expected_checksum, Some(60));
    assert!(m.integrity.passed());
    // The workers' CPU time and calls add up, over all bytes and the slowest GPU's time.
    assert_eq!(m.costs.len(), 2);
    assert_eq!(m.costs[1].read_calls, 30);
    assert_eq!(m.costs[1].iops, 15.0);
    let cpu = m.costs[0].cpu.unwrap();
    assert!((cpu.total() - 0.9).abs() < 1e-9, "{cpu:?}");
    let per_gib = 0.9 / (3.0 * MIB as f64 / (1u64 << 30) as f64);
    assert!((m.costs[0].cpu_seconds_per_gib.unwrap() - per_gib).abs() < 1e-9);
    // Percentiles of three workers do not add up: each GPU keeps its own.
    assert_eq!(m.latency, None);
    assert!(m.costs.iter().all(|c| c.latency.is_none()));
    assert_eq!(
        m.per_gpu[2].measurement.as_ref().unwrap().latency,
        Some(latency(2))
    );
    assert_eq!(m.startup_seconds, Some(0.7));
    assert_eq!(m.total_seconds, 5.0);
    assert_eq!(
        m.gpu.as_deref(),
        Some("NVIDIA H200 (GPU 0), NVIDIA H200 (GPU 1), NVIDIA H200 (GPU 2)")
    );
    assert!(
        m.setup
            .iter()
            .any(|(phase, _)| phase == "GPU 2: gpu context")
    );
    // cuFile's per-GPU table: one row per GPU, from each worker's own counters.
    let cufile = m.cufile.as_ref().unwrap();
    let stats = cufile.stats.as_ref().unwrap();
    let rows: Vec<(u32, u64)> = stats
        .gpus
        .iter()
        .map(|g| (g.index, g.n_posix_reads))
        .collect();
    assert_eq!(rows, [(0, 3), (1, 3), (2, 3)]);
    assert_eq!(stats.read_bytes, 3 * share * 3);
    assert_eq!(cufile.requested_bytes, 3 * share * 3);
    // Each GPU's own result, with its own throughput and path verdict.
    let per_gpu: Vec<(u32, Option<f64>)> = m
        .per_gpu
        .iter()
        .map(|shard| (shard.gpu, shard.measurement.as_ref().unwrap().median_gbps))
        .collect();
    assert_eq!(per_gpu.len(), 3);
    assert_eq!(per_gpu[2], (2, Some(share as f64 / 0.5 / 1e9)));
    assert!(
        m.path_evidence
            .as_ref()
            .unwrap()
            .contains("GPU 1: cufile-posix")
    );
    let line = record.summary(gds_model::units::Rate::Gb);
    assert!(line.contains("over 3 GPUs (GPU 0 "), "{line}");
    // Survives the report's JSON.
    let back: TrialRecord = serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap();
    assert_eq!(back, record);
}

/// Constructed: of two GPUs, GPU 1's worker died without a measurement. GPU 0's percentiles are
/// its own, not the trial's.
#[test]
fn a_trial_whose_other_gpu_measured_nothing_has_no_latency_of_its_own() {
    let plan = plan(2);
    let share = plan.total_bytes() / 2;
    let crashed = TrialRecord::failed(
        spec("[0, 1]", 2),
        "the worker killed by signal 11 (SIGSEGV) without a result".into(),
        String::new(),
        None,
    );
    let shards = vec![
        passed(0, constructed(0, share, &[1.0, 1.0], "host", 10)),
        (on(1), crashed),
    ];
    let record = aggregate(spec("[0, 1]", 2), &plan, Path::new("/t/m"), shards);
    assert_eq!(record.checks, Status::Failed);
    let m = record.measurement.unwrap();
    assert_eq!(m.latency, None);
    assert!(m.costs.is_empty());
    assert_eq!(
        m.per_gpu[0].measurement.as_ref().unwrap().latency,
        Some(latency(0))
    );
}

/// Constructed: GPU 1's path verdict failed; the trial fails, naming GPU 1, and keeps every
/// GPU's measurement.
#[test]
fn a_failed_gpu_fails_the_trial_and_is_named() {
    let plan = plan(3);
    let share = plan.total_bytes() / 3;
    let mut bad_path = TrialRecord::failed(
        spec("[0, 1, 2]", 3),
        "path: expected gds, saw cufile-posix".into(),
        "  evidence: constructed".into(),
        Some(constructed(1, share, &[1.0, 1.0], "cufile-posix", 20)),
    );
    bad_path.worker = Some(WorkerRun {
        dir: "/t/m/gpu1".into(),
        ending: Ending::Exited { code: 0 },
        seconds: 2.0,
        after_answer_seconds: None,
        exit_beside_next_seconds: None,
    });
    let shards = vec![
        passed(0, constructed(0, share, &[1.0, 1.0], "nvfs", 10)),
        (on(1), bad_path),
        passed(2, constructed(2, share, &[1.0, 1.0], "nvfs", 30)),
    ];
    let record = aggregate(spec("[0, 1, 2]", 3), &plan, Path::new("/t/m"), shards);
    assert_eq!(record.checks, Status::Failed);
    assert_eq!(
        record.reason.as_deref(),
        Some("GPU 1: path: expected gds, saw cufile-posix")
    );
    let details = record.details.unwrap();
    assert!(
        details.contains("GPU 1 (/t/m/gpu1): path: expected gds"),
        "{details}"
    );
    assert!(details.contains("evidence: constructed"), "{details}");
    let m = record.measurement.unwrap();
    assert_eq!(m.path, gds_model::path::Path::Mixed);
    assert_eq!(m.per_gpu[1].status, Status::Failed);
    assert_eq!(m.per_gpu[0].status, Status::Passed);
}

/// Constructed: a wrong byte on GPU 2 is reported at its file offset; two failed GPUs are both
/// named.
#[test]
fn integrity_failures_aggregate_with_the_first_wrong_byte() {
    let plan = plan(2);
    let share = MIB;
    let mut corrupt = constructed(1, share, &[1.0], "nvfs", 20);
    corrupt.integrity.checksum = Some(21);
    corrupt.integrity.bad_words = 2;
    corrupt.integrity.first_bad = Some(BadByte {
        file: "/data/gen-1".into(),
        file_offset: 4099,
        buffer_offset: 4099,
    });
    let spec = spec("[0, 1]", 2);
    let shards = vec![
        (
            on(0),
            TrialRecord::failed(
                spec.clone(),
                "the worker killed by signal 11 (SIGSEGV) without a result".into(),
                String::new(),
                None,
            ),
        ),
        (
            on(1),
            TrialRecord::failed(
                spec.clone(),
                "integrity: 2 bad 8-byte word(s); first wrong byte at offset 4099 of `/data/gen-1`"
                    .into(),
                String::new(),
                Some(corrupt),
            ),
        ),
    ];
    let record = aggregate(spec, &plan, Path::new("/t/m"), shards);
    assert_eq!(record.checks, Status::Failed);
    assert!(
        record
            .reason
            .as_deref()
            .unwrap()
            .starts_with("GPUs 0, 1 failed; GPU 0: the worker killed by signal 11")
    );
    let m = record.measurement.unwrap();
    // GPU 0 measured nothing: no repetition completed on every GPU, no trial checksum.
    assert!(m.seconds.is_empty() && m.median_gbps.is_none());
    assert_eq!(m.integrity.checksum, None);
    assert_eq!(m.integrity.bad_words, 2);
    assert_eq!(m.integrity.first_bad.unwrap().file_offset, 4099);
}

/// Only repetitions every GPU completed count; different paths make `mixed`.
#[test]
fn only_repetitions_every_gpu_completed_count() {
    let plan = plan(2);
    let shards = vec![
        passed(0, constructed(0, MIB, &[1.0, 1.0, 1.0], "nvfs", 1)),
        passed(1, constructed(1, MIB, &[2.0], "p2p", 2)),
    ];
    let record = aggregate(spec("[0, 1]", 2), &plan, Path::new("/t/m"), shards);
    let m = record.measurement.unwrap();
    assert_eq!(m.seconds, [2.0]);
    assert_eq!(m.gbps, [2.0 * MIB as f64 / 2.0 / 1e9]);
    assert_eq!(m.path, gds_model::path::Path::Mixed);
}

#[test]
fn ignored_gpus_ignore_the_trial_only_when_all_are_ignored() {
    let plan = plan(2);
    let spec = spec("[0, 1]", 2);
    let ignored = |gpu| {
        (
            on(gpu),
            TrialRecord::ignored(spec.clone(), "kvikio not found by python3".into()),
        )
    };
    let record = aggregate(
        spec.clone(),
        &plan,
        Path::new("/t/m"),
        vec![ignored(0), ignored(1)],
    );
    assert_eq!(record.checks, Status::Ignored);
    assert_eq!(
        record.reason.as_deref(),
        Some("kvikio not found by python3")
    );
    let record = aggregate(
        spec.clone(),
        &plan,
        Path::new("/t/m"),
        vec![
            passed(0, constructed(0, MIB, &[1.0], "nvfs", 1)),
            ignored(1),
        ],
    );
    assert_eq!(record.checks, Status::Failed);
    assert!(
        record
            .reason
            .unwrap()
            .starts_with("GPU 1 did not run (kvikio not found by python3)")
    );
}

#[test]
fn gpus_all_resolves_to_the_hosts_gpus() {
    assert_eq!(resolve(&GpuSet::All, &Ok(1)), Resolved::Gpus(vec![0]));
    assert_eq!(
        resolve(&GpuSet::All, &Ok(4)),
        Resolved::Gpus(vec![0, 1, 2, 3])
    );
    assert!(
        matches!(resolve(&GpuSet::All, &Ok(0)), Resolved::NoGpu(reason) if reason.contains("found no GPU"))
    );
    let unknown = Err(GpuCountError {
        cuda: Unavailable("libcuda.so.1 not found".into()),
        proc: std::io::Error::from(std::io::ErrorKind::NotFound),
    });
    assert!(matches!(
        resolve(&GpuSet::All, &unknown),
        Resolved::NoGpu(reason) if reason.starts_with("`gpus: all`: cannot count the GPUs: libcuda.so.1 not found, and /proc/driver/nvidia/gpus: ")
    ));
    assert_eq!(
        resolve(&GpuSet::List(vec![1, 0]), &Ok(2)),
        Resolved::Gpus(vec![1, 0])
    );
    assert_eq!(
        resolve(&GpuSet::List(vec![0, 3]), &Ok(2)),
        Resolved::Invalid(
            "`gpus: 0+3` names GPU 3, but this host has 2 GPU(s), numbered 0 to 1".into()
        )
    );
}

/// The orchestration with a stand-in worker: a shell script in place of the gate binary. Each
/// worker waits until all of them have started (a barrier: run one after another, the first
/// would wait forever and time out), then answers with the canned result of its GPU, made for
/// the spec its worker is sent.
fn orchestrate(
    gpus: &[u32],
    files: u64,
    canned: impl Fn(u32, &WorkerSpec) -> WorkerResult,
) -> (TrialRecord, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let barrier = dir.path().join("started");
    std::fs::create_dir(&barrier).unwrap();
    let set = gpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let spec = spec(&format!("[{set}]"), files as u32);
    let shards = gds_model::shard::split(&plan(files), gpus.len(), spec.task_size).unwrap();
    for (&gpu, shard) in gpus.iter().zip(shards) {
        let asked = WorkerSpec::new(
            TrialSpec {
                gpu,
                ..spec.clone()
            },
            shard,
        );
        std::fs::write(
            dir.path().join(format!("canned-gpu{gpu}.json")),
            serde_json::to_string(&canned(gpu, &asked)).unwrap(),
        )
        .unwrap();
    }
    let script = format!(
        "d=$(dirname \"$5\"); g=$(basename \"$d\"); touch {barrier}/$g\n\
         while [ $(ls {barrier} | wc -l) -lt {n} ]; do sleep 0.01; done\n\
         cp {canned}/canned-$g.json \"$5\"",
        barrier = barrier.display(),
        n = gpus.len(),
        canned = dir.path().display(),
    );
    let gate = dir.path().join("fake-gate");
    std::fs::write(&gate, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o755)).unwrap();
    let launcher = Launcher {
        gate,
        trials_dir: dir.path().join("trials"),
        strict: false,
        timeout: Some(Duration::from_secs(20)),
        gds_stats: None,
        env: Vec::new(),
        progress: None,
    };
    let trial_dir = dir.path().join("trials").join(slug(&spec.name));
    let parts = Part::per_gpu(&spec, gpus);
    let record = launcher.run_multi(spec, plan(files), &parts, &[]);
    (record, trial_dir, dir)
}

/// `m` as the complete answer to `asked`: its files, bytes and checksum.
fn answering(asked: &WorkerSpec, mut m: Measurement) -> Measurement {
    m.files = asked.plan.files.clone();
    m.bytes_per_repetition = asked.plan.total_bytes();
    m.integrity.checksum = Some(asked.expected_checksum);
    m.integrity.expected_checksum = Some(asked.expected_checksum);
    m
}

fn result(m: Option<Measurement>, failure: Option<WorkerFailure>) -> WorkerResult {
    WorkerResult {
        protocol: PROTOCOL_VERSION,
        measurement: m,
        failure,
        raw_cufile: None,
    }
}

#[test]
fn three_workers_run_at_once_each_in_its_folder_and_the_record_aggregates_them() {
    let (record, trial_dir, _keep) = orchestrate(&[0, 1, 2], 3, |gpu, asked| {
        let seconds = [0.5 + f64::from(gpu), 1.0];
        let m = constructed(gpu, MIB, &seconds, "host", 0);
        result(Some(answering(asked, m)), None)
    });
    assert_eq!(record.name, "multi::m[gpus=0+1+2]");
    assert_eq!(record.checks, Status::Passed, "{record:#?}");
    for gpu in 0..3u32 {
        let folder = trial_dir.join(format!("gpu{gpu}"));
        assert!(folder.join("result.json").is_file(), "{}", folder.display());
        let sent: WorkerSpec =
            serde_json::from_str(&std::fs::read_to_string(folder.join("spec.json")).unwrap())
                .unwrap();
        // Its GPU and its shard: one whole file each, buffer from 0.
        assert_eq!(sent.trial.gpu, gpu);
        assert_eq!(sent.plan.files.len(), 1);
        assert_eq!(sent.plan.files[0].seed, Some(u64::from(gpu)));
        assert_eq!(sent.plan.segments[0].buffer_offset, 0);
        assert_eq!(sent.expected_checksum, 0x1000 + u64::from(gpu));
    }
    let m = record.measurement.as_ref().unwrap();
    assert_eq!(m.seconds, [2.5, 1.0]);
    assert_eq!(m.gbps[0], 3.0 * MIB as f64 / 2.5 / 1e9);
    assert_eq!(m.integrity.checksum, Some(0x1000 + 0x1001 + 0x1002));
    let gpus: Vec<u32> = m.per_gpu.iter().map(|shard| shard.gpu).collect();
    assert_eq!(gpus, [0, 1, 2]);
    for shard in &m.per_gpu {
        let run = shard.worker.as_ref().unwrap();
        assert_eq!(run.dir, trial_dir.join(format!("gpu{}", shard.gpu)));
        // Judged on its own: the path verdict ran on each GPU's evidence.
        assert!(shard.measurement.as_ref().unwrap().path_evidence.is_some());
    }
    assert_eq!(record.worker.as_ref().unwrap().dir, trial_dir);
}

/// On a one-GPU host `gpus: all` is one worker on GPU 0 with the whole plan.
#[test]
fn one_gpu_runs_the_whole_plan_as_one_shard() {
    let (record, trial_dir, _keep) = orchestrate(&[0], 2, |gpu, asked| {
        let m = constructed(gpu, 2 * MIB, &[1.0, 2.0], "host", 0);
        result(Some(answering(asked, m)), None)
    });
    assert_eq!(record.checks, Status::Passed, "{record:#?}");
    let sent: WorkerSpec =
        serde_json::from_str(&std::fs::read_to_string(trial_dir.join("gpu0/spec.json")).unwrap())
            .unwrap();
    assert_eq!(sent.plan, plan(2));
    let m = record.measurement.unwrap();
    assert_eq!(m.seconds, [1.0, 2.0]);
    assert_eq!(m.per_gpu.len(), 1);
    // One worker's calls are the trial's: its percentiles are too.
    assert_eq!(m.latency, Some(latency(0)));
    assert_eq!(m.costs[1].latency, Some(latency(0)));
}

#[test]
fn a_worker_that_fails_fails_the_trial_naming_its_gpu() {
    let (record, trial_dir, _keep) = orchestrate(&[0, 1], 1, |gpu, asked| {
        let m = answering(asked, constructed(gpu, MIB / 2, &[1.0, 1.0], "host", 0));
        let failure = (gpu == 1).then(|| WorkerFailure {
            reason: "integrity: 1 bad 8-byte word(s); first wrong byte at offset 524296 of `/data/gen-0`".into(),
            next: "run it again".into(),
            missing: None,
        });
        result(Some(m), failure)
    });
    assert_eq!(record.checks, Status::Failed);
    assert_eq!(
        record.reason.as_deref(),
        Some(
            "GPU 1: integrity: 1 bad 8-byte word(s); first wrong byte at offset 524296 of `/data/gen-0`"
        )
    );
    // One file, two GPUs: contiguous halves of it, the second starting mid-file.
    let sent: WorkerSpec =
        serde_json::from_str(&std::fs::read_to_string(trial_dir.join("gpu1/spec.json")).unwrap())
            .unwrap();
    assert_eq!(sent.plan.segments[0].offset, MIB / 2);
    assert!(!sent.plan.covers_files);
}

/// A file of the user's cannot be split: the trial fails before any worker starts.
#[test]
fn a_plan_that_cannot_be_split_fails_the_trial() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = Launcher {
        gate: "unused".into(),
        trials_dir: dir.path().join("trials"),
        strict: false,
        timeout: None,
        gds_stats: None,
        progress: None,
        env: Vec::new(),
    };
    let user = ReadPlan::new(
        vec![PlannedFile {
            path: "/data/ckpt.bin".into(),
            size: MIB,
            seed: None,
            checksum: 1,
        }],
        &Pattern::Whole,
    );
    let spec = spec("[0, 1]", 1);
    let parts = Part::per_gpu(&spec, &[0, 1]);
    let record = launcher.run_multi(spec, user, &parts, &[]);
    assert_eq!(record.checks, Status::Failed);
    assert!(
        record
            .reason
            .unwrap()
            .contains("`/data/ckpt.bin` cannot be split across 2 GPUs")
    );
    assert!(
        record
            .details
            .unwrap()
            .contains("next: read your file with one GPU")
    );
}

/// Ranks share one GPU: their results are named by rank (and reader, where the ranks name
/// theirs), their cuFile rows of that GPU add up, and the GPU is named once.
#[test]
fn ranks_are_named_by_rank_and_their_counters_of_one_gpu_add_up() {
    let plan = plan(2);
    let mut spec = spec("[0, 1]", 2);
    spec.gpus = None;
    spec.ranks = vec![Reader::H2d, Reader::Kvikio];
    let rank = |rank: u32, reader| Part {
        gpu: 0,
        rank: Some(rank),
        reader,
        op: Op::Read,
    };
    let corrupt = TrialRecord::failed(
        spec.clone(),
        "integrity: 1 bad 8-byte word(s)".into(),
        String::new(),
        Some(constructed(0, MIB, &[2.0], "cufile-posix", 2)),
    );
    let shards = vec![
        (
            rank(0, Reader::H2d),
            TrialRecord::passed(spec.clone(), constructed(0, MIB, &[1.0], "cufile-posix", 1)),
        ),
        (rank(1, Reader::Kvikio), corrupt),
    ];
    let record = aggregate(spec, &plan, Path::new("/t/m"), shards);
    assert_eq!(record.checks, Status::Failed);
    assert_eq!(
        record.reason.as_deref(),
        Some("rank 1 (kvikio): integrity: 1 bad 8-byte word(s)")
    );
    let details = record.details.unwrap();
    assert!(
        details.contains("a trial over ranks 0, 1 on GPU 0: it fails when any of them fails"),
        "{details}"
    );
    let m = record.measurement.unwrap();
    assert_eq!(m.per_gpu[0].label(), "rank 0 (h2d)");
    let rows = &m.cufile.unwrap().stats.unwrap().gpus;
    assert_eq!(rows.len(), 1, "one GPU: {rows:?}");
    assert_eq!(
        rows[0].n_total_reads,
        2 * constructed(0, MIB, &[1.0], "cufile-posix", 1)
            .cufile
            .unwrap()
            .stats
            .unwrap()
            .gpus[0]
            .n_total_reads
    );
    assert_eq!(m.gpu.as_deref().map(|g| g.matches("GPU").count()), Some(1));
}
