//! The guard: a small process the gate starts once, before its first worker, that outlives a
//! gate killed with SIGKILL and then stops what its workers left. A subreaper dies like any
//! process, its orphans go to init, and `PR_SET_PDEATHSIG` reaches only the worker itself (the
//! signal is set by each process for its own parent, and a worker's children never set it), so
//! something that survives the gate has to do it. The guard holds the read end of a pipe whose
//! write end only the gate has (close-on-exec, so no worker inherits it); the end of the gate,
//! however it comes, closes it, and the guard then SIGKILLs every process that carries one of the
//! gate's lineage tokens (`sweep.rs`), wherever it was re-parented. A cgroup per worker would not
//! depend on the environment, but needs a writable cgroup v2 hierarchy, which CI containers
//! rarely give. Known limit: a descendant that cleared its environment is not found.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Once, OnceLock};
use std::time::Duration;

use super::sweep;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// The gds-gate binary, which runs the guard as `gds-gate guard`. Without it (the library's own
/// tests) no guard is started.
pub fn set_program(path: PathBuf) {
    let _ = PROGRAM.set(path);
}

/// Starts the guard, once per gate; a guard that cannot start leaves things as they were.
pub fn start() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Some(program) = PROGRAM.get() {
            let _ = spawn(program);
        }
    });
}

fn spawn(program: &Path) -> std::io::Result<()> {
    let (reader, writer) = std::io::pipe()?;
    // Its own group: a Ctrl-C at a terminal (twice, ending the gate at once) must not end the
    // guard too. It is not waited for: it lives as long as the gate, then a little longer.
    Command::new(program)
        .arg("guard")
        .arg("--lineage")
        .arg(sweep::gate_lineage())
        .env_remove(sweep::LINEAGE_VAR)
        .stdin(reader)
        .stdout(Stdio::null())
        // Not the gate's stderr: whoever reads it to its end would wait for the guard too.
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    // Held open until the gate ends, however it ends.
    std::mem::forget(writer);
    Ok(())
}

/// `gds-gate guard --lineage L`: waits for the gate to end (its standard input reaches end of
/// file), then SIGKILLs every process with a token of lineage `L`.
pub fn serve(lineage: &str) -> u8 {
    let mut stdin = std::io::stdin().lock();
    let mut buffer = [0u8; 64];
    loop {
        match stdin.read(&mut buffer) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let marker = format!("{}={lineage}-", sweep::LINEAGE_VAR);
    // Again while some are found: one may fork while its parent is being killed.
    for _ in 0..10 {
        let found = sweep::carrying(&marker);
        if found.is_empty() {
            break;
        }
        for pid in found {
            // SAFETY: signalling a process found a moment ago that carries this gate's token;
            // ESRCH (already gone) is fine.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    0
}
