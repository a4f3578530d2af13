//! Judges what landed in a buffer against what the files hold, walking the read plan: the exact
//! compare (generated files) and the position-keyed checksum (every file).

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::plan::ReadPlan;
use crate::scenario::Integrity;
use crate::verify;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntegrityResult {
    pub method: Integrity,
    /// The checksum of what was read (for a trial over several files, the wrapping sum of theirs).
    #[serde(with = "crate::hex::option")]
    #[schemars(with = "Option<crate::hex::Hex>")]
    pub checksum: Option<u64>,
    #[serde(with = "crate::hex::option")]
    #[schemars(with = "Option<crate::hex::Hex>")]
    pub expected_checksum: Option<u64>,
    /// 8-byte words that differ from the generator (exact compare only).
    pub bad_words: u64,
    pub first_bad: Option<BadByte>,
    pub seconds: f64,
}

/// Where the first wrong byte is, in file terms and in buffer terms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BadByte {
    pub file: PathBuf,
    pub file_offset: u64,
    pub buffer_offset: u64,
}

impl IntegrityResult {
    pub fn passed(&self) -> bool {
        self.bad_words == 0 && self.checksum == self.expected_checksum
    }
}

/// Computes the two verifications over one range of the destination buffer, wherever that buffer
/// lives: host memory ([`HostBuffer`]) or the GPU (the worker's device verifier). Both must compute
/// exactly the functions of [`crate::verify`].
pub trait RangeVerifier {
    type Error;
    /// Exact compare of `len` bytes at `buffer_offset`, which hold the generated file with `seed`
    /// from `file_offset` (8-aligned).
    fn exact(
        &mut self,
        seed: u64,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<verify::Mismatch, Self::Error>;
    /// Checksum sum of `len` bytes at `buffer_offset`, positions keyed from `file_offset`.
    fn checksum(
        &mut self,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<u64, Self::Error>;
}

/// The CPU reference over a host buffer.
pub struct HostBuffer<'a>(pub &'a [u8]);

impl RangeVerifier for HostBuffer<'_> {
    type Error = std::convert::Infallible;
    fn exact(
        &mut self,
        seed: u64,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<verify::Mismatch, Self::Error> {
        Ok(verify::exact_compare(
            seed,
            file_offset,
            &self.0[buffer_offset as usize..(buffer_offset + len) as usize],
        ))
    }
    fn checksum(
        &mut self,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<u64, Self::Error> {
        Ok(verify::checksum_range_parallel(
            &self.0[buffer_offset as usize..(buffer_offset + len) as usize],
            file_offset,
        ))
    }
}

/// What a correct pass of `plan` checksums to: the files' whole checksums when the plan covers
/// them, otherwise the generator's range sums (random reads are only allowed on generated files,
/// and only generated files are split across GPUs by range).
/// Computed once per trial, not per pass.
pub fn expected_checksum(plan: &ReadPlan) -> u64 {
    regions(plan)
        .into_iter()
        .fold(0u64, |expected, (file_offset, _, len, file)| {
            let planned = &plan.files[file];
            let term = match planned.seed {
                _ if plan.covers_files => planned.checksum,
                Some(seed) => verify::expected_checksum_range(seed, file_offset, len),
                None => unreachable!("random plans are validated to read generated files only"),
            };
            expected.wrapping_add(term)
        })
}

/// Verifies one pass of `plan` with `method`; `expected` comes from [`expected_checksum`].
pub fn check<V: RangeVerifier>(
    plan: &ReadPlan,
    verifier: &mut V,
    method: Integrity,
    expected: u64,
) -> Result<IntegrityResult, V::Error> {
    let start = Instant::now();
    let mut result = IntegrityResult::not_checked(method);
    if method == Integrity::None {
        return Ok(result);
    }
    let mut observed = 0u64;
    // Whole-file and chunked plans lay each file out contiguously from its offset 0, so each file
    // is one range (chunk boundaries need not be 8-byte aligned); random reads are aligned, and so
    // are the cuts of a shard of part of a file.
    for (file_offset, buffer_offset, len, file) in regions(plan) {
        let planned = &plan.files[file];
        if let (Integrity::Exact, Some(seed)) = (method, planned.seed) {
            let mismatch = verifier.exact(seed, file_offset, buffer_offset, len)?;
            result.bad_words += mismatch.bad_words;
            if let (None, Some(bad)) = (&result.first_bad, mismatch.first_bad_offset) {
                result.first_bad = Some(BadByte {
                    file: planned.path.clone(),
                    file_offset: bad,
                    buffer_offset: buffer_offset + (bad - file_offset),
                });
            }
        }
        let sum = verifier.checksum(file_offset, buffer_offset, len)?;
        observed = observed.wrapping_add(if plan.covers_files {
            verify::finish_checksum(sum, len)
        } else {
            sum
        });
    }
    result.checksum = Some(observed);
    result.expected_checksum = Some(expected);
    result.seconds = start.elapsed().as_secs_f64();
    Ok(result)
}

impl IntegrityResult {
    /// The result before anything was read (or when `integrity: none`).
    pub fn not_checked(method: Integrity) -> IntegrityResult {
        IntegrityResult {
            method,
            checksum: None,
            expected_checksum: None,
            bad_words: 0,
            first_bad: None,
            seconds: 0.0,
        }
    }
}

/// (file offset, buffer offset, length, file index) of the ranges to verify.
///
/// A plan that covers its files verifies each file as one range from offset 0. Otherwise
/// (random reads, or a GPU's shard of part of a file, see [`crate::shard`]) segments that continue
/// one another in both the file and the buffer are joined: a shard of a chunked plan then starts
/// its range at the shard's cut (8-byte aligned by construction), not at a chunk boundary that
/// may not be.
pub fn regions(plan: &ReadPlan) -> Vec<(u64, u64, u64, usize)> {
    let mut regions: Vec<(u64, u64, u64, usize)> = Vec::new();
    for segment in &plan.segments {
        match regions.last_mut() {
            Some(last) if plan.covers_files && last.3 == segment.file => last.2 += segment.len,
            Some(last)
                if !plan.covers_files
                    && last.3 == segment.file
                    && last.0 + last.2 == segment.offset
                    && last.1 + last.2 == segment.buffer_offset =>
            {
                last.2 += segment.len
            }
            _ if plan.covers_files => {
                regions.push((0, segment.buffer_offset, segment.len, segment.file))
            }
            _ => regions.push((
                segment.offset,
                segment.buffer_offset,
                segment.len,
                segment.file,
            )),
        }
    }
    regions
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::plan::test_support::{contents, generated, perfect};
    use crate::scenario::size::{ByteSize, PositiveSize};
    use crate::scenario::{Pattern, RandomReads};

    fn host_check(plan: &ReadPlan, buffer: &[u8], method: Integrity) -> IntegrityResult {
        let Ok(result) = check(
            plan,
            &mut HostBuffer(buffer),
            method,
            expected_checksum(plan),
        );
        result
    }

    #[test]
    fn perfect_reads_pass_and_a_flipped_byte_is_located_in_its_file() {
        let files = vec![generated(3, 100_003), generated(4, 65_536)];
        for pattern in [
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(4099))),
        ] {
            let plan = ReadPlan::new(files.clone(), &pattern);
            let mut buffer = perfect(&plan, &contents(&plan.files));
            let result = host_check(&plan, &buffer, Integrity::Exact);
            assert!(result.passed(), "{pattern:?}: {result:?}");
            buffer[100_003 + 777] ^= 0x10;
            let result = host_check(&plan, &buffer, Integrity::Exact);
            assert!(!result.passed());
            assert_eq!(result.bad_words, 1);
            let bad = result.first_bad.unwrap();
            assert_eq!(
                (bad.file, bad.file_offset, bad.buffer_offset),
                ("gen-4".into(), 777, 100_003 + 777)
            );
            let checksum_only = host_check(&plan, &buffer, Integrity::Checksum);
            assert!(!checksum_only.passed() && checksum_only.first_bad.is_none());
        }
    }

