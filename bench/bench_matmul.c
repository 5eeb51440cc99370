/* bench_matmul.c: GFLOP/s of the tt_matmul op against raw cblas_sgemm, same run, same inputs.
 * For every projection, FFN, output-head and per-head attention gemm of the tiny, small and
 * medium configs, at 1 and 2 threads, it times our op through a real graph (leaf vars,
 * tt_matmul, tt_graph_reset per call, as a training step does: our pool, OpenBLAS at one thread
 * per block) and raw cblas_sgemm calls with OpenBLAS's own threads, raw rounds first (see
 * measure). Each shape is first checked: ours == raw, and raw == a float64 loop on sampled
 * entries; a mismatch exits 1. Options: --quick --no-grad --verbose --config NAME; see
 * bench/README.md. */
#include "autograd/ops.h"

#include "bench_util.h"
#include "train/run/blas_env.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef TT_DOUBLE
#error "bench_matmul compares against cblas_sgemm: build it against the float32 library"
#endif

typedef struct config {
    const char *name;
    int B, T, d, h, d_ff, V;
} config;

static const config CONFIGS[] = {
    {"tiny", 32, 16, 64, 4, 256, 64},
    {"small", 32, 64, 128, 4, 512, 256},
    {"medium", 16, 128, 256, 8, 1024, 1024},
};

/* One gemm: C (M,N) = A (M,K) op(B) repeated `batch` times (batch > 1 only for attention). */
typedef struct bench_case {
    const char *config, *name;
    int M, N, K, batch;
    bool tb;
    bool proj;               /* projection / FFN / head: counted in the acceptance minimum */
    tt_shape ashape, bshape; /* what our op sees */
    real *A, *B, *Craw;      /* A (batch,M,K), B (batch,N,K) or (batch,K,N) or shared (N,K),
                                Craw (batch,M,N) */
    real *dA, *dB;           /* gradient buffers the leaves need when recording; never touched */
} bench_case;

typedef struct timing {
    double ours_s, raw_s; /* median seconds per call */
    double ratio;         /* median over rounds of raw_time / ours_time = ours GF/s / raw GF/s */
} timing;

static int n_rounds = 9;        /* measurements per side per (shape, threads) */
static double target_s = 0.030; /* each measurement repeats the call for at least this long */
static bool no_grad = false;
static bool verbose = false;    /* print every round's times */
static const char *only = NULL; /* --config NAME: run one config */

/* Deterministic U[-1, 1) inputs (xorshift64*): no dependence on anything else in the library. */
static void fill_uniform(real *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        uint64_t r = (s * 0x2545F4914F6CDD1Dull) >> 40; /* 24 bits */
        x[i] = (real)((double)r / 16777216.0 * 2.0 - 1.0);
    }
}

static bench_case make_case(const config *c, const char *name, int M, int N, int K, int batch,
                            bool tb, uint64_t seed)
{
    const tt_backend *be = &tt_cpu_backend;
    bench_case bc = {.config = c->name, .name = name, .M = M, .N = N, .K = K, .batch = batch,
                     .tb = tb, .proj = batch == 1};
    if (batch == 1) { /* x [B,T,K] times a shared weight [N,K]^T: the op folds B*T into M */
        bc.ashape = tt_shape3(c->B, c->T, K);
        bc.bshape = tt_shape2(N, K);
    } else { /* per-head: [B,h,M,K] times [B,h,N,K]^T or [B,h,K,N] */
        bc.ashape = tt_shape4(c->B, c->h, M, K);
        bc.bshape = tb ? tt_shape4(c->B, c->h, N, K) : tt_shape4(c->B, c->h, K, N);
    }
    size_t na = (size_t)tt_shape_numel(bc.ashape), nb = (size_t)tt_shape_numel(bc.bshape);
    bc.A = be->alloc(na * sizeof(real));
    bc.B = be->alloc(nb * sizeof(real));
    bc.dA = be->alloc(na * sizeof(real));
    bc.dB = be->alloc(nb * sizeof(real));
    bc.Craw = be->alloc((size_t)batch * M * N * sizeof(real));
    fill_uniform(bc.A, (int64_t)na, seed);
    fill_uniform(bc.B, (int64_t)nb, seed + 1);
    return bc;
}

