#!/bin/sh
# blas_choice.sh: what the program's own choice of OpenBLAS kernels is worth, on this CPU
# (issue 44's first target: with OPENBLAS_CORETYPE unset, a step within 15% of the best core
# set by hand, on a machine where OpenBLAS falls back to generic kernels). For each config,
# in alternated rounds, bench_step on the CPU three ways, each in its own process:
#   auto      OPENBLAS_CORETYPE unset: OpenBLAS's pick, or the better set the program runs
#             instead where OpenBLAS does not know the CPU (train/run/blas_env.c), which says
#             so on stderr in one "blas:" line
#   hand      OPENBLAS_CORETYPE set to the core auto ran: the same kernels chosen by hand
#   openblas  OPENBLAS_CORETYPE unset and TT_BLAS_AUTO=0: OpenBLAS's own pick, kept
# and OpenBLAS's sgemm 2048^3 under each (bench_step --sgemm-peak). Prints the CPU, the cores,
# the blas line, and one table: the median of each way's medians, auto / hand (the target:
# at most 1.15) and openblas / auto (what the choice gains). Where OpenBLAS knows the CPU the
# three run the same kernels and the table says so: the target needs a CPU it does not know
# (the GPU machines' hosts were such, 2026-11-29: Prescott picked, SkylakeX run).
#   bench/blas_choice.sh [BENCH_STEP] [--configs LIST] [--rounds N] [--threads N]
# Defaults: build/bench_step, --configs "small gpt-small", 3 rounds, 2 threads, 5 warm-up and
# 30 timed steps a run (about 40 s here). scripts/gpu_check.sh's cpu-blas step runs it with
# the CUDA build's bench_step (its CPU backend is the same code).
# Exit status 2 on a usage error or a missing BENCH_STEP, 1 when a run fails.
set -u

BIN=build/bench_step
CONFIGS="small gpt-small"
ROUNDS=3
THREADS=2
while [ $# -gt 0 ]; do
    case "$1" in --configs | --rounds | --threads)
        if [ $# -lt 2 ]; then
            echo "blas_choice.sh: $1 takes a value. HINT: --configs \"small gpt-small\"," \
                "--rounds 3, --threads 2" >&2
            exit 2
        fi ;;
    esac
    case "$1" in
    --configs) CONFIGS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "blas_choice.sh: unknown option $1. HINT: --configs --rounds --threads" >&2
        exit 2 ;;
    *) BIN=$1; shift ;;
    esac
done
for n in "$ROUNDS" "$THREADS"; do # each on its own: "" beside a number is no number
    case "$n" in '' | *[!0-9]* | 0*)
        echo "blas_choice.sh: --rounds and --threads take positive whole numbers" >&2; exit 2 ;;
    esac
done
if [ ! -x "$BIN" ]; then
    echo "blas_choice.sh: $BIN is not built. HINT: make build/bench_step" >&2
    exit 2
fi

