/* worked.c: recomputes the seed texts' worked examples (worked_table.c) with the project's own
 * ops, each on a CPU graph of its own (arenas sized for it, freed before returning), and judges
 * the seed's figures against the results (worked.h). Only reading results back and counting
 * (zero weights, a fraction, a ratio) are loops here; every value comes from a graph op. */
#include "train/study/worked.h"

#include "nn/nn.h"
#include "train/study/study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* bump-allocator rounding (64 bytes a tensor) and the attention kernels' per-thread scratch */
#define WK_SLACK ((size_t)256 << 10)

typedef struct wk_graph {
    tt_arena data, meta;
    tt_rng rng; /* dropout masks and random inputs: seed TT_WORKED_SEED */
    tt_graph g;
} wk_graph;

static tt_graph *wk_open(wk_graph *w, size_t reals)
{
    tt_arena_init(&w->data, "worked-data", TT_CPU, reals * sizeof(real) + WK_SLACK);
    tt_arena_init(&w->meta, "worked-meta", TT_CPU, (size_t)1 << 20);
    tt_rng_init(&w->rng, TT_WORKED_SEED, 1);
    tt_graph_init(&w->g, &w->data, &w->meta, &w->rng);
    w->g.training = false;
    return &w->g;
}

static void wk_close(wk_graph *w)
{
    tt_arena_free(&w->data);
    tt_arena_free(&w->meta);
}

/* A constant of shape s from doubles (x NULL: zeros). */
static tt_var *wk_const(tt_graph *g, tt_shape s, const double *x)
{
    int64_t n = tt_shape_numel(s);
    real *h = tt_xmalloc((size_t)n * sizeof(real));
    for (int64_t i = 0; i < n; i++)
        h[i] = x ? (real)x[i] : R(0);
    tt_var *v = tt_var_from_host(g, s, TT_REAL, h, false);
    free(h);
    return v;
}

/* A constant of shape s with N(0,1) entries from the graph's rng. */
static tt_var *wk_normal(tt_graph *g, tt_shape s)
{
    int64_t n = tt_shape_numel(s);
    real *h = tt_xmalloc((size_t)n * sizeof(real));
    tt_rng_normal(g->rng, h, n, R(0), R(1));
    tt_var *v = tt_var_from_host(g, s, TT_REAL, h, false);
    free(h);
    return v;
}

/* The first n values of t, through the backend, as doubles. */
static void wk_read(tt_graph *g, const tt_tensor *t, double *out, int64_t n)
{
    TT_ASSERT_MSG(n <= t->n, "worked: %lld values wanted from a tensor of %lld", (long long)n,
                  (long long)t->n);
    real *h = tt_tensor_host_copy(g->be, t);
    for (int64_t i = 0; i < n; i++)
        out[i] = (double)h[i];
    free(h);
}

/* The last `k` dims of t into out; returns k. */
static int wk_dims(const tt_tensor *t, int k, double *out)
{
    TT_ASSERT_MSG(k <= t->shape.ndim, "worked: %d dims wanted of a %d-dim tensor", k,
                  t->shape.ndim);
    for (int i = 0; i < k; i++)
        out[i] = t->shape.d[t->shape.ndim - k + i];
    return k;
}

/* The sums of the rows of w [.., cols] (rows of them) by tt_matmul with a column of ones. */
static void wk_row_sums(tt_graph *g, tt_var *w, int rows, int cols, double *out)
{
    double ones[64];
    TT_ASSERT_MSG(cols <= 64, "worked: %d columns", cols);
    for (int j = 0; j < cols; j++)
        ones[j] = 1;
    tt_var *s = tt_matmul(g, w, wk_const(g, tt_shape2(cols, 1), ones), false, false);
    wk_read(g, &s->val, out, rows);
}

static double largest_diff(tt_graph *g, const tt_tensor *a, const tt_tensor *b, int64_t n)
{
    double *x = tt_xmalloc((size_t)n * 2 * sizeof(double)), d = 0;
    wk_read(g, a, x, n);
    wk_read(g, b, x + n, n);
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs(x[i] - x[n + i]));
    free(x);
    return d;
}

/* The factor on the scores: 1/sqrt(dk) (dk > 0) or 1, over tau, as the attention layer's. */
static real wk_scale(double dk, double tau)
{
    return tt_nn_attn_scale(dk > 0 ? TT_SCALE_SQRT_DK : TT_SCALE_NONE, (real)(tau > 0 ? tau : 1),
                            dk > 0 ? (int)dk : 1, 1);
}

