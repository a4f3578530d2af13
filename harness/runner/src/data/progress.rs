//! Progress reporting for long data operations (generating or checksumming gigabytes): a bar on
//! a terminal, periodic plain lines in CI logs, nothing in tests.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use gds_model::units::{Rate, format_bytes};

/// Receives the progress of one operation at a time: `start`, any number of `advance`, `finish`.
pub trait Progress {
    /// A new operation of `total_bytes` begins; `label` says what it is, e.g.
    /// `generating gds-gate-s1-4294967296.bin`.
    fn start(&mut self, total_bytes: u64, label: &str);
    /// `bytes` more are done.
    fn advance(&mut self, bytes: u64);
    /// The operation is complete.
    fn finish(&mut self);
}

/// Reports nothing (tests, and callers that print their own summary).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&mut self, _total_bytes: u64, _label: &str) {}
    fn advance(&mut self, _bytes: u64) {}
    fn finish(&mut self) {}
}

/// The right reporter for stderr: a bar when a person watches a terminal, plain lines when it is
/// a CI log (a bar there is one enormous line of control characters), its rates in `rate`.
pub fn stderr_progress(rate: Rate) -> Box<dyn Progress + Send> {
    if std::io::stderr().is_terminal() {
        Box::new(BarProgress::default())
    } else {
        Box::new(LineProgress::new(std::io::stderr(), rate))
    }
}

/// An indicatif bar on stderr.
#[derive(Default)]
pub struct BarProgress {
    bar: Option<ProgressBar>,
}

impl Progress for BarProgress {
    fn start(&mut self, total_bytes: u64, label: &str) {
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{msg} [{wide_bar}] {binary_bytes}/{binary_total_bytes} ({bytes_per_sec}, {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(label.to_owned());
        self.bar = Some(bar);
    }

    fn advance(&mut self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
    }
}

/// One line every 10 % or 5 s, whichever comes first, e.g.
/// `generating gds-gate-s1-4294967296.bin: 1.0 GiB / 4.0 GiB (1.1 GB/s)`.
pub struct LineProgress<W: Write> {
    out: W,
    rate: Rate,
    label: String,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    next_tenth: u64,
    interval: Duration,
    /// Tenths closer together than this are not printed: a file written in a second needs no
    /// ten lines in a CI log.
    min_gap: Duration,
}

impl<W: Write> LineProgress<W> {
    pub fn new(out: W, rate: Rate) -> Self {
        let now = Instant::now();
        LineProgress {
            out,
            rate,
            label: String::new(),
            total: 0,
            done: 0,
            started: now,
            last_line: now,
            next_tenth: 1,
            interval: Duration::from_secs(5),
            min_gap: Duration::from_secs(1),
        }
    }

    /// The writer, for tests that inspect what was printed.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, suffix: &str) {
        let secs = self.started.elapsed().as_secs_f64();
        let gbps = if secs > 0.0 {
            self.done as f64 / secs / 1e9
        } else {
            0.0
        };
        // Progress is advisory: a closed stderr must not fail the data preparation.
        let _ = writeln!(
            self.out,
            "{}: {} / {} ({}){suffix}",
            self.label,
            format_bytes(self.done, 1),
            format_bytes(self.total, 1),
            self.rate.format(gbps, 1),
        );
        self.last_line = Instant::now();
    }
}

impl<W: Write> Progress for LineProgress<W> {
    fn start(&mut self, total_bytes: u64, label: &str) {
        let now = Instant::now();
        self.label = label.to_owned();
        self.total = total_bytes;
        self.done = 0;
        self.started = now;
        self.last_line = now;
        self.next_tenth = 1;
    }

    fn advance(&mut self, bytes: u64) {
        self.done = self.done.saturating_add(bytes);
        let tenth_reached = self.total > 0
            && self.next_tenth < 10
            && u128::from(self.done) * 10 >= u128::from(self.total) * u128::from(self.next_tenth);
        let since_last = self.last_line.elapsed();
        if (tenth_reached && since_last >= self.min_gap) || since_last >= self.interval {
            while self.next_tenth < 10
                && u128::from(self.done) * 10
                    >= u128::from(self.total) * u128::from(self.next_tenth)
            {
                self.next_tenth += 1;
            }
            self.line("");
        }
    }

    fn finish(&mut self) {
        let took = humantime::format_duration(Duration::from_millis(
            self.started.elapsed().as_millis() as u64,
        ));
        self.line(&format!(", done in {took}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_progress_prints_only_a_final_line_for_quick_work() {
        let mut p = LineProgress::new(Vec::new(), Rate::Gb);
        p.start(64 << 20, "generating y.bin");
        for _ in 0..64 {
            p.advance(1 << 20);
        }
        p.finish();
        let text = String::from_utf8(p.into_inner()).unwrap_or_default();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains("64.0 MiB / 64.0 MiB") && text.contains(", done in "),
            "{text}"
        );
    }

    #[test]
    fn line_progress_prints_every_tenth_and_a_final_line() {
        let mut p = LineProgress::new(Vec::new(), Rate::Gb);
        p.min_gap = Duration::ZERO;
        p.start(100 << 30, "generating x.bin");
        for _ in 0..100 {
            p.advance(1 << 30);
        }
        p.finish();
        let text = String::from_utf8(p.into_inner()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 10, "{text}");
        assert!(lines[0].starts_with("generating x.bin: 10.0 GiB / 100.0 GiB ("));
        assert!(lines[9].contains("100.0 GiB / 100.0 GiB"));
        assert!(lines[9].contains(", done in "));
    }
}
