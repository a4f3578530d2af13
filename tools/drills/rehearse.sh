#!/usr/bin/env bash
# The rehearsal drill: does `gds-gate rehearse` find a stack B that reads 30% slower, with
# confidence, in the rounds its budget allows, and find A against A equal?
#   1. Builds a library that B's workers preload (LD_PRELOAD, as a stack's libraries would come):
#      its pread, pread64 and preadv sleep in proportion to the bytes asked before reading: --sleep F
#      times A's time per byte in the twins' rehearsal. Buffered cold reads overlap the sleep
#      with the kernel's readahead, so B loses less than the sleep: F 0.43 (0.7 of A's rate if
#      nothing overlapped) read 0.86 of A on the 2-core CPU host, F 1 about 0.7.
#   2. Rehearses A against a twin of A (same environment): the verdict must be `same`.
#   3. Rehearses A against the slowed B: every trial must be `slower` (exit 3).
#   4. With --also NAME:ENV, rehearses A against a stack B of that environment (e.g. another
#      cufile.json) and reports what differs, judging nothing.
# libcufile imports pread, pread64 and preadv (nm -D of the nvidia-cufile 1.20 wheel's), so the
# library slows the cuFile compat path too (measured on a GPU runner: tools/drills/README.md).
# The suite is one posix trial by default (`--suite`, a filter after `--`), as the CPU host has;
# on a GPU runner name a suite and a filter, e.g. --suite scenarios/drill.yaml -- cold-read.
#
#   tools/drills/rehearse.sh --gate target/release/gds-gate --work /var/tmp/rehearse-drill
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: rehearse.sh --gate PATH --work DIR [--suite FILE] [--budget DURATION] [--sleep F]
                   [--library FILE] [--also NAME:ENV]... [-- GATE_ARGS...]
  --gate PATH        gds-gate binary
  --work DIR         stacks, library, reports and logs
  --suite FILE       suite to rehearse (default: tools/drills/bless_shift.yaml, filter whole[nthreads=1])
  --budget DURATION  each rehearsal's budget (default: 60s)
  --sleep F          B's sleep per byte as a fraction of A's time per byte (default: 1)
  --library FILE     the slowing library, built by `--build-library FILE` on a host with cc
                     (default: build it in WORK)
  --also NAME:ENV    one more rehearsal, A against B with ENV (YAML flow mapping entries,
                     e.g. 'CUFILE_ENV_PATH_JSON: /tmp/small-pool.json'): reported, not judged
  --build-library F  only build the slowing library at F and exit
EOF
}

die() { echo "rehearse drill: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gate="" work="" suite="$here/bless_shift.yaml" budget=60s sleep=1 extra=() library="" also=() build_only=""
while (($#)); do
  case $1 in
    --gate) gate=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --sleep) sleep=$2; shift 2 ;;
    --library) library=$2; shift 2 ;;
    --also) also+=("$2"); shift 2 ;;
    --build-library) build_only=$2; shift 2 ;;
    --help|-h) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) usage >&2; exit 2 ;;
  esac
done
# build_library FILE: the preloaded library. Sleeps NS_PER_BYTE nanoseconds for each byte asked, then reads.
build_library() {
  command -v cc > /dev/null || die "needs a C compiler (cc) to build the slowing library (or --library)"
  cat > "$1.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <sys/types.h>
#include <sys/uio.h>
typedef ssize_t (*read_at)(int, void *, size_t, off_t);
static ssize_t slow(const char *name, int fd, void *b, size_t n, off_t o) {
  const char *rate = getenv("SLOW_NS_PER_BYTE");
  double ns = rate ? atof(rate) * (double)n : 0.0;
  struct timespec t = { (time_t)(ns / 1e9), (long)((long long)ns % 1000000000LL) };
  nanosleep(&t, NULL);
  return name ? ((read_at)dlsym(RTLD_NEXT, name))(fd, b, n, o) : 0;
}
ssize_t pread64(int fd, void *b, size_t n, off_t o) { return slow("pread64", fd, b, n, o); }
ssize_t pread(int fd, void *b, size_t n, off_t o) { return slow("pread", fd, b, n, o); }
typedef ssize_t (*read_vec)(int, const struct iovec *, int, off_t);
ssize_t preadv(int fd, const struct iovec *v, int count, off_t o) {
  size_t n = 0;
  for (int i = 0; i < count; i++) n += v[i].iov_len;
  slow(NULL, fd, NULL, n, o);
  return ((read_vec)dlsym(RTLD_NEXT, "preadv"))(fd, v, count, o);
}
EOF
cc -shared -fPIC -O2 -o "$1" "$1.c" -ldl || die "cannot build the slowing library"
}

if [[ -n $build_only ]]; then build_library "$build_only"; exit 0; fi
[[ -x $gate && -n $work ]] || { usage >&2; exit 2; }
((${#extra[@]})) || extra=('whole[nthreads=1]')
mkdir -p "$work"

if [[ -z $library ]]; then library=$work/libslow.so; build_library "$library"; fi
[[ -f $library ]] || die "no slowing library at $library"

# rehearse NAME B_ENV: one rehearsal, its exit code and each pair's line.
rehearse() {
  local name=$1 b_env=$2
  printf 'a: {name: now}\nb: {name: %s, env: {%s}}\ntolerance: 10%%\n' "$name" "$b_env" > "$work/$name.yaml"
  set +e
  "$gate" rehearse --stacks "$work/$name.yaml" --budget "$budget" --suite "$suite" \
    --data-dir "$work/data" --out "$work/$name" --history "$work/history.jsonl" "${extra[@]}" \
    > "$work/$name.log" 2>&1
  local code=$?
  set -e
  echo "$name: exit $code"
  grep -A100 '^rehearsal:' "$work/$name.log" | grep -v '^reports:' || true
  return $code
}

verdicts() {
  python3 -c 'import json, sys
print(" ".join(p["verdict"] for p in json.load(open(sys.argv[1]))["rehearsal"]["pairs"]))' "$1/report.json"
}

failed=0
twin_code=0
rehearse twin "" || twin_code=$?
[[ $twin_code == 0 && $(verdicts "$work/twin") =~ ^(same ?)+$ ]] || failed=1
ns=$(python3 -c 'import json, sys
pairs = json.load(open(sys.argv[1]))["rehearsal"]["pairs"]
gbps = min(p["a"]["median_gbps"] for p in pairs)
print("%.4f" % (float(sys.argv[2]) / gbps))' "$work/twin/report.json" "$sleep")
echo "slowing B by $ns ns per byte ($sleep of A's time per byte)"
slow_code=0
rehearse slower "LD_PRELOAD: $(realpath "$library"), SLOW_NS_PER_BYTE: '$ns'" || slow_code=$?
[[ $slow_code == 3 && $(verdicts "$work/slower") =~ ^(slower ?)+$ ]] || failed=1
for stack in "${also[@]}"; do
  rehearse "${stack%%:*}" "${stack#*:}" || true
done
if ((failed)); then echo "DRILL FAILED"; exit 1; fi
echo "DRILL PASSED"
