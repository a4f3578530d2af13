#!/usr/bin/env python3
"""Times one thread of synchronous cuFileRead calls several ways, interleaved round by round on
one cold file, to tell what makes the gate's cufile reader slower than KvikIO at one thread
(issue: reader parity): the gate's cufile reader and the gate's KvikIO worker (each a trial of
its own process, `--gate`, as `bench --parity` runs them); the same calls made from Python
through ctypes and KvikIO's `pread` (compat mode OFF, one thread), each in a new process of its
own, the ctypes calls also with the gate's trial cufile.json (statistics at level 3) and in the
order the Rust worker used to set them up (cuFile's driver opened on another thread while the
CUDA context is made, the reads from a thread started for the pass; the worker now opens the
driver after the context, on its main thread, which closed the gap in `bench --parity`); and the ctypes calls (statistics
off and at level 3) and KvikIO's `pread` again, all in this long-lived process.

Each variant reads the whole file in `--task` calls into one GPU buffer, in order, from one
thread: `cuFileRead(handle, buffer base, task, file offset, buffer offset)`, the calls both the
gate's reader and KvikIO make. Every variant loads the same libcufile (`--libcufile`; the gate
gets it through GDS_GATE_LIBCUFILE), so the library is not part of the comparison. The page
cache is dropped before each read (the file is opened O_DIRECT, as cuFile needs, in any case);
the order of the variants is reversed every other round, since a virtual disk reads a file
faster the second time.

    python3 tools/drills/sync_read_timing.py --gate target/release/gds-gate --dir /var/tmp/sync \\
        --libcufile .../nvidia/cu13/lib/libcufile.so.0 --size 512MiB --rounds 4

Prints GB/s per variant and round, then each variant's median and its ratio to KvikIO's pread,
and the gate's two readers' ratio round by round.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cufile_entry_points import Cufile  # noqa: E402

SUITE = """suite: sync-timing
description: One thread of cuFileRead, for sync_read_timing.py.
defaults:
  files: {{ size: {size}, seed: 5 }}
  cache: cold
  warmup: 0
  repetitions: 1
scenarios:
  - name: one-thread
    description: The cufile reader and KvikIO (compat OFF), one thread, {task}-byte tasks.
    reader: [cufile, kvikio]
    compat_mode: OFF
    nthreads: 1
    task_size: {task}
"""


def gate_read(args, suite, out, reader):
    """One cold pass of the gate's `reader` trial: its GB/s, and the file it read."""
    env = dict(os.environ, GDS_GATE_LIBCUFILE=args.libcufile, GDS_GATE_CONTROL_SIZE="0")
    command = [args.gate, "--suite", suite, "--data-dir", args.dir, "--out", out, "--require-gpu",
               "--exact", "sync-timing::one-thread[reader=%s]" % reader]
    finished = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with open(os.path.join(out, "report.json")) as f:
        trial = json.load(f)["trials"][0]
    gbps = (trial.get("measurement") or {}).get("gbps")
    if finished.returncode != 0 or not gbps:
        sys.exit("the gate's trial did not pass (exit %d): %s" % (finished.returncode, finished.stderr[-2000:]))
    return gbps[0], trial["measurement"]["files"][0]["path"]


def ctypes_read(cufile, handle, buffer, size, task, level):
    """`size` bytes in `task` calls of cuFileRead from this thread, statistics at `level`: GB/s."""
    check = cufile.check
    check("cuFileSetStatsLevel", cufile.lib.cuFileSetStatsLevel(level))
    base = buffer.data.ptr
    start = time.perf_counter()
    for offset in range(0, size, task):
        cufile.read(handle, base, min(task, size - offset), offset, offset)
    return size / (time.perf_counter() - start) / 1e9


def kvikio_read(kvikio, path, buffer, size, task):
    with kvikio.CuFile(path, "r") as f:
        start = time.perf_counter()
        done = f.pread(buffer, size, 0, task).get()
        seconds = time.perf_counter() - start
    if done != size:
        sys.exit("KvikIO read %d of %d bytes" % (done, size))
    return size / seconds / 1e9