static void need(const tt_worked_example *e, bool ok, const char *what)
{
    TT_ASSERT_MSG(ok, "worked example %s: %s", e->id, what);
}

/* TT_WK_SCALE, TT_WK_SOFTMAX, TT_WK_TEMP */
static void scale_softmax(const tt_worked_example *e, tt_worked_result *r)
{
    const int n = e->n_in;
    const bool temp = e->kind == TT_WK_TEMP;
    need(e, e->n == (temp ? 2 * n : n), "figures and inputs disagree");
    wk_graph w;
    tt_graph *g = wk_open(&w, 4 * (size_t)n);
    tt_var *x = wk_const(g, tt_shape2(1, n), e->in);
    tt_var *y = tt_scale(g, x, temp ? wk_scale(0, e->p[0]) : wk_scale(e->p[0], 1));
    if (temp) wk_read(g, &y->val, r->got, n);
    if (e->kind != TT_WK_SCALE) y = tt_softmax(g, y);
    wk_read(g, &y->val, r->got + (temp ? n : 0), n);
    wk_close(&w);
}

/* TT_WK_QKV: scores, scaled scores, weights and output of 001's example, composed from the ops;
 * the fused tt_sdpa on the same inputs is the cross-check. */
static void qkv(const tt_worked_example *e, tt_worked_result *r)
{
    const int part = (int)e->p[0], T = (int)e->p[1], D = (int)e->p[2];
    need(e, e->n_in == 3 * T * D && part >= 0 && part <= T + 2, "inputs or part");
    need(e, e->n == (part < 2 ? T * T : part <= T + 1 ? T : T * D), "figures");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)T * (T + D));
    tt_shape s = tt_shape3(1, T, D);
    tt_var *q = wk_const(g, s, e->in), *k = wk_const(g, s, e->in + T * D);
    tt_var *v = wk_const(g, s, e->in + 2 * T * D);
    tt_var *scores = tt_matmul(g, q, k, false, true); /* [1,T,T] */
    tt_var *scaled = tt_scale(g, scores, wk_scale(D, 1));
    tt_var *weights = tt_softmax(g, scaled);
    tt_var *out = tt_matmul(g, weights, v, false, false); /* [1,T,D] */
    tt_tensor wf;
    tt_sdpa_opts so = {.scale = wk_scale(D, 1)};
    tt_var *of = tt_sdpa(g, q, k, v, 1, &so, &wf);
    if (part >= 2) /* the rows that show weights or the output */
        r->xcheck = fmax(largest_diff(g, &wf, &weights->val, T * T),
                         largest_diff(g, &of->val, &out->val, T * D));
    if (part <= 1)
        wk_read(g, part ? &scaled->val : &scores->val, r->got, T * T);
    else if (part == T + 2)
        wk_read(g, &out->val, r->got, T * D);
    else {
        double all[TT_WORKED_MAX * TT_WORKED_MAX];
        need(e, T * T <= TT_WORKED_MAX * TT_WORKED_MAX, "too many tokens");
        wk_read(g, &weights->val, all, T * T);
        memcpy(r->got, all + (part - 2) * T, (size_t)T * sizeof(double));
    }
    wk_close(&w);
}

/* TT_WK_VARIANCE: the study's own measurement. Standard errors of S samples: the mean,
 * sqrt(dk / S); the sample variance, dk sqrt(2 / (S - 1) + kappa / S), with kappa = 6 / dk
 * the excess kurtosis of q.k (each q_i k_i has E[x^4] = 9, excess 6; dk of them, 6 / dk). */
static void variance(const tt_worked_example *e, tt_worked_result *r)
{
    const int dk = (int)e->p[0], S = (int)e->p[1];
    need(e, e->n == 4 && dk >= 1 && S >= 2, "figures, d_k or samples");
    tt_study_opts o = tt_study_defaults(TT_WORKED_SEED);
    o.n_dk = 1;
    o.dk[0] = dk;
    o.samples = S;
    tt_study_var v;
    tt_study_variance(&o, &v);
    double s = (double)wk_scale(dk, 1);
    double se_mean = sqrt((double)dk / S);
    double se_var = dk * sqrt(2.0 / (S - 1) + 6.0 / dk / S);
    double got[4] = {v.mean_unscaled, v.var_unscaled, v.mean_unscaled * s, v.var_scaled};
    double tol[4] = {3 * se_mean, 3 * se_var, 3 * se_mean / sqrt(dk), 3 * se_var / dk};
    memcpy(r->got, got, sizeof got);
    memcpy(r->tol, tol, sizeof tol);
}

