//! The words of a per-pass figure that rose beyond its baseline: a load's set-up step
//! ([`Judgement::LoadCostlier`](super::Judgement::LoadCostlier)) or the read latency beside
//! writing ranks ([`Judgement::LatencyHigher`](super::Judgement::LatencyHigher)).

use super::{change, gbps, percent};
use crate::cost::Cost;
use crate::decision::Throughput;
use crate::judgement::Expected;
use gds_model::units::Rate;

/// What differs between the figures that rise; the numbers come from `cost`.
pub(super) struct Rise<'a> {
    /// `slower to load: buffer registration`.
    pub headline: String,
    /// `a load's buffer registration takes`: what the message's first sentence says rose.
    pub subject: String,
    /// `("as long as", "longer")`: how the figure compares, as a multiple and as a rise.
    pub compared: (&'static str, &'static str),
    /// `its baseline's time`: what it is compared with.
    pub baseline: &'static str,
    /// `the whole load`: what the throughput is of.
    pub whole: &'static str,
    /// `load`: the name of the tolerance.
    pub tolerance: &'static str,
    /// How a value of the figure is shown (`9.0 ms`).
    pub shown: fn(f64) -> String,
    /// `("load", "loads")`: what one value is of, and several.
    pub per: (&'static str, &'static str),
    /// `set-up time`: what a bless would accept.
    pub accepted: &'static str,
    pub cost: &'a Cost,
    pub throughput: &'a Throughput,
    pub entry: &'a Expected,
}

/// The headline and the message; `cause` is the likely cause's words.
pub(super) fn words(
    rate: Rate,
    trial: &str,
    rise: &Rise<'_>,
    cause: &str,
    bless: &str,
) -> (String, String) {
    let (cost, t, shown) = (rise.cost, rise.throughput, rise.shown);
    let confirmed = cost.confirmation_ratios();
    let headline = format!(
        "{} {} vs {} ({}){}",
        rise.headline,
        shown(cost.run_median()),
        shown(cost.level()),
        ratio(cost.ratio()),
        match confirmed.len() {
            0 => String::new(),
            n => format!(", confirmed by {n} more run(s)"),
        }
    );
    let confirmations = confirmed
        .iter()
        .map(|r| format!("{} ({})", shown(r * cost.level()), ratio(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    let ((one, several), (as_much, more), whole) = (rise.per, rise.compared, rise.whole);
    let message = format!(
        "{trial}: {} {} {}, beyond the {} tolerance of {} and beyond this runner's run-to-run spread ({more} above {})\n  expected: about {} per {one}, {whole} at {}, path `{}`\n  seen:     {} median of {} {several}, {whole} at {}{}\n  likely cause: {cause}\n  next: find and fix the cause; if the new {} is intended, bless it on this runner:\n        {bless}",
        rise.subject,
        times(cost.ratio(), as_much, more),
        rise.baseline,
        rise.tolerance,
        percent(cost.tolerance),
        shown(cost.level() * cost.costlier_above()),
        shown(cost.level()),
        gbps(rate, t.level),
        rise.entry.path,
        shown(cost.run_median()),
        cost.efficiency.run.count,
        gbps(rate, t.run.median),
        if confirmations.is_empty() {
            String::new()
        } else {
            format!("; confirmation run(s): {confirmations}")
        },
        rise.accepted,
    );
    (headline, message)
}

/// `+52.3%`, and from twice on `×952`.
pub(super) fn ratio(ratio: f64) -> String {
    if ratio >= 2.0 {
        format!("×{ratio:.0}")
    } else {
        change(ratio)
    }
}

/// `52.3% longer than`, and from twice on `952× as long as`: a rise of a figure that took
/// microseconds can be thousands of percent.
fn times(ratio: f64, as_much: &str, more: &str) -> String {
    if ratio >= 2.0 {
        format!("{ratio:.0}× {as_much}")
    } else {
        format!("{:.1}% {more} than", (ratio - 1.0) * 100.0)
    }
}
