//! The data dir's storage: the mount holding it (`/proc/self/mountinfo`), the block device under
//! it (`/sys/dev/block`), whether `O_DIRECT` works there (tried, not assumed), udev's record of
//! the device (which cuFile needs to register a file), free space and the generated files
//! already present.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::display;
use crate::doctor::facts::{BlockDevice, DataDirFacts, DirectIo, Fact, Mount, UdevRecord};

/// One line of `/proc/self/mountinfo` (proc(5)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    pub device: String,
    pub root: String,
    pub mount_point: String,
    pub options: Vec<String>,
    pub fs_type: String,
    pub source: String,
    pub super_options: Vec<String>,
}

/// Parses mountinfo: `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`
/// (optional fields end at the lone `-`; spaces in paths are escaped as `\040`).
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            if dash < 6 || fields.len() < dash + 3 {
                return None;
            }
            let list = |s: &str| s.split(',').map(str::to_owned).collect();
            Some(MountEntry {
                device: fields[2].to_string(),
                root: unescape(fields[3]),
                mount_point: unescape(fields[4]),
                options: list(fields[5]),
                fs_type: fields[dash + 1].to_string(),
                source: unescape(fields[dash + 2]),
                super_options: fields.get(dash + 3).map(|s| list(s)).unwrap_or_default(),
            })
        })
        .collect()
}

fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding `path` (absolute, symlinks resolved): the longest mount point that is a
/// prefix of it by whole components; of equal ones the last, which shadows the others.
pub fn find_mount<'a>(entries: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| path.starts_with(&entry.mount_point))
        .max_by_key(|(i, entry)| (Path::new(&entry.mount_point).components().count(), *i))
        .map(|(_, entry)| entry)
}

pub(super) fn data_dir(configured: &Path) -> DataDirFacts {
    let absolute = match configured.is_absolute() {
        true => configured.to_path_buf(),
        false => std::env::current_dir()
            .map(|cwd| cwd.join(configured))
            .unwrap_or_else(|_| configured.to_path_buf()),
    };
    let exists = absolute.is_dir();
    let probed = nearest_existing(&absolute);
    let mount = match &probed {
        Ok(dir) => mount_of(dir),
        Err(why) => Fact::Unknown(why.clone()),
    };
    let block = match &mount {
        Fact::Known(mount) => block_device(mount),
        Fact::Unknown(why) => Fact::Unknown(why.clone()),
    };
    let udev = match &mount {
        Fact::Known(mount) if !mount.device.starts_with("0:") => {
            Fact::Known(udev_record(&mount.device))
        }
        Fact::Known(mount) => Fact::Unknown(format!(
            "{} is not on a block device, so cuFile does not ask udev",
            mount.fs_type
        )),
        Fact::Unknown(why) => Fact::Unknown(why.clone()),
    };
    let (o_direct, free_bytes) = match &probed {
        Ok(dir) => (direct_io(dir), Fact::from_result(free_space(dir))),
        Err(why) => (Fact::Unknown(why.clone()), Fact::Unknown(why.clone())),
    };
    DataDirFacts {
        path: display(configured),
        exists,
        probed: match probed {
            Ok(dir) => Fact::Known(display(&dir)),
            Err(why) => Fact::Unknown(why),
        },
        mount,
        block,
        o_direct,
        run_udev: Path::new("/run/udev").exists(),
        udev,
        free_bytes,
        existing_files: if exists {
            existing(&absolute)
        } else {
            BTreeMap::new()
        },
    }
}

/// The directory itself or, when it does not exist yet, the ancestor it will be created in.
fn nearest_existing(path: &Path) -> Result<PathBuf, String> {
    let dir = path
        .ancestors()
        .find(|candidate| candidate.is_dir())
        .ok_or_else(|| format!("no existing directory above {}", path.display()))?;
    dir.canonicalize()
        .map_err(|error| format!("cannot resolve {}: {error}", dir.display()))
}

fn mount_of(dir: &Path) -> Fact<Mount> {
    let text = match std::fs::read_to_string("/proc/self/mountinfo") {
        Ok(text) => text,
        Err(error) => return Fact::Unknown(format!("cannot read /proc/self/mountinfo: {error}")),
    };
    let entries = parse_mountinfo(&text);
    match find_mount(&entries, dir) {
        Some(entry) => Fact::Known(Mount {
            mount_point: entry.mount_point.clone(),
            fs_type: entry.fs_type.clone(),
            source: entry.source.clone(),
            device: entry.device.clone(),
            options: entry.options.clone(),
            super_options: entry.super_options.clone(),
        }),
        None => Fact::Unknown(format!(
            "no mount in /proc/self/mountinfo holds {}",
            dir.display()
        )),
    }
}

fn block_device(mount: &Mount) -> Fact<BlockDevice> {
    if mount.device.starts_with("0:") {
        return Fact::Unknown(format!(
            "no block device: {} from {} (device {})",
            mount.fs_type, mount.source, mount.device
        ));
    }
    let sys = PathBuf::from(format!("/sys/dev/block/{}", mount.device));
    let resolved = match sys.canonicalize() {
        Ok(path) => path,
        Err(error) => return Fact::Unknown(format!("cannot resolve {}: {error}", sys.display())),
    };
    let name_of = |path: &Path| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let name = name_of(&resolved);
    let disk = match resolved.join("partition").exists() {
        true => resolved
            .parent()
            .map(name_of)
            .unwrap_or_else(|| name.clone()),
        false => name.clone(),
    };
    let disk_dir = PathBuf::from("/sys/block").join(&disk);
    let members: Vec<String> = std::fs::read_dir(disk_dir.join("slaves"))
        .map(|entries| {
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        })
        .unwrap_or_default();
    let driver = ["device/driver", "device/device/driver"]
        .iter()
        .find_map(|link| disk_dir.join(link).canonicalize().ok())
        .map(|path| name_of(&path));
    let is_nvme = |name: &str| name.starts_with("nvme");
    let nvme = is_nvme(&disk)
        || driver.as_deref() == Some("nvme")
        || (!members.is_empty() && members.iter().all(|m| is_nvme(m)));
    Fact::Known(BlockDevice {
        name,
        disk,
        driver,
        members,
        nvme,
    })
}

