#!/usr/bin/env python3
"""Calls cuFile's stream-ordered and batch APIs directly (ctypes against libcufile, cupy for the
GPU memory), outside the gate, to tell a fault of the gate's readers from the library's own
behaviour. Each case prints one line, `ok` or what failed, and the file's bytes are compared with
what landed in the GPU:

  async-shared-base    READS (2) cuFileReadAsync of TASK bytes, dealt to STREAMS (1) registered
                       streams, into an unregistered buffer, all named by the buffer's base
                       with their buffer offsets
                       (KvikIO's and the gate's former way; libcufile 1.15 in compat mode
                       returned -5 for the second and logged `exceeds registered length`)
  async-own-base       the same reads, each named at its own address with offset 0 (the
                       gate's cufile-async reader with an unregistered buffer)
  async-registered     the same reads into a buffer registered with cuFileBufRegister, named
                       by its base and the offsets
  batch-min-all        QUEUE_DEPTH threads, each a batch of BATCH entries of 1 MiB into one
                       registered buffer, waited for with cuFileBatchIOGetStatus(min_nr = all
                       outstanding, 100 ms timeout), as the gate's batch reader did when
                       entry-points::batch-deep hung
  batch-min-one        the same, min_nr = 1 (the gate's batch reader now)

Every wait is bounded (--stall seconds without an event ends a batch, which is then cancelled and
left alone). Parameters of the stream-ordered calls live in ctypes objects kept until the stream
is synchronised, as cufile.h requires. The parameters cuFile used and each GetStatus answer are
printed with `-v`.

    cd "$(mktemp -d)" && python3 /path/to/tools/drills/cufile_entry_points.py --dir /var/tmp/gw -v

cuFile writes cufile.log in the current folder (its `cufio_async` and batch lines are the
library's own account). Needs an NVIDIA GPU, cupy and libcufile (`--libcufile`, default
libcufile.so.0 from the loader's path, e.g. /usr/local/cuda/lib64/libcufile.so.0). cuFile's
structs and prototypes come from cufile_abi.py beside this file.
"""

import argparse
import ctypes
import os
import sys
import threading
import time

from cufile_abi import MODE_BATCH, OP_READ, STATUS_COMPLETE, Cufile, IoEvent, IoParams, Timespec

MIB = 1 << 20


# The parameters of batches that stalled: cuFile may still read them, so they live as long as
# the process.
ABANDONED = []


