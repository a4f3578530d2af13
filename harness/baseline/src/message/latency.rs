//! The words of a trial with writing ranks whose reads wait longer than at bless
//! ([`Judgement::LatencyHigher`](super::Judgement::LatencyHigher)).

use super::load::rise;
use super::{gbps, percent};
use crate::cost::Cost;
use crate::decision::Throughput;
use crate::judgement::Expected;
use gds_model::cost::{Percentile, format_micros};

/// What the words quote: the judged percentile, its cost and the trial's throughput.
pub(super) struct LatencyFacts<'a> {
    pub percentile: Percentile,
    pub cost: &'a Cost,
    pub throughput: &'a Throughput,
    pub entry: &'a Expected,
}

/// The headline and the message; `cause` is the likely cause's words.
pub(super) fn words(
    trial: &str,
    facts: &LatencyFacts<'_>,
    cause: &str,
    bless: &str,
) -> (String, String) {
    let (p, cost, t) = (facts.percentile.name(), facts.cost, facts.throughput);
    let confirmed = cost.confirmation_ratios();
    let headline = format!(
        "slower reads beside writes: {p} read latency {} vs {} ({}){}",
        format_micros(cost.run_median()),
        format_micros(cost.level()),
        rise(cost.ratio()),
        match confirmed.len() {
            0 => String::new(),
            n => format!(", confirmed by {n} more run(s)"),
        }
    );
    let confirmations = confirmed
        .iter()
        .map(|r| format!("{} ({})", format_micros(r * cost.level()), rise(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    let message = format!(
        "{trial}: the reading rank's {p} read-call latency beside the writing ranks is {} its baseline's, beyond the latency tolerance of {} and beyond this runner's run-to-run spread (higher above {})\n  expected: about {} per pass, the trial at {}, path `{}`\n  seen:     {} median of {} passes, the trial at {}{}\n  likely cause: {cause}\n  next: find and fix the cause; if the new latency is intended, bless it on this runner:\n        {bless}",
        rise(cost.ratio()),
        percent(cost.tolerance),
        format_micros(cost.level() * cost.costlier_above()),
        format_micros(cost.level()),
        gbps(t.level),
        facts.entry.path,
        format_micros(cost.run_median()),
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

pub(super) const LIKELY_CAUSE: &str = "the reads wait longer behind the writes: a libcufile or driver upgrade, a changed cufile.json (the POSIX pool, `execution.max_io_threads`), or the write path of the file system or disk (write-back, a full write cache, a deeper queue)";
