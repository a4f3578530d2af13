//! Streaming mode: a pass's destination cut into windows that the reads rotate through, so that a
//! trial reads any file size with memory bounded by the window, not by the file.
//!
//! The scenario key `window: whole | auto | SIZE` picks the mode; [`WindowMode::resolve`] turns it
//! into a window size (or none: one buffer of the whole plan) once the worker knows the memory of
//! its destination. [`ReadPlan::windows`] cuts a plan into window plans whose verification
//! composes exactly into the whole pass's checksum ([`crate::integrity::Streamed`]).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::integrity::regions;
use crate::plan::{ReadPlan, Segment};
use crate::scenario::size::ByteSize;
use crate::verify;

/// Window cuts fall on file offsets that are multiples of this (or on region boundaries): every
/// window then starts on a word (the checksum and the exact compare need 8) and on a page, which
/// O_DIRECT and cuFile want.
pub const ALIGN: u64 = 4096;
/// The smallest window a scenario may ask for.
pub const MIN_WINDOW: u64 = 64 << 10;
/// The window `auto` picks, unless the memory is so small that an eighth of it is less.
pub const AUTO_WINDOW: u64 = 1 << 30;
/// `auto` streams when a pass needs more than this fraction (1/N) of the destination's memory.
pub const AUTO_FRACTION: u64 = 2;

/// The `window` key: one buffer of the whole pass, a window of a given size, or `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WindowMode {
    /// One destination of the whole plan: a checkpoint loaded in one piece.
    Whole,
    /// A window when the pass needs more than 1/[`AUTO_FRACTION`] of the destination's memory.
    #[default]
    Auto,
    /// A window of this many bytes (a multiple of [`ALIGN`], at least [`MIN_WINDOW`]).
    Size(u64),
}

impl WindowMode {
    /// The window a pass of `plan_bytes` reads through, given the memory of the destination (GPU
    /// memory for GPU readers, available host memory for `posix`); `None`: the whole buffer.
    /// A window as large as the plan is the whole buffer: nothing would rotate.
    pub fn resolve(self, plan_bytes: u64, memory: Option<u64>) -> Option<u64> {
        let window = match self {
            WindowMode::Whole => return None,
            WindowMode::Size(bytes) => bytes,
            WindowMode::Auto => {
                let memory = memory?;
                if plan_bytes <= memory / AUTO_FRACTION {
                    return None;
                }
                let eighth = (memory / 8) / ALIGN * ALIGN;
                AUTO_WINDOW.min(eighth).max(MIN_WINDOW)
            }
        };
        (window < plan_bytes).then_some(window)
    }

    /// Checks a size given in a scenario; the message names what to write instead.
    pub fn check_size(bytes: u64) -> Result<(), String> {
        if bytes < MIN_WINDOW || bytes % ALIGN != 0 {
            return Err(format!(
                "window `{}` must be a multiple of 4KiB and at least {}, e.g. `window: 1GiB`",
                ByteSize(bytes),
                ByteSize(MIN_WINDOW)
            ));
        }
        Ok(())
    }
}

impl fmt::Display for WindowMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowMode::Whole => f.write_str("whole"),
            WindowMode::Auto => f.write_str("auto"),
            WindowMode::Size(bytes) => write!(f, "{}", ByteSize(*bytes)),
        }
    }
}

/// `"whole"`, `"auto"`, or the window in bytes (what the workers, Rust and Python, read).
impl Serialize for WindowMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            WindowMode::Size(bytes) => serializer.serialize_u64(*bytes),
            other => serializer.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for WindowMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        let size = |bytes: u64| {
            WindowMode::check_size(bytes)
                .map(|()| WindowMode::Size(bytes))
                .map_err(de::Error::custom)
        };
        match Raw::deserialize(deserializer)? {
            Raw::Bytes(bytes) => size(bytes),
            Raw::Text(text) => match text.trim() {
                "whole" => Ok(WindowMode::Whole),
                "auto" => Ok(WindowMode::Auto),
                other => size(
                    ByteSize::parse(other)
                        .map_err(|problem| {
                            de::Error::custom(format!(
                                "expected `whole`, `auto` or a size such as `1GiB`: {problem}"
                            ))
                        })?
                        .0,
                ),
            },
        }
    }
}

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