def make_file(folder, size):
    """A file of `size` bytes whose every 8-byte word is its own offset: any misplaced read shows."""
    import numpy
    path = os.path.join(folder, "cufile-entry-points-drill-%d.bin" % size)
    if not os.path.exists(path) or os.path.getsize(path) != size:
        words = numpy.arange(size // 8, dtype=numpy.uint64) * 8
        with open(path, "wb") as f:
            f.write(words.tobytes())
            os.fsync(f.fileno())
    return path


def compare(cupy, buffer, at, file_offset, length, path):
    """'' when the `length` bytes at `at` of the GPU buffer are the file's at `file_offset`."""
    with open(path, "rb") as f:
        f.seek(file_offset)
        want = f.read(length)
    import numpy
    got = cupy.asnumpy(buffer[at:at + length])
    differ = numpy.flatnonzero(got != numpy.frombuffer(want, dtype=numpy.uint8))
    if len(want) == length and not len(differ):
        return ""
    first = int(differ[0]) if len(differ) else len(want)
    return "wrong bytes from buffer offset %d (file offset %d)" % (at + first, file_offset + first)


def async_case(cufile, cupy, path, fd, task, naming, reads, streams, verbose):
    """`reads` reads of `task` bytes at consecutive file offsets, dealt round-robin to `streams`
    registered streams, into their places of one buffer."""
    size = reads * task
    buffer = cupy.zeros(size, dtype=cupy.uint8)
    # The zeros are written on the default stream, which the non-blocking streams below do not
    # wait for: finished first, they cannot overwrite a read that landed.
    cupy.cuda.Device().synchronize()
    base = buffer.data.ptr
    registered = naming == "registered"
    if registered:
        cufile.check("cuFileBufRegister", cufile.lib.cuFileBufRegister(base, size, 0))
    queues = [cupy.cuda.Stream(non_blocking=True) for _ in range(streams)]
    for stream in queues:
        cufile.check("cuFileStreamRegister", cufile.lib.cuFileStreamRegister(stream.ptr, 0))
    handle = cufile.handle(fd)
    # Kept in this list until the streams are synchronised: cuFile reads and writes them then.
    calls = []
    try:
        for index in range(reads):
            offset = index * task
            own = naming == "own-base"
            call = {"base": base + offset if own else base, "size": ctypes.c_size_t(task),
                    "file_offset": ctypes.c_int64(offset), "buffer_offset": ctypes.c_int64(0 if own else offset),
                    "done": ctypes.c_ssize_t(0), "stream": index % streams}
            calls.append(call)
            cufile.check("cuFileReadAsync", cufile.lib.cuFileReadAsync(
                handle, call["base"], ctypes.addressof(call["size"]), ctypes.addressof(call["file_offset"]),
                ctypes.addressof(call["buffer_offset"]), ctypes.addressof(call["done"]),
                queues[call["stream"]].ptr))
        for stream in queues:
            stream.synchronize()
        problems = []
        for index, call in enumerate(calls):
            if verbose:
                print("    call %d on stream %d: base %#x size %d file_offset %d buffer_offset %d -> %d" % (
                    index, call["stream"], call["base"], call["size"].value, call["file_offset"].value,
                    call["buffer_offset"].value, call["done"].value))
            if call["done"].value != task:
                problems.append("read %d returned %d" % (index, call["done"].value))
        if not problems:
            wrong = compare(cupy, buffer, 0, 0, size, path)
            if wrong:
                problems.append(wrong)
        return "; ".join(problems) or "ok"
    finally:
        cufile.lib.cuFileHandleDeregister(handle)
        for stream in queues:
            cufile.lib.cuFileStreamDeregister(stream.ptr)
        if registered:
            cufile.lib.cuFileBufDeregister(base)


def batch_case(cufile, cupy, path, fd, entries, depth, min_all, stall, verbose):
    """`depth` threads, each one batch of `entries` 1 MiB reads into its part of one registered
    buffer, waited for with GetStatus (min_nr all outstanding or 1, 100 ms), bounded by `stall`."""
    total = depth * entries * MIB
    buffer = cupy.zeros(total, dtype=cupy.uint8)
    base = buffer.data.ptr
    cufile.check("cuFileBufRegister", cufile.lib.cuFileBufRegister(base, total, 0))
    handle = cufile.handle(fd)
    outcomes = [None] * depth
    device = cupy.cuda.Device()

    def one(thread):
        try:
            wait(thread)
        except Exception as error:  # the thread's outcome, not an unhandled exception
            outcomes[thread] = ("error: %s" % error, [], None)

    def wait(thread):
        device.use()
        batch = ctypes.c_void_p()
        cufile.check("cuFileBatchIOSetUp", cufile.lib.cuFileBatchIOSetUp(ctypes.byref(batch), entries))
        params = (IoParams * entries)()
        for i in range(entries):
            at = (thread * entries + i) * MIB
            params[i] = IoParams(mode=MODE_BATCH, dev_ptr_base=base, file_offset=at, dev_ptr_offset=at, size=MIB,
                                 fh=handle.value, opcode=OP_READ, cookie=i + 1)
        events = (IoEvent * entries)()
        cufile.check("cuFileBatchIOSubmit", cufile.lib.cuFileBatchIOSubmit(batch, entries, params, 0))
        got, last, polls = [], time.monotonic(), []
        while len(got) < entries:
            left = entries - len(got)
            nr = ctypes.c_uint(left)
            timeout = Timespec(0, 100_000_000)
            asked = time.monotonic()
            cufile.check("cuFileBatchIOGetStatus", cufile.lib.cuFileBatchIOGetStatus(
                batch, left if min_all else 1, ctypes.byref(nr), events, ctypes.byref(timeout)))
            polls.append((nr.value, round((time.monotonic() - asked) * 1000)))
            got.extend((events[i].cookie, events[i].status, events[i].ret) for i in range(min(nr.value, left)))
            if nr.value:
                last = time.monotonic()
            elif time.monotonic() - last > stall:
                cufile.lib.cuFileBatchIOCancel(batch)
                # Left alone (not destroyed, parameters kept): cuFile may still be working on it.
                ABANDONED.append((batch, params, events))
                outcomes[thread] = ("stalled: %d of %d entries outstanding after %.0f s without an event"
                                    % (left, entries, stall), polls, params)
                return
        bad = [g for g in got if g[1] != STATUS_COMPLETE or g[2] != MIB]
        cufile.lib.cuFileBatchIODestroy(batch)
        outcomes[thread] = ("%d entries not complete, e.g. cookie %s status %#x ret %d" % (
            len(bad), bad[0][0], bad[0][1], bad[0][2]) if bad else "", polls, None)

    threads = [threading.Thread(target=one, args=(t,)) for t in range(depth)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    problems = []
    for thread, (problem, polls, _) in enumerate(outcomes):
        if verbose:
            print("    batch %d: GetStatus answers (events, ms): %s" % (thread, polls[:40]))
        if problem:
            problems.append("batch %d: %s" % (thread, problem))
    if not problems:
        wrong = compare(cupy, buffer, 0, 0, total, path)
        if wrong:
            problems.append(wrong)
    stalled = any(o[2] is not None for o in outcomes)
    cufile.lib.cuFileHandleDeregister(handle)
    if not stalled:
        cufile.lib.cuFileBufDeregister(base)
    return "; ".join(problems) or "ok"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="folder for the drill's file, on a mount cuFile reads")
    parser.add_argument("--libcufile", default="libcufile.so.0")
    parser.add_argument("--task", type=int, default=4 * MIB, help="bytes per stream-ordered read")
    parser.add_argument("--reads", type=int, default=2, help="stream-ordered reads per case")
    parser.add_argument("--streams", type=int, default=1, help="registered streams the reads are dealt to")
    parser.add_argument("--batch", type=int, default=32, help="entries per batch (1 MiB each)")
    parser.add_argument("--queue-depth", type=int, default=4, help="batches in flight")
    parser.add_argument("--stall", type=float, default=20.0, help="seconds without an event that end a batch")
    parser.add_argument("--only", action="append", help="run only this case (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="run each case this many times")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    import cupy
    cupy.cuda.Device(0).use()
    cufile = Cufile(args.libcufile)
    cufile.open_driver()
    print("libcufile %s, cuFile version %d" % (args.libcufile, cufile.version()))
    size = max(args.reads * args.task, args.batch * args.queue_depth * MIB)
    path = make_file(args.dir, size)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    def stream_ordered(naming):
        return async_case(cufile, cupy, path, fd, args.task, naming, args.reads, args.streams, args.verbose)

    cases = {
        "async-shared-base": lambda: stream_ordered("shared-base"),
        "async-own-base": lambda: stream_ordered("own-base"),
        "async-registered": lambda: stream_ordered("registered"),
        "batch-min-all": lambda: batch_case(cufile, cupy, path, fd, args.batch, args.queue_depth, True, args.stall,
                                            args.verbose),
        "batch-min-one": lambda: batch_case(cufile, cupy, path, fd, args.batch, args.queue_depth, False, args.stall,
                                            args.verbose),
    }
    failed = 0
    for name, case in [(name, case) for name, case in cases.items() for _ in range(args.repeat)]:
        if args.only and name not in args.only:
            continue
        start = time.monotonic()
        try:
            outcome = case()
        except Exception as error:  # a drill reports every case, whatever one of them raised
            outcome = "error: %s" % error
        failed += outcome != "ok"
        print("%-18s %s (%.1f s)" % (name, outcome, time.monotonic() - start), flush=True)
    os.close(fd)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
