#!/bin/sh
# gpu_bench.sh: issue 12's GPU benchmark in one run. One training step, ours (bench_step of the
# CUDA build, --set device=cuda; and again on one stream, TT_CUDA_STREAMS=1) against PyTorch
# eager and torch.compile (bench_torch.py --device cuda, built from ours's spec), for tiny
# small medium base (or --configs), each at matmul precision highest and high, every run in
# its own process; and cuBLAS's gemm peak at each precision (bench_step --gemm-peak: 8192^3
# through the backend table). Prints every run's lines, then one table, last, also written to
# $OUT/gpu_bench.txt when OUT is set, with the targets: tiny, small and medium >= 3x PyTorch
# eager; base >= 1x eager and ours ms <= 1.25 x torch.compile's; PASS or FAIL per row (n/a
# when a time is missing).
#   bench/gpu_bench.sh [BENCH_STEP] [--configs LIST] [--precisions LIST] [--compile-rows LIST]
#                      [--warmup N] [--steps N] [--threads N] [--one-stream yes|no]
#                      [--bf16-rows LIST]
# --compile-rows: the rows PyTorch also runs compiled (default all; "none"). Each compile takes
#   tens of seconds: the compiled runs come after all the others, base's first (its target
#   needs them), and one starts only while GPU_BENCH_BUDGET (seconds since the start, default
#   420) has 30 s left, with the rest as its time limit; a row left out shows why.
# --one-stream no: without ours's runs on one stream (the column '-'): 8 runs fewer, about 20 s
#   of a device call (scripts/gpu_check.sh's bench step, where base's compiled rows need them).
# --bf16-rows: the rows PyTorch also runs under autocast bfloat16 (bench_torch.py --autocast
#   bf16 --precision high, what its users train with on a GPU), eager after the float32 eager
#   runs and compiled after the float32 compiled ones, under the same budget (default base, when
#   it is among the rows; "all"; "none"): a second table, against ours at "high" (ours has no
#   bfloat16 precision yet: issue 46's "medium").
# GPU_BENCH_DEVICE=cpu: a dry run of the same pipeline on the CPU (build/bench_step, PyTorch
#   --device cpu, the gemm peak at 1024^3, 2 warm-up steps) to check the parsing and the table
#   without a GPU: GPU_BENCH_DEVICE=cpu bench/gpu_bench.sh --configs "tiny small" --steps 5
# Exit status 2 when BENCH_STEP is missing or a row's config is wrong (nothing timed), 1 when
# a run fails; a missed target is not an error.
set -u

DEVICE=${GPU_BENCH_DEVICE:-cuda}
case "$DEVICE" in cuda | cpu) ;; *)
    echo "gpu_bench.sh: GPU_BENCH_DEVICE=$DEVICE: cuda (the default) or cpu (a dry run)" >&2
    exit 2 ;;
esac
BIN=build/cuda/bench_step
[ "$DEVICE" = cuda ] || BIN=build/bench_step
CONFIGS="tiny small medium base"
PRECISIONS="highest high"
COMPILE_ROWS=all
THREADS=2
ONE_STREAM=yes
BF16_ROWS=default
# Warm-up and timed steps per row unless given: tiny 20 + 200, base 5 + 20, the others
# 10 + 50; PyTorch runs ours's counts (compiled: at least 2 warm-up steps, the compile in them).
WARMUP=
STEPS=
while [ $# -gt 0 ]; do
    case "$1" in
    --configs) CONFIGS=$2; shift 2 ;;
    --precisions) PRECISIONS=$2; shift 2 ;;
    --compile-rows) COMPILE_ROWS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --one-stream) ONE_STREAM=$2; shift 2 ;;
    --bf16-rows) BF16_ROWS=$2; shift 2 ;;
    -h | --help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "gpu_bench.sh: unknown option $1. HINT: --configs --precisions --compile-rows" \
             "--warmup --steps --threads --one-stream --bf16-rows" >&2
        exit 2 ;;
    *) BIN=$1; shift ;;
    esac
done
if [ ! -x "$BIN" ]; then
    echo "gpu_bench.sh: $BIN is not built. HINT: make CUDA=1 bench-gpu builds" \
         "build/cuda/bench_step and runs this (a dry run, GPU_BENCH_DEVICE=cpu, takes" \
         "build/bench_step: make runners)" >&2
    exit 2
fi
for p in $PRECISIONS; do
    case "$p" in highest | high) ;; *)
        echo "gpu_bench.sh: --precisions: '$p' is not highest or high" >&2; exit 2 ;;
    esac
