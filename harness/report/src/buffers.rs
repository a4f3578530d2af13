//! Registered against unregistered device buffers, in the same run: each trial that reads into a
//! buffer registered with `cuFileBufRegister` beside the trial of the same reader that reads the
//! same file the same way into an unregistered one, and the ratio of their medians. cuFile
//! schedules the two differently (into an unregistered buffer it keeps fewer pieces in flight), so
//! a stack that changes either schedule moves the ratio; each trial is also judged against its
//! own baseline. Shown, never a warning: which is faster depends on the stack and the runner.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use gds_model::record::TrialRecord;
use gds_model::scenario::{BufferKind, Reader};
use gds_model::units::Rate;
use gds_runner::escape::markdown_code as code;

/// A registered buffer's trial and the unregistered one's of the same reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegisteredVsUnregistered {
    pub reader: Reader,
    /// Requests in flight, as the trials' read shape counts them (threads for cufile and KvikIO).
    pub in_flight: u32,
    pub registered_trial: String,
    pub unregistered_trial: String,
    pub registered_gbps: Option<f64>,
    pub unregistered_gbps: Option<f64>,
    /// The registered trial's median over the unregistered one's; absent where a side measured
    /// nothing.
    pub ratio: Option<f64>,
}

/// The pairs of `trials`, in the order of their registered trials.
pub fn pairs(trials: &[TrialRecord]) -> Vec<RegisteredVsUnregistered> {
    let twin = |registered: &TrialRecord, other: &TrialRecord| {
        let (a, b) = (&registered.spec, &other.spec);
        b.buffer == BufferKind::Unregistered
            && b.reader == a.reader
            && b.compat_mode == a.compat_mode
            && b.cufile == a.cufile
            && b.read_shape() == a.read_shape()
    };
    let median = |trial: &TrialRecord| crate::direct::measured(trial).ok();
    trials
        .iter()
        .filter(|t| t.spec.buffer == BufferKind::Registered)
        .filter_map(|registered| {
            let shape = registered.spec.read_shape()?;
            let other = trials.iter().find(|t| twin(registered, t))?;
            let (r, u) = (median(registered), median(other));
            Some(RegisteredVsUnregistered {
                reader: registered.spec.reader,
                in_flight: shape.in_flight,
                registered_trial: registered.name.clone(),
                unregistered_trial: other.name.clone(),
                registered_gbps: r,
                unregistered_gbps: u,
                ratio: r.zip(u).filter(|(_, u)| *u > 0.0).map(|(r, u)| r / u),
            })
        })
        .collect()
}

/// summary.md's section: one row per pair; empty when the run has no pair with a ratio.
pub(crate) fn markdown(pairs: &[RegisteredVsUnregistered], rate: Rate) -> String {
    if pairs.iter().all(|p| p.ratio.is_none()) {
        return String::new();
    }
    let label = rate.label();
    let mut out = format!(
        "### Registered vs unregistered buffers\n\nThe same reads into a device buffer registered with `cuFileBufRegister` and into an unregistered one: the ratio of their median {label}. A stack that changes how cuFile schedules either moves it.\n\n| reader | in flight | registered {label} | unregistered {label} | ratio | registered trial | unregistered trial |\n|---|---:|---:|---:|---:|---|---|\n"
    );
    let number = |gbps: Option<f64>| gbps.map_or("-".into(), |g| rate.number(g, 2));
    for pair in pairs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            pair.reader.name(),
            pair.in_flight,
            number(pair.registered_gbps),
            number(pair.unregistered_gbps),
            crate::direct::ratio_text(pair.ratio),
            code(&pair.registered_trial),
            code(&pair.unregistered_trial),
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_baseline::fixtures;
    use gds_model::scenario;

    #[test]
    fn each_registered_trial_beside_its_unregistered_twin_with_their_ratio() {
        let suite = scenario::parse(
            std::path::Path::new("s.yaml"),
            "suite: s\nscenarios:\n  - name: b\n    files: { size: 64MiB }\n    reader: [cufile, kvikio]\n    buffer: [registered, unregistered]\n    nthreads: [1, 4]\n",
        )
        .unwrap();
        let trials: Vec<TrialRecord> = scenario::expand(&suite)
            .into_iter()
            .map(|spec| {
                let gbps = if spec.buffer == BufferKind::Registered {
                    3.0
                } else {
                    2.0
                };
                let mut record =
                    fixtures::passed(&spec.name, &[gbps], "cufile-posix", fixtures::CHECKSUM);
                record.spec = spec;
                record
            })
            .collect();
        let pairs = pairs(&trials);
        assert_eq!(pairs.len(), 4, "{pairs:#?}");
        for pair in &pairs {
            assert_eq!(pair.ratio, Some(1.5));
            assert!(pair.registered_trial.contains("buffer=registered"));
            assert_eq!(
                pair.unregistered_trial,
                pair.registered_trial
                    .replace("buffer=registered", "buffer=unregistered")
            );
        }
        assert_eq!(
            pairs
                .iter()
                .map(|p| (p.reader, p.in_flight))
                .collect::<Vec<_>>(),
            [
                (Reader::Cufile, 1),
                (Reader::Cufile, 4),
                (Reader::Kvikio, 1),
                (Reader::Kvikio, 4)
            ]
        );
        let md = markdown(&pairs, Rate::Gb);
        assert!(md.contains("| cufile | 4 | 3.00 | 2.00 | 1.50 |"), "{md}");
        assert_eq!(markdown(&[], Rate::Gb), "");
    }
}
