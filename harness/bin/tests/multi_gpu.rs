//! The multi-GPU orchestration with the real worker binary (`gds-gate worker`), on a host without a
//! GPU: the `posix` reader stands in for a GPU reader (the suite validator refuses `gpus` for it,
//! so the spec is built by hand). Each "GPU" gets a real worker process that reads its shard of
//! real files at the same time as the others and verifies it; the record aggregates them. This is
//! the machinery a GPU run uses, minus the GPU: sharding, concurrent launch, per-shard folders,
//! per-shard verification at file offsets, aggregation.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use gds_gate::launch::Launcher;
use gds_gate::launch::multi::Part;
use gds_model::plan::{PlannedFile, ReadPlan};
use gds_model::protocol::WorkerSpec;
use gds_model::record::Status;
use gds_model::scenario::{self, Cache, GpuSet, Pattern, TrialSpec};

const GATE: &str = env!("CARGO_BIN_EXE_gds-gate");

fn files(dir: &Path, sizes: &[u64]) -> Vec<PlannedFile> {
    sizes
        .iter()
        .enumerate()
        .map(|(index, &size)| {
            let seed = 11 + index as u64;
            let path = dir.join(format!("gen-{seed}.bin"));
            let mut bytes = vec![0u8; size as usize];
            gds_model::verify::fill(seed, 0, &mut bytes);
            std::fs::write(&path, bytes).unwrap();
            PlannedFile {
                path,
                size,
                seed: Some(seed),
                checksum: gds_model::verify::expected_file_checksum(seed, size),
            }
        })
        .collect()
}

fn spec(gpus: &[u32], pattern: &str) -> TrialSpec {
    let suite = scenario::parse(
        Path::new("multi.yaml"),
        &format!(
            "scenarios:\n  - name: m\n    files: {{ size: 1MiB }}\n    nthreads: 2\n    task_size: 64KiB\n    pattern: {pattern}\n    cache: warm\n    warmup: 0\n    repetitions: 3\n"
        ),
    )
    .unwrap();
    let mut spec = scenario::expand(&suite).remove(0);
    spec.gpus = Some(GpuSet::List(gpus.to_vec()));
    spec.name = format!("multi::m[gpus={}]", GpuSet::List(gpus.to_vec()));
    assert_eq!(spec.cache, Cache::Warm);
    spec
}

fn launcher(dir: &Path) -> Launcher {
    Launcher {
        gate: GATE.into(),
        trials_dir: dir.join("trials"),
        strict: true,
        timeout: Some(Duration::from_secs(60)),
        gds_stats: None,
        env: Vec::new(),
        progress: None,
    }
}

/// One file of odd size over three workers: contiguous ranges, each read and verified by its own
/// worker process; the aggregate is every byte over the slowest worker of each repetition.
#[test]
fn real_workers_read_and_verify_their_shards_concurrently() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for pattern in ["whole", "{ chunks: 100003 }"] {
        let plan = ReadPlan::new(
            files(dir.path(), &[3 * (1 << 20) + 13]),
            &pattern_of(pattern),
        );
        let spec = spec(&[0, 1, 2], pattern);
        let parts = Part::per_gpu(&spec, &[0, 1, 2]);
        let record = launcher(dir.path()).run_multi(spec, plan.clone(), &parts, &[]);
        assert_eq!(record.checks, Status::Passed, "{pattern}: {record:#?}");
        let m = record.measurement.as_ref().unwrap();
        assert_eq!(m.per_gpu.len(), 3);
        let mut next_offset = 0;
        for (gpu, shard) in m.per_gpu.iter().enumerate() {
            assert_eq!(shard.gpu, gpu as u32);
            assert_eq!(shard.status, Status::Passed);
            let own = shard.measurement.as_ref().unwrap();
            assert!(
                own.integrity.passed(),
                "{pattern}: GPU {gpu}: {:?}",
                own.integrity
            );
            assert_eq!(own.seconds.len(), 3);
            let folder = &shard.worker.as_ref().unwrap().dir;
            assert!(
                folder.ends_with(format!("gpu{gpu}")),
                "{}",
                folder.display()
            );
            let sent: WorkerSpec =
                serde_json::from_str(&std::fs::read_to_string(folder.join("spec.json")).unwrap())
                    .unwrap();
            assert_eq!(sent.trial.gpu, gpu as u32);
            assert_eq!(
                sent.plan.segments[0].offset, next_offset,
                "{pattern}: GPU {gpu}"
            );
            let last = sent.plan.segments.last().unwrap();
            next_offset = last.offset + last.len;
        }
        assert_eq!(next_offset, plan.files[0].size);
        let bytes_read: u64 = m
            .per_gpu
            .iter()
            .map(|shard| shard.measurement.as_ref().unwrap().bytes_per_repetition)
            .sum();
        assert_eq!(bytes_read, plan.total_bytes());
        for r in 0..3 {
            let slowest = m
                .per_gpu
                .iter()
                .map(|shard| shard.measurement.as_ref().unwrap().seconds[r])
                .fold(0.0, f64::max);
            assert_eq!(m.seconds[r], slowest);
            assert_eq!(m.gbps[r], plan.total_bytes() as f64 / slowest / 1e9);
        }
        assert_eq!(m.integrity.checksum, m.integrity.expected_checksum);
        assert_eq!(m.path, gds_model::path::Path::Host);
    }
}

/// A byte changed on disk in the second worker's range: that worker reports it at its file
/// offset, and the trial fails naming its GPU.
#[test]
fn a_corrupt_byte_fails_the_gpu_that_read_it_at_its_file_offset() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let files = files(dir.path(), &[1 << 20, 1 << 20]);
    let at = 700_001;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&files[1].path)
        .unwrap();
    let mut byte = [0u8; 1];
    std::fs::File::open(&files[1].path)
        .unwrap()
        .read_exact_at(&mut byte, at)
        .unwrap();
    file.write_all_at(&[byte[0] ^ 0xff], at).unwrap();
    drop(file);
    // Two files, two GPUs: whole files, round-robin; GPU 1 reads the second file.
    let plan = ReadPlan::new(files.clone(), &Pattern::Whole);
    let spec = spec(&[0, 1], "whole");
    let parts = Part::per_gpu(&spec, &[0, 1]);
    let record = launcher(dir.path()).run_multi(spec, plan, &parts, &[]);
    assert_eq!(record.checks, Status::Failed);
    let reason = record.reason.unwrap();
    assert!(
        reason.starts_with(
            "GPU 1: integrity: 1 bad 8-byte word(s); first wrong byte at offset 700001 of"
        ),
        "{reason}"
    );
    assert!(reason.contains("gen-12.bin"), "{reason}");
    let m = record.measurement.unwrap();
    assert_eq!(m.per_gpu[0].status, Status::Passed);
    assert_eq!(m.per_gpu[1].status, Status::Failed);
}

fn pattern_of(text: &str) -> Pattern {
    match text {
        "whole" => Pattern::Whole,
        _ => spec(&[0], text).pattern,
    }
}
