//! One trial, inside its worker process: open the reader the trial names, run `warmup + repetitions` passes (cold
//! cache dropped before each when asked), verify every pass where the bytes are, and gather the
//! path evidence the reader can give.

mod cold;
mod recheck;
pub mod write;

pub use cold::finish_wind_down;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::gpu::Gpu;
use crate::libcufile::{self, Cufile, CufileError};
use crate::reader::async_io::AsyncReader;
use crate::reader::batch::BatchReader;
use crate::reader::bounce::Bounce;
use crate::reader::cufile::CufileReader;
use crate::reader::posix::Posix;
use crate::reader::stream::{PassSettings, run_pass};
use crate::reader::{PlanReader, ReaderError};
use crate::writer::PlanWriter;
use crate::writer::async_io::AsyncWriter;
use crate::writer::cufile::CufileWriter;
use gds_model::cost::{Histogram, PassCost};
use gds_model::hex;
use gds_model::integrity::IntegrityResult;
use gds_model::numbers::median;
use gds_model::plan::ReadPlan;
use gds_model::record::{Measurement, MemoryPeak};
use gds_model::scenario::{Cache, Op, Reader};

use gds_model::protocol::{
    CUFILE_DRIVER_OPEN, GPU_CONTEXT, IO_DONE, PROTOCOL_VERSION, RELEASED, SAMPLED, WORKER_WAIT,
    WorkerFailure, WorkerResult, WorkerSpec,
};
use gds_model::record::{CufileEvidence, LoadedCufile};

/// The trial worker: a spec of another protocol version is refused in the result.
pub fn run(spec: WorkerSpec) -> WorkerResult {
    if spec.protocol == PROTOCOL_VERSION {
        return measure(&spec);
    }
    WorkerResult::failed(
        format!(
            "the gate speaks protocol {}, this worker {PROTOCOL_VERSION}",
            spec.protocol
        ),
        "rebuild the gate".into(),
    )
}

fn measure(spec: &WorkerSpec) -> WorkerResult {
    let started = Instant::now();
    let mut m = Measurement::unmeasured(spec.plan.files.clone(), spec.plan.total_bytes());
    // Writing trials hold their files whole (`validate` refuses a smaller window for them).
    let failure = match spec.trial.reader {
        Reader::Posix if spec.trial.op.writes() => write::posix(spec, &mut m),
        Reader::Posix => {
            let window = window_for(spec, gds_model::meminfo::available_memory());
            open_posix(spec, window)
                .and_then(|mut reader| passes(spec, &mut reader, &mut m, window, &mut || {}))
        }
        Reader::H2d if spec.trial.op.writes() => {
            with_gpu(spec, &mut m, |gpu, m| write::h2d(spec, gpu, m))
        }
        Reader::H2d => with_gpu(spec, &mut m, |gpu, m| {
            let t = &spec.trial;
            let window = window_for(spec, gpu.memory_total().ok());
            let mut reader = Bounce::open(
                gpu,
                &spec.plan,
                t.nthreads,
                t.bounce_buffer_size,
                t.task_size,
                capacity(spec, window),
            )
            .map_err(fail)?;
            passes(spec, &mut reader, m, window, &mut || {})
        }),
        Reader::Cufile | Reader::CufileBatch | Reader::CufileAsync => {
            with_gpu_and_cufile(spec, &mut m)
        }
        Reader::Kvikio | Reader::Torch => Err(WorkerFailure {
            reason: format!(
                "the Rust worker does not run {} trials",
                spec.trial.reader.name()
            ),
            next: "this is a bug in gds-gate: KvikIO and PyTorch trials go to the Python worker"
                .into(),
            missing: None,
        }),
    }
    .err();
    m.memory = Some(MemoryPeak {
        host_rss_bytes: gds_model::meminfo::peak_rss(),
        ..m.memory.unwrap_or_default()
    });
    m.median_gbps = (!m.gbps.is_empty()).then(|| median(&m.gbps));
    m.total_seconds = started.elapsed().as_secs_f64();
    m.answered_unix_ns = Some(gds_model::protocol::now_unix_ns());
    WorkerResult {
        protocol: PROTOCOL_VERSION,
        measurement: Some(m),
        failure,
        raw_cufile: None,
    }
}