    #[test]
    fn random_reads_are_checked_against_the_generator() {
        let random = RandomReads {
            size: PositiveSize(ByteSize(8192)),
            count: NonZeroU32::new(20).unwrap(),
            seed: 11,
            align: PositiveSize(ByteSize(4096)),
        };
        let plan = ReadPlan::new(vec![generated(9, 1 << 20)], &Pattern::Random(random));
        let mut buffer = perfect(&plan, &contents(&plan.files));
        assert!(host_check(&plan, &buffer, Integrity::Exact).passed());
        buffer[8192 * 5 + 1] ^= 1;
        let result = host_check(&plan, &buffer, Integrity::Exact);
        assert_eq!(
            result.first_bad.unwrap().file_offset,
            plan.segments[5].offset + 1
        );
    }

    #[test]
    fn integrity_none_checks_nothing_and_says_so() {
        let plan = ReadPlan::new(vec![generated(1, 64)], &Pattern::Whole);
        let result = host_check(&plan, &[0u8; 64], Integrity::None);
        assert_eq!((result.checksum, result.expected_checksum), (None, None));
        assert_eq!(result.method, Integrity::None);
    }
}

/// A streamed pass's verification, composed window by window: the windows' range sums add up to
/// the pass's (the checksum is position-keyed and summed), the plan's length terms finish it, and
/// the first wrong byte keeps its file offset and its offset in the whole pass.
#[derive(Debug, Default)]
pub struct Streamed {
    sum: u64,
    bad_words: u64,
    first_bad: Option<BadByte>,
    seconds: f64,
    checked: bool,
}

impl Streamed {
    /// Adds the result of [`check`] on the plan of the window that starts at `window_start` in
    /// the pass's buffer.
    pub fn add(&mut self, window_start: u64, result: IntegrityResult) {
        self.checked |= result.checksum.is_some();
        self.sum = self.sum.wrapping_add(result.checksum.unwrap_or(0));
        self.bad_words += result.bad_words;
        self.seconds += result.seconds;
        if let (None, Some(mut bad)) = (&self.first_bad, result.first_bad) {
            bad.buffer_offset += window_start;
            self.first_bad = Some(bad);
        }
    }

    /// The pass's result, comparable with [`check`] on the whole buffer.
    pub fn finish(self, plan: &ReadPlan, method: Integrity, expected: u64) -> IntegrityResult {
        let mut result = IntegrityResult::not_checked(method);
        if method == Integrity::None || !self.checked {
            return result;
        }
        result.checksum = Some(self.sum.wrapping_add(plan.length_terms()));
        result.expected_checksum = Some(expected);
        result.bad_words = self.bad_words;
        result.first_bad = self.first_bad;
        result.seconds = self.seconds;
        result
    }
}
