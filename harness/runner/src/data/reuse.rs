//! Whether a generated file found on disk can be trusted: its identity sidecar must match
//! `stat` (size, mtime, ctime, inode, device), and a few 4 KiB blocks must match the generator.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::sidecar::{self, GeneratedIdentity, Stamp};
use super::{GENERATOR_VERSION, GeneratedFile, SPOT_BLOCK};
use gds_model::verify::{exact_compare_serial, expected_file_checksum, mix64};

/// Blocks at seed-derived offsets in the spot check, besides the first and the last.
const SPOT_RANDOM_BLOCKS: u64 = 6;

/// Why a generated file on disk is not trusted: a fragment for "regenerating because …". It is
/// recorded as one line of the report, so a cause is part of the text, not a source.
#[derive(Debug, thiserror::Error)]
pub(super) enum Distrust {
    #[error("no data file")]
    NoFile,
    #[error("cannot stat the data file ({0})")]
    Stat(io::Error),
    #[error(transparent)]
    Sidecar(#[from] sidecar::Unreadable),
    #[error("no identity sidecar")]
    NoSidecar,
    #[error("generator version {0} != {current}", current = GENERATOR_VERSION)]
    GeneratorVersion(u32),
    #[error("identity sidecar describes seed {seed} size {size}")]
    OtherFile { seed: u64, size: u64 },
    #[error("file size changed ({now} != {expected})")]
    Size { now: u64, expected: u64 },
    #[error("file changed since generation ({0})")]
    Changed(&'static str),
    #[error("identity sidecar checksum {recorded:#018x} != {expected:#018x}")]
    Checksum { recorded: u64, expected: u64 },
    #[error("cannot open for the spot check ({0})")]
    SpotOpen(io::Error),
    #[error("spot check could not read byte {offset} ({error})")]
    SpotRead { offset: u64, error: io::Error },
    #[error("spot check failed at byte {0}")]
    SpotMismatch(u64),
}

/// The checksum of the file at `path` when it can be trusted, else why not.
pub(super) fn check_reusable(
    path: &Path,
    sidecar_path: &Path,
    spec: GeneratedFile,
) -> Result<u64, Distrust> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(Distrust::NoFile),
        Err(err) => return Err(Distrust::Stat(err)),
    };
    let identity: GeneratedIdentity = sidecar::read(sidecar_path)?.ok_or(Distrust::NoSidecar)?;
    if identity.generator_version != GENERATOR_VERSION {
        return Err(Distrust::GeneratorVersion(identity.generator_version));
    }
    if (identity.seed, identity.size) != (spec.seed, spec.size) {
        return Err(Distrust::OtherFile {
            seed: identity.seed,
            size: identity.size,
        });
    }
    let stamp = Stamp::of(&meta);
    if stamp.size != spec.size {
        return Err(Distrust::Size {
            now: stamp.size,
            expected: spec.size,
        });
    }
    for (field, now, then) in [
        ("mtime", stamp.mtime_ns as u64, identity.mtime_ns as u64),
        ("inode", stamp.inode, identity.inode),
        ("device", stamp.device, identity.device),
        // A write whose mtime was put back still moved the ctime.
        ("ctime", stamp.ctime_ns as u64, identity.ctime_ns as u64),
    ] {
        if now != then {
            return Err(Distrust::Changed(field));
        }
    }
    let expected = expected_file_checksum(spec.seed, spec.size);
    if identity.checksum != expected {
        return Err(Distrust::Checksum {
            recorded: identity.checksum,
            expected,
        });
    }
    spot_check(path, spec)?;
    Ok(expected)
}

/// File offsets of the 4 KiB blocks the reuse spot check compares: the first, the last, and a
/// few at offsets derived from the seed (so that different files probe different places).
pub fn spot_check_offsets(seed: u64, size: u64) -> Vec<u64> {
    let blocks = size.div_ceil(SPOT_BLOCK);
    if blocks == 0 {
        return Vec::new();
    }
    let mut offsets = vec![0, (blocks - 1) * SPOT_BLOCK];
    for k in 1..=SPOT_RANDOM_BLOCKS {
        offsets.push(mix64(seed ^ mix64(k)) % blocks * SPOT_BLOCK);
    }
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

fn spot_check(path: &Path, spec: GeneratedFile) -> Result<(), Distrust> {
    let file = File::open(path).map_err(Distrust::SpotOpen)?;
    let mut buf = vec![0u8; SPOT_BLOCK as usize];
    for offset in spot_check_offsets(spec.seed, spec.size) {
        let len = SPOT_BLOCK.min(spec.size - offset) as usize;
        file.read_exact_at(&mut buf[..len], offset)
            .map_err(|error| Distrust::SpotRead { offset, error })?;
        if let Some(bad) = exact_compare_serial(spec.seed, offset, &buf[..len]).first_bad_offset {
            return Err(Distrust::SpotMismatch(bad));
        }
    }
    Ok(())
}
