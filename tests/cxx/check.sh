#!/bin/sh
# check.sh: `make header-check`. The headers a CUDA file includes compile as C++ (g++, float32
# and float64) and give C linkage (no mangled name among the object's references); philox.h and
# kernel_math.h compile as device code (nvcc, kernels calling them). Each part is skipped, with
# one line, when its compiler is absent, so CI machines without CUDA still run the C++ part.
# Nothing is kept: the objects go to a temporary folder. Usage: check.sh [CXX [NVCC]]
set -eu
CXX=${1:-g++}
NVCC=${2:-nvcc}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CXXFLAGS="-std=c++17 -Isrc -Wall -Wextra -Werror"

if command -v "$CXX" >/dev/null 2>&1; then
    for prec in "" -DTT_DOUBLE; do
        $CXX $CXXFLAGS $prec -c -o "$tmp/headers.o" "$dir/headers.cc"
        if nm -u "$tmp/headers.o" | grep ' _Z'; then
            echo "header-check: C++ names above: a header lacks its extern \"C\" guard" >&2
            exit 1
        fi
    done
    echo "header-check: C++ ($CXX): headers compile, C linkage, float32 and float64"
else
    echo "header-check: no $CXX, C++ check skipped"
fi

if command -v "$NVCC" >/dev/null 2>&1; then
    for prec in "" -DTT_DOUBLE; do
        # nvcc's own warnings only: the host compiler's on these headers are g++'s part above,
        # and its warnings on nvcc's generated stubs vary with the versions
        "$NVCC" -x cu -c -Isrc $prec -Werror all-warnings -o "$tmp/philox_kernel.o" \
            "$dir/philox_kernel.cu"
    done
    echo "header-check: CUDA ($NVCC): philox.h and kernel_math.h compile in __global__ kernels"
else
    echo "header-check: no $NVCC, CUDA check skipped"
fi
