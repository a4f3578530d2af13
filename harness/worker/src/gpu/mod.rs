//! The GPU side of a worker: one CUDA context on the trial's GPU, a plain device allocation for the
//! bytes, the verification kernels (NVRTC, from `kernels.cu` beside this file) and pinned host
//! memory for the bounce path.
//!
//! Everything here loads its libraries at run time and checks that they exist before the first
//! call: cudarc panics on a missing library, so [`Gpu::open`] asks `is_culib_present` first.

use std::sync::Arc;
use std::thread::JoinHandle;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DriverError, LaunchConfig, PushKernelArg, result, sys,
};
use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};

use gds_model::integrity::{self, IntegrityResult, RangeVerifier};
use gds_model::plan::ReadPlan;
use gds_model::scenario::Integrity;
use gds_model::verify::Mismatch;

/// The kernels' source, shared with the KvikIO worker (which compiles it with cupy).
pub const KERNELS: &str = include_str!("kernels.cu");

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No driver library, or one without the functions cudarc calls first.
    #[error(transparent)]
    NoDriver(#[from] crate::libcuda::LibcudaError),
    #[error(
        "NVRTC (libnvrtc.so) not found; install the CUDA toolkit's NVRTC, which the GPU verification compiles its kernels with"
    )]
    NoNvrtc,
    #[error("CUDA call failed: {context}")]
    Driver {
        context: String,
        #[source]
        source: DriverError,
    },
    #[error("compiling the verification kernels failed: {0}")]
    Compile(String),
    /// The fill kernel did not write every word of the writer's source.
    #[error("{0}")]
    Fill(String),
    /// The kernels failed to compile or load earlier in this worker: that failure, said again.
    #[error("{0}")]
    KernelsFailed(String),
}

trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> Context<T> for Result<T, DriverError> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver {
            context: what(),
            source,
        })
    }
}

/// The GPU a worker reads into.
pub struct Gpu {
    pub ordinal: u32,
    pub name: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: KernelState,
    /// GPU time of the last verification kernel (CUDA events), for `bench --gpu`.
    pub last_kernel_seconds: f64,
}

/// Where the verification kernels are.
enum KernelState {
    /// Compiling, from the moment the GPU opened: beside the libraries' start-up
    /// (cuFileDriverOpen alone takes ~0.5 s), where it took ~0.04 s of each trial's first
    /// clearing of its buffer on the H200 runner.
    Compiling(JoinHandle<Result<Ptx, GpuError>>),
    Loaded(Kernels),
    /// Why they could not be had: said again on every later call.
    Failed(String),
}

struct Kernels {
    exact_compare: CudaFunction,
    checksum: CudaFunction,
    plain_read: CudaFunction,
    fill: CudaFunction,
}

/// The kernels compiled to PTX for a GPU of compute capability `major.minor` (NVRTC needs no
/// context, so this runs on a thread of its own).
fn compile(major: i32, minor: i32) -> Result<Ptx, GpuError> {
    // SAFETY: only probes whether the library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(GpuError::NoNvrtc);
    }
    let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
    let options = CompileOptions {
        arch: Some(arch),
        ..Default::default()
    };
    compile_ptx_with_opts(KERNELS, options).map_err(|error| GpuError::Compile(error.to_string()))
}

/// Waits for the compile started by [`Gpu::open`] and loads its module into `ctx`.
fn load_compiled(
    ctx: &Arc<CudaContext>,
    compiling: JoinHandle<Result<Ptx, GpuError>>,
) -> Result<Kernels, GpuError> {
    let ptx = compiling.join().unwrap_or_else(|panic| {
        Err(GpuError::Compile(format!(
            "the compile panicked: {}",
            gds_model::panic_message(panic.as_ref())
        )))
    })?;
    let module = ctx
        .load_module(ptx)
        .context(|| "load the verification kernels".into())?;
    let load = |name: &str| {
        module
            .load_function(name)
            .context(|| format!("find kernel `{name}`"))
    };
    Ok(Kernels {
        exact_compare: load("exact_compare")?,
        checksum: load("checksum")?,
        plain_read: load("plain_read")?,
        fill: load("fill")?,
    })
}

