//! The words of a load whose set-up step takes longer than its baseline
//! ([`Judgement::LoadCostlier`](super::Judgement::LoadCostlier)).

use super::{change, gbps, percent};
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
    trial: &str,
    facts: &LoadFacts<'_>,
    cause: &str,
    bless: &str,
) -> (String, String) {
    let (step, cost, t) = (facts.step.name(), facts.cost, facts.throughput);
    let confirmed = cost.confirmation_ratios();
    let headline = format!(
        "slower to load: {step} {} vs {} ({}){}",
        short_time(cost.run_median()),
        short_time(cost.level()),
        rise(cost.ratio()),
        match confirmed.len() {
            0 => String::new(),
            n => format!(", confirmed by {n} more run(s)"),
        }
    );
    let confirmations = confirmed
        .iter()
        .map(|r| format!("{} ({})", short_time(r * cost.level()), rise(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    let message = format!(
        "{trial}: a load's {step} takes {} its baseline's time, beyond the load tolerance of {} and beyond this runner's run-to-run spread (longer above {})\n  expected: about {} per load, the whole load at {}, path `{}`\n  seen:     {} median of {} loads, the whole load at {}{}\n  likely cause: {cause}\n  next: find and fix the cause; if the new set-up time is intended, bless it on this runner:\n        {bless}",
        longer(cost.ratio()),
        percent(cost.tolerance),
        short_time(cost.level() * cost.costlier_above()),
        short_time(cost.level()),
        gbps(t.level),
        facts.entry.path,
        short_time(cost.run_median()),
        cost.efficiency.run.count,
        gbps(t.run.median),
        if confirmations.is_empty() {
            String::new()
        } else {
            format!("; confirmation run(s): {confirmations}")
        },
    );
    (headline, message)
}

/// `+52.3%`, and from twice on `×952`.
pub(super) fn rise(ratio: f64) -> String {
    if ratio >= 2.0 {
        format!("×{ratio:.0}")
    } else {
        change(ratio)
    }
}

/// `52.3% longer than`, and from twice on `952× as long as`: a rise of a step that took
/// microseconds can be thousands of percent.
fn longer(ratio: f64) -> String {
    if ratio >= 2.0 {
        format!("{ratio:.0}× as long as")
    } else {
        format!("{:.1}% longer than", (ratio - 1.0) * 100.0)
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
