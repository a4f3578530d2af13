//! The fingerprint facts the host itself can tell without loading any library: GPUs and driver
//! from `/proc/driver/nvidia`, nvidia-fs from `/sys/module`, the data directory's mount from
//! `/proc/self/mountinfo`, and the `cufile.json` in effect. CUDA, libcufile and KvikIO versions come
//! from the workers.

use std::path::{Path, PathBuf};

use super::fingerprint::{Fingerprint, hash_bytes};
use gds_runner::host::HostFacts;

/// What this host says; the caller adds the workers' facts (`cuda`, `libcufile`, `kvikio`, and a
/// better `gpu_model` if it has one).
pub fn probe(host: &HostFacts, data_dir: &Path) -> Fingerprint {
    let (gpu_model, gpu_count) = gpus(Path::new("/proc/driver/nvidia/gpus"));
    let mount = gds_runner::mounts::mount_holding(data_dir).ok();
    Fingerprint {
        gpu_model,
        gpu_count,
        nvidia_fs_loaded: gds_runner::host::gds().nvidia_fs_loaded,
        nvidia_fs_version: gds_runner::host::gds().nvidia_fs_version.clone(),
        data_dir_fs: mount.as_ref().map(|m| m.fs_type.clone()),
        data_dir_device: mount.map(|m| m.source),
        cufile_json_hash: gds_model::cufile_config::host_config_path()
            .and_then(|(path, _)| std::fs::read(path).ok())
            .map(|b| hash_bytes(&b)),
        ..Fingerprint::from_host(host)
    }
}

/// The first GPU's model and the number of GPUs, from `/proc/driver/nvidia/gpus/*/information`
/// (`Model: \t\t NVIDIA H200`).
fn gpus(dir: &Path) -> (Option<String>, Option<u32>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (None, None);
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    dirs.sort();
    let model = dirs.first().and_then(|first| {
        let text = std::fs::read_to_string(first.join("information")).ok()?;
        model_line(&text)
    });
    (model, u32::try_from(dirs.len()).ok())
}

fn model_line(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("Model:"))
        .map(|model| model.trim().to_string())
        .filter(|model| !model.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The first lines are verbatim from a development VM; the last two are made up to cover a
    // nested mount and the octal escape of a space.
    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683584k
640 27 252:1 / /srv rw,relatime - xfs /dev/md0 rw
641 640 252:16 / /srv/my\\040data rw,relatime - lustre 10.0.0.1@tcp:/fs rw
";

    #[test]
    fn the_longest_mount_point_wins() {
        let entries = gds_runner::mounts::parse_mountinfo(MOUNTINFO);
        let at = |path: &str| {
            let mount = gds_runner::mounts::find_mount(&entries, Path::new(path)).unwrap();
            (mount.fs_type.clone(), mount.source.clone())
        };
        let pair = |fs: &str, source: &str| (fs.to_string(), source.to_string());
        assert_eq!(
            at("/srv/main/target/gds-gate/data"),
            pair("xfs", "/dev/md0")
        );
        assert_eq!(at("/srv/my data/files"), pair("lustre", "10.0.0.1@tcp:/fs"));
        assert_eq!(at("/tmp"), pair("ext4", "/dev/vda"));
        // Path components, not string prefixes: `/srvdata` is not under `/srv`.
        assert_eq!(at("/srvdata"), pair("ext4", "/dev/vda"));
        assert_eq!(at("/srv/mydata"), pair("xfs", "/dev/md0"));
    }

    #[test]
    fn gpu_model_from_the_driver_information_file() {
        let text = "Model: \t\t NVIDIA H200\nIRQ:   \t\t 123\nGPU UUID: \t GPU-0000\n";
        assert_eq!(model_line(text).as_deref(), Some("NVIDIA H200"));
        assert_eq!(model_line("IRQ: 1\n"), None);
    }

    #[test]
    fn probe_on_this_host_finds_the_data_dir_mount() {
        let host = HostFacts::probe();
        let fingerprint = probe(&host, Path::new("target/gds-gate/does-not-exist-yet"));
        assert!(fingerprint.data_dir_fs.is_some(), "{fingerprint:?}");
        assert_eq!(fingerprint.kernel.as_deref(), Some(host.kernel.as_str()));
    }
}
