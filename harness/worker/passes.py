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
import mmap
import os
import resource
import threading
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


def hex16(value):
    return "0x%016x" % value


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


def read_passes(spec, io, cupy, device, buffer, verifier, windows, m, state):
    """The warm-up and measured passes of a reading trial through `io` (KvikioIo or the torch
    reader's TorchIo): the page cache dropped when cold, the buffer poisoned, the pass read
    (timed) and verified on the GPU, its cost and progress recorded. The first failure stops."""
    trial, plan = spec["trial"], spec["plan"]
    total = m["bytes_per_repetition"]
    passes = trial["warmup"] + trial["repetitions"]
    record = recording()
    fail = None
    cached_after_drop = None
    paths = [f["path"] for f in plan["files"]] if trial["cache"] == "cold" else []
    # A load opens (and registers) its files and buffer again every pass, timed into the pass.
    loads = [f["path"] for f in plan["files"]] if trial.get("op") == "load" else None
    # A drop starts as a pass's reads end, beside its verification (Drop).
    pending = Drop(io, paths)
    for p in range(passes):
        prepared = time.perf_counter()
        # The whole buffer, or the first window (streamed_pass clears each later one), cleared
        # while the drop runs on; then the drop is waited for.
        try:
            buffer.fill(0xA5)
            device.synchronize()
        except BaseException:
            WIND_DOWN.append(pending)
            raise
        resident = pending.finish()
        if resident is not None:
            cached_after_drop = max(cached_after_drop or 0.0, resident)
        if p > 0:  # the first pass's preparation is part of the start-up
            add_preparation(m, time.perf_counter() - prepared)
        if p == 0:
            hold_for_release(spec, m)
            m["startup_seconds"] = (time.time_ns() - spec["spawned_at_unix_ns"]) / 1e9
        if p == trial["warmup"]:
            io.measured_from()
        ops_before = io.counters() if record else None
        what = "%s read" % io.library
        started, opened = time.perf_counter(), None
        if loads is not None:
            io.reset()
            opened = io.reopen(loads)
        if windows:
            read, seconds, cpu, result = streamed_pass(spec, windows, io.read, buffer, device, verifier, record, what)
            pending = Drop(io, paths)
        else:
            read, seconds, cpu = timed_read(io.read, plan["segments"], device, record, what)
            pending = Drop(io, paths)
            result = verifier.check(spec, trial["expect"]["integrity"])
        state["device_peak"] = max(state["device_peak"] or 0, device_used(cupy)) or None
        cpu_before, cpu_after = cpu if cpu is not None else (None, None)
        ops = io.since(ops_before) if record else None
        if read != total:
            fail = failure("%s read %d bytes of %d in pass %d" % (io.library, read, total, p + 1),
                           "check the files and the storage; a short read means the file changed or an I/O error")
            break
        if opened is not None:
            # A load's time is the whole of it: what the loader's user waits for.
            seconds += sum(step for step in opened if step is not None)
            if p >= trial["warmup"]:
                record_load(m, opened, io.first_done - started)
        if p < trial["warmup"]:
            m["warmup_seconds"].append(seconds)
        else:
            m["seconds"].append(seconds)
            m["gbps"].append(total / seconds / 1e9)
            if record:
                m["costs"].append(pass_cost(total, seconds, cpu_before, cpu_after, ops, io.calls))
        m["integrity"] = result
        m["verify_seconds"] += m["integrity"]["seconds"]
        if m["integrity"]["bad_words"] or m["integrity"]["checksum"] != m["integrity"]["expected_checksum"]:
            on_disk = recheck(plan, m["integrity"]["first_bad"], verifier, cupy)
            fail = integrity_failure(m["integrity"], p + 1, passes, next_step(on_disk))
            break
        gds_pass.report_progress(p + 1, passes, seconds, total)
    WIND_DOWN.append(pending)
    m["resident_after_drop"] = cached_after_drop
    return fail


def record_load(m, opened, first_byte):
    """A measured load's set-up figures, as the Rust worker's `record_load`: `opened` is the
    seconds to open (and register) the files and to register the buffer (None where the reader
    registers none); `first_byte` runs from the load's start to the end of its first read call."""
    load = m.setdefault("load", {"open_seconds": [], "first_byte_seconds": []})
    load["open_seconds"].append(opened[0])
    if opened[1] is not None:
        load.setdefault("register_seconds", []).append(opened[1])
    load["first_byte_seconds"].append(first_byte)


class FirstCall:
    """When the current pass's first read call ended (`first_done`, perf_counter seconds), for a
    load's time to the first byte: the readers call `ended()` after each call."""
    first_done = None

    def ended(self):
        if self.first_done is None:
            self.first_done = time.perf_counter()

    def reset(self):
        self.first_done = None


