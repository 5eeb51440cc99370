#!/usr/bin/env bash
# docs.sh fill|check TRAIN DOCS_FIGURES: the figures and pictures of README.md and docs/*.md
# from fresh runs.
#   fill   (make docs): trains every run the pages' marked figures name (configs/<run>.json,
#          into build/docs/<run>), writes the figures into the pages (scripts/docs_figures.c),
#          copies the pictures into docs/img/ and takes the viewer's screenshot
#   check  (make docs-check, part of make test): the same runs, then fails when a figure of a
#          page or a picture of docs/img/ differs from what this build gives
# Runs are pinned to 2 threads. Our float32 sums do not depend on OpenBLAS's kernel set (the
# gemms are our own tiles, the same bits with AVX2 or AVX-512); PyTorch's do, so OpenBLAS is
# pinned to its Haswell (AVX2) kernels for the PyTorch figures' sake, which any x86-64 machine
# with AVX2 and FMA runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ] || { [ "$1" != fill ] && [ "$1" != check ]; }; then
    echo "usage: $0 fill|check TRAIN DOCS_FIGURES" >&2
    exit 2
fi
mode=$1 train=$2 figures=$3
out=build/docs
export OPENBLAS_CORETYPE=Haswell

# The pages: README.md and every docs/*.md or tests/README.md that marks a figure (the config
# reference and the suite list come from the code and name no run). The PyTorch figures run
# scripts/torch_eval.py on a run's checkpoint, with Debian's python3-torch: without it they are
# reported as not checked, as make test must not need PyTorch. The pictures: every
# docs/img/RUN_REST.svg a page shows (docs/img/... from README.md, img/... from docs/) comes from
# build/docs/RUN/REST.svg or build/docs/RUN/attention/REST.svg (tiny_epoch_008.svg:
# tiny/attention/epoch_008.svg).
pages="README.md $( { grep -l '<!--fig ' docs/*.md tests/README.md 2>/dev/null || true; } |
                    tr '\n' ' ')"
pictures=$( { grep -o 'docs/img/[A-Za-z0-9_.-]*\.svg' README.md || true
              { grep -ho '(img/[A-Za-z0-9_.-]*\.svg' docs/*.md 2>/dev/null || true; } |
                  sed 's|^(|docs/|'
            } | sed 's|docs/img/||' | sort -u)
needed=$(for page in $pages; do "$figures" runs "$page" "$out"; done)
runs=$( { printf '%s\n' $needed; for p in $pictures; do echo "${p%%_*}"; done; } | sort -u)
mkdir -p "$out"
for run in $runs; do
    echo "docs: ./$train configs/$run.json -> $out/$run"
    rm -rf "${out:?}/$run"
    "./$train" "configs/$run.json" --set threads=2 --set output.dir="\"$out/$run\"" \
        >"$out/$run.log"
done

status=0
for page in $pages; do "$figures" "$mode" "$page" "$out" || status=1; done
for name in $pictures; do
    run=${name%%_*} rest=${name#*_}
    src=$out/$run/$rest
    [ -f "$src" ] || src=$out/$run/attention/$rest
    if [ ! -f "$src" ]; then
        echo "docs: a page shows docs/img/$name, and no run here writes $run/$rest" >&2
        status=1
    elif [ "$mode" = fill ]; then
        cp "$src" "docs/img/$name"
    elif ! cmp -s "$src" "docs/img/$name"; then
        echo "STALE: docs/img/$name differs from $src (make docs rewrites it)"
        status=1
    fi
done
if [ "$mode" = fill ]; then
    scripts/check_html.sh "$out/tiny/attention/index.html" docs/img/viewer.png
    echo "docs: the figures of $pages and docs/img/ rewritten from $out; look at the pictures"
elif [ $status -ne 0 ]; then
    echo "docs-check: a page ($pages) or docs/img/ is stale: run make docs, look, commit" >&2
fi
exit $status
