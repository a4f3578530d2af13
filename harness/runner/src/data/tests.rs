//! File-layer tests: generation, reuse and every reason to distrust a cached file, on small
//! files in temporary directories.

use std::error::Error;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::*;
use gds_model::verify::{checksum_file_bytes, expected_file_checksum, fill};

type TestResult = Result<(), Box<dyn Error>>;

const SIZE: u64 = (1 << 20) + 3;

fn generated(seed: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    fill(seed, 0, &mut buf);
    buf
}

fn reason(prepared: &Prepared) -> &str {
    match &prepared.action {
        Action::Generated { reason } | Action::Computed { reason } => reason,
        Action::Reused => "reused",
    }
}

fn set_mtime(path: &Path, mtime: SystemTime) -> TestResult {
    OpenOptions::new()
        .write(true)
        .open(path)?
        .set_modified(mtime)?;
    Ok(())
}

fn overwrite_keeping_mtime(path: &Path, offset: u64, bytes: &[u8]) -> TestResult {
    let mtime = fs::metadata(path)?.modified()?;
    OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all_at(bytes, offset)?;
    set_mtime(path, mtime)
}

fn names(dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Generates the file in a fresh directory and checks what is on disk.
fn fresh(
    seed: u64,
    size: u64,
) -> Result<(tempfile::TempDir, GeneratedFile, Prepared), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let spec = GeneratedFile { seed, size };
    let prepared = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&prepared), "no data file");
    assert_eq!(fs::read(&prepared.path)?, generated(seed, size));
    assert_eq!(prepared.checksum, expected_file_checksum(seed, size));
    Ok((dir, spec, prepared))
}

#[test]
fn generated_files_of_awkward_sizes_hold_the_generator_bytes_and_are_reused() -> TestResult {
    for size in [0, 1, 7, 4095, 4097, SIZE, (16 << 20) + 4096 + 1] {
        let (dir, spec, first) = fresh(21, size)?;
        assert_eq!(
            first.path,
            dir.path().join(format!("gds-gate-s21-{size}.bin"))
        );
        let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
        assert_eq!(again.action, Action::Reused, "size {size}");
        assert_eq!(again.checksum, first.checksum);
        assert_eq!(
            names(dir.path())?,
            [
                LOCK_FILE_NAME.to_owned(),
                spec.file_name(),
                spec.sidecar_name()
            ]
        );
    }
    Ok(())
}

#[test]
fn sidecar_records_the_identity() -> TestResult {
    let (dir, spec, prepared) = fresh(22, 4097)?;
    let text = fs::read_to_string(dir.path().join(spec.sidecar_name()))?;
    let json: serde_json::Value = serde_json::from_str(&text)?;
    let meta = fs::metadata(&prepared.path)?;
    assert_eq!(json["generator_version"], GENERATOR_VERSION);
    assert_eq!(json["seed"], 22);
    assert_eq!(json["size"], 4097);
    assert_eq!(json["checksum"], format!("{:#018x}", prepared.checksum));
    assert_eq!(json["inode"], meta.ino());
    assert_eq!(json["device"], meta.dev());
    let mtime_ns = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
    assert_eq!(json["mtime_ns"], mtime_ns);
    let ctime_ns = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
    assert_eq!(json["ctime_ns"], ctime_ns);
    Ok(())
}

#[test]
fn a_modified_file_with_a_new_mtime_is_regenerated() -> TestResult {
    let (dir, spec, prepared) = fresh(23, SIZE)?;
    let mtime = fs::metadata(&prepared.path)?.modified()?;
    // A byte outside every spot-checked block, so only the mtime can tell.
    let spots = spot_check_offsets(23, SIZE);
    let offset = (0..SIZE / 4096)
        .map(|b| b * 4096 + 100)
        .find(|o| !spots.contains(&(o / 4096 * 4096)))
        .ok_or("every block is spot-checked")?;
    OpenOptions::new()
        .write(true)
        .open(&prepared.path)?
        .write_all_at(b"x", offset)?;
    set_mtime(&prepared.path, mtime + Duration::from_secs(1))?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), "file changed since generation (mtime)");
    assert_eq!(fs::read(&again.path)?, generated(23, SIZE));
    Ok(())
}

