#!/usr/bin/env python3
"""Replays a trial's reads outside the gate and times each call: the independent measurement the
gate's latency percentiles and IOPS are checked against (fio-style, with the trial's own offsets).

Reads the plan from a trial folder's spec.json (under the reports directory, `trials/<trial>/`),
drops each file's page cache (posix_fadvise DONTNEED, as a cold pass does), then reads every
task of the plan with os.pread from `nthreads` threads, as the posix reader splits it, and prints
per-call latency percentiles, the mean, IOPS and GB/s per pass. `--direct` opens the files with
O_DIRECT into an aligned buffer: the POSIX reads cuFile's compat mode makes, without its copy to
the GPU.

    python3 harness/drills/replay_latency.py target/gds-gate/trials/<trial>/spec.json [--passes 3]
"""

import argparse
import json
import mmap
import os
import threading
import time


def tasks(plan, task_size):
    """The plan's segments cut into tasks of at most task_size bytes, in plan order."""
    for segment in plan["segments"]:
        done = 0
        while done < segment["len"]:
            length = min(task_size, segment["len"] - done)
            yield segment["file"], segment["offset"] + done, length
            done += length


def percentile(sorted_values, q):
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def one_pass(plan, work, nthreads, direct, whole):
    flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
    fds = [os.open(f["path"], flags) for f in plan["files"]]
    for fd in fds:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    queue = list(reversed(list(enumerate(work))))
    lock = threading.Lock()
    latencies = [[] for _ in range(nthreads)]
    biggest = max(length for _, _, length in work)
    # With `whole`, one destination of the whole pass, each call into its own place, touched
    # before the pass (the posix reader's host buffer); otherwise each thread reuses one buffer.
    shared = None
    if whole:
        shared = mmap.mmap(-1, sum(length for _, _, length in work))
        for page in range(0, len(shared), mmap.PAGESIZE):
            shared[page] = 0
    places = []
    at = 0
    for _, _, length in work:
        places.append(at)
        at += length

    def reader(index):
        buffer = shared if whole else mmap.mmap(-1, biggest)  # page-aligned, as O_DIRECT wants
        view = memoryview(buffer)
        own = latencies[index]
        while True:
            with lock:
                if not queue:
                    break
                number, (file, offset, length) = queue.pop()
            base = places[number] if whole else 0
            start = time.perf_counter_ns()
            done = 0
            while done < length:
                n = os.preadv(fds[file], [view[base + done:base + length]], offset + done)
                if n <= 0:
                    raise OSError("short read at %d" % (offset + done))
                done += n
            own.append(time.perf_counter_ns() - start)
        view.release()
        if not whole:
            buffer.close()

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(nthreads)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    for fd in fds:
        os.close(fd)
    if shared is not None:
        shared.close()
    return seconds, sorted(ns for own in latencies for ns in own)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="a trial's spec.json")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--nthreads", type=int, help="default: the trial's")
    parser.add_argument("--direct", action="store_true", help="O_DIRECT, as cuFile's compat mode reads")
    parser.add_argument("--whole", action="store_true",
                        help="read into one destination of the whole pass, each call into its own place, "
                             "as the posix reader does (default: one reused buffer per thread)")
    args = parser.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    plan, trial = spec["plan"], spec["trial"]
    nthreads = args.nthreads or trial["nthreads"]
    work = list(tasks(plan, trial["task_size"]))
    total = sum(length for _, _, length in work)
    print("%s: %d calls of %d bytes in all per pass, %d thread(s)%s%s"
          % (trial["name"], len(work), total, nthreads, ", O_DIRECT" if args.direct else "",
             ", whole destination" if args.whole else ""))
    print("pass  GB/s     IOPS   mean_us    p50_us    p90_us    p99_us  p99.9_us    max_us")
    for number in range(1, args.passes + 1):
        seconds, ns = one_pass(plan, work, nthreads, args.direct, args.whole)
        us = lambda q: percentile(ns, q) / 1e3
        print("%4d %5.2f %8.0f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f"
              % (number, total / seconds / 1e9, len(ns) / seconds, sum(ns) / len(ns) / 1e3,
                 us(0.5), us(0.9), us(0.99), us(0.999), ns[-1] / 1e3))


if __name__ == "__main__":
    main()
