//! The live view of a run while trials read: worker i of n (a trial's, or a round's), pass k of m, the last pass's
//! throughput and the time left. On a terminal it is drawn after libtest's `test NAME ... ` and
//! erased before the trial's result is printed there; otherwise (a CI log, a pipe) it is a plain
//! line now and then, so that a long trial is not silent and a log is not flooded.
//!
//! A run opens one [`View`] and hands it to what reports to it: the executor says when a trial
//! starts, ends or waits, the launcher feeds it the worker's progress file
//! ([`gds_model::progress`]) as it waits.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gds_model::progress::PassProgress;
use gds_model::units::Rate;

/// How often the progress file is read while a worker runs.
const POLL: Duration = Duration::from_millis(250);
/// A trial shorter than this prints no plain line: libtest's `test NAME ... ok` stays whole in
/// a log, and only a long trial breaks its line to say how far it is.
const PLAIN_AFTER: Duration = Duration::from_secs(10);
/// How often a plain line is printed after that.
const PLAIN_EVERY: Duration = Duration::from_secs(30);

/// The live view of one run's trials.
pub struct View {
    live: Mutex<Live>,
    /// The unit its pass rates are shown in (`--units`).
    rate: Rate,
}

struct Live {
    /// Trials that will run (not those ignored before they start).
    total: usize,
    /// The bytes each of them moves, in run order, where its suite says (a user's file is
    /// measured only when it runs).
    planned: Vec<Option<u64>>,
    /// Trials started so far; the current one is number `started`.
    started: usize,
    /// Draw in place (both streams are a terminal) or print plain lines.
    in_place: bool,
    trial_start: Instant,
    /// How long each finished trial took, and its planned bytes, for the time left.
    finished: Vec<(Duration, Option<u64>)>,
    last: Option<PassProgress>,
    polled: Instant,
    printed: Option<Instant>,
    drawn: bool,
}

impl View {
    /// Opens the view for a run of the trials that move `planned` bytes each, in run order,
    /// showing rates in `rate`.
    pub fn begin(planned: Vec<Option<u64>>, rate: Rate) -> View {
        let in_place = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        View {
            live: Mutex::new(Live {
                total: planned.len(),
                planned,
                started: 0,
                in_place,
                trial_start: Instant::now(),
                finished: Vec::new(),
                last: None,
                polled: Instant::now(),
                printed: None,
                drawn: false,
            }),
            rate,
        }
    }

    /// A trial's worker is about to start.
    pub fn trial_started(&self) {
        let mut live = self.lock();
        live.started += 1;
        live.trial_start = Instant::now();
        live.last = None;
        live.printed = None;
        live.drawn = false;
    }

    /// The worker writing `path` is still running: show what it reports, at most every [`POLL`].
    pub fn poll(&self, path: &Path) {
        let mut live = self.lock();
        if live.polled.elapsed() < POLL {
            return;
        }
        live.polled = Instant::now();
        let Some(progress) = PassProgress::read(path) else {
            return;
        };
        if live.last == Some(progress) {
            return;
        }
        live.last = Some(progress);
        let this = live.started.saturating_sub(1);
        let left = time_left(
            live.trial_start.elapsed(),
            &progress,
            &live.finished,
            live.planned.get(this).copied().flatten(),
            live.planned.get(this + 1..).unwrap_or_default(),
        );
        let mut err = std::io::stderr().lock();
        if live.in_place {
            // Save the cursor where libtest left it, or go back there and clear what was drawn.
            // Short, so that it fits after the trial's name: a wrapped line that scrolls the screen
            // would move what the saved cursor points at.
            let text = compact(self.rate, live.started, live.total, &progress, left);
            let restore = if live.drawn { "\x1b8\x1b[J" } else { "\x1b7" };
            let _ = write!(err, "{restore}{text}");
            live.drawn = true;
        } else if plain_due(
            live.trial_start.elapsed(),
            live.printed.map(|at| at.elapsed()),
        ) {
            // The first line ends libtest's `test NAME ... ` so that it stands on its own.
            let start = if live.printed.is_none() { "\n" } else { "" };
            let text = status(self.rate, live.started, live.total, Some(&progress), left);
            let _ = writeln!(err, "{start}progress: {text}");
            live.printed = Some(Instant::now());
        }
        let _ = err.flush();
    }

    /// Something the trial under way waits for (the runner, before a confirmation run): on a
    /// terminal `short` is drawn as the live status is; otherwise `text` is printed as a plain
    /// progress line, the first of a trial ending libtest's `test NAME ... ` line as
    /// [`View::poll`]'s do.
    pub fn trial_waits(&self, short: &str, text: &str) {
        let mut live = self.lock();
        let mut err = std::io::stderr().lock();
        if live.in_place {
            let restore = if live.drawn { "\x1b8\x1b[J" } else { "\x1b7" };
            let _ = write!(err, "{restore}[{}/{}] {short}", live.started, live.total);
            live.drawn = true;
        } else {
            let start = if live.printed.is_none() { "\n" } else { "" };
            let _ = writeln!(err, "{start}progress: {text}");
            live.printed = Some(Instant::now());
        }
        let _ = err.flush();
    }

