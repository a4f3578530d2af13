//! Turns cuFile's structs, sent as bytes by the Python worker, into the same evidence the Rust
//! worker records: one decoder, with the layout chosen by the library's version, for both workers.

use crate::gpu::cufile::{DriverProperties, StatsLayout, Version};
use crate::hex;
use crate::record::Measurement;
use crate::scenario::TrialSpec;

use super::protocol::{CufileEvidence, RawCufile};

pub fn cufile_evidence(raw: RawCufile, spec: &TrialSpec, m: &mut Measurement) {
    let version = Version(raw.version);
    let mut evidence = CufileEvidence {
        library: raw.library,
        version: version.to_string(),
        loaded_copies: raw.loaded_copies,
        properties: raw
            .properties_hex
            .as_deref()
            .and_then(hex::decode_bytes)
            .and_then(|bytes| DriverProperties::decode(&bytes)),
        stats: None,
        stats_unavailable: raw.error,
        requested_bytes: m.bytes_per_repetition * u64::from(spec.warmup + spec.repetitions),
    };
    let decode = |text: &Option<String>| text.as_deref().and_then(hex::decode_bytes);
    match (
        StatsLayout::for_version(version),
        decode(&raw.stats_before_hex),
        decode(&raw.stats_after_hex),
    ) {
        (Ok(layout), Some(before), Some(after)) => {
            evidence.stats = Some(layout.decode(&after).since(&layout.decode(&before)))
        }
        (Err(error), _, _) => evidence.stats_unavailable = Some(error.to_string()),
        _ => {
            evidence
                .stats_unavailable
                .get_or_insert_with(|| "the worker sent no cuFile statistics".into());
        }
    }
    m.cufile = Some(evidence);
}

/// The path of a KvikIO trial as KvikIO's and cuFile's counters tell it together: `GDS` in KvikIO
/// only means "handed to cuFile", and cuFile's counters say whether cuFile then used nvidia-fs,
/// P2PDMA or its own POSIX compat mode.
pub fn kvikio_path(m: &Measurement) -> Option<String> {
    let kvikio = m.kvikio.as_ref()?;
    let gds = kvikio.backends.gds().bytes_transferred;
    let host: u64 = kvikio
        .backends
        .host_backends()
        .map(|(_, totals)| totals.bytes_transferred)
        .sum();
    let cufile = m
        .cufile
        .as_ref()
        .and_then(|c| c.stats.as_ref())
        .map(|stats| {
            let sum = |f: fn(&crate::gpu::cufile::GpuCounters) -> u64| {
                stats.gpus.iter().map(f).sum::<u64>()
            };
            (
                sum(|g| g.n_nvfs_reads),
                sum(|g| g.n_p2p_reads),
                sum(|g| g.n_posix_reads),
            )
        });
    Some(match (gds, host, cufile) {
        (0, 0, _) => "kvikio (no reads counted)".into(),
        (0, _, _) => "kvikio-posix".into(),
        (_, 0, Some((_, 0, 0))) => "nvfs".into(),
        (_, 0, Some((0, _, 0))) => "p2p".into(),
        (_, 0, Some((0, 0, _))) => "cufile-posix".into(),
        (_, 0, None) => "gds (unconfirmed: no cuFile statistics)".into(),
        _ => "mixed".into(),
    })
}
