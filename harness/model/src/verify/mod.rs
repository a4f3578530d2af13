//! CPU reference of the test-data generator and of both verifications (exact compare and
//! position-keyed checksum): the specification the GPU kernels copy bit for bit.
//!
//! # Specification
//!
//! All arithmetic is on `u64` and wraps. A *word* is 8 bytes read little-endian. Word `i` covers
//! file bytes `8·i .. 8·i + 8`.
//!
//! ```text
//! GAMMA          = 0x9E37_79B9_7F4A_7C15
//! CHECKSUM_GAMMA = 0xD1B5_4A32_D192_ED03
//! LEN_TAG        = 0x6A09_E667_F3BC_C908
//!
//! mix64(z):                       (the SplitMix64 finaliser)
//!     z ^= z >> 30;  z *= 0xBF58_476D_1CE4_E5B9
//!     z ^= z >> 27;  z *= 0x94D0_49BB_1331_11EB
//!     return z ^ (z >> 31)
//! ```
//!
//! **Generated data.** Word `i` of the file with seed `s` is `mix64(s + (i + 1)·GAMMA)`. A file of
//! `len` bytes is the little-endian bytes of words `0 .. ceil(len / 8)` truncated to `len`: a tail
//! that is not a multiple of 8 holds the first (lowest) `len % 8` bytes of its word.
//!
//! **Position-keyed range checksum.** For the bytes of a file starting at offset `off`
//! (`off % 8 == 0`):
//!
//! ```text
//! range_sum = Σ_j mix64(w_j ^ key(off / 8 + j)),    key(i) = (i + 1)·CHECKSUM_GAMMA
//! ```
//!
//! where `w_j` is the j-th word of the range; a final partial word is zero-padded (its missing
//! high bytes are 0). Addition is commutative, so ranges split at 8-byte-aligned offsets can be
//! summed in any order (GPU blocks, threads, segments, CPU threads) and the sum over a file's
//! ranges equals the sum over the whole file. Because every word is keyed by its position, moving
//! or swapping data changes the sum even though the order of summation does not matter.
//!
//! **Whole-file checksum.** `range_sum(0 .. len) + mix64(len ^ LEN_TAG)`. The length term is what
//! tells a file from its zero-padded twin: zero padding of a partial final word reproduces the
//! same `w_j`, so the range sums are equal and only the length differs.
//!
//! **Exact compare.** Every word of a buffer read from file offset `off` is compared with the
//! generated word at its position; a partial final word compares only its present bytes. The
//! result counts bad words and names the *byte* offset of the first difference: the first bad
//! word's offset plus `trailing_zeros(read ^ expected) / 8`.
//!
//! The one-thread functions run the loops of `simd` (the CPU loops) (one source, compiled per instruction
//! set); the parallel ones split at 8-byte-aligned boundaries with rayon. All return identical
//! results, and the tests check them against a literal transcription of this specification.

mod generate;
pub(crate) mod simd;
#[cfg(test)]
mod tests;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use generate::{fill, fill_parallel, fill_parallel_with_checksum};
use simd::Isa;

/// Weyl-sequence increment of the generator (the golden-ratio constant of SplitMix64).
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
/// Increment of the checksum's position keys; distinct from [`GAMMA`] so that a word XORed with
/// its key is not simply the generator's input.
pub const CHECKSUM_GAMMA: u64 = 0xD1B5_4A32_D192_ED03;
/// Tag mixed with the file length in [`finish_checksum`] (first 64 bits of SHA-512's IV).
pub const LEN_TAG: u64 = 0x6A09_E667_F3BC_C908;

/// Bytes per rayon task: large enough that scheduling costs nothing, small enough that a few
/// MiB of buffer keeps every core busy. A multiple of 8 so every task starts on a word.
const PAR_CHUNK: usize = 1 << 20;
const PAR_CHUNK_WORDS: u64 = (PAR_CHUNK / 8) as u64;

