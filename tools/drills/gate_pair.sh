#!/usr/bin/env bash
# Same runner, same data, two gate builds in turns: does a change to a worker change what its
# trials measure? Runs the selected trials of the default suite (`--filter`, libtest's substring,
# once per filter; `[kvikio]` and `[torch]` by default: the Python worker's) through gate A, then
# B, then B, then A, and prints each trial's mean over its runs in B over its mean in A, and their
# geometric mean. Turns in both orders put the runner's drift on both builds alike; the spread
# between a build's own two runs says how much of a ratio is drift.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: tools/drills/gate_pair.sh --a GATE --b GATE --data-dir DIR --work DIR [--filter F]... [-- GATE_ARGS]
  --a, --b      the two gate binaries (each with its libgds_pass.so beside it or in deps/)
  --data-dir    the suite's data, generated once beforehand (`gds-gate gen --data-dir DIR`)
  --work        where each run's reports go
  --filter F    a trial filter; repeatable (default: [kvikio] and [torch])
  GATE_ARGS     passed to every run (default: --require-gpu --skip multi-gpu)
EOF
}

A="" B="" DATA="" WORK="" FILTERS=() EXTRA=(--require-gpu --skip multi-gpu)
while [[ $# -gt 0 ]]; do
    case $1 in
        --a) A=$2; shift 2 ;;
        --b) B=$2; shift 2 ;;
        --data-dir) DATA=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --filter) FILTERS+=("$2"); shift 2 ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) usage; exit 0 ;;
        *) echo "gate_pair.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ -n $A && -n $B && -n $DATA && -n $WORK ]] || { usage >&2; exit 2; }
[[ ${#FILTERS[@]} -gt 0 ]] || FILTERS=("[kvikio]" "[torch]")
mkdir -p "$WORK"
table=$WORK/medians.tsv
: >"$table"

turn=0
for side in a b b a; do
    turn=$((turn + 1))
    gate=$A; [[ $side == b ]] && gate=$B
    for filter in "${FILTERS[@]}"; do
        out=$WORK/$turn-$side-$(tr -dc 'a-z0-9' <<<"$filter")
        started=$(date +%s)
        status=0
        "$gate" --data-dir "$DATA" --out "$out" --history "$out/history.jsonl" "${EXTRA[@]}" "$filter" \
            >"$out.log" 2>&1 || status=$?
        echo "turn $turn ($side) $filter: exit $status in $(($(date +%s) - started)) s ($out.log)"
        [[ -f $out/report.json ]] || { echo "  no report.json: see $out.log"; continue; }
        python3 - "$out/report.json" "$side" >>"$table" <<'PY'
import json, sys
for trial in json.load(open(sys.argv[1]))["trials"]:
    median = (trial.get("measurement") or {}).get("median_gbps")
    print("%s\t%s\t%s\t%s" % (sys.argv[2], trial["name"], trial["status"], median))
PY
    done
done

python3 - "$table" <<'PY'
import math, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    side, name, status, median = line.rstrip("\n").split("\t")
    runs.setdefault(name, {"a": [], "b": []})[side].append((status, None if median == "None" else float(median)))
print("%-70s %8s %8s %7s %9s" % ("trial", "A GB/s", "B GB/s", "B/A", "A2/A1"))
logs, passed = [], {"a": 0, "b": 0}
for name, sides in runs.items():
    for side in "ab":
        passed[side] += sum(status == "passed" for status, _ in sides[side])
    a = [m for status, m in sides["a"] if status == "passed" and m]
    b = [m for status, m in sides["b"] if status == "passed" and m]
    if len(a) < 2 or len(b) < 2:
        print("%-70s %s" % (name, "not measured in every turn: " + ", ".join(s for s, _ in sides["a"] + sides["b"])))
        continue
    ratio = statistics.mean(b) / statistics.mean(a)
    logs.append(math.log(ratio))
    print("%-70s %8.2f %8.2f %7.3f %9.3f" % (name, statistics.mean(a), statistics.mean(b), ratio, a[1] / a[0]))
print("trial-runs passed: A %d, B %d" % (passed["a"], passed["b"]))
if logs:
    print("B/A over %d trials: geometric mean %.3f, range %.2f-%.2f"
          % (len(logs), math.exp(statistics.mean(logs)), math.exp(min(logs)), math.exp(max(logs))))
PY
