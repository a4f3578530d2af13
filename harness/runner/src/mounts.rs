//! Which mount holds a path, from `/proc/self/mountinfo`: the doctor's data-dir row and the
//! baseline fingerprint both ask.

use std::io;
use std::path::{Path, PathBuf};

/// Why the mount holding a path is not known.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("cannot resolve {}", path.display())]
    Resolve {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no existing directory above {}", .0.display())]
    NoExistingDir(PathBuf),
    #[error("cannot read /proc/self/mountinfo")]
    MountInfo(#[source] io::Error),
    #[error("no mount in /proc/self/mountinfo holds {}", .0.display())]
    NoMount(PathBuf),
}

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

/// The directory itself or, when it does not exist yet, the ancestor it will be created in.
pub fn nearest_existing(path: &Path) -> Result<PathBuf, MountError> {
    let dir = path
        .ancestors()
        .find(|candidate| candidate.is_dir())
        .ok_or_else(|| MountError::NoExistingDir(path.to_path_buf()))?;
    dir.canonicalize().map_err(|source| MountError::Resolve {
        path: dir.to_path_buf(),
        source,
    })
}

/// The mount holding `path`, or its nearest existing ancestor when it does not exist yet.
pub fn mount_holding(path: &Path) -> Result<MountEntry, MountError> {
    let absolute = std::path::absolute(path).map_err(|source| MountError::Resolve {
        path: path.to_path_buf(),
        source,
    })?;
    let dir = nearest_existing(&absolute)?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").map_err(MountError::MountInfo)?;
    find_mount(&parse_mountinfo(&text), &dir)
        .cloned()
        .ok_or(MountError::NoMount(dir))
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
}