    /// The trial is over: erase the drawn status, so that its result lands where it was.
    pub fn trial_finished(&self) {
        let mut live = self.lock();
        let planned = live
            .planned
            .get(live.started.saturating_sub(1))
            .copied()
            .flatten();
        let took = live.trial_start.elapsed();
        live.finished.push((took, planned));
        if live.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\x1b8\x1b[J");
            let _ = err.flush();
            live.drawn = false;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Whether a plain line is due: the trial has run [`PLAIN_AFTER`], and the last line is
/// [`PLAIN_EVERY`] old (or there is none).
fn plain_due(running: Duration, since_last: Option<Duration>) -> bool {
    match since_last {
        None => running >= PLAIN_AFTER,
        Some(since) => since >= PLAIN_EVERY,
    }
}

/// `worker 3 of 16, pass 2 of 6, last pass 3.10 GB/s, about 1 min 20 s left`
fn status(
    rate: Rate,
    trial: usize,
    trials: usize,
    pass: Option<&PassProgress>,
    left: Option<Duration>,
) -> String {
    let mut text = format!("worker {trial} of {trials}");
    if let Some(pass) = pass {
        text.push_str(&format!(
            ", pass {} of {}, last pass {}",
            pass.done,
            pass.total,
            rate.rate(pass.gbps)
        ));
    }
    if let Some(left) = left {
        text.push_str(&format!(", about {} left", rounded(left)));
    }
    text
}

/// `[3/16] pass 2/6 3.10 GB/s ~1 min 20 s left`: the in-place form.
fn compact(
    rate: Rate,
    trial: usize,
    trials: usize,
    pass: &PassProgress,
    left: Option<Duration>,
) -> String {
    let mut text = format!(
        "[{trial}/{trials}] pass {}/{} {}",
        pass.done,
        pass.total,
        rate.rate(pass.gbps)
    );
    if let Some(left) = left {
        text.push_str(&format!(" ~{} left", rounded(left)));
    }
    text
}

/// The rest of this trial at its pace so far, then each trial still to come at the run's pace
/// per byte (the finished trials' time over their bytes, start-up included), since trials of a
/// suite differ in size by orders of magnitude; a trial of unknown size as long as the finished
/// ones took on average. Before any trial finished, this one's pace stands for the run's.
fn time_left(
    elapsed: Duration,
    pass: &PassProgress,
    finished: &[(Duration, Option<u64>)],
    this_bytes: Option<u64>,
    after: &[Option<u64>],
) -> Option<Duration> {
    if pass.done == 0 || pass.total == 0 {
        return None;
    }
    let per_pass = elapsed.as_secs_f64() / pass.done as f64;
    let this = per_pass * (pass.total - pass.done) as f64;
    let sized: Vec<(f64, u64)> = finished
        .iter()
        .filter_map(|(took, bytes)| Some((took.as_secs_f64(), (*bytes).filter(|b| *b > 0)?)))
        .collect();
    let seconds_per_byte = if sized.is_empty() {
        this_bytes
            .filter(|b| *b > 0)
            .map(|bytes| per_pass * pass.total as f64 / bytes as f64)
    } else {
        let (took, bytes) = sized
            .iter()
            .fold((0.0, 0u64), |(t, b), (took, bytes)| (t + took, b + bytes));
        Some(took / bytes as f64)
    };
    let average = if finished.is_empty() {
        per_pass * pass.total as f64
    } else {
        finished
            .iter()
            .map(|(took, _)| took.as_secs_f64())
            .sum::<f64>()
            / finished.len() as f64
    };
    let rest: f64 = after
        .iter()
        .map(|bytes| match (bytes, seconds_per_byte) {
            (Some(bytes), Some(rate)) => *bytes as f64 * rate,
            _ => average,
        })
        .sum();
    Some(Duration::from_secs_f64(this + rest))
}

/// The bytes a trial moves over all its passes, where its suite says: its files (or its
/// random reads) once per pass.
pub fn planned_bytes(spec: &gds_model::scenario::TrialSpec) -> Option<u64> {
    use gds_model::scenario::{FileSet, Pattern};
    let per_pass = match (&spec.files, &spec.pattern) {
        (FileSet::User { .. }, _) => return None,
        (_, Pattern::Random(random)) => random.size.bytes() * u64::from(random.count.get()),
        (FileSet::Generated { size, count, .. }, _) => size * u64::from(*count),
    };
    Some(per_pass.saturating_mul(spec.passes()))
}

/// `45 s`, `3 min 10 s`, `1 h 5 min`: as precise as an estimate deserves.
pub(crate) fn rounded(left: Duration) -> String {
    let seconds = left.as_secs();
    match seconds {
        0..60 => format!("{} s", seconds.max(1)),
        60..3600 => format!("{} min {} s", seconds / 60, seconds % 60 / 10 * 10),
        _ => format!("{} h {} min", seconds / 3600, seconds % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(done: u64, total: u64, gbps: f64) -> PassProgress {
        PassProgress {
            done,
            total,
            seconds: 1.0,
            gbps,
        }
    }

    #[test]
    fn the_status_names_trial_pass_speed_and_time_left() {
        assert_eq!(
            status(
                Rate::Gb,
                3,
                16,
                Some(&pass(2, 6, 3.1)),
                Some(Duration::from_secs(80))
            ),
            "worker 3 of 16, pass 2 of 6, last pass 3.10 GB/s, about 1 min 20 s left"
        );
        assert_eq!(status(Rate::Gb, 1, 2, None, None), "worker 1 of 2");
        assert_eq!(
            compact(
                Rate::Gb,
                3,
                16,
                &pass(2, 6, 3.1),
                Some(Duration::from_secs(80))
            ),
            "[3/16] pass 2/6 3.10 GB/s ~1 min 20 s left"
        );
    }

    #[test]
    fn time_left_is_this_trial_at_its_pace_plus_the_others_by_their_bytes() {
        // 2 of 6 passes in 4 s: 8 s more here. Done: 10 s for 1 GB and 20 s for 3 GB, 7.5 s
        // per GB; after it, 2 GB and one of unknown size (the finished trials' mean, 15 s).
        let left = time_left(
            Duration::from_secs(4),
            &pass(2, 6, 1.0),
            &[
                (Duration::from_secs(10), Some(1_000_000_000)),
                (Duration::from_secs(20), Some(3_000_000_000)),
            ],
            Some(1_000_000_000),
            &[Some(2_000_000_000), None],
        );
        assert_eq!(left, Some(Duration::from_secs(8 + 15 + 15)));
        // No trial finished yet: this one's pace (12 s for 1 GB) stands for the run's.
        let left = time_left(
            Duration::from_secs(4),
            &pass(2, 6, 1.0),
            &[],
            Some(1_000_000_000),
            &[Some(500_000_000)],
        );
        assert_eq!(left, Some(Duration::from_secs(8 + 6)));
        assert_eq!(
            time_left(Duration::from_secs(4), &pass(0, 6, 1.0), &[], None, &[None]),
            None
        );
    }

    /// A run like the default suite's: trials of 4 GiB, 1 GiB and 64 MiB mixed, each at the
    /// disk's rate after a start-up of its own. Once a trial has run, the estimate in the middle
    /// of each later trial is within 30% of the time the run actually has left.
    #[test]
    fn the_time_left_of_a_mixed_run_is_within_30_percent_once_a_trial_has_run() {
        const GIB: u64 = 1 << 30;
        let sizes = [
            4 * GIB,
            64 << 20,
            GIB,
            4 * GIB,
            64 << 20,
            64 << 20,
            GIB,
            4 * GIB,
            GIB,
        ];
        let startups = [0.7, 2.0, 0.7, 4.6, 0.1, 1.5, 0.7, 2.0, 0.5];
        let rate = 1.6e9;
        let passes = 6u64;
        let took: Vec<f64> = sizes
            .iter()
            .zip(startups)
            .map(|(&bytes, startup)| startup + (bytes * passes) as f64 / rate)
            .collect();
        let planned: Vec<Option<u64>> = sizes.iter().map(|&b| Some(b * passes)).collect();
        for now in 1..sizes.len() {
            // Halfway through trial `now`: 3 of 6 passes done.
            let elapsed = startups[now] + (sizes[now] * 3) as f64 / rate;
            let finished: Vec<(Duration, Option<u64>)> = took[..now]
                .iter()
                .zip(&planned)
                .map(|(&t, &p)| (Duration::from_secs_f64(t), p))
                .collect();
            let left = time_left(
                Duration::from_secs_f64(elapsed),
                &pass(3, passes, 1.0),
                &finished,
                planned[now],
                &planned[now + 1..],
            )
            .unwrap()
            .as_secs_f64();
            let actual = took[now] - elapsed + took[now + 1..].iter().sum::<f64>();
            let error = (left - actual).abs() / actual;
            assert!(
                error <= 0.3,
                "trial {now}: {left:.0} s said, {actual:.0} s left ({error:.2})"
            );
        }
    }

    #[test]
    fn plain_lines_come_only_from_long_trials_and_seldom() {
        assert!(!plain_due(Duration::from_secs(9), None));
        assert!(plain_due(Duration::from_secs(10), None));
        assert!(!plain_due(
            Duration::from_secs(30),
            Some(Duration::from_secs(20))
        ));
        assert!(plain_due(
            Duration::from_secs(50),
            Some(Duration::from_secs(30))
        ));
    }

    #[test]
    fn times_are_rounded_as_estimates() {
        assert_eq!(rounded(Duration::from_millis(300)), "1 s");
        assert_eq!(rounded(Duration::from_secs(45)), "45 s");
        assert_eq!(rounded(Duration::from_secs(199)), "3 min 10 s");
        assert_eq!(rounded(Duration::from_secs(3900)), "1 h 5 min");
    }
}
