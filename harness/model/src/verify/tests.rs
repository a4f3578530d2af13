//! Tests of the CPU reference: known answers pin the specification (the GPU kernels must produce
//! the same numbers), the rest show each kind of corruption is caught where it is.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::*;
use crate::verify::fill;

const SIZES: [usize; 9] = [1, 7, 8, 9, 4095, 4096, 4097, 65_536 + 5, (1 << 20) + 3];

fn generated(seed: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    fill(seed, 0, &mut buf);
    buf
}

fn file_checksum_serial(buf: &[u8]) -> u64 {
    finish_checksum(checksum_range(buf, 0), buf.len() as u64)
}

/// Both exact compares, checked to agree, of a whole file.
fn compare(seed: u64, buf: &[u8]) -> Mismatch {
    let serial = exact_compare_serial(seed, 0, buf);
    assert_eq!(serial, exact_compare(seed, 0, buf), "parallel != serial");
    serial
}

#[test]
fn known_answers_from_an_independent_implementation() {
    // SplitMix64 seeded with 0: its published first outputs.
    assert_eq!(generated_word(0, 0), 0xE220_A839_7B1D_CDAF);
    assert_eq!(generated_word(0, 1), 0x6E78_9E6A_A1B9_65F4);
    assert_eq!(generated_word(0, 2), 0x06C4_5D18_8009_454F);
    // Computed by a separate Python transcription of the module documentation.
    for (seed, size, checksum) in [
        (1, 4097, 0x1157_CE35_D09A_0CE7),
        (0xDEAD_BEEF, 13, 0x0BED_199A_FE9B_82DE),
        (42, 0, 0x492B_8D60_66C0_9227),
        (7, 8, 0x8A95_DFD1_EA46_F113),
    ] {
        assert_eq!(
            expected_file_checksum(seed, size),
            checksum,
            "seed {seed} size {size}"
        );
        assert_eq!(
            file_checksum_serial(&generated(seed, size as usize)),
            checksum
        );
    }
    assert_eq!(
        checksum_range(&generated(5, 100)[16..], 16),
        0xD037_B041_DA65_5845
    );
    assert_eq!(
        file_checksum_serial(b"gds-gate checksum"),
        0x46BC_6A55_9794_B5C1
    );
}

#[test]
fn generated_data_of_every_size_verifies_clean() {
    for len in SIZES {
        let buf = generated(9, len);
        assert_eq!(compare(9, &buf), Mismatch::default(), "len {len}");
        let serial = checksum_range(&buf, 0);
        assert_eq!(serial, checksum_range_parallel(&buf, 0), "len {len}");
        assert_eq!(
            serial,
            expected_checksum_range(9, 0, len as u64),
            "len {len}"
        );
        assert_eq!(checksum_file_bytes(&buf), file_checksum_serial(&buf));
        assert_eq!(
            checksum_file_bytes(&buf),
            expected_file_checksum(9, len as u64)
        );
    }
}

#[test]
fn expected_range_sums_match_generated_bytes_at_any_aligned_offset() {
    let mut rng = StdRng::seed_from_u64(1);
    let file = generated(3, (2 << 20) + 5);
    for _ in 0..50 {
        let start = rng.random_range(0..file.len() / 8) * 8;
        let end = rng.random_range(start..=file.len());
        let range = &file[start..end];
        let want = expected_checksum_range(3, start as u64, range.len() as u64);
        assert_eq!(checksum_range(range, start as u64), want, "{start}..{end}");
        assert_eq!(checksum_range_parallel(range, start as u64), want);
        assert!(exact_compare(3, start as u64, range).is_clean());
    }
}

#[test]
fn range_sums_over_any_aligned_split_add_up_to_the_whole() {
    let mut rng = StdRng::seed_from_u64(2);
    let file = generated(4, (1 << 20) + 3);
    let whole = checksum_range(&file, 0);
    for _ in 0..20 {
        let mut cuts: Vec<usize> = (0..rng.random_range(1..10))
            .map(|_| rng.random_range(0..=file.len() / 8) * 8)
            .collect();
        cuts.extend([0, file.len()]);
        cuts.sort_unstable();
        // Summed in reverse to show the order does not matter.
        let sum = cuts
            .windows(2)
            .rev()
            .map(|w| checksum_range(&file[w[0]..w[1]], w[0] as u64))
            .fold(0u64, u64::wrapping_add);
        assert_eq!(sum, whole, "cuts {cuts:?}");
    }
}

