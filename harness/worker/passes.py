"""The pass loops of gds-gate's Python worker (kvikio_worker.py), shared by its KvikIO and
PyTorch readers: warm-up and measured passes, read or written through an `io` object that says
how the library under test moves the bytes (kvikio_worker.KvikioIo, torch_reader.TorchIo),
timed, verified on the GPU, their cost and progress recorded, and the failures said as the Rust
worker says them.
"""

import contextlib
import ctypes
import errno
import faulthandler
import json
import mmap
import os
import resource
import time

import gds_pass  # the gate's extension (harness/pyworker), linked into the trial folder

MASK = (1 << 64) - 1
FALLOC_FL_ZERO_RANGE = 0x10  # linux/falloc.h


@contextlib.contextmanager
def watched(nbytes, what="a read or write section", bound=None):
    """A section moving `nbytes` through the library under test (`what`), watched by the Rust
    worker's watchdog (gds_pass.Section): past the bound its bytes give (`bound` seconds, for
    tests), the watchdog names it on stderr from a thread of its own, so even a call that holds
    the GIL is named, and the gate reads that line to say where a trial it stopped was stuck.
    Just before, every Python thread's stack is written to stderr, so the failure also shows the
    library call it hung in; faulthandler writes from C even while the stuck call holds the GIL."""
    section = gds_pass.Section(what, nbytes, bound)
    faulthandler.dump_traceback_later(section.stacks_after)
    try:
        with section:
            yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def failure(reason, next_step, missing=None):
    return {"reason": reason, "next": next_step, "missing": missing}


def recording():
    """Latency and CPU time are recorded unless GDS_GATE_RECORD_COST=0 (the overhead bench)."""
    return os.environ.get("GDS_GATE_RECORD_COST") != "0"


def cpu_time():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def pass_cost(total, seconds, cpu_before, cpu_after, ops, calls=None):
    """One measured pass's cost, as the Rust worker's PassCost. KvikIO's statistics count its
    `pread` operations and their summed duration, no distribution: the latency is a mean. A
    writing pass gives its `calls` (the plan's tasks) and no operations: no latency then."""
    if calls is None:
        calls = ops.num_reads if ops is not None else 0
    cpu = None
    per_gib = None
    if cpu_before is not None and cpu_after is not None:
        cpu = {"user_seconds": max(0.0, cpu_after[0] - cpu_before[0]),
               "system_seconds": max(0.0, cpu_after[1] - cpu_before[1])}
        if total:
            per_gib = (cpu["user_seconds"] + cpu["system_seconds"]) / (total / 2**30)
    return {"read_calls": calls, "iops": calls / seconds if seconds > 0 else 0.0, "cpu": cpu,
            "cpu_seconds_per_gib": per_gib, "latency": mean_latency(ops)}


def mean_latency(ops):
    if ops is None or not ops.num_reads:
        return None
    return {"calls": ops.num_reads, "mean_us": ops.total_duration_ns / ops.num_reads / 1e3,
            "p50_us": None, "p90_us": None, "p99_us": None, "p999_us": None, "max_us": None}


def read_passes(spec, io, cupy, device, buffer, verifier, window, m, state):
    """The warm-up and measured passes of a reading trial: the Rust worker's own pass loop
    (gds_pass.read_passes) over a Landing for `io` (KvikioIo or the torch reader's TorchIo),
    which drops the page cache when cold, clears the buffer, times each read section, verifies it
    with the kernels over `buffer`, records costs and progress and stops at the first failure.
    Its figures go into `m`; the failure is returned."""
    landing = Landing(io, cupy, device, buffer, verifier)
    text, failed = gds_pass.read_passes(json.dumps(spec), landing, window)
    native = json.loads(text)
    m["setup"].extend(native.pop("setup"))
    memory = native.pop("memory") or {}
    state["device_peak"] = memory.get("device_bytes")
    for key in PASS_FIGURES:  # the Rust record leaves out what it did not measure
        if key in native:
            m[key] = native[key]
    return json.loads(failed) if failed is not None else None


# What the Rust pass loop measures (harness/model/src/record.rs: Measurement); the rest of the
# record is the Python worker's (the library's own figures, the GPU, the process).
PASS_FIGURES = ("warmup_seconds", "seconds", "gbps", "integrity", "resident_after_drop", "verify_seconds",
                "startup_seconds", "preparation_seconds", "costs", "latency", "window", "load")


