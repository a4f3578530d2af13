//! The runner's fingerprint: the facts about the stack that a throughput figure depends on,
//! stored with each baseline so that a changed driver or kernel is named as the likely cause of a
//! difference instead of surfacing as a mystery slowdown.

use std::fmt;

use serde::{Deserialize, Serialize};

use gds_runner::host::HostFacts;

/// Every fact may be unknown: a CPU-only run learns nothing about KvikIO, a container may hide
/// `/proc/driver/nvidia`. The gate fills what it can from the host ([`super::probe`]) and the
/// workers (GPU model, CUDA, libcufile and KvikIO versions).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Fingerprint {
    pub gpu_model: Option<String>,
    pub gpu_count: Option<u32>,
    /// NVIDIA kernel driver version, e.g. `580.159`.
    pub driver: Option<String>,
    pub cuda: Option<String>,
    pub libcufile: Option<String>,
    pub kvikio: Option<String>,
    /// PyTorch's version, from the `torch` trials (e.g. `2.11.0+cu130`).
    pub torch: Option<String>,
    pub nvidia_fs_loaded: bool,
    pub nvidia_fs_version: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// File system type of the data directory, e.g. `ext4`, `xfs`, `lustre`.
    pub data_dir_fs: Option<String>,
    /// Device (mount source) of the data directory, e.g. `/dev/nvme0n1p1`, `/dev/md0`.
    pub data_dir_device: Option<String>,
    /// Hash of the `cufile.json` in effect, as `fnv1a64:0x…` (see [`hash_bytes`]).
    pub cufile_json_hash: Option<String>,
}

/// How a fact differs between the baseline and this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Known on both sides and different: the stack changed.
    Changed,
    /// Known in the baseline, unknown in this run (e.g. no KvikIO trial ran). Not a change; bless
    /// keeps the baseline's value.
    NotObserved,
    /// Unknown in the baseline, known now. Not a change; bless records it.
    Learned,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FieldChange {
    pub field: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub kind: ChangeKind,
}

impl fmt::Display for FieldChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |value: &Option<String>| value.clone().unwrap_or_else(|| "unknown".into());
        match self.kind {
            ChangeKind::Changed => write!(
                f,
                "{}: {} → {}",
                self.field,
                show(&self.from),
                show(&self.to)
            ),
            ChangeKind::NotObserved => write!(
                f,
                "{}: {} (not observed in this run)",
                self.field,
                show(&self.from)
            ),
            ChangeKind::Learned => write!(f, "{}: {} (new fact)", self.field, show(&self.to)),
        }
    }
}

impl Fingerprint {
    /// The facts `HostFacts` already holds: driver and kernel. The rest is left unknown.
    pub fn from_host(host: &HostFacts) -> Fingerprint {
        Fingerprint {
            driver: host.nvidia_driver_version.clone(),
            kernel: Some(host.kernel.clone()).filter(|kernel| kernel != "unknown"),
            ..Fingerprint::default()
        }
    }

