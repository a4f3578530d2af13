use std::num::NonZeroU32;

use super::*;
use crate::integrity::{Streamed, check, expected_checksum};
use crate::plan::test_support::{contents, generated, perfect};
use crate::scenario::size::{ByteSize, PositiveSize};
use crate::scenario::{Integrity, Pattern, RandomReads};

fn patterns() -> Vec<Pattern> {
    vec![
        Pattern::Whole,
        Pattern::Chunks(PositiveSize(ByteSize(65_537))),
        Pattern::Random(RandomReads {
            size: PositiveSize(ByteSize(12_288)),
            count: NonZeroU32::new(50).unwrap(),
            seed: 3,
            align: PositiveSize(ByteSize(4096)),
        }),
    ]
}

/// Two files of odd sizes: the second starts off the page grid of the buffer.
fn plans() -> Vec<ReadPlan> {
    let files = vec![generated(11, 1_000_003), generated(12, 700_001)];
    patterns()
        .iter()
        .map(|pattern| ReadPlan::new(files.clone(), pattern))
        .collect()
}

/// Verifies `buffer` (a whole pass of `plan`) window by window, as a streaming reader does.
fn streamed(plan: &ReadPlan, buffer: &[u8], size: u64) -> crate::integrity::IntegrityResult {
    let mut composed = Streamed::default();
    for window in plan.windows(size) {
        let bytes = &buffer[window.start as usize..][..window.plan.total_bytes() as usize];
        let Ok(result) = check(
            &window.plan,
            &mut crate::integrity::HostBuffer(bytes),
            Integrity::Exact,
            0,
        );
        composed.add(window.start, result);
    }
    composed.finish(plan, Integrity::Exact, expected_checksum(plan))
}

#[test]
fn windows_tile_the_pass_and_cut_on_pages() {
    for plan in plans() {
        for size in [4096, 65_536, 300 * 4096, 1 << 30] {
            let windows = plan.windows(size);
            let mut next = 0;
            for window in &windows {
                assert_eq!(window.start, next, "windows are contiguous");
                let len = window.plan.total_bytes();
                assert!(len > 0 && len <= size, "{len} > {size}");
                next += len;
                // Each window's first byte sits on a page of its file or where a read starts.
                let (file, offset) = window.file_position(0).unwrap();
                let starts_a_read = plan
                    .segments
                    .iter()
                    .any(|s| s.file == file && s.offset == offset);
                assert!(offset % ALIGN == 0 || starts_a_read, "cut at {offset}");
            }
            assert_eq!(next, plan.total_bytes());
            let reads: u64 = windows
                .iter()
                .flat_map(|w| &w.plan.segments)
                .map(|s| s.len)
                .sum();
            assert_eq!(reads, plan.total_bytes());
        }
    }
}

#[test]
fn a_window_maps_its_bytes_back_to_the_file() {
    let plan = &plans()[0];
    let windows = plan.windows(65_536);
    // Byte 10 of the second file, in the first window that holds part of it.
    let second = windows
        .iter()
        .find(|w| w.plan.segments.iter().any(|s| s.file == 1))
        .unwrap();
    let first_of_file_1 = second
        .plan
        .segments
        .iter()
        .find(|s| s.file == 1)
        .unwrap()
        .buffer_offset;
    assert_eq!(second.file_position(first_of_file_1 + 10), Some((1, 10)));
    assert_eq!(second.file_position(second.plan.total_bytes()), None);
}

#[test]
fn windows_compose_into_the_whole_pass_checksum() {
    for plan in plans() {
        let buffer = perfect(&plan, &contents(&plan.files));
        let expected = expected_checksum(&plan);
        let Ok(whole) = check(
            &plan,
            &mut crate::integrity::HostBuffer(&buffer),
            Integrity::Exact,
            expected,
        );
        assert!(whole.passed());
        for size in [4096, 65_536, 300 * 4096] {
            let result = streamed(&plan, &buffer, size);
            assert_eq!(result.checksum, whole.checksum, "window {size}");
            assert!(result.passed(), "window {size}");
        }
    }
}

