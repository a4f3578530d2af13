"""The pass loops of gds-gate's Python worker (kvikio_worker.py), shared by its KvikIO and
PyTorch readers: warm-up and measured passes, read or written through an `io` object that says
how the library under test moves the bytes (kvikio_worker.KvikioIo, torch_reader.TorchIo),
timed, verified on the GPU, their cost and progress recorded, and the failures said as the Rust
worker says them.
"""

import contextlib
import faulthandler
import json
import os
import resource
import time

import gds_pass  # the gate's extension (harness/pyworker), linked into the trial folder

MASK = (1 << 64) - 1


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


def timed(call, record):
    """`call()` timed alone, as the Rust readers time their library calls: (its answer, wall
    seconds, (user, system) CPU seconds or None when not recording). Timed by the caller in Rust,
    the section would also hold `watched`'s arming and the calls across the extension."""
    before = resource.getrusage(resource.RUSAGE_SELF) if record else None
    started = time.perf_counter()
    answer = call()
    seconds = time.perf_counter() - started
    if before is None:
        return answer, seconds, None
    after = resource.getrusage(resource.RUSAGE_SELF)
    return answer, seconds, (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)


def failure(reason, next_step, missing=None):
    return {"reason": reason, "next": next_step, "missing": missing}


def recording():
    """Latency and CPU time are recorded unless GDS_GATE_RECORD_COST=0 (the overhead bench)."""
    return os.environ.get("GDS_GATE_RECORD_COST") != "0"


def read_passes(spec, io, cupy, device, buffer, verifier, window, m, state):
    """The warm-up and measured passes of a reading trial: the Rust worker's own pass loop
    (gds_pass.read_passes) over a Landing for `io` (KvikioIo or the torch reader's TorchIo),
    which drops the page cache when cold, clears the buffer, times each read section, verifies it
    with the kernels over `buffer`, records costs and progress and stops at the first failure.
    Its figures go into `m`; the failure is returned."""
    landing = Landing(io, cupy, device, buffer, verifier)
    return take_figures(m, state, gds_pass.read_passes(json.dumps(spec), landing, window))


def take_figures(m, state, ended):
    """The Rust loop's measurement (JSON) into `m`, its GPU memory peak into `state`; its failure
    (JSON or None) as the worker's, or the exception the library raised, raised again once the
    figures measured before it are kept."""
    text, failed, raised = ended
    native = json.loads(text)
    m["setup"].extend(native.pop("setup"))
    memory = native.pop("memory", None) or {}
    if memory.get("device_bytes") is not None:
        state["device_peak"] = memory["device_bytes"]
    for key in PASS_FIGURES:  # the Rust record leaves out what it did not measure
        if key in native:
            m[key] = native[key]
    if raised is not None:
        raise raised
    return json.loads(failed) if failed is not None else None


# What the Rust pass loop measures (harness/model/src/record.rs: Measurement); the rest of the
# record is the Python worker's (the library's own figures, the GPU, the process).
PASS_FIGURES = ("warmup_seconds", "seconds", "gbps", "integrity", "resident_after_drop", "verify_seconds",
                "startup_seconds", "preparation_seconds", "costs", "latency", "window", "load", "write")


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

    def read(self, segments, nbytes):
        """One section of `nbytes`, watched (watched: the stuck line and Python's stacks) and
        timed (timed: bytes read, seconds, CPU)."""
        def read():
            read = self.io.read(segments)
            self.device.synchronize()
            return read
        with watched(nbytes, "%s read" % self.library):
            self.io.reset()
            self.started = time.perf_counter()
            return timed(read, self.record)

    def after_read(self, segments):
        """Outside the timed section: (read calls, seconds to the first call's end or None, and
        the library's own (calls, summed ns) or None)."""
        first = self.io.first_done - self.started if self.io.first_done is not None else None
        ops = self.io.since(self.before) if self.record else None
        # Whole numbers, whichever types the library's statistics use.
        totals = (int(ops.num_reads), int(ops.total_duration_ns)) if ops is not None and ops.num_reads else None
        calls = self.io.calls_in(segments)
        if calls is None:
            calls = int(ops.num_reads) if ops is not None else 0
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


def write_passes(spec, io, cupy, device, buffer, verifier, m, phase, state):
    """A writing trial (`op: write` or `roundtrip`) through `io` (KvikioIo or the torch reader's
    TorchIo), by the Rust worker's write loop (gds_pass.write_passes): the files blanked, written
    from `buffer` (timed; opened before, closed after), fsync timed apart, the pages dropped; then
    `write` checks the files on the disk with O_DIRECT (never through the library under test) and
    `roundtrip` reads them back through the library into a second buffer, verified there. Here:
    the generator's bytes made in `buffer` by the fill kernel. The failure is returned."""
    trial, plan = spec["trial"], spec["plan"]
    bases = {}
    for s in plan["segments"]:
        bases.setdefault(s["file"], s["buffer_offset"])
    for index, f in enumerate(plan["files"]):
        verifier.fill(buffer, bases[index], f["size"], f["seed"])
    roundtrip = trial["op"] == "roundtrip"
    # A roundtrip's read back lands here; a `write` is checked on the disk, by the CPU.
    check = cupy.empty(m["bytes_per_repetition"], dtype=cupy.uint8) if roundtrip else None
    io.prepare_writes(buffer, check, plan["segments"], roundtrip=roundtrip)
    phase("generated source and read-back buffer")
    paths = [f["path"] for f in plan["files"]]
    read_back = Landing(ReadBack(io, paths, check), cupy, device, check, verifier.over(check)) if roundtrip else None
    return take_figures(m, state, gds_pass.write_passes(json.dumps(spec), Writer(io, buffer), read_back))


class Writer:
    """What the Rust write loop calls: the library's writes through `io` from `buffer`."""

    def __init__(self, io, buffer):
        self.io, self.buffer, self.library = io, buffer, io.library
        self.record = recording()

    @property
    def write_calls(self):
        return self.io.write_calls

    def open_for_write(self, paths):
        self.io.open_for_write(paths)

    def write(self, segments, nbytes):
        """As Landing.read: (bytes written, seconds, CPU)."""
        with watched(nbytes, "%s write" % self.library):
            return timed(lambda: self.io.write(segments, self.buffer), self.record)

    def close_written(self):
        self.io.close_written()

    def measured_from(self):
        self.io.measured_from()


class ReadBack(FirstCall):
    """A roundtrip's read back through the library under test into `check`, read as Landing
    reads a pass (its time is the write figures' own; no counters)."""

    def __init__(self, io, paths, check):
        self.io, self.paths, self.check, self.library = io, paths, check, io.library

    def counters(self):
        return None

    def since(self, before):
        return None

    def calls_in(self, segments):
        return None

    def read(self, segments):
        return self.io.read_back(self.paths, segments, self.check)


def writes(trial):
    """`op: write` or `roundtrip` (a spec without `op` reads)."""
    return trial.get("op", "read") in ("write", "roundtrip")


def device_used(cupy):
    free, total = cupy.cuda.runtime.memGetInfo()
    return total - free


def hold_for_sample(folder):
    """gds_stats reads this live process's counters: say the I/O is done and wait (bounded) for
    the gate to have sampled it. See harness/model/src/protocol.rs."""
    if not folder:
        return
    open(os.path.join(folder, "io-done"), "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(folder, "sampled")) and time.monotonic() < deadline:
        time.sleep(0.01)
