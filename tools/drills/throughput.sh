#!/usr/bin/env bash
# The throughput drill: proves the gate's throughput verdict on a real runner, both ways.
#   1. No false alarms: after one `bless --runs N`, N clean runs of the same suite on the same runner
#      must never say "slower" (exit 0, no trial judged `regression`, `creep` or costlier).
#   2. Detection: with the disk under the data dir throttled to a fraction of the rate dd measures
#      (cgroup v2 `io.max` rbps, or v1 `blkio.throttle.read_bps_device`), every run must exit 3 with
#      trials judged `regression` (or another judgement of exit 3: `creep`, costlier).
# Needs root (cgroups) and a data dir on a block device (not overlay, tmpfs or a network file system).
# Small files weaken the throttle: blk-throttle lets up to a slice (100 ms) of idle time be spent at
# full speed, so 64 MiB passes with gaps between them can read far above the cap. Step 4 shows how far
# with dd reads paced like the gate's passes; --calibrate lowers the cap until their median is near
# the target (it overshoots for the gate: on the smoke suite the gate then saw a 70-80% drop).
#
# CPU host, from the repository root (builds the gate when --gate is not given):
#   tools/drills/throughput.sh --clean 10 --throttled 2 --work /var/tmp/drill
#   tools/drills/throughput.sh --gate target/release/gds-gate --bless-runs 3 --clean 2 -- posix
# GPU runner (copy a release build of the gate there, run from a checkout of the repository):
#   tools/drills/throughput.sh --gate ./gds-gate --suite scenarios/drill.yaml --clean 5 \
#       --data-dir /mnt/nvme/gds-drill
# Where one sitting is too short for the spaced-out bless, the phases can run apart on one runner:
#   throughput.sh ... --clean 5 --throttled 0 --work /var/tmp/drill-a
#   throughput.sh ... --baselines /var/tmp/drill-a/baselines --clean 0 --throttled 2 --work /var/tmp/drill-b
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage or a host where it cannot run.
# Every gate invocation's output stays in WORK/<phase>-<n>.log and its reports in WORK/<phase>-<n>/.
# The runs' history never goes to the repository's .gds-gate/history.jsonl, which a bless may take
# and the noise model is fitted to: every invocation gets --history, WORK/history.jsonl for the
# bless and clean runs (fit the noise to it: `gds-gate bench --stats --history WORK/history.jsonl`)
# and WORK/throttled-history.jsonl for the throttled runs, which are not this runner's normal.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: throughput.sh [OPTIONS] [-- GATE_ARGS...]
  --gate PATH              gds-gate binary (default: cargo build --release -p gds-gate)
  --suite FILE             suite to run (default: scenarios/smoke.yaml)
  --runner NAME            runner profile for the drill's own baseline (default: drill)
  --work DIR               baselines, reports, logs and histories (default: a fresh mktemp -d)
  --data-dir DIR           the gate's --data-dir, on a block device (default: WORK/data)
  --bless-runs N           runs recorded by bless (default: the gate's own, 6 and up to 10
                           while a trial cannot see a 20% drop)
  --baselines DIR          reuse the runner's baseline in DIR (blessed by an earlier drill on this
                           runner, e.g. its WORK/baselines) instead of blessing again
  --bless-interval S       least seconds between the starts of the blessed runs, so that bless
                           sees the disk's slow drift too (default: 60, the gate's own)
  --clean N                clean runs, none may be slower (default: 10)
  --clean-interval S       least seconds between the starts of the clean runs, so that they sample
                           the disk's drift as separate CI jobs would (default: 0, back to back)
  --throttled N            throttled runs, all must be caught (default: 2)
  --throttle-fraction F    read cap as a fraction of the measured rate, 0<F<1 (default: 0.5)
  --calibrate              lower the cap until paced dd reads run near F x rate (see step 4)
  --cap-each               cap each trial at F x its median over the clean runs instead, one
                           gate run per trial (--exact NAME) under its own cap: a trial that reads
                           below the disk's rate (one thread, posix) is then capped too; give no
                           trial filter in GATE_ARGS with it (two filters are a usage error)
  -- GATE_ARGS...          passed to every gate invocation (e.g. a trial filter: -- posix)
EOF
}

die() { echo "throughput drill: $*" >&2; exit 2; }
say() { echo "== $*"; }

