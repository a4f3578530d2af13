//! Streaming mode: a pass's destination cut into windows that the reads rotate through, so that a
//! trial reads any file size with memory bounded by the window, not by the file.
//!
//! The scenario key `window: whole | auto | SIZE` picks the mode; [`WindowMode::resolve`] turns it
//! into a window size (or none: one buffer of the whole plan) once the worker knows the memory of
//! its destination. [`ReadPlan::windows`] cuts a plan into window plans whose verification
//! composes exactly into the whole pass's checksum ([`crate::integrity::Streamed`]).

use crate::integrity::regions;
use crate::plan::{ReadPlan, Segment};
use crate::verify;

pub use crate::scenario::window_mode::{ALIGN, AUTO_FRACTION, AUTO_WINDOW, MIN_WINDOW, WindowMode};

/// One window of a pass: the plan's buffer bytes `start .. start + plan.total_bytes()`, as a plan
/// of its own whose buffer offsets count from the window's start.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Where the window starts in the whole pass's buffer.
    pub start: u64,
    /// The window's reads; it never claims to cover files (its checksum is a raw range sum,
    /// composed by [`crate::integrity::Streamed`]).
    pub plan: ReadPlan,
}

impl Window {
    /// The file and file offset of byte `window_offset` of the window.
    pub fn file_position(&self, window_offset: u64) -> Option<(usize, u64)> {
        self.plan
            .segments
            .iter()
            .find(|s| (s.buffer_offset..s.buffer_offset + s.len).contains(&window_offset))
            .map(|s| (s.file, s.offset + (window_offset - s.buffer_offset)))
    }
}

impl ReadPlan {
    /// Cuts the pass into windows of at most `size` bytes (`size` ≥ [`ALIGN`]), in buffer order.
    /// Each cut falls where a verification region starts or on a file offset that is a multiple
    /// of [`ALIGN`], so that every window's regions start on a word and the windows' range sums
    /// add up to the pass's.
    pub fn windows(&self, size: u64) -> Vec<Window> {
        assert!(size >= ALIGN, "window of {size} bytes is below {ALIGN}");
        let total = self.total_bytes();
        let regions = regions(self);
        let mut cuts = vec![0u64];
        let mut start = 0u64;
        let mut region = 0usize;
        while start < total {
            let limit = (start + size).min(total);
            let cut = if limit == total {
                total
            } else {
                while regions[region].1 + regions[region].2 <= limit {
                    region += 1;
                }
                let (file_offset, buffer_offset, _, _) = regions[region];
                let at = file_offset + (limit - buffer_offset);
                let aligned = at / ALIGN * ALIGN;
                let candidate = if aligned >= file_offset {
                    buffer_offset + (aligned - file_offset)
                } else {
                    buffer_offset
                };
                if candidate > start {
                    candidate
                } else {
                    // A region that starts off the page grid right at `start`: cut on a word.
                    buffer_offset + (at / 8 * 8 - file_offset)
                }
            };
            cuts.push(cut);
            start = cut;
        }
        let mut windows = Vec::with_capacity(cuts.len() - 1);
        let mut next = 0usize;
        for bounds in cuts.windows(2) {
            let (from, to) = (bounds[0], bounds[1]);
            let mut segments = Vec::new();
            while next < self.segments.len() {
                let s = self.segments[next];
                let (lo, hi) = (s.buffer_offset.max(from), (s.buffer_offset + s.len).min(to));
                if lo < hi {
                    segments.push(Segment {
                        file: s.file,
                        offset: s.offset + (lo - s.buffer_offset),
                        len: hi - lo,
                        buffer_offset: lo - from,
                    });
                }
                if s.buffer_offset + s.len > to {
                    break; // continues in the next window
                }
                next += 1;
            }
            windows.push(Window {
                start: from,
                plan: ReadPlan {
                    files: self.files.clone(),
                    segments,
                    covers_files: false,
                },
            });
        }
        windows
    }

    /// What the whole-file checksums add to the range sums of a plan that covers its files (the
    /// length term of each file, see [`verify::finish_checksum`]); 0 for any other plan.
    pub fn length_terms(&self) -> u64 {
        if !self.covers_files {
            return 0;
        }
        regions(self).iter().fold(0u64, |sum, &(_, _, len, _)| {
            sum.wrapping_add(verify::finish_checksum(0, len))
        })
    }

    /// The largest window of a cut (what a reader allocates).
    pub fn largest_window(windows: &[Window]) -> u64 {
        windows
            .iter()
            .map(|w| w.plan.total_bytes())
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