#[test]
fn a_flipped_byte_is_found_at_its_file_offset_through_windows() {
    for plan in plans() {
        let mut buffer = perfect(&plan, &contents(&plan.files));
        let at = plan.total_bytes() as usize * 2 / 3 + 5;
        buffer[at] ^= 0x40;
        let Ok(whole) = check(
            &plan,
            &mut crate::integrity::HostBuffer(&buffer),
            Integrity::Exact,
            expected_checksum(&plan),
        );
        let result = streamed(&plan, &buffer, 65_536);
        assert!(!result.passed());
        assert_eq!(result.bad_words, 1);
        assert_eq!(result.first_bad, whole.first_bad);
        assert_eq!(result.first_bad.unwrap().buffer_offset, at as u64);
        assert_eq!(result.checksum, whole.checksum);
    }
}

#[test]
fn the_mode_resolves_to_a_window_only_where_it_bounds_memory() {
    const GIB: u64 = 1 << 30;
    assert_eq!(WindowMode::Whole.resolve(64 * GIB, Some(GIB)), None);
    assert_eq!(
        WindowMode::Size(GIB).resolve(32 * GIB, None),
        Some(GIB),
        "an explicit window needs no memory figure"
    );
    assert_eq!(WindowMode::Size(GIB).resolve(GIB, None), None, "one window");
    assert_eq!(WindowMode::Auto.resolve(4 * GIB, Some(24 * GIB)), None);
    assert_eq!(
        WindowMode::Auto.resolve(32 * GIB, Some(24 * GIB)),
        Some(GIB)
    );
    assert_eq!(
        WindowMode::Auto.resolve(GIB, Some(GIB)),
        Some(GIB / 8),
        "an eighth of a small memory"
    );
    assert_eq!(WindowMode::Auto.resolve(32 * GIB, None), None);
}

#[test]
fn the_key_reads_whole_auto_and_sizes_and_explains_the_rest() {
    let parse = |text: &str| yaml_serde::from_str::<WindowMode>(text);
    assert_eq!(parse("whole").unwrap(), WindowMode::Whole);
    assert_eq!(parse("auto").unwrap(), WindowMode::Auto);
    assert_eq!(parse("1GiB").unwrap(), WindowMode::Size(1 << 30));
    assert_eq!(parse("1048576").unwrap(), WindowMode::Size(1 << 20));
    for (bad, says) in [
        ("1GB", "did you mean `GiB`"),
        ("66KiB", "multiple of 4KiB"),
        ("4KiB", "at least 64KiB"),
        ("sometimes", "expected `whole`, `auto` or a size"),
    ] {
        let error = parse(bad).unwrap_err().to_string();
        assert!(error.contains(says), "{bad}: {error}");
    }
    // What the workers get: strings for the modes, bytes for a size, and back.
    for mode in [
        WindowMode::Whole,
        WindowMode::Auto,
        WindowMode::Size(1 << 30),
    ] {
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(serde_json::from_str::<WindowMode>(&json).unwrap(), mode);
    }
    assert_eq!(
        serde_json::to_string(&WindowMode::Size(1 << 30)).unwrap(),
        "1073741824"
    );
}

/// A GPU's shard of a plan (`gpus:`) streams like any plan: its windows compose into the
/// shard's checksum, so each worker of a multi-GPU trial can read its shard through a window.
#[test]
fn a_shard_streams_into_its_own_checksum() {
    for plan in plans() {
        let contents = contents(&plan.files);
        for shard in crate::shard::split(&plan, 3, 4096).unwrap() {
            let buffer = perfect(&shard, &contents);
            let result = streamed(&shard, &buffer, 65_536);
            assert!(result.passed(), "{result:?}");
        }
    }
}