static void free_case(bench_case *bc)
{
    const tt_backend *be = &tt_cpu_backend;
    be->free(bc->A);
    be->free(bc->B);
    be->free(bc->dA);
    be->free(bc->dB);
    be->free(bc->Craw);
}

/* The raw side: exactly the cblas calls the op should amount to (a loop over the batch for the
 * per-head shapes, as cpu/matmul.c does). */
static void raw_gemm(const bench_case *bc)
{
    int64_t sA = (int64_t)bc->M * bc->K, sB = bc->batch > 1 ? (int64_t)bc->N * bc->K : 0;
    int64_t sC = (int64_t)bc->M * bc->N;
    for (int i = 0; i < bc->batch; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, bc->tb ? CblasTrans : CblasNoTrans, bc->M, bc->N,
                    bc->K, 1.0f, bc->A + i * sA, bc->K, bc->B + i * sB, bc->tb ? bc->K : bc->N,
                    0.0f, bc->Craw + i * sC, bc->N);
}

/* Our side, as a step does it: leaves over the inputs, the op, then the per-step reset. */
typedef struct ours_ctx {
    tt_graph g;
    tt_var a, b;
} ours_ctx;

static void ours_init(ours_ctx *o, tt_arena *data, tt_arena *meta, const bench_case *bc)
{
    tt_graph_init(&o->g, data, meta, NULL);
    tt_graph_set_no_grad(&o->g, no_grad);
    o->a = tt_var_leaf(tt_tensor_view(bc->A, bc->ashape, TT_REAL, TT_CPU),
                       tt_tensor_view(bc->dA, bc->ashape, TT_REAL, TT_CPU), true);
    o->b = tt_var_leaf(tt_tensor_view(bc->B, bc->bshape, TT_REAL, TT_CPU),
                       tt_tensor_view(bc->dB, bc->bshape, TT_REAL, TT_CPU), true);
}

static double time_ours(ours_ctx *o, const bench_case *bc, int reps)
{
    double t0 = now_s();
    for (int r = 0; r < reps; r++) {
        tt_matmul(&o->g, &o->a, &o->b, false, bc->tb);
        tt_graph_reset(&o->g);
    }
    return (now_s() - t0) / reps;
}

static double time_raw(const bench_case *bc, int reps)
{
    double t0 = now_s();
    for (int r = 0; r < reps; r++) raw_gemm(bc);
    return (now_s() - t0) / reps;
}

/* Checks ours against raw (the same OpenBLAS calls: expected bit-equal) and raw against a
 * float64 loop on sampled entries (catches a layout both sides would share). Returns the
 * largest ours-vs-raw difference, or -1 after printing what failed. */
static double verify(ours_ctx *o, const bench_case *bc)
{
    raw_gemm(bc);
    tt_var *out = tt_matmul(&o->g, &o->a, &o->b, false, bc->tb);
    const real *C = out->val.data;
    int64_t n = (int64_t)bc->batch * bc->M * bc->N;
    double tol = 1e-5 * bc->K, diff = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)C[i] - (double)bc->Craw[i];
        if (e < 0) e = -e;
        if (e > diff) diff = e;
    }
    char s1[TT_SHAPE_STR];
    if (out->val.n != n || !(diff <= tol)) {
        fprintf(stderr, "FAIL %s %s: ours %s vs raw: max |diff| %g > %g\n", bc->config, bc->name,
                tt_shape_str(out->val.shape, s1), diff, tol);
        tt_graph_reset(&o->g);
        return -1;
    }
    tt_graph_reset(&o->g);
    uint64_t s = 12345;
    for (int t = 0; t < 64; t++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((s >> 33) % (uint64_t)bc->batch);
        int m = (int)((s >> 17) % (uint64_t)bc->M), j = (int)((s >> 7) % (uint64_t)bc->N);
        const real *A = bc->A + (int64_t)i * bc->M * bc->K;
        const real *B = bc->B + (bc->batch > 1 ? (int64_t)i * bc->N * bc->K : 0);
        double want = 0;
        for (int k = 0; k < bc->K; k++)
            want += (double)A[(int64_t)m * bc->K + k] *
                    (double)(bc->tb ? B[(int64_t)j * bc->K + k] : B[(int64_t)k * bc->N + j]);
        double got = (double)bc->Craw[((int64_t)i * bc->M + m) * bc->N + j];
        if (!(got - want <= tol && want - got <= tol)) {
            fprintf(stderr, "FAIL %s %s: raw C[%d][%d][%d] = %g, float64 reference %g (tol %g)\n",
                    bc->config, bc->name, i, m, j, got, want, tol);
            return -1;
        }
    }
    return diff;
}