class Landing:
    """What the Rust pass loop calls (harness/pyworker/src/passes.rs): the library's reads through
    `io` into `buffer`, and the verification kernels (`verifier`) over one range of it."""

    def __init__(self, io, cupy, device, buffer, verifier):
        self.io, self.cupy, self.device, self.buffer, self.verifier = io, cupy, device, buffer, verifier
        self.library = io.library
        self.record = recording()

    def clear(self):
        self.buffer.fill(0xA5)
        self.device.synchronize()

    def device_used(self):
        return device_used(self.cupy)

    def before_read(self):
        """Outside the timed section: the library's counters before it."""
        self.before = self.io.counters() if self.record else None

    def read(self, segments):
        """One section, timed by the caller and watched (watched: the stuck line and Python's
        stacks): the bytes read."""
        with watched(sum(s["len"] for s in segments), "%s read" % self.library):
            self.io.reset()
            self.started = time.perf_counter()
            read = self.io.read(segments)
            self.device.synchronize()
        return read

    def after_read(self, segments):
        """Outside the timed section: (read calls, seconds to the first call's end or None, and
        the library's own (calls, summed ns) or None)."""
        first = self.io.first_done - self.started if self.io.first_done is not None else None
        ops = self.io.since(self.before) if self.record else None
        totals = (ops.num_reads, ops.total_duration_ns) if ops is not None and ops.num_reads else None
        calls = self.io.calls_in(segments)
        if calls is None:
            calls = ops.num_reads if ops is not None else 0
        return calls, first, totals

    def reopen(self, paths):
        return self.io.reopen(paths)

    def measured_from(self):
        self.io.measured_from()

    def exact_range(self, seed, file_offset, buffer_offset, length):
        return self.verifier.exact_range(seed, file_offset, buffer_offset, length)

    def checksum_range(self, file_offset, buffer_offset, length):
        return self.verifier.checksum_range(file_offset, buffer_offset, length)


class FirstCall:
    """When the current pass's first read call ended (`first_done`, perf_counter seconds), for a
    load's time to the first byte: the readers call `ended()` after each call."""
    first_done = None

    def ended(self):
        if self.first_done is None:
            self.first_done = time.perf_counter()

    def reset(self):
        self.first_done = None


def write_passes(spec, io, cupy, device, buffer, verifier, m, phase):
    """A writing trial (`op: write` or `roundtrip`), as the Rust worker runs one
    (harness/worker/src/trial/write.rs), through `io` (KvikioIo or the torch reader's
    TorchIo): the generator's bytes made in `buffer` by the fill kernel, written (timed; the
    files blanked and opened for writing before, closed after), fsync timed apart, the
    pages dropped; then `write` reads the files back with O_DIRECT (never through the library
    under test) into a second device buffer and verifies it, and `roundtrip` reads them back
    through the library and verifies that."""
    trial, plan = spec["trial"], spec["plan"]
    spec_text = json.dumps(spec)
    total = m["bytes_per_repetition"]
    paths = [f["path"] for f in plan["files"]]
    bases = {}
    for s in plan["segments"]:
        bases.setdefault(s["file"], s["buffer_offset"])
    for index, f in enumerate(plan["files"]):
        verifier.fill(buffer, bases[index], f["size"], f["seed"])
    check = cupy.empty(total, dtype=cupy.uint8)
    check_verifier = verifier.over(check)
    io.prepare_writes(buffer, check, plan["segments"], roundtrip=trial["op"] == "roundtrip")
    phase("generated source and read-back buffer")
    passes = trial["warmup"] + trial["repetitions"]
    record = recording()
    figures = {"fsync_seconds": [], "verify_read_seconds": [], "read_back_seconds": [], "read_back_gbps": []}
    m["write"] = figures
    fail = None
    for p in range(passes):
        prepared = time.perf_counter()
        for f in plan["files"]:
            blank(f["path"], f["size"])
        if p > 0:  # the first pass's preparation is part of the start-up
            add_preparation(m, time.perf_counter() - prepared)
        io.open_for_write(paths)
        if p == 0:
            hold_for_release(spec, m)
            m["startup_seconds"] = (time.time_ns() - spec["spawned_at_unix_ns"]) / 1e9
        if p == trial["warmup"]:
            io.measured_from()
        cpu_before = cpu_time() if record else None
        with watched(total, "%s write" % io.library):
            t0 = time.perf_counter()
            written = io.write(plan["segments"], buffer)
            seconds = time.perf_counter() - t0
        cpu_after = cpu_time() if record else None
        io.close_written()
        t1 = time.perf_counter()
        for path in paths:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync = time.perf_counter() - t1
        dropping = time.perf_counter()
        dropped = gds_pass.drop_files(spec_text)
        add_preparation(m, time.perf_counter() - dropping)
        if dropped is not None:
            fail = json.loads(dropped)
            break
        if written != total:
            fail = failure("%s wrote %d bytes of %d in pass %d" % (io.library, written, total, p + 1),
                           "check the data dir's free space and the storage (dmesg)")
            break
        measured = p >= trial["warmup"]
        if measured:
            m["seconds"].append(seconds)
            m["gbps"].append(total / seconds / 1e9)
            figures["fsync_seconds"].append(fsync)
            if record:
                m["costs"].append(pass_cost(total, seconds, cpu_before, cpu_after, None, calls=io.write_calls))
        else:
            m["warmup_seconds"].append(seconds)
        clearing = time.perf_counter()
        check.fill(0xA5)
        device.synchronize()
        t2 = time.perf_counter()
        add_preparation(m, t2 - clearing)
        if trial["op"] == "roundtrip":
            read = io.read_back(paths, plan["segments"], check)
            device.synchronize()
            if measured:
                figures["read_back_seconds"].append(time.perf_counter() - t2)
                figures["read_back_gbps"].append(read / figures["read_back_seconds"][-1] / 1e9)
        else:
            for index, f in enumerate(plan["files"]):
                read_direct(f["path"], f["size"], check, bases[index], cupy)
            if measured:
                figures["verify_read_seconds"].append(time.perf_counter() - t2)
        m["integrity"] = json.loads(gds_pass.verify(spec_text, check_verifier))
        m["verify_seconds"] += m["integrity"]["seconds"]
        if m["integrity"]["bad_words"] or m["integrity"]["checksum"] != m["integrity"]["expected_checksum"]:
            fail = integrity_failure(m["integrity"], p + 1, passes,
                                     "the bytes %s differ from those written. Run the trial again; if it repeats, "
                                     "the write path corrupts data: check `dmesg` for I/O errors and the storage's "
                                     "health" % ("read back" if trial["op"] == "roundtrip"
                                                 else "on the disk (read with O_DIRECT)"))
            fail["reason"] += " (written through the path under test)"
            break
        gds_pass.report_progress(p + 1, passes, seconds, total)
    return fail


