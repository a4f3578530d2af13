//! Readers: each executes a [`ReadPlan`] into its destination (host memory, the GPU through a
//! bounce buffer, the GPU through cuFile), times only the read section, and verifies the
//! destination where it is.

pub mod async_io;
pub mod batch;
pub mod bounce;
pub mod cufile;
pub(crate) mod host_memory;
pub mod posix;
pub mod stream;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::gpu::{DeviceBuffer, Gpu, GpuError};
use crate::libcufile::{CufileError, ReadFailure};
use gds_model::cost::{CpuTime, Histogram};
use gds_model::integrity::IntegrityResult;
use gds_model::path::Path;
use gds_model::plan::ReadPlan;
use gds_model::scenario::Integrity;

/// One reader's destination and way of reading a plan (the suite names the reader with
/// [`gds_model::scenario::Reader`]).
pub trait PlanReader {
    /// The path the bytes take when nothing else is known (`host`, `bounce`, `cufile`).
    fn path(&self) -> Path;
    /// Before each pass (each window when streaming): clear the destination so that a read that
    /// did not happen cannot pass.
    fn prepare(&mut self) -> Result<(), ReaderError>;
    /// GPU memory in use now (every process's), for the trial's peak; `None` for host readers.
    fn device_memory_used(&mut self) -> Option<u64> {
        None
    }
    /// One pass of the plan (or of one window's plan, whose buffer offsets start at 0); returns
    /// the read-section time and its read calls.
    fn read(&mut self, plan: &ReadPlan, nthreads: u32, task_size: u64)
    -> Result<Pass, ReaderError>;
    /// Verifies the destination after a pass.
    fn verify(
        &mut self,
        plan: &ReadPlan,
        method: Integrity,
        expected: u64,
    ) -> Result<IntegrityResult, ReaderError>;
    /// A load's start (`op: load`): close the files, then open and register them and the
    /// destination again, timed, as a loader that starts afresh does.
    fn reopen(&mut self, _plan: &ReadPlan) -> Result<Opened, ReaderError> {
        Err(ReaderError::NotALoader)
    }
}

/// What opening a load took ([`PlanReader::reopen`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Opened {
    /// Opening every file, and `cuFileHandleRegister` where the reader registers them.
    pub open: Duration,
    /// `cuFileBufRegister` of the destination, where the reader registers it.
    pub register: Option<Duration>,
}

impl Opened {
    pub fn total(&self) -> Duration {
        self.open + self.register.unwrap_or_default()
    }
}

/// A reader whose bytes land in a device buffer. Clearing that buffer before a pass, the GPU's
/// memory in use and verifying the buffer on the GPU are the same for every such reader, so they
/// are written once, in its [`PlanReader`].
pub trait GpuReader {
    /// The path the bytes take when nothing else is known ([`PlanReader::path`]).
    const PATH: Path;
    /// The GPU and the device buffer the reads land in.
    fn landing(&mut self) -> (&mut Gpu, &DeviceBuffer);
    /// One pass of the plan into the device buffer ([`PlanReader::read`]).
    fn read_pass(
        &mut self,
        plan: &ReadPlan,
        nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError>;
    /// [`PlanReader::reopen`].
    fn reopen(&mut self, _plan: &ReadPlan) -> Result<Opened, ReaderError> {
        Err(ReaderError::NotALoader)
    }
}

impl<R: GpuReader> PlanReader for R {
    fn path(&self) -> Path {
        R::PATH
    }

    fn prepare(&mut self) -> Result<(), ReaderError> {
        let (gpu, device) = self.landing();
        Ok(gpu.clear_for_reading(device)?)
    }

    fn device_memory_used(&mut self) -> Option<u64> {
        self.landing().0.memory_used().ok()
    }

    fn read(
        &mut self,
        plan: &ReadPlan,
        nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        self.read_pass(plan, nthreads, task_size)
    }

    fn verify(
        &mut self,
        plan: &ReadPlan,
        method: Integrity,
        expected: u64,
    ) -> Result<IntegrityResult, ReaderError> {
        let (gpu, device) = self.landing();
        Ok(gpu.verify(device, plan, method, expected)?)
    }

