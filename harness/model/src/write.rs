//! Writing trials (`op: write` and `roundtrip`): the files a trial writes and the plan it writes
//! them with. A written file is the generator's bytes for its seed and size, so it is verified
//! exactly like a generated one; it has a name of its own in the data dir and never replaces the
//! generated test data the reading trials use.

use std::path::Path;

use crate::plan::{PlannedFile, ReadPlan};
use crate::scenario::{FileSet, Pattern};

/// Prefix of every written file's name; generated data files start with `gds-gate-s` instead.
pub const WRITTEN_PREFIX: &str = "gds-gate-written-";

/// File name of the file a writing trial writes for generator `seed` and `size` bytes.
pub fn written_file_name(seed: u64, size: u64) -> String {
    format!("{WRITTEN_PREFIX}s{seed}-{size}.bin")
}

/// The files a writing trial writes into `data_dir`, in plan order, with the checksum the
/// generator's bytes have. `None` for a file of the user's, which is never written (the suite
/// validation refuses it before any trial runs).
pub fn written_files(data_dir: &Path, files: &FileSet) -> Option<Vec<PlannedFile>> {
    let FileSet::Generated { size, seed, count } = *files else {
        return None;
    };
    Some(
        (0..u64::from(count))
            .map(|i| {
                let seed = seed.wrapping_add(i);
                PlannedFile {
                    path: data_dir.join(written_file_name(seed, size)),
                    size,
                    seed: Some(seed),
                    checksum: crate::verify::expected_file_checksum(seed, size),
                }
            })
            .collect(),
    )
}

/// The plan a writing trial writes with: the read plan's machinery, read the other way. Segment
/// `s` writes the buffer's bytes at `s.buffer_offset` to `s.offset` of its file; since writing
/// patterns cover each file once, the buffer holds every file whole, in plan order.
pub fn write_plan(data_dir: &Path, files: &FileSet, pattern: &Pattern) -> Option<ReadPlan> {
    if matches!(pattern, Pattern::Random(_)) {
        return None;
    }
    Some(ReadPlan::new(written_files(data_dir, files)?, pattern))
}

/// Where file `file` of `plan` starts in the buffer: the buffer offset of its first segment
/// (writing plans hold each file whole and contiguous).
pub fn file_base(plan: &ReadPlan, file: usize) -> Option<u64> {
    plan.segments
        .iter()
        .find(|segment| segment.file == file)
        .map(|segment| segment.buffer_offset)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::scenario::size::{ByteSize, PositiveSize};

    const GENERATED: FileSet = FileSet::Generated {
        size: 10_000,
        seed: 7,
        count: 2,
    };

    #[test]
    fn written_files_have_their_own_names_and_the_generators_checksum() {
        let files = written_files(Path::new("data"), &GENERATED).unwrap();
        let names: Vec<PathBuf> = files.iter().map(|file| file.path.clone()).collect();
        assert_eq!(
            names,
            [
                PathBuf::from("data/gds-gate-written-s7-10000.bin"),
                PathBuf::from("data/gds-gate-written-s8-10000.bin")
            ]
        );
        // Never the name of the generated file with the same seed and size.
        assert!(!names[0].ends_with("gds-gate-s7-10000.bin"));
        assert_eq!(files[1].seed, Some(8));
        assert_eq!(
            files[1].checksum,
            crate::verify::expected_file_checksum(8, 10_000)
        );
    }

    #[test]
    fn a_users_file_and_random_offsets_have_no_write_plan() {
        let user = FileSet::User {
            path: "ckpt.bin".into(),
        };
        assert!(write_plan(Path::new("d"), &user, &Pattern::Whole).is_none());
        let random = Pattern::Random(crate::scenario::RandomReads {
            size: PositiveSize(ByteSize(4096)),
            count: std::num::NonZeroU32::new(2).unwrap(),
            seed: 0,
            align: PositiveSize(ByteSize(4096)),
        });
        assert!(write_plan(Path::new("d"), &GENERATED, &random).is_none());
    }

    #[test]
    fn a_chunked_write_plan_holds_each_file_whole_and_in_order() {
        let plan = write_plan(
            Path::new("d"),
            &GENERATED,
            &Pattern::Chunks(PositiveSize(ByteSize(4096))),
        )
        .unwrap();
        assert_eq!(plan.total_bytes(), 20_000);
        assert_eq!(file_base(&plan, 0), Some(0));
        assert_eq!(file_base(&plan, 1), Some(10_000));
        for segment in &plan.segments {
            let base = file_base(&plan, segment.file).unwrap();
            assert_eq!(segment.buffer_offset, base + segment.offset);
        }
    }
}
