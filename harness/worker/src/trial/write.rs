//! A writing trial (`op: write` or `roundtrip`) inside its worker: `warmup + repetitions` passes,
//! each writing the trial's own files through the writer under test (timed), then `fsync` (timed
//! apart), then dropping the files' pages (the verification or the read back then comes from the
//! storage, and the next trial inherits nothing). `write` verifies the files on the disk with an
//! independent `O_DIRECT` read ([`crate::writer::on_disk`]); `roundtrip` reads them back through
//! the reader under test (timed apart) and verifies where the bytes landed.

use std::time::Instant;

use super::cold::{CachedFiles, PendingDrop, hand_to_wind_down};
use super::{fail, fail_in_pass, integrity_reason, record_pass, report_progress};
use crate::cpu;
use crate::gpu::Gpu;
use crate::reader::bounce::Bounce;
use crate::reader::posix::Posix;
use crate::reader::{PlanReader, recording};
use crate::writer::PlanWriter;
use crate::writer::bounce::BounceWriter;
use crate::writer::posix::PosixWriter;
use gds_model::cost::Histogram;
use gds_model::integrity::IntegrityResult;
use gds_model::protocol::{WorkerFailure, WorkerSpec};
use gds_model::record::{Measurement, WriteFigures};
use gds_model::scenario::Op;

/// The `posix` writer, and for `roundtrip` the `posix` reader over the same files.
pub fn posix(spec: &WorkerSpec, m: &mut Measurement) -> Result<(), WorkerFailure> {
    let mut writer = PosixWriter::open(&spec.plan).map_err(fail)?;
    let mut reader = match spec.trial.op {
        Op::Roundtrip => Some(Posix::open(&spec.plan, spec.plan.total_bytes()).map_err(fail)?),
        _ => None,
    };
    passes(
        spec,
        &mut writer,
        reader.as_mut().map(|reader| reader as &mut dyn PlanReader),
        m,
        &mut || {},
    )
}

/// The `h2d` writer (device buffer → pinned bounce buffer → `pwrite`), and for `roundtrip` the
/// `h2d` reader over the same files.
pub fn h2d(spec: &WorkerSpec, gpu: &mut Gpu, m: &mut Measurement) -> Result<(), WorkerFailure> {
    let t = &spec.trial;
    let (plan, threads, bounce, task) = (&spec.plan, t.nthreads, t.bounce_buffer_size, t.task_size);
    let mut writer = BounceWriter::open(gpu, plan, threads, bounce, task).map_err(fail)?;
    let mut reader = match t.op {
        Op::Roundtrip => {
            let whole = plan.total_bytes();
            Some(Bounce::open(gpu, plan, threads, bounce, task, whole).map_err(fail)?)
        }
        _ => None,
    };
    passes(
        spec,
        &mut writer,
        reader.as_mut().map(|reader| reader as &mut dyn PlanReader),
        m,
        &mut || {},
    )
}

