//! libcufile, loaded by hand. cudarc looks for `libcufile.so`, a symlink only development packages
//! ship; the runtime's soname is `libcufile.so.0`. Loading it ourselves also lets every call keep
//! cuFile's raw integer status (newer libraries return codes no enum of ours knows), makes symbols
//! that older libraries lack optional instead of a panic, and lets the statistics layout follow the
//! library's version rather than the headers this gate was built with.

pub mod batch;
pub mod stream;

use std::ffi::{c_int, c_void};
use std::path::PathBuf;

use libloading::Library;

use gds_model::cufile_abi::RawProperties;
use gds_model::cufile_abi::call::{Descr, Status};
pub use gds_model::cufile_abi::{
    DriverProperties, GpuCounters, Stats, StatsLayout, StatsLayoutError, Version, describe,
};

/// Where the gate looks for libcufile, in order. `GDS_GATE_LIBCUFILE` overrides them all.
pub const SEARCH: &[&str] = &[
    "libcufile.so.0",
    "/usr/local/cuda/targets/x86_64-linux/lib/libcufile.so.0",
    "/usr/local/cuda/targets/sbsa-linux/lib/libcufile.so.0",
    "/usr/local/cuda/lib64/libcufile.so.0",
    "/usr/lib/x86_64-linux-gnu/libcufile.so.0",
    "/usr/lib/aarch64-linux-gnu/libcufile.so.0",
    "/usr/lib64/libcufile.so.0",
];

