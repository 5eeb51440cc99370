/* bench_attention.c: the fused CUDA attention (tensor/cuda/attention.cu, attention_tc.cu,
 * attention_mma.cu) against the composition it must beat (tensor/cuda/attention_ref.cu:
 * strided-batched cuBLAS gemms and a masked-softmax kernel, the tests' reference), on the
 * attention shapes of the bench rows, in float32. Each of the fused kernels' arithmetics
 * (cuda.h: the float cores with either staging, three TF32 products, one TF32 product, the last
 * two again through mma.sync) is timed forward and backward (dq, dk, dv); its forward is
 * compared with the composition at the matmul precision it stands for (the float cores at
 * both, 3xTF32 at "highest", cuBLAS's default math; TF32 at "high", cuBLAS's TF32). The
 * target: at each precision, the arithmetic set_matmul_precision picks is faster than the
 * composition. No dropout (the composition has none) and no padding mask. Each time is the
 * median of 7 batches of `reps` calls, each batch ended by a read of one value (the stream's
 * end). Beside each time, the blocks of the forward, dq and dkv kernels one SM holds at once
 * (blocks/SM, what their registers and shared memory allow; the tilings were made for 2, the
 * mma.sync kernels' blocks of 128 threads for 2 to 4; "-" where the runtime cannot say): with
 * the grid (B NH T/32 blocks, T/64 for mma.sync), how many rounds a kernel takes. Prints a
 * line and a JSON line per shape and arithmetic; exit 0 also when a target is missed (that is
 * not an error), 2 on a usage error, and "SKIP: no CUDA device" with exit 0 without a GPU.
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

/* a shape's device buffers: q, k, v as column blocks of qkv (B,T,3D), their gradients in dqkv
 * alike; out, dout (B,T,D); att (B,NH,T,T); the backward's scratch */
typedef struct bufs {
    real *qkv, *dqkv, *out, *dout, *att, *scratch;
} bufs;

typedef void (*attn_fn)(const tt_attn_desc *a, const bufs *m);

static void fused(const tt_attn_desc *a, const bufs *m)
{
    const int D = a->NH * a->HS;
    tt_cuda_backend.attention_forward(m->out, m->att, NULL, m->qkv, m->qkv + D, m->qkv + 2 * D,
                                      NULL, a, (tt_rng){0}, NULL);
}

static void fused_backward(const tt_attn_desc *a, const bufs *m)
{
    const int D = a->NH * a->HS;
    tt_cuda_backend.attention_backward(m->dqkv, m->dqkv + D, m->dqkv + 2 * D, m->dout, m->att,
                                       NULL, m->qkv, m->qkv + D, m->qkv + 2 * D, a, m->scratch);
}

static void composed(const tt_attn_desc *a, const bufs *m)
{
    const int D = a->NH * a->HS;
    tt_cuda_attention_reference_forward(m->out, m->att, m->qkv, m->qkv + D, m->qkv + 2 * D, NULL,
                                        a);
}

/* the median seconds of one call over 7 batches of reps calls */
static double time_calls(attn_fn f, const tt_attn_desc *a, const bufs *m, int reps)
{
    const tt_backend *be = &tt_cuda_backend;
    real one;
    double t[7];
    for (int w = 0; w < 3; w++) f(a, m); /* first calls: lazy set-up */
    be->to_host(&one, m->out, sizeof one);
    for (int k = 0; k < 7; k++) {
        double t0 = now_s();
        for (int r = 0; r < reps; r++) f(a, m);
        be->to_host(&one, m->out, sizeof one);
        t[k] = (now_s() - t0) / reps;
    }
    return median(t, 7);
}

/* the fused kernels' arithmetics, each with the precision it is compared at */
static const struct {
    tt_cuda_attn_math math;
    const char *name;
    bool high;
} MATHS[] = {{TT_CUDA_ATTN_WIDE, "wide", false},
             {TT_CUDA_ATTN_PIPE, "pipelined", false},
             {TT_CUDA_ATTN_TF32X3, "3xTF32", false},
             {TT_CUDA_ATTN_MMA3, "mma-3xTF32", false},
             {TT_CUDA_ATTN_TF32, "TF32", true},
             {TT_CUDA_ATTN_MMA, "mma-TF32", true},
             {TT_CUDA_ATTN_WIDE, "wide", true},
             {TT_CUDA_ATTN_PIPE, "pipelined", true}};

