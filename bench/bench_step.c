/* bench_step.c: the time and memory of one full training step (zero grad, forward, loss,
 * backward, AdamW step; no clipping) of the tiny, small and medium configs, as ./train runs it
 * (src/train/run/run.c and loop.c): post-LN, ReLU, dropout 0.1 on embeddings, residuals, FFN
 * and attention weights (what PyTorch 1.13's TransformerEncoderLayer does), sinusoidal
 * positions, random tokens and targets, no padding. One config per process, so that peak RSS
 * (getrusage ru_maxrss) is that config's: bench/run_step_bench.sh runs the three and PyTorch.
 * Prints a few readable lines, then one JSON line. `--sgemm-peak` instead measures the
 * machine's cblas_sgemm 2048^3 GFLOP/s (best of 3) at the same thread count. */
#include "nn/model.h"
#include "train/optim/optim.h"
#include "train/run/run.h"

#include "bench_util.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifdef TT_DOUBLE
#error "bench_step times the float32 training step: build it against the float32 library"
#endif

typedef struct config {
    const char *name;
    int V, T, d, h, L, d_ff, B;
} config;

static const config CONFIGS[] = {
    {"tiny", 64, 16, 64, 4, 2, 256, 32},
    {"small", 256, 64, 128, 4, 4, 512, 32},
    {"medium", 1024, 128, 256, 8, 6, 1024, 16},
};
#define N_CONFIGS ((int)(sizeof CONFIGS / sizeof CONFIGS[0]))

/* Deterministic xorshift64* words: tokens, targets and the sgemm inputs. */
static uint64_t next_u64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* Matmul FLOPs of one training step, counted from the shapes (N = B*T rows, dk = d/h). Forward
 * per layer: qkv 2N(3d)d, out_proj 2Ndd, ffn1 and ffn2 2N d_ff d each, and per (batch, head)
 * scores Q K^T 2 T T dk and weights x V 2 T T dk; then the head 2NVd. The backward pass does two
 * gemms per forward gemm (the gradient of each input), so a step is 3x the forward. */
static double step_flops(const config *c)
{
    double N = (double)c->B * c->T, d = c->d, f = c->d_ff, T = c->T, BH = (double)c->B * c->h;
    double dk = d / c->h;
    double layer = 2 * N * 3 * d * d + 2 * N * d * d + 2 * 2 * N * f * d + 2 * 2 * BH * T * T * dk;
    double fwd = c->L * layer + 2 * N * c->V * d;
    return 3 * fwd;
}

/* Best of 3 cblas_sgemm 2048x2048x2048 at the current OpenBLAS thread count, in GFLOP/s. */
static double sgemm_peak(void)
{
    const int n = 2048;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *A = tt_xmalloc(bytes), *B = tt_xmalloc(bytes), *C = tt_xmalloc(bytes);
    uint64_t s = 42;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        A[i] = (float)(next_u64(&s) >> 40) / 16777216.0f - 0.5f;
        B[i] = (float)(next_u64(&s) >> 40) / 16777216.0f - 0.5f;
    }
    double best = 0;
    for (int r = 0; r < 4; r++) { /* the first call warms the thread pool and the pages */
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f,
                    C, n);
        double gf = 2.0 * n * n * n / (now_s() - t0) * 1e-9;
        if (r > 0 && gf > best) best = gf;
    }
    free(A);
    free(B);
    free(C);
    return best;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --config tiny|small|medium [--threads N] [--warmup N] [--steps N]\n"
            "       %s --sgemm-peak [--threads N]\n"
            "  --config      the one config this process runs (peak RSS is per process)\n"
            "  --threads     threads (default 2): the backend's pool, or OpenBLAS's for the peak\n"
            "  --warmup      untimed steps first (default 5)\n"
            "  --steps       timed steps (default 30, at least 1)\n"
            "  --sgemm-peak  only measure cblas_sgemm 2048^3, best of 3, GFLOP/s\n"
            "Runs all configs and PyTorch: bench/run_step_bench.sh (make bench-step)\n",
            argv0, argv0);
    return 2;
}