/// Where libcufile is looked for, in order: `GDS_GATE_LIBCUFILE` alone when it is set, else
/// [`SEARCH`].
pub fn candidates() -> Vec<String> {
    match std::env::var("GDS_GATE_LIBCUFILE") {
        Ok(path) if !path.is_empty() => vec![path],
        _ => SEARCH.iter().map(|s| s.to_string()).collect(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CufileError {
    #[error("libcufile not found; looked for {}; install the CUDA toolkit's cuFile (libcufile) or set GDS_GATE_LIBCUFILE to its path", searched.join(", "))]
    NotFound { searched: Vec<String> },
    #[error("`{path}` lacks the symbol `{symbol}`; is it a libcufile older than 1.8 (CUDA 12.3)?")]
    MissingSymbol { path: String, symbol: &'static str },
    #[error(
        "`{path}` (cuFile {version}) has no `{symbol}`: this libcufile does not offer the entry point the reader needs"
    )]
    MissingEntryPoint {
        path: String,
        version: String,
        symbol: &'static str,
    },
    #[error("{call} failed: {} ({code})", describe(*code))]
    Call { call: &'static str, code: i32 },
    #[error(transparent)]
    Layout(#[from] StatsLayoutError),
}

/// The entry points some readers need and some libcufile builds lack: the doctor lists which the
/// host's library has, and a trial whose reader needs a missing one is ignored with the reason.
pub const OPTIONAL_ENTRY_POINTS: &[&str] = &[
    "cuFileBatchIOSetUp",
    "cuFileBatchIOSubmit",
    "cuFileBatchIOGetStatus",
    "cuFileBatchIODestroy",
    "cuFileReadAsync",
    "cuFileWriteAsync",
    "cuFileStreamRegister",
    "cuFileStreamDeregister",
    "cuFileGetStatsL3",
];

type Fn0 = unsafe extern "C" fn() -> Status;
type ReadFn = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, i64, i64) -> isize;
/// `cuFileWrite(fh, bufPtr_base, size, file_offset, bufPtr_offset)`: `cuFileRead`'s shape with a
/// source the call does not write to.
type WriteFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, i64, i64) -> isize;

/// The loaded library and the entry points the gate uses.
pub struct Cufile {
    pub path: PathBuf,
    pub version: Version,
    driver_open: Fn0,
    driver_get_properties: unsafe extern "C" fn(*mut RawProperties) -> Status,
    handle_register: unsafe extern "C" fn(*mut *mut c_void, *mut Descr) -> Status,
    handle_deregister: unsafe extern "C" fn(*mut c_void),
    buf_register: unsafe extern "C" fn(*const c_void, usize, c_int) -> Status,
    buf_deregister: unsafe extern "C" fn(*const c_void) -> Status,
    read: ReadFn,
    write: WriteFn,
    stats: Option<StatsApi>,
    batch: Option<batch::BatchApi>,
    stream: Option<stream::StreamApi>,
    _library: Library,
}

struct StatsApi {
    set_level: unsafe extern "C" fn(c_int) -> Status,
    start: Fn0,
    get_l3: unsafe extern "C" fn(*mut c_void) -> Status,
}

impl Cufile {
    /// Loads the first of [`candidates`] that opens.
    pub fn load() -> Result<Cufile, CufileError> {
        let candidates = candidates();
        for candidate in &candidates {
            // SAFETY: loading libcufile runs its initialisers, which is what using it requires.
            if let Ok(library) = unsafe { Library::new(candidate) } {
                return Cufile::from_library(library, candidate);
            }
        }
        Err(CufileError::NotFound {
            searched: candidates,
        })
    }

    fn from_library(library: Library, name: &str) -> Result<Cufile, CufileError> {
        let shown = name.to_string();
        macro_rules! symbol {
            ($name:literal) => {{
                // SAFETY: the type matches the declaration in cufile.h for this symbol.
                let symbol = unsafe { library.get(concat!($name, "\0").as_bytes()) };
                match symbol {
                    Ok(symbol) => *symbol,
                    Err(_) => {
                        return Err(CufileError::MissingSymbol {
                            path: shown.clone(),
                            symbol: $name,
                        });
                    }
                }
            }};
        }
        macro_rules! optional {
            ($name:literal) => {{
                // SAFETY: as above.
                unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .ok()
                    .map(|symbol| *symbol)
            }};
        }
        let get_version: unsafe extern "C" fn(*mut c_int) -> Status = symbol!("cuFileGetVersion");
        let mut version = 0;
        // SAFETY: a valid out-pointer; works before the driver is opened.
        check("cuFileGetVersion", unsafe { get_version(&mut version) })?;
        let stats = match (
            optional!("cuFileSetStatsLevel"),
            optional!("cuFileStatsStart"),
            optional!("cuFileGetStatsL3"),
        ) {
            (Some(set_level), Some(start), Some(get_l3)) => Some(StatsApi {
                set_level,
                start,
                get_l3,
            }),
            _ => None,
        };
        let batch = match (
            optional!("cuFileBatchIOSetUp"),
            optional!("cuFileBatchIOSubmit"),
            optional!("cuFileBatchIOGetStatus"),
            optional!("cuFileBatchIODestroy"),
        ) {
            (Some(setup), Some(submit), Some(get_status), Some(destroy)) => Some(batch::BatchApi {
                setup,
                submit,
                get_status,
                cancel: optional!("cuFileBatchIOCancel"),
                destroy,
            }),
            _ => None,
        };
        let stream = match (
            optional!("cuFileStreamRegister"),
            optional!("cuFileStreamDeregister"),
            optional!("cuFileReadAsync"),
            optional!("cuFileWriteAsync"),
        ) {
            (Some(register), Some(deregister), Some(read_async), Some(write_async)) => {
                Some(stream::StreamApi {
                    register,
                    deregister,
                    read_async,
                    write_async,
                })
            }
            _ => None,
        };
        let read: ReadFn = symbol!("cuFileRead");
        // The file whose code `cuFileRead` is: a soname or a symlink names a library, this says
        // which copy actually runs (a process with KvikIO's wheel may hold two).
        let path = object_of(read as *const c_void)
            .or_else(|| loaded_path("libcufile"))
            .unwrap_or_else(|| PathBuf::from(name));
        Ok(Cufile {
            path,
            version: Version(version),
            driver_open: symbol!("cuFileDriverOpen"),
            driver_get_properties: symbol!("cuFileDriverGetProperties"),
            handle_register: symbol!("cuFileHandleRegister"),
            handle_deregister: symbol!("cuFileHandleDeregister"),
            buf_register: symbol!("cuFileBufRegister"),
            buf_deregister: symbol!("cuFileBufDeregister"),
            read,
            write: symbol!("cuFileWrite"),
            stats,
            batch,
            stream,
            _library: library,
        })
    }

    /// Which of [`OPTIONAL_ENTRY_POINTS`] this library exports.
    pub fn entry_points(&self) -> Vec<String> {
        OPTIONAL_ENTRY_POINTS
            .iter()
            .filter(|name| {
                let symbol = format!("{name}\0");
                // SAFETY: only the symbol's presence is asked; it is never called through this
                // type.
                unsafe { self._library.get::<*const c_void>(symbol.as_bytes()) }.is_ok()
            })
            .map(|name| name.to_string())
            .collect()
    }

    /// `cuFileDriverOpen`. Without nvidia-fs it still succeeds, "in compatible mode", when
    /// `allow_compat_mode` is true: the properties tell which.
    pub fn open_driver(&self) -> Result<(), CufileError> {
        // SAFETY: no arguments.
        check("cuFileDriverOpen", unsafe { (self.driver_open)() })
    }

    pub fn properties(&self) -> Result<DriverProperties, CufileError> {
        let mut raw = RawProperties::default();
        // SAFETY: a valid out-pointer to a struct of the documented size.
        check("cuFileDriverGetProperties", unsafe {
            (self.driver_get_properties)(&mut raw)
        })?;
        Ok(raw.into())
    }

    /// Registers an open (`O_DIRECT`) descriptor.
    pub fn register_handle(&self, fd: c_int) -> Result<Handle<'_>, CufileError> {
        let mut descr = Descr::fd(fd);
        let mut handle = std::ptr::null_mut();
        // SAFETY: valid pointers; `descr` outlives the call.
        check("cuFileHandleRegister", unsafe {
            (self.handle_register)(&mut handle, &mut descr)
        })?;
        Ok(Handle {
            cufile: self,
            raw: handle,
        })
    }

    /// `cuFileBufRegister` of a device allocation, deregistered on drop.
    pub fn register_buffer(
        &self,
        device_ptr: u64,
        len: usize,
    ) -> Result<RegisteredBuffer<'_>, CufileError> {
        // SAFETY: `device_ptr` is a live device allocation of at least `len` bytes (caller's contract).
        check("cuFileBufRegister", unsafe {
            (self.buf_register)(device_ptr as *const c_void, len, 0)
        })?;
        Ok(RegisteredBuffer {
            cufile: self,
            ptr: device_ptr,
        })
    }

    /// Enables level-3 statistics and starts counting. Needs the driver open.
    pub fn start_stats(&self) -> Result<(), CufileError> {
        let stats = self.stats_api()?;
        StatsLayout::for_version(self.version)?;
        // SAFETY: a plain call with a level cufile.h documents (0 to 3); the symbol's type is
        // cufile.h's.
        check("cuFileSetStatsLevel", unsafe { (stats.set_level)(3) })?;
        // SAFETY: no arguments; the driver is open (the caller's contract) and the level set above.
        check("cuFileStatsStart", unsafe { (stats.start)() })
    }

    /// Level-3 statistics, read into a buffer sized for this library's layout.
    pub fn stats(&self) -> Result<Stats, CufileError> {
        let api = self.stats_api()?;
        let layout = StatsLayout::for_version(self.version)?;
        // Larger than any known layout and zeroed, so a mistaken size cannot overrun.
        let mut buffer = vec![0u8; 8192];
        // SAFETY: the buffer is larger than the level-3 struct of this library version.
        check("cuFileGetStatsL3", unsafe {
            (api.get_l3)(buffer.as_mut_ptr().cast())
        })?;
        Ok(layout.decode(&buffer))
    }

    fn stats_api(&self) -> Result<&StatsApi, CufileError> {
        self.stats
            .as_ref()
            .ok_or(CufileError::Layout(StatsLayoutError::NoStatsApi {
                found: self.version,
            }))
    }
}

