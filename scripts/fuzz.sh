#!/usr/bin/env bash
# fuzz.sh SECONDS TARGET...: runs build/fuzz/fuzz_TARGET (make fuzz builds them) for SECONDS
# each, two at a time (FUZZ_JOBS), on build/fuzz/corpus/TARGET (where new inputs go) plus the
# committed seeds tests/fuzz/TARGET (read only), with the target's dictionary and -max_len.
# Fails (exit 1) on any crash, leak, timeout, out-of-memory or sanitizer report, naming the
# reproducer (build/fuzz/artifacts/TARGET-*), and ends with a table: target, seconds,
# executions, corpus size, result. Each run is appended to build/fuzz/history.tsv, so the
# fuzzing a target had over several runs adds up (scripts/fuzz.sh --total prints the sums).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build/fuzz
if [ "${1:-}" = --total ]; then
    [ -f $dir/history.tsv ] || { echo "fuzz: no $dir/history.tsv yet" >&2; exit 1; }
    awk -F'\t' '{ s[$1] += $2; e[$1] += $3; n[$1]++ }
        END { printf "%-12s %6s %12s %5s\n", "target", "sec", "execs", "runs";
              for (t in s) printf "%-12s %6d %12d %5d\n", t, s[t], e[t], n[t] }' $dir/history.tsv
    exit 0
fi
secs=${1:?usage: fuzz.sh SECONDS TARGET... | --total}
shift
jobs=${FUZZ_JOBS:-2}

# The longest input worth trying per target: a config or a data file of a few KB, a word list
# and a text, a checkpoint (the seeds are up to ~12 KB).
max_len() {
    case $1 in
    checkpoint) echo 32768 ;;
    tokenizer) echo 2048 ;;
    *) echo 4096 ;;
    esac
}

run_one() {
    local t=$1 log=$dir/logs/$1.log
    local -a args=(-max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=10
                   -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t-")
    [ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
    mkdir -p "$dir/corpus/$t"
    local start=$SECONDS
    "$dir/fuzz_$t" "${args[@]}" "$dir/corpus/$t" "tests/fuzz/$t" >"$log" 2>&1
    local rc=$? took=$((SECONDS - start))
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    printf '%s\t%s\t%s\n' "$t" "$took" "${execs:-0}" >>$dir/history.tsv
    printf '%s\t%s\t%s\t%s\n' "$took" "${execs:-0}" "$(ls "$dir/corpus/$t" | wc -l)" "$rc" \
        >"$dir/logs/$t.result"
}

rm -rf $dir/logs
mkdir -p $dir/logs $dir/artifacts
echo "fuzz: ${secs}s per target, $jobs at a time: $*"
for t in "$@"; do
    [ -x "$dir/fuzz_$t" ] || { echo "fuzz: no $dir/fuzz_$t; run make fuzz" >&2; exit 1; }
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run_one "$t" &
done
wait

fail=0
printf '\n%-12s %6s %12s %7s  %s\n' target sec execs corpus result
for t in "$@"; do
    read -r took execs corpus rc <"$dir/logs/$t.result"
    result=ok
    if [ "$rc" -ne 0 ]; then
        fail=1
        art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$dir/logs/$t.log" | tail -1)
        result="FAILED (exit $rc): ${art:-no reproducer written}; log $dir/logs/$t.log"
    fi
    printf '%-12s %6s %12s %7s  %s\n' "$t" "$took" "$execs" "$corpus" "$result"
done
if [ $fail -ne 0 ]; then
    echo "fuzz: FAILED. Reproduce: $dir/fuzz_TARGET REPRODUCER (the log has the report)" >&2
    exit 1
fi
