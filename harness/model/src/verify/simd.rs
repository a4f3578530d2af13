//! The CPU hot loops (fill, checksum, compare), compiled once per instruction set and picked at
//! run time.
//!
//! Each loop is one `#[inline(always)]` body instantiated three times on x86-64: baseline
//! (SSE2), AVX2 and AVX-512 (whose `vpmullq` does the 64-bit multiplies of `mix64` eight at a
//! time; without it the compiler emulates them). Integer arithmetic is exact, so every variant
//! returns identical results; the tests compare each available variant with the plain reference.
//!
//! The loops also prefetch 4 KiB ahead. Hardware prefetchers stop at page boundaries, and a loop
//! spending a few cycles per word cannot run far enough ahead on its own to hide the miss at the
//! start of each page: on the 2-vCPU development VM the checksum of a buffer much larger than the
//! caches ran several times slower without it.

use super::{CHECKSUM_GAMMA, GAMMA, checksum_key, low_bytes_mask, mix64};

const LINE: usize = 64;
/// Far enough ahead to cover a DRAM miss plus a page walk at these loops' speeds.
const PREFETCH_AHEAD: usize = 4096;

/// An instruction set the running CPU supports. Only [`Isa::detected`] and [`Isa::available`]
/// make one (the field is private), which is what makes the `unsafe` calls below sound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Isa(Kind);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Isa {
    /// The fastest variant this CPU runs (std caches the CPUID probe; this is an atomic load).
    #[inline]
    pub(crate) fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq") {
                return Isa(Kind::Avx512);
            }
            if is_x86_feature_detected!("avx2") {
                return Isa(Kind::Avx2);
            }
        }
        Isa(Kind::Baseline)
    }

    /// Every variant this CPU runs, for tests that check they agree.
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Isa> {
        let mut all = vec![Isa(Kind::Baseline)];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                all.push(Isa(Kind::Avx2));
            }
            if Isa::detected() == Isa(Kind::Avx512) {
                all.push(Isa(Kind::Avx512));
            }
        }
        all
    }
}

/// Defines `pub(crate) fn $name(isa, args) -> ret` dispatching to `$body` compiled for each ISA.
macro_rules! dispatch {
    ($name:ident => $body:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        pub(crate) fn $name(isa: Isa, $($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx512f,avx512dq,avx2")]
                unsafe fn avx512($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                match isa.0 {
                    // SAFETY: an `Isa` of this kind exists only when the CPU has the features.
                    Kind::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    Kind::Avx2 => return unsafe { avx2($($arg),*) },
                    Kind::Baseline => {}
                }
            }
            let _ = isa;
            $body($($arg),*)
        }
    };
}

dispatch!(fill => fill_body(seed: u64, first: u64, buf: &mut [u8]) -> ());
dispatch!(fill_checksum => fill_checksum_body(seed: u64, first: u64, buf: &mut [u8]) -> u64);
dispatch!(checksum => checksum_body(buf: &[u8], first: u64) -> u64);
dispatch!(count_bad => count_bad_body(seed: u64, first: u64, buf: &[u8]) -> u64);
dispatch!(expected_sum => expected_sum_body(seed: u64, first: u64, words: u64, tail: usize) -> u64);

/// Starts fetching the line `at` bytes into `buf`: a hint that never faults.
#[inline(always)]
fn prefetch(buf: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address; `wrapping_add` keeps the pointer
    // arithmetic defined when `at` is past the end of the buffer.
    unsafe {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(buf.as_ptr().wrapping_add(at).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    if at % 4096 == 0
        && let Some(byte) = buf.get(at)
    {
        // Without a stable prefetch intrinsic, an early load per page starts the page walk.
        // SAFETY: `byte` is a valid reference.
        let _ = unsafe { std::ptr::read_volatile(byte) };
    }
}

#[inline(always)]
fn le_word(bytes: &[u8]) -> u64 {
    // Callers pass 8-byte chunks, so this never falls back and compiles to one load.
    u64::from_le_bytes(bytes.try_into().unwrap_or_default())
}

#[inline(always)]
fn padded_word(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

#[inline(always)]
fn start_state(seed: u64, first: u64) -> u64 {
    seed.wrapping_add(first.wrapping_add(1).wrapping_mul(GAMMA))
}

#[inline(always)]
fn fill_body(seed: u64, first: u64, buf: &mut [u8]) {
    let mut state = start_state(seed, first);
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&mix64(state).to_le_bytes());
        state = state.wrapping_add(GAMMA);
    }
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&mix64(state).to_le_bytes()[..n]);
}

#[inline(always)]
fn fill_checksum_body(seed: u64, first: u64, buf: &mut [u8]) -> u64 {
    let mut state = start_state(seed, first);
    let mut key = checksum_key(first);
    let mut sum = 0u64;
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        let word = mix64(state);
        w.copy_from_slice(&word.to_le_bytes());
        sum = sum.wrapping_add(mix64(word ^ key));
        state = state.wrapping_add(GAMMA);
        key = key.wrapping_add(CHECKSUM_GAMMA);
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let n = tail.len();
        let word = mix64(state);
        tail.copy_from_slice(&word.to_le_bytes()[..n]);
        sum = sum.wrapping_add(mix64((word & low_bytes_mask(n)) ^ key));
    }
    sum
}