/// Issue 15, case 5: a byte changed outside the spot-checked blocks, with the mtime put back, was
/// trusted forever; the change time gives it away.
#[test]
fn a_change_hidden_by_a_restored_mtime_is_caught_by_the_change_time() -> TestResult {
    let (dir, spec, prepared) = fresh(28, SIZE)?;
    let spots = spot_check_offsets(28, SIZE);
    let offset = (0..SIZE / 4096)
        .map(|b| b * 4096 + 100)
        .find(|o| !spots.contains(&(o / 4096 * 4096)))
        .ok_or("every block is spot-checked")?;
    // Timestamps advance in clock ticks (a few ms): a change in the tick of the generation could
    // keep its ctime, one a moment later cannot.
    std::thread::sleep(Duration::from_millis(50));
    overwrite_keeping_mtime(&prepared.path, offset, b"x")?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), "file changed since generation (ctime)");
    assert_eq!(fs::read(&again.path)?, generated(28, SIZE));
    Ok(())
}

/// The sidecar vouches for the file as it is now: what damage on the disk, unseen by the file
/// system, would leave.
fn vouch_for_current_stamp(sidecar: &Path, file: &Path) -> TestResult {
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(sidecar)?)?;
    json["ctime_ns"] = sidecar::Stamp::of(&fs::metadata(file)?).ctime_ns.into();
    fs::write(sidecar, serde_json::to_string(&json)?)?;
    Ok(())
}

#[test]
fn a_change_the_file_system_did_not_see_is_caught_by_the_spot_check() -> TestResult {
    let (dir, spec, prepared) = fresh(24, SIZE)?;
    let spots = spot_check_offsets(24, SIZE);
    assert!(spots.len() >= 3 && spots[0] == 0);
    assert_eq!(spots.last(), Some(&(SIZE / 4096 * 4096)));
    let bad = spots[1] + 1234;
    let byte = fs::read(&prepared.path)?[bad as usize] ^ 0x10;
    overwrite_keeping_mtime(&prepared.path, bad, &[byte])?;
    vouch_for_current_stamp(&dir.path().join(spec.sidecar_name()), &prepared.path)?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), format!("spot check failed at byte {bad}"));
    assert_eq!(fs::read(&again.path)?, generated(24, SIZE));
    Ok(())
}

#[test]
fn a_corrupt_or_outdated_sidecar_forces_regeneration() -> TestResult {
    let (dir, spec, _) = fresh(25, 4097)?;
    let sidecar = dir.path().join(spec.sidecar_name());
    let original = fs::read_to_string(&sidecar)?;

    fs::write(&sidecar, &original[..original.len() / 2])?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert!(
        reason(&again).starts_with("identity sidecar unreadable ("),
        "{again:?}"
    );

    let text = fs::read_to_string(&sidecar)?
        .replace("\"generator_version\": 1", "\"generator_version\": 0");
    fs::write(&sidecar, text)?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), "generator version 0 != 1");

    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&sidecar)?)?;
    json["checksum"] = "0x0000000000000001".into();
    fs::write(&sidecar, serde_json::to_string(&json)?)?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert!(reason(&again).starts_with("identity sidecar checksum 0x0000000000000001 != "));

    fs::remove_file(&sidecar)?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), "no identity sidecar");
    assert_eq!(
        ensure_generated(dir.path(), spec, &mut NoProgress)?.action,
        Action::Reused
    );
    Ok(())
}

#[test]
fn a_resized_or_replaced_file_is_regenerated() -> TestResult {
    let (dir, spec, prepared) = fresh(26, SIZE)?;
    let mtime = fs::metadata(&prepared.path)?.modified()?;
    OpenOptions::new()
        .write(true)
        .open(&prepared.path)?
        .set_len(SIZE - 3)?;
    set_mtime(&prepared.path, mtime)?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), "file size changed (1048576 != 1048579)");

    // Same bytes, same mtime, new inode: a copy is not the file that was vouched for.
    let copy = dir.path().join("copy");
    fs::copy(&again.path, &copy)?;
    set_mtime(&copy, fs::metadata(&again.path)?.modified()?)?;
    fs::rename(&copy, &again.path)?;
    let again = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&again), "file changed since generation (inode)");
    Ok(())
}

