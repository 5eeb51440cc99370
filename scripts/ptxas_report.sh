#!/usr/bin/env bash
# ptxas_report.sh [--build DIR] [--strict[=ARCH,...]]: ptxas's resource report (-Xptxas -v) of
# every kernel of the CUDA backend, read here without a GPU: one line per kernel, architecture
# and precision (registers, stack frame, spill stores and loads, static shared memory), then
# the kernels that spill. Issue 12 asks that the hot kernels (float32: training runs in it) use
# no local memory; the float64 kernels only run the checks.
#   --build DIR  read the reports a make CUDA=1 build left beside its objects
#                (DIR/f32/.../NAME.o.ptxas, DIR/f64/...) instead of compiling every file
#   --strict     exit 1 where a float32 kernel spills; --strict=sm_90 only where one does at
#                the architectures named (CI: the H100 and H200 this project is measured on)
# Exit status: 0; 1 as --strict says; 2 a compile failed, no report in DIR, or usage.
#   make CUDA=1 ptxas [STRICT=1 or sm_90]   (builds, then --build with the build's folder)
#   NVCC=... NVFLAGS=... scripts/ptxas_report.sh   (compiles with those flags: to try some)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

strict='' build=''
while [ $# -gt 0 ]; do
    case "$1" in
    --strict) strict=all ;;
    --strict=?*) strict=${1#--strict=} ;;
    --build)
        [ $# -gt 1 ] || { echo "ptxas_report.sh: --build needs a folder" >&2; exit 2; }
        build=$2
        shift
        ;;
    *)
        echo "ptxas_report.sh: unknown argument '$1'. HINT: --build DIR, --strict," \
            "--strict=sm_90" >&2
        exit 2
        ;;
    esac
    shift
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ptxas.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

if [ -n "$build" ]; then
    # the build's reports, as $TMP/NAME.PREC.log like the compiles below write them
    n=0
    for prec in f32 f64; do
        for f in "$build/$prec"/src/tensor/cuda/*.o.ptxas; do
            [ -f "$f" ] || continue
            cp "$f" "$TMP/$(basename "$f" .o.ptxas).$prec.log" && n=$((n + 1))
        done
    done
    if [ $n = 0 ]; then
        echo "ptxas_report.sh: no ptxas report in $build/f32 or $build/f64. HINT: make" \
            "CUDA=1 ptxas builds them" >&2
        exit 2
    fi
else
    NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    if [ ! -x "$NVCC" ]; then
        echo "ptxas_report.sh: no nvcc ($NVCC). HINT: NVCC=/path/to/nvcc, or make CUDA=1" \
            "ptxas" >&2
        exit 2
    fi
    # the build's flags less what only the objects need (-MMD -MP write .d files beside them)
    FLAGS=${NVFLAGS:--std=c++20 -O3 -gencode arch=compute_80,code=sm_80 -gencode \
arch=compute_90,code=sm_90 -DTT_WITH_CUDA -Isrc}
    # shellcheck disable=SC2086 # split into words, one a line
    FLAGS=$(printf '%s\n' $FLAGS | grep -v -x -e -MMD -e -MP | tr '\n' ' ')

    # one compile per file and precision, two at a time: ptxas's lines in $TMP/NAME.PREC.log
    # shellcheck disable=SC2317 # called through xargs and bash -c
    compile() { # FILE f32|f64
        local def='' out
        [ "$2" = f64 ] && def=-DTT_DOUBLE
        out=$TMP/$(basename "$1" .cu).$2
        # shellcheck disable=SC2086 # FLAGS and def: lists of words
        if ! "$NVCC" $FLAGS $def -Xptxas -v -c "$1" -o "$out.o" >"$out.log" 2>&1; then
            echo "ptxas_report.sh: $1 ($2) did not compile:"
            cat "$out.log"
            return 255 # xargs stops
        fi
    }
    export -f compile
    export NVCC FLAGS TMP
    for f in src/tensor/cuda/*.cu; do printf '%s f32\n%s f64\n' "$f" "$f"; done |
        xargs -P 2 -L 1 bash -c 'compile "$@"' _ >&2 || exit 2
fi

# ptxas prints, per kernel and architecture: "Compiling entry function 'NAME' for 'sm_XX'",
# then "N bytes stack frame, N bytes spill stores, N bytes spill loads" and "Used N
# registers, ..., N bytes smem" (smem only where the kernel has static shared memory)
for log in "$TMP"/*.log; do
    prec=$(basename "$log" .log)
    prec=${prec##*.}
    awk -v prec="$prec" '
        /Compiling entry function/ {
            match($0, /function '\''[^'\'']*'\''/); name = substr($0, RSTART + 10, RLENGTH - 11)
            match($0, /for '\''sm_[0-9a-z]*'\''/); arch = substr($0, RSTART + 5, RLENGTH - 6)
            stack = spst = spld = regs = smem = 0
        }
        /bytes stack frame/ {
            for (i = 1; i <= NF; i++) {
                if ($(i + 1) == "bytes" && $(i + 2) == "stack") stack = $i
                if ($(i + 2) == "spill" && $(i + 3) ~ /^stores/) spst = $i
                if ($(i + 2) == "spill" && $(i + 3) ~ /^loads/) spld = $i
            }
        }
        /Used [0-9]+ registers/ {
            for (i = 1; i <= NF; i++) {
                if ($(i + 1) ~ /^registers/) regs = $i
                if ($(i + 1) == "bytes" && $(i + 2) ~ /^smem/) smem = $i
            }
            print arch, prec, regs, stack, spst, spld, smem, name
        }' "$log"
done >"$TMP/mangled"

# names demangled, their argument lists dropped; sorted by kernel, architecture, precision
if command -v c++filt >/dev/null; then c++filt <"$TMP/mangled"; else cat "$TMP/mangled"; fi |
    sed 's/(.*//' | sort -k8 -k1,1 -k2,2 >"$TMP/rows"
row() { awk '{ printf "%-6s %-4s %4s %5s %6s %6s %6s ", $1, $2, $3, $4, $5, $6, $7
               $1 = $2 = $3 = $4 = $5 = $6 = $7 = ""; sub(/^ +/, ""); print " " $0 }'; }
echo "arch prec regs stack spillS spillL smem kernel" | row
row <"$TMP/rows"

n32=$(awk '$2 == "f32" && ($5 > 0 || $6 > 0)' "$TMP/rows" | grep -c . || true)
n64=$(awk '$2 == "f64" && ($5 > 0 || $6 > 0)' "$TMP/rows" | grep -c . || true)
echo
echo "kernels: $(wc -l <"$TMP/rows") (kernel x architecture x precision); spilling: $n32 in" \
    "float32, $n64 in float64"
if [ "$n32" -gt 0 ]; then
    echo "float32 kernels that spill (bytes stored / loaded):"
    awk '$2 == "f32" && ($5 > 0 || $6 > 0)' "$TMP/rows" | row | sed 's/^/  /'
fi
[ -n "$strict" ] || exit 0
bad=$(awk -v archs=",$strict," '$2 == "f32" && ($5 > 0 || $6 > 0) &&
          (archs == ",all," || index(archs, "," $1 ","))' "$TMP/rows" | grep -c . || true)
if [ "$bad" -gt 0 ]; then
    echo "ptxas_report.sh: $bad float32 kernel(s) spill at ${strict/all/any architecture}" \
        "(--strict). HINT: fewer live values across the kernel's loops; the rows above name" \
        "them" >&2
    exit 1
fi
exit 0