done
case "$ONE_STREAM" in yes | no) ;; *)
    echo "gpu_bench.sh: --one-stream: '$ONE_STREAM' is not yes or no" >&2; exit 2 ;;
esac
[ "$COMPILE_ROWS" = all ] && COMPILE_ROWS=$CONFIGS
[ "$COMPILE_ROWS" = none ] && COMPILE_ROWS=
case "$BF16_ROWS" in
default) BF16_ROWS=; case " $CONFIGS " in *" base "*) BF16_ROWS=base ;; esac ;;
all) BF16_ROWS=$CONFIGS ;;
none) BF16_ROWS= ;;
esac
for c in $BF16_ROWS; do
    case " $CONFIGS " in *" $c "*) ;; *)
        echo "gpu_bench.sh: --bf16-rows: '$c' is not among the rows ($CONFIGS)" >&2; exit 2 ;;
    esac
done
BUDGET=${GPU_BENCH_BUDGET:-420}
GEMM_N=8192
[ "$DEVICE" = cuda ] || GEMM_N=1024
HERE=$(dirname "$0")
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || PY=/usr/bin/python3 # bench_torch.py re-execs as needed
TIMEOUT=
command -v timeout >/dev/null 2>&1 && TIMEOUT="timeout --kill-after=10"

steps_of() {
    if [ -n "$STEPS" ]; then echo "$STEPS"; elif [ "$1" = tiny ]; then echo 200
    elif [ "$1" = base ]; then echo 20; else echo 50; fi
}
warmup_of() {
    if [ -n "$WARMUP" ]; then echo "$WARMUP"; elif [ "$DEVICE" != cuda ]; then echo 2
    elif [ "$1" = tiny ]; then echo 20; elif [ "$1" = base ]; then echo 5; else echo 10; fi
}
has() { case " $1 " in *" $2 "*) return 0 ;; *) return 1 ;; esac; }
. "$HERE/json.sh" # jget
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }

# run LABEL LIMIT CMD...: CMD for at most LIMIT seconds, its lines shown indented; its last
# JSON line in $LAST ("" if none), its SKIP line's text in $SKIPPED, and its status in $RC
# (124 or 137: timed out). A run that fails or prints no JSON and no SKIP line sets FAILED;
# with CUT_OK=1 (a compiled run cut at the budget's end) a time-out does not.
FAILED=0
CUT_OK=0
run() {
    label=$1 limit=$2
    shift 2
    t0=$(date +%s)
    echo "== $label"
    if [ -n "$TIMEOUT" ]; then text=$($TIMEOUT "$limit" "$@" 2>&1); else text=$("$@" 2>&1); fi
    RC=$?
    printf '%s\n' "$text" | sed 's/^/  /'
    LAST=$(printf '%s\n' "$text" | grep '^{' | tail -n 1)
    SKIPPED=$(printf '%s\n' "$text" | sed -n 's/^SKIP: //p' | head -n 1)
    echo "  ($(($(date +%s) - t0)) s, exit $RC)"
    if [ "$CUT_OK" = 1 ] && { [ $RC -eq 124 ] || [ $RC -eq 137 ]; }; then return; fi
    if [ $RC -ne 0 ] || { [ -z "$LAST" ] && [ -z "$SKIPPED" ]; }; then
        echo "gpu_bench.sh: $label failed (exit $RC)" >&2
        FAILED=1
    fi
}

# Every row's spec first: a wrong config (or no usable device) stops here, with bench_step's
# message, before any timing. Rows are numbered (a file's path is no variable name).
i=0
for c in $CONFIGS; do
    i=$((i + 1))
    spec=$("$BIN" --config "$c" --set device="$DEVICE" --threads "$THREADS" --spec) || exit
    spec=$(printf '%s\n' "$spec" | sed -n 's/^{"spec": \(.*\)}$/\1/p')
    eval "SPEC_$i=\$spec"
done

if [ "$DEVICE" = cuda ]; then
    WHAT=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
           2>/dev/null | head -n 1)
    [ -n "$WHAT" ] || WHAT=$("$PY" -c 'import torch; print(torch.cuda.get_device_name())' \
                             2>/dev/null)
    WHAT="GPU: ${WHAT:-unknown}"
else
    WHAT="DRY RUN on the CPU ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo |
          head -n 1), $(nproc) cores), not the GPU benchmark"
fi
COUNTS=
for c in $CONFIGS; do COUNTS="$COUNTS, $c $(warmup_of "$c") + $(steps_of "$c")"; done
# the fused attention ours ran: backend.cu's table, or the environment's override
if [ -n "${TT_CUDA_ATTN:-}" ]; then
    ATTN="ours: the fused attention of TT_CUDA_ATTN=$TT_CUDA_ATTN (highest/high)"
