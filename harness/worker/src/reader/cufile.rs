//! The `cufile` reader: files opened with `O_DIRECT` and registered with cuFile, tasks of
//! `task_size` bytes read with `cuFileRead` straight into a device buffer by N threads (KvikIO's
//! split), the buffer optionally `cuFileBufRegister`ed. Which path cuFile took is not known here:
//! its statistics, read around the trial, tell (nvfs, p2p, or its own POSIX compat mode).
//!
//! Against KvikIO's `FileHandle::pread` into device memory (compat mode OFF), read from its source:
//! the same calls: a file opened `O_RDONLY | O_DIRECT` and registered with `cuFileHandleRegister`,
//! the read split into `task_size` tasks in order, each one `cuFileRead(handle, allocation base,
//! len, file offset, offset in the allocation)` (KvikIO finds the base with
//! `cuMemGetAddressRange`; ours is the allocation itself), unregistered buffers unless asked.
//! What differs: KvikIO keeps a thread pool and pushes and pops the buffer's context around each
//! task, we start N threads per pass and make the context current per task (microseconds per
//! pass); KvikIO opens a second descriptor without `O_DIRECT` for its POSIX path and sends reads
//! below `gds_threshold` there, synchronously in the caller's thread (so its small reads are one
//! thread's however many it has), while this reader always calls cuFile; and KvikIO calls the
//! libcufile of its wheel, this reader the toolkit's unless `GDS_GATE_LIBCUFILE` says otherwise
//! (`bench --parity` measures both readers with both libraries).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use std::time::Instant;

use super::{GpuReader, Opened, Pass, ReaderError, run_parallel};
use crate::gpu::{DeviceBuffer, Gpu};
use crate::libcufile::{Cufile, Handle, RegisteredBuffer};
use gds_model::path::Path;
use gds_model::plan::ReadPlan;
use gds_model::scenario::BufferKind;

pub struct CufileReader<'a> {
    gpu: &'a mut Gpu,
    cufile: &'a Cufile,
    buffer: BufferKind,
    // Field order is drop order: deregister the buffer and handles before freeing and closing.
    _registered: Option<RegisteredBuffer<'a>>,
    handles: Vec<Handle<'a>>,
    _files: Vec<File>,
    device: DeviceBuffer,
}

impl<'a> CufileReader<'a> {
    /// Opens and registers every file; `cufile`'s driver must be open.
    pub fn open(
        gpu: &'a mut Gpu,
        cufile: &'a Cufile,
        plan: &ReadPlan,
        buffer: BufferKind,
        capacity: u64,
    ) -> Result<CufileReader<'a>, ReaderError> {
        // The whole plan, or one window of it (registered once and reused by every window).
        let device = gpu.alloc(capacity as usize)?;
        let (files, handles) = register_files(cufile, plan, OpenOptions::new().read(true))?;
        let registered = register_buffer(cufile, &device, buffer)?;
        Ok(CufileReader {
            gpu,
            cufile,
            buffer,
            _registered: registered,
            handles,
            _files: files,
            device,
        })
    }
}

/// Opens every file of the plan with `options` and `O_DIRECT` (cuFile needs it) and registers it
/// with cuFile: the descriptors and their handles, in plan order.
pub(crate) fn register_files<'a>(
    cufile: &'a Cufile,
    plan: &ReadPlan,
    options: &mut OpenOptions,
) -> Result<(Vec<File>, Vec<Handle<'a>>), ReaderError> {
    options.custom_flags(libc::O_DIRECT);
    let mut files = Vec::new();
    let mut handles = Vec::new();
    for planned in &plan.files {
        let path = planned.path.display().to_string();
        let file = options
            .open(&planned.path)
            .map_err(|source| ReaderError::OpenDirect {
                path: path.clone(),
                source,
            })?;
        let handle = cufile
            .register_handle(file.as_raw_fd())
            .map_err(|source| ReaderError::Register { path, source })?;
        files.push(file);
        handles.push(handle);
    }
    Ok((files, handles))
}

/// `cuFileBufRegister` of the whole device buffer when the scenario asks for it.
pub(crate) fn register_buffer<'a>(
    cufile: &'a Cufile,
    device: &DeviceBuffer,
    buffer: BufferKind,
) -> Result<Option<RegisteredBuffer<'a>>, ReaderError> {
    Ok(match buffer {
        BufferKind::Registered => Some(cufile.register_buffer(device.ptr, device.len)?),
        BufferKind::Unregistered => None,
    })
}

impl GpuReader for CufileReader<'_> {
    const PATH: Path = Path::Cufile;

    fn landing(&mut self) -> (&mut Gpu, &DeviceBuffer) {
        (self.gpu, &self.device)
    }

    fn read_pass(
        &mut self,
        plan: &ReadPlan,
        nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        let binder = self.gpu.binder();
        let (handles, device) = (&self.handles, &self.device);
        let mut threads = vec![(); nthreads.max(1) as usize];
        let pass = run_parallel(plan.tasks(task_size), &mut threads, |_, task| {
            binder.bind()?;
            handles[task.file]
                .read_exact(device.ptr, task.buffer_offset, task.offset, task.len)
                .map_err(|source| ReaderError::CufileRead {
                    path: plan.files[task.file].path.display().to_string(),
                    offset: task.offset,
                    len: task.len,
                    source,
                })
        })?;
        // cuFileRead returns when the bytes are in GPU memory; synchronising costs nothing then
        // and guards against a path that copies asynchronously.
        self.gpu.synchronize()?;
        Ok(pass)
    }

    /// Deregisters and closes everything first (untimed), then times the files' opening and
    /// registration and the buffer's registration apart.
    fn reopen(&mut self, plan: &ReadPlan) -> Result<Opened, ReaderError> {
        self._registered = None;
        self.handles.clear();
        self._files.clear();
        let start = Instant::now();
        let (files, handles) = register_files(self.cufile, plan, OpenOptions::new().read(true))?;
        (self._files, self.handles) = (files, handles);
        let open = start.elapsed();
        let start = Instant::now();
        self._registered = register_buffer(self.cufile, &self.device, self.buffer)?;
        Ok(Opened {
            open,
            register: self._registered.is_some().then(|| start.elapsed()),
        })
    }
}
