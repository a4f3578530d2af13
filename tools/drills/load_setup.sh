#!/usr/bin/env bash
# The load set-up drill: is a slower set-up step of a load (`op: load`) caught against the
# baseline, and reported as that step rather than as a slower load?
#   1. Builds a library that sleeps DELAY microseconds (--delay-us, default 2000) in every open of
#      a generated data file (open, open64, openat, openat64 of a path holding `gds-gate-s`).
#   2. Blesses the suite (--bless-runs, default 6) and runs it CLEAN times (--clean, default 3)
#      against that baseline: every run must pass.
#   3. Runs it SLOWED times (--slowed, default 2) with the library preloaded: every load must fail
#      `costlier`, judged `load-costlier` on its `open` step.
# Needs cc and python3, and a data dir on a disk (the suite reads cold); no GPU with the default
# suite (posix loads of 16 × 4 MiB).
#   tools/drills/load_setup.sh --gate target/release/gds-gate --work /var/tmp/load-drill
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage or a host where it cannot run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/drills/throughput.sh
source "$here/throughput.sh"
die() { echo "load set-up drill: $*" >&2; exit 2; }

build_library() {
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

# One row per run: the exit code, then each load's judgement, its judged step and ratio, and its
# median load time and open step.
row() {
  python3 - "$1/report.json" <<'PY'
import json, statistics, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError) as error:
    print("no report.json (%s)" % error.__class__.__name__); sys.exit()
measured = {t["name"]: t.get("measurement") or {} for t in report["trials"]}
cells = []
for t in (report.get("baseline") or {}).get("trials") or []:
    j, m = t["judgement"], measured.get(t["trial"]) or {}
    load = m.get("load") or {}
    step = " %s x%.2f" % (j["step"], 1 / j["cost"]["efficiency"]["ratio"]) if j["kind"] == "load-costlier" else ""
    speed = (j.get("throughput") or {}).get("ratio")
    cells.append("%s=%s%s load %.1f ms (x%s) open %.2f ms" % (
        t["trial"].split("::", 1)[-1], j["kind"], step,
        statistics.median(m.get("seconds") or [0]) * 1e3, "%.2f" % speed if speed else "-",
        statistics.median(load.get("open_seconds") or [0]) * 1e3))
print("; ".join(cells))
PY
}

main() {
  local GATE="" WORK="" DATA="" SUITE=$here/load_setup.yaml BLESS_RUNS=6 CLEAN=3 SLOWED=2 DELAY=2000
  while (($#)); do
    case $1 in
      -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
                 echo "Options: --gate PATH --work DIR --data-dir DIR --suite FILE --bless-runs N --clean N --slowed N --delay-us US"
                 exit 0 ;;
      --gate|--work|--data-dir|--suite|--bless-runs|--clean|--slowed|--delay-us)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --gate) GATE=$2 ;; --work) WORK=$2 ;; --data-dir) DATA=$2 ;; --suite) SUITE=$2 ;;
          --bless-runs) BLESS_RUNS=$2 ;; --clean) CLEAN=$2 ;; --slowed) SLOWED=$2 ;; --delay-us) DELAY=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument $1 (see --help)" ;;
    esac
  done
  local repo
  repo=$(cd "$here/../.." && pwd)
  [[ -f $SUITE ]] || die "suite file not found: $SUITE"
  SUITE=$(realpath -e "$SUITE")
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" load-drill) || exit 2
  DATA=$(realpath -m "${DATA:-$WORK/data}")
  [[ -e $WORK/table.txt ]] && die "$WORK already holds a drill (table.txt); pick a fresh --work"
  mkdir -p "$WORK" "$DATA"
  : > "$WORK/table.txt"
  build_library "$WORK/libslowopen.so"
  local common=(--suite "$SUITE" --runner load-drill --baselines "$WORK/baselines" --data-dir "$DATA"
                --history "$WORK/history.jsonl")
  echo "== 1. bless: $BLESS_RUNS runs of $SUITE"
  env -u CI "$GATE" bless --runs "$BLESS_RUNS" "${common[@]}" --out "$WORK/bless" > "$WORK/bless.log" 2>&1 ||
    { tail -n 20 "$WORK/bless.log" >&2; echo "load set-up drill: bless failed ($WORK/bless.log)" >&2; exit 1; }
  local failed=0 i rc
  echo "== 2. clean runs: $CLEAN, each must pass"
  for ((i = 1; i <= CLEAN; i++)); do
    rc=0; "$GATE" "${common[@]}" --out "$WORK/clean-$i" > "$WORK/clean-$i.log" 2>&1 || rc=$?
    echo "clean $i: exit $rc: $(row "$WORK/clean-$i")" | tee -a "$WORK/table.txt"
    ((rc == 0)) || failed=1
  done
  echo "== 3. runs with every open of a data file $DELAY µs late: $SLOWED, each load must be judged slower to open"
  for ((i = 1; i <= SLOWED; i++)); do
    rc=0
    LD_PRELOAD=$WORK/libslowopen.so SLOW_OPEN_US=$DELAY "$GATE" "${common[@]}" --out "$WORK/slowed-$i" \
      > "$WORK/slowed-$i.log" 2>&1 || rc=$?
    local judged
    judged=$(row "$WORK/slowed-$i")
    echo "slowed $i: exit $rc: $judged" | tee -a "$WORK/table.txt"
    [[ $rc == 3 && $judged == *load-costlier\ open* && $judged != *=pass* && $judged != *=regression* ]] || failed=1
  done
  if ((failed)); then echo "DRILL FAILED (table: $WORK/table.txt)"; exit 1; fi
  echo "DRILL PASSED (table: $WORK/table.txt)"
}

main "$@"
