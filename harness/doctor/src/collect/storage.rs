//! The data dir's storage: the mount holding it (`/proc/self/mountinfo`), the block device under
//! it (`/sys/dev/block`), whether `O_DIRECT` works there (tried, not assumed), udev's record of
//! the device (which cuFile needs to register a file), free space and the generated files
//! already present.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::display;
use crate::facts::{BlockDevice, DataDirFacts, DirectIo, Fact, Mount, UdevRecord};
use gds_runner::data::DataError;
use gds_runner::mounts;

pub(super) fn data_dir(configured: &Path) -> DataDirFacts {
    let absolute = match configured.is_absolute() {
        true => configured.to_path_buf(),
        false => std::env::current_dir()
            .map(|cwd| cwd.join(configured))
            .unwrap_or_else(|_| configured.to_path_buf()),
    };
    let exists = absolute.is_dir();
    let probed = mounts::nearest_existing(&absolute);
    let mount = match &probed {
        Ok(dir) => mount_of(dir),
        Err(why) => Fact::because(why),
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
        Err(why) => (Fact::because(why), Fact::because(why)),
    };
    DataDirFacts {
        path: display(configured),
        exists,
        probed: match probed {
            Ok(dir) => Fact::Known(display(&dir)),
            Err(why) => Fact::because(&why),
        },
        mount,
        block,
        o_direct,
        run_udev: gds_runner::host::gds().run_udev,
        udev,
        free_bytes,
        existing_files: if exists {
            existing(&absolute)
        } else {
            BTreeMap::new()
        },
    }
}

fn mount_of(dir: &Path) -> Fact<Mount> {
    match mounts::mount_holding(dir) {
        Ok(entry) => Fact::Known(Mount {
            mount_point: entry.mount_point,
            fs_type: entry.fs_type,
            source: entry.source,
            device: entry.device,
            options: entry.options,
            super_options: entry.super_options,
        }),
        Err(why) => Fact::because(&why),
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
    // A RAID or device-mapper volume hangs off no device of its own: its first member's node.
    let numa_node = std::iter::once(&disk).chain(&members).find_map(|name| {
        let device = PathBuf::from("/sys/block").join(name).join("device");
        super::numa_node_above(&device.canonicalize().ok()?)
    });
    Fact::Known(BlockDevice {
        name,
        disk,
        driver,
        members,
        nvme,
        numa_node,
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

fn free_space(dir: &Path) -> Result<u64, DataError> {
    gds_runner::data::free_space(dir).map_err(|source| DataError::FreeSpace {
        dir: dir.to_path_buf(),
        source,
    })
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
