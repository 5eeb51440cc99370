#!/bin/sh
# run_step_bench.sh: one training step, ours (bench_step) against PyTorch (bench_torch.py), for
# the tiny, small and medium configs, each run in its own process (peak RSS is per process):
# ours, then PyTorch stock, then PyTorch with OMP_WAIT_POLICY=PASSIVE (the faster of the two is
# compared), all under this environment (OPENBLAS_CORETYPE is inherited, set or unset). The
# sgemm 2048^3 peak is measured before and after (the better is used). Prints every run's JSON
# line, then one table with the speed targets of the "speed" issue and PASS/FAIL.
#   bench/run_step_bench.sh [BENCH_STEP] [--threads N] [--warmup N] [--steps N] [--configs LIST]
# Exit status 1 when a run fails (wrong or missing output); a missed target is not an error.
set -u

BIN=build/bench_step
THREADS=2
# Warm-up and timed steps per config unless given: tiny 20 + 300 (30 of its steps last 0.1 s,
# so a short slow spell of this shared VM would decide the median), small and medium 5 + 30.
# PyTorch gets the same counts as ours.
WARMUP=
STEPS=
CONFIGS="tiny small medium"
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --configs) CONFIGS=$2; shift 2 ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "run_step_bench.sh: unknown option $1. HINT: --threads --warmup --steps --configs" >&2
        exit 2 ;;
    *) BIN=$1; shift ;;
    esac
done
if [ ! -x "$BIN" ]; then
    echo "run_step_bench.sh: $BIN is not built." \
         "HINT: make bench-step (or make BUILD=DIR DIR/bench_step)" >&2
    exit 2
fi
HERE=$(dirname "$0")
steps_of() {
    if [ -n "$STEPS" ]; then echo "$STEPS"; elif [ "$1" = tiny ]; then echo 300; else echo 30; fi
}
warmup_of() {
    if [ -n "$WARMUP" ]; then echo "$WARMUP"; elif [ "$1" = tiny ]; then echo 20; else echo 5; fi
}
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || PY=/usr/bin/python3 # bench_torch.py re-execs as needed