/// A reader's error as the trial's failure, for the gate.
pub fn fail(error: ReaderError) -> WorkerFailure {
    // A libcufile without the reader's entry point cannot run the trial at all: the gate
    // reports it ignored with the reason, as it does a host without KvikIO.
    let missing = match &error {
        ReaderError::Cufile(CufileError::MissingEntryPoint { symbol, .. }) => {
            Some(symbol.to_string())
        }
        _ => None,
    };
    WorkerFailure {
        reason: gds_model::error_chain(&error),
        next: error.next_step(),
        missing,
    }
}

/// A reader's error in a pass, the pass named on its first line (before the causes), as an
/// integrity failure names it: a failure in the warm-up and one after five good passes point at
/// different causes.
pub(crate) fn fail_in_pass(error: ReaderError, pass: u64, passes: u64) -> WorkerFailure {
    let mut failure = fail(error);
    let at = failure.reason.find('\n').unwrap_or(failure.reason.len());
    failure
        .reason
        .insert_str(at, &format!(" (pass {pass} of {passes})"));
    failure
}

fn open_posix(spec: &WorkerSpec, window: Option<u64>) -> Result<Posix, WorkerFailure> {
    Posix::open(&spec.plan, capacity(spec, window)).map_err(fail)
}

/// The window this trial reads through, given the memory of its destination. A load reads its
/// files whole into one buffer, as a loader does.
pub fn window_for(spec: &WorkerSpec, memory: Option<u64>) -> Option<u64> {
    match spec.trial.op {
        Op::Load => None,
        _ => spec.trial.window.resolve(spec.plan.total_bytes(), memory),
    }
}

/// What the reader allocates: one window, or the whole pass.
fn capacity(spec: &WorkerSpec, window: Option<u64>) -> u64 {
    window.unwrap_or_else(|| spec.plan.total_bytes())
}

fn with_gpu(
    spec: &WorkerSpec,
    m: &mut Measurement,
    body: impl FnOnce(&mut Gpu, &mut Measurement) -> Result<(), WorkerFailure>,
) -> Result<(), WorkerFailure> {
    let lap = Instant::now();
    let mut gpu = Gpu::open(spec.trial.gpu).map_err(|error| fail(error.into()))?;
    m.setup
        .push((GPU_CONTEXT.into(), lap.elapsed().as_secs_f64()));
    m.gpu = Some(format!("{} (GPU {})", gpu.name, gpu.ordinal));
    body(&mut gpu, m)
}

/// The CUDA context, then cuFile's driver on this same thread, as KvikIO's worker has them. Opened
/// side by side on two threads (a few hundred milliseconds sooner to the first byte), the cufile
/// reader at one thread read at a median 0.80 of KvikIO over 23 interleaved runs on the H200;
/// opened in turn, 1.00 over 21 (`bench --parity --threads 1 --rows cufile,kvikio`).
fn with_gpu_and_cufile(spec: &WorkerSpec, m: &mut Measurement) -> Result<(), WorkerFailure> {
    with_gpu(spec, m, |gpu, m| {
        let lap = Instant::now();
        let library = Cufile::load().map_err(|error| fail(error.into()))?;
        library.open_driver().map_err(|error| fail(error.into()))?;
        m.setup
            .push((CUFILE_DRIVER_OPEN.into(), lap.elapsed().as_secs_f64()));
        with_cufile(spec, gpu, &library, m)
    })
}