/* Raw first, with OpenBLAS's own `threads` threads; then ours, on our pool with OpenBLAS at one
 * thread (set_threads also stops OpenBLAS's threads). Not interleaved: OpenBLAS's threads spin
 * for a while after each call, and would take the cores from our pool's. */
static timing measure(ours_ctx *o, const bench_case *bc, int threads)
{
    openblas_set_num_threads(threads);
    for (int w = 0; w < 3; w++) time_raw(bc, 1); /* wakes its threads, warms caches and pages */
    /* Calibrate on the raw side: both sides then run the same number of reps. */
    int reps = 1;
    while (time_raw(bc, reps) * reps < target_s && reps < (1 << 24)) reps *= 2;
    double ours[32], raw[32], ratio[32];
    for (int r = 0; r < n_rounds; r++) raw[r] = time_raw(bc, reps);
    tt_cpu_backend.set_threads(threads);
    for (int w = 0; w < 3; w++) time_ours(o, bc, 1);
    for (int r = 0; r < n_rounds; r++) {
        ours[r] = time_ours(o, bc, reps);
        ratio[r] = raw[r] / ours[r];
    }
    if (verbose) {
        printf("  %s %s, %d reps: ours/raw us per call:", bc->config, bc->name, reps);
        for (int r = 0; r < n_rounds; r++) printf(" %.1f/%.1f", ours[r] * 1e6, raw[r] * 1e6);
        printf("\n");
    }
    return (timing){median(ours, n_rounds), median(raw, n_rounds), median(ratio, n_rounds)};
}

