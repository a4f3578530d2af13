//! SVG plots of throughput over runs, one per trial: every repetition as a dot, the median as a
//! line, the baseline band (median ± tolerance) behind them, and each level shift of the history
//! ([`super::changes`]) as a vertical marker at its first run with its new level drawn over the
//! runs at it. Linked from summary.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::changes::{ChangePoint, find, series};
use super::chart::Trend;
use super::error::{BaselineError, DrawError, PlotError};
use super::file::{Baseline, TrialBaseline};
use super::fingerprint::hash_bytes;
use super::history::{History, HistoryLine};
use gds_model::record::Status;
use gds_model::units::Rate;

#[derive(Clone, Debug, PartialEq)]
pub struct PlotFile {
    pub trial: String,
    pub path: PathBuf,
    /// The same runs' medians, for the Markdown chart.
    pub trend: Trend,
}

/// How many of the latest runs a plot shows.
pub const RUNS_SHOWN: usize = 60;

/// One SVG per trial of `runner` measured in the history or kept in the baseline, into `dir`: a
/// trial that never ran here (a GPU trial on a CPU host) gets none, rather than an empty frame.
pub fn write_plots(
    history: &History,
    runner: &str,
    baseline: Option<&Baseline>,
    dir: &Path,
    rate: Rate,
) -> Result<Vec<PlotFile>, BaselineError> {
    let runs: Vec<&HistoryLine> = history
        .lines
        .iter()
        .filter(|line| line.runner == runner)
        .collect();
    let runs = &runs[runs.len().saturating_sub(RUNS_SHOWN)..];
    let mut trials: BTreeSet<&str> = runs
        .iter()
        .flat_map(|run| {
            run.trials
                .iter()
                .filter(|(_, t)| t.median_gbps.is_some() || !t.gbps.is_empty())
                .map(|(name, _)| name.as_str())
        })
        .collect();
    trials.extend(
        baseline
            .iter()
            .flat_map(|b| b.trials.keys().map(String::as_str)),
    );
    let mut files = Vec::new();
    for trial in trials {
        let path = dir.join(format!("{}.svg", file_stem(trial)));
        let entry = baseline.and_then(|b| b.trials.get(trial));
        // Searched over the whole history, as summary.md's table is; drawn where they are shown.
        let shifts = find(&series(history, runner, trial)).change_points;
        render(trial, runner, runs, entry, &shifts, rate)
            .map_err(PlotError::Draw)
            .and_then(|svg| {
                gds_model::fsutil::write_atomically(&path, svg.as_bytes()).map_err(PlotError::Write)
            })
            .map_err(|source| BaselineError::Plot {
                path: path.clone(),
                source,
            })?;
        let trend = Trend {
            trial: trial.to_string(),
            medians: runs
                .iter()
                .filter_map(|run| run.trials.get(trial)?.median_gbps)
                .collect(),
            baseline_gbps: entry.map(|e| e.median_gbps),
            svg: None,
        };
        files.push(PlotFile {
            trial: trial.to_string(),
            path,
            trend,
        });
    }
    Ok(files)
}

/// A file name people can still read, with a hash so that two names that clean up alike (`a[x=1]`
/// and `a_x_1_`) do not collide.
pub fn file_stem(trial: &str) -> String {
    let readable: String = trial
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = hash_bytes(trial.as_bytes());
    format!("{}-{}", readable.trim_matches('_'), &hash[hash.len() - 8..])
}

/// A level shift where the plot shows it: from its first run's x to its last's, at its new level.
struct Shift {
    from: f64,
    to: f64,
    level: f64,
    label: String,
    confirmed: bool,
}

/// The level shifts among `runs`, by their runs' times; one that began before the runs shown is
/// drawn from the left edge.
fn shifts_shown(
    trial: &str,
    runs: &[&HistoryLine],
    shifts: &[ChangePoint],
    rate: Rate,
) -> Vec<Shift> {
    let x_of = |time: &str| {
        runs.iter()
            .position(|run| run.time == time && run.trials.contains_key(trial))
    };
    shifts
        .iter()
        .filter_map(|point| {
            let to = x_of(&point.last_time)? as f64 + 0.5;
            let from = x_of(&point.time).map_or(-0.5, |x| x as f64 - 0.5);
            Some(Shift {
                from,
                to,
                level: rate.value(point.after),
                label: super::message::change(point.ratio),
                confirmed: point.confirmed,
            })
        })
        .collect()
}

struct Point {
    x: f64,
    median: Option<f64>,
    samples: Vec<f64>,
    failed: bool,
}

