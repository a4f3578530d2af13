#!/usr/bin/env bash
# The costlier drill: is a cost the gate judges beside throughput caught against the baseline,
# and reported as that cost rather than as a slower trial? Two faults (--fault):
#   open  (default) a load's set-up step: a library sleeps --delay-us (default 2000) µs in every
#         open of a generated data file (open, open64, openat, openat64 of a path holding
#         `gds-gate-s`); every load must be judged `load-costlier` on its `open` step.
#         Suite: load_setup.yaml (16 cold 4 MiB shards, posix).
#   read  reads beside writes: rehearse.sh's library sleeps --delay-ns-per-byte (default 4) ns per
#         byte in every pread, pread64 and preadv of the trial's workers; the reading rank's
#         latency must be judged `latency-higher`. Suite: latency.yaml (posix, 2 ranks, 1 writing).
# Steps: bless the suite (--bless-runs, default 6), run it CLEAN times (--clean, default 3), each
# must pass; run it SLOWED times (--slowed, default 2) with the library preloaded, each must exit 3
# with every trial judged as the fault's cost.
# Needs cc and python3, and a data dir on a disk (the suites read cold); no GPU with the default
# suites.
#   tools/drills/costlier.sh --gate target/release/gds-gate --work /var/tmp/load-drill
#   tools/drills/costlier.sh --fault read --gate target/release/gds-gate --work /var/tmp/latency-drill
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage or a host where it cannot run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/drills/throughput.sh
source "$here/throughput.sh"
die() { echo "costlier drill: $*" >&2; exit 2; }

build_open_library() {
  command -v cc > /dev/null || die "needs a C compiler (cc) to build the delaying library"
  cat > "$1.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static void delay(const char *path) {
  const char *us = getenv("SLOW_OPEN_US");
  if (!us || !path || !strstr(path, "gds-gate-s")) return;
  long long ns = atoll(us) * 1000LL;
  struct timespec t = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
  nanosleep(&t, NULL);
}
#define MODE(flags) mode_t mode = 0; if ((flags) & (O_CREAT | O_TMPFILE)) { \
  va_list a; va_start(a, flags); mode = va_arg(a, mode_t); va_end(a); }
typedef int (*open_f)(const char *, int, ...);
typedef int (*openat_f)(int, const char *, int, ...);
int open(const char *p, int flags, ...) { MODE(flags); delay(p);
  return ((open_f)dlsym(RTLD_NEXT, "open"))(p, flags, mode); }
int open64(const char *p, int flags, ...) { MODE(flags); delay(p);
  return ((open_f)dlsym(RTLD_NEXT, "open64"))(p, flags, mode); }
int openat(int d, const char *p, int flags, ...) { MODE(flags); delay(p);
  return ((openat_f)dlsym(RTLD_NEXT, "openat"))(d, p, flags, mode); }
int openat64(int d, const char *p, int flags, ...) { MODE(flags); delay(p);
  return ((openat_f)dlsym(RTLD_NEXT, "openat64"))(d, p, flags, mode); }
C
  cc -shared -fPIC -O2 -o "$1" "$1.c" -ldl || die "cannot build the delaying library"
}

# One row per run: each trial's judgement (with the judged step or percentile and its ratio), its
# throughput ratio, and the figures the fault moves: a load's median time and open step, or the
# reading rank's median p99 read latency.
row() {
  python3 - "$1/report.json" <<'PY'
import json, statistics, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError) as error:
    print("no report.json (%s)" % error.__class__.__name__); sys.exit()
measured = {t["name"]: t.get("measurement") or {} for t in report["trials"]}
median = lambda xs: statistics.median(xs or [0])
cells = []
for t in (report.get("baseline") or {}).get("trials") or []:
    j, m = t["judgement"], measured.get(t["trial"]) or {}
    what = j.get("step") or j.get("percentile")
    rise = " %s x%.2f" % (what, 1 / j["cost"]["efficiency"]["ratio"]) if what and "cost" in j else ""
    speed = (j.get("throughput") or {}).get("ratio")
    if m.get("load"):
        figures = "load %.1f ms, open %.2f ms" % (
            median(m.get("seconds")) * 1e3, median(m["load"].get("open_seconds")) * 1e3)
    elif m.get("read_latency"):
        figures = "p99 read %.0f us" % median(m["read_latency"].get("p99_us"))
    else:
        figures = "%.2f GB/s" % median(m.get("gbps"))
    cells.append("%s=%s%s (speed x%s) %s" % (
        t["trial"].split("::", 1)[-1], j["kind"], rise, "%.2f" % speed if speed else "-", figures))