# ---- disk mechanics (usable alone: `source throughput.sh` defines the functions, runs nothing) ----

# The biggest regular file under DIR (the gate's generated data), skipping sidecars.
largest_file() {
  find "$1" -type f ! -name '*.json' ! -name '.*' -printf '%s\t%p\n' 2>/dev/null |
    sort -rn | head -n1 | cut -f2-
}

# Bytes/s of one O_DIRECT read of FILE (dd's own byte count and time).
dd_rate() {
  LC_ALL=C dd if="$1" of=/dev/null bs=16M iflag=direct 2>&1 |
    awk '/ copied, / { for (i = 1; i <= NF; i++) if ($i == "s,") { printf "%.0f\n", $1 / $(i-1); found = 1 } }
         END { if (!found) exit 1 }'
}

# Median of three dd_rate readings (a 64 MiB file reads in tens of milliseconds: one is noisy).
dd_rate_median() {
  local a b c
  a=$(dd_rate "$1") && b=$(dd_rate "$1") && c=$(dd_rate "$1") || return 1
  printf '%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p
}

# Five O_DIRECT reads 60 ms apart, as a gate's passes come (read, verify, read), after 0.5 s idle.
# blk-throttle credits idle time inside its slice (100 ms on a rotational queue), so inside a capped
# cgroup short reads with gaps between them can run well above the cap: this shows how much.
dd_rate_paced() {
  local i
  sleep 0.5
  for i in 1 2 3 4 5; do dd_rate "$1" || return 1; sleep 0.06; done
}

