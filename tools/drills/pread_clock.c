/* A second clock on every pread of a process, loaded with LD_PRELOAD: same_calls_latency.py
 * builds it and runs the gate under it, to time the very calls the gate's posix reader times.
 *
 * Each process started under it writes `$PREAD_CLOCK_DIR/<pid>.cmdline` (its command line, by
 * which the drill finds a trial's worker) and `<pid>.bin`: a u64 count of calls, then one record
 * (below) per call up to the capacity (1 << 20 calls; the count goes on past it, so a reader can
 * tell records were lost). The file is mapped shared and written with plain stores, and the
 * records survive `_exit` (the gate's worker leaves that way): the kernel writes a shared mapping
 * back whatever the process does next.
 *
 * What the shim adds to a call the gate times: two clock reads, an atomic add, a 48-byte store and,
 * once every 85 calls, the page fault of a new page of the mapping: microseconds at most, next to
 * calls of milliseconds.
 *
 *     cc -O2 -shared -fPIC -o pread_clock.so pread_clock.c -ldl
 */
#define _GNU_SOURCE
/* Distributions' compilers fortify by default, which makes pread an inline wrapper this file
 * cannot define. */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct record {
    uint64_t start_ns; /* CLOCK_MONOTONIC before the call */
    uint64_t end_ns;   /* and after it */
    uint64_t offset;
    uint64_t count;
    int64_t result;
    int64_t fd;
};

#define CAPACITY (1u << 20)

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static uint64_t *kept; /* the count at the start of the mapping, the records after it */
static struct record *records;

/* A child forked without exec would write into its parent's file: it records nothing. */
static void forked(void) { kept = NULL; }

static void copy_command_line(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%d.cmdline", dir, (int)getpid());
    int in = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    char buffer[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buffer, sizeof buffer)) > 0) {
        if (write(out, buffer, (size_t)n) != n) {
            break;
        }
    }
    if (in >= 0) {
        close(in);
    }
    if (out >= 0) {
        close(out);
    }
}

/* Set up before main, so that no timed call pays for it. */
__attribute__((constructor)) static void setup(void) {
    real_pread = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
    const char *dir = getenv("PREAD_CLOCK_DIR");
    if (dir == NULL) {
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%d.bin", dir, (int)getpid());
    /* O_EXCL: a process whose pid was used before in the run is not timed, rather than erasing
     * the earlier process's records. */
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    size_t bytes = sizeof(uint64_t) + (size_t)CAPACITY * sizeof(struct record);
    void *map = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0) {
        map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (map == MAP_FAILED) {
        return;
    }
    copy_command_line(dir);
    pthread_atfork(NULL, NULL, forked);
    records = (struct record *)((uint64_t *)map + 1);
    kept = (uint64_t *)map;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static ssize_t timed(int fd, void *buf, size_t count, off_t offset) {
    if (real_pread == NULL) { /* a pread from another library's constructor, before ours */
        real_pread = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
    }
    if (kept == NULL) {
        return real_pread(fd, buf, count, offset);
    }
    uint64_t start = now_ns();
    ssize_t result = real_pread(fd, buf, count, offset);
    uint64_t end = now_ns();
    uint64_t slot = __atomic_fetch_add(kept, 1, __ATOMIC_RELAXED);
    if (slot < CAPACITY) {
        records[slot] = (struct record){start, end, (uint64_t)offset, count, result, fd};
    }
    return result;
}

/* glibc exports both names (one function on 64-bit hosts); Rust's std calls pread64, C programs
 * usually pread. */
ssize_t pread64(int fd, void *buf, size_t count, off64_t offset) { return timed(fd, buf, count, offset); }
ssize_t pread(int fd, void *buf, size_t count, off_t offset) { return timed(fd, buf, count, offset); }
