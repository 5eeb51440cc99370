#!/usr/bin/env bash
# gpu_check.sh [STEP...]: every check of the CUDA backend on a GPU machine in one command, with
# a table printed last (step, status, seconds, log). It works in the repository root whatever
# the current folder, and writes only there (build/cuda, the C objects it shares with the plain
# build under build/f32 and build/f64, ./train, the logs) and in a temporary folder that it
# removes. No network, no package installs.
#
#   steps (default: all; they run in this order, whichever order they are named in)
#     build      make CUDA=1 all, then make CUDA=1 runners; build.log begins with make CUDA=1
#                cuda-paths (the toolkit and NCCL make found, and where their files lie); a
#                failed build is tried again with WERROR=0 (its row stays FAIL) so that the
#                other steps run in the same call
#     cuda       the CUDA suite in both runners: build/cuda/check_f32 cuda, check_f64 cuda
#     train      configs/tiny.json for 2 epochs on the GPU twice (metrics identical but
#                tokens_per_s, checkpoint tensors identical) and on the CPU (each epoch's
#                valid_loss within 1e-3 relative; the gaps are printed); then once more with
#                the gradients summed by a one-GPU NCCL communicator (TT_NCCL=1, issue 16):
#                identical to the plain GPU run (needs a build that found NCCL); with
#                cuda_graphs false (every call launched): identical to the replayed run; a
#                model too big for the GPU: exit 2 at start-up; each device's checkpoint
#                resumed on the other for a third epoch: valid_loss within 1e-3
#     dump       --dump-first-step on both devices: integer tensors equal, every real tensor
#                within 1e-5 relative (2-norm); the largest difference is printed
#     cpu-blas   bench/blas_choice.sh over build/cuda/bench_step on this machine's CPU (issue 44's
#                first target, which needs a CPU that OpenBLAS 0.3.21 does not know: the GPU
#                machines' hosts were such on 2026-11-29, Prescott picked): small and gpt-small
#                with OPENBLAS_CORETYPE unset (the program's choice), set by hand to the same
#                core, and OpenBLAS's own pick kept (TT_BLAS_AUTO=0), 2 alternated rounds,
#                2 threads (about 40 s); its table in the summary; a missed target does not
#                fail the step, a failed run does
#     attention  build/cuda/bench_attention: the fused attention's arithmetics (float cores
#                staged by the threads or by cp.async, 3xTF32, TF32, and the last two again
#                through mma.sync, scores in registers: attention_mma.cu) forward and backward on
#                the bench rows' shapes, the forward against cuBLAS + softmax at matmul
#                precision highest and high (under a minute); its table in the summary; a
#                missed target does not fail the step. Then "attention in the step":
#                bench/attention_steps.sh, base's whole step with each arithmetic
#                (TT_CUDA_ATTN) at both precisions, the fastest named, and wide again with
#                the Linears' bias outside cuBLASLt's epilogue (TT_CUDA_LT=0, the column
#                wide-nolt: what the epilogue saves) (about 90 s), its table in the summary;
#                an arithmetic that failed the cuda step of the same call is left out; base's
#                pick kept in build/gpu_check.pick for GPU_CHECK_ATTN=picked (below)
#     racecheck  compute-sanitizer --tool racecheck over build/cuda/check_f32 cuda (CK_FORK=no)
#                with TT_CUDA_TEST_LIGHT=2 (the attention cases cut to one scale, the unpacked
#                layout, 4 of the 7 backward subsets, which still run every kernel variant, and
#                2 of the 8 option sets, none and causal + padding + dropout, which still take
#                every branch: test_cuda.c's light(); in full, the suite ran past 300 s on an
#                H100, each launch far slower than under memcheck; on the emulated GPU the
#                attention case takes 15 s so cut, 57 s at TT_CUDA_TEST_LIGHT=1)
#     memcheck   compute-sanitizer --tool memcheck over the same with TT_CUDA_TEST_LIGHT=1
#                (every option set; the packed layout, whose strides alone differ, is left to
#                the emulated GPU, which stops at any access past a device buffer). Either
#                sanitizer step SKIPs when the tool refuses the GPU ("Device not supported", as
#                on a gVisor machine). The sanitizers run after attention, whose pick call 2
#                needs: their times are the least known (racecheck cut at its 300 s on
#                2026-11-24, before the light cuts), and they get what is left of the budget
#     attention-ncu  ncu over the fused attention kernels of bench_step base's first step
#                (12 forward launches, 3 each of dq and dkv), once per arithmetic (TT_CUDA_ATTN
#                wide, pipelined, 3xtf32, tf32, mma-3xtf32, mma-tf32): time, SM and memory
#                throughput, occupancy, issue slots, shared-memory wavefronts and bank
#                conflicts, the largest stall reasons (bench/ncu_attention.py), in
#                attention_ncu.txt and the summary: what holds them back, for the next change
#                to them. SKIP as profile
#     suites     every suite of both runners of the CUDA build (the CPU ones too)
#     bench      bench/gpu_bench.sh, issue 12's benchmark (ours against PyTorch eager and
#                torch.compile, tiny small medium base, matmul precision highest and high,
#                without ours's one-stream column, with PyTorch's autocast bfloat16 on base,
#                eager and compiled, in a second table; about 8 minutes): its lines in
#                bench.log, its tables in gpu_bench.txt and the summary; missed targets do not
#                fail the step, a failed run does. It does not fit the budget beside the other
#                steps (it is skipped then): run it in a call of its own after a build,
#                `scripts/gpu_check.sh build bench` (below)
#     profile    ncu (Nsight Compute, --clock-control none) over bench_step's tiny, small and
#                medium at matmul precision highest, 1 + 2 steps: each kernel's launches and
#                microseconds per step (bench/ncu_table.py), in profile.txt and the summary;
#                SKIP where ncu is missing or cannot read the GPU's counters (gVisor)
#
#   environment
#     OUT               the logs go there (the device tool's folder), else build/gpu_check/:
#                       summary.txt and one log per step (the bench step adds gpu_bench.txt;
#                       the device tool brings back 8 files, so not every step in one call)
#     GPU_CHECK_BUDGET  seconds for the whole run (default 540, under the device tool's 10
#                       minutes a command): a step that would pass it is cut short (FAIL, timed
#                       out) or not started (SKIP). Run the rest in another call (below)
#     GPU_CHECK_SANITIZE_CASE  CK_RUN_CASE for the sanitizer steps (e.g. attention), else all
#     GPU_CHECK_ATTN=picked  the bench and profile steps run under TT_CUDA_ATTN=<the pick> that
#                       the attention step of this call or of an earlier one on this machine
#                       kept in build/gpu_check.pick (backend.cu's own where none is kept: the
#                       summary says which); not with TT_CUDA_ATTN set too (exit 2)
#     GPU_CHECK_NCU_MATHS  the arithmetics attention-ncu profiles (default "wide pipelined
#                       3xtf32 tf32 mma-3xtf32 mma-tf32"; each up to 150 s): e.g.
#                       "mma-3xtf32 mma-tf32", the ones the precisions would use
#     GPU_CHECK_EMU=1   the emulated GPU (make CUDA_EMU=1, tests/cuda_emu): the CUDA build's
#                       code run on the CPU, for its logic (no timing, no sanitizers): steps
#                       build, cuda, suites, train and dump run there (about 4 times the caps
#                       and a budget of 1800 s); memcheck, racecheck, attention and bench skip
#     GPU_CHECK_CUDA=0 GPU_CHECK_DEVICE=guard  a dry run of the script without a GPU: the CPU
#                       build, and the guard device where "cuda" would be (steps build,
#                       suites, train, dump; the CUDA ones are skipped; bench runs its own dry
#                       run, GPU_BENCH_DEVICE=cpu on tiny, 5 steps)
#
# The GPU machine has no OpenBLAS, cJSON or Check: `mkdir -p .git/info && bash
# ../shared/tools/device-bundle.sh` here packs them into .device/ (name it in the device tool's
# carry; the script adds it to .git/info/exclude, and stops at once where .git/info is missing,
# as it was in this checkout on 2026-11-24); this script sources .device/env.sh itself when
# pkg-config does not find them. That bundle was tried here with the system's copies hidden
# (a mount namespace): build and suites passed on it.
#
# On the device tool (.library/device/README.md): since 2026-11-27 a task that is lent a GPU
# has 15 minutes of device time in all (every start, idle wait and call counts; no machine
# starts with under 4 minutes left), where it had 30 before; a machine goes back 30 s after a
# call, so a second call made at once finds it warm, with build/cuda still there. One call
# runs at most 600 s and brings back 8 files (summary.txt and one log a step). Timings of
# 2026-11-24 (H100): a start about 30-60 s, each call about 28 s beyond its command, build 17 s
# (before attention_mma.cu, whose float32 object alone takes 25 s with nvcc --threads), build
# cuda train dump memcheck racecheck attention 397 s with racecheck cut at its 300 s, bench
# 392 s (246 s with torch.compile on base's rows alone). Timings of 2026-11-29 (H200): call 1
# below 282 s (build 32, the two cuda suites 67, attention 47, racecheck 108, memcheck 19),
# 314 s of device time with the start; call 2 at GPU_CHECK_BUDGET=370 344 s with two
# bench_torch.py --autocast bf16 runs of base after it (eager, compiled: 70 s); 668 s in all,
# and base met its targets at highest and high. So two calls, each with carry
# [".device"], timeout_s 600 and no kind (a kind other than the one held starts a bare
# machine), both commands written down before the first:
#   1. source .device/env.sh && GPU_CHECK_BUDGET=420 scripts/gpu_check.sh build cuda train \
#        dump attention racecheck memcheck   (correctness first, then which attention is
#        fastest and what cuBLASLt's bias epilogue saves; the sanitizers get what is left,
#        racecheck first, which has never run whole on the attention kernels: 8 files)
#      Its attention step ends with "pick base: TT_CUDA_ATTN=HIGHEST/HIGH", the fastest
#        arithmetic in base's whole step at each precision (at highest of wide, pipelined,
#        3xtf32 and mma-3xtf32 only), and keeps it in build/gpu_check.pick on that machine.
#        An arithmetic that failed the cuda step of the same call is neither timed nor picked
#        (each attention arithmetic is a test of its own, its failures tagged e.g.
#        "[TT_CUDA_ATTN=mma-tf32]"; the summary names them);
#        where a failure names none (a crash, a kernel outside attention), the pick is not
#        kept: read cuda_suite.log.
#   2. At once, without reading call 1's output first (read it while call 2 runs: the machine
#      goes back 30 s after a call, and a fresh start costs a minute or two of the 15); only
#      call 1's reply's lease.budget_left_s: where it is under 370, GPU_CHECK_BUDGET is that
#      less 60 (a call past the session's time is lost whole, the table printed last with it):
#      source .device/env.sh && GPU_CHECK_ATTN=picked GPU_CHECK_BUDGET=310 \
#        scripts/gpu_check.sh build cpu-blas bench
#      (cpu-blas first, about 40 s: issue 44's fallback target on the host's CPU, its log the
#      call's fifth file where call 1 brings back eight; the bench under call 1's pick, or
#      backend.cu's own where none was kept, as the summary and the table's first line say;
#      the step starts no torch.compile run past its budget, and base's compiled rows go
#      first). The bench times PyTorch on the same GPU in the same
#      run, which is what base's targets are measured against: PyTorch's figures on the H100
#      of 2026-11-24/25 (eager 130.6 ms at highest and 54.7 at high, torch.compile 120.0 and
#      44.1) do not hold on an H200.
#   Afterwards: write the pick into backend.cu's ATTN_MATH_HIGHEST and ATTN_MATH_HIGH (and
#   test_matmul_precision's assertion), so that the default is what was timed (done with the
#   H200's pick, pipelined/mma-tf32: where call 1 picks these again, call 2 needs no
#   GPU_CHECK_ATTN). Where base
#   still misses its targets, a later GPU session's call 2 is `GPU_CHECK_NCU_MATHS="<the pick's
#   two>" GPU_CHECK_BUDGET=420 scripts/gpu_check.sh build attention-ncu`, whose stall reasons
#   say where the attention's time goes (by the 2026-11-25 figures a TF32 forward block of base
#   took about 46 us for its 16 chunks, several times what one round trip to memory a chunk
#   explains). 60 + 448 + 338 s leaves about a minute of the 15 for the time between the
#   calls: no third call. Call 2's 310 s: stop 28's bench with base's rows alone compiled took
#   246 s, about 90 of them the two compiles, which start only while the bench's budget (the
#   step's less 60 s) has 30 s left; the step leaves out ours's one-stream runs (20 s).
# Exit status: 0 all passed; 1 a step failed; 3 none failed but some were skipped; 2 usage.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ALL_STEPS=(build cuda train dump cpu-blas attention racecheck memcheck attention-ncu suites bench
           profile)
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=("${ALL_STEPS[@]}")
for s in "${steps[@]}"; do
    case " ${ALL_STEPS[*]} " in
    *" $s "*) ;;
    *)
        echo "gpu_check: unknown step '$s' (steps: ${ALL_STEPS[*]})" >&2
        exit 2
        ;;
    esac