/* TT_WK_DROPOUT: fraction dropped (standard error sqrt(p (1 - p) / n)), mean kept / weight. */
static void dropout(const tt_worked_example *e, tt_worked_result *r)
{
    const double p = e->p[0];
    const int rows = (int)e->p[1], cols = (int)e->p[2];
    const int64_t n = (int64_t)rows * cols;
    need(e, e->n == 2 && n > 0, "figures or sizes");
    wk_graph w;
    tt_graph *g = wk_open(&w, 4 * (size_t)n);
    g->training = true;
    tt_var *weights = tt_softmax(g, wk_normal(g, tt_shape2(rows, cols)));
    tt_var *dropped = tt_dropout(g, weights, (real)p);
    double *x = tt_xmalloc((size_t)n * 2 * sizeof(double));
    wk_read(g, &weights->val, x, n);
    wk_read(g, &dropped->val, x + n, n);
    /* the mean ratio as the first one plus the mean deviation from it: a plain sum of 90,000
     * ratios near 1.11 would lose ~1e-12 to rounding */
    int64_t zeros = 0;
    double first = NAN, dev = 0;
    for (int64_t i = 0; i < n; i++) {
        if (x[n + i] == 0) {
            zeros++;
            continue;
        }
        if (isnan(first)) first = x[n + i] / x[i];
        dev += x[n + i] / x[i] - first;
    }
    r->got[0] = (double)zeros / (double)n;
    r->got[1] = first + dev / (double)(n - zeros);
    r->tol[0] = 3 * sqrt(p * (1 - p) / (double)n);
    free(x);
    wk_close(&w);
}

/* TT_WK_MHA: the attention layer with PyTorch's initial values, no gradients recorded. */
static void mha(const tt_worked_example *e, tt_worked_result *r)
{
    const int B = (int)e->p[0], T = (int)e->p[1], C = (int)e->p[2], H = (int)e->p[3];
    int k = 0;
    if (e->p[4] > 0) r->got[k++] = (double)tt_shape_numel(tt_shape2((int)e->p[4], (int)e->p[5]));
    need(e, e->n == k + 3, "figures");
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_nn_mha m;
    tt_nn_mha_init(&m, &ps, "self_attn", C, H, TT_SCALE_SQRT_DK, R(1), false, R(0));
    tt_params_finalize(&ps);
    tt_nn_init in;
    tt_nn_init_begin(&in, &ps, TT_WORKED_SEED);
    tt_nn_mha_reset(&m, &in);
    tt_nn_init_done(&in);
    const size_t btc = (size_t)B * T * C;
    wk_graph w;
    tt_graph *g = wk_open(&w, 6 * btc + (size_t)B * H * T * T + 64 * (size_t)T * T);
    tt_graph_set_no_grad(g, true);
    tt_var *y = tt_nn_mha_forward(g, &m, wk_normal(g, tt_shape3(B, T, C)), NULL, NULL);
    wk_dims(&y->val, 3, r->got + k);
    wk_close(&w);
    tt_params_free(&ps);
}

/* TT_WK_PAD: one query row (the same for every query of the fused op) against keys scored
 * in[], the last key padding. */
static void pad(const tt_worked_example *e, tt_worked_result *r)
{
    const int T = e->n_in;
    need(e, e->n == 2 * T && T >= 2 && T <= TT_WORKED_MAX, "figures or keys");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)T * T);
    double mask[TT_WORKED_MAX] = {0}, ones[TT_WORKED_MAX];
    int32_t padding[TT_WORKED_MAX] = {0};
    mask[T - 1] = -1e9;
    padding[T - 1] = 1;
    for (int j = 0; j < T; j++)
        ones[j] = 1;
    tt_var *added =
        tt_add(g, wk_const(g, tt_shape2(1, T), e->in), wk_const(g, tt_shape2(1, T), mask));
    tt_var *composed = tt_softmax(g, added);
    tt_tensor pt = tt_var_from_host(g, tt_shape2(1, T), TT_I32, padding, false)->val;
    tt_tensor wf; /* [1,1,T,T]: row i is query i's; every query is 1, so every row is alike */
    tt_sdpa_opts so = {.scale = R(1), .pad = &pt};
    tt_sdpa(g, wk_const(g, tt_shape3(1, T, 1), ones), wk_const(g, tt_shape3(1, T, 1), e->in),
            wk_const(g, tt_shape3(1, T, 1), NULL), 1, &so, &wf);
    wk_read(g, &composed->val, r->got, T);
    wk_read(g, &wf, r->got + T, T);
    r->xcheck = 0;
    for (int j = 0; j < T; j++)
        r->xcheck = fmax(r->xcheck, fabs(r->got[j] - r->got[T + j]));
    wk_close(&w);
}

