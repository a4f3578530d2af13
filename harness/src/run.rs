//! Runs one trial: read the plan `warmup + repetitions` times, verify every pass, judge.

use std::fs::File;
use std::time::Instant;

use rayon::prelude::*;

use crate::cache;
use crate::data::format_bytes;
use crate::hex;
use crate::host::{self, HostFacts};
use crate::integrity::{self, IntegrityResult};
use crate::plan::ReadPlan;
use crate::prepare::DataSet;
use crate::reader::posix;
use crate::record::{Measurement, TrialRecord, median};
use crate::scenario::{Cache, Integrity, Reader, TrialSpec};

/// A cold read that finds more than this fraction of a file cached measures memory, not storage.
const MAX_RESIDENT_AFTER_DROP: f64 = 0.05;

/// Why a trial cannot run on this host or build, if it cannot.
pub fn unavailable(spec: &TrialSpec, host: &HostFacts) -> Option<String> {
    if !spec.reader.uses_gpu() {
        return None;
    }
    if let Some(reason) = &host.gpu_unavailable {
        return Some(reason.clone());
    }
    Some(format!(
        "reader `{}` is not available in this build of the gate",
        spec.reader.name()
    ))
}

pub fn run(spec: TrialSpec, data: &DataSet) -> TrialRecord {
    match spec.reader {
        Reader::Posix => run_posix(spec, data),
        other => {
            let reason = format!(
                "reader `{}` is not available in this build of the gate",
                other.name()
            );
            TrialRecord::ignored(spec, reason)
        }
    }
}

/// A failure before or during measurement: the reason line, the details, and what was measured.
struct Failure {
    reason: String,
    details: String,
    measurement: Option<Measurement>,
}

fn run_posix(spec: TrialSpec, data: &DataSet) -> TrialRecord {
    let started = Instant::now();
    let files = match data.files_for(&spec.files) {
        Ok(files) => files,
        Err(error) => {
            let details = format!(
                "{}\n  next: fix the data problem above and run again",
                where_(&spec)
            );
            return TrialRecord::failed(
                spec,
                format!("test data unavailable: {error}"),
                details,
                None,
            );
        }
    };
    let plan = ReadPlan::new(files, &spec.pattern);
    match measure(&spec, &plan, started) {
        Ok(measurement) => TrialRecord {
            name: spec.name.clone(),
            status: crate::record::Status::Passed,
            reason: None,
            details: None,
            spec,
            measurement: Some(measurement),
        },
        Err(failure) => {
            TrialRecord::failed(spec, failure.reason, failure.details, failure.measurement)
        }
    }
}