def add_preparation(m, seconds):
    """Untimed preparation after the start-up (record.rs: Measurement::preparation_seconds)."""
    m["preparation_seconds"] = m.get("preparation_seconds", 0.0) + seconds


def blank(path, size):
    """Empties a written file before a pass, as harness/model/src/write.rs `blank` does: its
    bytes zeroed in place (FALLOC_FL_ZERO_RANGE; nothing freed, so no TRIM on a `discard`
    mount), or truncated where the file system cannot zero a range. A write that did not
    happen then leaves zeros (or a short file) that verification cannot pass."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        if size == 0 or libc.fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, size) != 0:
            error = ctypes.get_errno()
            if size and error not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                raise OSError(error, "cannot zero `%s`: %s" % (path, os.strerror(error)))
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def writes(trial):
    """`op: write` or `roundtrip` (a spec without `op` reads)."""
    return trial.get("op", "read") in ("write", "roundtrip")


def device_used(cupy):
    free, total = cupy.cuda.runtime.memGetInfo()
    return total - free


DIRECT_CHUNK = 8 << 20


def read_direct(path, size, check, base, cupy, start=0):
    """Reads `size` bytes of a file from `start` (a multiple of 4 KiB) with O_DIRECT (the page
    cache bypassed, KvikIO not involved) into `check` at `base`, so that the verification sees
    what is on the disk."""
    import numpy
    scratch = mmap.mmap(-1, DIRECT_CHUNK)  # page-aligned, as O_DIRECT needs
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        at = 0
        while at < size:
            n = os.preadv(fd, [scratch], start + at)
            if n == 0:
                raise OSError("`%s` ended at byte %d of %d written" % (path, at, size))
            n = min(n, size - at)
            check[base + at:base + at + n].set(numpy.frombuffer(scratch, dtype=numpy.uint8, count=n))
            at += n
    finally:
        os.close(fd)
        scratch.close()


# The start-up phase of the wait below, as harness/model/src/record.rs names it.
HELD_PHASE = "held for the previous worker's exit"


def hold_for_release(spec, m):
    """Ready for the first timed byte: wait, when the gate asks, until the previous trial's worker
    is gone, and say how long. See RELEASED in harness/model/src/protocol.rs."""
    folder = spec.get("hold_for_release")
    if not folder:
        return
    held = time.perf_counter()
    while not os.path.exists(os.path.join(folder, "released")):
        time.sleep(0.001)
    m["setup"].append([HELD_PHASE, time.perf_counter() - held])


def hold_for_sample(folder):
    """gds_stats reads this live process's counters: say the I/O is done and wait (bounded) for
    the gate to have sampled it. See harness/model/src/protocol.rs."""
    if not folder:
        return
    open(os.path.join(folder, "io-done"), "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(folder, "sampled")) and time.monotonic() < deadline:
        time.sleep(0.01)


# Bytes read again around a pass's first wrong byte, as harness/worker/src/trial/recheck.rs does.
def integrity_failure(result, p, passes, next_text):
    """The failure of a pass whose bytes differ: the count of bad words, the first wrong byte's
    offset and file, the checksums; `next_text` says what to do."""
    checksums = "checksum expected %s, got %s" % (result["expected_checksum"], result["checksum"])
    bad = result["first_bad"]
    if bad:
        reason = ("integrity: %d bad 8-byte word(s); first wrong byte at offset %d of `%s` (pass %d of %d; %s)"
                  % (result["bad_words"], bad["file_offset"], bad["file"], p, passes, checksums))
    else:
        reason = "integrity: checksum mismatch (pass %d of %d; %s)" % (p, passes, checksums)
    return failure(reason, next_text)
