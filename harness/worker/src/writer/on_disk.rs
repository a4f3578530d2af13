//! Verification of written files on the disk: an `O_DIRECT` read of each file (the page cache
//! is bypassed, so the bytes come from the storage, not from the pages the write left behind) in
//! chunks, compared with the generator and checksummed exactly as a read is verified
//! ([`gds_model::integrity::check`]). It never goes through the path under test, so a writer
//! cannot vouch for itself; the first wrong byte is reported at its offset in its file.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use crate::reader::ReaderError;
use crate::reader::host_memory::HostMemory;
use gds_model::integrity::{self, IntegrityResult, RangeVerifier};
use gds_model::plan::ReadPlan;
use gds_model::scenario::Integrity;
use gds_model::verify::{self, Mismatch};

/// Bytes read per `O_DIRECT` call: a multiple of every logical block size.
const CHUNK: usize = 8 << 20;
/// Alignment of `O_DIRECT` offsets (the buffer is page-aligned).
const ALIGN: u64 = 4096;

/// Verifies the files of `plan` as they are on the disk now.
pub fn verify(
    plan: &ReadPlan,
    method: Integrity,
    expected: u64,
) -> Result<IntegrityResult, ReaderError> {
    let mut disk = OnDisk {
        plan,
        scratch: HostMemory::zeroed(CHUNK).map_err(ReaderError::HostAllocation)?,
        stashed: None,
    };
    integrity::check(plan, &mut disk, method, expected)
}

struct OnDisk<'a> {
    plan: &'a ReadPlan,
    scratch: HostMemory,
    /// The checksum of the range the last exact compare read, so that the checksum asked for
    /// next does not read the file a second time.
    stashed: Option<((u64, u64, u64), u64)>,
}

impl OnDisk<'_> {
    /// The file whose bytes the plan puts at `buffer_offset`.
    fn file_at(&self, buffer_offset: u64) -> usize {
        self.plan
            .segments
            .iter()
            .find(|s| (s.buffer_offset..s.buffer_offset + s.len).contains(&buffer_offset))
            .map_or(0, |s| s.file)
    }

    /// Reads `len` bytes at `file_offset` of the file at `buffer_offset` with `O_DIRECT`, handing
    /// each chunk to `each` with the file offset of its first byte. Returns the range's checksum
    /// sum, computed on the way.
    fn walk(
        &mut self,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
        mut each: impl FnMut(u64, &[u8]),
    ) -> Result<u64, ReaderError> {
        let planned = &self.plan.files[self.file_at(buffer_offset)];
        let path = planned.path.display().to_string();
        let file: File = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&planned.path)
            .map_err(|source| ReaderError::VerifyOpen {
                path: path.clone(),
                source,
            })?;
        let end = file_offset + len;
        let mut at = file_offset - file_offset % ALIGN;
        let mut sum = 0u64;
        while at < end {
            let read = loop {
                match file.read_at(&mut self.scratch[..CHUNK], at) {
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    other => break other,
                }
            };
            let n = read.map_err(|source| ReaderError::Io {
                path: path.clone(),
                offset: at,
                len: CHUNK as u64,
                source,
            })? as u64;
            if n == 0 {
                return Err(ReaderError::ShortFile {
                    path,
                    at,
                    expected_end: end,
                });
            }
            let from = file_offset.max(at);
            let to = end.min(at + n);
            if from < to {
                let window = &self.scratch[(from - at) as usize..(to - at) as usize];
                sum = sum.wrapping_add(verify::checksum_range_parallel(window, from));
                each(from, window);
            }
            at += n;
        }
        Ok(sum)
    }
}

impl RangeVerifier for OnDisk<'_> {
    type Error = ReaderError;

    fn exact(
        &mut self,
        seed: u64,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<Mismatch, ReaderError> {
        let mut mismatch = Mismatch::default();
        let sum = self.walk(file_offset, buffer_offset, len, |from, window| {
            mismatch = mismatch.merge(verify::exact_compare(seed, from, window));
        })?;
        self.stashed = Some(((file_offset, buffer_offset, len), sum));
        Ok(mismatch)
    }

    fn checksum(
        &mut self,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<u64, ReaderError> {
        match self.stashed.take() {
            Some((range, sum)) if range == (file_offset, buffer_offset, len) => Ok(sum),
            _ => self.walk(file_offset, buffer_offset, len, |_, _| {}),
        }
    }
}