else
    ATTN="ours: the fused attention of backend.cu's ATTN_MATH_HIGHEST/HIGH"
fi
echo "gpu benchmark $(date '+%Y-%m-%d %H:%M %Z'): $WHAT; precisions $PRECISIONS; compiled" \
     "rows: ${COMPILE_ROWS:-none}; warm-up + timed steps${COUNTS#,}; $ATTN"

j=0 PEAKS=
for p in $PRECISIONS; do
    j=$((j + 1))
    run "gemm peak, $p" 300 "$BIN" --gemm-peak --set device="$DEVICE" \
        --set matmul_precision="$p" --gemm-n "$GEMM_N" --threads "$THREADS"
    v=$(jget gemm_tflops "$LAST")
    eval "PEAK_$j=\$v"
    PEAKS="$PEAKS, $p ${v:-?}"
done

# ours and PyTorch eager, every row at every precision
i=0
for c in $CONFIGS; do
    i=$((i + 1))
    eval "spec=\$SPEC_$i"
    w=$(warmup_of "$c") n=$(steps_of "$c")
    j=0
    for p in $PRECISIONS; do
        j=$((j + 1))
        # ours, then the same on one stream (TT_CUDA_STREAMS=1, backend.cu): what the second
        # one gains (the options are the positional parameters, parsed above)
        set -- --config "$c" --set device="$DEVICE" --set matmul_precision="$p" \
            --threads "$THREADS" --warmup "$w" --steps "$n"
        run "ours $c $p" 300 "$BIN" "$@"
        eval "OURS_${i}_$j=\$LAST"
        eval "ONE_${i}_$j="
        if [ "$ONE_STREAM" = yes ]; then
            run "ours $c $p, one stream" 300 env TT_CUDA_STREAMS=1 "$BIN" "$@"
            eval "ONE_${i}_$j=\$LAST"
        fi
        run "torch eager $c $p" 300 "$PY" "$HERE/bench_torch.py" --spec "$spec" \
            --device "$DEVICE" --precision "$p" --threads "$THREADS" --warmup "$w" --steps "$n"
        eval "EAGER_${i}_$j=\$LAST"
        eval "COMP_${i}_$j=; CNOTE_${i}_$j='not asked (--compile-rows)'"
    done
done

# row_of NAME: i, the number of the first row named NAME, and spec, its spec
row_of() {
    i=0
    for r in $CONFIGS; do
        i=$((i + 1))
        [ "$r" = "$1" ] && break
    done
    eval "spec=\$SPEC_$i"
}

# PyTorch under autocast bfloat16, eager, for --bf16-rows (its compiled runs after the float32
# ones below): BFE_i, BFK_i, BFNOTE_i by row
for c in $BF16_ROWS; do
    row_of "$c"
    run "torch eager $c bf16 autocast" 300 "$PY" "$HERE/bench_torch.py" --spec "$spec" \
        --device "$DEVICE" --precision high --autocast bf16 --threads "$THREADS" \
        --warmup "$(warmup_of "$c")" --steps "$(steps_of "$c")"
    eval "BFE_$i=\$LAST; BFK_$i=; BFNOTE_$i='not asked (--compile-rows)'"
done

# compiled LABEL VAR NOTE ARGS...: PyTorch compiled (bench_torch.py ARGS --compile) while the
# budget has 30 s left, with the rest as its limit: its JSON line in VAR ("" if none), and in
# NOTE why it is missing, or SKIP's text ("torch.compile failed: ...")
compiled() {
    c_label=$1 c_var=$2 c_note=$3
    shift 3
    left=$((BUDGET - $(elapsed)))
    if [ $left -lt 30 ]; then
        eval "$c_note='not run: GPU_BENCH_BUDGET ($BUDGET s) spent'"
        echo "== $c_label: not run, GPU_BENCH_BUDGET ($BUDGET s) spent"
        return
    fi
    CUT_OK=1
    run "$c_label" "$left" "$PY" "$HERE/bench_torch.py" "$@" --compile
    CUT_OK=0
    eval "$c_var=\$LAST"
    note=$SKIPPED
    if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then note="timed out at GPU_BENCH_BUDGET"
    elif [ $RC -ne 0 ]; then note="failed (exit $RC)"
    fi
    eval "$c_note=\$note"
}

