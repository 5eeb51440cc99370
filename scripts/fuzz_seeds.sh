#!/usr/bin/env bash
# fuzz_seeds.sh HARNESS DIR: the seed checkpoints of the checkpoint fuzzer, from real runs:
# HARNESS (build/fuzz/fuzz_checkpoint) with TT_FUZZ_SEEDS trains its own tiny runs (a tag
# model and a language model, d_model 8, one layer, a few KB each) with ./train's main, and
# their checkpoints are copied into DIR as tag_epoch_001.safetensors and lm_epoch_001.safetensors.
set -euo pipefail
harness=${1:?usage: fuzz_seeds.sh HARNESS DIR}
dest=${2:?usage: fuzz_seeds.sh HARNESS DIR}
# a fixed folder: the checkpoints' configs name their data by absolute path, so that a rerun
# writes the same bytes
tmp=/tmp/tt_fuzz_seeds
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
TT_FUZZ_SEEDS=$tmp "$harness" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
mkdir -p "$dest"
for run in tag lm; do
    for f in "$tmp/$run"/checkpoints/*.safetensors; do
        cp "$f" "$dest/${run}_$(basename "$f")"
        echo "fuzz-seeds: $dest/${run}_$(basename "$f") ($(stat -c %s "$f") bytes)"
    done
done