/// cuFile's statistics around the reads: the counters are the only witness of which path cuFile
/// took.
fn with_cufile(
    spec: &WorkerSpec,
    gpu: &mut Gpu,
    library: &Cufile,
    m: &mut Measurement,
) -> Result<(), WorkerFailure> {
    let mut lap = Instant::now();
    let mut phase = |m: &mut Measurement, name: &str| {
        m.setup
            .push((name.to_string(), lap.elapsed().as_secs_f64()));
        lap = Instant::now();
    };
    let mut evidence = CufileEvidence {
        library: library.path.clone(),
        version: library.version.to_string(),
        requested_bytes: spec.plan.total_bytes().saturating_mul(spec.trial.passes()),
        ..Default::default()
    };
    let result = (|| {
        evidence.properties = library.properties().ok();
        let before = match library.start_stats().and_then(|()| library.stats()) {
            Ok(stats) => Some(stats),
            Err(error) => {
                evidence.stats_unavailable = Some(error.to_string());
                None
            }
        };
        phase(m, "cuFile statistics on");
        let mut measured_before = None;
        let (plan, buffer) = (&spec.plan, spec.trial.buffer);
        let outcome = if spec.trial.op.writes() {
            // The writer first: it creates the files a roundtrip's reader then opens. Both hold
            // the whole pass: writing trials do not stream. The stream-ordered reader writes and
            // reads back through cuFile's stream API.
            let whole = plan.total_bytes();
            let (asynchronous, depth) = (
                spec.trial.reader == Reader::CufileAsync,
                spec.trial.queue_depth,
            );
            let mut writer: Box<dyn PlanWriter + '_> = if asynchronous {
                Box::new(AsyncWriter::open(gpu, library, plan, buffer, depth).map_err(fail)?)
            } else {
                Box::new(CufileWriter::open(gpu, library, plan, buffer).map_err(fail)?)
            };
            let mut reader: Option<Box<dyn PlanReader + '_>> = match spec.trial.op {
                Op::Roundtrip if asynchronous => Some(Box::new(
                    AsyncReader::open(gpu, library, plan, buffer, depth, whole).map_err(fail)?,
                )),
                Op::Roundtrip => Some(Box::new(
                    CufileReader::open(gpu, library, plan, buffer, whole).map_err(fail)?,
                )),
                _ => None,
            };
            phase(m, "device buffers, generated source and file registration");
            let read_back = reader.as_mut().map(|r| r.as_mut() as &mut dyn PlanReader);
            let outcome = write::passes(spec, writer.as_mut(), read_back, m, &mut || {});
            hold_for_sample(spec.hold_for_sampling.as_deref());
            outcome
        } else {
            // Every reading cuFile reader streams through the same window of its device buffer.
            let window = window_for(spec, gpu.memory_total().ok());
            let capacity = capacity(spec, window);
            let (depth, size) = (spec.trial.queue_depth, spec.trial.batch_size);
            let (mut reader, set_up): (Box<dyn PlanReader + '_>, _) = match spec.trial.reader {
                Reader::CufileAsync => (
                    Box::new(
                        AsyncReader::open(gpu, library, plan, buffer, depth, capacity)
                            .map_err(fail)?,
                    ),
                    "streams, device buffer and file registration",
                ),
                Reader::CufileBatch => (
                    Box::new(
                        BatchReader::open(gpu, library, plan, buffer, depth, size, capacity)
                            .map_err(fail)?,
                    ),
                    "batches, device buffer and file registration",
                ),
                _ => (
                    Box::new(
                        CufileReader::open(gpu, library, plan, buffer, capacity).map_err(fail)?,
                    ),
                    "device buffer and file registration",
                ),
            };
            phase(m, set_up);
            // cuFile's counters as the measured passes begin: its own count and latency of the
            // very calls the gate timed (the whole trial's counters stay the path evidence).
            let mut measured_from = || {
                if before.is_some() {
                    measured_before = library.stats().ok();
                }
            };
            let outcome = passes(spec, reader.as_mut(), m, window, &mut measured_from);
            hold_for_sample(spec.hold_for_sampling.as_deref());
            outcome
        };
        if let Some(before) = before {
            match library.stats() {
                Ok(after) => {
                    evidence.measured_stats = measured_before.map(|from| after.since(&from));
                    evidence.stats = Some(after.since(&before));
                }
                Err(error) => evidence.stats_unavailable = Some(error.to_string()),
            }
        }
        outcome
    })();
    evidence.loaded_copies = libcufile::loaded_paths("libcufile.so");
    m.cufile = Some(evidence);
    m.libcufile = Some(LoadedCufile {
        path: library.path.clone(),
        version: library.version.to_string(),
    });
    result
}

