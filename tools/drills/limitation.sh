#!/usr/bin/env bash
# A runner's recorded limitation, drilled on a GPU runner without nvidia-fs (root, for the udev
# record):
#   1. `limitation record`, for the default suite and the drill's (tools/drills/limitation.yaml):
#      every trial the doctor says cannot pass here (strict-gds);
#   2. the default suite with --require-gpu must exit 0, strict-gds `limited` (with --quick: the
#      drill's suite, for a machine with little time left);
#   3. bless the drill's suite (2 runs), then run it again: exit 0;
#   4. the udev record of the data's disk removed (cuFile can no longer register the file, KvikIO
#      AUTO falls back to POSIX): the drill's suite must exit 1, with KvikIO AUTO `path-changed`
#      and strict-gds `failed` (its reason changed, so its record no longer applies); the record
#      is put back afterwards.
# Prints a row per step and `DRILL PASSED` (exit 0) or `DRILL FAILED` (exit 1); 2 is bad usage.
#
#   tools/drills/limitation.sh --gate target/release/gds-gate --work /var/tmp/limitation-drill
set -u

gate="" work="" data="${GDS_GATE_DATA_DIR:-}"
suite="$(dirname "$0")/limitation.yaml"
quick=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --gate) gate=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --data-dir) data=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 --gate GATE --work DIR [--data-dir DIR] [--quick]" >&2; exit 2 ;;
  esac
done
[[ -x $gate && -n $work ]] || { echo "usage: $0 --gate GATE --work DIR [--data-dir DIR]" >&2; exit 2; }
data=${data:-$work/data}
mkdir -p "$work" "$data"
common=(--require-gpu --runner drill --baselines "$work/baselines" --history "$work/history.jsonl" --data-dir "$data")
failed=0

# step NAME WANT_EXIT ARGS...: runs the gate, its output in WORK/NAME.log, reports in WORK/NAME/.
step() {
  local name=$1 want=$2; shift 2
  "$gate" "$@" "${common[@]}" --out "$work/$name" > "$work/$name.log" 2>&1
  local code=$?
  local outcomes=""
  if [[ -f $work/$name/report.json ]]; then
    outcomes=$(python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
print(", ".join("%s: %s" % (t["name"], t["status"]) for t in r["trials"] if t["status"] != "passed"), "|", r["totals"])' "$work/$name/report.json")
  fi
  printf '%-12s exit %s (want %s)  %s\n' "$name" "$code" "$want" "$outcomes"
  [[ $code == "$want" ]] || failed=1
}

{ "$gate" limitation record "${common[@]}" && "$gate" limitation record --suite "$suite" "${common[@]}"; } > "$work/record.log" 2>&1
echo "record       exit $? $(grep -cE '^\s+[+~]' "$work/record.log") record(s)"
grep -q "strict-gds" "$work/baselines/limitations/drill.yaml" 2>/dev/null || failed=1
step default 0 ${quick:+--suite "$suite"}
grep -q '"status": "limited"' "$work/default/report.json" || { echo "no limited trial in default"; failed=1; }
step bless 0 bless --runs 2 --interval 0 --suite "$suite"
step clean 0 --suite "$suite"

src=$(findmnt -n -o SOURCE -T "$data")
mm=$(printf '%d:%d' "0x$(stat -L -c %t "$src")" "0x$(stat -L -c %T "$src")")
record=/run/udev/data/b$mm
saved=$(cat "$record" 2>/dev/null)
rm -f "$record"
step no-udev 1 --suite "$suite"
[[ -n $saved ]] && printf '%s\n' "$saved" > "$record"
grep -q '"status": "path-changed"' "$work/no-udev/report.json" || { echo "no path-changed trial without udev"; failed=1; }

if [[ $failed == 0 ]]; then echo "DRILL PASSED"; exit 0; else echo "DRILL FAILED"; exit 1; fi
