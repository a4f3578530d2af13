#!/usr/bin/env bash
# The bless-shift drill: does a level that drops right after a bless fail, when each of its runs
# stays inside a band that one slow blessed run widened?
#   1. HISTORY runs (default 6) of the suite with no baseline, one of them (--slow-run, default 3)
#      with the data dir's disk capped at SLOW x the first run's slowest trial median, as real
#      histories have a slow run; then `bless --from-history` over them.
#   2. CAPPED runs (default 11) with the disk capped at CAP (default 0.65) x the slowest trial's
#      blessed level (a cap relative to dd's rate may not bind below the trials' own rates).
# Every trial whose level over the capped runs sits more than its tolerance below its baseline
# must fail by the last run (slower, or creep: the bless is a change point too), and none may fail
# in the uncapped runs after the bless (--clean, default 1: the first gives the blessed levels).
# Needs root (cgroups) and a data dir on a block device, as throughput.sh does, and python3.
#   tools/drills/bless_shift.sh --gate target/release/gds-gate --work /var/tmp/bless-shift
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage or a host where it cannot run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/drills/throughput.sh
source "$here/throughput.sh"
die() { echo "bless-shift drill: $*" >&2; exit 2; }

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'OPTIONS'
Options: --gate PATH --work DIR --data-dir DIR --suite FILE --history N --slow-run I --slow F
         --capped N --cap F --clean N   (and -- GATE_ARGS... for every gate run)
OPTIONS
}

# Each trial's median GB/s in REPORT, one `name median` line each.
medians() {
  python3 -c 'import json,sys
for t in json.load(open(sys.argv[1]))["trials"]:
    m = t.get("measurement") or {}
    if m.get("median_gbps"): print(t["name"], m["median_gbps"])' "$1"
}

# Each trial's blessed level as a run against the baseline quotes it (REPORT), `name level` each.
levels() {
  python3 -c 'import json,sys
for t in (json.load(open(sys.argv[1])).get("baseline") or {}).get("trials") or []:
    level = (t["judgement"].get("throughput") or {}).get("level")
    if level: print(t["trial"], level)' "$1"
}

# One row: run, exit code, then each trial's judgement and ratio to its level.
judged() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1] + "/report.json"))
cells = []
for t in (r.get("baseline") or {}).get("trials") or []:
    j = t["judgement"]; th = j.get("throughput") or {}
    cells.append("%s=%s%s" % (t["trial"].split("::", 1)[-1], j["kind"],
                 ":%.2f" % th["ratio"] if th.get("ratio") else ""))
print(" ".join(cells))' "$1"
}

