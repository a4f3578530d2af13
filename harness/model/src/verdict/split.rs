//! Places a trial's bytes on paths, source by source: the reader decides what can happen, KvikIO
//! says what it handed to cuFile, cuFile's counters say what cuFile did with it, and nvidia-fs,
//! the host and cufile.log confirm or contradict that.

use super::builder::{Builder, stream_ordered_calls};
use super::cross_check::{cross_check, settings};
use super::ops::Ops;
use super::{Path, PathVerdict, Source};
use crate::evidence::{Bytes, Evidence, FindingKind, KvikioBackends};
use crate::scenario::{CompatMode, KvikioApi, Reader};

const MIB: u64 = 1 << 20;

pub(super) fn build(e: &Evidence) -> PathVerdict {
    let mut v = Builder::default();
    v.line(
        Source::Reader,
        format!(
            "{}, {} {}",
            e.reader.name(),
            Bytes(e.bytes_read),
            e.op.moved()
        ),
    );
    match e.reader {
        Reader::Posix => v.add(Path::Host, e.bytes_read),
        Reader::H2d => v.add(Path::Bounce, e.bytes_read),
        // PyTorch hands every byte to cuFile (`cuFileRead`/`cuFileWrite`): only cuFile's
        // counters say which way they went.
        Reader::Cufile | Reader::CufileBatch | Reader::CufileAsync | Reader::Torch => {
            let ops = cufile_ops(e, &mut v);
            let who = format!("the {} reader", e.reader.name());
            through_cufile(e, &mut v, ops.as_ref(), e.bytes_read, &who);
            cross_check(e, &mut v, ops.as_ref());
        }
        Reader::Kvikio => {
            let ops = cufile_ops(e, &mut v);
            kvikio(e, &mut v, ops.as_ref());
            cross_check(e, &mut v, ops.as_ref());
        }
    }
    settings(e, &mut v);
    if let Some(cpu) = e.cpu_seconds_per_gib {
        // Evidence beside the counters, not a verdict of its own: what a path costs depends on
        // the host, so the baseline (`expect.cpu_tolerance`) is what judges it.
        v.line(
            Source::Cpu,
            format!("{cpu:.3} s/GiB of the worker's user + system time, median of the passes"),
        );
    }
    v.finish()
}

/// The cuFile counters to judge by (stats API first, gds_stats second), after comparing both.
fn cufile_ops(e: &Evidence, v: &mut Builder) -> Option<Ops> {
    let noun = e.op.transfers();
    let api = e.cufile.as_deref().map(|c| Ops {
        noun,
        ..Ops::of(Source::CufileApi, c)
    });
    let text = e.gds_stats.as_ref().map(|stats| {
        let mut ops = Ops::of(Source::GdsStats, &stats.counters_for(e.op));
        ops.noun = noun;
        // The GLOBAL read errors and the `nvfs=` inference speak of reads only.
        if !e.op.writes() {
            ops.nvfs_inferred = stats.nvfs_inferred();
            ops.err = ops.err.max(stats.read_errors());
        }
        ops
    });
    match &api {
        Some(ops) => v.line(Source::CufileApi, ops.describe()),
        None => v.line(Source::CufileApi, "stats API counters not collected"),
    }
    match &text {
        Some(ops) => v.line(Source::GdsStats, ops.describe()),
        None => v.line(Source::GdsStats, "not collected"),
    }
    if let (Some(api), Some(text)) = (&api, &text)
        && api.classes() != text.classes()
    {
        v.conflicts
            .push(format!("{}; {}", api.claim(), text.claim()));
    }
    for ops in api.iter().chain(&text) {
        if ops.err > 0 {
            v.errors.push(format!(
                "{} counted {} {} errors",
                ops.source.label(),
                ops.err,
                e.op.transfer()
            ));
        }
    }
    api.or(text)
}

/// `bytes` were handed to cuFile: its counters say which way, else cufile.log, else nobody.
fn through_cufile(e: &Evidence, v: &mut Builder, ops: Option<&Ops>, bytes: u64, who: &str) {
    match ops {
        Some(ops) if ops.reads() > 0 => {
            v.claims.push(ops.claim());
            v.add_cufile(bytes, ops);
            let (a, b) = (ops.read_bytes, bytes);
            if a > 0 && b > 0 && a.abs_diff(b) > (1 << 20).max(b / 100) {
                v.notes.push(format!(
                    "{} counted {} {} while {who} handed it {}",
                    ops.source.label(),
                    Bytes(a),
                    e.op.moved(),
                    Bytes(b)
                ));
            }
        }
        Some(ops) => {
            v.claims.push(ops.claim());
            v.conflicts.push(format!(
                "{who} handed cuFile {} but {} counted no {noun}: the counters did not see these {noun} (stats not started in the worker, or another libcufile was loaded)",
                Bytes(bytes),
                ops.source.label(),
                noun = e.op.transfers()
            ));
            v.add(Path::Cufile, bytes);
        }
        None => from_log(e, v, bytes),
    }
}

