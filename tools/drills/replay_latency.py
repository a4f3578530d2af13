#!/usr/bin/env python3
"""Replays a trial's reads outside the gate and times each call: the independent measurement the
gate's latency percentiles and IOPS are checked against (fio-style, with the trial's own offsets).

Reads the plan from a trial folder's spec.json (under the reports directory, `trials/<trial>/`),
drops each file's page cache (posix_fadvise DONTNEED, as a cold pass does), then makes the
trial's reads from `nthreads` threads, as the gate's readers split them, and prints per-call
latency percentiles, the mean, IOPS and GB/s per pass. How it reads (`--how`):

  pread    os.preadv into one host destination of the whole pass (the posix reader)
  direct   O_DIRECT preadv into a reused aligned buffer per thread: the POSIX reads cuFile's
           compat mode makes, without its copy to the GPU
  cufile   cuFileRead through ctypes (`--libcufile`, default the loader's libcufile.so.0, the one
           the gate's Rust worker loads) into one cupy buffer of the whole pass, each task at its
           place: the calls the cufile reader makes, timed by a different program, with cuFile
           configured by the trial's cufile.json (beside its spec.json) as the gate configured it
  kvikio   KvikIO's pread per segment into one cupy buffer, with the trial's KVIKIO_* settings
           and cufile.json, all submitted, then waited for (the KvikIO worker's calls): IOPS
           over the pass and KvikIO's own mean per operation (its SummaryMonitor), as the gate
           reports them; no percentiles (KvikIO keeps none)

    python3 tools/drills/replay_latency.py target/gds-gate/trials/<trial>/spec.json --how cufile

`--json` prints one JSON object per pass instead of the table (latency_agreement.py reads it).
"""

import argparse
import json
import mmap
import os
import tempfile
import threading
import time

HOW = ["pread", "direct", "cufile", "kvikio"]


def tasks(plan, task_size):
    """The plan's segments cut into tasks of at most task_size bytes, in plan order, each with
    its place in a destination of the whole pass."""
    place = 0
    for segment in plan["segments"]:
        done = 0
        while done < segment["len"]:
            length = min(task_size, segment["len"] - done)
            yield segment["file"], segment["offset"] + done, length, place
            done += length
            place += length


# Each latency figure the gate reports, and the quantile it is (the mean has none).
LATENCY_FIGURES = [("mean_us", None), ("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99),
                   ("p999_us", 0.999), ("max_us", 1.0)]


def latency_figures(sorted_us):
    """The gate's latency figures of calls taking `sorted_us` µs, in order."""
    return {name: sum(sorted_us) / len(sorted_us) if q is None else percentile(sorted_us, q)
            for name, q in LATENCY_FIGURES}


def percentile(sorted_values, q):
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def drop_cache(plan):
    for f in plan["files"]:
        fd = os.open(f["path"], os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def timed_threads(work, nthreads, start_thread, read):
    """`work` shared out to `nthreads` threads in order; each runs `start_thread()` once, then
    `read(state, task)` per task, timed. The pass's seconds and every call's ns, sorted."""
    queue = list(reversed(work))
    lock = threading.Lock()
    latencies = [[] for _ in range(nthreads)]
    failures = []

    def reader(own):
        try:
            state = start_thread()
            while True:
                with lock:
                    if not queue:
                        break
                    task = queue.pop()
                start = time.perf_counter_ns()
                read(state, task)
                own.append(time.perf_counter_ns() - start)
        except Exception as error:  # noqa: BLE001 - reported after the pass
            failures.append(error)

    threads = [threading.Thread(target=reader, args=(own,)) for own in latencies]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if failures:
        raise failures[0]
    return seconds, sorted(ns for own in latencies for ns in own)


def read_fully(fd, view, offset):
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], offset + done)
        if n <= 0:
            raise OSError("short read at %d" % (offset + done))
        done += n


class Pread:
    """os.preadv into one destination of the whole pass, touched before it (the posix reader's
    host buffer), or with `direct` O_DIRECT into one page-aligned buffer per thread."""

    def __init__(self, plan, work, direct):
        self.direct = direct
        self.fds = [os.open(f["path"], os.O_RDONLY | (os.O_DIRECT if direct else 0)) for f in plan["files"]]
        self.biggest = max(task[2] for task in work)
        self.whole = None
        if not direct:
            self.whole = mmap.mmap(-1, sum(task[2] for task in work))
            for page in range(0, len(self.whole), mmap.PAGESIZE):
                self.whole[page] = 0

    def start_thread(self):
        return memoryview(self.whole if self.whole is not None else mmap.mmap(-1, self.biggest))

    def read(self, view, task):
        file, offset, length, place = task
        base = 0 if self.direct else place
        read_fully(self.fds[file], view[base:base + length], offset)


class Cufile:
    """cuFileRead into one GPU buffer of the whole pass: handle, buffer base, length, file offset,
    the task's place as the buffer offset (the cufile reader's calls)."""

    def __init__(self, plan, work, library, api_stats):
        import cupy
        from cufile_entry_points import Cufile as Library
        self.library = Library(library).open_driver()
        if api_stats:
            self.library.start_stats()
        self.fds = [os.open(f["path"], os.O_RDONLY | os.O_DIRECT) for f in plan["files"]]
        self.handles = [self.library.handle(fd) for fd in self.fds]
        self.buffer = cupy.empty(sum(task[2] for task in work), dtype=cupy.uint8)
        self.device = cupy.cuda.Device()

    def start_thread(self):
        self.device.use()  # the buffer's device current in this thread, as cuFile needs
        return None

    def read(self, _, task):
        file, offset, length, place = task
        self.library.read(self.handles[file], self.buffer.data.ptr, length, offset, place)


