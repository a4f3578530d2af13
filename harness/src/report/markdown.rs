//! `summary.md`: the run in one table, for the CI step summary and for people.

use std::fmt::Write;

use super::Report;
use crate::hex;
use crate::record::Status;

pub fn render(report: &Report) -> String {
    let totals = report.totals;
    let verdict = if totals.failed > 0 {
        "FAILED"
    } else if totals.passed == 0 {
        "NOTHING RAN"
    } else {
        "passed"
    };
    let mut out = String::new();
    let _ = writeln!(out, "## gds-gate: {verdict}\n");
    let _ = writeln!(
        out,
        "{} passed, {} failed, {} ignored, {} filtered out — host `{}`, {:.1} s\n",
        totals.passed,
        totals.failed,
        totals.ignored,
        totals.filtered_out,
        report.host.hostname,
        report.duration_seconds
    );
    for note in &report.notes {
        let _ = writeln!(out, "> {note}\n");
    }
    let _ = writeln!(
        out,
        "| trial | result | GB/s (median) | min–max | path | checksum | note |"
    );
    let _ = writeln!(out, "|---|---|---:|---|---|---|---|");
    for trial in &report.trials {
        let result = match trial.status {
            Status::Passed => "ok",
            Status::Failed => "**FAILED**",
            Status::Ignored => "ignored",
        };
        let (median, range, path, checksum) = match &trial.measurement {
            Some(m) if !m.gbps.is_empty() => {
                let min = m.gbps.iter().copied().fold(f64::INFINITY, f64::min);
                let max = m.gbps.iter().copied().fold(0.0, f64::max);
                (
                    m.median_gbps.map_or("-".into(), |g| format!("{g:.2}")),
                    format!("{min:.2}–{max:.2}"),
                    m.path.clone(),
                    m.integrity.checksum.map_or("-".into(), hex::format),
                )
            }
            _ => Default::default(),
        };
        let note = trial.reason.as_deref().unwrap_or("").replace('|', "\\|");
        let _ = writeln!(
            out,
            "| `{}` | {result} | {median} | {range} | {path} | {checksum} | {note} |",
            trial.name
        );
    }
    out.push('\n');
    out
}
