//! One trial's read plan split across GPUs (`gpus:` in a suite): one plan per GPU, each read by
//! its own worker at the same time and verified on its own GPU.
//!
//! - **At least as many files as GPUs:** whole files, round-robin (file `i` goes to GPU
//!   `i mod n`). Each shard still covers its files exactly, so the whole-file checksums apply,
//!   also to a file of the user's.
//! - **Fewer files than GPUs:** the plan's bytes, in buffer order and split into the reader's
//!   `task_size` tasks, are cut into `n` contiguous ranges of nearly equal size, at task
//!   boundaries whose file offset is a multiple of 8 (where a checksum and an exact compare can
//!   start). A read cut in two becomes one read in each shard; the others stay as they were. Such
//!   shards hold part of a file, so they are verified with range checksums against the generator;
//!   a file of the user's, whose checksum only covers it whole, cannot be split and is refused.
//!
//! Every shard's buffer offsets start at 0; the file offsets are kept, so a wrong byte is still
//! reported at its offset in its file. Every byte the plan reads is read by exactly one shard.

use std::path::PathBuf;

use crate::plan::{ReadPlan, Segment};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error(
        "the reads cannot be split across {gpus} GPUs: with task size {task_size} bytes there are only {cuts} place(s) to cut them (task boundaries at 8-byte-aligned file offsets), {} needed",
        gpus - 1
    )]
    TooFewCuts {
        gpus: usize,
        cuts: usize,
        task_size: u64,
    },
    #[error(
        "your own file `{}` cannot be split across {gpus} GPUs: its checksum covers the whole file, so a part of it read on one GPU cannot be verified",
        path.display()
    )]
    UserFileSplit { path: PathBuf, gpus: usize },
}

impl ShardError {
    /// What to change in the suite.
    pub fn next_step(&self) -> &'static str {
        match self {
            ShardError::TooFewCuts { .. } => {
                "give each GPU something to read: larger or more files (`files: { count: N }` with N at least the number of GPUs), a smaller `task_size`, or fewer GPUs"
            }
            ShardError::UserFileSplit { .. } => {
                "read your file with one GPU (`gpu: N`), or use generated files with at least as many files as GPUs"
            }
        }
    }
}

/// Splits `plan` into one plan per GPU (see the module documentation). `gpus == 1` gives the plan
/// itself; `gpus == 0` gives no plan.
pub fn split(plan: &ReadPlan, gpus: usize, task_size: u64) -> Result<Vec<ReadPlan>, ShardError> {
    match gpus {
        0 => Ok(Vec::new()),
        1 => Ok(vec![plan.clone()]),
        _ if plan.files.len() >= gpus => Ok(by_files(plan, gpus)),
        _ => by_ranges(plan, gpus, task_size.max(1)),
    }
}

/// Whole files, round-robin.
fn by_files(plan: &ReadPlan, gpus: usize) -> Vec<ReadPlan> {
    (0..gpus)
        .map(|shard| {
            let mine: Vec<usize> = (shard..plan.files.len()).step_by(gpus).collect();
            let mut segments = Vec::new();
            let mut buffer_offset = 0;
            // The plan's segments are in buffer order; each file's stay in their order.
            for segment in &plan.segments {
                if let Some(index) = mine.iter().position(|&file| file == segment.file) {
                    segments.push(Segment {
                        file: index,
                        buffer_offset,
                        ..*segment
                    });
                    buffer_offset += segment.len;
                }
            }
            ReadPlan {
                files: mine.iter().map(|&file| plan.files[file].clone()).collect(),
                segments,
                covers_files: plan.covers_files,
            }
        })
        .collect()
}

