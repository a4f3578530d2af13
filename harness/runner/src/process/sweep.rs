//! What a worker leaves behind outside its process group: a child started under `setsid` (a
//! Python worker's helper, a tool that daemonizes) escapes the group SIGKILL and would keep
//! running after the trial. The gate is a child subreaper ([`become_subreaper`]), so when a
//! worker dies its orphans are re-parented to the gate instead of init; once the worker has ended
//! (exit, timeout or interrupt) [`sweep`] stops those that came from it, and their descendants,
//! and reaps them so no zombie stays.
//!
//! Which orphans came from which worker: several workers of one trial (one per GPU) run at once,
//! and other code of the gate starts commands of its own, so "every child of the gate that is not
//! a live worker" would hit processes that are not ours to stop. Each worker's environment carries
//! a token ([`LINEAGE_VAR`]) its descendants inherit, and its process group id is its pid: a direct
//! child of the gate with either is from that worker. Known limit: a descendant that both leaves
//! the group and clears its environment is not recognised. When the gate itself is killed with
//! SIGKILL nothing here runs: the orphans go to init, and the guard (`guard.rs`) stops them.

use std::collections::BTreeMap;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that names a worker's lineage.
pub const LINEAGE_VAR: &str = "GDS_GATE_LINEAGE";

/// How long leftovers get between SIGTERM and SIGKILL: their trial is over, so less than a
/// worker's grace.
const GRACE: Duration = Duration::from_secs(1);

/// How long the gate waits for SIGKILLed leftovers to be reaped. A process in uninterruptible
/// sleep (a stuck read) may take longer; it is then left, and ends when its I/O does.
const REAP: Duration = Duration::from_secs(2);

/// A token no other worker of this gate has, nor a worker of another gate: [`gate_lineage`], a
/// dash and a count.
pub fn new_lineage() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        gate_lineage(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// What every worker token of this gate starts with: its pid and when it first asked, so that a
/// later gate given the same pid has other tokens.
pub fn gate_lineage() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}.{}", std::process::id(), since_epoch.as_nanos())
    })
}

/// Every process whose environment has an entry starting with `prefix`, this one left out.
pub fn carrying(prefix: &str) -> Vec<u32> {
    let me = std::process::id();
    processes()
        .into_keys()
        .filter(|&pid| pid != me && env_starts_with(pid, prefix))
        .collect()
}

/// Makes this process a child subreaper, once. Orphans of other commands the gate starts are
/// re-parented to it too; they are not waited for, which leaves at most a zombie until the gate
/// exits.
pub fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with integer arguments only; a failure (an old kernel) leaves orphans to
        // init as before, which the sweep then cannot reap but still stops.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) };
    });
}

/// Stops and reaps what the worker `pgid` (started with `lineage` in its environment, already
/// reaped) left running: the gate's direct children in its group or with its token, and all of
/// their descendants whatever they did to their group or environment.
pub fn sweep(pgid: i32, lineage: &str) {
    let gate = std::process::id();
    let table = processes();
    let marker = format!("{LINEAGE_VAR}={lineage}");
    let mut left: Vec<u32> = Vec::new();
    for (&pid, info) in &table {
        if info.ppid == gate && (info.pgrp == pgid || has_env(pid, &marker)) {
            subtree(&table, pid, &mut left);
        }
    }
    if left.is_empty() {
        return;
    }
    signal_all(&left, libc::SIGTERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline && left.iter().any(|&pid| running(pid)) {
        std::thread::sleep(Duration::from_millis(10));
    }
    signal_all(&left, libc::SIGKILL);
    reap(left);
}

struct Stat {
    zombie: bool,
    ppid: u32,
    pgrp: i32,
}

/// Exists and is not a zombie: [`crate::process::running`].
pub(super) fn running(pid: u32) -> bool {
    read_stat(pid).is_some_and(|stat| !stat.zombie)
}

/// Every process (thread-group leader: /proc lists no other thread) with its parent and group.
fn processes() -> BTreeMap<u32, Stat> {
    let mut table = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return table;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if let Some(stat) = read_stat(pid) {
            table.insert(pid, stat);
        }
    }
    table
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = super::stat_fields(&text)?;
    let zombie = fields.next()?.starts_with('Z');
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { zombie, ppid, pgrp })
}

fn has_env(pid: u32, marker: &str) -> bool {
    env_any(pid, |entry| entry == marker.as_bytes())
}

fn env_starts_with(pid: u32, prefix: &str) -> bool {
    env_any(pid, |entry| entry.starts_with(prefix.as_bytes()))
}

fn env_any(pid: u32, mut check: impl FnMut(&[u8]) -> bool) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(&mut check))
}

/// `root` and every process under it, parents first.
fn subtree(table: &BTreeMap<u32, Stat>, root: u32, out: &mut Vec<u32>) {
    let start = out.len();
    out.push(root);
    let mut next = start;
    while next < out.len() {
        let parent = out[next];
        out.extend(
            table
                .iter()
                .filter(|(_, stat)| stat.ppid == parent)
                .map(|(&pid, _)| pid),
        );
        next += 1;
    }
}

fn signal_all(pids: &[u32], signal: i32) {
    for &pid in pids {
        // SAFETY: signalling a descendant of the gate found a moment ago; ESRCH (already gone)
        // is fine.
        unsafe { libc::kill(pid as i32, signal) };
    }
}

/// Waits for each of `pids`: those under a process that dies with them are re-parented to the
/// gate only then, so each is retried until reaped, gone, or [`REAP`] has passed. Waiting by pid
/// (never for any child) leaves the workers and commands other threads wait on alone.
fn reap(mut pids: Vec<u32>) {
    let deadline = Instant::now() + REAP;
    loop {
        pids.retain(|&pid| {
            // SAFETY: waiting, without blocking, for one pid; a null status pointer is allowed.
            let reaped = unsafe { libc::waitpid(pid as i32, std::ptr::null_mut(), libc::WNOHANG) };
            // Not reaped here and gone: another parent reaped it.
            reaped != pid as i32 && std::path::Path::new(&format!("/proc/{pid}")).exists()
        });
        if pids.is_empty() || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
