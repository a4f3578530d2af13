//! Turns cuFile's structs, sent as bytes by the Python worker, into the same evidence the Rust
//! worker records: one decoder, with the layout chosen by the library's version, for both workers.

use gds_model::cufile_abi::{DriverProperties, StatsLayout, Version};
use gds_model::hex;
use gds_model::protocol::RawCufile;
use gds_model::record::{CufileEvidence, Measurement};
use gds_model::scenario::TrialSpec;

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
        // KvikIO's trials take their latency from KvikIO's own statistics.
        measured_stats: None,
        stats_unavailable: raw.error,
        requested_bytes: m.bytes_per_repetition.saturating_mul(spec.passes()),
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
