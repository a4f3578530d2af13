//! The read plan of a trial: which byte ranges of which files land where in the destination buffer.
//!
//! Every reader executes the same plan and the verification walks the same plan, so what is read,
//! what is timed and what is checked cannot drift apart.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::scenario::{Pattern, RandomReads};
use crate::verify::mix64;

/// A file as a trial reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedFile {
    pub path: PathBuf,
    pub size: u64,
    /// `Some(seed)` for generated files: every word can be regenerated and compared.
    pub seed: Option<u64>,
    /// The whole-file checksum (from the identity sidecar).
    #[serde(with = "crate::hex")]
    #[schemars(with = "crate::hex::Hex")]
    pub checksum: u64,
}

/// One read: `len` bytes at `offset` of file `file` into the buffer at `buffer_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub file: usize,
    pub offset: u64,
    pub len: u64,
    pub buffer_offset: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadPlan {
    pub files: Vec<PlannedFile>,
    /// In buffer order, contiguous, non-overlapping in the buffer.
    pub segments: Vec<Segment>,
    /// Whether the segments of each file cover it exactly once (whole and chunked reads), so that
    /// the whole-file checksum applies.
    pub covers_files: bool,
}

impl ReadPlan {
    pub fn new(files: Vec<PlannedFile>, pattern: &Pattern) -> ReadPlan {
        let mut segments = Vec::new();
        let mut buffer_offset = 0;
        let mut push = |file, offset, len| {
            segments.push(Segment {
                file,
                offset,
                len,
                buffer_offset,
            });
            buffer_offset += len;
        };
        for (index, file) in files.iter().enumerate() {
            match pattern {
                Pattern::Whole => push(index, 0, file.size),
                Pattern::Chunks(chunk) => {
                    let mut offset = 0;
                    while offset < file.size {
                        let len = chunk.bytes().min(file.size - offset);
                        push(index, offset, len);
                        offset += len;
                    }
                }
                Pattern::Random(random) => {
                    for k in 0..u64::from(random.count.get()) {
                        push(
                            index,
                            random_offset(random, index as u64, k, file.size),
                            random.size.bytes(),
                        );
                    }
                }
            }
        }
        ReadPlan {
            covers_files: !matches!(pattern, Pattern::Random(_)),
            files,
            segments,
        }
    }

    /// Bytes one pass of the plan moves, which is also the buffer size.
    pub fn total_bytes(&self) -> u64 {
        self.segments.iter().map(|segment| segment.len).sum()
    }

    /// Splits every segment into tasks of at most `task_size` bytes, as KvikIO splits a `pread`.
    pub fn tasks(&self, task_size: u64) -> Vec<Segment> {
        let task_size = task_size.max(1);
        let mut tasks = Vec::new();
        for segment in &self.segments {
            let mut done = 0;
            while done < segment.len {
                let len = task_size.min(segment.len - done);
                tasks.push(Segment {
                    file: segment.file,
                    offset: segment.offset + done,
                    len,
                    buffer_offset: segment.buffer_offset + done,
                });
                done += len;
            }
        }
        tasks
    }
}

/// Offset of random read `k` of file `file`: `mix64` of the seed, read and file numbers picks one of
/// the aligned slots where a whole read fits. A pure function, so any worker (Rust or Python) given
/// the plan reads the same bytes.
fn random_offset(random: &RandomReads, file: u64, k: u64, file_size: u64) -> u64 {
    let slots = random.offsets(file_size);
    let draw = mix64(random.seed ^ mix64(file.wrapping_mul(0x1_0000_0001) ^ mix64(k)));
    (draw % slots) * random.align.bytes()
}

