//! Judges what landed in a buffer against what the files hold, walking the read plan: the exact
//! compare (generated files) and the position-keyed checksum (every file).

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::plan::ReadPlan;
use crate::scenario::Integrity;
use crate::verify;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntegrityResult {
    pub method: Integrity,
    /// The checksum of what was read (for a trial over several files, the wrapping sum of theirs).
    #[serde(with = "crate::hex::option")]
    pub checksum: Option<u64>,
    #[serde(with = "crate::hex::option")]
    pub expected_checksum: Option<u64>,
    /// 8-byte words that differ from the generator (exact compare only).
    pub bad_words: u64,
    pub first_bad: Option<BadByte>,
    pub seconds: f64,
}

/// Where the first wrong byte is, in file terms and in buffer terms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// Verifies `buffer` (which holds one pass of `plan`) with `method`.
pub fn check(plan: &ReadPlan, buffer: &[u8], method: Integrity) -> IntegrityResult {
    let start = Instant::now();
    let mut result = IntegrityResult {
        method,
        checksum: None,
        expected_checksum: None,
        bad_words: 0,
        first_bad: None,
        seconds: 0.0,
    };
    if method == Integrity::None {
        return result;
    }
    if method == Integrity::Exact {
        exact(plan, buffer, &mut result);
    }
    let (checksum, expected) = checksums(plan, buffer);
    result.checksum = Some(checksum);
    result.expected_checksum = Some(expected);
    result.seconds = start.elapsed().as_secs_f64();
    result
}

/// Whole-file and chunked plans lay each file out contiguously from its offset 0, so each file is
/// compared as one range (chunk boundaries need not be 8-byte aligned); random reads are aligned.
fn exact(plan: &ReadPlan, buffer: &[u8], result: &mut IntegrityResult) {
    for (file_offset, buffer_offset, len, file) in regions(plan) {
        let Some(seed) = plan.files[file].seed else {
            continue;
        };
        let region = &buffer[buffer_offset as usize..(buffer_offset + len) as usize];
        let mismatch = verify::exact_compare(seed, file_offset, region);
        result.bad_words += mismatch.bad_words;
        if let (None, Some(bad)) = (&result.first_bad, mismatch.first_bad_offset) {
            result.first_bad = Some(BadByte {
                file: plan.files[file].path.clone(),
                file_offset: bad,
                buffer_offset: buffer_offset + (bad - file_offset),
            });
        }
    }
}

/// (observed, expected): whole-file checksums when the plan covers its files, otherwise range sums
/// (only generated files can be read at random, so their expectation is computable).
fn checksums(plan: &ReadPlan, buffer: &[u8]) -> (u64, u64) {
    let mut observed = 0u64;
    let mut expected = 0u64;
    for (file_offset, buffer_offset, len, file) in regions(plan) {
        let region = &buffer[buffer_offset as usize..(buffer_offset + len) as usize];
        let sum = verify::checksum_range_parallel(region, file_offset);
        let planned = &plan.files[file];
        if plan.covers_files {
            observed = observed.wrapping_add(verify::finish_checksum(sum, len));
            expected = expected.wrapping_add(planned.checksum);
        } else {
            observed = observed.wrapping_add(sum);
            let seed = planned
                .seed
                .expect("random plans are validated to read generated files only");
            expected =
                expected.wrapping_add(verify::expected_checksum_range(seed, file_offset, len));
        }
    }
    (observed, expected)
}

/// (file offset, buffer offset, length, file index) of the ranges to verify.
fn regions(plan: &ReadPlan) -> Vec<(u64, u64, u64, usize)> {
    if plan.covers_files {
        let mut regions: Vec<(u64, u64, u64, usize)> = Vec::new();
        for segment in &plan.segments {
            match regions.last_mut() {
                Some(last) if last.3 == segment.file => last.2 += segment.len,
                _ => regions.push((0, segment.buffer_offset, segment.len, segment.file)),
            }
        }
        regions
    } else {
        plan.segments
            .iter()
            .map(|s| (s.offset, s.buffer_offset, s.len, s.file))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::data::fill;
    use crate::plan::PlannedFile;
    use crate::scenario::size::{ByteSize, PositiveSize};
    use crate::scenario::{Pattern, RandomReads};

    fn generated(seed: u64, size: u64) -> PlannedFile {
        PlannedFile {
            path: format!("gen-{seed}").into(),
            size,
            seed: Some(seed),
            checksum: verify::expected_file_checksum(seed, size),
        }
    }

    /// The buffer a perfect read of `plan` produces.
    fn perfect(plan: &ReadPlan) -> Vec<u8> {
        let mut buffer = vec![0u8; plan.total_bytes() as usize];
        for segment in &plan.segments {
            let seed = plan.files[segment.file].seed.unwrap();
            let at = segment.buffer_offset as usize;
            // Fill from the file start so that unaligned chunk offsets get the right bytes.
            let mut whole = vec![0u8; (segment.offset + segment.len) as usize];
            fill(seed, 0, &mut whole);
            buffer[at..at + segment.len as usize]
                .copy_from_slice(&whole[segment.offset as usize..]);
        }
        buffer
    }

    #[test]
    fn perfect_reads_pass_and_a_flipped_byte_is_located_in_its_file() {
        let files = vec![generated(3, 100_003), generated(4, 65_536)];
        for pattern in [
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(4099))),
        ] {
            let plan = ReadPlan::new(files.clone(), &pattern);
            let mut buffer = perfect(&plan);
            let result = check(&plan, &buffer, Integrity::Exact);
            assert!(result.passed(), "{pattern:?}: {result:?}");
            buffer[100_003 + 777] ^= 0x10;
            let result = check(&plan, &buffer, Integrity::Exact);
            assert!(!result.passed());
            assert_eq!(result.bad_words, 1);
            let bad = result.first_bad.unwrap();
            assert_eq!(
                (bad.file, bad.file_offset, bad.buffer_offset),
                ("gen-4".into(), 777, 100_003 + 777)
            );
            let checksum_only = check(&plan, &buffer, Integrity::Checksum);
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
        let mut buffer = perfect(&plan);
        assert!(check(&plan, &buffer, Integrity::Exact).passed());
        buffer[8192 * 5 + 1] ^= 1;
        let result = check(&plan, &buffer, Integrity::Exact);
        assert_eq!(
            result.first_bad.unwrap().file_offset,
            plan.segments[5].offset + 1
        );
    }

    #[test]
    fn integrity_none_checks_nothing_and_says_so() {
        let plan = ReadPlan::new(vec![generated(1, 64)], &Pattern::Whole);
        let result = check(&plan, &[0u8; 64], Integrity::None);
        assert_eq!((result.checksum, result.expected_checksum), (None, None));
        assert_eq!(result.method, Integrity::None);
    }
}
