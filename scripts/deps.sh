#!/usr/bin/env bash
# deps.sh install|ensure|viewer|mpi|emu|fuzz: the Debian packages the build and the tests need.
#   install: apt-get install the missing required packages (as root), else print the command
#            and fail; then try the optional ones (a failure there is only a warning).
#   ensure:  do nothing when the required ones are installed; otherwise install those.
#   viewer:  the optional ones only, installed when missing and possible (scripts/check_html.sh
#            calls it before it would skip); exit 0 when they are there at the end, else 1 with
#            the reason on stderr.
#   mpi:     Open MPI (openmpi-bin, libopenmpi-dev) for make MPI=1 and its tests (mpirun),
#            installed when missing (as root; openmpi-bin depends on the ssh client its
#            launcher looks for), else the apt-get line and exit 1.
#   emu:     g++ and python3 for make CUDA_EMU=1 (tests/cuda_emu: prep.py rewrites the .cu
#            files, g++ compiles them), installed when missing (as root), else the apt-get
#            line and exit 1.
#   fuzz:    clang and its runtime libraries (libFuzzer, the sanitizers) for make fuzz,
#            installed when missing (as root), else the apt-get line and exit 1. On Debian 12
#            the clang package alone lacks libFuzzer: it is in libclang-rt-14-dev, which
#            libclang-rt-dev names, and clang only recommends it.
# Optional: chromium and two fonts (Latin, Korean), for the headless check of the attention
# viewer and its screenshot (make test).
set -euo pipefail

PACKAGES=(gcc make pkg-config libopenblas-dev libcjson-dev check)
OPTIONAL=(chromium fonts-liberation fonts-nanum)
FUZZ=(clang libclang-rt-dev)
MPI=(openmpi-bin libopenmpi-dev)
EMU=(g++ python3)

missing_of() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
    done
}

mode=${1:-ensure}
case $mode in
install | ensure | viewer | fuzz | mpi | emu) ;;
*)
    echo "usage: $0 install|ensure|viewer|fuzz|mpi|emu" >&2
    exit 2
    ;;
esac

# A machine with the packages bundled (the GPU machine: ../shared/tools/device-bundle.sh's
# env.sh sets TT_DEPS_BUNDLED=1) has no dpkg entries for them and no package access: trust
# pkg-config, and never call apt-get there.
if [ "${TT_DEPS_BUNDLED:-0}" = 1 ]; then
    if [ "$mode" = viewer ]; then
        echo "deps: TT_DEPS_BUNDLED=1: no package access here; chromium not installed" >&2
        exit 1
    fi
    if pkg-config --exists openblas check libcjson; then
        exit 0
    fi
    echo "deps: TT_DEPS_BUNDLED=1 but pkg-config finds no openblas, check or libcjson." \
         "HINT: source .device/env.sh (made by ../shared/tools/device-bundle.sh)" >&2
    exit 1
fi
if [ "$mode" = fuzz ] || [ "$mode" = mpi ] || [ "$mode" = emu ]; then
    if [ "$mode" = fuzz ]; then
        what="make fuzz"
        mapfile -t missing < <(missing_of "${FUZZ[@]}")
    elif [ "$mode" = mpi ]; then
        what="make MPI=1"
        mapfile -t missing < <(missing_of "${MPI[@]}")
    else
        what="make CUDA_EMU=1"
        mapfile -t missing < <(missing_of "${EMU[@]}")
    fi
    [ ${#missing[@]} -eq 0 ] && exit 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "deps: $what needs ${missing[*]}; run as root:  apt-get update &&" \
             "apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || echo "deps: WARNING: apt-get update failed" >&2
    apt-get install -y --no-install-recommends "${missing[@]}"
    exit 0
fi
missing=()
[ "$mode" = viewer ] || mapfile -t missing < <(missing_of "${PACKAGES[@]}")
optional=()
[ "$mode" = ensure ] || mapfile -t optional < <(missing_of "${OPTIONAL[@]}")

if [ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then
    [ "$mode" = install ] && echo "deps: all packages installed: ${PACKAGES[*]} ${OPTIONAL[*]}"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    if [ ${#missing[@]} -gt 0 ]; then
        echo "deps: missing Debian packages: ${missing[*]}" >&2
        echo "deps: run as root:  apt-get update && apt-get install -y --no-install-recommends ${missing[*]} ${optional[*]}" >&2
        exit 1
    fi
    echo "deps: optional packages missing: ${optional[*]}; not root, so not installed" \
         "(as root: apt-get install -y ${optional[*]})" >&2
    [ "$mode" = viewer ] && exit 1
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || echo "deps: WARNING: apt-get update failed" >&2
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    apt-get install -y --no-install-recommends "${missing[@]}"
fi
if [ ${#optional[@]} -gt 0 ]; then
    echo "deps: installing the optional ${optional[*]}"
    if ! apt-get install -y --no-install-recommends "${optional[@]}"; then
        echo "deps: WARNING: could not install ${optional[*]};" \
             "make test will skip the viewer check" >&2
        [ "$mode" = viewer ] && exit 1
    fi
fi
exit 0