/// Without counters, cufile.log can still say "compat mode" or "gds path taken"; else the path
/// through cuFile stays unconfirmed.
fn from_log(e: &Evidence, v: &mut Builder, bytes: u64) {
    let log = e.cufile_log.as_ref();
    let has = |kind| log.is_some_and(|l| l.has(kind));
    let compat = [
        FindingKind::CompatMode,
        FindingKind::NvidiaFsNotLoaded,
        FindingKind::FileCompatMode,
        FindingKind::PosixRead,
    ]
    .into_iter()
    .find(|kind| has(*kind));
    let path = match (compat, has(FindingKind::GdsPathTaken)) {
        (Some(_), false) => Path::CufilePosix,
        (None, true) => Path::Nvfs,
        _ => Path::Cufile,
    };
    if path == Path::Cufile {
        v.notes.push("no cuFile counters (stats API or gds_stats): the path through cuFile cannot be confirmed as nvfs".into());
    } else {
        v.notes.push(format!(
            "no cuFile counters: {path} is taken from cufile.log alone"
        ));
        if let Some(finding) = compat.and_then(|kind| log.and_then(|l| l.first(kind))) {
            v.claims.push(format!(
                "cufile.log: `{}`",
                super::diagnose::quote(&finding.line)
            ));
        }
    }
    if bytes == 0 {
        v.marked.insert(path);
    } else {
        v.add(path, bytes);
    }
}

fn kvikio(e: &Evidence, v: &mut Builder, ops: Option<&Ops>) {
    let on = e.compat_mode == Some(CompatMode::ON);
    let Some(backends) = &e.kvikio else {
        v.line(
            Source::Kvikio,
            "by_backend not collected (needs KvikIO ≥ 26.10)",
        );
        match ops {
            Some(ops) if ops.reads() > 0 => {
                let through = match ops.read_bytes {
                    0 => e.bytes_read,
                    counted => counted.min(e.bytes_read),
                };
                through_cufile(e, v, Some(ops), through, "KvikIO");
                v.add(Path::KvikioPosix, e.bytes_read - through);
                v.notes.push("KvikIO's own split is missing: bytes cuFile did not count are taken as KvikIO POSIX".into());
            }
            Some(ops) => {
                v.claims.push(ops.claim());
                v.add(Path::KvikioPosix, e.bytes_read);
                v.notes.push(format!(
                    "KvikIO's own split is missing: cuFile counted no {}, so KvikIO used POSIX",
                    e.op.transfers()
                ));
            }
            None if on => {
                v.add(Path::KvikioPosix, e.bytes_read);
                v.notes.push("no KvikIO split and no cuFile counters: KVIKIO_COMPAT_MODE=ON never calls cuFile".into());
            }
            None => {
                v.add(Path::Unknown, e.bytes_read);
                v.notes
                    .push("no KvikIO split and no cuFile counters: the path is unknown".into());
            }
        }
        return;
    };
    v.line(Source::Kvikio, describe_backends(backends));
    let gds = backends.gds();
    for (_, totals) in backends.host_backends() {
        v.add(Path::KvikioPosix, totals.bytes_transferred);
    }
    let counted = backends.total_bytes();
    let uncounted = e.bytes_read.saturating_sub(counted);
    let streamed = stream_ordered_share(e, v, ops, gds.bytes_transferred, uncounted);
    v.claims.push(claim_backends(backends, streamed > 0));
    if uncounted > streamed {
        v.add(Path::Unknown, uncounted - streamed);
        let who = if streamed > 0 {
            "KvikIO and cuFile's counters"
        } else {
            "KvikIO"
        };
        v.notes.push(format!(
            "{who} accounted for {} of the {} {}; the rest is placed nowhere",
            Bytes(counted.saturating_add(streamed)),
            Bytes(e.bytes_read),
            e.op.moved()
        ));
    } else if counted > e.bytes_read {
        v.notes.push(format!(
            "KvikIO counted {} but the trial moved {}: its monitor covered more than the trial's {}",
            Bytes(counted),
            Bytes(e.bytes_read),
            e.op.transfers()
        ));
    }
    let through = gds.bytes_transferred.saturating_add(streamed);
    if through > 0 {
        through_cufile(e, v, ops, through, "KvikIO");
        if on && gds.bytes_transferred > 0 {
            v.conflicts.push(format!(
                "KvikIO reported {} through GDS although KVIKIO_COMPAT_MODE=ON",
                Bytes(gds.bytes_transferred)
            ));
        }
        if on && streamed > 0 {
            // KvikIO's stream-ordered calls become synchronous POSIX reads under compat mode ON,
            // which its statistics count: cuFile must not have seen them.
            v.conflicts.push(format!(
                "cuFile counted {} of KvikIO's stream-ordered {} although KVIKIO_COMPAT_MODE=ON",
                Bytes(streamed),
                e.op.transfers()
            ));
        }
    } else if let Some(ops) = ops {
        v.claims.push(ops.claim());
        if ops.reads() > 0 {
            v.conflicts.push(format!(
                "KvikIO reported nothing through GDS but {} counted {} {}",
                ops.source.label(),
                ops.reads(),
                e.op.transfers()
            ));
        }
    }
}

