//! cuFile's stream-ordered API (`cuFileStreamRegister`, `cuFileReadAsync`, `cuFileWriteAsync`,
//! `cuFileStreamDeregister`), optional like the batch API. The size, offsets and byte count of a
//! call are read and written by cuFile when the stream reaches the call, not when it is made: the
//! caller keeps them in [`AsyncSlot`]s that outlive the stream's synchronisation.

use std::ffi::{c_uint, c_void};

use super::{Cufile, CufileError, Handle, Status, check};

type AsyncFn = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut usize,
    *mut i64,
    *mut i64,
    *mut isize,
    *mut c_void,
) -> Status;

/// The stream entry points, resolved together: all or none.
pub(super) struct StreamApi {
    pub(super) register: unsafe extern "C" fn(*mut c_void, c_uint) -> Status,
    pub(super) deregister: unsafe extern "C" fn(*mut c_void) -> Status,
    pub(super) read_async: AsyncFn,
    pub(super) write_async: AsyncFn,
}

/// The parameters of one stream-ordered call, where cuFile finds them when the stream runs it:
/// `size`, `file_offset`, `buffer_offset` in, `done` (bytes, or a negative error) out; and the
/// `base` the call names as `bufPtr_base` (see [`AsyncSlot::new`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncSlot {
    pub base: u64,
    pub size: usize,
    pub file_offset: i64,
    pub buffer_offset: i64,
    pub done: isize,
}

impl AsyncSlot {
    /// The call for `size` bytes at `file_offset` and `buffer_offset` of the device allocation at
    /// `device_ptr`. A registered buffer is named by its registered base and the offset, as
    /// cufile.h requires. An unregistered one is named at the call's own address, offset 0:
    /// libcufile 1.15 checks a stream-ordered call on an unregistered buffer against the extent
    /// of the call in flight at the same base (cufile.log: `cufio_async ... buf_offset + size
    /// 4194304 4194304 exceeds registered length: 4194304`, then `-5` in the byte count), so
    /// calls that share the allocation's base but not its first call's extent all failed.
    pub fn new(
        device_ptr: u64,
        registered: bool,
        size: u64,
        file_offset: u64,
        buffer_offset: u64,
    ) -> AsyncSlot {
        let (base, buffer_offset) = if registered {
            (device_ptr, buffer_offset)
        } else {
            (device_ptr + buffer_offset, 0)
        };
        AsyncSlot {
            base,
            size: size as usize,
            file_offset: file_offset as i64,
            buffer_offset: buffer_offset as i64,
            done: 0,
        }
    }
}

impl Cufile {
    fn stream_api(&self) -> Result<&StreamApi, CufileError> {
        self.stream
            .as_ref()
            .ok_or_else(|| CufileError::MissingEntryPoint {
                path: self.path.display().to_string(),
                version: self.version.to_string(),
                symbol: "cuFileReadAsync",
            })
    }

    /// `cuFileStreamRegister(stream, 0)` (no promise of aligned or fixed parameters), deregistered
    /// on drop, which must come before the stream is destroyed (the reader's field order).
    pub fn register_stream(
        &self,
        stream: &cudarc::driver::CudaStream,
    ) -> Result<RegisteredStream<'_>, CufileError> {
        let api = self.stream_api()?;
        let stream: *mut c_void = stream.cu_stream().cast();
        // SAFETY: a live stream of this process; flags 0 promise nothing.
        check("cuFileStreamRegister", unsafe { (api.register)(stream, 0) })?;
        Ok(RegisteredStream { api, stream })
    }
}

/// A stream registered with cuFile.
pub struct RegisteredStream<'a> {
    api: &'a StreamApi,
    stream: *mut c_void,
}

impl RegisteredStream<'_> {
    /// Enqueues `cuFileReadAsync` (or `cuFileWriteAsync` when `write`) of `slot` on this stream,
    /// between `slot.base + slot.buffer_offset` and `handle`'s file.
    ///
    /// # Safety
    /// `slot` must stay where it is, untouched, until the stream has been synchronised, and the
    /// device range must lie in a live allocation.
    pub unsafe fn enqueue(
        &self,
        write: bool,
        handle: &Handle<'_>,
        slot: *mut AsyncSlot,
    ) -> Result<(), CufileError> {
        let call = if write {
            self.api.write_async
        } else {
            self.api.read_async
        };
        // SAFETY: the pointers into `slot` stay valid until the stream is synchronised (the
        // caller's contract); the handle is registered and the stream registered with cuFile.
        let status = unsafe {
            call(
                handle.raw,
                (*slot).base as *mut c_void,
                &raw mut (*slot).size,
                &raw mut (*slot).file_offset,
                &raw mut (*slot).buffer_offset,
                &raw mut (*slot).done,
                self.stream,
            )
        };
        check(
            if write {
                "cuFileWriteAsync"
            } else {
                "cuFileReadAsync"
            },
            status,
        )
    }
}

impl Drop for RegisteredStream<'_> {
    fn drop(&mut self) {
        // SAFETY: a stream registered by this library, deregistered once; the reader synchronises
        // it before dropping.
        let _ = unsafe { (self.api.deregister)(self.stream) };
    }
}