fn measure(
    spec: &TrialSpec,
    plan: &ReadPlan,
    started: Instant,
) -> Result<Measurement, Box<Failure>> {
    let bytes = plan.total_bytes();
    let fail = |reason: String, next: &str| {
        Box::new(Failure {
            reason,
            details: format!("{}\n  next: {next}", where_(spec)),
            measurement: None,
        })
    };
    if let Some(available) = host::available_memory().filter(|available| bytes > *available) {
        return Err(fail(
            format!(
                "the read buffer needs {} of host memory, only {} is available",
                format_bytes(bytes, 2),
                format_bytes(available, 2)
            ),
            "use smaller files or `pattern: { random: ... }`, or run on a host with more memory",
        ));
    }
    let handles = plan
        .files
        .iter()
        .map(|file| {
            File::open(&file.path).map_err(|error| {
                fail(
                    format!("cannot open `{}`: {error}", file.path.display()),
                    "check that the file exists and is readable",
                )
            })
        })
        .collect::<Result<Vec<File>, _>>()?;
    // Touch every page once (with a pattern no generated file has) so that page faults of a fresh
    // allocation never land inside a timed read.
    let mut buffer = vec![0u8; bytes as usize];
    buffer
        .par_chunks_mut(1 << 20)
        .for_each(|chunk| chunk.fill(0xA5));

    let mut m = Measurement {
        files: plan.files.clone(),
        bytes_per_repetition: bytes,
        warmup_seconds: Vec::new(),
        seconds: Vec::new(),
        gbps: Vec::new(),
        median_gbps: f64::NAN,
        path: "host".into(),
        integrity: IntegrityResult::not_checked(Integrity::None),
        resident_after_drop: None,
        verify_seconds: 0.0,
        total_seconds: 0.0,
    };
    let expected = integrity::expected_checksum(plan);
    let passes = spec.warmup + spec.repetitions;
    for pass in 0..passes {
        let warmup = pass < spec.warmup;
        if spec.cache == Cache::Cold {
            let resident = drop_cache(plan, &handles).map_err(|reason| {
                fail(
                    reason,
                    "check that the data dir is on a local or parallel file system, not tmpfs",
                )
            })?;
            m.resident_after_drop = Some(m.resident_after_drop.unwrap_or(0.0).max(resident));
            if resident > MAX_RESIDENT_AFTER_DROP {
                let reason = format!(
                    "cold cache not reached: {:.0}% of the data was still in the page cache after dropping it",
                    resident * 100.0
                );
                return Err(fail(
                    reason,
                    "put --data-dir (GDS_GATE_DATA_DIR) on a disk-backed file system (tmpfs cannot drop pages), or use `cache: warm`",
                ));
            }
        }
        let elapsed = posix::read(plan, &handles, &mut buffer, spec.nthreads, spec.task_size)
            .map_err(|error| {
                fail(
                    format!("read failed: {}", crate::error_chain(&error)),
                    "check the storage (dmesg) and that the files are not being modified",
                )
            })?;
        let seconds = elapsed.as_secs_f64();
        if warmup {
            m.warmup_seconds.push(seconds);
        } else {
            m.seconds.push(seconds);
            m.gbps.push(bytes as f64 / seconds / 1e9);
        }
        let Ok(integrity) = integrity::check(
            plan,
            &mut integrity::HostBuffer(&buffer),
            spec.expect.integrity,
            expected,
        );
        m.verify_seconds += integrity.seconds;
        let passed = integrity.passed();
        m.integrity = integrity;
        if !passed {
            m.median_gbps = median(&m.gbps);
            m.total_seconds = started.elapsed().as_secs_f64();
            let mut failure = integrity_failure(spec, &m.integrity, pass + 1, passes);
            failure.measurement = Some(m);
            return Err(Box::new(failure));
        }
    }
    m.median_gbps = median(&m.gbps);
    m.total_seconds = started.elapsed().as_secs_f64();
    Ok(m)
}

/// Drops every file's pages and returns the largest fraction still resident.
fn drop_cache(plan: &ReadPlan, handles: &[File]) -> Result<f64, String> {
    let mut worst: f64 = 0.0;
    for (file, handle) in plan.files.iter().zip(handles) {
        cache::drop_pages(handle).map_err(|error| {
            format!(
                "cannot drop the page cache of `{}`: {error}",
                file.path.display()
            )
        })?;
        let resident = cache::resident_fraction(handle, file.size).map_err(|error| {
            format!(
                "cannot measure the page cache of `{}`: {error}",
                file.path.display()
            )
        })?;
        worst = worst.max(resident);
    }
    Ok(worst)
}

fn integrity_failure(
    spec: &TrialSpec,
    result: &IntegrityResult,
    pass: u32,
    passes: u32,
) -> Failure {
    let checksums = format!(
        "checksum: expected {}, got {}",
        result.expected_checksum.map_or("-".into(), hex::format),
        result.checksum.map_or("-".into(), hex::format)
    );
    let reason = match &result.first_bad {
        Some(bad) => format!(
            "integrity: {} bad 8-byte word(s); first wrong byte at offset {} of `{}` (pass {pass} of {passes})",
            result.bad_words,
            bad.file_offset,
            bad.file.display()
        ),
        None => format!("integrity: checksum mismatch (pass {pass} of {passes})"),
    };
    let details = format!(
        "{}\n  {checksums}\n  next: the bytes that arrived in memory differ from the file. Run the trial again; if it repeats, the read path corrupts data: check `dmesg` for I/O errors and the storage's health. A file changed on purpose is regenerated or re-checksummed on the next run.",
        where_(spec)
    );
    Failure {
        reason,
        details,
        measurement: None,
    }
}

/// `scenario `cold-read` at scenarios/smoke.yaml:12, reader posix`.
fn where_(spec: &TrialSpec) -> String {
    format!(
        "  scenario: `{}` at {}:{}, reader {}",
        spec.scenario,
        spec.source_file.display(),
        spec.source_line,
        spec.reader.name()
    )
}
