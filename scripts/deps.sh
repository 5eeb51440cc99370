#!/usr/bin/env bash
# deps.sh install|ensure: the Debian packages the build and the tests need.
#   install: apt-get install the missing required packages (as root), else print the command
#            and fail; then try the optional ones (a failure there is only a warning).
#   ensure:  do nothing when the required ones are installed; otherwise install those.
# Optional: chromium and two fonts (Latin, Korean), for the headless check of the attention
# viewer and its screenshot (make test skips that check
# with a message when it is missing).
set -euo pipefail

PACKAGES=(gcc make pkg-config libopenblas-dev libcjson-dev check)
OPTIONAL=(chromium fonts-liberation fonts-nanum)

missing_of() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
    done
}

mode=${1:-ensure}

# A machine with the packages bundled (the GPU machine: ../shared/tools/device-bundle.sh's
# env.sh sets TT_DEPS_BUNDLED=1) has no dpkg entries for them and no package access: trust
# pkg-config, and never call apt-get there.
if [ "${TT_DEPS_BUNDLED:-0}" = 1 ]; then
    if pkg-config --exists openblas check libcjson; then
        exit 0
    fi
    echo "deps: TT_DEPS_BUNDLED=1 but pkg-config finds no openblas, check or libcjson." \
         "HINT: source .device/env.sh (made by ../shared/tools/device-bundle.sh)" >&2
    exit 1
fi
mapfile -t missing < <(missing_of "${PACKAGES[@]}")
optional=()
[ "$mode" = install ] && mapfile -t optional < <(missing_of "${OPTIONAL[@]}")

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
    echo "deps: optional packages missing: ${optional[*]} (as root: apt-get install -y ${optional[*]})"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    apt-get install -y --no-install-recommends "${missing[@]}"
fi
if [ ${#optional[@]} -gt 0 ]; then
    echo "deps: installing the optional ${optional[*]}"
    apt-get install -y --no-install-recommends "${optional[@]}" ||
        echo "deps: WARNING: could not install ${optional[*]}; make test will skip the viewer check" >&2
fi