/// A registered file, deregistered on drop.
pub struct Handle<'a> {
    cufile: &'a Cufile,
    raw: *mut c_void,
}

// SAFETY: cuFile handles may be used from any thread (cuFileRead is thread-safe per the API guide).
unsafe impl Send for Handle<'_> {}
// SAFETY: as above: concurrent `cuFileRead`s on one handle are what the API guide allows.
unsafe impl Sync for Handle<'_> {}

impl Handle<'_> {
    /// One `cuFileRead` of `len` bytes at `file_offset` into `device_ptr + buffer_offset`; retries
    /// short reads. Errors carry cuFile's (negative) status or the errno.
    pub fn read_exact(
        &self,
        device_ptr: u64,
        buffer_offset: u64,
        file_offset: u64,
        len: u64,
    ) -> Result<(), ReadFailure> {
        self.exact(false, device_ptr, buffer_offset, file_offset, len)
    }

    /// One `cuFileWrite` of `len` bytes from `device_ptr + buffer_offset` to `file_offset`;
    /// retries short writes, like [`Handle::read_exact`].
    pub fn write_exact(
        &self,
        device_ptr: u64,
        buffer_offset: u64,
        file_offset: u64,
        len: u64,
    ) -> Result<(), ReadFailure> {
        self.exact(true, device_ptr, buffer_offset, file_offset, len)
    }

    /// `cuFileWrite` (`write`) or `cuFileRead` calls until `len` bytes are done.
    fn exact(
        &self,
        write: bool,
        device_ptr: u64,
        buffer_offset: u64,
        file_offset: u64,
        len: u64,
    ) -> Result<(), ReadFailure> {
        let mut done = 0u64;
        while done < len {
            let (size, at, from) = (
                (len - done) as usize,
                (file_offset + done) as i64,
                (buffer_offset + done) as i64,
            );
            // SAFETY: the device range [ptr+buffer_offset, +len) lies in the allocation (caller's
            // contract); cuFileWrite only reads it.
            let n = unsafe {
                if write {
                    (self.cufile.write)(self.raw, device_ptr as *const c_void, size, at, from)
                } else {
                    (self.cufile.read)(self.raw, device_ptr as *mut c_void, size, at, from)
                }
            };
            match n {
                n if n > 0 => done += n as u64,
                0 => {
                    return Err(ReadFailure::EndOfFile {
                        at: file_offset + done,
                    });
                }
                -1 => return Err(ReadFailure::Errno(std::io::Error::last_os_error())),
                n => return Err(ReadFailure::Cufile { code: -(n as i32) }),
            }
        }
        Ok(())
    }
}