/// The SplitMix64 finaliser.
#[inline(always)]
pub const fn mix64(mut z: u64) -> u64 {
    z ^= z >> 30;
    z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 27;
    z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Word `index` of the generated file with `seed`.
#[inline(always)]
pub const fn generated_word(seed: u64, index: u64) -> u64 {
    mix64(seed.wrapping_add(index.wrapping_add(1).wrapping_mul(GAMMA)))
}

/// Position key of word `index` in the checksum.
#[inline(always)]
pub const fn checksum_key(index: u64) -> u64 {
    index.wrapping_add(1).wrapping_mul(CHECKSUM_GAMMA)
}

/// Adds the length term to a sum over all of a file's ranges, giving the whole-file checksum.
#[inline]
pub const fn finish_checksum(range_sum: u64, file_len: u64) -> u64 {
    range_sum.wrapping_add(mix64(file_len ^ LEN_TAG))
}

/// Mask keeping the low `bytes` bytes of a word (`bytes` in 1..=7).
#[inline(always)]
pub(crate) const fn low_bytes_mask(bytes: usize) -> u64 {
    (1u64 << (8 * bytes)) - 1
}

#[track_caller]
fn assert_word_aligned(file_offset: u64) {
    assert!(
        file_offset.is_multiple_of(8),
        "file offset {file_offset} is not a multiple of 8: checksums and compares start on a word"
    );
}

/// Position-keyed sum of `buf`, the bytes of a file at `file_offset` (one thread).
///
/// # Panics
/// If `file_offset` is not a multiple of 8.
pub fn checksum_range(buf: &[u8], file_offset: u64) -> u64 {
    assert_word_aligned(file_offset);
    simd::checksum(Isa::detected(), buf, file_offset / 8)
}

/// [`checksum_range`] on all rayon threads; identical result.
///
/// # Panics
/// If `file_offset` is not a multiple of 8.
pub fn checksum_range_parallel(buf: &[u8], file_offset: u64) -> u64 {
    assert_word_aligned(file_offset);
    let isa = Isa::detected();
    buf.par_chunks(PAR_CHUNK)
        .enumerate()
        .map(|(i, chunk)| simd::checksum(isa, chunk, file_offset / 8 + i as u64 * PAR_CHUNK_WORDS))
        .reduce(|| 0, u64::wrapping_add)
}

/// Whole-file checksum of a complete file held in memory.
pub fn checksum_file_bytes(file: &[u8]) -> u64 {
    finish_checksum(checksum_range_parallel(file, 0), file.len() as u64)
}

/// Range sum that `len` generated bytes at `file_offset` of the file with `seed` must have,
/// computed from the generator without a buffer (on all rayon threads).
///
/// # Panics
/// If `file_offset` is not a multiple of 8.
pub fn expected_checksum_range(seed: u64, file_offset: u64, len: u64) -> u64 {
    assert_word_aligned(file_offset);
    let isa = Isa::detected();
    let first = file_offset / 8;
    let words = len / 8;
    let tail = (len % 8) as usize;
    let tasks = words.div_ceil(PAR_CHUNK_WORDS).max(1);
    (0..tasks)
        .into_par_iter()
        .map(|t| {
            let start = t * PAR_CHUNK_WORDS;
            let count = PAR_CHUNK_WORDS.min(words - start);
            // Only the last task owns the partial word at the end of the range.
            let tail = if t == tasks - 1 { tail } else { 0 };
            simd::expected_sum(isa, seed, first + start, count, tail)
        })
        .reduce(|| 0, u64::wrapping_add)
}

/// Whole-file checksum of the generated file with `seed` and `size` bytes.
pub fn expected_file_checksum(seed: u64, size: u64) -> u64 {
    finish_checksum(expected_checksum_range(seed, 0, size), size)
}

/// Outcome of an exact compare against the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Mismatch {
    /// Words (8-byte, file-aligned) with at least one wrong byte; a partial final word counts
    /// when one of its present bytes is wrong.
    pub bad_words: u64,
    /// File offset of the first wrong byte, `None` when every byte matches.
    pub first_bad_offset: Option<u64>,
}

impl Mismatch {
    /// True when every compared byte matched.
    pub fn is_clean(&self) -> bool {
        self.bad_words == 0
    }

    /// Combines the results of two disjoint ranges of the same file.
    pub fn merge(self, other: Mismatch) -> Mismatch {
        let first_bad_offset = match (self.first_bad_offset, other.first_bad_offset) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Mismatch {
            bad_words: self.bad_words + other.bad_words,
            first_bad_offset,
        }
    }
}

/// Compares `buf`, the bytes of the file with `seed` at `file_offset`, with the generator
/// (one thread).
///
/// # Panics
/// If `file_offset` is not a multiple of 8.
pub fn exact_compare_serial(seed: u64, file_offset: u64, buf: &[u8]) -> Mismatch {
    assert_word_aligned(file_offset);
    compare_chunk(Isa::detected(), seed, file_offset, buf)
}

fn compare_chunk(isa: Isa, seed: u64, file_offset: u64, buf: &[u8]) -> Mismatch {
    let bad_words = simd::count_bad(isa, seed, file_offset / 8, buf);
    if bad_words == 0 {
        return Mismatch::default();
    }
    // Locating is a second pass, only when something is wrong; it stops at the first bad word.
    let first_bad_offset =
        simd::first_bad_byte(seed, file_offset / 8, buf).map(|index| file_offset + index as u64);
    Mismatch {
        bad_words,
        first_bad_offset,
    }
}

/// [`exact_compare_serial`] on all rayon threads; identical result.
///
/// # Panics
/// If `file_offset` is not a multiple of 8.
pub fn exact_compare(seed: u64, file_offset: u64, buf: &[u8]) -> Mismatch {
    assert_word_aligned(file_offset);
    let isa = Isa::detected();
    buf.par_chunks(PAR_CHUNK)
        .enumerate()
        .map(|(i, chunk)| compare_chunk(isa, seed, file_offset + (i * PAR_CHUNK) as u64, chunk))
        .reduce(Mismatch::default, Mismatch::merge)
}