/// Contiguous ranges of the plan's tasks.
fn by_ranges(plan: &ReadPlan, gpus: usize, task_size: u64) -> Result<Vec<ReadPlan>, ShardError> {
    // Only the generator can verify part of a file: a file of the user's goes whole or not at all.
    if let Some(user) = plan.files.iter().find(|file| file.seed.is_none()) {
        return Err(ShardError::UserFileSplit {
            path: user.path.clone(),
            gpus,
        });
    }
    // The tasks, with the segment each comes from, so that a shard can rejoin them into reads.
    let mut pieces: Vec<(usize, Segment)> = Vec::new();
    for (index, segment) in plan.segments.iter().enumerate() {
        let mut done = 0;
        while done < segment.len {
            let len = task_size.min(segment.len - done);
            pieces.push((
                index,
                Segment {
                    offset: segment.offset + done,
                    len,
                    buffer_offset: segment.buffer_offset + done,
                    ..*segment
                },
            ));
            done += len;
        }
    }
    let candidates: Vec<u64> = pieces
        .iter()
        .skip(1)
        .filter(|(_, piece)| piece.offset % 8 == 0)
        .map(|(_, piece)| piece.buffer_offset)
        .collect();
    let cuts =
        choose_cuts(&candidates, plan.total_bytes(), gpus).ok_or(ShardError::TooFewCuts {
            gpus,
            cuts: candidates.len(),
            task_size,
        })?;

    let mut shards = Vec::with_capacity(gpus);
    let mut pieces = pieces.into_iter().peekable();
    for end in cuts.into_iter().chain([u64::MAX]) {
        let mut files: Vec<usize> = Vec::new();
        let mut segments: Vec<Segment> = Vec::new();
        let mut last_segment = None;
        let mut start = None;
        while let Some((index, piece)) = pieces.next_if(|(_, piece)| piece.buffer_offset < end) {
            let start = *start.get_or_insert(piece.buffer_offset);
            let file = match files.iter().position(|&file| file == piece.file) {
                Some(file) => file,
                None => {
                    files.push(piece.file);
                    files.len() - 1
                }
            };
            match segments.last_mut() {
                // Tasks of one read stay one read.
                Some(last) if last_segment == Some(index) => last.len += piece.len,
                _ => segments.push(Segment {
                    file,
                    buffer_offset: piece.buffer_offset - start,
                    ..piece
                }),
            }
            last_segment = Some(index);
        }
        let covers_files = plan.covers_files
            && files.iter().enumerate().all(|(shard_file, &file)| {
                let read: u64 = segments
                    .iter()
                    .filter(|segment| segment.file == shard_file)
                    .map(|segment| segment.len)
                    .sum();
                read == plan.files[file].size
            });
        shards.push(ReadPlan {
            files: files.iter().map(|&file| plan.files[file].clone()).collect(),
            segments,
            covers_files,
        });
    }
    Ok(shards)
}