done
wanted() { case " ${steps[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac }

CUDA=${GPU_CHECK_CUDA:-1}
EMU=${GPU_CHECK_EMU:-0}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
BIN=build
[ "$CUDA" = 1 ] && BIN=build/cuda
MAKE_CUDA="CUDA=$CUDA" TRAIN=./train SLOW=1 # the build's make variable, its ./train, caps x
if [ "$EMU" = 1 ]; then
    CUDA=1 BIN=build/cuda-emu MAKE_CUDA=CUDA_EMU=1 TRAIN=build/cuda-emu/train SLOW=4
fi
LOGS=${OUT:-build/gpu_check}
mkdir -p "$LOGS" && LOGS=$(cd "$LOGS" && pwd) || exit 2
SUMMARY=$LOGS/summary.txt
: >"$SUMMARY"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
deadline=$((SECONDS + ${GPU_CHECK_BUDGET:-$((EMU == 1 ? 1800 : 540))}))

say() { echo "$*" | tee -a "$SUMMARY"; }

# The attention step keeps base's pick (attention_steps.sh's "pick base: TT_CUDA_ATTN=H/L") in
# PICK_FILE, which stays on the machine between two calls (OUT does not); GPU_CHECK_ATTN=picked
# runs the bench and profile steps under it (picked_attn, once, before them), so that call 2's
# command needs nothing from call 1's output
PICK_FILE=build/gpu_check.pick
ATTN_RE='[a-z0-9-]\{1,\}'
case "${GPU_CHECK_ATTN:-}" in
'') ;;
picked)
    if [ -n "${TT_CUDA_ATTN:-}" ]; then
        echo "gpu_check: GPU_CHECK_ATTN=picked and TT_CUDA_ATTN=$TT_CUDA_ATTN: give one" >&2
        exit 2
    fi
    ;;