#[test]
fn one_flipped_bit_anywhere_is_caught_at_its_exact_byte() {
    let mut rng = StdRng::seed_from_u64(3);
    for len in SIZES {
        let clean = generated(11, len);
        let clean_sum = checksum_file_bytes(&clean);
        for _ in 0..20 {
            let mut buf = clean.clone();
            let pos = rng.random_range(0..len);
            buf[pos] ^= 1 << rng.random_range(0..8);
            let m = compare(11, &buf);
            assert_eq!(m.bad_words, 1, "len {len} pos {pos}");
            assert_eq!(m.first_bad_offset, Some(pos as u64), "len {len}");
            assert_ne!(checksum_file_bytes(&buf), clean_sum, "len {len} pos {pos}");
            assert_ne!(file_checksum_serial(&buf), clean_sum);
        }
    }
}

#[test]
fn offsets_are_file_offsets_when_the_buffer_starts_inside_the_file() {
    let file = generated(12, 1 << 16);
    let mut part = file[4096..8192].to_vec();
    part[1001] ^= 0x80;
    let m = exact_compare(12, 4096, &part);
    assert_eq!(m.first_bad_offset, Some(4096 + 1001));
    assert_ne!(
        checksum_range(&part, 4096),
        expected_checksum_range(12, 4096, 4096)
    );
}

#[test]
fn two_swapped_4k_blocks_are_caught_and_change_the_checksum() {
    let clean = generated(13, 64 << 10);
    let mut buf = clean.clone();
    let (a, b) = (3 * 4096, 9 * 4096);
    let block_a = clean[a..a + 4096].to_vec();
    buf.copy_within(b..b + 4096, a);
    buf[b..b + 4096].copy_from_slice(&block_a);
    let m = compare(13, &buf);
    assert_eq!(m.bad_words, 2 * 4096 / 8);
    assert_eq!(m.first_bad_offset, Some(a as u64));
    // Same multiset of words, different positions: a plain sum would not notice.
    assert_ne!(checksum_file_bytes(&buf), checksum_file_bytes(&clean));
}

#[test]
fn a_zeroed_range_is_caught() {
    let clean = generated(14, 100_003);
    let mut buf = clean.clone();
    buf[50_001..60_000].fill(0);
    let m = compare(14, &buf);
    assert_eq!(m.first_bad_offset, Some(50_001));
    assert_eq!(m.bad_words, (60_000u64.div_ceil(8)) - 50_001 / 8);
    assert_ne!(checksum_file_bytes(&buf), checksum_file_bytes(&clean));
}

#[test]
fn truncation_changes_the_checksum_and_a_short_read_is_caught() {
    for len in SIZES.into_iter().filter(|l| *l > 8) {
        let clean = generated(15, len);
        let want = expected_file_checksum(15, len as u64);
        for cut in [1, 3, 8, 9] {
            let short = &clean[..len - cut];
            assert_ne!(checksum_file_bytes(short), want, "len {len} cut {cut}");
            // A short read into a zeroed buffer of the expected size.
            let mut padded = short.to_vec();
            padded.resize(len, 0);
            assert_ne!(checksum_file_bytes(&padded), want, "len {len} cut {cut}");
            let m = compare(15, &padded);
            assert!(!m.is_clean(), "len {len} cut {cut}");
            assert!(m.first_bad_offset.is_some_and(|o| o >= (len - cut) as u64));
        }
    }
}

#[test]
fn a_file_and_its_zero_padded_twin_differ_only_by_the_length_term() {
    let short = generated(16, 13);
    let mut twin = short.clone();
    twin.extend_from_slice(&[0, 0, 0]);
    assert_eq!(checksum_range(&short, 0), checksum_range(&twin, 0));
    assert_ne!(checksum_file_bytes(&short), checksum_file_bytes(&twin));
}

