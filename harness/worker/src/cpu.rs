//! The worker process's CPU time, read with `getrusage(RUSAGE_SELF)`: every thread of the
//! process, cuFile's own I/O threads included, so a fallback that copies through host bounce
//! buffers shows as the CPU it burns.

use gds_model::cost::CpuTime;

/// User and system time of this process so far; `None` if the kernel refuses (it does not).
pub fn process_time() -> Option<CpuTime> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a valid out-pointer to a `rusage`; RUSAGE_SELF needs nothing else.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: getrusage succeeded, so it filled the struct.
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(CpuTime {
        user_seconds: seconds(usage.ru_utime),
        system_seconds: seconds(usage.ru_stime),
    })
}

#[cfg(test)]
mod tests {
    use super::process_time;

    #[test]
    fn cpu_time_grows_with_work_done() {
        let before = process_time().unwrap();
        // Spin for about 50 ms of CPU: user time must move by at least 10 ms.
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let spent = process_time().unwrap().since(&before);
        assert!(spent.total() >= 0.01, "{spent:?}");
        assert!(spent.user_seconds >= 0.0 && spent.system_seconds >= 0.0);
    }
}
