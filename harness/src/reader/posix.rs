//! The `posix` reader: `pread` into host memory with N threads pulling tasks of `task_size` bytes,
//! as KvikIO's POSIX path does. The CPU baseline every GPU path is compared with.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::plan::{ReadPlan, Segment};

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("read of {len} bytes at offset {offset} of `{path}` failed")]
    Io {
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` ended at byte {at}, but the plan reads up to byte {expected_end}; the file shrank while the gate ran"
    )]
    ShortFile {
        path: String,
        at: u64,
        expected_end: u64,
    },
    #[error("the buffer holds {buffer} bytes but the plan reads {planned}")]
    BufferSize { buffer: usize, planned: u64 },
}

/// Reads `plan` into `buffer` through `files` (opened in plan order); returns the wall time of the
/// read section: from handing out the first task to the last task's completion.
pub fn read(
    plan: &ReadPlan,
    files: &[File],
    buffer: &mut [u8],
    nthreads: u32,
    task_size: u64,
) -> Result<Duration, ReadError> {
    if buffer.len() as u64 != plan.total_bytes() {
        return Err(ReadError::BufferSize {
            buffer: buffer.len(),
            planned: plan.total_bytes(),
        });
    }
    // Tasks are contiguous in buffer order, so the buffer splits into one disjoint slice per task
    // and threads need no unsafe sharing.
    let mut queue: Vec<(Segment, &mut [u8])> = Vec::new();
    let mut rest = buffer;
    for task in plan.tasks(task_size) {
        let (head, tail) = rest.split_at_mut(task.len as usize);
        queue.push((task, head));
        rest = tail;
    }
    queue.reverse(); // popped from the back: tasks start in file order
    let queue = Mutex::new(queue);
    let threads = nthreads.max(1) as usize;

    let start = Instant::now();
    let result = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let next = queue
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .pop();
                        let Some((task, slice)) = next else {
                            return Ok(());
                        };
                        read_task(plan, files, task, slice)?;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<Result<Vec<()>, ReadError>>()
    });
    let elapsed = start.elapsed();
    result.map(|_| elapsed)
}

fn read_task(
    plan: &ReadPlan,
    files: &[File],
    task: Segment,
    slice: &mut [u8],
) -> Result<(), ReadError> {
    let path = || plan.files[task.file].path.display().to_string();
    let file = &files[task.file];
    let mut done = 0usize;
    while done < slice.len() {
        let offset = task.offset + done as u64;
        match file.read_at(&mut slice[done..], offset) {
            Ok(0) => {
                return Err(ReadError::ShortFile {
                    path: path(),
                    at: offset,
                    expected_end: task.offset + task.len,
                });
            }
            Ok(n) => done += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ReadError::Io {
                    path: path(),
                    offset,
                    len: task.len,
                    source,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::plan::PlannedFile;
    use crate::scenario::Pattern;
    use crate::scenario::size::{ByteSize, PositiveSize};

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
        let (file, planned) = temp_file(&bytes);
        for pattern in [
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(65_537))),
        ] {
            let plan = ReadPlan::new(vec![planned.clone()], &pattern);
            let mut buffer = vec![0u8; bytes.len()];
            read(
                &plan,
                &[File::open(file.path()).unwrap()],
                &mut buffer,
                5,
                4099,
            )
            .unwrap();
            assert!(buffer == bytes, "{pattern:?}");
        }
    }

    #[test]
    fn a_file_shorter_than_planned_is_an_error_naming_it() {
        let (file, mut planned) = temp_file(&[1u8; 1000]);
        planned.size = 2000;
        let plan = ReadPlan::new(vec![planned], &Pattern::Whole);
        let mut buffer = vec![0u8; 2000];
        let error = read(
            &plan,
            &[File::open(file.path()).unwrap()],
            &mut buffer,
            2,
            512,
        )
        .unwrap_err();
        assert!(
            matches!(error, ReadError::ShortFile { at: 1000, .. }),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains(&file.path().display().to_string())
        );
    }
}
