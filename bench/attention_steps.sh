#!/bin/sh
# attention_steps.sh: the whole training step with each of the fused attention's arithmetics,
# ours only, so that the one matmul_precision picks (backend.cu attention_math) can be checked
# against the others where it counts: bench_step of the CUDA build, --set device=cuda, with
# TT_CUDA_ATTN = wide, pipelined, 3xtf32, tf32, mma-3xtf32 and mma-tf32 in turn, each config at
# matmul precision highest and high (the two that round to TF32, tf32 and mma-tf32, at high
# only: matmul_precision "highest" must not round to TF32), every run in its own process; then
# wide once more with TT_CUDA_LT=0 (the Linears' bias by its own kernel and a gemm with beta
# 1, not in cuBLASLt's epilogue: backend.cu), the column "wide-nolt", which shows what the
# epilogue saves. Prints one table: the median ms per step of each run, and which arithmetic
# was fastest per config and precision (of all but wide-nolt), then a line per config,
# "pick CONFIG: TT_CUDA_ATTN=HIGHEST/HIGH", the two fastest as the environment takes them
# (backend.cu), so that a bench run can time them before backend.cu's table says so.
#   bench/attention_steps.sh [BENCH_STEP] [--configs LIST] [--warmup N] [--steps N] [--skip LIST]
# --skip "NAME ...": arithmetics not run nor picked (their column says "skipped"; wide's also
# leaves out wide-nolt): scripts/gpu_check.sh passes those that failed the CUDA suite, whose
# speed would be that of wrong numbers.
# Defaults: build/cuda/bench_step, --configs base (where the attention matters most), 3 warm-up
# and 10 timed steps (about 90 s for base on an H100). scripts/gpu_check.sh's attention step
# runs it. Without a GPU, the emulated build shows the pipeline works (slowly, on tiny):
#   bench/attention_steps.sh build/cuda-emu/bench_step --configs tiny --warmup 1 --steps 1
# Exit status 2 on a usage error or a missing BENCH_STEP, 1 when a run fails.
set -u
set -f # --skip's names are words, never patterns

BIN=build/cuda/bench_step
CONFIGS=base
WARMUP=3
STEPS=10
SKIP=
while [ $# -gt 0 ]; do
    case "$1" in --configs | --warmup | --steps | --skip)
        if [ $# -lt 2 ]; then
            echo "attention_steps.sh: $1 takes a value. HINT: --configs \"medium base\"," \
                "--warmup 3, --steps 10, --skip \"mma-tf32\"" >&2
            exit 2
        fi ;;
    esac
    case "$1" in
    --configs) CONFIGS=${2:-}; shift 2 || exit 2 ;;
    --warmup) WARMUP=${2:-}; shift 2 || exit 2 ;;
    --steps) STEPS=${2:-}; shift 2 || exit 2 ;;
    --skip) SKIP=${2-}; shift 2 || exit 2 ;;
    -*) echo "attention_steps.sh: unknown option $1. HINT: --configs --warmup --steps --skip" >&2
        exit 2 ;;
    *) BIN=$1; shift ;;
    esac
done
for n in "$WARMUP" "$STEPS"; do
    case "$n" in '' | *[!0-9]*)
        echo "attention_steps.sh: --warmup and --steps take a whole number, not '$n'" >&2
        exit 2 ;;
    esac
done
if [ ! -x "$BIN" ]; then
    echo "attention_steps.sh: $BIN is not built. HINT: make CUDA=1 runners" >&2
    exit 2
fi

MATHS="wide pipelined 3xtf32 tf32 mma-3xtf32 mma-tf32 wide-nolt"
for m in $SKIP; do
    case " $MATHS " in *" $m "*) ;; *)
        echo "attention_steps.sh: --skip takes names of $MATHS, not '$m'" >&2
        exit 2 ;;
    esac
done
printf '%-10s %-9s' config precision
for m in $MATHS; do printf ' %13s' "$m ms"; done
printf '  %s\n' fastest
status=0
picks=
for c in $CONFIGS; do
    pick= missing=
    for p in highest high; do
        printf '%-10s %-9s' "$c" "$p"
        best='' best_ms=''
        for m in $MATHS; do
            lt=1
            [ "$m" = wide-nolt ] && lt=0
            # highest must not round to TF32: those two are not run there (device time)
            case "$p/$m" in highest/tf32 | highest/mma-tf32)
                printf ' %13s' -
                continue ;;
            esac
            case " $SKIP " in *" ${m%-nolt} "*)
                printf ' %13s' skipped
                continue ;;
            esac
            out=$(TT_CUDA_ATTN=${m%-nolt} TT_CUDA_LT=$lt "$BIN" --config "$c" --set device=cuda \
                --set matmul_precision="$p" --warmup "$WARMUP" --steps "$STEPS" 2>&1)
            ms=$(printf '%s\n' "$out" | sed -n 's/.*"median_ms":\([0-9.]*\).*/\1/p' | tail -1)
            if [ -z "$ms" ]; then
                printf ' %13s' failed
                printf '%s\n' "$out" | tail -5 | sed 's/^/    /' >&2
                status=1
                continue
            fi
            printf ' %13s' "$ms"
            [ "$m" = wide-nolt ] && continue
            if [ -z "$best" ] || awk "BEGIN { exit !($ms < $best_ms) }"; then
                best=$m best_ms=$ms
            fi
        done
        printf '  %s\n' "${best:--}"
        [ -n "$best" ] || missing=1
        pick=${pick:+$pick/}$best
    done
    if [ -n "$missing" ]; then
        pick="none (at a precision no arithmetic gave a time: each skipped or failed)"
    else
        pick=TT_CUDA_ATTN=$pick
    fi
    picks="$picks
pick $c: $pick"
done
printf '%s\n' "${picks#?}"
exit $status