    /// `(field name, value as shown)`, in the order of the file.
    pub fn fields(&self) -> [(&'static str, Option<String>); 13] {
        [
            ("gpu_model", self.gpu_model.clone()),
            ("gpu_count", self.gpu_count.map(|n| n.to_string())),
            ("driver", self.driver.clone()),
            ("cuda", self.cuda.clone()),
            ("libcufile", self.libcufile.clone()),
            ("kvikio", self.kvikio.clone()),
            ("torch", self.torch.clone()),
            ("nvidia_fs_loaded", Some(self.nvidia_fs_loaded.to_string())),
            ("nvidia_fs_version", self.nvidia_fs_version.clone()),
            ("kernel", self.kernel.clone()),
            ("data_dir_fs", self.data_dir_fs.clone()),
            ("data_dir_device", self.data_dir_device.clone()),
            ("cufile_json_hash", self.cufile_json_hash.clone()),
        ]
    }

    /// This run's facts over the baseline's: what the run did not observe keeps its old value.
    pub fn merged_over(&self, old: &Fingerprint) -> Fingerprint {
        let pick = |new: &Option<String>, old: &Option<String>| new.clone().or_else(|| old.clone());
        Fingerprint {
            gpu_model: pick(&self.gpu_model, &old.gpu_model),
            gpu_count: self.gpu_count.or(old.gpu_count),
            driver: pick(&self.driver, &old.driver),
            cuda: pick(&self.cuda, &old.cuda),
            libcufile: if partly_observed(&old.libcufile, &self.libcufile) {
                old.libcufile.clone()
            } else {
                pick(&self.libcufile, &old.libcufile)
            },
            kvikio: pick(&self.kvikio, &old.kvikio),
            torch: pick(&self.torch, &old.torch),
            nvidia_fs_loaded: self.nvidia_fs_loaded,
            nvidia_fs_version: pick(&self.nvidia_fs_version, &old.nvidia_fs_version),
            kernel: pick(&self.kernel, &old.kernel),
            data_dir_fs: pick(&self.data_dir_fs, &old.data_dir_fs),
            data_dir_device: pick(&self.data_dir_device, &old.data_dir_device),
            cufile_json_hash: pick(&self.cufile_json_hash, &old.cufile_json_hash),
        }
    }
}

/// Every field that differs from `baseline` to `run`, in field order.
pub fn diff(baseline: &Fingerprint, run: &Fingerprint) -> Vec<FieldChange> {
    baseline
        .fields()
        .into_iter()
        .zip(run.fields())
        .filter(|((_, from), (_, to))| from != to)
        .map(|((field, from), (_, to))| {
            let kind = match (&from, &to) {
                (Some(_), None) => ChangeKind::NotObserved,
                _ if field == "libcufile" && partly_observed(&from, &to) => ChangeKind::NotObserved,
                (None, Some(_)) => ChangeKind::Learned,
                _ => ChangeKind::Changed,
            };
            FieldChange {
                field: field.to_string(),
                from,
                to,
                kind,
            }
        })
        .collect()
}

/// Whether a run that loaded only some of the libcufiles the baseline names (`1.15 (a); 1.15
/// (b)`, from workers of several kinds) saw nothing else: a filtered run whose trials all load one
/// of them says `1.15`, which is not a change of library.
fn partly_observed(baseline: &Option<String>, run: &Option<String>) -> bool {
    let (Some(baseline), Some(run)) = (baseline, run) else {
        return false;
    };
    // `version (path)` or a bare version, `; `-separated.
    let libraries = |value: &str| -> Vec<(String, Option<String>)> {
        value
            .split("; ")
            .map(|entry| match entry.split_once(" (") {
                Some((version, path)) => (version.into(), Some(path.trim_end_matches(')').into())),
                None => (entry.into(), None),
            })
            .collect()
    };
    let blessed = libraries(baseline);
    blessed.len() > 1
        && libraries(run).iter().all(|(version, path)| {
            blessed
                .iter()
                .any(|(v, p)| v == version && (path.is_none() || path == p))
        })
}

/// Only the real changes (known on both sides and different).
pub fn changed(changes: &[FieldChange]) -> impl Iterator<Item = &FieldChange> {
    changes
        .iter()
        .filter(|change| change.kind == ChangeKind::Changed)
}

/// A stable 64-bit hash of a file's bytes: FNV-1a, written `fnv1a64:0x…`. It only has to notice
/// that `cufile.json` changed between two runs of one runner, which needs no cryptographic
/// strength and no extra dependency; the prefix lets a later version switch to SHA-256 without
/// mistaking old values for new ones.
pub fn hash_bytes(bytes: &[u8]) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = bytes.iter().fold(OFFSET, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    });
    format!("fnv1a64:{}", gds_model::hex::format(hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Fingerprint {
        Fingerprint {
            gpu_model: Some("NVIDIA H200".into()),
            gpu_count: Some(1),
            driver: Some("570.86".into()),
            kvikio: Some("25.06".into()),
            kernel: Some("6.8.0".into()),
            ..Fingerprint::default()
        }
    }

    #[test]
    fn a_run_that_loaded_one_of_the_blessed_libcufiles_changed_nothing() {
        let blessed = Fingerprint {
            libcufile: Some("1.15 (/venv/libcufile.so.0); 1.15 (/cuda/libcufile.so.1.15.1)".into()),
            ..Fingerprint::default()
        };
        let run = |libcufile: &str| Fingerprint {
            libcufile: Some(libcufile.into()),
            ..Fingerprint::default()
        };
        for partial in ["1.15", "1.15 (/cuda/libcufile.so.1.15.1)"] {
            let changes = diff(&blessed, &run(partial));
            assert_eq!(changes[0].kind, ChangeKind::NotObserved, "{partial}");
            assert_eq!(run(partial).merged_over(&blessed), blessed);
        }
        for other in [
            "1.16",
            "1.15 (/venv/libcufile.so.0); 1.16 (/cuda/libcufile.so.1.16)",
        ] {
            assert_eq!(
                diff(&blessed, &run(other))[0].kind,
                ChangeKind::Changed,
                "{other}"
            );
        }
        // A single library blessed and another one seen is a change, version alike or not.
        assert_eq!(
            diff(&run("1.15"), &run("1.16"))[0].kind,
            ChangeKind::Changed
        );
    }

    #[test]
    fn diff_names_changed_unobserved_and_learned_facts() {
        let old = sample();
        let new = Fingerprint {
            driver: Some("580.159".into()),
            kvikio: None,
            torch: None,
            cuda: Some("13.0".into()),
            nvidia_fs_loaded: true,
            ..sample()
        };
        let changes = diff(&old, &new);
        let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "driver: 570.86 → 580.159",
                "cuda: 13.0 (new fact)",
                "kvikio: 25.06 (not observed in this run)",
                "nvidia_fs_loaded: false → true",
            ]
        );
        let real: Vec<&str> = changed(&changes).map(|c| c.field.as_str()).collect();
        assert_eq!(real, ["driver", "nvidia_fs_loaded"]);
        assert!(diff(&old, &old).is_empty());
    }

    #[test]
    fn merge_keeps_what_the_run_did_not_see() {
        let run = Fingerprint {
            kvikio: None,
            torch: None,
            driver: Some("580.159".into()),
            ..sample()
        };
        let merged = run.merged_over(&sample());
        assert_eq!(merged.kvikio.as_deref(), Some("25.06"));
        assert_eq!(merged.driver.as_deref(), Some("580.159"));
    }

    #[test]
    fn hash_is_fnv1a() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(hash_bytes(b""), "fnv1a64:0xcbf29ce484222325");
        assert_eq!(hash_bytes(b"a"), "fnv1a64:0xaf63dc4c8601ec8c");
    }
}
