//! Writers: each writes a trial's write plan ([`gds_model::write::write_plan`]) from its source
//! (host memory, or the GPU) to the trial's own files, timing only the write section. The bytes
//! are verified afterwards on the disk by [`on_disk`], never through the path under test.

pub mod async_io;
pub mod bounce;
pub mod cufile;
pub mod on_disk;
pub mod posix;

use gds_model::path::Path;
use gds_model::plan::ReadPlan;

use crate::reader::{Pass, ReaderError};

/// One writer's source and way of writing a plan (the suite names it with the reader's name).
pub trait PlanWriter {
    /// The path the bytes take when nothing else is known (`host`, `cufile`).
    fn path(&self) -> Path;
    /// Before each pass, untimed: blank the files ([`gds_model::write::blank`]), so that a write
    /// that did not happen leaves zeros that verification cannot pass.
    fn prepare(&mut self, plan: &ReadPlan) -> Result<(), ReaderError>;
    /// One pass of the plan; returns the write-section time and its write calls.
    fn write(
        &mut self,
        plan: &ReadPlan,
        nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError>;
    /// Makes every written file durable (`fsync`); timed apart from the writes by the caller.
    fn sync(&mut self, plan: &ReadPlan) -> Result<(), ReaderError>;
}

/// Opens (creating where absent) and blanks every file of the plan; returns them open for writing.
pub fn create_all(plan: &ReadPlan) -> Result<Vec<std::fs::File>, ReaderError> {
    let files = open_all(plan)?;
    blank_all(plan, &files)?;
    Ok(files)
}

/// Opens every file of the plan for writing, creating it where absent, and blanks none: what a
/// writer does as it starts up, which may be while the previous trial still measures; each
/// pass's preparation blanks them ([`create_all`], [`blank_all`]).
pub fn open_all(plan: &ReadPlan) -> Result<Vec<std::fs::File>, ReaderError> {
    plan.files
        .iter()
        .map(|file| {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&file.path)
                .map_err(|source| ReaderError::Create {
                    path: file.path.display().to_string(),
                    source,
                })
        })
        .collect()
}

/// Blanks every file of the plan before a pass, through descriptors that stay open (and, for
/// cuFile, registered): a written file is kept between passes and runs and zeroed in place.
pub fn blank_all(plan: &ReadPlan, files: &[std::fs::File]) -> Result<(), ReaderError> {
    for (planned, file) in plan.files.iter().zip(files) {
        gds_model::write::blank(file, planned.size).map_err(|source| ReaderError::Create {
            path: planned.path.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// `fsync` of every file, in plan order.
pub fn sync_all(plan: &ReadPlan, files: &[std::fs::File]) -> Result<(), ReaderError> {
    for (planned, file) in plan.files.iter().zip(files) {
        file.sync_all().map_err(|source| ReaderError::Sync {
            path: planned.path.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// `pwrite` until all of `buffer` is written at `offset`.
pub fn pwrite_exact(
    file: &std::fs::File,
    path: &std::path::Path,
    offset: u64,
    buffer: &[u8],
) -> Result<(), ReaderError> {
    use std::os::unix::fs::FileExt;
    let mut done = 0usize;
    while done < buffer.len() {
        let at = offset + done as u64;
        match file.write_at(&buffer[done..], at) {
            Ok(0) => {
                return Err(ReaderError::Write {
                    path: path.display().to_string(),
                    offset: at,
                    len: buffer.len() as u64,
                    source: std::io::Error::from(std::io::ErrorKind::WriteZero),
                });
            }
            Ok(n) => done += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ReaderError::Write {
                    path: path.display().to_string(),
                    offset: at,
                    len: buffer.len() as u64,
                    source,
                });
            }
        }
    }
    Ok(())
}
