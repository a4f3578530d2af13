//! Reading the control: the file generated once in the data dir, then read whole a few times with
//! O_DIRECT on one thread (timed by the wall clock) and each read's bytes compared with the
//! generator on one thread (timed by that thread's CPU clock, and by the wall clock to see how much
//! of a core it got), then copied to another buffer in memory (timed by the wall clock: the pace
//! of a warm read). The host's counters are read around it all (see [`gds_model::busy`]).

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{ControlReading, SEED};
use gds_runner::data::direct::{AlignedBuf, clear_direct, direct_refused, open_maybe_direct};
use gds_runner::data::{self, DataError, GeneratedFile};

/// Reads per reading: the median of three is not moved by one disturbed read.
const READS: usize = 3;

/// Bytes per read call: what a single-threaded sequential reader such as `dd bs=4M` issues.
const CHUNK: usize = 4 << 20;

/// The most bytes of the copy's destination: far larger than any CPU cache, so that the copy
/// moves at the memory's pace, and small beside the control's own buffer.
const COPY: usize = 64 << 20;

/// The control file, ready to be read.
pub struct Control {
    path: PathBuf,
    size: u64,
}

impl Control {
    /// Generates the control file in `data_dir` (or reuses it when its sidecar vouches for it).
    pub fn prepare(data_dir: &Path, size: u64) -> Result<Control, DataError> {
        let file = GeneratedFile { seed: SEED, size };
        let mut quiet = data::NoProgress;
        let prepared = data::ensure_generated(data_dir, file, &mut quiet)?;
        Ok(Control {
            path: prepared.path,
            size,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file [`READS`] times. A byte that is not the generator's is an error: the file
    /// was changed under the gate, and rates measured on it mean nothing.
    pub fn read(&self) -> io::Result<ControlReading> {
        // Without /proc the control still reads; the host is then not compared.
        let host = gds_model::busy::Snapshot::take(gds_model::busy::Disk::of(&self.path)).ok();
        let len = usize::try_from(self.size).map_err(io::Error::other)?;
        let mut buf = AlignedBuf::new(len);
        // Written once here, so that its pages are not faulted in while the copy is timed.
        let mut copy = vec![1u8; len.clamp(1, COPY)];
        let mut reading = ControlReading {
            size: self.size,
            disk_gbps: Vec::with_capacity(READS),
            cpu_gib_per_s: Vec::with_capacity(READS),
            cpu_share: Vec::with_capacity(READS),
            memory_gbps: Vec::with_capacity(READS),
            host: None,
            direct: true,
        };
        for _ in 0..READS {
            let started = Instant::now();
            reading.direct &= self.read_into(&mut buf[..len])?;
            reading
                .disk_gbps
                .push(self.size as f64 / started.elapsed().as_secs_f64().max(1e-9) / 1e9);

            let (wall_started, cpu_started) = (Instant::now(), thread_cpu_seconds()?);
            let mismatch = gds_model::verify::exact_compare_serial(SEED, 0, &buf[..len]);
            let cpu = (thread_cpu_seconds()? - cpu_started).max(1e-9);
            let wall = wall_started.elapsed().as_secs_f64().max(cpu);
            if let Some(offset) = mismatch.first_bad_offset {
                return Err(io::Error::other(format!(
                    "the control file {} does not hold the generator's bytes (first wrong byte at offset {offset}); delete it and the gate writes it again",
                    self.path.display()
                )));
            }
            reading
                .cpu_gib_per_s
                .push(self.size as f64 / f64::from(1u32 << 30) / cpu);
            reading.cpu_share.push(cpu / wall);

            let started = Instant::now();
            copy_through(&buf[..len], &mut copy);
            reading
                .memory_gbps
                .push(len as f64 / started.elapsed().as_secs_f64().max(1e-9) / 1e9);
        }
        reading.host = host.and_then(|start| start.until_now().ok());
        Ok(reading)
    }

    /// One whole read from the disk; returns whether it bypassed the page cache.
    fn read_into(&self, buf: &mut [u8]) -> io::Result<bool> {
        let (file, mut direct) = open_maybe_direct(&self.path, OpenOptions::new().read(true))?;
        if !direct {
            gds_model::cache::drop_path(&self.path)?;
        }
        let mut offset = 0;
        while offset < buf.len() {
            gds_runner::interrupt::stop_if_interrupted()?;
            let end = (offset + CHUNK).min(buf.len());
            match file.read_at(&mut buf[offset..end], offset as u64) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the control file {} ends at byte {offset}, before its {} bytes",
                            self.path.display(),
                            buf.len()
                        ),
                    ));
                }
                Ok(n) => offset += n,
                // Some file systems accept O_DIRECT at open and refuse the transfer.
                Err(error) if direct && direct_refused(&error) => {
                    clear_direct(&file)?;
                    gds_model::cache::drop_path(&self.path)?;
                    direct = false;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(direct)
    }
}

/// Copies `from` into `to`, a piece of `to`'s length at a time, as a warm read copies from the
/// page cache into the reader's buffer.
fn copy_through(from: &[u8], to: &mut [u8]) {
    for piece in from.chunks(to.len()) {
        to[..piece.len()].copy_from_slice(piece);
        std::hint::black_box(&to[..piece.len()]);
    }
}

/// CPU seconds this thread has run (`CLOCK_THREAD_CPUTIME_ID`): the check's own cost, whatever
/// else the process does meanwhile.
fn thread_cpu_seconds() -> io::Result<f64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_is_read_and_checked_and_a_changed_byte_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let control = Control::prepare(dir.path(), 4 << 20).unwrap();
        let reading = control.read().unwrap();
        assert_eq!(reading.size, 4 << 20);
        assert_eq!(
            (
                reading.disk_gbps.len(),
                reading.cpu_gib_per_s.len(),
                reading.cpu_share.len(),
                reading.memory_gbps.len()
            ),
            (READS, READS, READS, READS)
        );
        if std::path::Path::new("/proc/stat").exists() {
            let host = reading.host.expect("a host reading where /proc is");
            assert!(
                host.cores >= 1 && (0.0..=1.0).contains(&host.others_cpu),
                "{host:?}"
            );
        }
        assert!(reading.cpu_share.iter().all(|s| *s > 0.0 && *s <= 1.0));
        assert!(
            reading
                .disk_gbps
                .iter()
                .chain(&reading.cpu_gib_per_s)
                .chain(&reading.memory_gbps)
                .all(|x| x.is_finite() && *x > 0.0),
            "{reading:?}"
        );

        let file = OpenOptions::new().write(true).open(control.path()).unwrap();
        file.write_at(&[0x5a ^ 0xff], 12_345).unwrap();
        let error = control.read().unwrap_err().to_string();
        assert!(error.contains("offset 12345"), "{error}");
    }
}
