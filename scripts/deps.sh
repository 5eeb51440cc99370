#!/usr/bin/env bash
# deps.sh install|ensure: the Debian packages the build and the tests need.
#   install: apt-get install them (as root), else print the command and fail.
#   ensure:  do nothing when all are installed; otherwise behave as install.
set -euo pipefail

PACKAGES=(gcc make pkg-config libopenblas-dev libcjson-dev check)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

mode=${1:-ensure}
if [ "$mode" = ensure ] && [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all packages installed: ${PACKAGES[*]}"
    exit 0
fi

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: run as root:  apt-get update && $cmd" >&2
    exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
