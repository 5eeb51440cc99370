#!/bin/sh
# check_layers.sh [ROOT]: the include rules of src/ (make check-layers, part of make test).
#   1. Floors: tensor < autograd < nn < train. A file includes only its own floor or lower ones
#      (src/tensor/x.c may not include "nn/...").
#   2. Nothing above src/tensor includes a CUDA, cuBLAS, cuRAND or NCCL header, nor one of
#      src/tensor/cuda/: the device boundary of tensor/backend.h (the GPU's side of a
#      data-parallel sum is tensor/comm.h's).
#   3. No circle between modules. A module is a folder's NAME.c / NAME.cu with NAME.h / NAME.cuh;
#      module A needs module B when a file of A includes B's header, directly or through headers
#      that have no source of their own (config_keys.h counts as config's). A circle (A needs B
#      needs ... A) is an error. Only includes are seen: two files that call each other through
#      one shared header (cpu.h declares every CPU kernel) are not a circle here.
# Prints each violation as FILE:LINE: what, then a summary; exit status 1 when there is one.
#   check_layers.sh --self-test   the rules on a made-up tree with one violation of each kind
#                                 (each must be found) and one clean tree (nothing found)
set -u

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    mk() { mkdir -p "$(dirname "$tmp/$1/$2")" && printf '%s\n' "$3" >"$tmp/$1/$2"; }
    # clean: train uses nn uses tensor, a header-only header inside a module
    mk ok src/tensor/t.c '#include "tensor/t.h"'
    mk ok src/tensor/t.h '#include <stdio.h>'
    mk ok src/nn/n.c '#include "nn/n.h"'
    mk ok src/nn/n.h '#include "tensor/t.h"'
    mk ok src/train/r.c '#include "train/r_keys.h"'
    mk ok src/train/r.h '#include "nn/n.h"'
    mk ok src/train/r_keys.h '#include "train/r.h"'
    # one violation each: an upward include, a CUDA header above tensor, a circle
    mk up src/tensor/t.c '#include "train/r.h"'
    mk up src/train/r.h '#include <stdio.h>'
    mk cuda src/nn/n.c '#include <cuda_runtime_api.h>'
    mk cycle src/train/p.c '#include "train/q.h"'
    mk cycle src/train/p.h ''
    mk cycle src/train/q.c '#include "train/p.h"'
    mk cycle src/train/q.h ''
    fail=0
    if ! "$0" "$tmp/ok" >/dev/null 2>&1; then
        echo "check_layers self-test: a clean tree failed" >&2
        fail=1
    fi
    for t in up cuda cycle; do
        if "$0" "$tmp/$t" >/dev/null 2>&1; then
            echo "check_layers self-test: the $t violation was not found" >&2
            fail=1
        fi
    done
    [ $fail = 0 ] && echo "check_layers self-test: 3 violations found, the clean tree passes"
    exit $fail
fi

root=${1:-.}
cd "$root" || exit 2
[ -d src ] || { echo "check_layers.sh: no src/ under $root" >&2; exit 2; }

# One line per include: FILE<TAB>LINE<TAB>"path" or <path>, for every source and header.
find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort |
while IFS= read -r f; do
    awk -v f="$f" '
        /^[ \t]*#[ \t]*include[ \t]*["<]/ {
            s = $0
            sub(/^[ \t]*#[ \t]*include[ \t]*/, "", s)
            q = substr(s, 1, 1); close_q = q == "<" ? ">" : "\""
            rest = substr(s, 2); e = index(rest, close_q)
            if (e > 0) printf "%s\t%d\t%s%s\n", f, FNR, q, substr(rest, 1, e - 1)
        }
        END { printf "%s\t0\t\n", f }  # every file, even one without includes
    ' "$f"
done | awk -F '\t' '
    # the floor of a file (src/tensor/...) or of an include ("tensor/..."); -1: none
    function floor_of(p,   a, top) {
        split(p, a, "/"); top = p ~ /^src\// ? a[2] : a[1]
        return top in FL ? FL[top] : -1
    }
    function base(p) { sub(/\.(c|h|cu|cuh)$/, "", p); return p }
    # the modules module m needs, through header-only headers: into NEED[m, n]
    function reach(m, file,   k, t, tb) {
        if ((m, file) in SEEN) return
        SEEN[m, file] = 1
        for (k = 1; k <= NINC[file]; k++) {
            t = INC[file, k]
            if (!(t in EXISTS)) continue
            tb = base(t)
            if (tb == m) continue
            if (tb in HASSRC) NEED[m, tb] = 1
            else reach(m, t)
        }
    }
    function dfs(m,   n, i) {
        COLOR[m] = 1; STACK[++SP] = m
        for (n in MODS) {
            if (!((m, n) in NEED)) continue
            if (COLOR[n] == 1) {
                path = n
                for (i = SP; i >= 1 && STACK[i] != n; i--) path = STACK[i] " -> " path
                path = n " -> " path
                if (!(path in CYCLES)) {
                    CYCLES[path] = 1; BAD++
                    printf "%s: a circle of modules: %s\n", n, path
                }
            } else if (COLOR[n] == 0) dfs(n)
        }
        SP--; COLOR[m] = 2
    }
    BEGIN {
        FL["tensor"] = 0; FL["autograd"] = 1; FL["nn"] = 2; FL["train"] = 3
        CUDA_MSG = "CUDA headers stay under src/tensor (tensor/backend.h, tensor/comm.h)"
    }
    {
        file = $1; line = $2; inc = $3
        EXISTS[file] = 1; FILES[file] = 1
        if (file ~ /\.(c|cu)$/) HASSRC[base(file)] = 1
        MODS[base(file)] = 1
        if (line == 0) next
        q = substr(inc, 1, 1); p = substr(inc, 2)
        NINCS++
        fl = floor_of(file)
        if (q == "\"") {
            INC[file, ++NINC[file]] = "src/" p
            tf = floor_of(p)
            if (tf > fl && fl >= 0) {
                printf "%s:%d: includes \"%s\", of a higher floor (tensor < autograd < nn < train)\n",
                       file, line, p
                BAD++
            }
            if (file !~ /^src\/tensor\// && p ~ /^tensor\/cuda\//) {
                printf "%s:%d: includes \"%s\": %s\n", file, line, p, CUDA_MSG
                BAD++
            }
        } else if (file !~ /^src\/tensor\// && p ~ /^(cuda|cublas|curand|nccl)/) {
            printf "%s:%d: includes <%s>: %s\n", file, line, p, CUDA_MSG
            BAD++
        }
    }
    END {
        for (f in FILES) reach(base(f), f)
        for (m in MODS) COLOR[m] = 0
        for (m in MODS) if (COLOR[m] == 0) dfs(m)
        n = 0; for (f in FILES) n++
        if (BAD) { printf "check-layers: %d violation(s) in %d files\n", BAD, n; exit 1 }
        printf "check-layers: %d files, %d includes: floors kept, no CUDA header above " \
               "src/tensor, no circle\n", n, NINCS
    }
'
