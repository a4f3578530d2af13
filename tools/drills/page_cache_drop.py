#!/usr/bin/env python3
"""How long dropping a file's page cache (POSIX_FADV_DONTNEED, as the workers drop it) takes,
by how the file was read and by how many threads drop disjoint ranges of it. A cold trial pays
for a drop before every pass; this says what one costs on this host's kernel and file system.

It writes a file of --size bytes in DIR (random bytes, synced), then for each way of reading
(threads x chunk x order, all on one descriptor) reads it through the page cache and times the
drop, --reps times, with 1, 2, 4 and 8 dropping threads. In `contiguous` order each thread reads
a range of its own; in `shared` order the threads take the next chunk from one queue, as the
gate's readers and KvikIO's thread pool do, which leaves folios of sizes that vary from run to
run; `no-readahead` reads after POSIX_FADV_RANDOM, which leaves 4 KiB pages every time. It prints the page cache's size and the file pages
it holds in large folios (`FileHugePages`) after each read: a kernel that caches the file in
2 MiB folios drops it hundreds of times faster than one that holds 4 KiB pages.

    python3 tools/drills/page_cache_drop.py --dir /var/tmp/drop-probe --size 2GiB
"""

import argparse
import os
import threading
import time

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(text):
    for unit, factor in UNITS.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def meminfo():
    fields = {line.split(":")[0]: int(line.split()[1]) for line in open("/proc/meminfo")}
    return "cached %d MiB, in large file folios %d MiB" % (
        fields["Cached"] >> 10, fields.get("FileHugePages", 0) >> 10)


def read(path, total, threads, chunk, order):
    fd = os.open(path, os.O_RDONLY)
    if order == "no-readahead":
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    per = total // threads
    queue = iter(range(0, total, chunk))
    lock = threading.Lock()

    def contiguous(i):
        offset = i * per
        while offset < (i + 1) * per:
            os.pread(fd, chunk, offset)
            offset += chunk

    def shared(_):
        while True:
            with lock:
                offset = next(queue, None)
            if offset is None:
                return
            os.pread(fd, chunk, offset)

    worker = shared if order == "shared" else contiguous

    running = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    os.close(fd)


def drop(path, total, threads):
    """Seconds to drop the file's pages with `threads` threads, each a disjoint range."""
    fd = os.open(path, os.O_RDONLY)
    per = total // threads
    started = time.perf_counter()
    running = [threading.Thread(target=os.posix_fadvise, args=(fd, i * per, per, os.POSIX_FADV_DONTNEED))
               for i in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    seconds = time.perf_counter() - started
    os.close(fd)
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="a folder on the disk to measure (not tmpfs)")
    parser.add_argument("--size", type=size, default=2 << 30, help="file size (default 2GiB)")
    parser.add_argument("--reps", type=int, default=3, help="drops timed per row (default 3)")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, "page-cache-drop.bin")
    total = args.size - args.size % (16 << 20)
    if total <= 0:
        parser.error("--size must be at least 16MiB")
    with open(path, "wb") as f:
        for _ in range(total // (16 << 20)):
            f.write(os.urandom(16 << 20))
        f.flush()
        os.fsync(f.fileno())
    print("kernel %s, %d MiB file in %s" % (os.uname().release, total >> 20, args.dir))
    try:
        drop(path, total, 1)
        ways = [(1, 1 << 20, "contiguous"), (8, 1 << 20, "contiguous"), (8, 16 << 20, "contiguous"),
                (8, 4 << 20, "shared"), (1, 4 << 20, "no-readahead")]
        for threads, chunk, order in ways:
            for droppers in [1, 2, 4, 8]:
                times = []
                for _ in range(args.reps):
                    read(path, total, threads, chunk, order)
                    cached = meminfo()
                    times.append(drop(path, total, droppers))
                print("read by %d thread(s) in %d MiB chunks, %s (%s); dropped by %d: %s s" % (
                    threads, chunk >> 20, order, cached, droppers, " ".join("%.3f" % t for t in times)),
                    flush=True)
    finally:
        os.remove(path)


if __name__ == "__main__":
    main()
