/* bench_attention.c: the fused CUDA attention forward (tensor/cuda/attention.cu) against the
 * composition it must beat (tensor/cuda/attention_ref.cu: strided-batched cuBLAS gemms and a
 * masked-softmax kernel, the tests' reference), on the attention shapes of the bench rows, in
 * float32 at the build's matmul precision "highest". Both write out and the weights (att); no
 * dropout (the composition has none) and no padding mask. Each is timed as a median of 7
 * batches of `reps` calls, each batch ended by a read of one value (the stream's end). Prints
 * one line per shape and a JSON line per shape; exit 0 also when fused is slower (a missed
 * target is not an error), 2 on a usage error, and "SKIP: no CUDA device" with exit 0 on a
 * machine without a GPU.
 *   build/cuda/bench_attention [--reps N] [--rows "tiny small medium base gpt-small gpt-medium"]
 * (make CUDA=1 bench-attention) */
#include "bench_util.h"

#ifdef TT_DOUBLE
#error "bench_attention times float32: build it against the float32 library"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TT_WITH_CUDA
int main(void)
{
    fprintf(stderr, "bench_attention: this build has no CUDA. "
                    "HINT: make CUDA=1 bench-attention\n");
    return 2;
}
#else

#include "tensor/cuda/attention_ref.h"
#include "tensor/cuda/cuda.h"

/* The bench rows' attention: B, T, heads, d_model, causal (bench/bench_run.c's named configs;
 * base is issue 12's). */
static const struct {
    const char *name;
    int B, T, NH, d;
    bool causal;
} ROWS[] = {
    {"tiny", 32, 16, 4, 64, false},        {"small", 32, 64, 4, 128, false},
    {"medium", 16, 128, 8, 256, false},    {"base", 32, 256, 12, 768, false},
    {"gpt-small", 32, 64, 4, 128, true},   {"gpt-medium", 16, 128, 8, 256, true},
};
enum { NROWS = sizeof ROWS / sizeof ROWS[0] };

typedef void (*attn_fn)(const tt_attn_desc *a, real *out, real *att, const real *qkv);

static void fused(const tt_attn_desc *a, real *out, real *att, const real *qkv)
{
    const int D = a->NH * a->HS;
    tt_cuda_backend.attention_forward(out, att, NULL, qkv, qkv + D, qkv + 2 * D, NULL, a,
                                      (tt_rng){0}, NULL);
}

static void composed(const tt_attn_desc *a, real *out, real *att, const real *qkv)
{
    const int D = a->NH * a->HS;
    tt_cuda_attention_reference_forward(out, att, qkv, qkv + D, qkv + 2 * D, NULL, a);
}

/* the median seconds of one call over 7 batches of reps calls */
static double time_calls(attn_fn f, const tt_attn_desc *a, real *out, real *att,
                         const real *qkv, int reps)
{
    const tt_backend *be = &tt_cuda_backend;
    real one;
    double t[7];
    for (int w = 0; w < 3; w++) f(a, out, att, qkv); /* first calls: lazy set-up */
    be->to_host(&one, out, sizeof one);
    for (int k = 0; k < 7; k++) {
        double t0 = now_s();
        for (int r = 0; r < reps; r++) f(a, out, att, qkv);
        be->to_host(&one, out, sizeof one);
        t[k] = (now_s() - t0) / reps;
    }
    return median(t, 7);
}

static bool wanted(const char *list, const char *name)
{
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

int main(int argc, char **argv)
{
    int reps = 50;
    const char *rows = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) rows = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--reps N] [--rows \"tiny small ...\"] (rows: tiny small "
                    "medium base gpt-small gpt-medium)\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) {
        fprintf(stderr, "bench_attention: --reps %d: at least 1\n", reps);
        return 2;
    }
    const tt_backend *be = &tt_cuda_backend;
    char err[512];
    if (be->available(err, sizeof err)) {
        printf("SKIP: no CUDA device (%s)\n", err);
        return 0;
    }
    be->set_matmul_precision(false);
    printf("attention forward, float32, no dropout, %d calls per timing: fused kernel against "
           "cuBLAS + softmax\n", reps);
    printf("%-11s %5s %5s %4s %4s %7s  %10s  %10s  %7s  %s\n", "row", "B", "T", "NH", "HS",
           "causal", "fused us", "composed us", "speed-up", "target");
    int missed = 0;
    for (int i = 0; i < NROWS; i++) {
        if (!wanted(rows, ROWS[i].name)) continue;
        const int B = ROWS[i].B, T = ROWS[i].T, NH = ROWS[i].NH, D = ROWS[i].d, HS = D / NH;
        const tt_attn_desc a = {.B = B, .T = T, .NH = NH, .HS = HS, .ldq = 3 * D, .ldk = 3 * D,
                                .ldv = 3 * D, .ldo = D, .scale = R(1) / sqrtf((float)HS),
                                .causal = ROWS[i].causal, .p = R(0)};
        const size_t nqkv = (size_t)B * T * 3 * D, natt = (size_t)B * NH * T * T;
        real *host = tt_xmalloc(nqkv * sizeof(real));
        uint64_t s = 88172645463325252ull + (uint64_t)i;
        for (size_t k = 0; k < nqkv; k++) { /* xorshift: uniform in [-1, 1) */
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            host[k] = (real)((double)(s >> 11) / 4503599627370496.0 - 1.0);
        }
        real *qkv = be->alloc(nqkv * sizeof(real)), *att = be->alloc(natt * sizeof(real));
        real *out = be->alloc((size_t)B * T * D * sizeof(real));
        be->from_host(qkv, host, nqkv * sizeof(real));
        double tf = time_calls(fused, &a, out, att, qkv, reps);
        double tc = time_calls(composed, &a, out, att, qkv, reps);
        bool pass = tf < tc;
        missed += !pass;
        printf("%-11s %5d %5d %4d %4d %7s  %10.1f  %10.1f  %7.2fx  %s\n", ROWS[i].name, B, T, NH,
               HS, a.causal ? "yes" : "no", tf * 1e6, tc * 1e6, tc / tf, pass ? "PASS" : "FAIL");
        printf("{\"row\": \"%s\", \"fused_us\": %.2f, \"composed_us\": %.2f, \"speedup\": %.3f}\n",
               ROWS[i].name, tf * 1e6, tc * 1e6, tc / tf);
        be->free(qkv);
        be->free(out);
        be->free(att);
        free(host);
    }
    printf("fused faster on every row: %s\n", missed ? "no" : "yes");
    return 0;
}

#endif
