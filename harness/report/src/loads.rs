//! summary.md's loads (`op: load`): per trial, the whole load's time and what the user waits for
//! before it, the median of the measured passes of each.

use std::fmt::Write as _;

use gds_model::numbers::median;
use gds_model::record::{LoadStep, TrialRecord, short_time};
use gds_model::units::Rate;
use gds_runner::escape::markdown_code as code;

/// One row per trial that loaded; empty when none did.
pub(crate) fn markdown(trials: &[TrialRecord], rate: Rate) -> String {
    let loads: Vec<_> = trials
        .iter()
        .filter_map(|trial| {
            let m = trial.measurement.as_ref()?;
            Some((trial, m, m.load.as_ref()?))
        })
        .collect();
    if loads.is_empty() {
        return String::new();
    }
    let label = rate.label();
    let mut out = format!(
        "### Loads\n\nEach pass opens and registers the files again and reads them whole, as a model loader does: the load's time includes opening and registering; the first byte is the end of the first read call. Medians of the measured passes.\n\n| trial | files | load | {label} | first byte | open | buffer registration |\n|---|---:|---:|---:|---:|---:|---:|\n"
    );
    let time = |values: &[f64]| {
        if values.is_empty() {
            "-".to_string()
        } else {
            short_time(median(values))
        }
    };
    for (trial, m, load) in loads {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            code(&trial.name),
            m.files.len(),
            time(&m.seconds),
            m.median_gbps.map_or("-".into(), |g| rate.number(g, 2)),
            time(load.of(LoadStep::FirstByte)),
            time(load.of(LoadStep::Open)),
            time(load.of(LoadStep::Register)),
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_baseline::fixtures;

    #[test]
    fn a_load_gets_a_row_of_medians_and_other_trials_none() {
        let mut load = fixtures::passed("s::load", &[2.0, 2.1, 1.9], "nvfs", fixtures::CHECKSUM);
        let m = load.measurement.as_mut().unwrap();
        m.seconds = vec![0.5, 0.52, 0.48];
        m.load = Some(gds_model::record::LoadFigures {
            open_seconds: vec![0.002, 0.003, 0.0025],
            register_seconds: Vec::new(),
            first_byte_seconds: vec![0.0081, 0.0079, 0.0080],
        });
        let read = fixtures::passed("s::read", &[2.0], "nvfs", fixtures::CHECKSUM);
        let md = markdown(&[read.clone(), load], Rate::Gb);
        // The fixture lists no files.
        assert!(
            md.contains("| `s::load` | 0 | 500.0 ms | 2.00 | 8.0 ms | 2.5 ms | - |"),
            "{md}"
        );
        assert!(!md.contains("s::read"), "{md}");
        assert_eq!(markdown(&[read], Rate::Gb), "");
    }
}
