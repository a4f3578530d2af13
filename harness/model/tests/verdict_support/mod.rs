//! Evidence builders shared by the verdict tests: the H200 rows and cuFile counters.

use std::collections::BTreeMap;

use gds_model::evidence::{
    BackendTotals, CufileGpuCounters, CufileLogFindings, Evidence, KvikioBackends, NvfsEvidence,
};
use gds_model::scenario::{CompatMode, Reader};

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
/// Constructed after the H200 line in fixtures/cufile_log_h200_no_udev_record.txt.
pub const UDEV_LOG: &str = " 02-12-2025 09:10:11:120 [pid=4242 tid=4242] ERROR  cufio-udev:67 udev property not found: ID_FS_USAGE vda\n";

pub fn gpu0(total: u64, nvfs: u64, p2p: u64, posix: u64, bytes: u64) -> CufileGpuCounters {
    CufileGpuCounters {
        gpu: 0,
        n_total_reads: total,
        n_nvfs_reads: nvfs,
        n_p2p_reads: p2p,
        n_posix_reads: posix,
        read_bytes: bytes,
        ..CufileGpuCounters::default()
    }
}

pub fn backends(list: &[(&str, u64, u64)]) -> KvikioBackends {
    KvikioBackends {
        by_backend: list
            .iter()
            .map(|(name, ops, bytes)| {
                (
                    name.to_string(),
                    BackendTotals {
                        num_ops: *ops,
                        bytes_transferred: *bytes,
                    },
                )
            })
            .collect::<BTreeMap<_, _>>(),
    }
}

/// A KvikIO trial on the H200: 1 GiB, 4 MiB tasks, no nvidia-fs.
pub fn h200(
    compat: CompatMode,
    kvikio: &[(&str, u64, u64)],
    cufile: CufileGpuCounters,
) -> Evidence {
    let mut e = Evidence::new(Reader::Kvikio, GIB);
    e.kvikio = Some(backends(kvikio));
    e.cufile = Some(vec![cufile]);
    e.compat_mode = Some(compat);
    e.nvidia_fs_loaded = Some(false);
    e.nvfs = Some(NvfsEvidence::Unavailable {
        note: "no /proc/driver/nvidia-fs/stats (nvidia-fs is not loaded)".into(),
    });
    e.run_udev = Some(true);
    e.gds_threshold = Some(16 << 10);
    e.task_size = Some(4 * MIB);
    e.smallest_read = Some(4 * MIB);
    e.cufile_log = Some(CufileLogFindings::scan(""));
    e
}

pub fn cufile_trial(counters: CufileGpuCounters) -> Evidence {
    let mut e = Evidence::new(Reader::Cufile, GIB);
    e.cufile = Some(vec![counters]);
    e
}

pub fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