/// The SVG text of one trial's plot.
pub fn render(
    trial: &str,
    runner: &str,
    runs: &[&HistoryLine],
    baseline: Option<&TrialBaseline>,
    shifts: &[ChangePoint],
    // Drawn in the unit the user reads (`--units`); the history keeps GB/s.
    rate: Rate,
) -> Result<String, DrawError> {
    let points: Vec<Point> = runs
        .iter()
        .enumerate()
        .filter_map(|(index, run)| {
            let t = run.trials.get(trial)?;
            Some(Point {
                x: index as f64,
                median: t.median_gbps.map(|g| rate.value(g)),
                samples: t.gbps.iter().map(|&g| rate.value(g)).collect(),
                failed: t.status == Status::Failed,
            })
        })
        .collect();
    let tolerance = runs
        .iter()
        .rev()
        .find_map(|run| run.trials.get(trial).map(|t| t.tolerance))
        .unwrap_or(gds_model::scenario::defaults::TOLERANCE);
    let band = baseline.map(|b| (rate.value(b.median_gbps), tolerance));
    let highest = points
        .iter()
        .flat_map(|p| p.samples.iter().copied())
        .chain(band.map(|(median, tol)| median * (1.0 + tol)))
        .fold(0.0f64, f64::max);
    let y_max = (highest * 1.15).max(0.1);
    let x_max = runs.len().max(1) as f64 - 0.5;
    let labels: Vec<String> = runs
        .iter()
        .map(|run| run.time.get(..10).unwrap_or(&run.time).to_string())
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 360)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{trial} on {runner}"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..x_max, 0f64..y_max)?;
        let format_x = |x: &f64| {
            let index = x.round();
            if (x - index).abs() > 1e-6 || index < 0.0 {
                return String::new();
            }
            labels.get(index as usize).cloned().unwrap_or_default()
        };
        chart
            .configure_mesh()
            .x_desc("run (date), oldest to newest")
            .y_desc(rate.label())
            .x_labels(runs.len().clamp(2, 8))
            .x_label_formatter(&format_x)
            .light_line_style(WHITE)
            .draw()?;
        let band_color = RGBColor(46, 160, 67);
        if let Some((median, tol)) = band {
            let (low, high) = (median * (1.0 - tol), median * (1.0 + tol));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(-0.5, low), (x_max, high)],
                    band_color.mix(0.15).filled(),
                )))?
                .label(format!(
                    "baseline {median:.2} {} ± {:.0}%",
                    rate.label(),
                    tol * 100.0
                ))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 16, y + 5)], band_color.mix(0.3).filled())
                });
            chart.draw_series(LineSeries::new(
                [(-0.5, median), (x_max, median)],
                band_color.stroke_width(1),
            ))?;
        }
        // Level shifts: a marker at the first run at the new level, the new level over its runs;
        // faint while not yet confirmed.
        let shift_color = RGBColor(217, 95, 2);
        let shown = shifts_shown(trial, runs, shifts, rate);
        let style = |s: &Shift| {
            let alpha = if s.confirmed { 1.0 } else { 0.4 };
            shift_color.mix(alpha).stroke_width(2)
        };
        if !shown.is_empty() {
            chart
                .draw_series(
                    shown
                        .iter()
                        .map(|s| PathElement::new([(s.from, 0.0), (s.from, y_max)], style(s))),
                )?
                .label("level shift (faint: not yet confirmed)")
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], shift_color.stroke_width(2))
                });
            chart.draw_series(
                shown
                    .iter()
                    .map(|s| PathElement::new([(s.from, s.level), (s.to, s.level)], style(s))),
            )?;
            chart.draw_series(shown.iter().map(|s| {
                Text::new(
                    s.label.clone(),
                    (s.from + 0.2, y_max * 0.97),
                    ("sans-serif", 12).into_font().color(&shift_color),
                )
            }))?;
        }
        chart.draw_series(points.iter().flat_map(|p| {
            p.samples
                .iter()
                .map(move |&s| Circle::new((p.x, s), 2, BLACK.mix(0.35).filled()))
        }))?;
        let medians: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| p.median.map(|m| (p.x, m)))
            .collect();
        chart
            .draw_series(LineSeries::new(medians, BLUE.stroke_width(2)))?
            .label("median of the run")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE.stroke_width(2)));
        chart.draw_series(points.iter().filter_map(|p| {
            let color = if p.failed { RED } else { BLUE };
            p.median.map(|m| Circle::new((p.x, m), 4, color.filled()))
        }))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// The Markdown charts of the plots (see [`super::chart`]), each naming its SVG relative to the