/// Bytes of `uncounted` (what KvikIO's statistics left out) that cuFile's counters place, for a
/// trial that moved them with KvikIO's stream-ordered calls; 0 for any other trial.
///
/// KvikIO documents (`kvikio/observation.hpp`, 26.10) that its monitors, which its statistics
/// are, see nothing of `read_async`/`write_async` when they reach cuFile's stream API, while
/// the same calls falling back to a synchronous `read()`/`write()` (its compat mode) are counted
/// like any other. cuFile's counters see the former, so they are what places those bytes: the
/// bytes cuFile counted beyond KvikIO's own GDS share, never more than KvikIO left out. Bytes
/// neither counted stay unplaced.
fn stream_ordered_share(
    e: &Evidence,
    v: &mut Builder,
    ops: Option<&Ops>,
    gds: u64,
    uncounted: u64,
) -> u64 {
    let Some(ops) = ops.filter(|_| e.kvikio_api == Some(KvikioApi::Async) && uncounted > 0) else {
        return 0;
    };
    let beyond = ops.read_bytes.saturating_sub(gds);
    // gds_stats prints MiB: its bytes may fall short of the exact total by less than one.
    let rounding = if ops.source == Source::GdsStats {
        MIB - 1
    } else {
        0
    };
    let share = if beyond > 0 && ops.reads() > 0 && beyond.saturating_add(rounding) >= uncounted {
        uncounted
    } else {
        beyond.min(uncounted)
    };
    if share == 0 {
        return 0;
    }
    let calls = stream_ordered_calls(e.op);
    let who = ops.source.label();
    let what = if share < uncounted {
        format!(
            "{who}'s counters account for {} of the {} it did not count",
            Bytes(share),
            Bytes(uncounted)
        )
    } else if uncounted == e.bytes_read {
        format!("{who}'s counters account for all {}", Bytes(uncounted))
    } else {
        format!(
            "{who}'s counters account for the {} it did not count",
            Bytes(uncounted)
        )
    };
    v.notes.push(format!(
        "KvikIO's {calls} is not in KvikIO's statistics; {what}"
    ));
    share
}

fn describe_backends(backends: &KvikioBackends) -> String {
    if backends.by_backend.is_empty() {
        return "no backend reported any bytes".into();
    }
    let parts: Vec<String> = backends
        .by_backend
        .iter()
        .map(|(name, t)| format!("{name} {} in {} ops", Bytes(t.bytes_transferred), t.num_ops))
        .collect();
    parts.join(", ")
}

/// `KvikIO: GDS 1.00 GiB` (backends that moved bytes only); `streamed`: its stream-ordered calls
/// moved bytes it did not count.
fn claim_backends(backends: &KvikioBackends, streamed: bool) -> String {
    let parts: Vec<String> = backends
        .by_backend
        .iter()
        .filter(|(_, t)| t.bytes_transferred > 0)
        .map(|(name, t)| format!("{name} {}", Bytes(t.bytes_transferred)))
        .collect();
    let uncounted = if streamed {
        " (its stream-ordered calls are not counted)"
    } else {
        ""
    };
    if parts.is_empty() {
        format!("KvikIO: no bytes{uncounted}")
    } else {
        format!("KvikIO: {}{uncounted}", parts.join(", "))
    }
}