/// Warm-up and measured passes of a writing trial; `read_back` is the reader under test for a
/// `roundtrip`, `None` for a `write` (verified on the disk). `measured_from` runs as the first
/// measured pass is about to write.
pub fn passes(
    spec: &WorkerSpec,
    writer: &mut dyn PlanWriter,
    mut read_back: Option<&mut dyn PlanReader>,
    m: &mut Measurement,
    measured_from: &mut dyn FnMut(),
) -> Result<(), WorkerFailure> {
    let (trial, plan) = (&spec.trial, &spec.plan);
    m.path = writer.path();
    let mut figures = WriteFigures::default();
    let mut latency = Histogram::default();
    let total = trial.passes();
    // The writer created the files: open for the drops of every pass.
    let files = CachedFiles::open(plan)?;
    super::hold_until_released(spec, m);
    let mut pending: Option<PendingDrop> = None;
    let outcome = (|| {
        for pass in 0..total {
            let in_pass = |error| fail_in_pass(error, pass + 1, total);
            let lap = Instant::now();
            if let Some(drop) = pending.take() {
                drop.finish()?;
            }
            writer.prepare(plan).map_err(in_pass)?;
            if pass > 0 {
                m.add_preparation(lap.elapsed());
            }
            if pass == 0 {
                m.setup.push((
                    gds_model::record::BLANKED_PHASE.into(),
                    lap.elapsed().as_secs_f64(),
                ));
                super::ready_for_first_byte(spec, m);
            }
            if pass == u64::from(trial.warmup) {
                measured_from();
            }
            let cpu_before = recording().then(cpu::process_time).flatten();
            let written = writer
                .write(plan, trial.nthreads, trial.task_size)
                .map_err(in_pass)?;
            let around = cpu_before.and_then(|before| Some(cpu::process_time()?.since(&before)));
            let cpu = written.cpu.or(around);
            let synced = Instant::now();
            writer.sync(plan).map_err(in_pass)?;
            let fsync = synced.elapsed().as_secs_f64();
            // The read back must come from the storage, so its drop is waited for; the check of a
            // `write` reads with O_DIRECT, beside the drop.
            let dropping = Instant::now();
            match read_back {
                Some(_) => _ = files.drop_now()?,
                None => pending = Some(files.start_drop()),
            }
            m.add_preparation(dropping.elapsed());
            let measured = pass >= u64::from(trial.warmup);
            let seconds = written.elapsed.as_secs_f64();
            if measured {
                record_pass(m, &mut latency, plan, &written, cpu);
                figures.fsync_seconds.push(fsync);
            } else {
                m.warmup_seconds.push(seconds);
            }
            let result = match read_back.as_deref_mut() {
                None => {
                    let verified = Instant::now();
                    let result = crate::writer::on_disk::verify(
                        plan,
                        trial.expect.integrity,
                        spec.expected_checksum,
                    )
                    .map_err(in_pass)?;
                    if measured {
                        // The read back alone, as the Python worker times it: the check of the
                        // bytes is the result's own `seconds`, counted as verification.
                        figures
                            .verify_read_seconds
                            .push((verified.elapsed().as_secs_f64() - result.seconds).max(0.0));
                    }
                    result
                }
                Some(reader) => {
                    let clearing = Instant::now();
                    reader.prepare().map_err(in_pass)?;
                    m.add_preparation(clearing.elapsed());
                    let read = reader
                        .read(plan, trial.nthreads, trial.task_size)
                        .map_err(in_pass)?;
                    pending = Some(files.start_drop());
                    if measured {
                        let seconds = read.elapsed.as_secs_f64();
                        figures.read_back_seconds.push(seconds);
                        figures
                            .read_back_gbps
                            .push(plan.total_bytes() as f64 / seconds / 1e9);
                    }
                    reader
                        .verify(plan, trial.expect.integrity, spec.expected_checksum)
                        .map_err(in_pass)?
                }
            };
            m.verify_seconds += result.seconds;
            let passed = result.passed();
            m.integrity = result;
            if !passed {
                return Err(write_integrity_failure(
                    &m.integrity,
                    trial.op,
                    pass + 1,
                    total,
                ));
            }
            report_progress(pass + 1, total, seconds, plan.total_bytes());
        }
        Ok(())
    })();
    hand_to_wind_down(pending);
    m.write = Some(figures);
    outcome
}

fn write_integrity_failure(
    result: &IntegrityResult,
    op: Op,
    pass: u64,
    passes: u64,
) -> WorkerFailure {
    let next = match op {
        Op::Roundtrip => {
            "the bytes read back differ from those written. Run the trial again; if it repeats, the write or the read path corrupts data (a `write` trial of the same writer tells which): check `dmesg` for I/O errors and the storage's health"
        }
        _ => {
            "the bytes on the disk differ from those written (read back with O_DIRECT, not through the path under test). Run the trial again; if it repeats, the write path corrupts data: check `dmesg` for I/O errors and the storage's health"
        }
    };
    WorkerFailure {
        reason: format!(
            "{} (written through the path under test)",
            integrity_reason(result, pass, passes)
        ),
        next: next.into(),
        missing: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_model::integrity::BadByte;
    use gds_model::scenario::Integrity;

    /// What a user reads when a written byte is wrong: the byte's offset and file, that it was
    /// written through the path under test, and for `write` that the disk was read past it.
    #[test]
    fn a_wrong_written_byte_is_reported_with_its_offset_and_where_it_was_read() {
        let result = IntegrityResult {
            bad_words: 1,
            first_bad: Some(BadByte {
                file: "data/gds-gate-written-s9-3145728.bin".into(),
                file_offset: 2_345_679,
                buffer_offset: 2_345_679,
            }),
            checksum: Some(1),
            expected_checksum: Some(2),
            ..IntegrityResult::not_checked(Integrity::Exact)
        };
        let write = write_integrity_failure(&result, Op::Write, 2, 4);
        assert!(
            write.reason.contains(
                "first wrong byte at offset 2345679 of `data/gds-gate-written-s9-3145728.bin` (pass 2 of 4"
            ) && write.reason.ends_with("(written through the path under test)"),
            "{}",
            write.reason
        );
        assert!(
            write.next.contains("read back with O_DIRECT"),
            "{}",
            write.next
        );
        let roundtrip = write_integrity_failure(&result, Op::Roundtrip, 1, 1);
        assert!(
            roundtrip.next.contains("the bytes read back differ"),
            "{}",
            roundtrip.next
        );
    }
}