/// Warmup and measured passes: drop the cache, clear the destination, read (timed), verify.
/// `measured_from` runs as the first measured pass is about to read. A cold trial's drop after a
/// pass starts as its reads end ([`cold`]); the last one runs on past the answer
/// ([`finish_wind_down`]).
pub fn passes(
    spec: &WorkerSpec,
    reader: &mut dyn PlanReader,
    m: &mut Measurement,
    window: Option<u64>,
    measured_from: &mut dyn FnMut(),
) -> Result<(), WorkerFailure> {
    let (trial, plan) = (&spec.trial, &spec.plan);
    m.path = reader.path();
    m.window = window;
    let windows = window.map(|size| plan.windows(size));
    let settings = PassSettings {
        nthreads: trial.nthreads,
        task_size: trial.task_size,
        method: trial.expect.integrity,
        expected: spec.expected_checksum,
    };
    // Sampled from the first timed byte on: before it, a worker started ahead would count the
    // memory of the previous worker, still exiting.
    let mut device_peak = None;
    let cold = match trial.cache {
        Cache::Cold => Some(cold::CachedFiles::open(plan)?),
        Cache::Warm => None,
    };
    hold_until_released(spec, m);
    let mut pending = cold.as_ref().map(cold::CachedFiles::start_drop);
    let total = trial.passes();
    // The measured passes' calls, merged: the trial's percentiles.
    let mut latency = Histogram::default();
    // However the passes end, the last drop runs on past the answer.
    let outcome = (|| {
        for pass in 0..total {
            // The destination is cleared while the drop runs on; then the drop is waited for.
            let lap = Instant::now();
            let in_pass = |error| fail_in_pass(error, pass + 1, total);
            reader.prepare().map_err(in_pass)?;
            let cleared = lap.elapsed();
            if let Some(drop) = pending.take() {
                let resident = drop.finish()?;
                m.resident_after_drop = Some(m.resident_after_drop.unwrap_or(0.0).max(resident));
            }
            if pass > 0 {
                m.add_preparation(lap.elapsed());
            }
            if pass == 0 {
                // The first pass's preparation is part of the start-up; its phases say how much.
                m.setup.push((
                    gds_model::record::CLEARED_PHASE.into(),
                    cleared.as_secs_f64(),
                ));
                if cold.is_some() {
                    m.setup.push((
                        gds_model::record::DROPPED_PHASE.into(),
                        (lap.elapsed() - cleared).as_secs_f64(),
                    ));
                }
                ready_for_first_byte(spec, m);
                device_peak = reader.device_memory_used();
            }
            if pass == u64::from(trial.warmup) {
                measured_from();
            }
            let opened = match trial.op {
                Op::Load => Some(reader.reopen(plan).map_err(in_pass)?),
                _ => None,
            };
            let mut reads_done = || pending = cold.as_ref().map(cold::CachedFiles::start_drop);
            let mut outcome =
                run_pass(reader, plan, windows.as_deref(), &settings, &mut reads_done)
                    .map_err(in_pass)?;
            if let Some(opened) = opened {
                // A load's time is the whole of it: what the loader's user waits for.
                outcome.read.elapsed += opened.total();
                if pass >= u64::from(trial.warmup) {
                    record_load(m, &opened, &outcome.read);
                }
            }
            device_peak = device_peak.max(outcome.device_peak);
            m.memory = Some(MemoryPeak {
                host_rss_bytes: None,
                device_bytes: device_peak,
            });
            let (read, cpu) = (outcome.read, outcome.cpu);
            let seconds = read.elapsed.as_secs_f64();
            if pass < u64::from(trial.warmup) {
                m.warmup_seconds.push(seconds);
            } else {
                record_pass(m, &mut latency, plan, &read, cpu);
            }
            let result = outcome.integrity;
            m.verify_seconds += result.seconds;
            let passed = result.passed();
            m.integrity = result;
            if !passed {
                return Err(recheck::integrity_failure(
                    plan,
                    &m.integrity,
                    pass + 1,
                    total,
                ));
            }
            report_progress(pass + 1, total, seconds, plan.total_bytes());
        }
        Ok(())
    })();
    cold::hand_to_wind_down(pending);
    outcome
}

/// A measured load's set-up figures ([`gds_model::record::LoadFigures`]); `read` is its pass,
/// opening included.
fn record_load(m: &mut Measurement, opened: &crate::reader::Opened, read: &crate::reader::Pass) {
    let load = m.load.get_or_insert_with(Default::default);
    load.open_seconds.push(opened.open.as_secs_f64());
    if let Some(register) = opened.register {
        load.register_seconds.push(register.as_secs_f64());
    }
    // A pass without calls (an empty plan is refused) would have its first byte at its end.
    let first_byte = read
        .first_call
        .map_or(read.elapsed, |first| opened.total() + first);
    load.first_byte_seconds.push(first_byte.as_secs_f64());
}

