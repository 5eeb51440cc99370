#!/bin/sh
# dp_step.sh: the data-parallel step (issue 16) on this machine: for each row (named rows or
# config files, as run_step_bench.sh takes them), the median step time of bench_step (an MPI
# build's: make MPI=1 runners) at 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread
# (mpirun, loopback), in that order, each in its own process; then one table with each step's
# ms, tokens/s and the ratios. The same global batch in every column: 2 ranks take half each.
#   bench/dp_step.sh [BENCH_STEP] [--configs LIST] [--steps N|auto]
set -u

BIN=build/mpi/bench_step
CONFIGS="tiny small medium gpt-small"
STEPS=auto
while [ $# -gt 0 ]; do
    case "$1" in
    --configs) CONFIGS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    -*) echo "dp_step.sh: unknown option $1. HINT: --configs --steps" >&2; exit 2 ;;
    *) BIN=$1; shift ;;
    esac
done
if [ ! -x "$BIN" ]; then
    echo "dp_step.sh: $BIN is not built. HINT: make MPI=1 runners" >&2
    exit 2
fi
command -v mpirun >/dev/null || { echo "dp_step.sh: no mpirun. HINT: make deps" >&2; exit 2; }
MPIRUN="mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# one run: its result line (the last JSON line bench_step prints)
run() { # label, command...
    label=$1
    shift
    echo "== $label" >&2
    "$@" --steps "$STEPS" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; echo "dp_step.sh: $label failed" >&2; exit 1; }
    grep '^  ' "$TMP/out" | head -1 >&2
    grep '"impl":"ours"' "$TMP/out" | tail -1
}
for c in $CONFIGS; do
    a=$(run "$c 1x1" "$BIN" --config "$c" --threads 1)
    b=$(run "$c 1x2" "$BIN" --config "$c" --threads 2)
    d=$(run "$c 2x1" $MPIRUN -np 2 "$BIN" --config "$c" --threads 1)
    echo "$c $a" >>"$TMP/rows"
    echo "$c $b" >>"$TMP/rows"
    echo "$c $d" >>"$TMP/rows"
done
echo
echo "| row | 1 rank x 1 thread | 1 rank x 2 threads | 2 ranks x 1 thread | 2x1 vs 1x1 | 2x1 vs 1x2 |"
echo "| --- | --- | --- | --- | --- | --- |"
# three result lines per row: median_ms and tokens_per_s out of each JSON line
sed -e 's/^\([^ ]*\) .*"median_ms":\([0-9.]*\).*"tokens_per_s":\([0-9.]*\).*/\1 \2 \3/' \
    "$TMP/rows" | awk '
{ name[NR] = $1; ms[NR] = $2; tps[NR] = $3 }
END {
    for (i = 1; i + 2 <= NR; i += 3)
        printf "| %s | %.2f ms, %.0f tok/s | %.2f ms, %.0f tok/s | %.2f ms, %.0f tok/s | %.2fx | %.2fx |\n",
            name[i], ms[i], tps[i], ms[i + 1], tps[i + 1], ms[i + 2], tps[i + 2],
            ms[i] / ms[i + 2], ms[i + 1] / ms[i + 2]
}'
