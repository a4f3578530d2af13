//! Test fixtures: trial records with chosen samples, path and checksum, built from a real suite so
//! that they stay valid as `TrialSpec` grows.

use std::path::Path;

use super::fingerprint::Fingerprint;
use gds_model::cost::{CpuTime, PassCost};
use gds_model::numbers::median;
use gds_model::record::{Measurement, Status, TrialRecord};
use gds_model::scenario::{self, TrialSpec};

pub const CHECKSUM: u64 = 0x0123_4567_89ab_cdef;

/// A spec named `name` with tolerance 10%.
pub fn spec(name: &str) -> TrialSpec {
    let suite = scenario::parse(
        Path::new("fixture.yaml"),
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n",
    )
    .expect("fixture suite");
    let mut spec = scenario::expand(&suite).remove(0);
    spec.name = name.to_string();
    spec
}

/// Records start from the constructors and measurements from JSON, so that fields later changes
/// add to them (with defaults) do not break these fixtures.
pub fn passed(name: &str, gbps: &[f64], path: &str, checksum: u64) -> TrialRecord {
    let mut record = TrialRecord::ignored(spec(name), String::new());
    record.checks = Status::Passed;
    record.status = gds_model::outcome::Outcome::Passed;
    record.reason = None;
    record.measurement = Some(measurement(gbps, path, checksum));
    record
}

pub fn failed(name: &str, gbps: &[f64]) -> TrialRecord {
    TrialRecord::failed(
        spec(name),
        "wrong path: expected nvfs, saw cufile-posix".into(),
        "details".into(),
        Some(measurement(gbps, "cufile-posix", CHECKSUM)),
    )
}

pub fn ignored(name: &str) -> TrialRecord {
    TrialRecord::ignored(
        spec(name),
        "no NVIDIA driver (libcuda.so.1 not found)".into(),
    )
}

pub fn measurement(gbps: &[f64], path: &str, checksum: u64) -> Measurement {
    let json = serde_json::json!({
        "files": [],
        "bytes_per_repetition": 1u64 << 30,
        "warmup_seconds": [0.5],
        "seconds": gbps.iter().map(|g| 1.073_741_824 / g).collect::<Vec<_>>(),
        "gbps": gbps,
        "median_gbps": median(gbps),
        "path": path,
        "integrity": {
            "method": "exact",
            "checksum": gds_model::hex::format(checksum),
            "expected_checksum": gds_model::hex::format(checksum),
            "bad_words": 0,
            "first_bad": null,
            "seconds": 0.1,
        },
        "resident_after_drop": 0.0,
        "verify_seconds": 0.1,
        "total_seconds": 3.0,
    });
    serde_json::from_value(json).expect("fixture measurement")
}

/// `record` with the CPU cost of each measured pass, CPU seconds per GiB (the passes read 1 GiB).
pub fn with_cpu(mut record: TrialRecord, cpu_per_gib: &[f64]) -> TrialRecord {
    let m = record.measurement.as_mut().expect("a measured record");
    m.costs = m
        .seconds
        .iter()
        .zip(cpu_per_gib)
        .map(|(&seconds, &cpu)| {
            let cpu = CpuTime {
                user_seconds: cpu * 0.25,
                system_seconds: cpu * 0.75,
            };
            PassCost::new(1 << 30, seconds, 256, Some(cpu), None)
        })
        .collect();
    record
}

/// A load's set-up steps (`op: load`), the same for every pass: seconds to the first byte, to
/// open and to register the buffer.
pub fn with_load(
    mut record: TrialRecord,
    first_byte: f64,
    open: f64,
    register: f64,
) -> TrialRecord {
    let m = record.measurement.as_mut().expect("a measured record");
    let passes = m.seconds.len();
    m.load = Some(gds_model::record::LoadFigures {
        open_seconds: vec![open; passes],
        register_seconds: vec![register; passes],
        first_byte_seconds: vec![first_byte; passes],
    });
    record
}