/// A measured pass's I/O section (the reads, or a writing trial's writes): its time, throughput,
/// calls, CPU cost and latency, merged into the trial's.
fn record_pass(
    m: &mut Measurement,
    latency: &mut Histogram,
    plan: &ReadPlan,
    pass: &crate::reader::Pass,
    cpu: Option<gds_model::cost::CpuTime>,
) {
    let seconds = pass.elapsed.as_secs_f64();
    m.seconds.push(seconds);
    m.gbps.push(plan.total_bytes() as f64 / seconds / 1e9);
    if let Some(histogram) = &pass.latency {
        latency.merge(histogram);
    }
    m.costs.push(PassCost::new(
        plan.total_bytes(),
        seconds,
        pass.calls,
        cpu,
        pass.latency.as_ref().and_then(Histogram::latency),
    ));
    m.latency = latency.latency();
}

/// Tells the gate's live view that a pass is done ([`gds_model::progress`]). Best effort: the
/// view is for people, and a full disk must not fail a trial that read correctly. A pass of no
/// measurable time has no rate to show, and reports nothing.
fn report_progress(done: u64, total: u64, seconds: f64, bytes: u64) {
    if seconds <= 0.0 {
        return;
    }
    if let Some(path) = std::env::var_os(gds_model::progress::ENV) {
        let progress = gds_model::progress::PassProgress {
            done,
            total,
            seconds,
            gbps: bytes as f64 / seconds / 1e9,
        };
        let _ = progress.write(std::path::Path::new(&path));
    }
}

/// What a failed verification found: the count of bad words, the first wrong byte's offset and
/// file, and the checksums.
pub(crate) fn integrity_reason(result: &IntegrityResult, pass: u64, passes: u64) -> String {
    let checksums = format!(
        "checksum expected {}, got {}",
        result.expected_checksum.map_or("-".into(), hex::format),
        result.checksum.map_or("-".into(), hex::format)
    );
    match &result.first_bad {
        Some(bad) => format!(
            "integrity: {} bad 8-byte word(s); first wrong byte at offset {} of `{}` (pass {pass} of {passes}; {checksums})",
            result.bad_words,
            bad.file_offset,
            bad.file.display()
        ),
        None => format!("integrity: checksum mismatch (pass {pass} of {passes}; {checksums})"),
    }
}

/// Started, before the first pass's preparation: waits, when the gate asks, until the previous
/// trial's worker is gone ([`RELEASED`]), and says how long in the start-up's phases. Nothing
/// before it touches the storage or the page cache: a worker started ahead starts up while the
/// previous trial still reads, maybe the same files, whose pages a drop of this worker's would
/// take from under it (and whose reads would refill this one's cold cache).
pub fn hold_until_released(spec: &WorkerSpec, m: &mut Measurement) {
    let Some(dir) = &spec.hold_for_release else {
        return;
    };
    let held = Instant::now();
    while !dir.join(RELEASED).exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
    m.setup.push((
        gds_model::record::HELD_PHASE.into(),
        held.elapsed().as_secs_f64(),
    ));
}

/// Ready for the first timed byte: stamps the start-up's end.
pub fn ready_for_first_byte(spec: &WorkerSpec, m: &mut Measurement) {
    let since_spawn = gds_model::protocol::now_unix_ns().saturating_sub(spec.spawned_at_unix_ns);
    m.startup_seconds = Some(since_spawn as f64 / 1e9);
}

/// Announces the end of the I/O and waits for the gate's `gds_stats` sample, if one was asked
/// for (the hand-shake is in [`gds_model::protocol`]).
pub fn hold_for_sample(dir: Option<&Path>) {
    let Some(dir) = dir else { return };
    if std::fs::write(dir.join(IO_DONE), b"").is_err() {
        return;
    }
    let deadline = Instant::now() + WORKER_WAIT;
    while !dir.join(SAMPLED).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_in_a_pass_names_the_pass_before_its_causes() {
        let error = ReaderError::Io {
            path: "/data/f".into(),
            offset: 4096,
            len: 512,
            source: std::io::Error::from_raw_os_error(5),
        };
        let reason = fail_in_pass(error, 2, 3).reason;
        let (first, causes) = reason.split_once('\n').unwrap();
        assert_eq!(
            first,
            "read of 512 bytes at offset 4096 of `/data/f` failed (pass 2 of 3)"
        );
        assert!(causes.contains("Input/output error"), "{reason}");
    }
}
