//! Readers: each executes a [`ReadPlan`] into its destination (host memory, the GPU through a
//! bounce buffer, the GPU through cuFile), times only the read section, and verifies the
//! destination where it is.

pub mod bounce;
pub mod cufile;
mod host_memory;
pub mod posix;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::gpu::GpuError;
use crate::libcufile::{CufileError, ReadFailure};
use gds_model::cost::Histogram;
use gds_model::integrity::IntegrityResult;
use gds_model::plan::ReadPlan;
use gds_model::scenario::Integrity;

/// One reader's destination and way of reading a plan (the suite names the reader with
/// [`gds_model::scenario::Reader`]).
pub trait PlanReader {
    /// The path the bytes take when nothing else is known (`host`, `bounce`, `cufile`).
    fn path(&self) -> &'static str;
    /// Before each pass: clear the destination so that a read that did not happen cannot pass.
    fn prepare(&mut self) -> Result<(), ReaderError>;
    /// One pass of the plan; returns the read-section time and its read calls.
    fn read(&mut self, plan: &ReadPlan, nthreads: u32, task_size: u64)
    -> Result<Pass, ReaderError>;
    /// Verifies the destination after a pass.
    fn verify(
        &mut self,
        plan: &ReadPlan,
        method: Integrity,
        expected: u64,
    ) -> Result<IntegrityResult, ReaderError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
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
    #[error("cannot open `{path}` with O_DIRECT (cuFile needs it)")]
    OpenDirect {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cuFileRead of {len} bytes at offset {offset} of `{path}` failed")]
    CufileRead {
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: ReadFailure,
    },
    #[error("cuFile could not register `{path}`")]
    Register {
        path: String,
        #[source]
        source: CufileError,
    },
    #[error("the read buffer needs {needed} of host memory, only {available} is available")]
    HostMemory { needed: String, available: String },
    #[error("cannot map the host read buffer")]
    HostAllocation(#[source] std::io::Error),
    #[error(transparent)]
    Cufile(#[from] CufileError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl ReaderError {
    /// What to do about it, for the failure message.
    pub fn next_step(&self) -> String {
        let text = gds_model::error_chain(self);
        if text.contains("CU_FILE_HANDLE_NOT_REGISTERED") || text.contains("5027") {
            return "cuFile refused the file. On containers and some VMs udev has no record of the block device (`udev property not found` in cufile.log): run udev, mount /run/udev into the container (--volume /run/udev:/run/udev:ro), or check the file system is supported; `cargo xtask doctor` shows which".into();
        }
        match self {
            ReaderError::OpenDirect { .. } => "the file system refuses O_DIRECT (tmpfs and some FUSE mounts do): put --data-dir on a local NVMe or parallel file system".into(),
            ReaderError::CufileRead { .. } | ReaderError::Register { .. } | ReaderError::Cufile(_) => "read the trial's cufile.log (in its folder under the reports directory) and check nvidia-fs, cufile.json and the mount".into(),
            ReaderError::Gpu(_) => "check the GPU with nvidia-smi and the CUDA installation".into(),
            ReaderError::HostMemory { .. } | ReaderError::HostAllocation(_) => "use smaller files or `pattern: { random: ... }`, or run on a host with more memory".into(),
            ReaderError::Io { .. } | ReaderError::ShortFile { .. } => "check the storage (dmesg) and that the files are not being modified".into(),
        }
    }
}

/// One pass of a reader: its wall time, its read calls (one per item), and the calls' latency when
/// recording is on.
#[derive(Debug)]
pub struct Pass {
    pub elapsed: Duration,
    pub calls: u64,
    pub latency: Option<Histogram>,
}

/// Whether this process records per-call latency and CPU time ([`gds_model::cost::RECORD_ENV`]),
/// read once.
pub fn recording() -> bool {
    static RECORDING: OnceLock<bool> = OnceLock::new();
    *RECORDING.get_or_init(|| {
        gds_model::cost::recording_enabled(
            std::env::var(gds_model::cost::RECORD_ENV).ok().as_deref(),
        )
    })
}

/// Runs `work` over `items` with one thread per element of `states`, items handed out in order,
/// and returns the wall time of the whole. Per-thread state (a bounce buffer) is allocated by the
/// caller, outside the timed section. When several items fail, the error is the first one's in
/// plan order, whichever thread met it first.
///
/// Each item is one read call. With recording on, each thread times its calls into a histogram of
/// its own (two clock reads and an increment in memory no other thread touches); the histograms
/// are merged after the pass, outside the timed section.
pub fn run_parallel<T, S, E, W>(items: Vec<T>, states: &mut [S], work: W) -> Result<Pass, E>
where
    T: Send,
    S: Send,
    E: Send,
    W: Fn(&mut S, T) -> Result<(), E> + Sync,
{
    let calls = items.len() as u64;
    let record = recording();
    let mut items: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    items.reverse(); // popped from the back: handed out in plan order
    let queue = Mutex::new(items);
    let mut histograms: Vec<Histogram> = if record {
        vec![Histogram::default(); states.len()]
    } else {
        Vec::new()
    };
    let mut slots: Vec<Option<&mut Histogram>> = histograms.iter_mut().map(Some).collect();
    slots.resize_with(states.len(), || None);
    let start = Instant::now();
    let failures = std::thread::scope(|scope| {
        let workers: Vec<_> = states
            .iter_mut()
            .zip(slots)
            .map(|(state, mut histogram)| {
                let (queue, work) = (&queue, &work);
                scope.spawn(move || {
                    loop {
                        let next = queue
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .pop();
                        let (index, item) = next?;
                        let outcome = match histogram.as_deref_mut() {
                            Some(histogram) => {
                                let call = Instant::now();
                                let outcome = work(state, item);
                                histogram.record(call.elapsed().as_nanos() as u64);
                                outcome
                            }
                            None => work(state, item),
                        };
                        if let Err(error) = outcome {
                            return Some((index, error));
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .filter_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect::<Vec<(usize, E)>>()
    });
    let elapsed = start.elapsed();
    if let Some((_, error)) = failures.into_iter().min_by_key(|(index, _)| *index) {
        return Err(error);
    }
    let latency = record.then(|| {
        histograms
            .iter()
            .fold(Histogram::default(), |mut all, thread| {
                all.merge(thread);
                all
            })
    });
    Ok(Pass {
        elapsed,
        calls,
        latency,
    })
}

/// `pread` until `buffer` is full.
pub fn pread_exact(
    file: &std::fs::File,
    path: &std::path::Path,
    offset: u64,
    buffer: &mut [u8],
) -> Result<(), ReaderError> {
    use std::os::unix::fs::FileExt;
    let mut done = 0usize;
    while done < buffer.len() {
        let at = offset + done as u64;
        match file.read_at(&mut buffer[done..], at) {
            Ok(0) => {
                return Err(ReaderError::ShortFile {
                    path: path.display().to_string(),
                    at,
                    expected_end: offset + buffer.len() as u64,
                });
            }
            Ok(n) => done += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ReaderError::Io {
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