int main(int argc, char **argv)
{
    tt_blas_env(argv); /* the kernels ./train runs (and PyTorch, which inherits them) */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            n_rounds = 3;
            target_s = 0.004;
        } else if (strcmp(argv[i], "--no-grad") == 0) {
            no_grad = true;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            verbose = true;
        } else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--quick] [--no-grad] [--verbose] [--config NAME]\n"
                    "  --quick    3 rounds of ~4 ms per measurement (smoke run)\n"
                    "  --no-grad  time the op in no-grad mode instead of recording the tape\n"
                    "  --verbose  also print every round's time per call, ours/raw\n"
                    "  --config   run only that config: tiny, small or medium\n",
                    argv[0]);
            return 2;
        }
    }
    bool known = !only;
    for (size_t ci = 0; ci < sizeof CONFIGS / sizeof CONFIGS[0]; ci++)
        known = known || strcmp(only, CONFIGS[ci].name) == 0;
    if (!known) {
        fprintf(stderr, "bench_matmul: unknown config '%s'. HINT: tiny, small or medium\n", only);
        return 2;
    }
    const int threads[] = {1, 2};
    const int n_threads = (int)(sizeof threads / sizeof threads[0]);
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("bench_matmul: tt_matmul op vs raw cblas_sgemm (float32, forward, %s)\n",
           no_grad ? "no-grad mode" : "recording the tape, inputs require grad");
    printf("OPENBLAS_CORETYPE=%s  OpenBLAS core: %s  config: %s\n",
           coretype && *coretype ? coretype : "unset", openblas_get_corename(),
           openblas_get_config());
    double l1 = -1, l5 = -1, l15 = -1;
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &l1, &l5, &l15) != 3) l1 = l5 = l15 = -1;
        fclose(lf);
    }
    printf("load average at start: %.2f %.2f %.2f (other work on the 2 cores skews 2-thread "
           "numbers)\n", l1, l5, l15);
    printf("threads: 1 and 2 (OpenBLAS sees %d processors); %d rounds (raw, then ours) of "
           ">= %.0f ms per side; medians\n\n", openblas_get_num_procs(), n_rounds, target_s * 1e3);
    printf("%-7s %-12s %6s %6s %6s %6s %3s %10s %10s %6s %10s %10s %8s\n", "config", "shape", "M",
           "N", "K", "batch", "thr", "ours GF/s", "raw GF/s", "ratio", "ours us", "raw us",
           "maxdiff");
    fflush(stdout);

    double min_ratio = 1e30;
    const char *min_where = "", *min_config = "";
    int failures = 0;
    double t_start = now_s();
    for (size_t ci = 0; ci < sizeof CONFIGS / sizeof CONFIGS[0]; ci++) {
        const config *c = &CONFIGS[ci];
        if (only && strcmp(only, c->name) != 0) continue;
        int M = c->B * c->T, dk = c->d / c->h, BH = c->B * c->h;
        bench_case cases[] = {
            make_case(c, "qkv", M, 3 * c->d, c->d, 1, true, 1),
            make_case(c, "out_proj", M, c->d, c->d, 1, true, 3),
            make_case(c, "ffn1", M, c->d_ff, c->d, 1, true, 5),
            make_case(c, "ffn2", M, c->d, c->d_ff, 1, true, 7),
            make_case(c, "head", M, c->V, c->d, 1, true, 9),
            make_case(c, "attn_scores", c->T, c->T, dk, BH, true, 11),
            make_case(c, "attn_out", c->T, dk, c->T, BH, false, 13),
        };
        int n_cases = (int)(sizeof cases / sizeof cases[0]);
        size_t max_out = 0;
        for (int k = 0; k < n_cases; k++) {
            size_t bytes = (size_t)cases[k].batch * cases[k].M * cases[k].N * sizeof(real);
            if (bytes > max_out) max_out = bytes;
        }
        tt_arena data, meta;
        tt_arena_init(&data, "bench-data", TT_CPU, max_out);
        tt_arena_init(&meta, "bench-meta", TT_CPU, 4096); /* the output's var and one node */
        for (int ti = 0; ti < n_threads; ti++) {
            tt_cpu_backend.set_threads(threads[ti]);
            int got = tt_cpu_backend.get_threads();
            for (int k = 0; k < n_cases; k++) {
                bench_case *bc = &cases[k];
                ours_ctx o;
                ours_init(&o, &data, &meta, bc);
                double diff = verify(&o, bc);
                if (diff < 0) {
                    failures++;
                    continue;
                }
                timing t = measure(&o, bc, threads[ti]);
                double flop = 2.0 * bc->M * bc->N * bc->K * bc->batch;
                printf("%-7s %-12s %6d %6d %6d %6d %3d %10.1f %10.1f %6.3f %10.1f %10.1f %8.1e\n",
                       c->name, bc->name, bc->M, bc->N, bc->K, bc->batch, got,
                       flop / t.ours_s * 1e-9, flop / t.raw_s * 1e-9, t.ratio, t.ours_s * 1e6,
                       t.raw_s * 1e6, diff);
                fflush(stdout);
                if (bc->proj && threads[ti] == 2 && t.ratio < min_ratio) {
                    min_ratio = t.ratio;
                    min_where = bc->name;
                    min_config = c->name;
                }
            }
        }
        tt_arena_free(&data);
        tt_arena_free(&meta);
        for (int k = 0; k < n_cases; k++) free_case(&cases[k]);
    }
    printf("\ntotal %.1f s\n", now_s() - t_start);
    if (failures) {
        fprintf(stderr, "bench_matmul: %d shape(s) gave wrong numbers; see FAIL lines above\n",
                failures);
        return 1;
    }
    printf("2 threads, projection/FFN/head shapes: min ratio %.3f (%s %s); >= 0.9: %s\n",
           min_ratio, min_config, min_where, min_ratio >= 0.9 ? "yes" : "NO");
    return 0;
}