/* TT_WK_CAUSAL: queries and keys of zeros, so every score is 0 and only the mask shapes the
 * weights. */
static void causal(const tt_worked_example *e, tt_worked_result *r)
{
    const int T = (int)e->p[0];
    need(e, e->n == 3 && T >= 1 && T <= TT_WORKED_MAX, "figures or tokens");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)T * T);
    tt_var *z = wk_const(g, tt_shape3(1, T, 1), NULL);
    tt_tensor wf;
    tt_sdpa_opts so = {.scale = R(1), .causal = true};
    tt_sdpa(g, z, z, z, 1, &so, &wf);
    double x[TT_WORKED_MAX * TT_WORKED_MAX];
    wk_read(g, &wf, x, (int64_t)T * T);
    double above = 0, below = 0, top = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            double v = x[i * T + j];
            if (j > i)
                above += v == 0, top = fmax(top, v);
            else
                below += v == 0;
        }
    double got[3] = {above, below, top};
    memcpy(r->got, got, sizeof got);
    wk_close(&w);
}

/* TT_WK_SHAPES: 002's five steps, batch N, with a causal mask of -inf added to the scores. */
static void shapes(const tt_worked_example *e, tt_worked_result *r)
{
    const int N = (int)e->p[0], T = (int)e->p[1], dk = (int)e->p[2], dv = (int)e->p[3];
    need(e, e->n == 15, "figures");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)N * T * (T + dk + dv));
    tt_var *q = wk_normal(g, tt_shape3(N, T, dk)), *k = wk_normal(g, tt_shape3(N, T, dk));
    tt_var *v = wk_normal(g, tt_shape3(N, T, dv));
    double *mask = tt_xmalloc((size_t)N * T * T * sizeof(double));
    for (int64_t i = 0; i < (int64_t)N * T * T; i++)
        mask[i] = (i % T) > (i / T) % T ? -INFINITY : 0; /* key j > query i */
    tt_var *steps[5];
    steps[0] = tt_matmul(g, q, k, false, true);
    steps[1] = tt_scale(g, steps[0], wk_scale(dk, 1));
    steps[2] = tt_add(g, steps[1], wk_const(g, tt_shape3(N, T, T), mask));
    steps[3] = tt_softmax(g, steps[2]);
    steps[4] = tt_matmul(g, steps[3], v, false, false);
    for (int i = 0; i < 5; i++)
        wk_dims(&steps[i]->val, 3, r->got + 3 * i);
    free(mask);
    wk_close(&w);
}

/* TT_WK_CROSS: T_q queries against T_k keys (004's Q, K, V of different lengths). */
static void cross(const tt_worked_example *e, tt_worked_result *r)
{
    const int Tq = (int)e->p[0], Tk = (int)e->p[1], dk = (int)e->p[2], dv = (int)e->p[3];
    need(e, e->n == 4 + Tq, "figures");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)(Tq + Tk) * (Tk + dk + dv));
    tt_var *q = wk_normal(g, tt_shape3(1, Tq, dk)), *k = wk_normal(g, tt_shape3(1, Tk, dk));
    tt_var *v = wk_normal(g, tt_shape3(1, Tk, dv));
    tt_var *weights = tt_softmax(g, tt_scale(g, tt_matmul(g, q, k, false, true), wk_scale(dk, 1)));
    tt_var *out = tt_matmul(g, weights, v, false, false);
    wk_dims(&weights->val, 2, r->got);
    wk_dims(&out->val, 2, r->got + 2);
    wk_row_sums(g, weights, Tq, Tk, r->got + 4);
    wk_close(&w);
}