*)
    echo "gpu_check: GPU_CHECK_ATTN=$GPU_CHECK_ATTN: 'picked' (the attention step's pick," \
        "kept on this machine by an earlier call) or unset" >&2
    exit 2
    ;;
esac
picked_attn() {
    [ "${GPU_CHECK_ATTN:-}" = picked ] || return 0
    local pick=
    [ -f "$PICK_FILE" ] && pick=$(grep -x "$ATTN_RE/$ATTN_RE" "$PICK_FILE" | head -1)
    if [ -n "$pick" ]; then
        export TT_CUDA_ATTN=$pick
        say "GPU_CHECK_ATTN=picked: TT_CUDA_ATTN=$pick, the attention step's pick of" \
            "$(date -u -r "$PICK_FILE" '+%H:%M:%S UTC') on this machine"
    else
        say "GPU_CHECK_ATTN=picked: no pick kept on this machine (a fresh one, or the" \
            "attention step picked none): backend.cu's own arithmetics"
    fi
}

# ---- the table's rows, and running one step ---------------------------------------------------
names=() statuses=() secs=() logs=()
record() { # NAME STATUS SECONDS LOG
    names+=("$1") statuses+=("$2") secs+=("$3") logs+=("$4")
    say "== $1: $2 ($3 s) $4"
}