class Kvikio:
    """KvikIO's pread per segment, all submitted and then waited for, as the KvikIO worker makes
    them; the pass is timed as a whole (KvikIO keeps no per-call distribution, and a clock around
    each call would slow calls of a few microseconds), and KvikIO's SummaryMonitor gives its own
    mean per operation, as the gate reports it."""

    def __init__(self, plan, trial):
        settings = {"KVIKIO_NTHREADS": trial["nthreads"], "KVIKIO_TASK_SIZE": trial["task_size"],
                    "KVIKIO_GDS_THRESHOLD": trial["gds_threshold"],
                    "KVIKIO_BOUNCE_BUFFER_SIZE": trial["bounce_buffer_size"]}
        if trial.get("compat_mode"):
            settings["KVIKIO_COMPAT_MODE"] = trial["compat_mode"]
        os.environ.update({k: str(v) for k, v in settings.items()})  # KvikIO reads them at import
        import cupy
        import kvikio
        self.monitor = kvikio.SummaryMonitor()
        self.handles = [kvikio.CuFile(f["path"], "r") for f in plan["files"]]
        self.buffer = cupy.empty(sum(s["len"] for s in plan["segments"]), dtype=cupy.uint8)
        self.task_size = trial["task_size"]

    def one_pass(self, work):
        """The figures of one pass over `work` (segments with their places)."""
        before = self.monitor.get()
        started = time.perf_counter()
        futures = [self.handles[file].pread(self.buffer[place:place + length], length, offset, self.task_size)
                   for file, offset, length, place in work]
        done = sum(future.get() for future in futures)
        seconds = time.perf_counter() - started
        if done != sum(task[2] for task in work):
            raise OSError("KvikIO read %d of %d bytes" % (done, sum(task[2] for task in work)))
        own = self.monitor.get().since(before)
        return {"gbps": done / seconds / 1e9, "iops": own.num_reads / seconds,
                "mean_us": own.total_duration_ns / own.num_reads / 1e3 if own.num_reads else None}


def replayer(how, spec, library, api_stats=False):
    """The reader for `how` and the work it is given: tasks for all but KvikIO, which is handed
    whole segments as the KvikIO worker hands them (KvikIO splits them itself)."""
    plan, trial = spec["plan"], spec["trial"]
    if how == "kvikio":
        return Kvikio(plan, trial), list(tasks(plan, max(s["len"] for s in plan["segments"])))
    work = list(tasks(plan, trial["task_size"]))
    if how == "cufile":
        return Cufile(plan, work, library, api_stats), work
    return Pread(plan, work, direct=how == "direct"), work


def use_trial_config(spec_path, stats):
    """cuFile configured as it was for the trial: the trial's cufile.json (beside its spec.json;
    statistics at level 3, the host's settings) with its log sent to a folder of the replay's own;
    with `stats` "off", its statistics level 0."""
    path = os.path.join(os.path.dirname(os.path.abspath(spec_path)), "cufile.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        config = json.load(f)
    folder = tempfile.mkdtemp(prefix="replay-cufile-")
    config.setdefault("logging", {})["dir"] = folder
    if stats == "off":
        config.setdefault("profile", {})["cufile_stats"] = 0
    copy = os.path.join(folder, "cufile.json")
    with open(copy, "w") as f:
        json.dump(config, f)
    os.environ["CUFILE_ENV_PATH_JSON"] = copy  # read by cuFileDriverOpen


def one_pass(reader, plan, work, nthreads):
    """One cold pass: the page cache dropped, every call timed (but KvikIO's). A row of figures."""
    drop_cache(plan)
    if isinstance(reader, Kvikio):
        return reader.one_pass(work)
    seconds, ns = timed_threads(work, nthreads, getattr(reader, "start_thread", lambda: None), reader.read)
    return {"gbps": sum(task[2] for task in work) / seconds / 1e9, "iops": len(ns) / seconds,
            **latency_figures([n / 1e3 for n in ns])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a trial's spec.json")
    parser.add_argument("--how", choices=HOW, default="pread")
    parser.add_argument("--libcufile", default="libcufile.so.0", help="with --how cufile")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON object per pass")
    parser.add_argument("--stats", choices=["config", "api", "off"], default="config",
                        help="cuFile's statistics: as the trial's cufile.json sets them (level 3), also started "
                             "through the API as the gate's workers do (cufile only), or off")
    args = parser.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    if args.how in ("cufile", "kvikio"):
        use_trial_config(args.spec, args.stats)
    reader, work = replayer(args.how, spec, args.libcufile, api_stats=args.stats == "api")
    nthreads = spec["trial"]["nthreads"]  # KvikIO's: its KVIKIO_NTHREADS
    if not args.json:
        print("%s: %d calls of %d bytes in all per pass, %d thread(s), %s"
              % (spec["trial"]["name"], len(work), sum(task[2] for task in work), nthreads, args.how))
        print("pass  GB/s     IOPS   mean_us    p50_us    p90_us    p99_us  p99.9_us    max_us")
    for number in range(1, args.passes + 1):
        row = one_pass(reader, spec["plan"], work, nthreads)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            figures = [row.get(name) for name, _ in LATENCY_FIGURES]
            print("%4d %5.2f %8.0f %s" % (number, row["gbps"], row["iops"],
                                          " ".join("%9s" % ("%.1f" % v if v is not None else "-") for v in figures)))


if __name__ == "__main__":
    main()
