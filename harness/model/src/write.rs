//! Writing trials (`op: write` and `roundtrip`): the files a trial writes and the plan it writes
//! them with. A written file is the generator's bytes for its seed and size, so it is verified
//! exactly like a generated one; it has a name of its own in the data dir and never replaces the
//! generated test data the reading trials use.

use std::path::{Path, PathBuf};

use crate::plan::{PlannedFile, ReadPlan};
use crate::scenario::{FileSet, Pattern};

/// Prefix of every written file's name; generated data files start with `gds-gate-s` instead.
pub const WRITTEN_PREFIX: &str = "gds-gate-written-";

/// File name of the file a writing trial writes for generator `seed` and `size` bytes.
pub fn written_file_name(seed: u64, size: u64) -> String {
    format!("{WRITTEN_PREFIX}s{seed}-{size}.bin")
}

/// How a written file was emptied before a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blanked {
    /// Its bytes zeroed in place (`FALLOC_FL_ZERO_RANGE`): the blocks stay allocated, so nothing
    /// is freed, and a file system mounted with `discard` sends no TRIM (0.05 s a GiB on the
    /// H200 runner's ext4, against 0.27 s for a truncate and 0.25–0.31 s for an unlink).
    Zeroed,
    /// Truncated to nothing, where the file system cannot zero a range (tmpfs, NFS).
    Truncated,
}

/// Empties a written file before a pass, so that a write that did not happen leaves zeros (or a
/// short file) that verification cannot pass, whatever an earlier pass or run left there.
pub fn blank(file: &std::fs::File, len: u64) -> std::io::Result<Blanked> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(len).map_err(std::io::Error::other)?;
    if len > 0 {
        // SAFETY: a valid open descriptor; ZERO_RANGE over [0, len) extends a shorter file.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_ZERO_RANGE, 0, len) };
        if rc == 0 {
            return Ok(Blanked::Zeroed);
        }
        let error = std::io::Error::last_os_error();
        if !matches!(
            error.raw_os_error(),
            Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)
        ) {
            return Err(error);
        }
    }
    file.set_len(0)?;
    Ok(Blanked::Truncated)
}

/// The files a writing trial writes into `data_dir`, in plan order, with the checksum the
/// generator's bytes have. `None` for a file of the user's, which is never written (the suite
/// validation refuses it before any trial runs).
pub fn written_files(data_dir: &Path, files: &FileSet) -> Option<Vec<PlannedFile>> {
    let FileSet::Generated { seed, .. } = *files else {
        return None;
    };
    Some(
        written_paths(data_dir, files)?
            .into_iter()
            .zip(0..)
            .map(|((path, size), i)| {
                let seed = seed.wrapping_add(i);
                PlannedFile {
                    path,
                    size,
                    seed: Some(seed),
                    checksum: crate::verify::expected_file_checksum(seed, size),
                }
            })
            .collect(),
    )
}

/// Where [`written_files`] are and their sizes, without their checksums (a GiB of generator
/// bytes each): for what needs only their place, such as the doctor's free-space row.
pub fn written_paths(data_dir: &Path, files: &FileSet) -> Option<Vec<(PathBuf, u64)>> {
    let FileSet::Generated { size, seed, count } = *files else {
        return None;
    };
    Some(
        (0..u64::from(count))
            .map(|i| {
                (
                    data_dir.join(written_file_name(seed.wrapping_add(i), size)),
                    size,
                )
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

    /// What a pass finds after `blank`: zeros where the last pass's bytes were, or nothing.
    fn blanked_contents(file: &mut std::fs::File, len: u64) -> (Blanked, Vec<u8>) {
        use std::io::{Read, Seek};
        let how = blank(file, len).unwrap();
        let mut contents = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut contents).unwrap();
        (how, contents)
    }

    #[test]
    fn a_blanked_file_holds_nothing_of_what_was_written() {
        use std::io::Write;
        // On the build disk, not /tmp: tmpfs cannot zero a range and would only test the fallback.
        let mut file = tempfile::tempfile_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        file.write_all(&[0xA5; 3 << 16]).unwrap();
        file.sync_all().unwrap();
        match blanked_contents(&mut file, 3 << 16) {
            (Blanked::Zeroed, contents) => assert_eq!(contents, vec![0; 3 << 16]),
            (Blanked::Truncated, contents) => assert!(contents.is_empty()),
        }
        // A new (empty) file is extended to the length, or left empty.
        let mut fresh = tempfile::tempfile_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let (_, contents) = blanked_contents(&mut fresh, 4096);
        assert!(contents.iter().all(|&b| b == 0) && [0, 4096].contains(&contents.len()));
    }

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