/// What went wrong in a `cuFileRead` or `cuFileWrite`; the error that wraps it says which call.
#[derive(Debug, thiserror::Error)]
pub enum ReadFailure {
    #[error("cuFile returned 0 bytes (end of file) at byte {at}")]
    EndOfFile { at: u64 },
    #[error("cuFile failed: {0}")]
    Errno(std::io::Error),
    #[error("cuFile failed: {} ({code})", describe(*code))]
    Cufile { code: i32 },
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        // SAFETY: a handle registered by this library, deregistered once.
        unsafe { (self.cufile.handle_deregister)(self.raw) }
    }
}

pub struct RegisteredBuffer<'a> {
    cufile: &'a Cufile,
    ptr: u64,
}

impl Drop for RegisteredBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: a pointer registered by this library, deregistered once.
        let _ = unsafe { (self.cufile.buf_deregister)(self.ptr as *const c_void) };
    }
}

fn check(call: &'static str, status: Status) -> Result<(), CufileError> {
    if status.err == 0 {
        Ok(())
    } else {
        Err(CufileError::Call {
            call,
            code: status.err,
        })
    }
}

/// The shared object `symbol` lies in, by `dladdr`, with symlinks resolved.
fn object_of(symbol: *const c_void) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `symbol` is an address in this process and `info` a valid out-pointer.
    if unsafe { libc::dladdr(symbol, info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so it filled the struct.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's `dli_fname` is a NUL-terminated string owned by the loader, alive while
    // the library stays loaded (it is: `Cufile` holds it).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// The path of a loaded shared object whose file name starts with `prefix`, from /proc/self/maps.
pub fn loaded_path(prefix: &str) -> Option<PathBuf> {
    loaded_paths(prefix).into_iter().next()
}

/// Every distinct loaded object whose file name starts with `prefix` (two libcufile copies in one
/// process are two cuFile drivers, and statistics of one miss the other's reads).
pub fn loaded_paths(prefix: &str) -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut paths: Vec<PathBuf> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dladdr_names_the_real_file_a_symbol_lives_in() {
        let path = object_of(libc::getpid as *const c_void).unwrap();
        assert!(path.is_absolute(), "{path:?}");
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("libc"),
            "{path:?}"
        );
        assert_eq!(std::fs::canonicalize(&path).unwrap(), path);
    }

    #[test]
    fn a_missing_library_says_where_it_looked() {
        // SAFETY: setting a variable in a single-threaded test section; no other test reads it.
        unsafe { std::env::set_var("GDS_GATE_LIBCUFILE", "/nonexistent/libcufile.so.0") };
        let error = Cufile::load()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        // SAFETY: as above.
        unsafe { std::env::remove_var("GDS_GATE_LIBCUFILE") };
        assert!(
            error.contains("/nonexistent/libcufile.so.0") && error.contains("GDS_GATE_LIBCUFILE"),
            "{error}"
        );
    }
}