/* d_k of d_model C split over H heads, from the layer's scale 1/sqrt(d_k): a whole number, so
 * rounded (the scale is a float). */
static double head_width(int C, int H)
{
    double s = (double)tt_nn_attn_scale(TT_SCALE_SQRT_DK, R(1), C, H);
    return round(1 / (s * s));
}

/* TT_WK_HEADS4: Q, K, V [B, H, T, dk] as 004's code holds them, by batched matmuls. */
static void heads4(const tt_worked_example *e, tt_worked_result *r)
{
    const int B = (int)e->p[0], H = (int)e->p[1], T = (int)e->p[2], dk = (int)e->p[3];
    need(e, e->n == 5, "figures");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)B * H * T * (T + dk));
    tt_shape s = tt_shape4(B, H, T, dk);
    tt_var *q = wk_normal(g, s), *k = wk_normal(g, s), *v = wk_normal(g, s);
    tt_var *weights = tt_softmax(g, tt_scale(g, tt_matmul(g, q, k, false, true), wk_scale(dk, 1)));
    wk_dims(&tt_matmul(g, weights, v, false, false)->val, 4, r->got);
    r->got[4] = head_width(H * dk, H);
    wk_close(&w);
}

/* TT_WK_POSENC: the sinusoidal table, added to zeros by the layer's own forward. */
static void posenc(const tt_worked_example *e, tt_worked_result *r)
{
    const int P = (int)e->p[0], C = (int)e->p[1];
    need(e, e->n == P * C, "figures");
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_nn_posenc m;
    tt_nn_posenc_init(&m, &ps, "pos", TT_POS_SINUSOIDAL, P, C);
    wk_graph w;
    tt_graph *g = wk_open(&w, 4 * (size_t)P * C);
    tt_var *y = tt_nn_posenc_forward(g, &m, wk_const(g, tt_shape3(1, P, C), NULL));
    wk_read(g, &y->val, r->got, (int64_t)P * C);
    wk_close(&w);
    tt_nn_posenc_free(&m);
    tt_params_free(&ps);
}

/* TT_WK_RANGES: ReLU's outputs, and tanh x = (e^x - e^-x) / (e^x + e^-x), which is
 * softmax([x, -x])_0 - softmax([x, -x])_1. */
static void ranges(const tt_worked_example *e, tt_worked_result *r)
{
    const int n = e->n_in;
    need(e, e->n == 4 && n >= 1 && n <= TT_WORKED_MAX, "figures or inputs");
    wk_graph w;
    tt_graph *g = wk_open(&w, 16 * (size_t)n);
    double y[TT_WORKED_MAX], t[4], x = e->in[n - 1];
    wk_read(g, &tt_relu(g, wk_const(g, tt_shape2(1, n), e->in))->val, y, n);
    double pm[4] = {x, -x, -x, x};
    wk_read(g, &tt_softmax(g, wk_const(g, tt_shape2(2, 2), pm))->val, t, 4);
    r->got[0] = y[0];
    for (int i = 1; i < n; i++)
        r->got[0] = fmin(r->got[0], y[i]);
    r->got[1] = y[n - 1];
    r->got[2] = t[0] - t[1];
    r->got[3] = t[2] - t[3];
    wk_close(&w);
}