#[inline(always)]
fn checksum_body(buf: &[u8], first: u64) -> u64 {
    let mut key = checksum_key(first);
    let mut sum = 0u64;
    let mut lines = buf.chunks_exact(LINE);
    let mut ahead = PREFETCH_AHEAD;
    for line in &mut lines {
        prefetch(buf, ahead);
        ahead += LINE;
        for w in line.chunks_exact(8) {
            sum = sum.wrapping_add(mix64(le_word(w) ^ key));
            key = key.wrapping_add(CHECKSUM_GAMMA);
        }
    }
    let mut words = lines.remainder().chunks_exact(8);
    for w in &mut words {
        sum = sum.wrapping_add(mix64(le_word(w) ^ key));
        key = key.wrapping_add(CHECKSUM_GAMMA);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        sum = sum.wrapping_add(mix64(padded_word(tail) ^ key));
    }
    sum
}

/// Number of bad words of `buf` at word `first` (a partial final word compares only its
/// present bytes). Branch-free, so a clean buffer streams at full speed.
#[inline(always)]
fn count_bad_body(seed: u64, first: u64, buf: &[u8]) -> u64 {
    let mut state = start_state(seed, first);
    let mut bad = 0u64;
    let mut lines = buf.chunks_exact(LINE);
    let mut ahead = PREFETCH_AHEAD;
    for line in &mut lines {
        prefetch(buf, ahead);
        ahead += LINE;
        for w in line.chunks_exact(8) {
            bad += u64::from(le_word(w) != mix64(state));
            state = state.wrapping_add(GAMMA);
        }
    }
    let mut words = lines.remainder().chunks_exact(8);
    for w in &mut words {
        bad += u64::from(le_word(w) != mix64(state));
        state = state.wrapping_add(GAMMA);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let diff = (padded_word(tail) ^ mix64(state)) & low_bytes_mask(tail.len());
        bad += u64::from(diff != 0);
    }
    bad
}

#[inline(always)]
fn expected_sum_body(seed: u64, first: u64, words: u64, tail: usize) -> u64 {
    let mut state = start_state(seed, first);
    let mut key = checksum_key(first);
    let mut sum = 0u64;
    for _ in 0..words {
        sum = sum.wrapping_add(mix64(mix64(state) ^ key));
        state = state.wrapping_add(GAMMA);
        key = key.wrapping_add(CHECKSUM_GAMMA);
    }
    if tail > 0 {
        let word = mix64(state) & low_bytes_mask(tail);
        sum = sum.wrapping_add(mix64(word ^ key));
    }
    sum
}

/// Index in `buf` of the first byte that differs from the generator, if any (the slow path
/// behind a non-zero [`count_bad`], so plain code is fine).
pub(crate) fn first_bad_byte(seed: u64, first: u64, buf: &[u8]) -> Option<usize> {
    let mut state = start_state(seed, first);
    for (j, w) in buf.chunks(8).enumerate() {
        let diff = (padded_word(w) ^ mix64(state))
            & if w.len() == 8 {
                u64::MAX
            } else {
                low_bytes_mask(w.len())
            };
        if diff != 0 {
            return Some(8 * j + (diff.trailing_zeros() / 8) as usize);
        }
        state = state.wrapping_add(GAMMA);
    }
    None
}