impl Gpu {
    pub fn open(ordinal: u32) -> Result<Gpu, GpuError> {
        crate::libcuda::check()?;
        let ctx = CudaContext::new(ordinal as usize).context(|| format!("open GPU {ordinal}"))?;
        let name = ctx.name().context(|| "read the GPU name".into())?;
        let (major, minor) = ctx
            .compute_capability()
            .context(|| "read the compute capability".into())?;
        let compiling = std::thread::spawn(move || compile(major, minor));
        let stream = ctx.default_stream();
        Ok(Gpu {
            ordinal,
            name,
            ctx,
            stream,
            kernels: KernelState::Compiling(compiling),
            last_kernel_seconds: 0.0,
        })
    }

    /// A handle reader threads use to make this GPU's context current on themselves.
    pub fn binder(&self) -> ThreadBinder {
        ThreadBinder(Arc::clone(&self.ctx))
    }

    /// Verifies one pass of `plan` in `buffer` with the GPU kernels.
    pub fn verify(
        &mut self,
        buffer: &DeviceBuffer,
        plan: &ReadPlan,
        method: Integrity,
        expected: u64,
    ) -> Result<IntegrityResult, GpuError> {
        integrity::check(
            plan,
            &mut DeviceVerifier { gpu: self, buffer },
            method,
            expected,
        )
    }

    /// Makes the context current on the calling thread (cuFile needs it on every reader thread).
    pub fn bind(&self) -> Result<(), GpuError> {
        self.ctx
            .bind_to_thread()
            .context(|| "bind the CUDA context to a reader thread".into())
    }

    /// GPU memory in use by every process (total − free), what bounds what a trial can read.
    pub fn memory_used(&self) -> Result<u64, GpuError> {
        let (free, total) = self.memory_info()?;
        Ok(total.saturating_sub(free))
    }

    /// Total GPU memory, which `window: auto` weighs the pass against.
    pub fn memory_total(&self) -> Result<u64, GpuError> {
        Ok(self.memory_info()?.1)
    }

    fn memory_info(&self) -> Result<(u64, u64), GpuError> {
        self.bind()?;
        let (free, total) =
            result::mem_get_info().context(|| format!("read GPU {}'s memory", self.ordinal))?;
        Ok((free as u64, total as u64))
    }

    pub fn alloc(&self, len: usize) -> Result<DeviceBuffer, GpuError> {
        self.bind()?;
        // A plain cuMemAlloc, not cudarc's stream-ordered pool: pool memory cannot be mapped for
        // GPUDirect DMA by nvidia-fs.
        // SAFETY: allocation of `len` bytes; freed in Drop.
        let ptr = unsafe { result::malloc_sync(len.max(1)) }
            .context(|| format!("allocate {len} bytes on GPU {}", self.ordinal))?;
        Ok(DeviceBuffer { ptr, len })
    }

    /// Fills the buffer with a byte no generated word is made of alone, so that a read that
    /// silently did not happen cannot pass verification with the previous pass's data.
    pub fn poison(&self, buffer: &DeviceBuffer) -> Result<(), GpuError> {
        // SAFETY: the whole live allocation.
        unsafe { result::memset_d8_sync(buffer.ptr, 0xA5, buffer.len) }
            .context(|| "clear the device buffer".into())
    }

    /// Readies `buffer` for a pass of reads: the verification kernels compiled (so that compile
    /// counts as preparation, not as verifying), the buffer poisoned, and the poisoning finished.
    /// `cuMemsetD8` on device memory returns before it is done, and reads that land through a
    /// stream that does not wait for the default one (cuFile's own copies, the async reader's
    /// non-blocking streams) could otherwise be overwritten by it.
    pub fn clear_for_reading(&mut self, buffer: &DeviceBuffer) -> Result<(), GpuError> {
        self.load_kernels()?;
        self.poison(buffer)?;
        self.synchronize()
    }

    pub fn pinned(&self, len: usize) -> Result<PinnedBuffer, GpuError> {
        self.bind()?;
        // SAFETY: allocation of `len` bytes of page-locked host memory; freed in Drop.
        let ptr = unsafe { result::malloc_host(len.max(1), 0) }
            .context(|| format!("allocate {len} bytes of pinned host memory"))?;
        Ok(PinnedBuffer {
            ptr: ptr.cast(),
            len,
        })
    }