#[test]
fn leftovers_of_gates_that_are_gone_are_removed_and_never_trusted_and_nothing_else() -> TestResult {
    let dir = tempfile::tempdir()?;
    let spec = GeneratedFile {
        seed: 27,
        size: 4097,
    };
    let name = spec.file_name();
    // Complete, correct bytes under temporary names of gates that are gone: still not trusted.
    for leftover in [
        format!(".{name}.partial-2147483647"),
        format!(".{name}.partial-{}", std::process::id()),
        format!(".{}.partial-2147483646", spec.sidecar_name()),
    ] {
        fs::write(dir.path().join(leftover), generated(27, 4097))?;
    }
    // Not the gate's to remove: another program's temporary, a name the gate never gives, and a
    // writer that still runs (pid 1).
    let foreign = [
        ".checkpoint.bin.partial-2147483647".to_owned(),
        format!(".{name}.partial-garbage"),
        format!(".{name}.partial-1"),
    ];
    for file in &foreign {
        fs::write(dir.path().join(file), b"not ours")?;
    }
    let prepared = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&prepared), "no data file");
    let mut expected = vec![LOCK_FILE_NAME.to_owned(), name.clone(), spec.sidecar_name()];
    expected.extend(foreign);
    expected.sort();
    assert_eq!(names(dir.path())?, expected);

    // Killed between the rename and the sidecar: a file without identity is regenerated.
    fs::remove_file(dir.path().join(spec.sidecar_name()))?;
    let prepared = ensure_generated(dir.path(), spec, &mut NoProgress)?;
    assert_eq!(reason(&prepared), "no identity sidecar");
    Ok(())
}

#[test]
fn not_enough_space_says_how_much_and_what_to_do() {
    let err = check_free_space(
        Path::new("/data"),
        "gds-gate-s1-4294967296.bin",
        4 << 30,
        1288490189,
    );
    let message = err.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        message,
        "not enough free space in `/data` to generate `gds-gate-s1-4294967296.bin` (needs 4.00 GiB, \
         1.20 GiB free); free space or point --data-dir / GDS_GATE_DATA_DIR at a larger file system"
    );
    assert!(check_free_space(Path::new("/data"), "x", 4096, 4096).is_ok());
    // O_DIRECT writes whole 4 KiB blocks before truncating.
    assert!(check_free_space(Path::new("/data"), "x", 4097, 8191).is_err());
}

/// Issue 15, case 14: rounded up to whole blocks, a size near 2^64 wrapped around to "needs 0
/// bytes", and generation went on to fill the disk.
#[test]
fn a_size_near_two_to_the_64_needs_more_space_than_there_is() {
    let err = check_free_space(Path::new("/data"), "x", u64::MAX - 100, 1 << 40)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("(needs 16.00 EiB, 1.00 TiB free)"), "{err}");
}

#[test]
fn the_buffered_fallback_writes_the_same_bytes_and_checksum() -> TestResult {
    let dir = tempfile::tempdir()?;
    for (size, direct) in [(SIZE, false), (SIZE, true), ((16 << 20) + 5, false)] {
        let tmp = dir.path().join(format!("t-{size}-{direct}"));
        let sum = write::write_generated_with(&tmp, 31, size, &mut NoProgress, direct)?;
        let bytes = fs::read(&tmp)?;
        assert_eq!(bytes, generated(31, size), "size {size} direct {direct}");
        assert_eq!(finish_checksum(sum, size), checksum_file_bytes(&bytes));
    }
    Ok(())
}

#[test]
fn progress_lines_name_the_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let spec = GeneratedFile {
        seed: 29,
        size: 40 << 20,
    };
    let mut progress = LineProgress::new(Vec::new(), gds_model::units::Rate::Gb);
    ensure_generated(dir.path(), spec, &mut progress)?;
    let text = String::from_utf8(progress.into_inner())?;
    // Intermediate lines appear only on a slow disk; the last line always says it is done.
    assert!(
        text.lines()
            .all(|line| line.starts_with("generating gds-gate-s29-41943040.bin: ")),
        "{text}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.contains("40.0 MiB / 40.0 MiB") && last.contains(", done in "),
        "{text}"
    );
    Ok(())
}