int main(int argc, char **argv)
{
    const char *name = NULL;
    int threads = 2, warmup = 5, steps = 30;
    bool peak_only = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) name = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--sgemm-peak") == 0) peak_only = true;
        else return usage(argv[0]);
    }
    if (threads < 1 || warmup < 0 || steps < 1 || (!peak_only && !name)) return usage(argv[0]);
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    coretype = coretype && *coretype ? coretype : "unset";
    if (peak_only) {
        /* OpenBLAS's own threads, not our pool: the machine's peak as OpenBLAS reaches it */
        openblas_set_num_threads(threads);
        double gf = sgemm_peak();
        printf("sgemm 2048^3, %d OpenBLAS threads, OPENBLAS_CORETYPE=%s, core %s: %.1f GFLOP/s\n",
               openblas_get_num_threads(), coretype, openblas_get_corename(), gf);
        printf("{\"sgemm_gflops\": %.2f, \"threads\": %d, \"coretype\": \"%s\", "
               "\"core\": \"%s\"}\n", gf, openblas_get_num_threads(), coretype,
               openblas_get_corename());
        return 0;
    }
    const tt_backend *be = &tt_cpu_backend;
    be->set_threads(threads); /* our pool; OpenBLAS then runs one thread per pool thread */
    const config *c = NULL;
    for (int i = 0; i < N_CONFIGS; i++)
        if (strcmp(name, CONFIGS[i].name) == 0) c = &CONFIGS[i];
    if (!c) {
        fprintf(stderr, "bench_step: unknown config '%s'. HINT: tiny, small or medium\n", name);
        return 2;
    }

    /* Everything is allocated here, before the first step, as tt_run_init does. */
    const uint64_t seed = 1234;
    tt_model_config mc = {
        .vocab = c->V, .n_out = c->V, .d_model = c->d, .n_heads = c->h, .n_layers = c->L,
        .d_ff = c->d_ff, .max_len = c->T, .activation = TT_ACT_RELU, .pre_norm = false,
        .positional = TT_POS_SINUSOIDAL, .embed_scale = false, .dropout = R(0.1),
        .attn_dropout = R(0.1), .attn_scale = TT_SCALE_SQRT_DK, .attn_temperature = R(1),
        .causal = false};
    tt_model model;
    tt_model_init(&model, &mc, TT_CPU);
    tt_model_reset(&model, seed);
    static tt_config oc; /* only train.* is read by tt_optim_init */
    oc.train.optimizer = TT_OPT_ADAMW;
    oc.train.lr = 1e-3;
    oc.train.beta1 = 0.9;
    oc.train.beta2 = 0.999;
    oc.train.eps = 1e-8;
    oc.train.weight_decay = 0.01;
    tt_optim opt;
    tt_optim_init(&opt, &model.params, &oc);
    /* the sizes ./train uses (tt_step_sizes_for in src/train/run/memory.c) */
    tt_step_sizes sz = tt_step_sizes_for(be, c->B, c->T, c->d, c->d_ff, c->h, c->L, c->V,
                                         false);
    tt_arena data, meta;
    tt_arena_init(&data, "step", TT_CPU, sz.values);
    tt_arena_init(&meta, "tape", TT_CPU, sz.tape);
    tt_heap grads;
    tt_heap_init(&grads, "gradients", TT_CPU, sz.grads, sz.grad_blocks);
    tt_rng dropout;
    tt_rng_init(&dropout, seed, TT_STREAM_DROPOUT);
    tt_graph g;
    tt_graph_init(&g, &data, &meta, &dropout);
    tt_graph_set_grad_heap(&g, &grads);
    g.training = true;
    const int B = c->B, T = c->T, n_steps = warmup + steps;
    int32_t *tokens = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *targets = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *pad = tt_xcalloc((size_t)B * T, sizeof(int32_t)); /* no padding, as ./train passes */
    uint64_t s = seed;
    for (int i = 0; i < B * T; i++) {
        tokens[i] = (int32_t)(next_u64(&s) % (uint64_t)c->V);
        targets[i] = (int32_t)(next_u64(&s) % (uint64_t)c->V);
    }
    double *ms = tt_xmalloc((size_t)n_steps * sizeof(double));
    double first_loss = 0, last_loss = 0;

    for (int k = 0; k < n_steps; k++) {
        double t0 = now_s();
        tt_graph_reset(&g);
        tt_var *tok = tt_var_from_host(&g, tt_shape2(B, T), TT_I32, tokens, false);
        tt_var *pm = tt_var_from_host(&g, tt_shape2(B, T), TT_I32, pad, false);
        tt_var *logits = tt_model_forward(&g, &model, tok, &pm->val, NULL);
        tt_var *tgt = tt_var_from_host(&g, tt_shape2(B, T), TT_I32, targets, false);
        tt_var *loss = tt_cross_entropy(&g, logits, tgt);
        real l;
        be->to_host(&l, loss->val.data, sizeof l);
        tt_params_zero_grad(&model.params);
        tt_backward(&g, loss);
        tt_optim_step(&opt, oc.train.lr);
        ms[k] = (now_s() - t0) * 1e3;
        if (!isfinite((double)l)) {
            fprintf(stderr, "bench_step: %s step %d: the loss is %g\n", c->name, k, (double)l);
            return 1;
        }
        if (k == 0) first_loss = (double)l;
        last_loss = (double)l;
    }
    double rss = peak_rss_mb(); /* before anything else is allocated */

    double *timed = ms + warmup;
    double mean = 0;
    for (int k = 0; k < steps; k++) mean += timed[k] / steps;
    double med = median(timed, steps), lo = timed[0], hi = timed[steps - 1];
    double tok_s = B * T / (med * 1e-3);
    double flops = step_flops(c), gflops = flops / (med * 1e-3) * 1e-9;
    printf("bench_step %s: V=%d T=%d d=%d h=%d L=%d d_ff=%d B=%d, %lld params, %d threads "
           "(OPENBLAS_CORETYPE=%s, core %s)\n", c->name, c->V, T, c->d, c->h, c->L, c->d_ff, B,
           (long long)model.params.numel, be->get_threads(), coretype, openblas_get_corename());
    printf("  %d warm-up + %d timed steps: median %.2f ms (min %.2f, mean %.2f, max %.2f), "
           "%.0f tok/s\n", warmup, steps, med, lo, mean, hi, tok_s);
    const double MB = 1048576.0;
    printf("  matmul %.3f GFLOP per step -> %.1f GFLOP/s; peak RSS %.1f MB; step arena high "
           "%.1f of %.1f MB; gradient heap high %.1f touched, %.1f in use, of %.1f MB\n",
           flops * 1e-9, gflops, rss, (double)data.high / MB, (double)data.cap / MB,
           (double)grads.high_end / MB, (double)grads.high_used / MB, (double)grads.cap / MB);
    printf("  loss %.4f (step 1) -> %.4f (step %d); ln(V) = %.4f\n", first_loss, last_loss,
           n_steps, log((double)c->V));
    printf("{\"impl\": \"ours\", \"config\": \"%s\", \"threads\": %d, \"coretype\": \"%s\", "
           "\"warmup\": %d, \"steps\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, "
           "\"mean_ms\": %.4f, \"tokens_per_s\": %.1f, \"step_gflop\": %.6f, \"gflops\": %.2f, "
           "\"peak_rss_mb\": %.2f, \"arena_high_mb\": %.2f, \"heap_high_mb\": %.2f, "
           "\"params\": %lld, \"first_loss\": %.6f, \"last_loss\": %.6f}\n",
           c->name, be->get_threads(), coretype, warmup, steps, med, lo, mean, tok_s,
           flops * 1e-9, gflops, rss, (double)data.high / MB, (double)grads.high_end / MB,
           (long long)model.params.numel, first_loss, last_loss);

    free(ms);
    free(tokens);
    free(targets);
    free(pad);
    tt_arena_free(&data);
    tt_arena_free(&meta);
    tt_heap_destroy(&grads);
    tt_optim_free(&opt);
    tt_model_free(&model);
    return 0;
}
