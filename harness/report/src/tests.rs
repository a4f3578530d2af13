//! Control bytes from outside the gate (a worker's output, a path, a name or value from a suite,
//! a merged report) reach no sink raw: each sink shows them escaped in its own way, or encodes
//! them as its format does.

use super::{annotations, junit, markdown};
use gds_baseline::fixtures::{self, BASE, CHECKSUM};
use gds_model::record::TrialRecord;

/// Every C0 byte, DEL and every C1 code point, then the escape sequences that recolour, retitle
/// or clear a terminal, and a workflow command on a line of its own.
fn hostile() -> String {
    let mut text: String = (0u32..0x20)
        .chain(0x7f..0xa0)
        .filter_map(char::from_u32)
        .collect();
    text.push_str("\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7} \u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{9b}2J\n::error::injected\r\n%0A");
    text
}

/// A failed, a passed (with warnings) and an ignored trial, every text field of each hostile.
fn report() -> super::Report {
    let bad = hostile();
    let named = |record: TrialRecord, tag: &str| {
        let mut record = record;
        record.name = format!("s::{tag}{bad}");
        record.spec.source_file = format!("suites/{bad}.yaml").into();
        record.warnings = vec![format!("warning {bad}")];
        if let Some(m) = record.measurement.as_mut() {
            m.path = gds_model::path::Path::Other(format!("nvfs{bad}"));
        }
        record
    };
    let mut failed = named(fixtures::failed("f", &BASE), "failed");
    failed.reason = Some(format!("reason {bad}"));
    failed.details = Some(format!("details {bad}"));
    let passed = named(fixtures::passed("p", &BASE, "nvfs", CHECKSUM), "passed");
    let mut ignored = named(fixtures::ignored("i"), "ignored");
    ignored.reason = Some(format!("reason {bad}"));
    let mut report = crate::test_support::report(vec![failed, passed, ignored]);
    report.notes = vec![format!("note {bad}")];
    report.host.hostname = format!("host{bad}");
    report
}

/// The control characters of `text` outside `allowed`, with the line they are on.
fn raw_controls(text: &str, allowed: &[char]) -> Vec<(usize, char)> {
    text.lines()
        .enumerate()
        .flat_map(|(index, line)| line.chars().map(move |c| (index + 1, c)))
        .chain(text.chars().filter(|c| *c == '\r').map(|c| (0, c)))
        .filter(|(_, c)| c.is_control() && !allowed.contains(c))
        .collect()
}

#[test]
fn no_sink_writes_a_raw_control_byte() {
    let report = report();

    let annotations = annotations::github_annotations_in(&report, None);
    assert!(annotations.len() >= 4, "{annotations:#?}");
    for line in &annotations {
        assert_eq!(raw_controls(line, &['\t']), [], "{line:?}");
        assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
        // Escaped as the libtest lines are, with %, CR and LF %-encoded as the runner decodes.
        assert!(line.contains("\\u{1b}[31mred"), "{line:?}");
        assert!(line.contains("\\u{9b}2J"), "{line:?}");
        assert!(line.contains("%0A::error::injected%0D%0A%250A"), "{line:?}");
    }
    let title = annotations[0]
        .split_once(",title=")
        .and_then(|(_, rest)| rest.split_once("::"))
        .map(|(title, _)| title)
        .unwrap_or_default();
    assert!(title.starts_with("s%3A%3Afailed\\u{0}\\u{1}"), "{title}");
    assert!(!title.contains(',') && !title.contains(':'), "{title}");

    let summary = markdown::render(&report);
    assert_eq!(raw_controls(&summary, &['\n']), [], "{summary}");

    let xml = junit::render(&report);
    assert_eq!(raw_controls(&xml, &['\n']), [], "{xml}");
    // XML 1.0 cannot hold most C0 characters even as references: none is written as one.
    assert!(!xml.contains("&#"), "{xml}");
    for shown in [
        "\\u{1b}[31mred",
        "reason \\u{0}\\u{1}",
        "details \\u{0}",
        "\\u{9b}2J",
    ] {
        assert!(xml.contains(shown), "`{shown}` not in {xml}");
    }

    let json = super::to_json(&report).unwrap();
    assert_eq!(raw_controls(&json, &['\n']), [], "{json}");
    assert!(json.contains("\\u001b[31mred"), "{json}");
    assert!(json.contains("\\u009b2J"), "{json}");
    // Escaped, not lost: the record reads back as it was.
    let back: super::Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back.trials[0].name, report.trials[0].name);
    assert_eq!(back.trials[0].reason, report.trials[0].reason);
}