/// folder summary.md is in, as the file is found in the run's artifact.
pub fn markdown_charts(plots: &[PlotFile], summary_dir: &Path, rate: Rate) -> String {
    let trends: Vec<Trend> = plots
        .iter()
        .map(|plot| {
            let svg = plot.path.strip_prefix(summary_dir).unwrap_or(&plot.path);
            Trend {
                svg: Some(svg.display().to_string()),
                ..plot.trend.clone()
            }
        })
        .collect();
    super::chart::markdown(&trends, rate)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::figures::RunFigures;
    use crate::file::{Provenance, SCHEMA_VERSION};
    use crate::fixtures::{self, BASE, CHECKSUM, SLOW};
    use crate::history::HistoryLine;

    #[test]
    fn one_svg_per_trial_with_the_band_and_the_runs() {
        let runs = [&BASE, &BASE, &SLOW];
        let history = History {
            lines: runs
                .iter()
                .enumerate()
                .map(|(day, gbps)| {
                    let records = [
                        fixtures::passed("s::a[x=1]", *gbps, "nvfs", CHECKSUM),
                        fixtures::failed("s::b", *gbps),
                    ];
                    let time = format!("2026-03-0{}T00:00:00Z", day + 1);
                    HistoryLine::new(time, "r1", "h", &fixtures::fingerprint(), &records)
                })
                .collect(),
            skipped: Vec::new(),
        };
        let provenance = Provenance {
            blessed_at: "2026-03-01T00:00:00Z".into(),
            gate_version: "0.1.0".into(),
            host: "h".into(),
            revision: None,
        };
        let m = RunFigures::of(&fixtures::measurement(&BASE, "nvfs", CHECKSUM));
        let baseline = Baseline {
            schema_version: SCHEMA_VERSION,
            runner: "r1".into(),
            fingerprint: fixtures::fingerprint(),
            provenance: provenance.clone(),
            control: None,
            trials: BTreeMap::from([(
                "s::a[x=1]".to_string(),
                TrialBaseline::from_runs(&[&m], &provenance),
            )]),
        };
        let dir = tempfile::tempdir().unwrap();
        let plots = write_plots(&history, "r1", Some(&baseline), dir.path(), Rate::Gb).unwrap();
        assert_eq!(plots.len(), 2);
        let svg = std::fs::read_to_string(&plots[0].path).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("baseline 2.00 GB/s ± 10%"), "{svg}");
        assert!(svg.contains("2026-03-03"), "{svg}");
        assert!(svg.contains("<circle"), "{svg}");
        assert!(
            plots[0]
                .path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("s__a_x_1-")
        );
        // Another runner's history is not this runner's plot.
        let none = write_plots(&history, "other", None, dir.path(), Rate::Gb).unwrap();
        assert!(none.is_empty());
        let charts = markdown_charts(&plots, dir.path(), Rate::Gb);
        assert!(
            charts.contains("<details><summary>`s::a[x=1]` (every pass: `s__a_x_1-"),
            "{charts}"
        );
        assert!(charts.contains("```mermaid\nxychart-beta\n"), "{charts}");
    }

    #[test]
    fn a_plot_that_cannot_be_saved_names_the_file_and_gives_the_cause_once() {
        let record = fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM);
        let line = HistoryLine::new(
            "2026-03-01T00:00:00Z".into(),
            "r1",
            "h",
            &fixtures::fingerprint(),
            &[record],
        );
        let history = History {
            lines: vec![line],
            skipped: Vec::new(),
        };
        // A file where the plots' folder should be.
        let file = tempfile::NamedTempFile::new().unwrap();
        let error = write_plots(&history, "r1", None, file.path(), Rate::Gb).unwrap_err();
        let chain = gds_model::error_chain(&error);
        assert!(chain.starts_with("cannot write plot `"), "{chain}");
        assert_eq!(chain.matches("caused by:").count(), 1, "{chain}");
    }

    #[test]
    fn level_shifts_are_marked_where_the_runs_are_shown() {
        let first = humantime::parse_rfc3339("2026-03-01T00:00:00Z").unwrap();
        let history = fixtures::history("s::a", "r1", first, &fixtures::creep_medians(2.0, 30, 10));
        let dir = tempfile::tempdir().unwrap();
        let plots = write_plots(&history, "r1", None, dir.path(), Rate::Gb).unwrap();
        let svg = std::fs::read_to_string(&plots[0].path).unwrap();
        assert!(
            svg.contains("level shift (faint: not yet confirmed)"),
            "{svg}"
        );
        // One label per step, each the change from the level before.
        assert_eq!(svg.matches("\n−5.").count(), 3, "{svg}");
        // A history without a shift has no marker.
        let flat = fixtures::history("s::a", "r1", first, &[2.0; 30]);
        let plots = write_plots(&flat, "r1", None, dir.path(), Rate::Gb).unwrap();
        let svg = std::fs::read_to_string(&plots[0].path).unwrap();
        assert!(!svg.contains("level shift"), "{svg}");
    }

    #[test]
    fn file_stems_are_readable_and_distinct() {
        assert_ne!(file_stem("a[x=1]"), file_stem("a_x_1_"));
        assert!(file_stem("suite::kvikio[compat=OFF]").starts_with("suite__kvikio_compat_OFF-"));
    }
}