/// Generated files and the buffers a correct read of a plan over them holds, for the tests of
/// what walks plans (verification, sharding).
#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::HashMap;

    use super::{PlannedFile, ReadPlan};
    use crate::verify;
    use crate::verify::fill;

    pub(crate) fn generated(seed: u64, size: u64) -> PlannedFile {
        PlannedFile {
            path: format!("gen-{seed}").into(),
            size,
            seed: Some(seed),
            checksum: verify::expected_file_checksum(seed, size),
        }
    }

    /// The buffer a perfect read of `plan` produces, from the files' bytes.
    pub(crate) fn perfect(plan: &ReadPlan, contents: &HashMap<u64, Vec<u8>>) -> Vec<u8> {
        let mut buffer = vec![0u8; plan.total_bytes() as usize];
        for segment in &plan.segments {
            let file = &contents[&plan.files[segment.file].seed.unwrap()];
            let (at, from) = (segment.buffer_offset as usize, segment.offset as usize);
            let len = segment.len as usize;
            buffer[at..at + len].copy_from_slice(&file[from..from + len]);
        }
        buffer
    }

    pub(crate) fn contents(files: &[PlannedFile]) -> HashMap<u64, Vec<u8>> {
        files
            .iter()
            .map(|file| {
                let mut bytes = vec![0u8; file.size as usize];
                fill(file.seed.unwrap(), 0, &mut bytes);
                (file.seed.unwrap(), bytes)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::scenario::size::{ByteSize, PositiveSize};

    fn file(size: u64) -> PlannedFile {
        PlannedFile {
            path: "f".into(),
            size,
            seed: Some(1),
            checksum: 0,
        }
    }

    #[test]
    fn chunks_cover_each_file_with_a_short_last_chunk() {
        let plan = ReadPlan::new(
            vec![file(10_000), file(4096)],
            &Pattern::Chunks(PositiveSize(ByteSize(4096))),
        );
        let lens: Vec<u64> = plan.segments.iter().map(|s| s.len).collect();
        assert_eq!(lens, [4096, 4096, 1808, 4096]);
        assert_eq!(
            plan.segments[3],
            Segment {
                file: 1,
                offset: 0,
                len: 4096,
                buffer_offset: 10_000
            }
        );
        assert_eq!(plan.total_bytes(), 14_096);
        assert!(plan.covers_files);
    }

    /// The counts the limits are checked with are those of the plan the worker gets.
    #[test]
    fn reads_and_tasks_are_counted_without_building_the_plan() {
        use crate::scenario::limits::{reads_per_pass, tasks_per_pass};
        let random = RandomReads {
            size: PositiveSize(ByteSize(10_000)),
            count: NonZeroU32::new(7).unwrap(),
            seed: 1,
            align: PositiveSize(ByteSize(4096)),
        };
        for pattern in [
            Pattern::Whole,
            Pattern::Chunks(PositiveSize(ByteSize(4096))),
            Pattern::Chunks(PositiveSize(ByteSize(3000))),
            Pattern::Random(random),
        ] {
            let sizes = [10_000, 12_288, 1 << 20];
            let plan = ReadPlan::new(sizes.iter().map(|&s| file(s)).collect(), &pattern);
            assert_eq!(
                reads_per_pass(&sizes, &pattern),
                plan.segments.len() as u64,
                "{pattern:?}"
            );
            for task_size in [1000, 4096, 1 << 20] {
                assert_eq!(
                    tasks_per_pass(&sizes, &pattern, task_size),
                    plan.tasks(task_size).len() as u64,
                    "{pattern:?} {task_size}"
                );
            }
        }
    }

    #[test]
    fn tasks_split_segments_like_kvikio() {
        let plan = ReadPlan::new(vec![file(10 << 20)], &Pattern::Whole);
        let tasks = plan.tasks(4 << 20);
        assert_eq!(tasks.len(), 3);
        assert_eq!(
            (tasks[2].offset, tasks[2].len, tasks[2].buffer_offset),
            (8 << 20, 2 << 20, 8 << 20)
        );
    }

    #[test]
    fn random_reads_are_aligned_inside_the_file_and_reproducible() {
        let random = RandomReads {
            size: PositiveSize(ByteSize(64 << 10)),
            count: NonZeroU32::new(200).unwrap(),
            seed: 5,
            align: PositiveSize(ByteSize(4096)),
        };
        let plan = ReadPlan::new(
            vec![file(1 << 20), file(1 << 20)],
            &Pattern::Random(random.clone()),
        );
        assert_eq!(plan.segments.len(), 400);
        assert!(!plan.covers_files);
        for segment in &plan.segments {
            assert_eq!(segment.offset % 4096, 0);
            assert!(segment.offset + segment.len <= 1 << 20);
        }
        let distinct: std::collections::BTreeSet<u64> =
            plan.segments.iter().map(|s| s.offset).collect();
        assert!(distinct.len() > 10, "offsets should vary: {distinct:?}");
        assert_eq!(
            plan,
            ReadPlan::new(vec![file(1 << 20), file(1 << 20)], &Pattern::Random(random))
        );
    }
}