    fn reopen(&mut self, plan: &ReadPlan) -> Result<Opened, ReaderError> {
        GpuReader::reopen(self, plan)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    /// A library called from Python (the Python worker's readers) moved fewer bytes than asked.
    #[error("{library} read {read} bytes of {expected}")]
    ShortRead {
        library: String,
        read: u64,
        expected: u64,
    },
    /// A library called from Python wrote fewer bytes than asked.
    #[error("{library} wrote {written} bytes of {expected}")]
    ShortWrite {
        library: String,
        written: u64,
        expected: u64,
    },
    /// A library called from Python raised; the exception itself is the finding, and the Python
    /// worker reports it (the `gds_pass` extension hands it back).
    #[error("{library} raised an exception")]
    Raised { library: String },
    #[error("read of {len} bytes at offset {offset} of `{path}` failed")]
    Io {
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("write of {len} bytes at offset {offset} of `{path}` failed")]
    Write {
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create `{path}` to write it")]
    Create {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("fsync of `{path}` failed")]
    Sync {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open `{path}` with O_DIRECT to verify what was written on the disk")]
    VerifyOpen {
        path: String,
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
    #[error("batch read of {len} bytes at offset {offset} of `{path}` failed")]
    BatchEntry {
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: gds_model::cufile_abi::batch::EntryProblem,
    },
    #[error("{call} could not enqueue {len} bytes at offset {offset} of `{path}`")]
    AsyncEnqueue {
        call: &'static str,
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: CufileError,
    },
    #[error("{call} of {len} bytes at offset {offset} of `{path}`, when its stream ran it")]
    AsyncTransfer {
        call: &'static str,
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: async_io::SlotProblem,
    },
    #[error(
        "a batch stalled: {outstanding} of its entries never finished, the first {len} bytes at offset {offset} of `{path}`"
    )]
    BatchStalled {
        outstanding: usize,
        path: String,
        offset: u64,
        len: u64,
        #[source]
        source: crate::libcufile::batch::BatchError,
    },
    #[error(
        "`batch_size: {batch_size}` is more than the {limit} I/Os per batch this cuFile driver allows (`properties.io_batchsize`)"
    )]
    BatchTooLarge { batch_size: u32, limit: u64 },
    #[error("cuFileWrite of {len} bytes at offset {offset} of `{path}` failed")]
    CufileWrite {
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
    #[error("this reader does not open its files again for a load (`op: load`)")]
    NotALoader,
    #[error("cannot start reader thread {} of {requested}", started + 1)]
    Threads {
        started: usize,
        requested: usize,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Cufile(#[from] CufileError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl ReaderError {
    /// The cuFile status code behind the error, wherever in its chain of causes cuFile
    /// returned one.
    pub fn cufile_code(&self) -> Option<i32> {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(error) = cause {
            let code = match error.downcast_ref::<CufileError>() {
                Some(CufileError::Call { code, .. }) => Some(*code),
                _ => match error.downcast_ref::<ReadFailure>() {
                    Some(ReadFailure::Cufile { code }) => Some(*code),
                    _ => match error.downcast_ref::<async_io::SlotProblem>() {
                        Some(async_io::SlotProblem::Failed { code }) => i32::try_from(*code).ok(),
                        _ => None,
                    },
                },
            };
            if code.is_some() {
                return code;
            }
            cause = error.source();
        }
        None
    }

    /// What to do about it, for the failure message.
    pub fn next_step(&self) -> String {
        if self.cufile_code().map(i32::abs) == Some(gds_model::cufile_abi::HANDLE_NOT_REGISTERED) {
            return "cuFile refused the file. On containers and some VMs udev has no record of the block device (`udev property not found` in cufile.log): run udev, mount /run/udev into the container (--volume /run/udev:/run/udev:ro), or check the file system is supported; `cargo xtask doctor` shows which".into();
        }
        match self {
            ReaderError::OpenDirect { .. } => "the file system refuses O_DIRECT (tmpfs and some FUSE mounts do): put --data-dir on a local NVMe or parallel file system".into(),
            ReaderError::Cufile(CufileError::MissingEntryPoint { .. }) => "use a newer libcufile (the CUDA toolkit's, or another through GDS_GATE_LIBCUFILE); `cargo xtask doctor` lists the entry points this host's cuFile offers".into(),
            ReaderError::BatchStalled { .. } => "cuFile's batch API stopped returning events (in compat mode cuFile runs a batch's entries on its own threads): read the trial's cufile.log (in its folder under the reports directory), and try a smaller `batch_size` or `queue_depth` to find where it stops".into(),
            ReaderError::BatchTooLarge { limit, .. } => format!("use `batch_size: {limit}` or less, or raise the limit for the trial: `cufile: {{ properties.io_batchsize: N }}`"),
            ReaderError::AsyncTransfer { .. } => "cuFile checks a stream-ordered call when its stream runs it and logs why it refused one: read the `cufio_async` lines of the trial's cufile.log (in its folder under the reports directory); a refused buffer range is a limitation of the libcufile, which `buffer: registered` avoids".into(),
            ReaderError::CufileRead { .. } | ReaderError::CufileWrite { .. } | ReaderError::BatchEntry { .. } | ReaderError::AsyncEnqueue { .. } | ReaderError::Register { .. } | ReaderError::Cufile(_) => "read the trial's cufile.log (in its folder under the reports directory) and check nvidia-fs, cufile.json and the mount".into(),
            ReaderError::Gpu(_) => "check the GPU with nvidia-smi and the CUDA installation".into(),
            ReaderError::HostMemory { .. } | ReaderError::HostAllocation(_) => "read through a window (`window: 1GiB`, or `window: auto`) instead of one buffer of the whole pass (a reading trial; a writing one holds its files whole), use smaller files or `pattern: { random: ... }`, or run on a host with more memory".into(),
            ReaderError::Write { .. } | ReaderError::Create { .. } | ReaderError::Sync { .. } | ReaderError::ShortWrite { .. } => "check the data dir's free space and permissions, and the storage (dmesg)".into(),
            ReaderError::VerifyOpen { .. } => "the file system refuses O_DIRECT (tmpfs and some FUSE mounts do), so written bytes cannot be read back from the disk: put --data-dir on a disk-backed file system".into(),
            ReaderError::Io { .. } | ReaderError::ShortFile { .. } | ReaderError::ShortRead { .. } => "check the storage (dmesg) and that the files are not being modified".into(),
            ReaderError::Raised { .. } => "read the worker's output in the trial folder".into(),
            ReaderError::NotALoader => "this is a bug in gds-gate: `op: load` is checked against the readers that load when the suite is read".into(),
            ReaderError::Threads { .. } => "use fewer threads (`nthreads`), or raise this host's limits on threads and memory (`ulimit -u` and `-v`, the container's pids limit)".into(),
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
    /// From the pass's start to the end of its first read call; `None` where the reader does not
    /// see its calls end one by one (stream-ordered reads).
    pub first_call: Option<Duration>,
    /// The CPU time of the library call alone, where the reader measures it itself (the Python
    /// worker's, whose calls across the extension carry bookkeeping); `None`: the pass loop's own
    /// measure around `read` or `write` stands.
    pub cpu: Option<CpuTime>,
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

/// What one reader thread ends with: the first item it failed on (plan index and error), and its
/// calls' latency when recording is on.
type ThreadOutcome = (Option<(usize, ReaderError)>, Option<Histogram>);

/// Runs `work` over `items` with one thread per element of `states`, items handed out in order,
/// and returns the pass: its wall time, calls and latency. Per-thread state (a bounce buffer) is
/// allocated by the caller, outside the timed section. The first failure ends the pass: the other
/// threads take no further item. When several items fail, the error is the first one's in plan
/// order, whichever thread met it first. A thread the host refuses to start
/// fails the pass with [`ReaderError::Threads`] (`std::thread::scope`'s `spawn` would panic).
///
/// Each item is one read call. With recording on, each thread times its calls into a histogram of
/// its own (two clock reads and an increment in memory no other thread touches); the histograms
/// are merged after the pass, outside the timed section.
pub fn run_parallel<T, S, W>(items: Vec<T>, states: &mut [S], work: W) -> Result<Pass, ReaderError>
where
    T: Send,
    S: Send,
    W: Fn(&mut S, T) -> Result<(), ReaderError> + Sync,
{
    let calls = items.len() as u64;
    let record = recording();
    let mut items: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    items.reverse(); // popped from the back: handed out in plan order
    let queue = Mutex::new(items);
    let take = || {
        queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    let requested = states.len();
    // Nanoseconds from the start to the first call's end: one relaxed load per call once set.
    let first_call = AtomicU64::new(u64::MAX);
    let start = Instant::now();
    let (outcomes, refused) = std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(requested);
        let mut refused = None;
        for (started, state) in states.iter_mut().enumerate() {
            let (take, work, first_call) = (&take, &work, &first_call);
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                // Made here, not by the caller: a thread the host refuses never costs its
                // histogram, so asking for too many threads ends in `Threads`, not in an abort.
                let mut histogram = record.then(Histogram::default);
                loop {
                    // Its own statement: a `while let` would hold the queue's lock (a temporary
                    // of its condition) through the read, and the threads would read one at a time.
                    let next = take().pop();
                    let Some((index, item)) = next else { break };
                    let outcome = match histogram.as_mut() {
                        Some(histogram) => {
                            let call = Instant::now();
                            let outcome = work(state, item);
                            histogram.record(call.elapsed().as_nanos() as u64);
                            outcome
                        }
                        None => work(state, item),
                    };
                    if outcome.is_ok() && first_call.load(Ordering::Relaxed) == u64::MAX {
                        first_call.fetch_min(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    }
                    if let Err(error) = outcome {
                        // The pass has failed: the other threads stop at their next item rather
                        // than each meet the fault again (a stalled batch waits many seconds).
                        take().clear();
                        return (Some((index, error)), histogram);
                    }
                }
                (None, histogram)
            });
            match spawned {
                Ok(worker) => workers.push(worker),
                Err(source) => {
                    // The pass cannot be timed as asked: the threads already started stop at
                    // their next item.
                    take().clear();
                    refused = Some(ReaderError::Threads {
                        started,
                        requested,
                        source,
                    });
                    break;
                }
            }
        }
        let outcomes: Vec<ThreadOutcome> = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        (outcomes, refused)
    });
    let elapsed = start.elapsed();
    if let Some(error) = refused {
        return Err(error);
    }
    let mut latency = record.then(Histogram::default);
    let mut first_failure: Option<(usize, ReaderError)> = None;
    for (failure, histogram) in outcomes {
        if let (Some(all), Some(thread)) = (latency.as_mut(), histogram.as_ref()) {
            all.merge(thread);
        }
        if let Some((index, error)) = failure
            && first_failure
                .as_ref()
                .is_none_or(|(first, _)| index < *first)
        {
            first_failure = Some((index, error));
        }
    }
    if let Some((_, error)) = first_failure {
        return Err(error);
    }
    let first_call = first_call.into_inner();
    Ok(Pass {
        elapsed,
        calls,
        latency,
        first_call: (first_call != u64::MAX).then(|| Duration::from_nanos(first_call)),
        cpu: None,
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// `nthreads` means that many reads in flight. A queue lock held through the read (as a
    /// `while let` over `lock().pop()` does) made eight threads read one at a time, which only
    /// the latency figures gave away (IOPS × mean latency ≈ 1 outstanding read).
    #[test]
    fn the_threads_work_at_the_same_time() {
        let (in_flight, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let mut states = vec![(); 4];
        let pass = run_parallel((0..8).collect(), &mut states, |_, _: i32| {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        assert_eq!(pass.calls, 8);
        assert!(
            most.load(Ordering::SeqCst) > 1,
            "the items ran one at a time"
        );
    }

    /// A failed item ends the pass: the other threads finish the item they hold and take no
    /// other, so a fault that costs seconds per item (a stalled batch) is met once per thread.
    #[test]
    fn the_first_failure_stops_the_other_threads_taking_items() {
        let started = AtomicUsize::new(0);
        let mut states = vec![(); 2];
        let failed = run_parallel((0..100).collect(), &mut states, |_, item: usize| {
            started.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            if item == 3 {
                return Err(ReaderError::HostMemory {
                    needed: "1".into(),
                    available: "0".into(),
                });
            }
            Ok(())
        });
        assert!(matches!(failed, Err(ReaderError::HostMemory { .. })));
        assert!(
            started.load(Ordering::SeqCst) < 10,
            "{} items started after the failure",
            started.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn a_file_cufile_refused_to_register_is_told_by_its_code_not_its_text() {
        let registered = ReaderError::Register {
            path: "/data/f".into(),
            source: CufileError::Call {
                call: "cuFileHandleRegister",
                code: gds_model::cufile_abi::HANDLE_NOT_REGISTERED,
            },
        };
        let read = ReaderError::CufileRead {
            path: "/data/f".into(),
            offset: 0,
            len: 4096,
            source: ReadFailure::Cufile { code: -5027 },
        };
        for error in [registered, read] {
            assert_eq!(error.cufile_code().map(i32::abs), Some(5027));
            assert!(error.next_step().contains("udev"), "{}", error.next_step());
        }
        // A path that only mentions the number is not the code.
        let other = ReaderError::Register {
            path: "/data/5027".into(),
            source: CufileError::Call {
                call: "cuFileHandleRegister",
                code: 5030,
            },
        };
        assert!(!other.next_step().contains("udev"), "{}", other.next_step());
    }
}