# step NAME LOG CAP CMD...: CMD, its output appended to LOG, for at most CAP seconds and what is
# left of the budget; records PASS, FAIL (timed out: noted) or SKIP (no time left). Returns
# CMD's status (99 when skipped).
step() {
    local name=$1 log=$2 cap=$(($3 * SLOW))
    shift 3
    local left=$((deadline - SECONDS - 15))
    [ "$cap" -le "$left" ] || cap=$left
    if [ "$cap" -lt 20 ]; then
        record "$name" SKIP 0 "$log (no time left in GPU_CHECK_BUDGET)"
        return 99
    fi
    local t0=$SECONDS rc=0 note=$log
    echo "+ $* (limit ${cap}s)" >>"$log"
    timeout --kill-after=10 "$cap" "$@" >>"$log" 2>&1 || rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then note="$log (timed out after ${cap}s)"; fi
    record "$name" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" $((SECONDS - t0)) "$note"
    return $rc
}

# built FILE NAME LOG: FILE is there (made by the build step), else a FAIL row for NAME
built() {
    [ -x "$1" ] && return 0
    echo "$1 is missing: run the build step first" >>"$3"
    record "$2" FAIL 0 "$3 ($1 missing)"
    return 1
}

# gpu_step NAME LOG CAP RUNNER CMD...: step for the CUDA suite (RUNNER must be built), SKIP
# without a GPU or in a dry run; it fails too when the suite said "SKIP: no CUDA device" (a
# device must be usable here).
gpu_step() {
    local name=$1 log=$2 cap=$3 runner=$4 before rc=0
    shift 4
    if [ "$gpu" != 1 ]; then
        record "$name" SKIP 0 "$log ($([ "$CUDA" = 1 ] && echo 'no GPU' || echo 'dry run'))"
        return 99
    fi
    built "$runner" "$name" "$log" || return 1
    before=$(grep -c "SKIP: no CUDA device" "$log")
    step "$name" "$log" "$cap" "$@" || rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c "SKIP: no CUDA device" "$log")" != "$before" ]; then
        statuses[${#statuses[@]} - 1]=FAIL
        say "== $name: FAIL: the CUDA suite found no usable device"
        rc=1
    fi
    return $rc
}

# ---- comparisons of runs and dumps: python3 "$COMPARE" same|gap|dump A B (no packages) -------
COMPARE=$TMP/compare.py
cat >"$COMPARE" <<'PY'
import array, json, math, os, struct, sys

def metrics(d):
    with open(os.path.join(d, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]

def st_read(path):
    """name -> (dtype, shape, values) of a safetensors file, the metadata left out (the config
    in it names the device and the output folder)"""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head, data = json.loads(f.read(n)), f.read()
    head.pop("__metadata__", None)
    codes = {"F32": "f", "F64": "d", "I32": "i", "I64": "q", "U8": "B"}
    out = {}
    for name, t in head.items():
        a = array.array(codes[t["dtype"]])
        a.frombytes(data[t["data_offsets"][0]:t["data_offsets"][1]])
        out[name] = (t["dtype"], t["shape"], a)
    return out

def rel_err(got, want):
    """|got - want| / |want| in 2-norm (|got - want| when want is 0): tests' tt_rel_err"""
    d = sum((float(g) - float(w)) ** 2 for g, w in zip(got, want))
    w2 = sum(float(w) ** 2 for w in want)
    return math.sqrt(d / w2) if w2 > 0 else math.sqrt(d)

def same(a, b):
    """two runs: metrics equal but tokens_per_s, checkpoint tensors equal"""
    bad = 0
    key = lambda r: json.dumps({k: v for k, v in r.items() if k != "tokens_per_s"}, sort_keys=True)
    ma, mb = metrics(a), metrics(b)
    if len(ma) != len(mb):
        print(f"metrics: {len(ma)} lines against {len(mb)}")
        bad += 1
    diff = [i for i, (x, y) in enumerate(zip(ma, mb)) if key(x) != key(y)]
    for i in diff[:5]:
        print(f"metrics line {i + 1} differs:\n  {key(ma[i])}\n  {key(mb[i])}")
    print(f"metrics: {len(ma)} lines, {len(diff)} differ (tokens_per_s left out)")
    bad += len(diff)
    files = [sorted(f for f in os.listdir(os.path.join(d, "checkpoints"))
                    if f.endswith(".safetensors")) for d in (a, b)]
    if files[0] != files[1] or not files[0]:
        print(f"checkpoints: {files[0]} against {files[1]}")
        return bad + 1
    for f in files[0]:
        ta, tb = (st_read(os.path.join(d, "checkpoints", f)) for d in (a, b))
        differ = sorted(n for n in set(ta) | set(tb) if ta.get(n) != tb.get(n))
        print(f"checkpoint {f}: {len(ta)} tensors, {len(differ)} differ {differ[:5]}")
        bad += len(differ)
    return bad

def gap(cpu, gpu, common=False):
    """each epoch's valid_loss within 1e-3 relative of the CPU run's (common: the epochs both
    runs have, at least one)"""
    va, vb = ({r["epoch"]: r["valid_loss"] for r in metrics(d) if "valid_loss" in r}
              for d in (cpu, gpu))
    if common:
        va = {e: v for e, v in va.items() if e in vb}
        vb = {e: v for e, v in vb.items() if e in va}
    bad = 0
    if sorted(va) != sorted(vb) or not va:
        print(f"epochs with a valid_loss: {sorted(va)} against {sorted(vb)}")
        bad += 1
    print("epoch  valid_loss cpu    valid_loss gpu    relative gap")
    for e in sorted(set(va) & set(vb)):
        g = abs(vb[e] - va[e]) / abs(va[e]) if va[e] else abs(vb[e])
        bad += not g <= 1e-3
        print(f"{e:5d}  {va[e]:16.9g}  {vb[e]:16.9g}  {g:12.3e}{'' if g <= 1e-3 else '  > 1e-3'}")
    return bad

def dump(cpu, gpu):
    """integer tensors equal, real ones within 1e-5 relative (2-norm)"""
    ta, tb = st_read(cpu), st_read(gpu)
    bad, gaps = 0, []
    if set(ta) != set(tb):
        print(f"tensors only on the cpu {sorted(set(ta) - set(tb))}, "
              f"only on the gpu {sorted(set(tb) - set(ta))}")
        bad += 1
    for n in sorted(set(ta) & set(tb)):
        (da, sa, xa), (db, sb, xb) = ta[n], tb[n]
        if (da, sa) != (db, sb):
            print(f"{n}: {da} {sa} against {db} {sb}")
            bad += 1
        elif da in ("F32", "F64"):
            finite = all(math.isfinite(v) for v in xb)
            gaps.append((rel_err(xb, xa) if finite else math.inf, n))
        elif xa != xb:
            print(f"{n}: the integers differ")
            bad += 1
    gaps.sort(reverse=True)
    print(f"{len(gaps)} real tensors; the largest relative differences, gpu against cpu:")
    for g, n in gaps[:8]:
        print(f"  {g:10.3e}  {n}")
    worst, name = gaps[0] if gaps else (0.0, "-")
    print(f"largest relative difference: {worst:.3e} ({name}), limit 1e-5")
    return bad + (not worst <= 1e-5)

mode, a, b = sys.argv[1:4]
common = lambda x, y: gap(x, y, True)
sys.exit(1 if {"same": same, "gap": gap, "common": common, "dump": dump}[mode](a, b) else 0)
PY

# ---- the device -------------------------------------------------------------------------------
say "gpu_check $(date -u '+%Y-%m-%d %H:%M:%S UTC')," \
    "commit $(git log -1 --format='%h %s' 2>/dev/null)"
gpu=0
if [ "$EMU" = 1 ]; then
    say "the emulated GPU (GPU_CHECK_EMU=1, make CUDA_EMU=1): the CUDA code's logic on the CPU"
    gpu=1
elif [ "$CUDA" != 1 ]; then
    say "dry run: the CPU build (GPU_CHECK_CUDA=0), device \"$DEVICE\" in place of cuda"
elif nvidia-smi -L >>"$SUMMARY" 2>&1; then
    nvidia-smi -L
    say "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)," \
        "$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"
    gpu=1
else
    say "nvidia-smi -L failed: no GPU or no driver here; the GPU steps are skipped"
    record device FAIL 0 "$SUMMARY"
fi
[ "$CUDA" = 1 ] && [ "$EMU" != 1 ] &&
    say "nvcc: $( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | tail -1)"

# The bundled packages (device-bundle.sh) when pkg-config does not find them.
if [ -z "${TT_DEPS_BUNDLED:-}" ] && [ -f .device/env.sh ] &&
    ! pkg-config --exists openblas check libcjson 2>/dev/null; then
    # shellcheck source=/dev/null
    source .device/env.sh && say "sourced .device/env.sh: the bundled OpenBLAS, cJSON and Check"
fi

# ---- the steps --------------------------------------------------------------------------------
if wanted build; then
    log=$LOGS/build.log
    : >"$log"
    jobs=$(nproc 2>/dev/null || echo 4)
    # what make takes for the toolkit and NCCL, and where their files lie (the GPU machine's
    # image is not known here): a failed first build says what to pass make
    [ "$CUDA" = 1 ] && [ "$EMU" != 1 ] &&
        make --no-print-directory CUDA=1 cuda-paths >>"$log" 2>&1
    # Two makes: one `make -j all runners` races on the libraries. `make all` checks the
    # packages first (scripts/deps.sh trusts pkg-config under the bundle's TT_DEPS_BUNDLED=1).
    rc=0
    step build "$log" 420 sh -c "make $MAKE_CUDA -j$jobs all && make $MAKE_CUDA -j$jobs runners" ||
        rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 99 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ]; then
        # The code is held to -Werror under this machine's gcc 12 and nvcc; the GPU machine's
        # compilers may warn where those did not. The build row stays FAIL, and a build with
        # warnings left as warnings lets the other steps run in the same call.
        say "the build failed; again with WERROR=0 (warnings not errors), so the steps run"
        step "build, WERROR=0" "$log" 420 sh -c \
            "make $MAKE_CUDA WERROR=0 -j$jobs all && make $MAKE_CUDA WERROR=0 -j$jobs runners"
    fi
fi

cuda_ran=0 cuda_bad=0
if wanted cuda; then
    log=$LOGS/cuda_suite.log
    : >"$log"
    for v in f32 f64; do
        gpu_step "cuda suite $v" "$log" 240 "$BIN/check_$v" "$BIN/check_$v" cuda
        case $? in 0) cuda_ran=1 ;; 99) ;; *) cuda_ran=1 cuda_bad=1 ;; esac
    done
