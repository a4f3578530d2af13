//! A worker's progress through its passes, for the gate's live view: after each pass the worker
//! replaces a one-line file (named by [`ENV`] in its environment) with how many passes are done,
//! of how many, and the last pass's throughput; the gate polls it while the worker runs.

use std::io;
use std::path::Path;

/// The environment variable that names the progress file; unset, the worker writes none.
pub const ENV: &str = "GDS_GATE_PROGRESS";

/// Where a worker is: `done` of `total` passes, the last one `seconds` long at `gbps`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PassProgress {
    pub done: u64,
    pub total: u64,
    pub seconds: f64,
    pub gbps: f64,
}

impl PassProgress {
    /// `done total seconds gbps`, one line.
    pub fn to_line(&self) -> String {
        format!(
            "{} {} {} {}\n",
            self.done, self.total, self.seconds, self.gbps
        )
    }

    /// The line [`PassProgress::to_line`] wrote; `None` for anything else (a half-written file
    /// is skipped until the next poll).
    pub fn parse(line: &str) -> Option<PassProgress> {
        let line = line.strip_suffix('\n')?;
        let mut fields = line.split(' ');
        let progress = PassProgress {
            done: fields.next()?.parse().ok()?,
            total: fields.next()?.parse().ok()?,
            seconds: fields.next()?.parse().ok()?,
            gbps: fields.next()?.parse().ok()?,
        };
        let sane = fields.next().is_none()
            && progress.done <= progress.total
            && progress.seconds.is_finite()
            && progress.gbps.is_finite();
        sane.then_some(progress)
    }

    /// Replaces the file at `path` whole (written aside, then renamed), so that a poll never
    /// reads half a line.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        let aside = path.with_extension("new");
        std::fs::write(&aside, self.to_line())?;
        std::fs::rename(&aside, path)
    }

    /// The file at `path`, when it holds a whole line.
    pub fn read(path: &Path) -> Option<PassProgress> {
        PassProgress::parse(&std::fs::read_to_string(path).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips_and_damage_is_skipped() {
        let progress = PassProgress {
            done: 2,
            total: 6,
            seconds: 1.25,
            gbps: 3.4,
        };
        assert_eq!(PassProgress::parse(&progress.to_line()), Some(progress));
        for damaged in [
            "",
            "2 6 1.25",
            "2 6 1.25 3.4",
            "7 6 1 1\n",
            "2 6 1 NaN\n",
            "2 6 1 1 1\n",
        ] {
            assert_eq!(PassProgress::parse(damaged), None, "{damaged:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("progress");
        assert_eq!(PassProgress::read(&path), None);
        progress.write(&path).unwrap();
        assert_eq!(PassProgress::read(&path), Some(progress));
    }
}
