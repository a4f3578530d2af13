//! The verdict as it is built: the bytes placed on each path, and the lines, claims, conflicts
//! and notes of the sources, which [`super::split`] and [`super::cross_check`] both add to.

use std::collections::{BTreeMap, BTreeSet};

use super::ops::Ops;
use super::{Path, PathVerdict, Source, SourceLine};
use crate::scenario::Op;

#[derive(Default)]
pub(super) struct Builder {
    pub(super) split: BTreeMap<Path, u64>,
    /// Paths taken with bytes unknown (the evidence has no byte count).
    pub(super) marked: BTreeSet<Path>,
    pub(super) approximate: bool,
    pub(super) lines: Vec<SourceLine>,
    pub(super) claims: Vec<String>,
    pub(super) conflicts: Vec<String>,
    pub(super) errors: Vec<String>,
    pub(super) notes: Vec<String>,
}

impl Builder {
    pub(super) fn add(&mut self, path: Path, bytes: u64) {
        if bytes > 0 {
            let slot = self.split.entry(path).or_default();
            *slot = slot.saturating_add(bytes);
        }
    }

    pub(super) fn line(&mut self, source: Source, said: impl Into<String>) {
        self.lines.push(SourceLine {
            source,
            said: said.into(),
        });
    }

    /// Shares `bytes` between cuFile's paths by read counts; marks them when bytes are unknown.
    pub(super) fn add_cufile(&mut self, bytes: u64, ops: &Ops) {
        let buckets = ops.buckets();
        let busy: Vec<(Path, u64)> = buckets.into_iter().filter(|(_, n)| *n > 0).collect();
        // Exact, unlike `reads()`, which saturates: shares then never add up past `bytes`.
        let reads: u128 = busy.iter().map(|(_, n)| u128::from(*n)).sum();
        if bytes == 0 {
            self.marked
                .extend(busy.iter().map(|(path, _)| path.clone()));
            return;
        }
        self.approximate |= busy.len() > 1;
        let mut given = 0u64;
        for (path, n) in &busy {
            let share = (u128::from(bytes) * u128::from(*n) / reads.max(1)) as u64;
            given += share;
            self.add(path.clone(), share);
        }
        // Rounding leftovers go to the busiest path.
        if let Some((path, _)) = busy.iter().max_by_key(|(_, n)| *n) {
            self.add(path.clone(), bytes - given);
        }
    }

    pub(super) fn finish(mut self) -> PathVerdict {
        // Sources in a fixed order (KvikIO before cuFile, ...) whatever order they were read in.
        self.lines.sort_by_key(|line| line.source);
        let taken: BTreeSet<Path> = self.split.keys().cloned().chain(self.marked).collect();
        let path = match taken.len() {
            0 => Path::Unknown,
            1 => taken.into_iter().next().unwrap_or(Path::Unknown),
            _ => Path::Mixed,
        };
        PathVerdict {
            path,
            split: self.split,
            approximate: self.approximate,
            lines: self.lines,
            claims: self.claims,
            conflicts: self.conflicts,
            errors: self.errors,
            notes: self.notes,
        }
    }
}

/// The KvikIO calls a trial's `kvikio_api: async` makes for its direction.
pub(super) fn stream_ordered_calls(op: Op) -> &'static str {
    match op {
        Op::Read | Op::Load => "raw_read_async",
        Op::Write => "raw_write_async",
        Op::Roundtrip => "raw_write_async and raw_read_async",
    }
}
