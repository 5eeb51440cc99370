# json.sh: sourced by the bench scripts (run_step_bench.sh, gpu_bench.sh, blas_choice.sh) for
# the one reader they share of the JSON lines bench_step and bench_torch.py print.
# jget KEY JSON: the value of a flat key ("x": 1.5 or "x":"s") in a one-line JSON object, its
# first occurrence; empty for a missing key or null.
jget() {
    printf '%s\n' "$2" | sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -n 1 |
        sed 's/^null$//'
}