fi

# The attention arithmetics the cuda step's failures name (test_cuda.c's "[TT_CUDA_ATTN=NAME]",
# a test each), as one line; a failure naming none is "?" (a crash, a kernel outside attention)
failed_maths() {
    grep -E '^[^ ]+:[0-9]+:[FE]:' "$LOGS/cuda_suite.log" 2>/dev/null |
        sed 's/.*\[TT_CUDA_ATTN=\([a-z0-9-]*\)\].*/\1/; t; s/.*/?/' | sort -u | tr '\n' ' ' |
        sed 's/ $//'
}

# compute-sanitizer TOOL over the CUDA suite of the float32 runner; errors fail the step
sanitize() {
    local tool=$1 log=$LOGS/$1.log san envs=(CK_FORK=no)
    : >"$log"
    [ -n "${GPU_CHECK_SANITIZE_CASE:-}" ] && envs+=("CK_RUN_CASE=$GPU_CHECK_SANITIZE_CASE")
    envs+=("TT_CUDA_TEST_LIGHT=$([ "$tool" = racecheck ] && echo 2 || echo 1)")
    san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    if [ "$EMU" = 1 ]; then
        record "$tool" SKIP 0 "$log (emulated GPU)"
        return
    fi
    if [ "$gpu" = 1 ] && [ ! -x "$san" ]; then
        record "$tool" FAIL 0 "$log (compute-sanitizer not found)"
        return
    fi
    local rc=0
    gpu_step "$tool" "$log" 300 "$BIN/check_f32" env "${envs[@]}" "$san" --tool "$tool" \
        --error-exitcode 1 "$BIN/check_f32" cuda || rc=$?
    # the tool itself refusing the machine (a GPU under gVisor: "Device not supported", then
    # error 999 at the first allocation, .library/device/KINDS.md) is no finding of the code's
    if [ $rc -ne 0 ] && [ $rc -ne 99 ] && grep -q "Device not supported" "$log"; then
        statuses[${#statuses[@]} - 1]=SKIP
        logs[${#logs[@]} - 1]="$log (compute-sanitizer cannot use this GPU: Device not supported)"
        say "== $tool: SKIP: compute-sanitizer says \"Device not supported\" (a gVisor machine?)"
        return
    fi
    grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | tee -a "$SUMMARY"
}

# ./train of the build under test (make CUDA=1 links it with a stamp build/.train-cuda)
train_ok() {
    if [ "$gpu" != 1 ] && [ "$CUDA" = 1 ]; then
        record "$1" SKIP 0 "$2 (no GPU)"
        return 1
    fi
    built "$TRAIN" "$1" "$2" || return 1
    [ "$CUDA" != 1 ] || [ "$EMU" = 1 ] || [ -e build/.train-cuda ] && return 0
    record "$1" FAIL 0 "$2 (./train is not the CUDA build: run the build step)"
    return 1
}

if wanted train; then
    log=$LOGS/train.log
    : >"$log"
    if train_ok train "$log"; then
        for run in "${DEVICE}1" "${DEVICE}2" cpu; do
            step "train $run (tiny, 2 epochs)" "$log" 120 "$TRAIN" configs/tiny.json \
                --set device="${run%[12]}" --set train.epochs=2 --set output.dir="$TMP/$run"
        done
        step "train: $DEVICE twice, identical" "$log" 60 python3 "$COMPARE" same \
            "$TMP/${DEVICE}1" "$TMP/${DEVICE}2"
        step "train: $DEVICE vs cpu valid_loss" "$log" 60 python3 "$COMPARE" gap "$TMP/cpu" \
            "$TMP/${DEVICE}1"
        sed -n '/^epoch  valid_loss/,$p' "$log" | tee -a "$SUMMARY"
        # resumed across devices both ways, a third epoch (schedule_epochs 3: a rate above 0)
        for way in "cpu $DEVICE" "$DEVICE cpu"; do
            set -- $way
            from=$1
            [ "$from" = cpu ] || from=${DEVICE}1
            step "train: resume $1 -> $2" "$log" 120 "$TRAIN" configs/tiny.json \
                --resume "$TMP/$from/checkpoints/epoch_002.safetensors" --set device="$2" \
                --set train.epochs=3 --set train.schedule_epochs=3 --set output.dir="$TMP/to_$2"
        done
        step "train: resumed on $DEVICE vs on cpu, epoch 3 valid_loss" "$log" 60 \
            python3 "$COMPARE" common "$TMP/to_cpu" "$TMP/to_$DEVICE"
        step "train $DEVICE, cuda_graphs false" "$log" 120 "$TRAIN" configs/tiny.json \
            --set device="$DEVICE" --set train.epochs=2 --set cuda_graphs=false \
            --set output.dir="$TMP/nograph"
        step "train: graphs replayed vs every call launched, identical" "$log" 60 \
            python3 "$COMPARE" same "$TMP/${DEVICE}1" "$TMP/nograph"
        if [ "$CUDA" = 1 ]; then
            grep -q "^steps: captured once as a CUDA graph" "$log" ||
                record "train: graph line" FAIL 0 \
                    "$log (no 'steps: captured once as a CUDA graph' line)"
            # a model far beyond the GPU's memory: exit 2 at start-up, the bytes named
            step "train: too big for the GPU, refused at start-up" "$log" 60 bash -c \
                '"$1" configs/tiny.json --set device=cuda --set model.d_model=65536 \
                 --set model.n_heads=1 --set output.dir="$0/big" >"$0/big.out" 2>&1; rc=$?
                 cat "$0/big.out"; [ $rc = 2 ] && grep -q "memory: this run needs" "$0/big.out" &&
                 [ ! -e "$0/big/metrics.jsonl" ]' "$TMP" "$TRAIN"
            [ "$EMU" = 1 ] || step "train cuda through NCCL (TT_NCCL=1)" "$log" 120 env TT_NCCL=1 \
                ./train configs/tiny.json --set device=cuda --set train.epochs=2 \
                --set output.dir="$TMP/nccl"
            if [ "$EMU" = 1 ]; then
                record "train cuda through NCCL" SKIP 0 "$log (emulated GPU: no NCCL)"
            elif grep -q "^gradients: summed by NCCL over 1 process" "$log"; then
                step "train: NCCL vs plain cuda, identical" "$log" 60 python3 "$COMPARE" same \
                    "$TMP/${DEVICE}1" "$TMP/nccl"
            else
                record "train: NCCL path" FAIL 0 \
                    "$log (no 'gradients: summed by NCCL' line: a build without NCCL?)"
            fi
        fi
    fi
fi

if wanted dump; then
    log=$LOGS/dump.log
    : >"$log"
    if train_ok dump "$log"; then
        for dev in cpu "$DEVICE"; do
            step "dump-first-step $dev" "$log" 60 "$TRAIN" configs/tiny.json --set device="$dev" \
                --dump-first-step "$TMP/dump_$dev.safetensors"
        done
        step "dump: $DEVICE vs cpu, every tensor" "$log" 60 python3 "$COMPARE" dump \
            "$TMP/dump_cpu.safetensors" "$TMP/dump_$DEVICE.safetensors"
        grep "^largest relative difference" "$log" | tail -1 | tee -a "$SUMMARY"
    fi
fi

if wanted cpu-blas; then
    log=$LOGS/cpu_blas.log
    : >"$log"
    if built "$BIN/bench_step" cpu-blas "$log"; then
        step cpu-blas "$log" 150 bench/blas_choice.sh "$BIN/bench_step" --rounds 2
        sed -n '/^blas_choice /,/^  sgemm /p; /^| config/,$p' "$log" | tee -a "$SUMMARY"
    fi
fi

if wanted attention; then
    log=$LOGS/attention.log
    : >"$log"
    if [ "$gpu" != 1 ] || [ "$EMU" = 1 ]; then
        record attention SKIP 0 "$log ($([ "$EMU" = 1 ] && echo 'emulated GPU' ||
            ([ "$CUDA" = 1 ] && echo 'no GPU' || echo 'dry run')))"
    elif built "$BIN/bench_attention" attention "$log"; then
        step attention "$log" 180 "$BIN/bench_attention"
        grep -v '^{' "$log" | grep -v '^+ ' | tee -a "$SUMMARY"
        # the whole step of base with each arithmetic: is matmul_precision's pick the fastest?
        if built "$BIN/bench_step" "attention in the step" "$log"; then
            # what failed the cuda suite in this call is neither timed nor picked
            skip= keep_pick=1
            if [ "$cuda_ran" != 1 ]; then
                say "attention in the step: the cuda step did not run in this call, so no" \
                    "arithmetic is left out of the pick for failing it"
            elif [ "$cuda_bad" = 1 ]; then
                skip=$(failed_maths)
                say "attention in the step: the cuda suite failed, naming: ${skip:-nothing}"
                case " $skip " in *" ? "* | "  ")
                    keep_pick=0
                    say "  (a failure without an arithmetic's name: read cuda_suite.log" \
                        "before taking the pick)" ;;
                esac
                skip=$(printf '%s' "$skip" | tr ' ' '\n' | grep -vx '?' | tr '\n' ' ')
            fi
            step "attention in the step" "$log" 180 bench/attention_steps.sh "$BIN/bench_step" \
                --skip "$skip"
            awk '/^config +precision/ { n = NR } { line[NR] = $0 }
                 END { if (n) for (i = n; i <= NR; i++) if (line[i] !~ /^\+ /) print line[i] }' \
                "$log" | tee -a "$SUMMARY"
            # kept on this machine for a later call's GPU_CHECK_ATTN=picked (not under OUT,
            # which the device tool empties before each command); not where a failure of the
            # cuda step names no arithmetic (the pick may be fast at wrong numbers)
            pick=$(sed -n "s|^pick base: TT_CUDA_ATTN=\($ATTN_RE/$ATTN_RE\)\$|\1|p" "$log" |
                tail -1)
            rm -f "$PICK_FILE"
            if [ -n "$pick" ] && [ "$keep_pick" = 1 ]; then
                echo "$pick" >"$PICK_FILE" && say "attention: pick $pick kept in $PICK_FILE"
            elif [ -n "$pick" ]; then
                say "attention: pick $pick not kept for GPU_CHECK_ATTN=picked (above)"
            fi
        fi
    fi
fi

wanted racecheck && sanitize racecheck
wanted memcheck && sanitize memcheck

if wanted attention-ncu; then
    log=$LOGS/attention_ncu.log
    : >"$log"
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    if [ "$gpu" != 1 ] || [ "$EMU" = 1 ]; then
        record attention-ncu SKIP 0 "$log ($([ "$EMU" = 1 ] && echo 'emulated GPU' ||
            ([ "$CUDA" = 1 ] && echo 'no GPU' || echo 'dry run')))"
    elif [ ! -x "$ncu" ]; then
        record attention-ncu SKIP 0 "$log (ncu not found)"
    elif built "$BIN/bench_step" attention-ncu "$log"; then
        : >"$LOGS/attention_ncu.txt"
        metrics=$(python3 bench/ncu_attention.py --metrics)
        for m in ${GPU_CHECK_NCU_MATHS:-wide pipelined 3xtf32 tf32 mma-3xtf32 mma-tf32}; do
            # the first step: its 12 forward launches, then the backward of the last 3 layers
            TT_CUDA_ATTN=$m step "attention-ncu $m" "$log" 150 "$ncu" --clock-control none \
                --csv --page raw --metrics "$metrics" --print-units base \
                --kernel-name "regex:(^|[ :])((forward|dq|dkv)_kernel|mma_(forward|dq|dkv))" \
                --launch-count 18 \
                --log-file "$TMP/ncu_att_$m.csv" "$BIN/bench_step" --config base \
                --set device=cuda --warmup 1 --steps 1 || true
            [ -f "$TMP/ncu_att_$m.csv" ] &&
                python3 bench/ncu_attention.py "$TMP/ncu_att_$m.csv" --title "base, $m" \
                    >>"$LOGS/attention_ncu.txt" 2>&1 && echo >>"$LOGS/attention_ncu.txt"
        done
        tee -a "$SUMMARY" <"$LOGS/attention_ncu.txt"
    fi