    /// A new stream of this GPU's context, for stream-ordered cuFile calls.
    pub fn new_stream(&self) -> Result<Arc<CudaStream>, GpuError> {
        self.ctx
            .new_stream()
            .context(|| "create a CUDA stream".into())
    }

    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .context(|| "synchronize the GPU".into())
    }

    /// Has the verification kernels ready: waits for their compile (started as the GPU opened)
    /// and loads them. The GPU readers call it while preparing a pass, so what is left of the
    /// compile and the load (and, on a host's first run, the driver's JIT of the module) is timed
    /// as the first pass's preparation, not as verification of its first window.
    pub fn load_kernels(&mut self) -> Result<(), GpuError> {
        self.kernels().map(|_| ())
    }

    /// Loads the kernels once per process, once their compile is done; kept out of the first
    /// read so that start-up time to the first byte stays small.
    fn kernels(&mut self) -> Result<&Kernels, GpuError> {
        if matches!(self.kernels, KernelState::Compiling(_)) {
            let placeholder = KernelState::Failed(String::new());
            let KernelState::Compiling(compiling) =
                std::mem::replace(&mut self.kernels, placeholder)
            else {
                unreachable!("matched above");
            };
            match load_compiled(&self.ctx, compiling) {
                Ok(kernels) => self.kernels = KernelState::Loaded(kernels),
                Err(error) => {
                    self.kernels = KernelState::Failed(gds_model::error_chain(&error));
                    return Err(error);
                }
            }
        }
        match &self.kernels {
            KernelState::Loaded(kernels) => Ok(kernels),
            KernelState::Failed(why) => Err(GpuError::KernelsFailed(why.clone())),
            KernelState::Compiling(_) => unreachable!("waited for above"),
        }
    }

    fn launch_config(&self) -> Result<LaunchConfig, GpuError> {
        let sms = self
            .ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .context(|| "read the SM count".into())?;
        // 16 blocks of 256 threads per SM keeps every SM's memory pipeline full (measured on H200).
        Ok(LaunchConfig {
            grid_dim: (sms.max(1) as u32 * 16, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }

    /// Exact compare of `len` bytes at `offset` in `buffer` against the generator: (bad words,
    /// first bad byte relative to the range).
    pub fn exact_compare(
        &mut self,
        buffer: &DeviceBuffer,
        offset: u64,
        len: u64,
        seed: u64,
        first_word: u64,
    ) -> Result<(u64, Option<u64>), GpuError> {
        let out = self.run(
            buffer,
            offset,
            len,
            [0, u64::MAX],
            |kernels| &kernels.exact_compare,
            &[seed, first_word],
        )?;
        Ok((out[0], (out[1] != u64::MAX).then_some(out[1])))
    }

    /// The checksum sum of `len` bytes at `offset` in `buffer`, positions keyed from `first_word`.
    pub fn checksum(
        &mut self,
        buffer: &DeviceBuffer,
        offset: u64,
        len: u64,
        first_word: u64,
    ) -> Result<u64, GpuError> {
        Ok(self.run(
            buffer,
            offset,
            len,
            [0, 0],
            |kernels| &kernels.checksum,
            &[first_word],
        )?[0])
    }

    /// Writes the generated bytes of the file with `seed`, from its start, into `len` bytes at
    /// `offset` of `buffer` (a writer's source, made where it is written from).
    pub fn fill(
        &mut self,
        buffer: &DeviceBuffer,
        offset: u64,
        len: u64,
        seed: u64,
    ) -> Result<(), GpuError> {
        let words = self.run(
            buffer,
            offset,
            len,
            [0, 0],
            |kernels| &kernels.fill,
            &[seed, 0],
        )?[0];
        if words != len.div_ceil(8) {
            return Err(GpuError::Fill(format!(
                "the fill kernel wrote {words} words of {}: the device buffer does not hold the generator's bytes",
                len.div_ceil(8)
            )));
        }
        self.synchronize()
    }

    /// Runs the kernel that only reads `buffer` (the bandwidth reference of `bench --gpu`).
    pub fn plain_read(&mut self, buffer: &DeviceBuffer) -> Result<(), GpuError> {
        let len = buffer.len as u64;
        self.run(buffer, 0, len, [0, 0], |kernels| &kernels.plain_read, &[])
            .map(|_| ())
    }

    /// Launches `kernel(buf + offset, len, extra..., out)` and returns `out`.
    fn run(
        &mut self,
        buffer: &DeviceBuffer,
        offset: u64,
        len: u64,
        init: [u64; 2],
        kernel: impl Fn(&Kernels) -> &CudaFunction,
        extra: &[u64],
    ) -> Result<[u64; 2], GpuError> {
        assert!(
            offset + len <= buffer.len as u64,
            "range outside the device buffer"
        );
        self.bind()?;
        let config = self.launch_config()?;
        let mut out = self
            .stream
            .clone_htod(&init)
            .context(|| "allocate the kernel result".into())?;
        let function = kernel(self.kernels()?).clone();
        let start = buffer.ptr + offset;
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&start).arg(&len);
        for value in extra {
            launch.arg(value);
        }
        launch.arg(&mut out);
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start_event = self
            .stream
            .record_event(timing)
            .context(|| "record a CUDA event".into())?;
        // SAFETY: the arguments match the kernel's signature in kernels.cu, and [start, start+len)
        // lies inside the live allocation (asserted above).
        unsafe { launch.launch(config) }.context(|| "launch a verification kernel".into())?;
        let end_event = self
            .stream
            .record_event(timing)
            .context(|| "record a CUDA event".into())?;
        self.last_kernel_seconds = f64::from(
            start_event
                .elapsed_ms(&end_event)
                .context(|| "time a kernel".into())?,
        ) / 1e3;
        let host = self
            .stream
            .clone_dtoh(&out)
            .context(|| "read the kernel result".into())?;
        Ok([host[0], host[1]])
    }
}

/// Makes a GPU's context current on the calling thread: cuFile and the copies of a reader
/// thread use the thread's current context.
pub struct ThreadBinder(Arc<CudaContext>);

impl ThreadBinder {
    pub fn bind(&self) -> Result<(), GpuError> {
        self.0
            .bind_to_thread()
            .context(|| "bind the CUDA context to a reader thread".into())
    }
}

/// Synchronous copy of the first `len` bytes of `src` to `dst` at `offset`.
pub fn copy_to_device(
    src: &PinnedBuffer,
    len: usize,
    dst: &DeviceBuffer,
    offset: u64,
) -> Result<(), GpuError> {
    assert!(
        len <= src.len && offset + len as u64 <= dst.len as u64,
        "copy outside its buffers"
    );
    // SAFETY: both ranges lie inside live allocations (asserted above).
    unsafe { result::memcpy_htod_sync(dst.ptr + offset, &src.as_slice()[..len]) }
        .context(|| "copy a bounce buffer to the GPU".into())
}

/// Synchronous copy of `len` bytes of `src` at `offset` into the start of `dst`.
pub fn copy_to_host(
    src: &DeviceBuffer,
    offset: u64,
    dst: &mut PinnedBuffer,
    len: usize,
) -> Result<(), GpuError> {
    assert!(
        len <= dst.len && offset + len as u64 <= src.len as u64,
        "copy outside its buffers"
    );
    // SAFETY: both ranges lie inside live allocations (asserted above).
    unsafe { result::memcpy_dtoh_sync(&mut dst.as_mut_slice()[..len], src.ptr + offset) }
        .context(|| "copy the GPU's bytes to a bounce buffer".into())
}

/// The verification kernels as a [`RangeVerifier`] over a device buffer.
struct DeviceVerifier<'a> {
    gpu: &'a mut Gpu,
    buffer: &'a DeviceBuffer,
}

