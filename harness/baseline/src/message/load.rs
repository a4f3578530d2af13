//! The words of a load whose set-up step takes longer than its baseline
//! ([`Judgement::LoadCostlier`](super::Judgement::LoadCostlier)).

use super::rise::Rise;
use crate::cost::Cost;
use crate::decision::Throughput;
use crate::judgement::Expected;
use gds_model::record::{LoadStep, short_time};

/// The words' facts: the judged step, its cost and the whole load's throughput (the likely cause
/// is [`likely_cause`] when the runner's fingerprint is unchanged).
pub(super) fn rise<'a>(
    step: LoadStep,
    cost: &'a Cost,
    throughput: &'a Throughput,
    entry: &'a Expected,
) -> Rise<'a> {
    let step = step.name();
    Rise {
        headline: format!("slower to load: {step}"),
        subject: format!("a load's {step} takes"),
        compared: ("as long as", "longer"),
        baseline: "its baseline's time",
        whole: "the whole load",
        tolerance: "load",
        shown: short_time,
        per: ("load", "loads"),
        accepted: "set-up time",
        cost,
        throughput,
        entry,
    }
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
