#!/usr/bin/env python3
"""gds-gate's Python worker: runs one trial through the real KvikIO (or, for the `torch` reader,
PyTorch's torch.cuda.gds: torch_reader.py, beside this file), in a fresh process.

The gate writes the trial's spec (JSON) and starts this script with the trial's KVIKIO_*
variables and its own cufile.json (CUFILE_ENV_PATH_JSON) already in the environment, so KvikIO
and cuFile read them at import. The script reads the files into a cupy buffer on the trial's GPU
with kvikio.CuFile.pread, verifies every pass on the GPU with the same CUDA source as the Rust
worker (kernels.cu, beside this file), and answers with one result (JSON) that it writes and
flushes before the interpreter tears down: a crash during teardown (seen with KvikIO and
cuda.bindings loaded together) then cannot take a complete result with it.

Path evidence comes from inside this process: KvikIO's SummaryMonitor (bytes per backend) and
cuFile's own counters through cuda.bindings.cufile, started before KvikIO's first read. cuFile's
structs are sent as raw bytes; the gate decodes them with the layout of the library's version.
"""

import argparse
import faulthandler
import json
import os
import resource
import signal
import statistics
import sys
import time

try:
    import gds_pass
    from passes import (MASK, FirstCall, device_used, failure, hold_for_sample, read_passes,
                        write_passes, writes)
    UNLOADED = None
except ImportError as error:  # the gate's extension (gds_pass): answered in main, as a failure
    UNLOADED = error

PROTOCOL = 7
STATS_BUFFER = 8192  # larger than CUfileStatsLevel3_t of any known cuFile (5112 bytes in 1.19)
class Missing(Exception):
    """A piece of the stack this host lacks: the gate ignores the trial with this reason."""


def main():
    # A gate that finds this worker hung asks for every thread's stack (its hang bundle,
    # harness/runner/src/hang.rs); faulthandler answers from C even while a call holds the GIL.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--result", required=True)
    args = parser.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    if UNLOADED is not None:
        write_result(args.result, {"protocol": PROTOCOL, "measurement": None, "raw_cufile": None, "failure": {
            "reason": "the worker cannot load the gate's extension: %s" % UNLOADED, "missing": None,
            "next": "run the gate with Python 3.11 or later, built for this host with the gate (cargo build -p gds-gate-bin)"}})
        os._exit(0)
    result = run(spec, os.path.dirname(os.path.abspath(__file__)))
    if result.get("measurement") is not None:
        result["measurement"]["answered_unix_ns"] = time.time_ns()
    try:
        write_result(args.result, result)
    finally:
        # The last pass's page cache drop ends within the exit, as the Rust worker's does
        # (harness/worker/src/lib.rs): a worker started ahead is released only once this one is
        # gone.
        gds_pass.finish_wind_down()
    # The answer is on disk: leave without the interpreter's teardown of KvikIO, cupy and PyTorch,
    # as the Rust worker leaves with _exit. The next trial's first timed byte waits for this
    # process to end, and a teardown is where libcufile has crashed at exit.
    os._exit(0)


def write_result(path, result):
    tmp = path + ".partial"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    sys.stdout.flush()
    sys.stderr.flush()