impl RangeVerifier for DeviceVerifier<'_> {
    type Error = GpuError;
    fn exact(
        &mut self,
        seed: u64,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<Mismatch, GpuError> {
        let (bad_words, first) =
            self.gpu
                .exact_compare(self.buffer, buffer_offset, len, seed, file_offset / 8)?;
        Ok(Mismatch {
            bad_words,
            first_bad_offset: first.map(|relative| file_offset + relative),
        })
    }
    fn checksum(
        &mut self,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<u64, GpuError> {
        self.gpu
            .checksum(self.buffer, buffer_offset, len, file_offset / 8)
    }
}

/// A `cuMemAlloc`ed device buffer.
pub struct DeviceBuffer {
    pub ptr: u64,
    pub len: usize,
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_sync and freed once.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// Page-locked host memory (`cuMemHostAlloc`).
pub struct PinnedBuffer {
    ptr: *mut u8,
    len: usize,
}

impl PinnedBuffer {
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes allocated at `ptr`, alive until Drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

// SAFETY: the buffer is plain host memory owned by this value; moving it to another thread moves
// the only handle to it.
unsafe impl Send for PinnedBuffer {}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host and freed once.
        let _ = unsafe { result::free_host(self.ptr.cast()) };
    }
}

#[cfg(test)]
mod tests;
