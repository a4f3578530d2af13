//! Throughput over runs as Mermaid `xychart-beta` charts in Markdown: GitHub draws them in the
//! step summary and in the bless pull request, where links to a run's SVG files lead nowhere.

use std::fmt::Write;

use gds_model::record::TrialRecord;
use gds_model::units::Rate;

/// One trial's series: the median GB/s of each run, oldest first, and the baseline's level.
#[derive(Clone, Debug, PartialEq)]
pub struct Trend {
    pub trial: String,
    pub medians: Vec<f64>,
    pub baseline_gbps: Option<f64>,
    /// Where its SVG (every pass, the tolerance band) is, as people find it in the artifact.
    pub svg: Option<String>,
}

/// The trends of complete runs of the same trials (a bless's runs), in run order: each trial of
/// the first run that measured anything, with each run's median.
pub fn of_runs(runs: &[&[TrialRecord]]) -> Vec<Trend> {
    let median_of = |record: &TrialRecord| {
        let gbps = &record.measurement.as_ref()?.gbps;
        (!gbps.is_empty()).then(|| gds_model::numbers::median(gbps))
    };
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|record| median_of(record).is_some())
        .map(|record| Trend {
            trial: record.name.clone(),
            medians: runs
                .iter()
                .filter_map(|run| run.iter().find(|r| r.name == record.name))
                .filter_map(median_of)
                .collect(),
            baseline_gbps: None,
            svg: None,
        })
        .collect()
}

/// `#### Throughput over runs` and a chart per trend with at least one run; empty when none has.
pub fn markdown(trends: &[Trend], rate: Rate) -> String {
    let drawn: Vec<&Trend> = trends.iter().filter(|t| !t.medians.is_empty()).collect();
    if drawn.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "#### Throughput over runs\n\nMedian {} of each run (line), and the baseline's level where there is one.\n\n",
        rate.label()
    );
    for trend in drawn {
        let name = gds_runner::escape::markdown_code(&trend.trial);
        let svg = trend
            .svg
            .as_deref()
            .map(|svg| {
                format!(
                    " (every pass: {} in the run's artifact)",
                    gds_runner::escape::markdown_code(svg)
                )
            })
            .unwrap_or_default();
        let _ = write!(
            out,
            "<details><summary>{name}{svg}</summary>\n\n{}\n</details>\n\n",
            chart(trend, rate)
        );
    }
    out
}

/// The fenced `mermaid` block of one trend.
pub fn chart(trend: &Trend, rate: Rate) -> String {
    let numbers = |values: &mut dyn Iterator<Item = f64>| {
        values
            .map(|v| rate.number(v, 2))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let runs = (1..=trend.medians.len())
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let highest = trend
        .medians
        .iter()
        .copied()
        .chain(trend.baseline_gbps)
        .fold(0.0f64, f64::max);
    let mut out = String::from("```mermaid\nxychart-beta\n");
    // Mermaid's strings end at a double quote; a trial name may hold one.
    let _ = writeln!(out, "    title \"{}\"", trend.trial.replace('"', "'"));
    let _ = writeln!(out, "    x-axis \"run\" [{runs}]");
    let _ = writeln!(
        out,
        "    y-axis \"{}\" 0 --> {}",
        rate.label(),
        rate.number((highest * 1.15).max(0.01), 2)
    );
    let _ = writeln!(
        out,
        "    line [{}]",
        numbers(&mut trend.medians.iter().copied())
    );
    if let Some(level) = trend.baseline_gbps {
        let _ = writeln!(
            out,
            "    line [{}]",
            numbers(&mut std::iter::repeat_n(level, trend.medians.len()))
        );
    }
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_per_trial_with_runs_and_none_without() {
        let trends = [
            Trend {
                trial: "s::a[x=\"1\"]".into(),
                medians: vec![2.0, 1.5],
                baseline_gbps: Some(2.0),
                svg: Some("plots/a.svg".into()),
            },
            Trend {
                trial: "s::ignored".into(),
                medians: vec![],
                baseline_gbps: None,
                svg: None,
            },
        ];
        let text = markdown(&trends, Rate::Gb);
        assert!(text.contains("```mermaid\nxychart-beta\n    title \"s::a[x='1']\"\n    x-axis \"run\" [1, 2]\n    y-axis \"GB/s\" 0 --> 2.30\n    line [2.00, 1.50]\n    line [2.00, 2.00]\n```"), "{text}");
        assert!(text.contains("`plots/a.svg`"), "{text}");
        assert!(!text.contains("s::ignored"), "{text}");
        assert_eq!(markdown(&trends[1..], Rate::Gb), "");
        // The unit is the one handed in: 2.00 GB/s is 1.86 GiB/s.
        let gib = markdown(&trends, Rate::Gib);
        assert!(
            gib.contains("y-axis \"GiB/s\"") && gib.contains("line [1.86, 1.40]"),
            "{gib}"
        );
    }
}