print("; ".join(cells))
PY
}

main() {
  local GATE="" WORK="" DATA="" SUITE="" FAULT=open BLESS_RUNS=6 CLEAN=3 SLOWED=2 DELAY_US=2000 NS_PER_BYTE=4
  while (($#)); do
    case $1 in
      -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
                 echo "Options: --fault open|read --gate PATH --work DIR --data-dir DIR --suite FILE --bless-runs N"
                 echo "         --clean N --slowed N --delay-us US --delay-ns-per-byte NS"
                 exit 0 ;;
      --fault|--gate|--work|--data-dir|--suite|--bless-runs|--clean|--slowed|--delay-us|--delay-ns-per-byte)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --fault) FAULT=$2 ;; --gate) GATE=$2 ;; --work) WORK=$2 ;; --data-dir) DATA=$2 ;;
          --suite) SUITE=$2 ;; --bless-runs) BLESS_RUNS=$2 ;; --clean) CLEAN=$2 ;;
          --slowed) SLOWED=$2 ;; --delay-us) DELAY_US=$2 ;; --delay-ns-per-byte) NS_PER_BYTE=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument $1 (see --help)" ;;
    esac
  done
  local repo expected fault_env
  repo=$(cd "$here/../.." && pwd)
  case $FAULT in
    open) SUITE=${SUITE:-$here/load_setup.yaml}; expected="load-costlier open"
          fault_env="SLOW_OPEN_US=$DELAY_US" ;;
    read) SUITE=${SUITE:-$here/latency.yaml}; expected="latency-higher"
          fault_env="SLOW_NS_PER_BYTE=$NS_PER_BYTE" ;;
    *) die "--fault must be open or read, not '$FAULT'" ;;
  esac
  [[ -f $SUITE ]] || die "suite file not found: $SUITE"
  SUITE=$(realpath -e "$SUITE")
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" costlier-drill) || exit 2
  DATA=$(realpath -m "${DATA:-$WORK/data}")
  [[ -e $WORK/table.txt ]] && die "$WORK already holds a drill (table.txt); pick a fresh --work"
  mkdir -p "$WORK" "$DATA"
  : > "$WORK/table.txt"
  local library=$WORK/libslow-$FAULT.so
  if [[ $FAULT == open ]]; then build_open_library "$library"
  else bash "$here/rehearse.sh" --build-library "$library" || die "cannot build the slowing library"; fi
  local common=(--suite "$SUITE" --runner costlier-drill --baselines "$WORK/baselines" --data-dir "$DATA"
                --history "$WORK/history.jsonl")
  echo "== 1. bless: $BLESS_RUNS runs of $SUITE"
  env -u CI "$GATE" bless --runs "$BLESS_RUNS" "${common[@]}" --out "$WORK/bless" > "$WORK/bless.log" 2>&1 ||
    { tail -n 20 "$WORK/bless.log" >&2; echo "costlier drill: bless failed ($WORK/bless.log)" >&2; exit 1; }
  local failed=0 i rc judged
  echo "== 2. clean runs: $CLEAN, each must pass"
  for ((i = 1; i <= CLEAN; i++)); do
    rc=0; "$GATE" "${common[@]}" --out "$WORK/clean-$i" > "$WORK/clean-$i.log" 2>&1 || rc=$?
    echo "clean $i: exit $rc: $(row "$WORK/clean-$i")" | tee -a "$WORK/table.txt"
    ((rc == 0)) || failed=1
  done
  echo "== 3. runs with $fault_env preloaded: $SLOWED, each trial must be judged $expected"
  for ((i = 1; i <= SLOWED; i++)); do
    rc=0
    env LD_PRELOAD="$library" "$fault_env" "$GATE" "${common[@]}" --out "$WORK/slowed-$i" \
      > "$WORK/slowed-$i.log" 2>&1 || rc=$?
    judged=$(row "$WORK/slowed-$i")
    echo "slowed $i: exit $rc: $judged" | tee -a "$WORK/table.txt"
    [[ $rc == 3 && $judged == *"=$expected"* && $judged != *=pass* && $judged != *=regression* ]] || failed=1
  done
  if ((failed)); then echo "DRILL FAILED (table: $WORK/table.txt)"; exit 1; fi
  echo "DRILL PASSED (table: $WORK/table.txt)"
}

main "$@"