# A cold read that finds more of a file cached measures memory (trial/cold.rs: MAX_RESIDENT_AFTER_DROP).
MAX_RESIDENT_AFTER_DROP = 0.05
# As gds_model::cache::drop_clean_pages: a dropping thread takes at least 256 MiB, at most 8
# threads, no more than this process may run on.
DROP_RANGE = 256 << 20
MAX_DROPPERS = 8


def drop_page_cache(path):
    """Drops the file's pages (POSIX_FADV_DONTNEED needs no privileges) and returns the fraction
    still resident, as the Rust worker reports it (mincore over a mapping). As there
    (harness/worker/src/trial/cold.rs), disjoint ranges are dropped on a few threads (small
    folios, which threads reading from one queue leave, drop faster so), and the file is synced
    and dropped again only where pages stayed: dirty ones are not dropped, and a sync on every
    pass would flush the disk's cache (KvikIO's drop_file_page_cache syncs first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        drop_clean_pages(fd, size)
        resident = resident_fraction(fd, size)
        if resident is not None and resident > MAX_RESIDENT_AFTER_DROP:
            os.fsync(fd)
            drop_clean_pages(fd, size)
            resident = resident_fraction(fd, size)
        return resident
    finally:
        os.close(fd)


def drop_clean_pages(fd, size):
    droppers = max(1, min(size // DROP_RANGE, len(os.sched_getaffinity(0)), MAX_DROPPERS))
    if droppers == 1:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return
    per = -(-(size // droppers) // (2 << 20)) * (2 << 20)  # whole 2 MiB pages, the last range open-ended
    ranges = [(i * per, per if i + 1 < droppers else 0) for i in range(droppers)]
    errors = []

    def advise(offset, length):
        try:
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
        except OSError as error:
            errors.append(error)

    threads = [threading.Thread(target=advise, args=r) for r in ranges]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    # A folio is dropped only by a range that holds all of it: one larger than 2 MiB across a
    # boundary (kernels with 64 KiB pages make them) goes now, with little else left to walk.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


# mincore sets bit 0 of a page's byte when the page is resident; the other bits are reserved.
RESIDENT_BIT = bytes(b & 1 for b in range(256))


def resident_fraction(fd, size):
    """Pages of the file in the page cache over its pages (mincore over a read-only mapping,
    which maps without reading); None when it cannot say."""
    if size == 0:
        return 0.0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vector = (ctypes.c_ubyte * pages)()
        if libc.mincore(address, size, vector) != 0:
            return None
        return bytes(vector).translate(RESIDENT_BIT).count(1) / pages
    finally:
        libc.munmap(address, size)


class Drop(threading.Thread):
    """Drops the page cache of `paths` through `io` on a thread of its own, as the Rust worker
    does (harness/worker/src/trial/cold.rs): started as a pass's reads end, it runs beside the
    pass's verification and the next pass's clearing; `finish` waits for it (the worst fraction
    still cached, None with nothing to drop) and raises what it raised. The last one runs on
    beside the worker's wind-down and past its answer, in WIND_DOWN. With no paths (a warm
    trial) no thread starts."""

    def __init__(self, io, paths):
        super().__init__(name="page cache drop", daemon=True)
        self.io, self.paths, self.resident, self.error = io, paths, None, None
        if paths:
            self.start()

    def run(self):
        try:
            for path in self.paths:
                resident = self.io.drop(path)
                if resident is not None:
                    self.resident = max(self.resident or 0.0, resident)
        except BaseException as error:  # raised again in finish, on the pass's thread
            self.error = error

    def wait(self):
        if self.paths:
            self.join()

    def finish(self):
        self.wait()
        if self.error is not None:
            raise self.error
        return self.resident


WIND_DOWN = []


def finish_wind_down():
    """Waits for the drops still running after the last pass, once the answer is written; their
    results are not needed (the gate drops what a failed one left before the next trial)."""
    while WIND_DOWN:
        WIND_DOWN.pop().wait()


def write_passes(spec, io, cupy, device, buffer, verifier, m, phase):
    """A writing trial (`op: write` or `roundtrip`), as the Rust worker runs one
    (harness/worker/src/trial/write.rs), through `io` (KvikioIo or the torch reader's
    TorchIo): the generator's bytes made in `buffer` by the fill kernel, written (timed; the
    files blanked and opened for writing before, closed after), fsync timed apart, the
    pages dropped; then `write` reads the files back with O_DIRECT (never through the library
    under test) into a second device buffer and verifies it, and `roundtrip` reads them back
    through the library and verifies that."""
    trial, plan = spec["trial"], spec["plan"]
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
        for path in paths:
            io.drop(path)
        add_preparation(m, time.perf_counter() - dropping)
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
        m["integrity"] = check_verifier.check(spec, trial["expect"]["integrity"])
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


def timed_read(read_segments, segments, device, record, what="read"):
    """One read section (a pass, or one window of it) read by `read_segments(segments)` (`what`,
    for the watchdog): bytes read, seconds, and CPU before/after."""
    cpu_before = cpu_time() if record else None
    with watched(sum(s["len"] for s in segments), what):
        t0 = time.perf_counter()
        read = read_segments(segments)
        device.synchronize()
        seconds = time.perf_counter() - t0
    return read, seconds, (cpu_before, cpu_time()) if record else None


def streamed_pass(spec, windows, read_segments, buffer, device, verifier, record, what="read"):
    """A pass window by window (the caller cleared the first): each cleared, read (timed) and verified on the GPU before the
    next reuses the buffer; the windows' raw sums plus the files' length terms are the pass's
    checksum (harness/model/src/integrity.rs, Streamed)."""
    trial = spec["trial"]
    method = trial["expect"]["integrity"]
    read, seconds, cpu = 0, 0.0, None
    parts = []
    for index, window in enumerate(windows):
        if index > 0:
            buffer[:window["len"]].fill(0xA5)
            device.synchronize()
        got, took, spent = timed_read(read_segments, window["segments"], device, record, what)
        read, seconds = read + got, seconds + took
        if spent is not None:
            # Summed CPU of the read sections, as (0, sum) so that pass_cost takes the difference.
            before = cpu[1] if cpu is not None else (0.0, 0.0)
            cpu = ((0.0, 0.0), (before[0] + spent[1][0] - spent[0][0], before[1] + spent[1][1] - spent[0][1]))
        parts.append((window["start"], verifier.sums(spec["plan"], window["regions"], method)))
    return read, seconds, cpu, compose(parts, method, spec["length_terms"], spec["expected_checksum"])


def compose(parts, method, length_terms, expected):
    """The pass's integrity result from its windows' (start, (sum, bad words, first bad, seconds))."""
    result = {"method": method, "checksum": None, "expected_checksum": None, "bad_words": 0,
              "first_bad": None, "seconds": 0.0}
    if method == "none":
        return result
    observed = int(length_terms, 16)
    for start, (total, bad, first, seconds) in parts:
        observed = (observed + total) & MASK
        result["bad_words"] += bad
        result["seconds"] += seconds
        if result["first_bad"] is None and first is not None:
            result["first_bad"] = dict(first, buffer_offset=first["buffer_offset"] + start)
    result["checksum"] = hex16(observed)
    result["expected_checksum"] = hex16(expected)
    return result


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
RECHECK_REGION = 1 << 20


def recheck(plan, bad, verifier, cupy):
    """What the disk holds where a pass found its first wrong byte (the Rust worker's recheck,
    harness/worker/src/trial/recheck.rs): the 1 MiB around it read again with O_DIRECT, never
    through the path under test, and compared with the generator on the GPU. ("right", None),
    ("wrong", first wrong file offset) or ("unchecked", why)."""
    if not bad:
        return "unchecked", "the verification found no single wrong byte"
    f = next((f for f in plan["files"] if f["path"] == bad["file"]), None)
    if f is None:
        return "unchecked", "%s is not in the plan" % bad["file"]
    if f["seed"] is None:
        return "unchecked", "not a generated file, so no byte of it can be regenerated"
    start = bad["file_offset"] - bad["file_offset"] % RECHECK_REGION
    length = min(RECHECK_REGION, f["size"] - start)
    scratch = cupy.empty(length, dtype=cupy.uint8)
    try:
        read_direct(f["path"], length, scratch, 0, cupy, start)
    except OSError as error:
        return "unchecked", str(error)
    count, first = verifier.over(scratch).run(verifier.exact, 0, length, (f["seed"], start // 8), [0, MASK])
    return ("right", None) if count == 0 else ("wrong", start + first)


DAMAGED = ("a data file damaged on the disk is not regenerated by itself: delete it, or its `.id.json` sidecar in "
           "the data dir, to have it redone, and check `dmesg` for I/O errors and the storage's health")


def next_step(on_disk):
    """What to do about wrong bytes, given what the disk holds there (the Rust worker's words)."""
    kind, detail = on_disk
    if kind == "right":
        return ("the file on the disk is right there (its %d MiB around that byte, read again with O_DIRECT on the "
                "CPU, are the generator's bytes): the bytes went wrong on their way through this trial's path "
                "(reader, buffer, threads or streams, libcufile, driver), not in the file. Run the trial again; if "
                "it repeats, compare the same trial with another `buffer`, `queue_depth` or `nthreads` to narrow "
                "it down, and report it to the library's maintainers with this trial's folder (its cufile.log)"
                % (RECHECK_REGION >> 20))
    if kind == "wrong":
        return ("the file on the disk is wrong there too (read again with O_DIRECT on the CPU, first wrong at "
                "offset %d): the data file is damaged, not the read path; %s" % (detail, DAMAGED))
    return ("the bytes that arrived differ from the file (the disk was not re-checked: %s). Run the trial again; "
            "if it repeats, the read path corrupts data or the file changed; %s" % (detail, DAMAGED))


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
