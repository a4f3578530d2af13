//! The posix reader's destination: anonymous memory that asks for transparent huge pages. Each
//! pass first touches the whole buffer (see `Posix::prepare`); with 4 KiB pages a 4 GiB buffer
//! takes a million page faults before the first byte is read, with 2 MiB pages two thousand.
//! (Where the kernel's THP `defrag` setting is `madvise`, the default, a fragmented host may
//! compact memory at that first touch: slower start-up then, never a slower timed read.)

use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

pub struct HostMemory {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; access goes through `&`/`&mut` borrows.
unsafe impl Send for HostMemory {}
// SAFETY: as above: shared access is `&[u8]` only, which many threads may hold at once.
unsafe impl Sync for HostMemory {}

impl HostMemory {
    /// `len` zeroed bytes, or the mapping's error.
    pub fn zeroed(len: usize) -> io::Result<HostMemory> {
        if len == 0 {
            return Ok(HostMemory {
                ptr: NonNull::dangling(),
                len,
            });
        }
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // Advice only: where transparent huge pages are off, the kernel gives 4 KiB pages and
        // everything works the same, only with more faults.
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
        Ok(HostMemory {
            ptr: NonNull::new(ptr.cast()).expect("mmap does not return null on success"),
            len,
        })
    }
}

impl Deref for HostMemory {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` bytes (or dangling with `len` 0) for as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for HostMemory {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly the mapping made in `zeroed`, which no borrow outlives.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HostMemory;

    #[test]
    fn zeroed_writable_and_empty_allowed() {
        let mut memory = HostMemory::zeroed((4 << 20) + 3).unwrap();
        assert!(memory.iter().all(|&byte| byte == 0));
        memory[(4 << 20) + 2] = 7;
        assert_eq!(memory[(4 << 20) + 2], 7);
        assert!(HostMemory::zeroed(0).unwrap().is_empty());
    }
}