#[test]
fn user_file_checksums_are_cached_and_recomputed_on_change() -> TestResult {
    let data = tempfile::tempdir()?;
    let files = tempfile::tempdir()?;
    let path = files.path().join("checkpoint.bin");
    let mut bytes = vec![0u8; (1 << 20) + 5];
    StdRng::seed_from_u64(30).fill(&mut bytes[..]);
    fs::write(&path, &bytes)?;

    let first = ensure_user_checksum(data.path(), &path, &mut NoProgress)?;
    assert_eq!(
        first.action,
        Action::Computed {
            reason: "no cached checksum".into()
        }
    );
    assert_eq!(first.checksum, checksum_file_bytes(&bytes));
    assert_eq!(first.size, bytes.len() as u64);
    let cached = super::user::user_sidecar_path(data.path(), &fs::canonicalize(&path)?);
    assert!(cached.starts_with(data.path().join("user")));
    assert!(fs::read_to_string(&cached)?.contains("checkpoint.bin"));
    let again = ensure_user_checksum(data.path(), &path, &mut NoProgress)?;
    assert_eq!(again.action, Action::Reused);
    assert_eq!(again.checksum, first.checksum);

    // Rewritten with a new mtime.
    let mtime = fs::metadata(&path)?.modified()?;
    bytes[777] ^= 1;
    fs::write(&path, &bytes)?;
    set_mtime(&path, mtime + Duration::from_secs(1))?;
    let changed = ensure_user_checksum(data.path(), &path, &mut NoProgress)?;
    assert_eq!(
        reason_of(&changed.action),
        "file changed since its checksum was cached (mtime)"
    );
    assert_eq!(changed.checksum, checksum_file_bytes(&bytes));

    // Rewritten with the mtime put back: the ctime still moves (past timestamp granularity).
    std::thread::sleep(Duration::from_millis(20));
    bytes[778] ^= 1;
    overwrite_keeping_mtime(&path, 0, &bytes)?;
    let changed = ensure_user_checksum(data.path(), &path, &mut NoProgress)?;
    assert_eq!(
        reason_of(&changed.action),
        "file changed since its checksum was cached (ctime)"
    );
    assert_eq!(changed.checksum, checksum_file_bytes(&bytes));
    Ok(())
}

fn reason_of(action: &Action) -> &str {
    match action {
        Action::Generated { reason } | Action::Computed { reason } => reason,
        Action::Reused => "reused",
    }
}

#[test]
fn missing_or_unusable_user_files_name_the_path_and_the_scenario_key() -> TestResult {
    let data = tempfile::tempdir()?;
    let missing = data.path().join("nope.bin");
    let err = ensure_user_checksum(data.path(), &missing, &mut NoProgress)
        .err()
        .ok_or("a missing file was accepted")?;
    assert!(matches!(err, DataError::UserFileMissing { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "user file `{}` (scenario key `files.path`) does not exist; expected an existing file, \
             fix `files.path` in the scenario",
            missing.display()
        )
    );
    let err = ensure_user_checksum(data.path(), data.path(), &mut NoProgress)
        .err()
        .ok_or("a directory was accepted")?;
    assert!(matches!(err, DataError::UserFileNotRegular { .. }), "{err}");
    Ok(())
}

/// Issue 15, case 4: an empty file read in no time passed as "0.00 GB/s … ok".
#[test]
fn an_empty_user_file_is_refused() -> TestResult {
    let data = tempfile::tempdir()?;
    let empty = data.path().join("empty.bin");
    File::create(&empty)?;
    let err = ensure_user_checksum(data.path(), &empty, &mut NoProgress)
        .err()
        .ok_or("an empty file was accepted")?;
    assert!(matches!(err, DataError::UserFileEmpty { .. }), "{err}");
    assert!(
        err.to_string().contains("is empty") && err.to_string().contains("`files.path`"),
        "{err}"
    );
    Ok(())
}

#[test]
fn spot_check_offsets_are_deterministic_block_starts() {
    let offsets = spot_check_offsets(5, 1 << 30);
    assert_eq!(offsets, spot_check_offsets(5, 1 << 30));
    assert_ne!(offsets, spot_check_offsets(6, 1 << 30));
    assert!(offsets.iter().all(|o| o % SPOT_BLOCK == 0 && *o < 1 << 30));
    assert_eq!(offsets.first(), Some(&0));
    assert_eq!(offsets.last(), Some(&((1 << 30) - SPOT_BLOCK)));
    assert!(spot_check_offsets(5, 0).is_empty());
    assert_eq!(spot_check_offsets(5, 1), [0]);
}

#[test]
fn action_and_prepared_serialise_for_reports() -> TestResult {
    let prepared = Prepared {
        path: "/d/x.bin".into(),
        size: 8,
        seed: 1,
        checksum: 0xAB,
        action: Action::Generated {
            reason: "no data file".into(),
        },
        elapsed: Duration::from_millis(1500),
    };
    let json = serde_json::to_string(&prepared)?;
    assert_eq!(
        json,
        r#"{"path":"/d/x.bin","size":8,"seed":1,"checksum":"0x00000000000000ab","action":"generated","reason":"no data file","elapsed_s":1.5}"#
    );
    assert_eq!(prepared.action.to_string(), "generated (no data file)");
    Ok(())
}