fi

if wanted suites; then
    log=$LOGS/suites.log
    : >"$log"
    for v in f32 f64; do
        built "$BIN/check_$v" "all suites $v" "$log" &&
            step "all suites $v" "$log" 300 "$BIN/check_$v"
    done
fi

# after the attention step (a pick of this call counts) and the suites (which it must not
# change), before the two steps that run under it
if wanted bench || wanted profile; then picked_attn; fi

if wanted bench; then
    log=$LOGS/bench.log
    : >"$log"
    if [ "$EMU" = 1 ]; then
        record bench SKIP 0 "$log (emulated GPU: no timings)"
    elif [ "$gpu" != 1 ] && [ "$CUDA" = 1 ]; then
        record bench SKIP 0 "$log (no GPU)"
    elif built "$BIN/bench_step" bench "$log"; then
        # gpu_bench.sh starts no torch.compile run past GPU_BENCH_BUDGET seconds: the step's
        # limit less a minute for the run under way and the table, so that the table is made
        cap=480 left=$((deadline - SECONDS - 15))
        [ "$cap" -le "$left" ] || cap=$left
        # without ours's one-stream runs (known to gain 1-10%: bench/RESULTS.md), whose 20 s
        # base's compiled rows need more in a call of the device tool
        run=(env GPU_BENCH_BUDGET=$((cap - 60)) OUT="$TMP/bench" bench/gpu_bench.sh
             "$BIN/bench_step" --one-stream no)
        [ "$CUDA" = 1 ] || run=(env GPU_BENCH_DEVICE=cpu "${run[@]:1}" --configs tiny --steps 5)
        step bench "$log" "$cap" "${run[@]}"
        if [ -f "$TMP/bench/gpu_bench.txt" ]; then
            cp "$TMP/bench/gpu_bench.txt" "$LOGS/gpu_bench.txt"
            tee -a "$SUMMARY" <"$LOGS/gpu_bench.txt"
        fi
    fi