# MAJ:MIN (decimal) of the whole disk holding DIR, or a message on stderr and status 1.
block_device() {
  local src fstype type parent
  # The last line is the mount on top when several are stacked there.
  read -r src fstype < <(findmnt -n -o SOURCE,FSTYPE -T "$1" | tail -n1) || true
  [[ -n ${src:-} ]] || { echo "findmnt cannot place $1" >&2; return 1; }
  src=${src%%\[*}   # btrfs shows /dev/sda2[/subvolume]
  if [[ ! -b $src ]]; then
    echo "$1 is on '$src' ($fstype), not a block device: a cgroup cannot" \
      "throttle it. Pass --data-dir a directory whose 'findmnt -T DIR' SOURCE is a /dev/... disk" \
      "(e.g. the mount of the runner's NVMe, or a host volume bind-mounted into the container)," \
      "or run with --throttled 0." >&2
    return 1
  fi
  type=$(lsblk -ndo TYPE "$src")
  if [[ $type == part ]]; then   # blk-throttle takes whole disks only
    parent=$(lsblk -ndo PKNAME "$src")
    [[ -n $parent ]] || { echo "no parent disk for partition $src" >&2; return 1; }
    src=/dev/$parent
  fi
  local hex
  hex=$(stat -L -c '%t:%T' "$src")
  printf '%d:%d\n' "0x${hex%%:*}" "0x${hex##*:}"
}

CG="" CG_PARENT="" CG_DEV=""
# Create a cgroup capping reads from device MAJ:MIN at BYTES/s; sets CG.
cg_create() {
  CG_DEV=$1
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then          # cgroup v2
    CG_PARENT=/sys/fs/cgroup
    grep -qw io "$CG_PARENT/cgroup.controllers" || { echo "cgroup v2 without the io controller" >&2; return 1; }
    grep -qw io "$CG_PARENT/cgroup.subtree_control" || echo +io > "$CG_PARENT/cgroup.subtree_control" || {
      echo "cannot enable the io controller in $CG_PARENT/cgroup.subtree_control (in a container's" \
        "cgroup namespace, move its processes into a leaf cgroup first)" >&2; return 1; }
  elif [[ -d /sys/fs/cgroup/blkio ]]; then                      # cgroup v1
    CG_PARENT=/sys/fs/cgroup/blkio
  else
    echo "neither cgroup v2 (/sys/fs/cgroup/cgroup.controllers) nor v1 blkio is mounted" >&2; return 1
  fi
  CG=$CG_PARENT/gds-drill-$$
  mkdir "$CG" && cg_cap "$2"
}

# Set (or change) CG's read cap to BYTES/s.
cg_cap() {
  if [[ -f $CG/io.max ]]; then echo "$CG_DEV rbps=$1" > "$CG/io.max"
  else echo "$CG_DEV $1" > "$CG/blkio.throttle.read_bps_device"; fi
}

# Run a command inside CG (its children inherit the cgroup).
cg_run() { bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG" "$@"; }

# Move anything still inside CG back to its parent, then remove CG.
cg_remove() {
  [[ -n $CG && -d $CG ]] || return 0
  local pid _
  for _ in 1 2 3 4 5; do
    while read -r pid; do
      echo "throughput drill: process $pid ($(ps -o comm= -p "$pid")) left in $CG: moved out" >&2
      echo "$pid" > "$CG_PARENT/cgroup.procs" 2>/dev/null || true
    done < "$CG/cgroup.procs"
    rmdir "$CG" 2>/dev/null && { CG=""; return 0; }
    sleep 0.2
  done
  echo "throughput drill: could not remove cgroup $CG; remove it with: rmdir $CG" >&2
}

# The gate binary: GATE when given, else one cargo builds in REPO; its absolute path on stdout.
gate_binary() {
  local repo=$1 gate=$2
  if [[ -z $gate ]]; then
    command -v cargo > /dev/null || { echo "no --gate given and no cargo to build one" >&2; return 1; }
    echo "== building the gate: cargo build --release -p gds-gate-bin --bin gds-gate" >&2
    (cd "$repo" && cargo build --release -p gds-gate-bin --bin gds-gate) >&2 ||
      { echo "cargo build failed" >&2; return 1; }
    gate=$repo/target/release/gds-gate
  fi
  [[ -f $gate && -x $gate ]] || { echo "--gate is not an executable file: $gate" >&2; return 1; }
  realpath -e "$gate"
}

# The drill's work folder, absolute: WORK, or a fresh one named PREFIX.XXXXXX. Never the
# repository's .gds-gate: a drill's histories would take the place of its run history.
work_folder() {
  local repo=$1 work
  work=$(realpath -m "${2:-$(mktemp -d -t "$3.XXXXXX")}")
  [[ $work != "$(realpath -m "$repo/.gds-gate")" ]] ||
    { echo "--work $work is where the repository keeps its run history; pick another folder" >&2; return 1; }
  echo "$work"
}

# ---- the drill ----

# One line for the table: slower, confirmed-away, failed, judged, ratios, totals (tab-separated).
summarize() {
  python3 - "$1/report.json" <<'EOF'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError) as error:
    print("-\t-\t-\t-\tno report.json (%s)\t" % error.__class__.__name__); sys.exit()
trials = (report.get("baseline") or {}).get("trials") or []
kinds = [t["judgement"]["kind"] for t in trials]
# Every judgement that fails a run with exit 3 (report.schema.json's judgement kinds).
slower_kinds = {"regression", "creep", "cpu-costlier", "load-costlier", "latency-higher"}
confirmed = sum(1 for t in trials if t["judgement"]["kind"] == "pass"
                and (t["judgement"].get("throughput") or {}).get("confirmations"))
failing = {"path-changed", "checksum-changed", "missing-trial"}
totals = report.get("totals") or {}
failed = totals.get("failed", 0) + sum(k in failing for k in kinds)
judged = sum(1 for t in trials if (t["judgement"].get("throughput") or {}).get("ratio") is not None)
ratios = []
for t in trials:
    throughput = t["judgement"].get("throughput") or {}
    if throughput.get("ratio") is not None:
        again = "".join(">%.2f" % r for r in throughput.get("confirmations") or [])
        flag = "!" if t["judgement"]["kind"] in slower_kinds else ""
        ratios.append("%s=%.2f%s%s" % (t["trial"].split("::", 1)[-1], throughput["ratio"], again, flag))
extra = " ".join("%s=%s" % (k, totals[k])
                 for k in ("slower", "costlier", "path_changed", "checksum_changed", "missing")
                 if totals.get(k))
# Waits for the runner before confirmation runs (the gate's control), and whether it stayed slow.
checks = [c for r in report.get("trials") or [] for c in r.get("runner_checks") or []]
if checks:
    extra += " runner-waited=%ds%s" % (sum(c["waited_s"] for c in checks),
                                       " runner-slow" if any(c["still_slow"] for c in checks) else "")
print("\t".join(map(str, [sum(k in slower_kinds for k in kinds), confirmed, failed, judged, " ".join(ratios), extra])))
EOF
}

# run_gate PHASE N CMD...: runs the gate, logs to WORK/PHASE-N.log, appends a row to the table.
run_gate() {
  local phase=$1 n=$2; shift 2
  local log=$WORK/$phase-$n.log rc=0 row slower confirmed failed
  "$@" > "$log" 2>&1 || rc=$?
  row=$(summarize "$WORK/$phase-$n")
  printf '%s\t%s\t%s\t%s\n' "$phase" "$n" "$rc" "$row" >> "$WORK/table.tsv"
  IFS=$'\t' read -r slower confirmed failed _ _ _ <<< "$row"
  echo "   $phase $n: exit $rc, slower $slower, confirmed away $confirmed, failed $failed  ($log)"
}

# --cap-each: THROTTLED rounds of one gate run per trial, each under a cap of FRACTION times that
# trial's clean rate: the median of its medians over the clean runs (one clean run can sit well
# above the baseline's level, and a cap under it would then be no drop at all). DEV is the disk;
# the rest are the gate's common arguments.
throttle_each() {
  local dev=$1; shift
  local name rate cap i k=0 rates
  rates=$(python3 -c 'import json, statistics, sys
rates = {}
for path in sys.argv[1:]:
    for t in json.load(open(path))["trials"]:
        m = t.get("measurement") or {}
        if m.get("median_gbps"): rates.setdefault(t["name"], []).append(m["median_gbps"])
for name, gbps in rates.items(): print("%s\t%d" % (name, statistics.median(gbps) * 1e9))' "$WORK"/clean-*/report.json) ||
    die "cannot read the trials' rates from $WORK/clean-*/report.json"
  say "4. throttled runs: $THROTTLED, each trial alone under $FRACTION of its median over the $CLEAN clean runs"
  cg_create "$dev" 1000000000 || die "cannot create the throttling cgroup"
  for ((i = 1; i <= THROTTLED; i++)); do
    while IFS=$'\t' read -r name rate; do
      k=$((k + 1))
      cap=$(awk -v r="$rate" -v f="$FRACTION" 'BEGIN { printf "%.0f", r * f }')
      cg_cap "$cap"
      echo "   $name: clean $((rate / 1000000)) MB/s, cap $((cap / 1000000)) MB/s"
      run_gate throttled "$i.$k" cg_run "$GATE" "$@" "${THROTTLED_ARGS[@]}" --out "$WORK/throttled-$i.$k" "${EXTRA[@]}" --exact "$name"
    done <<< "$rates"
  done
}

main() {
  GATE="" SUITE="" RUNNER=drill WORK="" DATA="" BASELINES="" BLESS_RUNS='' BLESS_INTERVAL=60 CLEAN=10 CLEAN_INTERVAL=0 THROTTLED=2 FRACTION=0.5 CALIBRATE=0 CAP_EACH=0
  EXTRA=()
  # The gate's control read runs inside the capped cgroup too, so a confirmation that waits for the
  # runner to come back to its level would wait the whole --runner-wait for nothing.
  THROTTLED_ARGS=(--runner-wait 0)
  while (($#)); do
    case $1 in
      -h|--help) usage; exit 0 ;;
      --calibrate) CALIBRATE=1; shift ;;
      --cap-each) CAP_EACH=1; shift ;;
      --) shift; EXTRA=("$@"); break ;;
      --gate|--suite|--runner|--work|--data-dir|--baselines|--bless-runs|--bless-interval|--clean|--clean-interval|--throttled|--throttle-fraction)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --gate) GATE=$2 ;; --suite) SUITE=$2 ;; --runner) RUNNER=$2 ;; --work) WORK=$2 ;;
          --data-dir) DATA=$2 ;; --baselines) BASELINES=$2 ;; --bless-runs) BLESS_RUNS=$2 ;; --bless-interval) BLESS_INTERVAL=$2 ;;
          --clean) CLEAN=$2 ;; --clean-interval) CLEAN_INTERVAL=$2 ;;
          --throttled) THROTTLED=$2 ;; --throttle-fraction) FRACTION=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument '$1' (gate arguments go after --; see --help)" ;;
    esac
  done
  local repo; repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for n in BLESS_INTERVAL CLEAN CLEAN_INTERVAL THROTTLED ${BLESS_RUNS:+BLESS_RUNS}; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "--$(tr 'A-Z_' 'a-z-' <<< "$n") must be a whole number, got '${!n}'"
  done
  [[ -z $BLESS_RUNS ]] || ((BLESS_RUNS >= 1)) || die "--bless-runs must be at least 1"
  awk -v f="$FRACTION" 'BEGIN { exit !(f ~ /^[0-9]*\.?[0-9]+$/ && f > 0 && f < 1) }' ||
    die "--throttle-fraction must be a number between 0 and 1, got '$FRACTION'"
  ((CAP_EACH == 0 || CLEAN > 0)) || die "--cap-each takes each trial's rate from the clean runs: give --clean 1 or more"
  ((EUID == 0)) || ((THROTTLED == 0)) || die "throttled runs need root (cgroups); run as root or with --throttled 0"
  command -v python3 > /dev/null || die "python3 is needed to read report.json"
  SUITE=${SUITE:-$repo/scenarios/smoke.yaml}
  [[ -f $SUITE ]] || die "suite file not found: $SUITE"
  SUITE=$(realpath -e "$SUITE")
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" gds-drill) || exit 2
  local clean_history=(--history "$WORK/history.jsonl") throttled_history=(--history "$WORK/throttled-history.jsonl")
  DATA=$(realpath -m "${DATA:-$WORK/data}")
  mkdir -p "$WORK" "$DATA"
  [[ -e $WORK/table.tsv ]] && die "$WORK already holds a drill (table.tsv); pick a fresh --work"
  : > "$WORK/table.tsv"
  local dev=""   # check before spending time on runs: can this data dir be throttled at all?
  if ((THROTTLED > 0)); then dev=$(block_device "$DATA") || exit 2; fi
  trap cg_remove EXIT
  trap 'exit 130' INT TERM
  cd "$repo"
  if [[ -n $BASELINES ]]; then
    [[ -f $BASELINES/$RUNNER.yaml ]] || die "--baselines: no $BASELINES/$RUNNER.yaml to reuse"
    BASELINES=$(realpath -e "$BASELINES")
  fi
  local common=(--suite "$SUITE" --runner "$RUNNER" --baselines "${BASELINES:-$WORK/baselines}" --data-dir "$DATA")
  say "gate $GATE, suite $SUITE, runner $RUNNER, work $WORK, data $DATA, extra: ${EXTRA[*]:-none}"

  local rc=0   # data first, flushed, so that writeback does not slow the first run
  "$GATE" gen --suite "$SUITE" --data-dir "$DATA" > "$WORK/gen.log" 2>&1 || rc=$?
  ((rc == 0)) || { tail -n 20 "$WORK/gen.log" >&2; echo "throughput drill: gen exited $rc" >&2; exit 1; }
  sync
  if [[ -n $BASELINES ]]; then
    say "1. bless: reusing $BASELINES/$RUNNER.yaml"
  else
    say "1. bless: ${BLESS_RUNS:-the default number of} runs, starting at least $BLESS_INTERVAL s apart"
    env -u CI "$GATE" bless ${BLESS_RUNS:+--runs "$BLESS_RUNS"} --interval "$BLESS_INTERVAL" "${common[@]}" "${clean_history[@]}" \
      --out "$WORK/bless" "${EXTRA[@]}" \
      > "$WORK/bless.log" 2>&1 || rc=$?
    if ((rc != 0)); then
      tail -n 30 "$WORK/bless.log" >&2
      echo "throughput drill: bless exited $rc (log: $WORK/bless.log)" >&2; exit 1
    fi
    echo "   baseline: $WORK/baselines/$RUNNER.yaml"
  fi

  say "2. clean runs: $CLEAN, starting at least $CLEAN_INTERVAL s apart"
  local started=0 wait
  for ((i = 1; i <= CLEAN; i++)); do
    wait=$((started + CLEAN_INTERVAL - SECONDS))
    ((i == 1 || wait <= 0)) || sleep "$wait"
    started=$SECONDS
    run_gate clean "$i" "$GATE" "${common[@]}" "${clean_history[@]}" --out "$WORK/clean-$i" "${EXTRA[@]}"
  done

  if ((THROTTLED > 0)); then
    say "3. disk rate under $DATA"
    local file rate cap capped lo hi
    file=$(largest_file "$DATA"); [[ -n $file ]] || die "no data file under $DATA after bless"
    rate=$(dd_rate_median "$file") || die "dd iflag=direct cannot read $file"
    cap=$(awk -v r="$rate" -v f="$FRACTION" 'BEGIN { printf "%.0f", r * f }')
    echo "   $file on device $dev: $((rate / 1000000)) MB/s (O_DIRECT, median of 3); cap $((cap / 1000000)) MB/s"

    if ((CAP_EACH)); then
      throttle_each "$dev" "${common[@]}" "${throttled_history[@]}"
    else
      say "4. throttled runs: $THROTTLED"
      cg_create "$dev" "$cap" || die "cannot create the throttling cgroup"
      # How the cap holds for reads paced like the gate's passes; with --calibrate, lower it until their
      # median (the gate judges medians too) is within 15% of the target rate.
      local target=$cap step paced
      for step in 1 2 3 4 5; do
        paced=$(cg_run bash -c "$(declare -f dd_rate dd_rate_paced); dd_rate_paced '$file'" | sort -n |
          awk '{ r[NR] = $1 } END { printf "%.0f %.0f %.0f", r[3], r[1], r[5] }')
        read -r capped lo hi <<< "$paced"
        echo "   cap $((cap / 1000000)) MB/s: dd inside $CG, 5 reads 60 ms apart:" \
          "median $((capped / 1000000)) MB/s (range $((lo / 1000000))-$((hi / 1000000)))"
        ((CALIBRATE == 0 || capped * 100 <= target * 115 || step == 5)) && break
        cap=$(awk -v c="$cap" -v t="$target" -v m="$capped" 'BEGIN { c = c * t / m; printf "%.0f", c < 1e6 ? 1e6 : c }')
        cg_cap "$cap"
      done
      ((capped * 100 <= target * 115)) ||
        echo "   WARNING: paced reads inside the cgroup reach $((capped * 100 / target))% of the target rate:" \
          "the throttle may not halve the gate's reads. Use bigger files (e.g. scenarios/drill.yaml)," \
          "--calibrate or a smaller --throttle-fraction."
      for ((i = 1; i <= THROTTLED; i++)); do
        run_gate throttled "$i" cg_run "$GATE" "${common[@]}" "${throttled_history[@]}" "${THROTTLED_ARGS[@]}" \
          --out "$WORK/throttled-$i" "${EXTRA[@]}"
      done
    fi
    cg_remove
  fi

  say "5. results"
  {
    printf 'phase\trun\texit\tslower\tconfirmed-away\tfailed\tjudged\tratios (run/baseline >confirmations, ! = slower)\ttotals\n'
    cat "$WORK/table.tsv"
  } | awk -F'\t' '{ printf "%-10s %-4s %-5s %-7s %-15s %-7s %-7s %s   %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
  local bad_clean caught throttled_runs
  bad_clean=$(awk -F'\t' '$1 == "clean" && ($3 != 0 || $4 != 0 || $6 != 0)' "$WORK/table.tsv" | wc -l)
  caught=$(awk -F'\t' '$1 == "throttled" && $3 == 3 && $4 >= 1' "$WORK/table.tsv" | wc -l)
  throttled_runs=$(awk -F'\t' '$1 == "throttled"' "$WORK/table.tsv" | wc -l)
  awk -F'\t' '$1 == "throttled" && $4 != "-" && $4 < $7 { print "   note: throttled run " $2 " caught " $4 " of " $7 " judged trials" }' "$WORK/table.tsv"
  echo "clean: $(awk -F'\t' '$1 == "clean" && ($3 == 3 || $4 > 0)' "$WORK/table.tsv" | wc -l) of $CLEAN runs had a slower verdict (0 expected); $bad_clean of $CLEAN not clean (exit != 0 or failures)"
  echo "throttled: $caught of $throttled_runs runs caught (all expected)"
  echo "logs and reports: $WORK"
  ((bad_clean == 0 && caught == throttled_runs)) && { echo "DRILL PASSED"; exit 0; }
  echo "DRILL FAILED"; exit 1
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