/// Fixture, not measured: every pass of `record` read with these p50, p95 and p99 latencies (µs)
/// beside writing ranks.
pub fn with_read_latency(mut record: TrialRecord, [p50, p95, p99]: [f64; 3]) -> TrialRecord {
    let m = record.measurement.as_mut().expect("a measured record");
    let passes = m.seconds.len();
    m.read_latency = Some(gds_model::cost::PassLatencies {
        p50_us: vec![p50; passes],
        p95_us: vec![p95; passes],
        p99_us: vec![p99; passes],
    });
    record
}

pub fn fingerprint() -> Fingerprint {
    Fingerprint {
        gpu_model: Some("NVIDIA H200".into()),
        gpu_count: Some(1),
        driver: Some("580.159".into()),
        cuda: Some("13.0".into()),
        libcufile: Some("1.15.1".into()),
        kvikio: Some("26.10".into()),
        torch: None,
        nvidia_fs_loaded: true,
        nvidia_fs_version: Some("2.26".into()),
        kernel: Some("6.8.0-60-generic".into()),
        data_dir_fs: Some("ext4".into()),
        data_dir_device: Some("/dev/nvme0n1".into()),
        cufile_json_hash: Some("fnv1a64:0x00000000deadbeef".into()),
    }
}

pub const BASE: [f64; 5] = [2.00, 2.05, 1.97, 2.02, 1.99];
pub const SLOW: [f64; 5] = [1.60, 1.63, 1.58, 1.61, 1.65];
pub const NOISE: [f64; 5] = [2.03, 1.96, 2.01, 1.98, 2.04];
pub const FAST: [f64; 5] = [2.60, 2.50, 2.55, 2.62, 2.58];

/// A history of one trial on `runner`: one run per entry of `medians` (GB/s, three passes within
/// ±1%), an hour apart from `first`, on [`fingerprint`]'s runner.
pub fn history(
    trial: &str,
    runner: &str,
    first: std::time::SystemTime,
    medians: &[f64],
) -> super::history::History {
    let lines = medians
        .iter()
        .enumerate()
        .map(|(i, &m)| {
            let time = first + std::time::Duration::from_secs(3600 * i as u64);
            let record = passed(trial, &[m * 0.99, m, m * 1.01], "nvfs", CHECKSUM);
            super::history::HistoryLine::new(
                humantime::format_rfc3339_seconds(time).to_string(),
                runner,
                "h",
                &fingerprint(),
                &[record],
            )
        })
        .collect();
    super::history::History {
        lines,
        skipped: Vec::new(),
    }
}

/// Run medians of a creep, as the drill makes one: `clean` runs at `level`, then `per_step` runs
/// at each of 95%, 90% and 85% of it, each run within ±1% (a fixed pattern, not random).
pub fn creep_medians(level: f64, clean: usize, per_step: usize) -> Vec<f64> {
    let steps = [1.0, 0.95, 0.90, 0.85];
    (0..clean + 3 * per_step)
        .map(|i| {
            let step = if i < clean {
                0
            } else {
                1 + (i - clean) / per_step
            };
            let wobble = 1.0 + 0.005 * ((i * 7 % 5) as f64 - 2.0);
            level * steps[step] * wobble
        })
        .collect()
}

/// Fixture, not measured: a reading of a 2-core host with the given load and share of its CPU
/// time in other processes, no steal, PSI without stalls but the control's own I/O.
pub fn host(load: f64, others: f64) -> gds_model::busy::HostReading {
    gds_model::busy::HostReading {
        seconds: 1.0,
        cores: 2,
        load,
        others_cpu: others,
        steal: 0.0,
        pressure: Some(gds_model::busy::Pressure {
            cpu: 0.0,
            io: 0.5,
            memory: 0.0,
        }),
        others_disk_gbps: None,
    }
}