/* q, k, v and dout uniform in [-1, 1) (xorshift from seed) */
static void fill_uniform(real *x, size_t n, uint64_t s)
{
    for (size_t k = 0; k < n; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[k] = (real)((double)(s >> 11) / 4503599627370496.0 - 1.0);
    }
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
    tt_cuda_attn_math picked[2]; /* what set_matmul_precision picks: highest, high */
    for (int high = 1; high >= 0; high--) {
        be->set_matmul_precision(high);
        picked[high] = tt_cuda_attention_math();
    }
    printf("attention, float32, no dropout, %d calls per timing: the fused kernels forward and "
           "backward, the forward against cuBLAS + softmax at the same matmul precision\n",
           reps);
    printf("%-11s %3s %4s %3s %3s %6s  %-10s %-7s %9s %11s %8s %9s %9s  %s\n", "row", "B", "T",
           "NH", "HS", "causal", "math", "prec", "fused us", "composed us", "speed-up", "bwd us",
           "blocks/SM", "target");
    int missed = 0;
    for (int i = 0; i < NROWS; i++) {
        if (!wanted(rows, ROWS[i].name)) continue;
        const int B = ROWS[i].B, T = ROWS[i].T, NH = ROWS[i].NH, D = ROWS[i].d, HS = D / NH;
        const tt_attn_desc a = {.B = B, .T = T, .NH = NH, .HS = HS, .ldq = 3 * D, .ldk = 3 * D,
                                .ldv = 3 * D, .ldo = D, .scale = R(1) / sqrtf((float)HS),
                                .causal = ROWS[i].causal, .p = R(0)};
        const size_t nqkv = (size_t)B * T * 3 * D, natt = (size_t)B * NH * T * T;
        const size_t nout = (size_t)B * T * D;
        real *host = tt_xmalloc(nqkv * sizeof(real));
        bufs m = {.qkv = be->alloc(nqkv * sizeof(real)), .dqkv = be->alloc(nqkv * sizeof(real)),
                  .out = be->alloc(nout * sizeof(real)), .dout = be->alloc(nout * sizeof(real)),
                  .att = be->alloc(natt * sizeof(real)),
                  .scratch = be->alloc(be->attention_scratch(&a, true))};
        fill_uniform(host, nqkv, 88172645463325252ull + (uint64_t)i);
        be->from_host(m.qkv, host, nqkv * sizeof(real));
        fill_uniform(host, nout, 2463534242ull + (uint64_t)i);
        be->from_host(m.dout, host, nout * sizeof(real));
        be->zero(m.dqkv, nqkv * sizeof(real));
        double tc[2]; /* the composition at highest, high */
        for (int high = 0; high <= 1; high++) {
            be->set_matmul_precision(high);
            tc[high] = time_calls(composed, &a, &m, reps);
        }
        for (size_t k = 0; k < sizeof MATHS / sizeof MATHS[0]; k++) {
            const bool high = MATHS[k].high;
            be->set_matmul_precision(high);
            tt_cuda_attention_set_math(MATHS[k].math);
            double tf = time_calls(fused, &a, &m, reps);
            double tb = time_calls(fused_backward, &a, &m, reps);
            const bool target = picked[high] == MATHS[k].math, pass = tf < tc[high];
            missed += target && !pass;
            int res[3]; /* forward, dq, dkv: after their launches above, as it asks */
            tt_cuda_attention_residency(&a, res);
            char blocks[32] = "-";
            if (res[0] && res[1] && res[2])
                snprintf(blocks, sizeof blocks, "%d/%d/%d", res[0], res[1], res[2]);
            printf("%-11s %3d %4d %3d %3d %6s  %-10s %-7s %9.1f %11.1f %7.2fx %9.1f %9s  %s\n",
                   ROWS[i].name, B, T, NH, HS, a.causal ? "yes" : "no", MATHS[k].name,
                   high ? "high" : "highest", tf * 1e6, tc[high] * 1e6, tc[high] / tf, tb * 1e6,
                   blocks, !target ? "-" : pass ? "PASS" : "FAIL");
            printf("{\"row\": \"%s\", \"math\": \"%s\", \"precision\": \"%s\", "
                   "\"fused_us\": %.2f, \"composed_us\": %.2f, \"speedup\": %.3f, "
                   "\"backward_us\": %.2f, \"blocks_per_sm\": [%d, %d, %d], \"picked\": %s}\n",
                   ROWS[i].name, MATHS[k].name, high ? "high" : "highest", tf * 1e6,
                   tc[high] * 1e6, tc[high] / tf, tb * 1e6, res[0], res[1], res[2],
                   target ? "true" : "false");
        }
        be->set_matmul_precision(false);
        be->free(m.qkv);
        be->free(m.dqkv);
        be->free(m.out);
        be->free(m.dout);
        be->free(m.att);
        be->free(m.scratch);
        free(host);
    }
    printf("the picked fused kernels faster on every row at both precisions: %s\n",
           missed ? "no" : "yes");
    return 0;
}

#endif
