#!/usr/bin/env bash
# check_html.sh INDEX_HTML SCREENSHOT_PNG: opens the attention viewer (RUN/attention/index.html)
# in headless Chromium, as a reader would from file://, and fails unless its script finished
# (<body data-tt-ready="1">) without an error (no data-tt-error, set by window.onerror and
# unhandledrejection); then saves a 1400x1000 screenshot and fails if it is missing or empty.
# Without chromium (or chromium-browser) it first tries to install it (scripts/deps.sh viewer:
# as root, with apt-get); only when that fails does it skip, saying loudly why, and pass.
# Exit status: 0 pass or skip, 1 the page failed, 2 usage.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 INDEX_HTML SCREENSHOT_PNG" >&2
    exit 2
fi
html=$1
png=$2

find_browser() {
    local b
    for b in chromium chromium-browser; do
        if command -v "$b" >/dev/null 2>&1; then
            command -v "$b"
            return
        fi
    done
}
browser=$(find_browser)
if [ -z "$browser" ]; then
    echo "check_html: no chromium on PATH; trying to install it (scripts/deps.sh viewer)"
    why="it could not be installed (the reason is above)"
    if "$(dirname "$0")/deps.sh" viewer; then
        why="its package is installed, but neither chromium nor chromium-browser is on PATH"
    fi
    browser=$(find_browser)
fi
if [ -z "$browser" ]; then
    {
        echo "**********************************************************************"
        echo "SKIP: the attention viewer was NOT checked in a browser: no chromium,"
        echo "and $why."
        echo "As root: apt-get install chromium fonts-liberation fonts-nanum"
        echo "**********************************************************************"
    } >&2
    exit 0
fi
if [ ! -s "$html" ]; then
    echo "check_html: $html: missing or empty" >&2
    exit 1
fi

url="file://$(realpath "$html")"
mkdir -p "$(dirname "$png")"
png=$(realpath "$png")
rm -f "$png"
# A throwaway profile: no state shared with a desktop session or another check running beside.
profile=$(mktemp -d /tmp/check_html.XXXXXX)
trap 'rm -rf "$profile"' EXIT
flags=(--headless=new --no-sandbox --disable-gpu --allow-file-access-from-files
       --virtual-time-budget=5000 --user-data-dir="$profile" --no-first-run
       --no-default-browser-check --disable-extensions --hide-scrollbars)
run() { timeout 120 "$browser" "${flags[@]}" "$@"; }

# 1. The DOM after the scripts ran (Chromium's own log goes to a file, shown on failure).
if ! run --dump-dom "$url" >"$profile/dom.html" 2>"$profile/log.txt"; then
    echo "check_html: $html: chromium --dump-dom failed:" >&2
    tail -n 20 "$profile/log.txt" >&2
    exit 1
fi
body=$(grep -o '<body[^>]*>' "$profile/dom.html" | head -n 1 || true)
if [ -z "$body" ]; then
    echo "check_html: $html: the dumped DOM has no <body>; chromium said:" >&2
    tail -n 20 "$profile/log.txt" >&2
    exit 1
fi
if [[ $body == *data-tt-error=* ]]; then
    why=$(sed -n 's/.*data-tt-error="\([^"]*\)".*/\1/p' <<<"$body")
    echo "check_html: $html: the page's script failed: $why" >&2
    exit 1
fi
if [[ $body != *'data-tt-ready="1"'* ]]; then
    echo "check_html: $html: the page never set data-tt-ready=\"1\" (body: $body)" >&2
    echo "HINT: open it in a browser and look at the console" >&2
    exit 1
fi

# 2. The screenshot.
run --screenshot="$png" --window-size=1400,1000 "$url" >/dev/null 2>"$profile/log.txt" || true
if [ ! -s "$png" ] || [ "$(head -c 4 "$png" | tail -c 3)" != "PNG" ]; then
    echo "check_html: $png: no screenshot (missing, empty or not a PNG); chromium said:" >&2
    tail -n 20 "$profile/log.txt" >&2
    exit 1
fi
echo "check_html: $html rendered without errors; screenshot $png ($(wc -c <"$png") bytes)"