#[test]
fn a_bad_byte_in_a_partial_tail_word_is_found_and_absent_bytes_are_ignored() {
    let mut buf = generated(17, 4097 + 4);
    let m = compare(17, &buf[..4101]);
    assert!(m.is_clean());
    buf[4099] ^= 4;
    let m = compare(17, &buf);
    assert_eq!(
        m,
        Mismatch {
            bad_words: 1,
            first_bad_offset: Some(4099)
        }
    );
}

#[test]
fn mismatch_serialises_to_plain_json() {
    let m = Mismatch {
        bad_words: 2,
        first_bad_offset: Some(3_000_000_011),
    };
    let json = serde_json::to_string(&m).unwrap_or_default();
    assert_eq!(json, r#"{"bad_words":2,"first_bad_offset":3000000011}"#);
}

#[test]
#[should_panic(expected = "is not a multiple of 8")]
fn unaligned_offsets_are_refused() {
    checksum_range(&[0u8; 8], 4);
}

/// The specification transcribed literally, one word at a time, sharing no code with the `simd` loops.
mod reference {
    use super::super::{CHECKSUM_GAMMA, GAMMA, LEN_TAG};

    pub fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn bytes(seed: u64, offset: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        let mut i = offset / 8;
        while out.len() < len {
            out.extend_from_slice(
                &mix(seed.wrapping_add((i + 1).wrapping_mul(GAMMA))).to_le_bytes(),
            );
            i += 1;
        }
        out.truncate(len);
        out
    }

    pub fn range_sum(buf: &[u8], offset: u64) -> u64 {
        let mut sum = 0u64;
        for (j, chunk) in buf.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let key = (offset / 8 + j as u64 + 1).wrapping_mul(CHECKSUM_GAMMA);
            sum = sum.wrapping_add(mix(u64::from_le_bytes(word) ^ key));
        }
        sum
    }

    pub fn file_checksum(buf: &[u8]) -> u64 {
        range_sum(buf, 0).wrapping_add(mix(buf.len() as u64 ^ LEN_TAG))
    }
}

#[test]
fn every_instruction_set_variant_matches_the_literal_specification() {
    let isas = simd::Isa::available();
    eprintln!("variants tested: {isas:?}");
    let mut rng = StdRng::seed_from_u64(40);
    for len in [
        0usize,
        1,
        7,
        8,
        9,
        63,
        64,
        65,
        4095,
        4097,
        10_000 + 5,
        70_001,
    ] {
        let offset = 8 * rng.random_range(0..1000u64);
        let seed: u64 = rng.random();
        let want = reference::bytes(seed, offset, len);
        let want_sum = reference::range_sum(&want, offset);
        let mut noisy = want.clone();
        if len > 0 {
            let pos = rng.random_range(0..len);
            noisy[pos] ^= 0x40;
        }
        for &isa in &isas {
            let mut buf = vec![0xAAu8; len];
            simd::fill(isa, seed, offset / 8, &mut buf);
            assert_eq!(buf, want, "{isa:?} fill len {len}");
            let mut buf = vec![0x55u8; len];
            let sum = simd::fill_checksum(isa, seed, offset / 8, &mut buf);
            assert_eq!(
                (&buf, sum),
                (&want, want_sum),
                "{isa:?} fill_checksum len {len}"
            );
            assert_eq!(
                simd::checksum(isa, &want, offset / 8),
                want_sum,
                "{isa:?} len {len}"
            );
            let (words, tail) = (len as u64 / 8, len % 8);
            assert_eq!(
                simd::expected_sum(isa, seed, offset / 8, words, tail),
                want_sum
            );
            assert_eq!(simd::count_bad(isa, seed, offset / 8, &want), 0, "{isa:?}");
            assert_eq!(
                simd::count_bad(isa, seed, offset / 8, &noisy),
                u64::from(len > 0)
            );
        }
    }
    let file = reference::bytes(77, 0, 100_003);
    assert_eq!(checksum_file_bytes(&file), reference::file_checksum(&file));
    assert_eq!(
        expected_file_checksum(77, 100_003),
        reference::file_checksum(&file)
    );
}