/// `gpus - 1` strictly increasing cuts from `candidates` (sorted buffer offsets), each the one
/// nearest to its share `k · total / gpus` that still leaves room for the cuts after it.
fn choose_cuts(candidates: &[u64], total: u64, gpus: usize) -> Option<Vec<u64>> {
    let needed = gpus - 1;
    if candidates.len() < needed {
        return None;
    }
    let mut cuts = Vec::with_capacity(needed);
    let mut lowest = 0;
    for k in 1..gpus {
        let target = (u128::from(total) * k as u128 / gpus as u128) as u64;
        let highest = candidates.len() - (needed - k) - 1;
        let above = candidates
            .partition_point(|&c| c < target)
            .clamp(lowest, highest);
        let chosen = if above > lowest
            && target.abs_diff(candidates[above - 1]) <= candidates[above].abs_diff(target)
        {
            above - 1
        } else {
            above
        };
        cuts.push(candidates[chosen]);
        lowest = chosen + 1;
    }
    Some(cuts)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::num::NonZeroU32;

    use super::*;
    use crate::integrity::{self, HostBuffer};
    use crate::plan::PlannedFile;
    use crate::plan::test_support::{contents, generated, perfect};
    use crate::scenario::size::{ByteSize, PositiveSize};
    use crate::scenario::{Integrity, Pattern, RandomReads};
    use crate::verify;

    fn patterns() -> Vec<Pattern> {
        vec![
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(4099))),
            Pattern::Chunks(PositiveSize(ByteSize(64 << 10))),
            Pattern::Random(RandomReads {
                size: PositiveSize(ByteSize(8192)),
                count: NonZeroU32::new(37).unwrap(),
                seed: 3,
                align: PositiveSize(ByteSize(4096)),
            }),
        ]
    }

    fn file_sets() -> Vec<Vec<PlannedFile>> {
        vec![
            vec![generated(1, 100_003)],
            vec![generated(2, 300_007), generated(3, 65_536)],
            vec![
                generated(4, 100_003),
                generated(5, 65_536),
                generated(6, 8_193),
            ],
        ]
    }

    /// The plan as (seed, file offset, length) runs in buffer order, runs that continue one
    /// another joined: two plans with equal runs put the same bytes in the same order.
    fn runs(plan: &ReadPlan) -> Vec<(u64, u64, u64)> {
        let mut runs: Vec<(u64, u64, u64)> = Vec::new();
        let mut expected_at = 0;
        for segment in &plan.segments {
            assert_eq!(segment.buffer_offset, expected_at, "buffer not contiguous");
            expected_at += segment.len;
            let seed = plan.files[segment.file].seed.unwrap();
            match runs.last_mut() {
                Some(last) if last.0 == seed && last.1 + last.2 == segment.offset => {
                    last.2 += segment.len
                }
                _ => runs.push((seed, segment.offset, segment.len)),
            }
        }
        runs
    }

    /// How often each byte of each file is read, as the changes of that count along the file:
    /// equal maps mean the same multiset of bytes.
    fn coverage<'a>(runs: impl Iterator<Item = &'a (u64, u64, u64)>) -> BTreeMap<(u64, u64), i64> {
        let mut changes: BTreeMap<(u64, u64), i64> = BTreeMap::new();
        for &(seed, offset, len) in runs {
            *changes.entry((seed, offset)).or_default() += 1;
            *changes.entry((seed, offset + len)).or_default() -= 1;
        }
        changes.retain(|_, change| *change != 0);
        changes
    }

    fn host_check(plan: &ReadPlan, buffer: &[u8]) -> integrity::IntegrityResult {
        let expected = integrity::expected_checksum(plan);
        let Ok(result) =
            integrity::check(plan, &mut HostBuffer(buffer), Integrity::Exact, expected);
        result
    }

    /// Every byte of the plan in exactly one shard, each shard's buffer from 0, each shard
    /// verifiable on its own, for odd sizes, several files, chunked and random reads, odd task
    /// sizes and 1 to 5 GPUs.
    #[test]
    fn every_byte_is_read_by_exactly_one_shard() {
        let mut split_by_range = 0;
        for files in file_sets() {
            let contents = contents(&files);
            for pattern in patterns() {
                let plan = ReadPlan::new(files.clone(), &pattern);
                let original = runs(&plan);
                for task_size in [4096, 4099, 1 << 20] {
                    for gpus in 1..=5 {
                        let case = format!(
                            "{} files, {pattern:?}, task {task_size}, {gpus} GPUs",
                            files.len()
                        );
                        let shards = match split(&plan, gpus, task_size) {
                            Ok(shards) => shards,
                            Err(ShardError::TooFewCuts { cuts, .. }) => {
                                assert!(cuts < gpus - 1, "{case}");
                                continue;
                            }
                            Err(error) => panic!("{case}: {error}"),
                        };
                        assert_eq!(shards.len(), gpus, "{case}");
                        let shard_runs: Vec<Vec<(u64, u64, u64)>> =
                            shards.iter().map(runs).collect();
                        assert_eq!(
                            coverage(shard_runs.iter().flatten()),
                            coverage(original.iter()),
                            "{case}"
                        );
                        let total: u64 = shards.iter().map(ReadPlan::total_bytes).sum();
                        assert_eq!(total, plan.total_bytes(), "{case}");
                        if gpus > 1 && files.len() < gpus {
                            split_by_range += 1;
                            // Contiguous ranges: the shards in order are the plan.
                            assert_eq!(runs(&join(&shards)), original, "{case}");
                            let largest = plan
                                .segments
                                .iter()
                                .map(|s| s.len.min(task_size))
                                .max()
                                .unwrap();
                            let share = plan.total_bytes() / gpus as u64;
                            if share > 16 * largest {
                                for shard in &shards {
                                    assert!(
                                        shard.total_bytes().abs_diff(share) <= 8 * largest,
                                        "{case}: unbalanced {} vs {share}",
                                        shard.total_bytes()
                                    );
                                }
                            }
                        } else if gpus > 1 {
                            // Whole files, round-robin, covering them as before.
                            for (k, shard) in shards.iter().enumerate() {
                                let seeds: Vec<u64> =
                                    shard.files.iter().map(|f| f.seed.unwrap()).collect();
                                let want: Vec<u64> = files
                                    .iter()
                                    .skip(k)
                                    .step_by(gpus)
                                    .map(|f| f.seed.unwrap())
                                    .collect();
                                assert_eq!(seeds, want, "{case}");
                                assert_eq!(shard.covers_files, plan.covers_files, "{case}");
                            }
                        }
                        for shard in &shards {
                            assert!(shard.total_bytes() > 0, "{case}: an empty shard");
                            let result = host_check(shard, &perfect(shard, &contents));
                            assert!(result.passed(), "{case}: {result:?}");
                        }
                    }
                }
            }
        }
        assert!(
            split_by_range > 50,
            "only {split_by_range} range splits tested"
        );
    }

    /// The shards one after the other, as one plan (for comparing with the original).
    fn join(shards: &[ReadPlan]) -> ReadPlan {
        let mut joined = ReadPlan {
            files: Vec::new(),
            segments: Vec::new(),
            covers_files: false,
        };
        let mut at = 0;
        for shard in shards {
            for segment in &shard.segments {
                joined.files.push(shard.files[segment.file].clone());
                joined.segments.push(Segment {
                    file: joined.files.len() - 1,
                    buffer_offset: at,
                    ..*segment
                });
                at += segment.len;
            }
        }
        joined
    }

    /// A wrong byte in a shard of part of a file is reported at its offset in the file, and the
    /// shard is checked with range checksums from the generator.
    #[test]
    fn a_wrong_byte_in_a_shard_is_reported_at_its_file_offset() {
        for pattern in [
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(4099))),
        ] {
            let plan = ReadPlan::new(vec![generated(9, 1_000_003)], &pattern);
            let shards = split(&plan, 3, 4096).unwrap();
            let second = &shards[1];
            assert!(!second.covers_files, "{pattern:?}: a part of a file");
            let start = second.segments[0].offset;
            assert_eq!(start % 8, 0, "{pattern:?}: cut at {start}");
            assert!(
                start > 300_000 && start < 360_000,
                "{pattern:?}: cut at {start}"
            );
            let want: u64 = integrity::regions(second)
                .iter()
                .map(|&(file_offset, _, len, _)| {
                    verify::expected_checksum_range(9, file_offset, len)
                })
                .fold(0, u64::wrapping_add);
            assert_eq!(integrity::expected_checksum(second), want);
            let contents = contents(&plan.files);
            let mut buffer = perfect(second, &contents);
            buffer[12_345] ^= 0x40;
            let result = host_check(second, &buffer);
            assert!(!result.passed());
            let bad = result.first_bad.unwrap();
            assert_eq!(
                (bad.file, bad.file_offset, bad.buffer_offset),
                ("gen-9".into(), start + 12_345, 12_345),
                "{pattern:?}"
            );
            // The last shard ends with the file's odd tail and still verifies.
            let last = shards.last().unwrap();
            let tail = last.segments.last().unwrap();
            assert_eq!(tail.offset + tail.len, 1_000_003);
            assert!(host_check(last, &perfect(last, &contents)).passed());
        }
    }

    #[test]
    fn round_robin_shards_keep_whole_file_checksums() {
        let files = vec![generated(1, 4099), generated(2, 8192), generated(3, 17)];
        let plan = ReadPlan::new(files.clone(), &Pattern::Whole);
        let shards = split(&plan, 2, 4096).unwrap();
        assert_eq!(shards[0].files, [files[0].clone(), files[2].clone()]);
        assert_eq!(shards[1].files, [files[1].clone()]);
        assert_eq!(
            shards[0].segments,
            [
                Segment {
                    file: 0,
                    offset: 0,
                    len: 4099,
                    buffer_offset: 0
                },
                Segment {
                    file: 1,
                    offset: 0,
                    len: 17,
                    buffer_offset: 4099
                }
            ]
        );
        assert!(shards.iter().all(|shard| shard.covers_files));
        assert_eq!(
            integrity::expected_checksum(&shards[0]),
            files[0].checksum.wrapping_add(files[2].checksum)
        );
    }

    #[test]
    fn a_user_file_is_split_by_whole_files_only() {
        let user = |name: &str, size| PlannedFile {
            path: name.into(),
            size,
            seed: None,
            checksum: 0xabc,
        };
        let one = ReadPlan::new(vec![user("ckpt.bin", 1 << 20)], &Pattern::Whole);
        assert_eq!(split(&one, 1, 4096).unwrap(), std::slice::from_ref(&one));
        let error = split(&one, 2, 4096).unwrap_err();
        assert_eq!(
            error,
            ShardError::UserFileSplit {
                path: "ckpt.bin".into(),
                gpus: 2
            }
        );
        assert!(
            error
                .to_string()
                .contains("`ckpt.bin` cannot be split across 2 GPUs")
        );
        let two = ReadPlan::new(
            vec![user("a.bin", 1 << 20), user("b.bin", 4099)],
            &Pattern::Chunks(PositiveSize(ByteSize(4096))),
        );
        let shards = split(&two, 2, 4096).unwrap();
        assert!(shards.iter().all(|shard| shard.covers_files));
        assert_eq!(integrity::expected_checksum(&shards[1]), 0xabc);
    }

    #[test]
    fn too_small_a_plan_for_the_gpus_is_refused() {
        let plan = ReadPlan::new(vec![generated(1, 4096)], &Pattern::Whole);
        let error = split(&plan, 2, 4096).unwrap_err();
        assert_eq!(
            error,
            ShardError::TooFewCuts {
                gpus: 2,
                cuts: 0,
                task_size: 4096
            }
        );
        assert_eq!(split(&plan, 2, 2048).unwrap().len(), 2);
        assert!(split(&plan, 0, 4096).unwrap().is_empty());
    }

    #[test]
    fn cuts_are_nearest_to_equal_shares_and_leave_room_for_the_rest() {
        assert_eq!(
            choose_cuts(&[10, 20, 30, 40, 50], 60, 3),
            Some(vec![20, 40])
        );
        // All candidates near the start: later cuts still get one each.
        assert_eq!(choose_cuts(&[1, 2, 3], 100, 4), Some(vec![1, 2, 3]));
        assert_eq!(choose_cuts(&[97, 98, 99], 100, 3), Some(vec![97, 98]));
        assert_eq!(choose_cuts(&[5], 100, 3), None);
    }
}