fi

if wanted profile; then
    log=$LOGS/profile.log
    : >"$log"
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    if [ "$gpu" != 1 ] || [ "$EMU" = 1 ]; then
        record profile SKIP 0 "$log ($([ "$EMU" = 1 ] && echo 'emulated GPU' ||
            ([ "$CUDA" = 1 ] && echo 'no GPU' || echo 'dry run')))"
    elif [ ! -x "$ncu" ]; then
        record profile SKIP 0 "$log (ncu not found)"
    elif built "$BIN/bench_step" profile "$log"; then
        : >"$LOGS/profile.txt"
        for c in tiny small medium; do
            step "profile $c" "$log" 240 "$ncu" --clock-control none --csv --page raw \
                --metrics gpu__time_duration.sum --print-units base \
                --log-file "$TMP/ncu_$c.csv" "$BIN/bench_step" --config "$c" \
                --set device=cuda --warmup 1 --steps 2 || true
            if grep -q "LibraryNotLoaded\|Failed to initialize the profiler" "$TMP/ncu_$c.csv" \
                "$log" 2>/dev/null; then
                statuses[${#statuses[@]} - 1]=SKIP
                logs[${#logs[@]} - 1]="$log (ncu cannot read this GPU's counters: gVisor?)"
                break
            fi
            [ -f "$TMP/ncu_$c.csv" ] &&
                python3 bench/ncu_table.py "$TMP/ncu_$c.csv" --title "$c, highest" \
                    >>"$LOGS/profile.txt" 2>&1 && echo >>"$LOGS/profile.txt"
        done
        tee -a "$SUMMARY" <"$LOGS/profile.txt"
    fi
fi

# ---- the table, last --------------------------------------------------------------------------
failed=0 skipped=0
{
    echo
    printf '%-36s %-6s %7s  %s\n' step status seconds log
    for i in "${!names[@]}"; do
        printf '%-36s %-6s %7s  %s\n' "${names[$i]}" "${statuses[$i]}" "${secs[$i]}" "${logs[$i]}"
        [ "${statuses[$i]}" = FAIL ] && failed=$((failed + 1))
        [ "${statuses[$i]}" = SKIP ] && skipped=$((skipped + 1))
    done
    echo "gpu_check: ${#names[@]} steps, $failed failed, $skipped skipped; logs in $LOGS"
} >"$TMP/table"
tee -a "$SUMMARY" <"$TMP/table"
[ $failed -eq 0 ] || exit 1
[ $skipped -eq 0 ] || exit 3
exit 0