/// Writes and reads back 4 KiB with `O_DIRECT` in a temporary file in `dir`.
fn direct_io(dir: &Path) -> Fact<DirectIo> {
    const BLOCK: usize = 4096;
    let temp = match tempfile::Builder::new()
        .prefix(".gds-gate-doctor-")
        .tempfile_in(dir)
    {
        Ok(temp) => temp,
        Err(error) => {
            return Fact::Unknown(format!(
                "cannot create a test file in {}: {error}",
                dir.display()
            ));
        }
    };
    let refused = |step: &str, error: std::io::Error| {
        Fact::Known(DirectIo {
            works: false,
            detail: format!("{step} with O_DIRECT in {} failed: {error}", dir.display()),
        })
    };
    let file = match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(temp.path())
    {
        Ok(file) => file,
        Err(error) => return refused("open", error),
    };
    // Aligned slices inside plain vectors: O_DIRECT wants the buffer aligned as well.
    let mut out = vec![0u8; 2 * BLOCK];
    let at = out.as_ptr().align_offset(BLOCK);
    for (i, byte) in out[at..at + BLOCK].iter_mut().enumerate() {
        *byte = (i % 251) as u8;
    }
    if let Err(error) = file.write_all_at(&out[at..at + BLOCK], 0) {
        return refused("a 4 KiB write", error);
    }
    let mut back = vec![0u8; 2 * BLOCK];
    let bt = back.as_ptr().align_offset(BLOCK);
    if let Err(error) = file.read_exact_at(&mut back[bt..bt + BLOCK], 0) {
        return refused("a 4 KiB read", error);
    }
    if back[bt..bt + BLOCK] != out[at..at + BLOCK] {
        return Fact::Known(DirectIo {
            works: false,
            detail: "4 KiB written with O_DIRECT read back different".into(),
        });
    }
    Fact::Known(DirectIo {
        works: true,
        detail: format!(
            "a 4 KiB O_DIRECT write and read in {} succeeded",
            dir.display()
        ),
    })
}

fn udev_record(device: &str) -> UdevRecord {
    let path = format!("/run/udev/data/b{device}");
    let text = std::fs::read_to_string(&path).ok();
    let property = |name: &str| {
        text.as_deref()?
            .lines()
            .find_map(|line| {
                line.strip_prefix("E:")?
                    .strip_prefix(name)?
                    .strip_prefix('=')
            })
            .map(str::to_owned)
    };
    UdevRecord {
        exists: text.is_some(),
        id_fs_usage: property("ID_FS_USAGE"),
        id_fs_type: property("ID_FS_TYPE"),
        path,
    }
}

fn free_space(dir: &Path) -> Result<u64, String> {
    let c_path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte", dir.display()))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is NUL-terminated and `stat` is a valid out-pointer.
    if unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(format!(
            "statvfs({}) failed: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: statvfs succeeded, so it filled the struct.
    let stat = unsafe { stat.assume_init() };
    // The field types vary by target (u32 on some 32-bit ones).
    #[allow(clippy::unnecessary_cast)]
    let (avail, fragment) = (stat.f_bavail as u64, stat.f_frsize as u64);
    Ok(avail.saturating_mul(fragment))
}

/// Generated files (`gds-gate-s<seed>-<size>.bin`) already in the data dir, with their sizes.
fn existing(dir: &Path) -> BTreeMap<String, u64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let generated = name.starts_with("gds-gate-s") && name.ends_with(".bin");
            let size = entry.metadata().ok().filter(|m| m.is_file())?.len();
            generated.then_some((name, size))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_mount_point_wins_and_escapes_are_undone() {
        // The proc(5) example, plus constructed lines for a nested mount and an escaped space.
        let text = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
1 0 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
2 1 0:30 / /data\\040dir rw,nosuid - tmpfs tmpfs rw,size=1024k
3 1 259:2 / /data\\040dir/nvme rw - xfs /dev/nvme0n1p2 rw,attr2
";
        let entries = parse_mountinfo(text);
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0].device, "98:0");
        assert_eq!(entries[0].options, vec!["rw", "noatime"]);
        assert_eq!(entries[0].super_options, vec!["rw", "errors=continue"]);
        let at = |path: &str| find_mount(&entries, Path::new(path)).map(|e| e.fs_type.as_str());
        assert_eq!(at("/home/user"), Some("ext4"));
        assert_eq!(at("/data dir/x"), Some("tmpfs"));
        assert_eq!(at("/data dir/nvme/set"), Some("xfs"));
        assert_eq!(at("/data dirt"), Some("ext4"));
    }

    #[test]
    fn a_missing_dir_is_probed_at_its_existing_ancestor() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("a/b/c");
        let facts = data_dir(&dir);
        assert!(!facts.exists);
        let probed = facts.probed.known().cloned().unwrap_or_default();
        assert_eq!(Path::new(&probed), temp.path().canonicalize().unwrap());
        assert!(facts.existing_files.is_empty());
    }
}
