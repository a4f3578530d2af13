//! The doctor's report for people (a table: component, state, evidence, fix; then what the host
//! can meet and the verdict), for CI (JSON), and in short (one line per problem) for the start
//! of every gate run and its report.json.

use super::DoctorReport;
use super::checks::{Can, Outcome};

const COMPONENT: usize = 18;
const STATE: usize = 7;
const EVIDENCE: usize = 64;
const FIX: usize = 56;

/// The table, the expectations, the trials that will not pass, and the verdict.
pub fn table(report: &DoctorReport) -> String {
    let mut out = String::new();
    row(&mut out, "component", "state", "evidence", "fix");
    row(
        &mut out,
        &"-".repeat(COMPONENT),
        &"-".repeat(STATE),
        &"-".repeat(EVIDENCE),
        &"-".repeat(FIX),
    );
    for check in &report.checks {
        row(
            &mut out,
            &check.component,
            check.state.label(),
            &check.evidence,
            check.fix.as_deref().unwrap_or(""),
        );
    }
    out.push_str("\nwhat this host can meet:\n");
    for e in &report.expectations {
        let consequence = e
            .consequence
            .as_ref()
            .map(|c| format!("; {c}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {}: {} — {}{consequence}\n",
            e.subject,
            e.can.word(),
            e.why
        ));
    }
    let notable: Vec<String> = report
        .trials
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::Fail { reason } => Some(format!("  FAIL {}: {reason}", t.name)),
            Outcome::Unknown { reason } => Some(format!("  ?    {}: {reason}", t.name)),
            _ => None,
        })
        .collect();
    if !notable.is_empty() {
        out.push_str("\ntrials that will not pass here:\n");
        for line in notable {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "\nverdict: {}\nfacts: {}\n",
        report.verdict.summary, report.facts.provenance.source
    ));
    out
}

/// The whole report as pretty JSON (facts included, so a CI artifact can be replayed).
pub fn json(report: &DoctorReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}

/// One line per problem (warn or fail), then the paths the host cannot provide that selected
/// trials expect, then the verdict: what the gate prints before a run and keeps in report.json.
pub fn short_summary(report: &DoctorReport) -> Vec<String> {
    let mut lines: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.state.is_problem())
        .map(|c| {
            let evidence = c.evidence.lines().next().unwrap_or("");
            let fix = c
                .fix
                .as_ref()
                .map(|f| format!(" — fix: {f}"))
                .unwrap_or_default();
            format!(
                "doctor: {} {}: {evidence}{fix}",
                c.state.label(),
                c.component
            )
        })
        .collect();
    for e in &report.expectations {
        if e.can != Can::Yes
            && let Some(consequence) = &e.consequence
        {
            lines.push(format!(
                "doctor: {}: {} — {}; {consequence}",
                e.subject,
                e.can.word(),
                e.why
            ));
        }
    }
    lines.push(format!("doctor: {}", report.verdict.summary));
    lines
}

/// The one line printed before a run on a host that will only run CPU trials (no GPU, and
/// `--require-gpu` not given): there every GPU finding is expected, and a screen of them would
/// bury the run. The full findings stay in report.json and one flag away.
pub fn cpu_only_line(report: &DoctorReport, gpu_unavailable: &str) -> String {
    let problems = report
        .checks
        .iter()
        .filter(|c| c.state.is_problem())
        .count();
    format!(
        "doctor: CPU trials only on this host ({gpu_unavailable}); {}; {problems} finding(s) in report.json, or add --doctor to list them here",
        report.verdict.summary
    )
}

fn row(out: &mut String, component: &str, state: &str, evidence: &str, fix: &str) {
    let columns = [
        wrap(component, COMPONENT),
        wrap(state, STATE),
        wrap(evidence, EVIDENCE),
        wrap(fix, FIX),
    ];
    let height = columns.iter().map(Vec::len).max().unwrap_or(1);
    for i in 0..height {
        let cell = |c: usize| columns[c].get(i).map(String::as_str).unwrap_or("");
        let line = format!(
            "{:COMPONENT$}  {:STATE$}  {:EVIDENCE$}  {}",
            cell(0),
            cell(1),
            cell(2),
            cell(3)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Word-wraps `text` to `width` characters, keeping its own line breaks; a word longer than
/// the width (a path) is cut.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split(' ') {
            let mut word: Vec<char> = word.chars().collect();
            loop {
                let used = line.chars().count();
                let gap = usize::from(used > 0);
                if used + gap + word.len() <= width {
                    if gap == 1 {
                        line.push(' ');
                    }
                    line.extend(word.iter());
                    break;
                }
                if used > 0 {
                    lines.push(std::mem::take(&mut line));
                    continue;
                }
                let rest = word.split_off(width.min(word.len()));
                lines.push(word.iter().collect());
                word = rest;
                if word.is_empty() {
                    break;
                }
            }
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_words_keeps_breaks_and_cuts_long_words() {
        assert_eq!(wrap("a bb ccc", 4), vec!["a bb", "ccc"]);
        assert_eq!(wrap("x\ny", 10), vec!["x", "y"]);
        assert_eq!(
            wrap("/a/very/long/path", 6),
            vec!["/a/ver", "y/long", "/path"]
        );
        assert_eq!(wrap("", 5), vec![""]);
    }
}
