#!/usr/bin/env bash
# deps.sh install|ensure: the Debian packages the build and the tests need.
#   install: apt-get install them and the optional ones (as root), else print the command and
#            fail.
#   ensure:  do nothing when the required ones are installed; otherwise install those.
# Optional: chromium, for the headless check of the attention viewer (make test skips that check
# with a message when it is missing).
set -euo pipefail

PACKAGES=(gcc make pkg-config libopenblas-dev libcjson-dev check)
OPTIONAL=(chromium)

mode=${1:-ensure}
[ "$mode" = install ] && PACKAGES+=("${OPTIONAL[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

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
