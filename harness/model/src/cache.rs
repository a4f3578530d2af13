//! The page cache, without privileges: drop a file's pages before a cold read, and measure how much
//! of it is still cached (a "cold" read from a cached file measures memory, not storage).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Writes back and drops the file's cached pages (`fsync` + `POSIX_FADV_DONTNEED`).
pub fn drop_pages(file: &File) -> io::Result<()> {
    // Dirty pages are not dropped, so write them back first.
    file.sync_all()?;
    drop_clean_pages(file)
}

/// Drops the file's clean cached pages (`POSIX_FADV_DONTNEED`); dirty ones stay.
pub fn drop_clean_pages(file: &File) -> io::Result<()> {
    // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole file.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// [`drop_pages`] of the file at `path`.
pub fn drop_path(path: &std::path::Path) -> io::Result<()> {
    drop_pages(&File::open(path)?)
}

/// Fraction of the file's pages in the page cache (`mincore` over a read-only mapping).
pub fn resident_fraction(file: &File, size: u64) -> io::Result<f64> {
    if size == 0 {
        return Ok(0.0);
    }
    let len = usize::try_from(size).map_err(io::Error::other)?;
    // SAFETY: a fresh shared read-only mapping of an open file, unmapped below; we only pass it to
    // mincore and never dereference it.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let mut pages = vec![0u8; len.div_ceil(page)];
    // SAFETY: `map` spans `len` bytes and `pages` has one byte per page of it.
    let rc = unsafe { libc::mincore(map, len, pages.as_mut_ptr()) };
    let error = io::Error::last_os_error();
    // SAFETY: unmapping exactly what was mapped above.
    unsafe { libc::munmap(map, len) };
    if rc != 0 {
        return Err(error);
    }
    let resident = pages.iter().filter(|&&page| page & 1 == 1).count();
    Ok(resident as f64 / pages.len() as f64)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn dropped_pages_are_no_longer_resident() {
        // Beside the sources, not in /tmp: tmpfs has no backing store and never drops pages.
        let mut file = tempfile::tempfile_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        file.write_all(&vec![7u8; 4 << 20]).unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        file.read_to_end(&mut Vec::new()).unwrap();
        assert!(
            resident_fraction(&file, 4 << 20).unwrap() > 0.9,
            "just read, must be cached"
        );
        drop_pages(&file).unwrap();
        assert!(
            resident_fraction(&file, 4 << 20).unwrap() < 0.1,
            "dropped, must not be cached"
        );
    }
}
