#!/usr/bin/env python3
"""Tells what makes libcufile crash when a process ends. The gate's workers often end with SIGSEGV
after writing a complete result. On the H200 (libcufile 1.15.1, compat mode) the thread
arrangement made no difference (40 of 40 clean with the host's cufile.json); with cuFile's
statistics at level 3, set by a trial's cufile.json or started through the API, 2 to 5 of 8
processes crashed, with them at 0 none; cuFileStatsStop or cuFileDriverClose before returning
kept 8 of 8 clean here, but in the gate's workers cuFileStatsStop made some crash before their
result instead, so they do not call it.

Runs each arrangement in `--processes` new processes, each opening the driver, registering the
file, reading `--size` bytes in 4 MiB cuFileRead calls into a cupy buffer and returning from
main without tearing anything down by hand (as the workers do), and counts how they ended:

  main/main      driver opened and reads made on the main thread
  thread/main    driver opened on a thread that has exited by the reads, reads on the main thread
  main/thread    driver opened on the main thread, reads on a thread started for them
  thread/thread  both on threads of their own (the Rust worker's order)

Each `--ending` is what a process does after its reads: `exit` (nothing, as the workers do),
`stats-stop` (cuFileStatsStop), `close` (the handle deregistered, then cuFileDriverClose),
`exit-now` (os._exit, no exit handlers: what the gate's Rust worker does after its answer).
`--api-stats` starts cuFile's statistics through its API after the driver opens, as the workers
do (cuFileSetStatsLevel(3), cuFileStatsStart).

Each `--config` (a cufile.json, such as a trial's from the gate's reports) runs every arrangement
again with cuFile configured by it (CUFILE_ENV_PATH_JSON), beside the host's own configuration:
the gate's workers and the replay run with the trial's file (statistics at level 3, a log folder).

    python3 tools/drills/cufile_teardown.py --dir /var/tmp/gw --processes 10 \
        --config target/gds-gate/trials/<trial>/cufile.json
"""

import argparse
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cufile_entry_points import MIB, Cufile, make_file  # noqa: E402

ARRANGEMENTS = ["main/main", "thread/main", "main/thread", "thread/thread"]
ENDINGS = ["exit", "stats-stop", "close", "exit-now"]


def on(where, work):
    """`work()` on the main thread, or on a thread of its own that has ended when this returns."""
    if where == "main":
        return work()
    result = {}
    thread = threading.Thread(target=lambda: result.update(value=work()))
    thread.start()
    thread.join()
    return result["value"]


def call(cufile, *names):
    """The first of `names` the library exports, called with no arguments."""
    for name in names:
        if hasattr(cufile.lib, name):
            return cufile.check(name, getattr(cufile.lib, name)())
    raise RuntimeError("the library exports none of %s" % ", ".join(names))


def one_process(arrangement, ending, api_stats, path, size, library):
    import cupy
    driver, reads = arrangement.split("/")

    def open_driver():
        cufile = Cufile(library).open_driver()
        if api_stats:
            cufile.start_stats()
        return cufile

    cufile = on(driver, open_driver)
    buffer = cupy.empty(size, dtype=cupy.uint8)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    handle = cufile.handle(fd)

    def read():
        cupy.cuda.Device(0).use()
        for offset in range(0, size, 4 * MIB):
            length = min(4 * MIB, size - offset)
            cufile.read(handle, buffer.data.ptr, length, offset, offset)

    on(reads, read)
    print("read %d bytes" % size, flush=True)
    if ending == "stats-stop":
        call(cufile, "cuFileStatsStop")
    elif ending == "close":
        cufile.lib.cuFileHandleDeregister(handle)
        call(cufile, "cuFileDriverClose_v2", "cuFileDriverClose")
    print("ended by %s" % ending, flush=True)
    if ending == "exit-now":
        sys.stderr.flush()
        os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="folder for the drill's file, on a mount cuFile reads")
    parser.add_argument("--libcufile", default="libcufile.so.0")
    parser.add_argument("--size", type=int, default=256 * MIB)
    parser.add_argument("--processes", type=int, default=10, help="processes per arrangement")
    parser.add_argument("--arrangements", nargs="+", choices=ARRANGEMENTS, default=ARRANGEMENTS)
    parser.add_argument("--ending", nargs="+", choices=ENDINGS, default=["exit"])
    parser.add_argument("--api-stats", action="store_true", help="start statistics through the API")
    parser.add_argument("--config", action="append", default=[], help="a cufile.json to run them with too")
    parser.add_argument("--one", choices=ARRANGEMENTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = make_file(args.dir, args.size)
    if args.one:
        one_process(args.one, args.ending[0], args.api_stats, path, args.size, args.libcufile)
        return
    print("| arrangement (driver/reads) | ending | cufile.json | processes | read and ended cleanly "
          "| read, then crashed | failed before the end |")
    print("|---|---|---|---:|---:|---:|---:|")
    cases = [(c, a, e) for c in [None] + args.config for a in args.arrangements for e in args.ending]
    for config, arrangement, ending in cases:
        env = dict(os.environ, **({"CUFILE_ENV_PATH_JSON": os.path.abspath(config)} if config else {}))
        ends = {"clean": 0, "crashed": 0, "failed": 0}
        for _ in range(args.processes):
            finished = subprocess.run([sys.executable, os.path.abspath(__file__), "--dir", args.dir, "--libcufile",
                                       args.libcufile, "--size", str(args.size), "--one", arrangement,
                                       "--ending", ending] + (["--api-stats"] if args.api_stats else []),
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      timeout=120)
            read = "read %d bytes" % args.size in finished.stdout
            ends["clean" if read and finished.returncode == 0 else "crashed" if read else "failed"] += 1
            if not read:
                print("%s: exit %d: %s" % (arrangement, finished.returncode, finished.stderr[-500:]), file=sys.stderr)
            elif "ended by" not in finished.stdout:
                print("%s: exit %d inside its %s" % (arrangement, finished.returncode, ending), file=sys.stderr)
        print("| %s | %s | %s | %d | %d | %d | %d |" % (arrangement, ending, config or "the host's", args.processes,
                                                         ends["clean"], ends["crashed"], ends["failed"]), flush=True)


if __name__ == "__main__":
    main()
