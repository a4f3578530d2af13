//! The page cache, without privileges: drop a file's pages before a cold read, and measure how much
//! of it is still cached (a "cold" read from a cached file measures memory, not storage).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Writes back and drops the file's cached pages (`fsync` + `POSIX_FADV_DONTNEED`).
pub fn drop_pages(file: &File) -> io::Result<()> {
    // Dirty pages are not dropped, so write them back first.
    file.sync_all()?;
    drop_clean_pages(file, file.metadata()?.len())
}

/// The least a dropping thread takes on: below it, starting a thread costs more than it saves.
const DROP_RANGE: u64 = 256 << 20;
/// Threads that drop one file: the mapping's lock is shared, so more stop paying.
const MAX_DROPPERS: u64 = 8;

/// Drops the clean cached pages of a file of `size` bytes (`POSIX_FADV_DONTNEED`); dirty ones
/// stay. Threads that take a file's reads from one queue, as the gate's readers and KvikIO's
/// pool do, leave it cached in small folios, which one thread drops at ~0.2 s per 2 GiB; disjoint
/// ranges on a few threads drop them sooner (`tools/drills/page_cache_drop.py` measures both).
pub fn drop_clean_pages(file: &File, size: u64) -> io::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    drop_in_ranges(
        file,
        size,
        (size / DROP_RANGE).clamp(1, cores.min(MAX_DROPPERS)),
    )
}

fn drop_in_ranges(file: &File, size: u64, droppers: u64) -> io::Result<()> {
    if droppers <= 1 {
        // Offset 0 and length 0: the whole file, whatever its size now.
        return advise_dontneed(file, 0, 0);
    }
    std::thread::scope(|scope| {
        let ranges: Vec<_> = ranges(size, droppers)
            .into_iter()
            .map(|(start, len)| scope.spawn(move || advise_dontneed(file, start, len)))
            .collect();
        ranges.into_iter().try_for_each(|range| {
            range
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a page cache drop panicked")))
        })
    })?;
    // A folio is dropped only by a range that holds all of it: one larger than 2 MiB across a
    // boundary (kernels with 64 KiB pages make them) goes now, with little else left to walk.
    advise_dontneed(file, 0, 0)
}

/// `(offset, len)` of each dropper's range: whole 2 MiB (huge) pages, the last open-ended (a
/// length of 0), so that no 2 MiB page falls between two and the file's end is covered whatever
/// its size now.
fn ranges(size: u64, droppers: u64) -> Vec<(u64, u64)> {
    let per = (size / droppers).next_multiple_of(2 << 20);
    (0..droppers)
        .map(|i| (i * per, if i + 1 == droppers { 0 } else { per }))
        .collect()
}

fn advise_dontneed(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (offset, len) = (
        libc::off_t::try_from(offset).map_err(io::Error::other)?,
        libc::off_t::try_from(len).map_err(io::Error::other)?,
    );
    // SAFETY: a valid open descriptor; a length of 0 means to the end of the file.
    let rc =
        unsafe { libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED) };
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

    /// Ranges follow each other in whole 2 MiB pages, and the last one runs to the file's end.
    #[test]
    fn ranges_tile_the_file_in_whole_huge_pages() {
        const MIB: u64 = 1 << 20;
        assert_eq!(
            ranges(13 * MIB, 3),
            [(0, 6 * MIB), (6 * MIB, 6 * MIB), (12 * MIB, 0)]
        );
        assert_eq!(
            ranges(2048 * MIB, 8),
            (0..8)
                .map(|i| (i * 256 * MIB, if i < 7 { 256 * MIB } else { 0 }))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_drop_in_ranges_leaves_nothing_cached() {
        let size = 13 << 20;
        let mut file = tempfile::tempfile_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        file.write_all(&vec![7u8; size]).unwrap();
        file.sync_all().unwrap();
        for droppers in [2, 3, 5] {
            std::io::Seek::rewind(&mut file).unwrap();
            file.read_to_end(&mut Vec::new()).unwrap();
            assert!(resident_fraction(&file, size as u64).unwrap() > 0.9);
            drop_in_ranges(&file, size as u64, droppers).unwrap();
            assert_eq!(
                resident_fraction(&file, size as u64).unwrap(),
                0.0,
                "{droppers} ranges"
            );
        }
    }

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