/* The kinds that need no graph of their own, or a small one. */
static void small(const tt_worked_example *e, tt_worked_result *r)
{
    wk_graph w;
    tt_graph *g;
    switch (e->kind) {
    case TT_WK_ROWSUM: {
        const int cols = (int)e->p[0], rows = e->n_in / cols;
        need(e, e->n == rows && rows * cols == e->n_in, "figures or columns");
        g = wk_open(&w, 4 * (size_t)e->n_in);
        wk_row_sums(g, wk_const(g, tt_shape2(rows, cols), e->in), rows, cols, r->got);
        wk_close(&w);
        break;
    }
    case TT_WK_MATMUL: {
        const int M = (int)e->p[0], K = (int)e->p[1], N = (int)e->p[2];
        need(e, e->n == 2, "figures");
        g = wk_open(&w, 2 * (size_t)K * (M + N) + (size_t)M * N);
        tt_var *y = tt_matmul(g, wk_normal(g, tt_shape2(M, K)), wk_normal(g, tt_shape2(K, N)),
                              false, false);
        wk_dims(&y->val, 2, r->got);
        wk_close(&w);
        break;
    }
    case TT_WK_SQRT:
        need(e, e->n == e->n_in, "figures and inputs disagree");
        for (int i = 0; i < e->n; i++)
            r->got[i] = 1 / (double)wk_scale(e->in[i], 1);
        break;
    case TT_WK_HEADS: {
        const int C = (int)e->p[0], H = (int)e->p[1];
        need(e, e->n == 2, "figures");
        r->got[0] = head_width(C, H);
        r->got[1] = H * r->got[0] / C; /* per query-key pair: H dot products of d_k, or one of C */
        break;
    }
    case TT_WK_COST: {
        need(e, e->n == 2 && e->p[1] > 0, "figures or unit");
        int64_t n = tt_shape_numel(tt_shape2((int)e->p[0], (int)e->p[0]));
        r->got[0] = (double)n;
        r->got[1] = (double)n * sizeof(float) / e->p[1]; /* the seed counts float32 scores */
        break;
    }
    case TT_WK_SQUARES:
        need(e, e->n == e->n_in || e->n == e->n_in + 1, "figures");
        for (int i = 0; i < e->n_in; i++)
            r->got[i] = (double)tt_shape_numel(tt_shape2((int)e->in[i], (int)e->in[i]));
        if (e->n > e->n_in) r->got[e->n_in] = r->got[e->n_in - 1] / r->got[0];
        break;
    default:
        need(e, false, "unknown kind");
    }
}

const tt_worked_example *tt_worked_find(const char *id)
{
    for (int i = 0; i < tt_worked_count; i++)
        if (!strcmp(tt_worked_examples[i].id, id)) return &tt_worked_examples[i];
    return NULL;
}

bool tt_worked_figure_agrees(double seed, double got, double tol)
{
    return fabs(got - seed) <= tol * (1 + 1e-9);
}

void tt_worked_judge(const tt_worked_example *e, tt_worked_result *r)
{
    int given = 0;
    r->n_bad = 0;
    for (int i = 0; i < e->n; i++) {
        if (isnan(e->seed[i])) continue;
        given++;
        r->n_bad += !tt_worked_figure_agrees(e->seed[i], r->got[i], r->tol[i]);
    }
    r->verdict = !given ? TT_WORKED_ONLY : r->n_bad ? TT_WORKED_DIFFERS : TT_WORKED_AGREE;
}

void tt_worked_compute(const tt_worked_example *e, tt_worked_result *r)
{
    need(e, e->n >= 1 && e->n <= TT_WORKED_MAX, "figures outside 1..TT_WORKED_MAX");
    for (int i = 0; i < TT_WORKED_MAX; i++)
        r->got[i] = r->tol[i] = NAN;
    r->xcheck = NAN;
    switch (e->kind) {
    case TT_WK_SCALE:
    case TT_WK_SOFTMAX:
    case TT_WK_TEMP:
        scale_softmax(e, r);
        break;
    case TT_WK_QKV:
        qkv(e, r);
        break;
    case TT_WK_VARIANCE:
        variance(e, r);
        break;
    case TT_WK_DROPOUT:
        dropout(e, r);
        break;
    case TT_WK_MHA:
        mha(e, r);
        break;
    case TT_WK_PAD:
        pad(e, r);
        break;
    case TT_WK_CAUSAL:
        causal(e, r);
        break;
    case TT_WK_SHAPES:
        shapes(e, r);
        break;
    case TT_WK_CROSS:
        cross(e, r);
        break;
    case TT_WK_HEADS4:
        heads4(e, r);
        break;
    case TT_WK_POSENC:
        posenc(e, r);
        break;
    case TT_WK_RANGES:
        ranges(e, r);
        break;
    default:
        small(e, r);
    }
    /* the seed's rounding, where the computation set no tolerance of its own */
    for (int i = 0; i < e->n; i++) {
        if (isnan(r->tol[i])) r->tol[i] = (e->units ? e->units[i] : e->unit) / 2;
        need(e, isnan(e->seed[i]) || !isnan(r->tol[i]), "a seed figure without a rounding");
    }
    tt_worked_judge(e, r);
}

void tt_worked_compute_all(tt_worked_result *res)
{
    for (int i = 0; i < tt_worked_count; i++)
        tt_worked_compute(&tt_worked_examples[i], &res[i]);
}