def drop(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def parse_size(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for unit, scale in units.items():
        if text.endswith(unit):
            return int(text[:-len(unit)]) * scale
    return int(text)


def open_library(args):
    """cuFile through ctypes, on the library KvikIO maps (one copy in the process), its driver open."""
    return Cufile(args.libcufile).open_driver()


def in_process(args, path, size, task):
    """This process's variants by name: cuFileRead through ctypes and KvikIO's pread."""
    import cupy
    import kvikio
    cufile = open_library(args)
    buffer = cupy.empty(size, dtype=cupy.uint8)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    handle = cufile.handle(fd)
    return {
        "ctypes, stats off": lambda: ctypes_read(cufile, handle, buffer, size, task, 0),
        "ctypes, stats level 3": lambda: ctypes_read(cufile, handle, buffer, size, task, 3),
        "KvikIO pread": lambda: kvikio_read(kvikio, path, buffer, size, task),
    }


def like_the_worker(args, path, size, task):
    """The same calls in the order the gate's Rust worker made them before it opened the driver
    after the CUDA context on one thread: cuFile's driver opened on a
    thread of its own while this one makes the CUDA context, the reads made by a thread started
    for the pass (the buffer's device made current on it): its GB/s."""
    import threading
    import cupy
    opened = {}
    opener = threading.Thread(target=lambda: opened.update(cufile=open_library(args)))
    opener.start()
    cupy.cuda.Device(0).use()
    buffer = cupy.empty(size, dtype=cupy.uint8)
    buffer.fill(0xA5)  # the worker poisons its buffer before a pass
    cupy.cuda.Device().synchronize()
    opener.join()
    cufile = opened["cufile"]
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    handle = cufile.handle(fd)
    rate = {}

    def reader():
        cupy.cuda.Device(0).use()
        rate["gbps"] = ctypes_read(cufile, handle, buffer, size, task, 3)

    thread = threading.Thread(target=reader)
    thread.start()
    thread.join()
    return rate["gbps"]


def own_process(args, path, variant, config=None):
    """`variant` of in_process, run once in a new process (cuFile and CUDA started afresh), with
    the gate's trial cufile.json when `config` names it: its GB/s."""
    command = [sys.executable, os.path.abspath(__file__), "--one", variant, "--path", path, "--libcufile",
               args.libcufile, "--size", args.size, "--task", args.task, "--gate", args.gate, "--dir", args.dir]
    env = dict(os.environ, **({"CUFILE_ENV_PATH_JSON": config} if config else {}))
    finished = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        rate = float(finished.stdout.split()[-1])
    except (IndexError, ValueError):
        sys.exit("%s in its own process failed (exit %d): %s%s" % (variant, finished.returncode,
                                                                  finished.stdout[-500:], finished.stderr[-2000:]))
    if finished.returncode != 0:  # libcufile's teardown may crash after the figure is out
        print("%s: its process ended with exit %d after its figure" % (variant, finished.returncode), file=sys.stderr)
    return rate


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gate", required=True, help="the gds-gate binary")
    parser.add_argument("--dir", required=True, help="data dir for the file, on a mount cuFile reads")
    parser.add_argument("--libcufile", required=True, help="the libcufile KvikIO loads (all variants use it)")
    parser.add_argument("--size", default="512MiB")
    parser.add_argument("--task", default="4MiB")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one in-process variant, once (own_process)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size, task = parse_size(args.size), parse_size(args.task)
    os.environ.update(KVIKIO_COMPAT_MODE="OFF", KVIKIO_NTHREADS="1", KVIKIO_TASK_SIZE=str(task))
    if args.one:
        drop(args.path)
        if args.one == "like the worker":
            print(like_the_worker(args, args.path, size, task))
        else:
            print(in_process(args, args.path, size, task)[args.one]())
        return

    work = tempfile.mkdtemp(prefix="sync-timing-")
    suite = os.path.join(work, "suite.yaml")
    with open(suite, "w") as f:
        f.write(SUITE.format(size=size, task=task))
    _, path = gate_read(args, suite, os.path.join(work, "first"), "cufile")  # generates the file
    trial_config = glob.glob(os.path.join(work, "first", "trials", "*", "cufile.json"))
    variants = {
        "gate cufile reader": lambda: gate_read(args, suite, os.path.join(work, "gate"), "cufile")[0],
        "gate KvikIO worker": lambda: gate_read(args, suite, os.path.join(work, "gate"), "kvikio")[0],
        "ctypes, own process": lambda: own_process(args, path, "ctypes, stats off"),
        "KvikIO pread, own process": lambda: own_process(args, path, "KvikIO pread"),
    }
    if trial_config:
        variants["ctypes, own process, the trial's cufile.json"] = \
            lambda: own_process(args, path, "ctypes, stats off", trial_config[0])
        variants["ctypes, own process, the trial's cufile.json, as the worker calls"] = \
            lambda: own_process(args, path, "like the worker", trial_config[0])
    variants.update(in_process(args, path, size, task))
    rates = {name: [] for name in variants}
    for number in range(args.rounds):
        order = list(variants) if number % 2 == 0 else list(reversed(variants))
        for name in order:
            drop(path)
            rates[name].append(variants[name]())
        print("round %d: %s" % (number + 1, ", ".join("%s %.2f" % (n, rates[n][-1]) for n in variants)),
              flush=True)

    reference = statistics.median(rates["KvikIO pread"])
    print("| %s, %s calls, one thread, %d rounds | GB/s (median) | of KvikIO pread | rounds |" % (args.size, args.task,
                                                                                    args.rounds))
    print("|---|---:|---:|---|")
    for name, values in rates.items():
        median = statistics.median(values)
        print("| %s | %.2f | %.2f | %s |" % (name, median, median / reference, " ".join("%.2f" % v for v in values)))
    # Round by round, as bench --parity states it: a disk's drift between rounds moves both.
    pairs = [a / b for a, b in zip(rates["gate cufile reader"], rates["gate KvikIO worker"])]
    print("gate cufile reader / gate KvikIO worker, round by round: median %.2f (%s)"
          % (statistics.median(pairs), " ".join("%.2f" % v for v in pairs)))


if __name__ == "__main__":
    main()
