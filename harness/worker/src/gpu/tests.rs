//! GPU tests: they need an NVIDIA GPU, so they are `#[ignore]`d with that reason and run with
//! `--ignored` on a GPU host (the gate's CI does so on its self-hosted runners).

use rand::{RngExt, SeedableRng};

use super::*;
use gds_model::verify;
use gds_model::verify::fill;

fn upload(gpu: &Gpu, bytes: &[u8], at: usize) -> DeviceBuffer {
    let buffer = gpu.alloc(bytes.len() + at).unwrap();
    let mut pinned = gpu.pinned(bytes.len().max(1)).unwrap();
    pinned.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
    copy_to_device(&pinned, bytes.len(), &buffer, at as u64).unwrap();
    buffer
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gpu_and_cpu_verification_agree_bit_for_bit() {
    let mut gpu = Gpu::open(0).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let sizes = [
        1usize,
        7,
        8,
        9,
        15,
        16,
        17,
        4095,
        4096,
        4097,
        (1 << 20) + 3,
        (64 << 20) + 5,
    ];
    for &size in &sizes {
        for at in [0usize, 8, 3] {
            let seed: u64 = rng.random();
            let file_offset = 8 * rng.random_range(0..1u64 << 30);
            let mut bytes = vec![0u8; size];
            fill(seed, file_offset, &mut bytes);
            let buffer = upload(&gpu, &bytes, at);
            let cpu_sum = verify::checksum_range(&bytes, file_offset);
            let gpu_sum = gpu
                .checksum(&buffer, at as u64, size as u64, file_offset / 8)
                .unwrap();
            assert_eq!(
                gpu_sum, cpu_sum,
                "checksum of {size} bytes at buffer offset {at}"
            );
            let (bad, first) = gpu
                .exact_compare(&buffer, at as u64, size as u64, seed, file_offset / 8)
                .unwrap();
            assert_eq!((bad, first), (0, None), "{size} bytes at {at}");
            // The same bytes under another seed: every word is wrong, the first at byte 0.
            let (bad, first) = gpu
                .exact_compare(&buffer, at as u64, size as u64, seed ^ 1, file_offset / 8)
                .unwrap();
            let cpu = verify::exact_compare(seed ^ 1, file_offset, &bytes);
            assert_eq!(
                (bad, first.map(|f| file_offset + f)),
                (cpu.bad_words, cpu.first_bad_offset),
                "{size} bytes at {at}, wrong seed"
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_corruption_planted_in_device_memory_is_reported_at_its_exact_offset() {
    let mut gpu = Gpu::open(0).unwrap();
    let size = 512usize << 20;
    let mut bytes = vec![0u8; size];
    fill(11, 0, &mut bytes);
    let buffer = upload(&gpu, &bytes, 0);
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for _ in 0..5 {
        let at = rng.random_range(0..size);
        let mut byte = gpu.pinned(1).unwrap();
        byte.as_mut_slice()[0] = bytes[at] ^ 0x20;
        copy_to_device(&byte, 1, &buffer, at as u64).unwrap();
        let (bad, first) = gpu.exact_compare(&buffer, 0, size as u64, 11, 0).unwrap();
        assert_eq!((bad, first), (1, Some(at as u64)));
        let sum = gpu.checksum(&buffer, 0, size as u64, 0).unwrap();
        assert_ne!(sum, verify::checksum_range(&bytes, 0));
        byte.as_mut_slice()[0] = bytes[at];
        copy_to_device(&byte, 1, &buffer, at as u64).unwrap();
    }
    assert_eq!(
        gpu.exact_compare(&buffer, 0, size as u64, 11, 0).unwrap(),
        (0, None)
    );
}

/// The writers' source: the fill kernel writes exactly the generator's bytes (the CPU reference)
/// at aligned and unaligned buffer offsets, partial last word included, and nothing around them.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_fill_kernel_writes_the_generators_bytes_and_nothing_else() {
    let mut gpu = Gpu::open(0).unwrap();
    for &size in &[1usize, 7, 8, 9, 4097, (1 << 20) + 3, (16 << 20) + 5] {
        for at in [0usize, 8, 3] {
            let seed = 0x5EED ^ size as u64;
            let buffer = gpu.alloc(size + at + 16).unwrap();
            gpu.poison(&buffer).unwrap();
            gpu.fill(&buffer, at as u64, size as u64, seed).unwrap();
            let mut host = vec![0u8; size + at + 16];
            // SAFETY: the whole live allocation, into a host buffer of its size.
            unsafe { result::memcpy_dtoh_sync(&mut host, buffer.ptr) }.unwrap();
            let mut expected = vec![0u8; size];
            fill(seed, 0, &mut expected);
            assert!(host[at..at + size] == expected, "{size} bytes at {at}");
            assert!(host[..at].iter().all(|&b| b == 0xA5), "before {at}");
            assert!(host[at + size..].iter().all(|&b| b == 0xA5), "after {size}");
        }
    }
}
