//! The `posix` reader: `pread` into host memory with N threads pulling tasks of `task_size` bytes,
//! as KvikIO's POSIX path does. The CPU baseline every GPU path is compared with.

use std::fs::File;

use rayon::prelude::*;

use super::host_memory::HostMemory;
use super::{Opened, Pass, PlanReader, ReaderError, pread_exact, run_parallel};
use gds_model::integrity::{self, HostBuffer, IntegrityResult};
use gds_model::path::Path;
use gds_model::plan::{ReadPlan, Segment};
use gds_model::scenario::Integrity;

pub struct Posix {
    files: Vec<File>,
    buffer: HostMemory,
}

impl Posix {
    /// A reader whose buffer holds `capacity` bytes: the whole plan, or one window of it.
    pub fn open(plan: &ReadPlan, capacity: u64) -> Result<Posix, ReaderError> {
        Ok(Posix {
            files: open_all(plan)?,
            buffer: host_buffer(capacity)?,
        })
    }

    pub fn buffer(&self) -> &[u8] {
        &self.buffer
    }
}

/// A zeroed host buffer of `needed` bytes (one pass of a plan, or one window of it). Refused up
/// front when the host cannot back it: such an allocation ends in the OOM killer, not an error.
pub fn host_buffer(needed: u64) -> Result<HostMemory, ReaderError> {
    if let Some(available) =
        gds_model::meminfo::available_memory().filter(|available| needed > *available)
    {
        let format = |bytes| gds_model::units::format_bytes(bytes, 2);
        return Err(ReaderError::HostMemory {
            needed: format(needed),
            available: format(available),
        });
    }
    HostMemory::zeroed(needed as usize).map_err(ReaderError::HostAllocation)
}

/// Opens every file of the plan for buffered reads.
pub fn open_all(plan: &ReadPlan) -> Result<Vec<File>, ReaderError> {
    plan.files
        .iter()
        .map(|file| {
            File::open(&file.path).map_err(|source| ReaderError::Io {
                path: file.path.display().to_string(),
                offset: 0,
                len: 0,
                source,
            })
        })
        .collect()
}

impl PlanReader for Posix {
    fn path(&self) -> Path {
        Path::Host
    }

    fn prepare(&mut self) -> Result<(), ReaderError> {
        // Also touches every page, so page faults of the fresh allocation never land in a timed read.
        self.buffer
            .par_chunks_mut(1 << 20)
            .for_each(|chunk| chunk.fill(0xA5));
        Ok(())
    }

    fn read(
        &mut self,
        plan: &ReadPlan,
        nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        let len = plan.total_bytes() as usize;
        read_into(
            plan,
            &self.files,
            &mut self.buffer[..len],
            nthreads,
            task_size,
        )
    }

    fn verify(
        &mut self,
        plan: &ReadPlan,
        method: Integrity,
        expected: u64,
    ) -> Result<IntegrityResult, ReaderError> {
        let bytes = &self.buffer[..plan.total_bytes() as usize];
        let Ok(result) = integrity::check(plan, &mut HostBuffer(bytes), method, expected);
        Ok(result)
    }

    fn reopen(&mut self, plan: &ReadPlan) -> Result<Opened, ReaderError> {
        reopen_all(&mut self.files, plan)
    }
}

/// A load's start for a reader of plain descriptors: `files` closed, then opened again (timed).
pub fn reopen_all(files: &mut Vec<File>, plan: &ReadPlan) -> Result<Opened, ReaderError> {
    files.clear();
    let start = std::time::Instant::now();
    *files = open_all(plan)?;
    Ok(Opened {
        open: start.elapsed(),
        register: None,
    })
}

/// Reads `plan` into `buffer` (one pass) with `nthreads` threads.
pub fn read_into(
    plan: &ReadPlan,
    files: &[File],
    buffer: &mut [u8],
    nthreads: u32,
    task_size: u64,
) -> Result<Pass, ReaderError> {
    assert_eq!(
        buffer.len() as u64,
        plan.total_bytes(),
        "the buffer must hold one pass of the plan"
    );
    // Tasks are contiguous in buffer order, so the buffer splits into one disjoint slice per task.
    let mut items: Vec<(Segment, &mut [u8])> = Vec::new();
    let mut rest = buffer;
    for task in plan.tasks(task_size) {
        let (head, tail) = rest.split_at_mut(task.len as usize);
        items.push((task, head));
        rest = tail;
    }
    let mut threads = vec![(); nthreads.max(1) as usize];
    run_parallel(items, &mut threads, |_, (task, slice)| {
        pread_exact(
            &files[task.file],
            &plan.files[task.file].path,
            task.offset,
            slice,
        )
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use gds_model::plan::PlannedFile;
    use gds_model::scenario::Pattern;
    use gds_model::scenario::size::{ByteSize, PositiveSize};

    fn temp_file(bytes: &[u8]) -> (tempfile::NamedTempFile, PlannedFile) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        let planned = PlannedFile {
            path: file.path().into(),
            size: bytes.len() as u64,
            seed: None,
            checksum: 0,
        };
        (file, planned)
    }

    #[test]
    fn reads_every_byte_with_many_threads_and_odd_tasks() {
        let bytes: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let (_file, planned) = temp_file(&bytes);
        for pattern in [
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(65_537))),
        ] {
            let plan = ReadPlan::new(vec![planned.clone()], &pattern);
            let mut reader = Posix::open(&plan, plan.total_bytes()).unwrap();
            reader.prepare().unwrap();
            let pass = reader.read(&plan, 5, 4099).unwrap();
            assert!(reader.buffer() == bytes, "{pattern:?}");
            // One call per task, each timed once, in the merged histogram of the five threads.
            let tasks = plan.tasks(4099).len() as u64;
            assert_eq!(pass.calls, tasks);
            assert_eq!(pass.latency.unwrap().count(), tasks);
        }
    }

    #[test]
    fn a_file_shorter_than_planned_is_an_error_naming_it() {
        let (file, mut planned) = temp_file(&[1u8; 1000]);
        planned.size = 2000;
        let plan = ReadPlan::new(vec![planned], &Pattern::Whole);
        let error = Posix::open(&plan, plan.total_bytes())
            .unwrap()
            .read(&plan, 2, 512)
            .unwrap_err();
        assert!(
            matches!(error, ReaderError::ShortFile { at: 1000, .. }),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains(&file.path().display().to_string())
        );
    }
}