# torch.compile last, base first: the budget decides how many fit. A compile that fails is
# a SKIP of bench_torch.py (exit 0), a run cut at the budget's end a note: neither fails the
# run; a crash does.
ORDER=
has "$COMPILE_ROWS" base && has "$CONFIGS" base && ORDER=base
for c in $CONFIGS; do [ "$c" = base ] || ! has "$COMPILE_ROWS" "$c" || ORDER="$ORDER $c"; done
for c in $ORDER; do
    row_of "$c"
    w=$(warmup_of "$c") n=$(steps_of "$c")
    j=0
    for p in $PRECISIONS; do
        j=$((j + 1))
        compiled "torch.compile $c $p" "COMP_${i}_$j" "CNOTE_${i}_$j" --spec "$spec" \
            --device "$DEVICE" --precision "$p" --threads "$THREADS" --warmup "$w" --steps "$n"
    done
done
# then the bf16 rows compiled, in the same order (a row PyTorch compiles in float32 only)
for c in $ORDER; do
    has "$BF16_ROWS" "$c" || continue
    row_of "$c"
    compiled "torch.compile $c bf16 autocast" "BFK_$i" "BFNOTE_$i" --spec "$spec" \
        --device "$DEVICE" --precision high --autocast bf16 --threads "$THREADS" \
        --warmup "$(warmup_of "$c")" --steps "$(steps_of "$c")"
done

# ---- the table, last ------------------------------------------------------------------------
TORCH='' e='' o='' k='' cn='' peak=''
i=0
for c in $CONFIGS; do
    i=$((i + 1))
    eval "e=\$EAGER_${i}_1"
    [ -n "$TORCH" ] || TORCH=$(jget torch "$e")
