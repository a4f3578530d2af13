//! Low-level file-system helpers for the data layer: aligned buffers and `O_DIRECT` opens, the
//! data-directory lock, free space, directory fsync and stale temporary files.

use std::alloc::{self, Layout};
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::ptr::NonNull;

/// Alignment `O_DIRECT` needs for buffers, offsets and lengths on every file system we meet
/// (4 KiB logical blocks; 512-byte devices accept it too).
pub const ALIGN: usize = 4096;

/// Marker in temporary file names; anything carrying it is never trusted and is removed later.
pub const PARTIAL_MARKER: &str = ".partial-";

/// Name of the lock file that serialises gds-gate processes sharing a data directory.
pub const LOCK_NAME: &str = ".gds-gate.lock";

/// A zeroed heap buffer aligned for `O_DIRECT`.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer owns its allocation exclusively, like a `Box<[u8]>`.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` bytes (rounded up to [`ALIGN`]), zeroed so no uninitialised memory is ever viewed.
    pub fn new(len: usize) -> Self {
        let size = len.max(1).next_multiple_of(ALIGN);
        let Ok(layout) = Layout::from_size_align(size, ALIGN) else {
            panic!("buffer of {len} bytes is too large to allocate");
        };
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout);
        };
        AlignedBuf { ptr, layout }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is a live, zero-initialised allocation of `layout.size()` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

fn is_einval(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::EINVAL)
}

/// Opens with `O_DIRECT` when the file system allows it (tmpfs and some FUSE file systems refuse
/// with `EINVAL`); the flag says which one was obtained.
pub fn open_maybe_direct(path: &Path, options: &OpenOptions) -> io::Result<(File, bool)> {
    let mut direct = options.clone();
    direct.custom_flags(libc::O_DIRECT);
    match direct.open(path) {
        Ok(file) => Ok((file, true)),
        Err(err) if is_einval(&err) => Ok((options.open(path)?, false)),
        Err(err) => Err(err),
    }
}

/// Whether an I/O error on an `O_DIRECT` descriptor means "not with `O_DIRECT`" (some file
/// systems accept the open and refuse the transfer).
pub fn direct_refused(err: &io::Error) -> bool {
    is_einval(err)
}

/// Switches an open descriptor to buffered I/O.
pub fn clear_direct(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: plain fcntl calls on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes a rename or unlink in `dir` durable: without it a crash can lose the new name even
/// though the file's data was synced.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Bytes available to an unprivileged user in the file system holding `dir`.
pub fn free_space(dir: &Path) -> io::Result<u64> {
    let c_path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is NUL-terminated and `stat` is a valid out-pointer.
    if unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled the struct.
    let stat = unsafe { stat.assume_init() };
    // The field types vary by target (u32 on some 32-bit ones).
    #[expect(clippy::unnecessary_cast)]
    let (avail, fragment) = (stat.f_bavail as u64, stat.f_frsize as u64);
    Ok(avail.saturating_mul(fragment))
}

/// Exclusive `flock` on the data directory's lock file, released on drop (or when the process
/// dies, so a killed run never leaves it held).
pub struct DirLock {
    file: Option<File>,
}

impl DirLock {
    /// Blocks until no other gds-gate process works in `dir`. File systems without `flock`
    /// (some Lustre or NFS mounts) give an unlocked guard: `held()` then says so and the
    /// caller becomes more careful about what it deletes.
    pub fn acquire(dir: &Path) -> io::Result<DirLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_NAME))?;
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(DirLock { file: Some(file) });
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOLCK | libc::ENOSYS | libc::EOPNOTSUPP) => {
                    return Ok(DirLock { file: None });
                }
                _ => return Err(err),
            }
        }
    }

    pub fn held(&self) -> bool {
        self.file.is_some()
    }
}

/// Removes the temporary files (`.NAME.partial-PID`) that runs of the gate left in `dir` when
/// they were killed: only names the gate gives (`ours(NAME)`), and only those of a writer that is
/// gone, or of this process when it holds the directory's lock. Anything else may be another
/// program's, or a live writer's on a file system without `flock`. Failures are ignored: a
/// leftover costs space, never trust, since no temporary name is ever read as data.
pub fn remove_stale_partials(dir: &Path, lock_held: bool, ours: fn(&str) -> bool) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((base, pid)) = name
            .strip_prefix('.')
            .and_then(|name| name.rsplit_once(PARTIAL_MARKER))
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let stale = if pid == std::process::id() {
            lock_held
        } else {
            !crate::process::running(pid)
        };
        if ours(base) && stale {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Temporary name for `name` in the same directory, so the final rename is atomic.
pub fn partial_name(name: &str) -> String {
    format!(".{name}{PARTIAL_MARKER}{}", std::process::id())
}