def run(spec, here):
    if spec.get("protocol") != PROTOCOL:
        return {"protocol": PROTOCOL, "measurement": None, "raw_cufile": None,
                "failure": failure("the gate speaks protocol %s, this worker %d" % (spec.get("protocol"), PROTOCOL),
                                   "use the worker shipped with the gate")}
    trial, plan = spec["trial"], spec["plan"]
    through_torch = trial.get("reader") == "torch"
    library = "PyTorch" if through_torch else "KvikIO"
    started = time.perf_counter()
    m = {
        "files": plan["files"], "bytes_per_repetition": sum(s["len"] for s in plan["segments"]),
        "warmup_seconds": [], "seconds": [], "gbps": [], "median_gbps": None,
        "path": "torch" if through_torch else "kvikio",
        "integrity": {"method": "none", "checksum": None, "expected_checksum": None, "bad_words": 0,
                      "first_bad": None, "seconds": 0.0},
        "resident_after_drop": None, "verify_seconds": 0.0, "total_seconds": 0.0, "startup_seconds": None,
        "setup": [], "gpu": None, "cufile": None, "kvikio": None, "torch": None,
        "costs": [], "latency": None, "libcufile": None, "window": None, "memory": None,
    }
    raw = {"library": "", "version": 0, "loaded_copies": [], "properties_hex": None,
           "stats_before_hex": None, "stats_after_hex": None, "error": None}
    state = {}
    try:
        if through_torch:
            import torch_reader
            stack = torch_reader.import_stack(m, sys.modules[__name__])
            fail = torch_reader.measure(spec, here, stack, m, raw, state, sys.modules[__name__])
        else:
            stack = import_stack(m)
            fail = measure(spec, trial, plan, here, stack, m, raw, state)
    except Missing as missing:
        what, reason, install = missing.args
        fail = failure(reason, install, missing=what)
    except Exception as error:  # the stack under test raised: that is the finding
        fail = failure("%s failed: %s: %s" % (library, type(error).__name__, error), next_step_for(str(error)))
    finish_cufile_stats(state.get("cufile"), raw)
    m["libcufile"] = loaded_cufile(raw["loaded_copies"])
    # ru_maxrss is in KiB on Linux: the peak resident set, as the Rust worker's VmHWM.
    m["memory"] = {"host_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                   "device_bytes": state.get("device_peak")}
    m["total_seconds"] = time.perf_counter() - started
    if m["gbps"]:
        m["median_gbps"] = statistics.median(m["gbps"])
    return {"protocol": PROTOCOL, "measurement": m, "failure": fail, "raw_cufile": raw if raw["version"] else None}


def next_step_for(message):
    if "not registered" in message or "5027" in message:
        return ("cuFile refused the file: on containers and some VMs udev has no record of the block device "
                "(`udev property not found` in the trial's cufile.log); run udev or mount /run/udev into the "
                "container (--volume /run/udev:/run/udev:ro)")
    return "read the trial's cufile.log and the worker's output in the trial folder"


CUPY_INSTALL = ("cupy", "pip install cupy-cuda13x (or cupy-cuda12x)")


def import_stack(m):
    """KvikIO and cupy, and a KvikIO that reports its backends."""
    modules = import_modules(m, (("kvikio", "pip install kvikio-cu13 (or kvikio-cu12)"), CUPY_INSTALL))
    kvikio = modules["kvikio"]
    if not hasattr(kvikio, "SummaryMonitor"):
        raise Missing("kvikio>=26.10", "KvikIO %s has no SummaryMonitor (it needs 26.10 or newer) for its path evidence"
                      % getattr(kvikio, "__version__", "?"), "pip install -U kvikio-cu13")
    return modules


def import_modules(m, needs):
    """Imports the modules `needs` names (name, install command), timing each import (reported
    apart from throughput); raises Missing naming every absent one and how to install it."""
    lap = time.perf_counter()
    missing = []
    modules = {}
    for name, install in needs:
        try:
            modules[name] = __import__(name)
        except ImportError as error:
            missing.append((name, install, str(error)))
        now = time.perf_counter()
        m["setup"].append(["import " + name, now - lap])
        lap = now
    if missing:
        names = ", ".join(name for name, _, _ in missing)
        raise Missing(names, "python module(s) %s not found by %s" % (names, sys.executable),
                      "; ".join(install for _, install, _ in missing))
    return modules


def start_cufile_stats(raw):
    """cuFile's counters, started before KvikIO's first read. Missing cuda.bindings is recorded,
    not fatal: the verdict then says the path cannot be confirmed."""
    try:
        import ctypes
        from cuda.bindings import cufile
    except ImportError as error:
        raw["error"] = "cuda.bindings.cufile unavailable (%s): no cuFile counters; pip install cuda-bindings" % error
        return None
    try:
        raw["version"] = int(cufile.get_version())
        cufile.driver_open()
        props = ctypes.create_string_buffer(56)
        cufile.driver_get_properties(ctypes.addressof(props))
        raw["properties_hex"] = props.raw.hex()
        cufile.set_stats_level(3)
        cufile.stats_start()
        raw["stats_before_hex"] = read_l3(cufile)
    except Exception as error:
        raw["error"] = "cuFile statistics unavailable: %s: %s" % (type(error).__name__, error)
        return None
    return cufile


def read_l3(cufile):
    import ctypes
    buffer = ctypes.create_string_buffer(STATS_BUFFER)
    cufile.get_stats_l3(ctypes.addressof(buffer))
    return buffer.raw.hex()


def loaded_libcufile():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.basename(fields[5]).startswith("libcufile.so"):
                paths.add(fields[5])
    return sorted(paths)


def loaded_cufile(copies):
    """The libcufile KvikIO calls: the file its soname resolves to in this process (dladdr of its
    cuFileRead, symlinks resolved), with its version; None when no libcufile is loaded."""
    if not copies:
        return None
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    class Status(ctypes.Structure):
        _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]

    path, version = os.path.realpath(copies[0]), "unknown"
    try:
        # RTLD_NOLOAD: the copy already loaded under the soname KvikIO opens, never a new one.
        library = ctypes.CDLL("libcufile.so.0", mode=os.RTLD_NOLOAD)
        libc = ctypes.CDLL(None)
        libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
        info = DlInfo()
        if libc.dladdr(ctypes.cast(library.cuFileRead, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            path = os.path.realpath(info.dli_fname.decode())
        library.cuFileGetVersion.restype = Status
        number = ctypes.c_int(0)
        if library.cuFileGetVersion(ctypes.byref(number)).err == 0:
            # As the gate prints cuFile versions: 1150 is 1.15.
            version = "%d.%d" % (number.value // 1000, (number.value % 1000) // 10)
    except (OSError, AttributeError):
        pass
    return {"path": path, "version": version}


def finish_cufile_stats(cufile, raw):
    """cuFile's counters after the reads, also when KvikIO raised part-way."""
    if cufile is not None:
        try:
            raw["stats_after_hex"] = read_l3(cufile)
        except Exception as error:
            raw["error"] = "cuFile statistics unreadable after the reads: %s" % error
    try:
        raw["loaded_copies"] = loaded_libcufile()
    except OSError:
        pass
    raw["library"] = raw["loaded_copies"][0] if raw["loaded_copies"] else ""


def phase_timer(m):
    """`phase(name)` records the seconds since the previous phase (or this call) in m["setup"]."""
    lap = [time.perf_counter()]

    def phase(name):
        now = time.perf_counter()
        m["setup"].append([name, now - lap[0]])
        lap[0] = now
    return phase


def gpu_buffer(spec, cupy, m, raw, state, phase):
    """What every trial of this worker starts with: cuFile's counters started before the library
    under test first calls cuFile, the trial's GPU, and the buffer (the whole pass, or a window)."""
    trial = spec["trial"]
    state["cufile"] = start_cufile_stats(raw)
    phase("cuFile driver and statistics")
    device = cupy.cuda.Device(trial["gpu"])
    device.use()
    m["gpu"] = "%s (GPU %d)" % (cupy.cuda.runtime.getDeviceProperties(trial["gpu"])["name"].decode(), trial["gpu"])
    # Readers stream through a window where the trial asks (the Rust worker's rule); writers and
    # loads hold the whole pass.
    if not writes(trial):
        m["window"] = gds_pass.window(json.dumps(spec), cupy.cuda.runtime.memGetInfo()[1])
    buffer = cupy.empty(m["window"] or m["bytes_per_repetition"], dtype=cupy.uint8)
    phase("gpu context and buffer")
    # Sampled after the passes: before the first timed byte a worker started ahead would count
    # the memory of the previous worker, still exiting.
    state["device_peak"] = None
    return device, buffer


def registered_buffer(kvikio, trial, buffer, phase):
    """`buffer: registered`: the trial's buffer registered with cuFile as a KvikIO user registers
    a buffer that many reads reuse (`kvikio.memory_register`: cuFileBufRegister of the whole
    allocation, which KvikIO skips in its compat mode). Returns what deregisters it."""
    if trial.get("buffer") != "registered":
        return lambda: None
    kvikio.memory_register(buffer)
    phase("kvikio.memory_register (cuFileBufRegister)")
    return lambda: kvikio.memory_deregister(buffer)


def measure(spec, trial, plan, here, stack, m, raw, state):
    kvikio, cupy = stack["kvikio"], stack["cupy"]
    phase = phase_timer(m)
    device, buffer = gpu_buffer(spec, cupy, m, raw, state, phase)
    deregister = registered_buffer(kvikio, trial, buffer, phase)
    try:
        return measure_with_buffer(spec, trial, plan, here, stack, m, raw, state, phase, device, buffer)
    finally:
        deregister()


def measure_with_buffer(spec, trial, plan, here, stack, m, raw, state, phase, device, buffer):
    """The trial once its buffer is allocated (and registered, where the trial asks)."""
    kvikio, cupy = stack["kvikio"], stack["cupy"]
    monitor = kvikio.SummaryMonitor()
    if writes(trial):
        verifier = Verifier(cupy, device, buffer, os.path.join(here, "kernels.cu"))
        fail = measure_writes(spec, stack, device, buffer, verifier, monitor, m, phase, raw, state)
        # The source and the read-back buffer (cupy's pool keeps the latter until the process ends).
        state["device_peak"] = max(state["device_peak"] or 0, device_used(cupy)) or None
        return fail
    handles = [kvikio.CuFile(f["path"], "r") for f in plan["files"]]
    phase("kvikio.CuFile open")
    streams = async_streams(cupy, trial)
    said_path = async_path(handles, raw) if streams else None
    verifier = Verifier(cupy, device, buffer, os.path.join(here, "kernels.cu"))
    io = KvikioIo(kvikio, monitor, handles, buffer, trial["task_size"], streams,
                  registered=trial.get("buffer") == "registered")
    fail = read_passes(spec, io, cupy, device, buffer, verifier, m["window"], m, state)
    finish(spec, kvikio, cupy, monitor, io.measured_start, m["bytes_per_repetition"], m["resident_after_drop"], m)
    if streams:
        m["kvikio"]["async_path"] = said_path
    for handle in io.handles:
        handle.close()
    return fail


def measure_writes(spec, stack, device, buffer, verifier, monitor, m, phase, raw, state):
    """A writing trial through KvikIO: passes.write_passes with a KvikioIo, `pwrite` per segment,
    or with `kvikio_api: async` one `raw_write_async` per task on the trial's streams (a
    roundtrip reads back with `raw_read_async`); then KvikIO's own figures and, async, the path
    KvikIO's rules say its stream-ordered calls took."""
    kvikio, cupy, trial = stack["kvikio"], stack["cupy"], spec["trial"]
    io = KvikioIo(kvikio, monitor, [], buffer, trial["task_size"], async_streams(cupy, trial))
    if io.streams:
        entries = "cuFileWriteAsync" if trial["op"] == "write" else "cuFileWriteAsync, cuFileReadAsync"
        io.path_of = lambda handles: async_path(handles, raw, entries)
    fail = write_passes(spec, io, cupy, device, buffer, verifier, m, phase, state)
    finish(spec, kvikio, cupy, monitor, io.measured_start, m["bytes_per_repetition"], None, m)
    if io.streams:
        m["kvikio"]["async_path"] = io.async_path
    return fail


class KvikioIo(FirstCall):
    """How the pass loops (read_passes, write_passes) go through KvikIO: `pread` and `pwrite` per
    segment on its thread pool, or with `streams` (`kvikio_api: async`) `raw_read_async` and
    `raw_write_async` per task on them in turn; its SummaryMonitor counts the operations."""
    library = "KvikIO"

    def __init__(self, kvikio, monitor, handles, buffer, task_size, streams, registered=False):
        self.kvikio, self.monitor, self.handles = kvikio, monitor, handles
        self.buffer, self.task_size, self.streams = buffer, task_size, streams
        self.registered = registered
        self.write_calls = 0
        self.writing = []
        self.measured_start = None
        # Async writes: says the path of the first pass's handles (async_path), kept in async_path.
        self.path_of = None
        self.async_path = None

    def prepare_writes(self, buffer, check, segments, roundtrip):
        # KvikIO splits each pwrite into task_size tasks, as the Rust writers split the plan; the
        # stream-ordered calls are one per such task.
        self.write_calls = sum(-(-s["len"] // self.task_size) for s in segments)

    def open_for_write(self, paths):
        # "r+": the pass loop blanked the files, and "w" would truncate them (a TRIM on `discard`).
        self.writing = [self.kvikio.CuFile(path, "r+") for path in paths]
        if self.path_of is not None and self.async_path is None:
            self.async_path = self.path_of(self.writing)

    def write(self, segments, buffer):
        if self.streams:
            return write_async(segments, self.writing, buffer, self.streams, self.task_size)
        futures = [self.writing[s["file"]].pwrite(buffer[s["buffer_offset"]:s["buffer_offset"] + s["len"]],
                                                  s["len"], s["offset"], self.task_size) for s in segments]
        return sum(f.get() for f in futures)

    def close_written(self):
        for handle in self.writing:
            handle.close()
        self.writing = []

    def read_back(self, paths, segments, check):
        readers = [self.kvikio.CuFile(path, "r") for path in paths]
        read = self.read_into(readers, check, segments)
        for reader in readers:
            reader.close()
        return read

    def calls_in(self, segments):
        """A section's read calls when KvikIO's monitor does not count them: one raw_read_async
        per task; None for `pread`, which it counts."""
        return len(gds_pass.tasks(segments, self.task_size)) if self.streams else None

    def read(self, segments):
        return self.read_into(self.handles, self.buffer, segments)

    def read_into(self, handles, buffer, segments):
        """`segments` read through `handles` into their parts of `buffer`: the bytes read."""
        if self.streams:
            return read_async(segments, handles, buffer, self.streams, self.task_size)
        futures = [handles[s["file"]].pread(buffer[s["buffer_offset"]:s["buffer_offset"] + s["len"]],
                                            s["len"], s["offset"], self.task_size) for s in segments]
        done = 0
        for future in futures:  # the first segment's pread is waited for first
            done += future.get()
            self.ended()
        return done

    def reopen(self, paths):
        """A load's start: the files closed and the buffer deregistered (untimed), then the
        files opened with `kvikio.CuFile` (which registers them with cuFile) and the buffer
        registered again, each timed: (open seconds, register seconds or None)."""
        for handle in self.handles:
            handle.close()
        if self.registered:
            self.kvikio.memory_deregister(self.buffer)
        t0 = time.perf_counter()
        self.handles = [self.kvikio.CuFile(path, "r") for path in paths]
        opened = time.perf_counter() - t0
        if not self.registered:
            return opened, None
        t0 = time.perf_counter()
        self.kvikio.memory_register(self.buffer)
        return opened, time.perf_counter() - t0

    def measured_from(self):
        self.measured_start = self.monitor.get()

    def counters(self):
        return self.monitor.get()

    def since(self, before):
        return self.monitor.get().since(before)


def stream_ordered_api(trial):
    """`kvikio_api: async`: KvikIO's raw_read_async / raw_write_async instead of pread / pwrite."""
    return trial.get("kvikio_api", "pread") == "async"


def async_streams(cupy, trial):
    """The trial's `queue_depth` CUDA streams for KvikIO's stream-ordered calls, or none."""
    if not stream_ordered_api(trial):
        return []
    return [cupy.cuda.Stream(non_blocking=True) for _ in range(max(1, trial.get("queue_depth", 1)))]


def read_async(segments, handles, buffer, streams, task_size):
    """`raw_read_async` of every task on the streams in turn, the streams synchronised, then each
    future's `check_bytes_done()`: the bytes read, or an exception naming the failed read."""
    return stream_ordered(segments, handles, buffer, streams, task_size, "raw_read_async")


def write_async(segments, handles, buffer, streams, task_size):
    """`raw_write_async` of every task from its part of `buffer`, as `read_async` reads: the
    bytes written, or an exception naming the failed write."""
    return stream_ordered(segments, handles, buffer, streams, task_size, "raw_write_async")


def stream_ordered(segments, handles, buffer, streams, task_size, call):
    """KvikIO's stream-ordered `call` (`raw_read_async` or `raw_write_async`) for every task on
    the streams in turn, the streams synchronised, then each future's `check_bytes_done()`."""
    futures = []
    for index, (file, offset, buffer_offset, length) in enumerate(gds_pass.tasks(segments, task_size)):
        stream = streams[index % len(streams)]
        # Each call names its own part of the (unregistered) buffer, device offset 0: libcufile
        # 1.15 failed (-5) a stream-ordered call on an unregistered buffer that reached past the
        # first in-flight call's extent at the same base (cufile.log: `cufio_async ... exceeds
        # registered length`), which every task after the first of a shared base did.
        part = buffer[buffer_offset:buffer_offset + length]
        method = getattr(handles[file], call)
        # KvikIO takes the raw stream as an int (newer) or a stream object (older releases).
        try:
            future = method(part, stream.ptr, length, offset, 0)
        except (TypeError, AttributeError):
            future = method(part, stream, length, offset, 0)
        futures.append((future, offset, length))
    for stream in streams:
        stream.synchronize()
    moved = 0
    for future, offset, length in futures:
        done = future.check_bytes_done()
        if done != length:
            raise RuntimeError("KvikIO %s moved %d of %d bytes at offset %d" % (call, done, length, offset))
        moved += done
    return moved


def async_path(handles, raw, entry="cuFileReadAsync"):
    """Whether KvikIO's `raw_read_async` (`raw_write_async`) can reach cuFile's stream API
    (`entry`: cuFileReadAsync, cuFileWriteAsync) or falls back to a stream synchronisation and a
    synchronous read (write). KvikIO does not say; its rule (its
    `CompatModeManager`): the fallback is taken when the file is in its compat mode, when cuFile
    is too old for the stream API it checks for (`cuFileGetVersion` above 1070), or when no
    cufile.json path is known (`CUFILE_ENV_PATH_JSON`, else /etc/cufile.json)."""
    reasons = []
    preferred = []
    for handle in handles:
        check = getattr(handle, "is_compat_mode_preferred", None)
        if callable(check):
            preferred.append(bool(check()))
    if any(preferred):
        reasons.append("the file is in KvikIO's compat mode")
    version = raw.get("version")
    if version is not None and version <= 1070:
        reasons.append("cuFile %d.%d predates the stream API KvikIO uses" % (version // 1000, version % 1000 // 10))
    config = os.environ.get("CUFILE_ENV_PATH_JSON") or ("/etc/cufile.json" if os.path.exists("/etc/cufile.json") else "")
    if not config:
        reasons.append("no cufile.json path (KvikIO uses cuFile's stream API only with one)")
    unknown = [] if preferred else ["whether the file is in KvikIO's compat mode (this KvikIO does not say)"]
    if version is None:
        unknown.append("cuFile's version")
    if reasons:
        return "synchronous fallback (inferred from KvikIO's rules): " + "; ".join(reasons)
    said = "cuFile's stream API (%s), inferred from KvikIO's rules" % entry
    return said + ("; unknown: " + ", ".join(unknown) if unknown else "")


def finish(spec, kvikio, cupy, monitor, measured_start, total, cached_after_drop, m):
    """After the last pass: the gds_stats hand-shake, then KvikIO's own figures (its mean read
    latency is the pass loop's, from the same counters)."""
    hold_for_sample(spec.get("hold_for_sampling"))
    summary = monitor.get()
    own = summary.since(measured_start) if measured_start is not None else None
    m["kvikio"] = {
        "kvikio_version": kvikio.__version__,
        "cupy_version": cupy.__version__,
        "python": "%s (%s)" % (sys.version.split()[0], sys.executable),
        "settings": settings(kvikio),
        "backends": {"by_backend": backends(summary)},
        "own_gbps": own.busy_bytes_per_sec / 1e9 if own is not None and own.busy_bytes_per_sec else None,
        # The gate's figure over the same passes, aggregated the way KvikIO aggregates (bytes over
        # summed time, not a median), so that the two can be compared.
        "gate_aggregate_gbps": total * len(m["seconds"]) / sum(m["seconds"]) / 1e9 if m["seconds"] else None,
        "cached_after_drop": cached_after_drop,
    }


def settings(kvikio):
    import kvikio.defaults  # a submodule: not loaded by `import kvikio`
    values = {}
    for name in ("compat_mode", "num_threads", "task_size", "gds_threshold", "bounce_buffer_size"):
        try:
            value = kvikio.defaults.get(name)
            values[name] = value if isinstance(value, (int, float, str, bool)) else str(value)
        except Exception as error:
            values[name] = "unavailable: %s" % error
    return values


def backends(summary):
    out = {}
    for name, totals in summary.by_backend.items():
        get = (lambda key: totals[key]) if isinstance(totals, dict) else (lambda key: getattr(totals, key))
        out[str(name)] = {"num_ops": int(get("num_ops")), "bytes_transferred": int(get("bytes_transferred"))}
    return out


class Verifier:
    """The Rust worker's verification kernels (kernels.cu) over the cupy buffer, one range at a
    time; the Rust pass loop (gds_pass) walks the ranges and composes the results as it does for
    its own readers (harness/model/src/integrity.rs: check)."""

    def __init__(self, cupy, device, buffer, source):
        self.cupy, self.buffer = cupy, buffer
        with open(source) as f:
            module = cupy.RawModule(code=f.read())
        self.exact_kernel = module.get_function("exact_compare")
        self.checksum_kernel = module.get_function("checksum")
        self.fill_kernel = module.get_function("fill")
        self.grid = (device.attributes["MultiProcessorCount"] * 16,)

    def over(self, buffer):
        """The same kernels over another buffer (a writing trial's read-back buffer)."""
        other = object.__new__(Verifier)
        other.__dict__.update(self.__dict__)
        other.buffer = buffer
        return other

    def fill(self, buffer, offset, length, seed):
        """The generated bytes of the file with `seed`, from its start, at `offset` of `buffer`."""
        cupy = self.cupy
        out = cupy.zeros(2, dtype=cupy.uint64)
        self.fill_kernel(self.grid, (256,), (buffer[offset:], cupy.uint64(length), cupy.uint64(seed),
                                             cupy.uint64(0), out))
        words = int(out.get()[0])
        if words != (length + 7) // 8:
            raise RuntimeError("the fill kernel wrote %d words of %d" % (words, (length + 7) // 8))

    def run(self, kernel, offset, length, extra, init):
        cupy = self.cupy
        out = cupy.array(init, dtype=cupy.uint64)
        args = (self.buffer[offset:], cupy.uint64(length)) + tuple(cupy.uint64(v) for v in extra) + (out,)
        kernel(self.grid, (256,), args)
        return [int(v) for v in out.get()]

    def exact_range(self, seed, file_offset, buffer_offset, length):
        """`length` bytes at `buffer_offset` against the file with `seed` from `file_offset`:
        (bad words, the first wrong byte's file offset or None)."""
        bad, first = self.run(self.exact_kernel, buffer_offset, length, (seed, file_offset // 8), [0, MASK])
        return bad, (file_offset + first if first != MASK else None)

    def checksum_range(self, file_offset, buffer_offset, length):
        """The raw range sum of `length` bytes at `buffer_offset`, keyed from `file_offset`."""
        return self.run(self.checksum_kernel, buffer_offset, length, (file_offset // 8,), [0, 0])[0]


if __name__ == "__main__":
    main()