done
TABLE=$(mktemp "${TMPDIR:-/tmp}/gpu_bench.XXXXXX") || exit 1
trap 'rm -f "$TABLE"' EXIT
{
    echo "$(date '+%Y-%m-%d'), $WHAT, torch ${TORCH:-?}; the gemm ${GEMM_N}^3 peak in" \
         "TFLOP/s${PEAKS#,}; $(elapsed) s in all; $ATTN"
    echo
    printf '%s%s%s\n' "| config | precision | ours ms | one stream ms | ours tok/s | eager ms" \
        " | compile ms | vs eager | vs compile | device MB ours / eager / compile" \
        " | ours TFLOP/s | % of gemm peak | target |"
    printf '%s%s%s\n' "|--------|-----------|--------:|--------------:|-----------:|---------:" \
        "|-----------:|---------:|-----------:|---------------------------------:" \
        "|-------------:|---------------:|--------|"
    notes=
    i=0
    for c in $CONFIGS; do
        i=$((i + 1))
        j=0
        for p in $PRECISIONS; do
            j=$((j + 1))
            eval "o=\$OURS_${i}_$j; o1=\$ONE_${i}_$j; e=\$EAGER_${i}_$j; k=\$COMP_${i}_$j"
            eval "cn=\$CNOTE_${i}_$j"
            eval "peak=\${PEAK_$j:-}"
            kms=$(jget median_ms "$k")
            [ -n "$kms" ] || [ -z "$cn" ] || notes="$notes
- $c $p, torch.compile: $cn"
            awk -v c="$c" -v p="$p" -v peak="$peak" \
                -v oms="$(jget median_ms "$o")" -v o1ms="$(jget median_ms "$o1")" \
                -v otok="$(jget tokens_per_s "$o")" \
                -v ogf="$(jget gflops "$o")" -v omb="$(jget device_mb "$o")" \
                -v ems="$(jget median_ms "$e")" -v emb="$(jget peak_device_mb "$e")" \
                -v kms="$kms" -v kmb="$(jget peak_device_mb "$k")" '
            function num(x) { return x != "" }
            function f1(x) { return num(x) ? sprintf("%.1f", x) : "-" }
            function ms(x) { return num(x) ? sprintf(x < 10 ? "%.3f" : "%.2f", x) : "-" }
            BEGIN {
                if (!num(oms)) { printf "| %s | %s | failed | | | | | | | | | | |\n", c, p; exit }
                ve = num(ems) ? ems / oms : -1; vk = num(kms) ? kms / oms : -1
                tf = ogf / 1000
                pct = num(peak) && peak > 0 ? sprintf("%.0f%%", 100 * tf / peak) : "-"
                # issue 12: tiny, small and medium >= 3x eager; base >= 1x eager and
                # ours <= 1.25 x compiled (vs compile >= 0.8)
                tgt = "-"; why = ""; miss = ""
                if (c == "tiny" || c == "small" || c == "medium") {
                    tgt = "x>=3 eager: "
                    if (ve < 0) miss = " no eager time"
                    else if (ve < 3) why = sprintf(" %.2fx", ve)
                } else if (c == "base") {
                    tgt = "x>=1 eager, ms<=1.25 compile: "
                    if (ve < 0) miss = " no eager time"
                    else if (ve < 1) why = sprintf(" eager %.2fx<1", ve)
                    if (vk < 0) miss = miss " no compile time"
                    else if (oms > 1.25 * kms) why = why sprintf(" compile %.2fx<0.8", vk)
                }
                if (tgt != "-")
                    tgt = tgt (why != "" ? "FAIL:" why : miss != "" ? "n/a:" miss : "PASS")
                printf "| %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s / %s / %s | %.2f" \
                       " | %s | %s |\n", c, p, ms(oms), ms(o1ms), otok, ms(ems), ms(kms),
                       ve < 0 ? "-" : sprintf("%.2fx", ve), vk < 0 ? "-" : sprintf("%.2fx", vk),
                       f1(omb), f1(emb), f1(kmb), tf, pct, tgt
            }'
        done
    done
    echo
    ONE="ours with TT_CUDA_STREAMS=1 (a captured step without its second stream; ours is the"
    ONE="$ONE default, two)"
    [ "$ONE_STREAM" = yes ] || ONE="not run (--one-stream no)"
    echo "ms: median per step; one stream: $ONE; ours tok/s = B*T / ours ms; vs eager, vs" \
         "compile: PyTorch's ms / ours (above 1: ours is faster)."
    echo "device MB, not one measure: ours is the device's free memory (cudaMemGetInfo) before" \
         "the run allocates minus after its timed steps, everything the run holds (parameters," \
         "gradients, AdamW's moments, the step arena, cuBLAS's workspace; the CUDA context left" \
         "out); PyTorch's is torch.cuda.max_memory_allocated() over the run, its tensors at" \
         "their peak (the context and the caching allocator's free blocks left out; each run's" \
         "lines give max_memory_reserved too)."
    echo "ours TFLOP/s: the step's matmul FLOPs (bench_step's count, 3x the forward gemms) /" \
         "ours ms; % of the gemm peak of the same precision measured in this run."
    [ "$DEVICE" = cuda ] || echo "DRY RUN: CPU times (no device memory: '-'); the targets are" \
        "the GPU's and mean nothing here."
    [ -z "$notes" ] || printf 'torch.compile left out:%s\n' "$notes"
    if [ -n "$BF16_ROWS" ]; then
        # ours at "high" (TF32), the nearest it has to bfloat16 products
        jh=0 j=0
        for p in $PRECISIONS; do j=$((j + 1)); [ "$p" = high ] && jh=$j; done
        echo
        echo "PyTorch under autocast bfloat16 (bench_torch.py --autocast bf16 --precision high:" \
             "bfloat16 products, float32 weights and optimizer), against ours at high (TF32;" \
             "ours has no bfloat16 precision yet):"
        echo
        echo "| config | bf16 eager ms | bf16 compile ms | device MB eager / compile | ours high ms | eager / ours | compile / ours |"
        echo "|--------|-------------:|----------------:|--------------------------:|-------------:|-------------:|---------------:|"
        i=0 bnotes=
        for c in $CONFIGS; do
            i=$((i + 1))
            has "$BF16_ROWS" "$c" || continue
            eval "e=\$BFE_$i; k=\$BFK_$i; cn=\$BFNOTE_$i; o=\${OURS_${i}_$jh:-}"
            kms=$(jget median_ms "$k")
            [ -n "$kms" ] || [ -z "$cn" ] || bnotes="$bnotes
- $c bf16, torch.compile: $cn"
            awk -v c="$c" -v ems="$(jget median_ms "$e")" -v kms="$kms" \
                -v emb="$(jget peak_device_mb "$e")" -v kmb="$(jget peak_device_mb "$k")" \
                -v oms="$(jget median_ms "$o")" '
            function num(x) { return x != "" }
            function ms(x) { return num(x) ? sprintf(x < 10 ? "%.3f" : "%.2f", x) : "-" }
            function r(x) { return num(x) && num(oms) ? sprintf("%.2fx", x / oms) : "-" }
            BEGIN {
                printf "| %s | %s | %s | %s / %s | %s | %s | %s |\n", c, ms(ems), ms(kms),
                       num(emb) ? sprintf("%.1f", emb) : "-", num(kmb) ? sprintf("%.1f", kmb) : "-",
                       ms(oms), r(ems), r(kms)
            }'
        done
        [ -z "$bnotes" ] || printf 'torch.compile left out:%s\n' "$bnotes"
    fi
} >"$TABLE"
echo
cat "$TABLE"
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" && cp "$TABLE" "$OUT/gpu_bench.txt" && echo "(also in $OUT/gpu_bench.txt)"
fi
exit $FAILED
