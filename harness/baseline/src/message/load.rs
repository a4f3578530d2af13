//! The words of a load whose set-up step takes longer than its baseline
//! ([`Judgement::LoadCostlier`](super::Judgement::LoadCostlier)).

use super::rise::Rise;
use crate::cost::Cost;
use crate::decision::Throughput;
use crate::judgement::Expected;
use gds_model::record::{LoadStep, short_time};

/// What the words quote: the judged step, its cost and the whole load's throughput.
pub(super) struct LoadFacts<'a> {
    pub step: LoadStep,
    pub cost: &'a Cost,
    pub throughput: &'a Throughput,
    pub entry: &'a Expected,
}

/// The headline and the message; `cause` is the likely cause's words ([`likely_cause`] when the
/// runner's fingerprint is unchanged).
pub(super) fn words(
    rate: gds_model::units::Rate,
    trial: &str,
    facts: &LoadFacts<'_>,
    cause: &str,
    bless: &str,
) -> (String, String) {
    let step = facts.step.name();
    let rise = Rise {
        headline: format!("slower to load: {step}"),
        subject: format!("a load's {step} takes"),
        compared: ("as long as", "longer"),
        baseline: "its baseline's time",
        whole: "the whole load",
        tolerance: "load",
        shown: short_time,
        per: ("load", "loads"),
        accepted: "set-up time",
        cost: facts.cost,
        throughput: facts.throughput,
        entry: facts.entry,
    };
    super::rise::words(rate, trial, &rise, cause, bless)
}

pub(super) fn likely_cause(step: LoadStep) -> &'static str {
    match step {
        LoadStep::FirstByte => {
            "opening, registering or the first read call takes longer: a libcufile or driver upgrade, a changed cufile.json, or the file system's open and first-read path; the `open` and `buffer registration` figures beside it say which part grew"
        }
        LoadStep::Open => {
            "opening the files (and `cuFileHandleRegister` where the reader registers them) takes longer: a libcufile or nvidia-fs upgrade, a changed cufile.json, or the file system's metadata path (a parallel file system's metadata server)"
        }
        LoadStep::Register => {
            "`cuFileBufRegister` takes longer: a libcufile, nvidia-fs or GPU driver upgrade, or a changed cufile.json (`max_device_pinned_mem_size_kb`, the BAR1 it maps)"
        }
    }
}