# each way's environment: the variables bench_step's BLAS choice reads, and nothing inherited
way() { # WAY CMD...: CMD under WAY's environment (hand: $HAND)
    w=$1
    shift
    case "$w" in
    auto) env -u OPENBLAS_CORETYPE -u TT_BLAS_AUTO "$@" ;;
    hand) env -u TT_BLAS_AUTO OPENBLAS_CORETYPE="$HAND" "$@" ;;
    openblas) env -u OPENBLAS_CORETYPE TT_BLAS_AUTO=0 "$@" ;;
    esac
}
. "$(dirname "$0")/json.sh" # jget
median() {
    sort -n | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

FAILED=0
# one run of bench_step: its output in $TEXT, its median ms in $MS ("" when it failed)
step() { # WAY CONFIG
    TEXT=$(way "$1" "$BIN" --config "$2" --threads "$THREADS" --warmup 5 --steps 30 2>&1)
    MS=$(jget median_ms "$(printf '%s\n' "$TEXT" | grep '^{"impl"' | tail -n 1)")
    if [ -z "$MS" ]; then
        echo "blas_choice.sh: bench_step $2 ($1) failed:" >&2
        printf '%s\n' "$TEXT" | tail -n 5 >&2
        FAILED=1
    fi
}

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
# OpenBLAS's sgemm under each way, whose JSON names the core that ran: auto's and OpenBLAS's
# own first (auto's stderr has the program's "blas:" line), then hand's with auto's core
peak() { # WAY: $CORE, $GFLOPS, the run's lines in $TEXT
    TEXT=$(way "$1" "$BIN" --sgemm-peak --threads "$THREADS" 2>&1)
    g=$(printf '%s\n' "$TEXT" | grep '^{' | tail -n 1)
    CORE=$(jget core "$g") GFLOPS=$(jget sgemm_gflops "$g")
}
peak auto
AUTO_CORE=$CORE AUTO_PEAK=$GFLOPS
BLAS_LINE=$(printf '%s\n' "$TEXT" | grep '^blas:' | head -n 1)
peak openblas
OPENBLAS_CORE=$CORE OPENBLAS_PEAK=$GFLOPS
HAND=$AUTO_CORE
if [ -z "$HAND" ] || [ -z "$OPENBLAS_CORE" ]; then
    echo "blas_choice.sh: bench_step --sgemm-peak named no core; is it the program of this" \
         "tree?" >&2
    exit 1
fi
peak hand
echo "blas_choice $(date '+%Y-%m-%d %H:%M %Z'): $CPU, $(nproc) cores, $THREADS threads;" \
     "OpenBLAS picks $OPENBLAS_CORE, the program runs $AUTO_CORE"
echo "  ${BLAS_LINE:-(no blas: line: OpenBLAS's own pick was kept)}"
echo "  sgemm 2048^3 GFLOP/s: auto $AUTO_PEAK, hand $GFLOPS, openblas $OPENBLAS_PEAK"

TABLE=$(mktemp "${TMPDIR:-/tmp}/blas_choice.XXXXXX") || exit 1
trap 'rm -f "$TABLE"' EXIT
for c in $CONFIGS; do
    for r in $(seq "$ROUNDS"); do
        for w in auto hand openblas; do # alternated: each round runs the three in turn
            step "$w" "$c"
            echo "  round $r $c $w: ${MS:-failed} ms"
            [ -n "$MS" ] && echo "$c $w $MS" >>"$TABLE"
        done
    done
done

echo
echo "| config | auto ms | hand ms ($HAND) | openblas ms ($OPENBLAS_CORE) | auto / hand | openblas / auto | target (auto / hand <= 1.15) |"
echo "|--------|--------:|--------:|------------:|------------:|----------------:|--------|"
for c in $CONFIGS; do
    a=$(awk -v c="$c" '$1 == c && $2 == "auto" {print $3}' "$TABLE" | median)
    h=$(awk -v c="$c" '$1 == c && $2 == "hand" {print $3}' "$TABLE" | median)
    o=$(awk -v c="$c" '$1 == c && $2 == "openblas" {print $3}' "$TABLE" | median)
    awk -v c="$c" -v a="$a" -v h="$h" -v o="$o" -v same="$([ "$AUTO_CORE" = "$OPENBLAS_CORE" ] && echo 1)" 'BEGIN {
        if (a == "" || h == "" || o == "") { printf "| %s | failed | | | | | |\n", c; exit }
        t = a / h <= 1.15 ? "PASS" : "FAIL"
        if (same) t = "n/a: OpenBLAS knows this CPU, no fallback to test"
        printf "| %s | %.2f | %.2f | %.2f | %.3f | %.2fx | %s |\n", c, a, h, o, a / h, o / a, t
    }'
done
echo "median of $ROUNDS alternated rounds of 5 + 30 steps a way; the cores as bench_step's" \
     "sgemm runs named them"
exit $FAILED