# jget KEY JSON: the value of a flat key ("x": 1.5 or "x": "s") in a one-line JSON object.
jget() { printf '%s\n' "$2" | sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
# run LABEL CMD...: runs CMD, shows its readable lines, stores its JSON line in $OUT ("" if none).
FAILED=0
run() {
    label=$1; shift
    text=$("$@" 2>&1); rc=$?
    printf '%s\n' "$text" | sed 's/^/  /'
    OUT=$(printf '%s\n' "$text" | grep '^{' | tail -n 1)
    if [ $rc -ne 0 ] || { [ -z "$OUT" ] && ! printf '%s' "$text" | grep -q '^SKIP'; }; then
        echo "run_step_bench.sh: $label failed (exit $rc)" >&2
        FAILED=1
    fi
}

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
CORETYPE=${OPENBLAS_CORETYPE:-unset}
START=$(date +%s)
echo "step benchmark $(date '+%Y-%m-%d %H:%M %Z'): $(nproc) cores ($CPU), $THREADS threads," \
     "OPENBLAS_CORETYPE=$CORETYPE, ${WARMUP:-20/5/5} warm-up + ${STEPS:-300/30/30} timed steps," \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"

run "sgemm peak" "$BIN" --sgemm-peak --threads "$THREADS"
PEAK1=$(jget sgemm_gflops "$OUT")
for c in $CONFIGS; do
    w=$(warmup_of "$c") n=$(steps_of "$c")
    run "ours $c" "$BIN" --config "$c" --threads "$THREADS" --warmup "$w" --steps "$n"
    eval "OURS_$c=\$OUT"
    run "torch $c" "$PY" "$HERE/bench_torch.py" --config "$c" --threads "$THREADS" \
        --warmup "$w" --steps "$n"
    eval "STOCK_$c=\$OUT"
    run "torch passive $c" env OMP_WAIT_POLICY=PASSIVE "$PY" "$HERE/bench_torch.py" --config "$c" \
        --threads "$THREADS" --warmup "$w" --steps "$n"
    eval "PASSIVE_$c=\$OUT"
done
run "sgemm peak" "$BIN" --sgemm-peak --threads "$THREADS"
PEAK2=$(jget sgemm_gflops "$OUT")
PEAK=$(awk -v a="${PEAK1:-0}" -v b="${PEAK2:-0}" 'BEGIN { printf "%.1f", (a > b ? a : b) }')

echo
echo "$(date '+%Y-%m-%d'), $(nproc) cores ($CPU), $THREADS threads, OPENBLAS_CORETYPE=$CORETYPE," \
     "sgemm 2048^3 peak $PEAK GFLOP/s (before ${PEAK1:-?}, after ${PEAK2:-?}), load at end" \
     "$(cut -d' ' -f1-3 /proc/loadavg), $(($(date +%s) - START)) s"
echo
printf '%s%s%s\n' "| config | ours ms | torch ms (stock / passive) | speed-up | ours tok/s" \
    " | ours GFLOP/s | % of sgemm peak | ours peak MB | torch peak MB | memory ratio" " | target |"
printf '%s%s%s\n' "|--------|--------:|---------------------------:|---------:|-----------:" \
    "|-------------:|----------------:|-------------:|--------------:|-------------:" "|--------|"
o='' s='' p=''
for c in $CONFIGS; do
    eval "o=\$OURS_$c; s=\$STOCK_$c; p=\$PASSIVE_$c"
    awk -v c="$c" -v peak="$PEAK" \
        -v oms="$(jget median_ms "$o")" -v otok="$(jget tokens_per_s "$o")" \
        -v ogf="$(jget gflops "$o")" -v omb="$(jget peak_rss_mb "$o")" \
        -v sms="$(jget median_ms "$s")" -v smb="$(jget peak_rss_mb "$s")" \
        -v pms="$(jget median_ms "$p")" -v pmb="$(jget peak_rss_mb "$p")" '
    function num(x) { return x != "" }
    BEGIN {
        if (!num(oms)) { printf "| %s | failed | | | | | | | | | |\n", c; exit }
        pct = peak > 0 ? 100 * ogf / peak : 0
        have = num(sms) || num(pms)
        if (have) {
            # the faster PyTorch run is compared, with that run memory
            if (num(sms) && (!num(pms) || sms <= pms)) { tms = sms; tmb = smb; which = "stock" }
            else { tms = pms; tmb = pmb; which = "passive" }
            tcol = sprintf("%s / %s", num(sms) ? sprintf("%.1f", sms) : "-",
                           num(pms) ? sprintf("%.1f", pms) : "-")
            speed = tms / oms; mem = omb / tmb
            scol = sprintf("%.2fx (%s)", speed, which); mcol = sprintf("%.2f", mem)
            tmcol = sprintf("%.1f", tmb)
        } else { tcol = "n/a"; scol = "n/a"; mcol = "n/a"; tmcol = "n/a" }
        need = c == "tiny" ? 4 : 1.5
        ok = 1; why = ""
        if (have && speed < need) { ok = 0; why = why sprintf(" speed-up %.2f<%g", speed, need) }
        if (c != "tiny" && pct < 60) { ok = 0; why = why sprintf(" peak %.0f%%<60%%", pct) }
        if (have && mem > 1.0 / 3) { ok = 0; why = why sprintf(" mem %.2f>0.33", mem) }
        tgt = c == "tiny" ? "x>=4, mem<=1/3" : "x>=1.5, >=60% peak, mem<=1/3"
        verdict = ok ? (have ? "PASS" : "PASS (no torch: speed and memory unchecked)") : "FAIL:" why
        printf "| %s | %.1f | %s | %s | %.0f | %.1f | %.0f%% | %.1f | %s | %s | %s: %s |\n",
               c, oms, tcol, scol, otok, ogf, pct, omb, tmcol, mcol, tgt, verdict
    }'
done
exit $FAILED
