//! The live view of a run while trials read: trial i of n, pass k of m, the last pass's
//! throughput and the time left. On a terminal it is drawn after libtest's `test NAME ... ` and
//! erased before the trial's result is printed there; otherwise (a CI log, a pipe) it is a plain
//! line now and then, so that a long trial is not silent and a log is not flooded.
//!
//! One run at a time per process, so the view is process-wide: the run loop opens and closes it,
//! the launcher feeds it the worker's progress file ([`gds_model::progress`]) as it waits.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gds_model::progress::PassProgress;

/// How often the progress file is read while a worker runs.
const POLL: Duration = Duration::from_millis(250);
/// A trial shorter than this prints no plain line: libtest's `test NAME ... ok` stays whole in
/// a log, and only a long trial breaks its line to say how far it is.
const PLAIN_AFTER: Duration = Duration::from_secs(10);
/// How often a plain line is printed after that.
const PLAIN_EVERY: Duration = Duration::from_secs(30);

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

struct Live {
    /// Trials that will run (not those ignored before they start).
    total: usize,
    /// Trials started so far; the current one is number `started`.
    started: usize,
    /// Draw in place (both streams are a terminal) or print plain lines.
    in_place: bool,
    trial_start: Instant,
    /// How long each finished trial took, for the time left.
    finished: Vec<Duration>,
    last: Option<PassProgress>,
    polled: Instant,
    printed: Option<Instant>,
    drawn: bool,
}

/// Opens the view for a run of `total` trials.
pub fn begin(total: usize) {
    let in_place = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    *lock() = Some(Live {
        total,
        started: 0,
        in_place,
        trial_start: Instant::now(),
        finished: Vec::new(),
        last: None,
        polled: Instant::now(),
        printed: None,
        drawn: false,
    });
}

/// Closes the view (after the last trial).
pub fn end() {
    *lock() = None;
}

/// A trial's worker is about to start.
pub fn trial_started() {
    if let Some(live) = lock().as_mut() {
        live.started += 1;
        live.trial_start = Instant::now();
        live.last = None;
        live.printed = None;
        live.drawn = false;
    }
}

/// The worker writing `path` is still running: show what it reports, at most every [`POLL`].
pub fn poll(path: &Path) {
    let mut guard = lock();
    let Some(live) = guard.as_mut() else {
        return;
    };
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
    let left = time_left(
        live.trial_start.elapsed(),
        &progress,
        &live.finished,
        live.total.saturating_sub(live.started),
    );
    let mut err = std::io::stderr().lock();
    if live.in_place {
        // Save the cursor where libtest left it, or go back there and clear what was drawn.
        // Short, so that it fits after the trial's name: a wrapped line that scrolls the screen
        // would move what the saved cursor points at.
        let text = compact(live.started, live.total, &progress, left);
        let restore = if live.drawn { "\x1b8\x1b[J" } else { "\x1b7" };
        let _ = write!(err, "{restore}{text}");
        live.drawn = true;
    } else if plain_due(
        live.trial_start.elapsed(),
        live.printed.map(|at| at.elapsed()),
    ) {
        // The first line ends libtest's `test NAME ... ` so that it stands on its own.
        let start = if live.printed.is_none() { "\n" } else { "" };
        let text = status(live.started, live.total, Some(&progress), left);
        let _ = writeln!(err, "{start}progress: {text}");
        live.printed = Some(Instant::now());
    }
    let _ = err.flush();
}

/// The trial is over: erase the drawn status, so that its result lands where it was.
pub fn trial_finished() {
    if let Some(live) = lock().as_mut() {
        live.finished.push(live.trial_start.elapsed());
        if live.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\x1b8\x1b[J");
            let _ = err.flush();
            live.drawn = false;
        }
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

fn lock() -> std::sync::MutexGuard<'static, Option<Live>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `trial 3 of 16, pass 2 of 6, last pass 3.10 GB/s, about 1 min 20 s left`
fn status(
    trial: usize,
    trials: usize,
    pass: Option<&PassProgress>,
    left: Option<Duration>,
) -> String {
    let mut text = format!("trial {trial} of {trials}");
    if let Some(pass) = pass {
        text.push_str(&format!(
            ", pass {} of {}, last pass {}",
            pass.done,
            pass.total,
            gds_model::units::rate(pass.gbps)
        ));
    }
    if let Some(left) = left {
        text.push_str(&format!(", about {} left", rounded(left)));
    }
    text
}

/// `[3/16] pass 2/6 3.10 GB/s ~1 min 20 s left`: the in-place form.
fn compact(trial: usize, trials: usize, pass: &PassProgress, left: Option<Duration>) -> String {
    let mut text = format!(
        "[{trial}/{trials}] pass {}/{} {}",
        pass.done,
        pass.total,
        gds_model::units::rate(pass.gbps)
    );
    if let Some(left) = left {
        text.push_str(&format!(" ~{} left", rounded(left)));
    }
    text
}

/// The rest of this trial at its pace so far, and each trial still to come as long as the
/// finished ones took on average (or as this one will, before any has finished).
fn time_left(
    elapsed: Duration,
    pass: &PassProgress,
    finished: &[Duration],
    trials_after: usize,
) -> Option<Duration> {
    if pass.done == 0 || pass.total == 0 {
        return None;
    }
    let per_pass = elapsed.as_secs_f64() / pass.done as f64;
    let this = per_pass * (pass.total - pass.done) as f64;
    let each = if finished.is_empty() {
        per_pass * pass.total as f64
    } else {
        finished.iter().map(Duration::as_secs_f64).sum::<f64>() / finished.len() as f64
    };
    Some(Duration::from_secs_f64(this + each * trials_after as f64))
}

/// `45 s`, `3 min 10 s`, `1 h 5 min`: as precise as an estimate deserves.
fn rounded(left: Duration) -> String {
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
            status(3, 16, Some(&pass(2, 6, 3.1)), Some(Duration::from_secs(80))),
            "trial 3 of 16, pass 2 of 6, last pass 3.10 GB/s, about 1 min 20 s left"
        );
        assert_eq!(status(1, 2, None, None), "trial 1 of 2");
        assert_eq!(
            compact(3, 16, &pass(2, 6, 3.1), Some(Duration::from_secs(80))),
            "[3/16] pass 2/6 3.10 GB/s ~1 min 20 s left"
        );
    }

    #[test]
    fn time_left_is_this_trial_at_its_pace_plus_the_average_trial() {
        // 2 of 6 passes in 4 s: 8 s more here; 2 trials after it at 10 s each.
        let left = time_left(
            Duration::from_secs(4),
            &pass(2, 6, 1.0),
            &[Duration::from_secs(5), Duration::from_secs(15)],
            2,
        );
        assert_eq!(left, Some(Duration::from_secs(28)));
        // No trial finished yet: the others are taken to be like this one (12 s each).
        let left = time_left(Duration::from_secs(4), &pass(2, 6, 1.0), &[], 1);
        assert_eq!(left, Some(Duration::from_secs(20)));
        assert_eq!(
            time_left(Duration::from_secs(4), &pass(0, 6, 1.0), &[], 1),
            None
        );
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
