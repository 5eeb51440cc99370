#!/usr/bin/env bash
# run_jobs.sh LOGDIR COMMAND...: runs each COMMAND (a bash command line) at the same time, each
# one's output to LOGDIR/N.log, then prints every log in the order given, each under its command
# and its exit status. Exits 1 if any command failed. For suites that each keep one core busy
# (the emulated GPU is one thread), so that two of them on two cores take the time of the longer.
set -uo pipefail
logs=${1:?usage: run_jobs.sh LOGDIR COMMAND...}
shift
[ $# -gt 0 ] || { echo "run_jobs: no command given" >&2; exit 2; }
rm -rf "$logs"
mkdir -p "$logs" || exit 2
pids=()
for i in $(seq $#); do
    echo "run_jobs: [$i] ${!i}"
    bash -c "${!i}" >"$logs/$i.log" 2>&1 &
    pids+=($!)
done
fail=0
for i in $(seq $#); do
    wait "${pids[i - 1]}"
    rc=$?
    echo
    echo "run_jobs: [$i] exit $rc: ${!i}"
    cat "$logs/$i.log"
    [ $rc -eq 0 ] || fail=1
done
exit $fail