main() {
  GATE="" WORK="" DATA="" SUITE=$here/bless_shift.yaml HISTORY=6 SLOW_RUN=3 SLOW=0.6 CAPPED=11 CAP=0.65 CLEAN=1
  EXTRA=()
  while (($#)); do
    case $1 in
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA=("$@"); break ;;
      --gate|--work|--data-dir|--suite|--history|--slow-run|--slow|--capped|--cap|--clean)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --gate) GATE=$2 ;; --work) WORK=$2 ;; --data-dir) DATA=$2 ;; --suite) SUITE=$2 ;;
          --history) HISTORY=$2 ;; --slow-run) SLOW_RUN=$2 ;; --slow) SLOW=$2 ;;
          --capped) CAPPED=$2 ;; --cap) CAP=$2 ;; --clean) CLEAN=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument $1 (see --help)" ;;
    esac
  done
  [[ $(id -u) == 0 ]] || die "needs root for the cgroup that caps the disk"
  ((CLEAN >= 1)) || die "--clean must be 1 at least: the first clean run gives the blessed levels"
  local repo dev
  repo=$(cd "$here/../.." && pwd)
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" bless-shift) || exit 2
  DATA=${DATA:-$WORK/data}
  mkdir -p "$WORK" "$DATA"
  dev=$(block_device "$DATA") || exit 2
  local common=(--suite "$SUITE" --data-dir "$DATA" --runner bless-shift --baselines "$WORK/baselines"
                --history "$WORK/history.jsonl" --runner-wait 0 --confirm-delay 2)
  trap cg_remove EXIT
  cg_create "$dev" 1000000000000 || exit 2
  : > "$WORK/table.tsv"
  local i rc slowest cap
  for ((i = 1; i <= HISTORY; i++)); do
    if ((i == SLOW_RUN)); then
      slowest=$(medians "$WORK/history-1/report.json" | sort -k2 -g | head -n1 | cut -d' ' -f2)
      cg_cap "$(python3 -c "print(int($SLOW * $slowest * 1e9))")"
    fi
    rc=0; cg_run "$GATE" "${common[@]}" --out "$WORK/history-$i" "${EXTRA[@]}" > "$WORK/history-$i.log" 2>&1 || rc=$?
    cg_cap 1000000000000
    echo "history $i: exit $rc$( ((i == SLOW_RUN)) && echo ", disk capped at $SLOW x $slowest GB/s"): $(medians "$WORK/history-$i/report.json" | tr '\n' ' ')"
  done
  rc=0; CI='' "$GATE" bless --from-history --history-runs "$HISTORY" --min-span 0s "${common[@]}" \
    --out "$WORK/bless" > "$WORK/bless.log" 2>&1 || rc=$?
  ((rc == 0)) || { echo "bless --from-history failed (exit $rc): $WORK/bless.log"; exit 1; }
  for ((i = 1; i <= CLEAN; i++)); do
    rc=0; "$GATE" "${common[@]}" --out "$WORK/clean-$i" "${EXTRA[@]}" > "$WORK/clean-$i.log" 2>&1 || rc=$?
    printf 'clean\t%s\t%s\t%s\n' "$i" "$rc" "$(judged "$WORK/clean-$i")" | tee -a "$WORK/table.tsv"
  done
  echo "blessed levels: $(levels "$WORK/clean-1/report.json" | tr '\n' ' ')"
  slowest=$(levels "$WORK/clean-1/report.json" | sort -k2 -g | head -n1 | cut -d' ' -f2)
  cap=$(python3 -c "print(int($CAP * $slowest * 1e9))")
  cg_cap "$cap"
  echo "capped: the disk at $cap B/s ($CAP x the slowest blessed level, $slowest GB/s)"
  for ((i = 1; i <= CAPPED; i++)); do
    rc=0; cg_run "$GATE" "${common[@]}" --out "$WORK/capped-$i" "${EXTRA[@]}" > "$WORK/capped-$i.log" 2>&1 || rc=$?
    printf 'capped\t%s\t%s\t%s\n' "$i" "$rc" "$(judged "$WORK/capped-$i")" | tee -a "$WORK/table.tsv"
  done
  # Held: no clean run failed; in the last capped run, every trial more than its tolerance (10%)
  # below its level over the capped runs failed as slower or creep.
  python3 - "$WORK" "$CAPPED" <<'PY'
import json, math, statistics, sys
work, capped = sys.argv[1], int(sys.argv[2])
rows = [l.rstrip("\n").split("\t") for l in open(work + "/table.tsv")]
bad = [r for r in rows if r[0] == "clean" and r[2] != "0"]
levels, last = {}, {}
for i in range(1, capped + 1):
    report = json.load(open(f"{work}/capped-{i}/report.json"))
    for t in report["baseline"]["trials"]:
        th = t["judgement"].get("throughput") or {}
        if th.get("ratio"):
            levels.setdefault(t["trial"], []).append(th["ratio"])
        if i == capped:
            last[t["trial"]] = (t["judgement"]["kind"], th.get("tolerance", 0.1))
missed = []
for trial, ratios in levels.items():
    level = math.exp(statistics.fmean(math.log(r) for r in ratios))
    kind, tolerance = last[trial]
    print(f"{trial}: level over the capped runs {level:.2f} of its baseline, last run judged {kind}")
    if level < 1 - tolerance and kind not in ("regression", "creep"):
        missed.append(trial)
if bad or missed:
    print("DRILL FAILED:", f"{len(bad)} clean run(s) failed;" if bad else "", " ".join(missed), "passed below the tolerance" if missed else "")
    sys.exit(1)
print("DRILL PASSED")
PY
}

main "$@"
