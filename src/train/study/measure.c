/* study.c: the measurement half of the scaling study (see study.h). Every figure flows through
 * the graph ops (batched tt_matmul for dot products, tt_scale, tt_softmax, the fused tt_sdpa and
 * its backward); only the statistics over their outputs are loops here, in double, with the
 * mean subtracted before squaring (one pass of E[x^2] - E[x]^2 in float32 would lose the
 * variance of d_k = 1024 dots to cancellation). */
#include "train/study/study.h"

#include "train/report/maps.h"

#include "autograd/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* bump-allocator rounding (64 bytes per allocation) and the scalars, for a few dozen tensors */
#define STUDY_SLACK ((size_t)64 << 10)
#define STUDY_META ((size_t)1 << 20)

tt_study_opts tt_study_defaults(uint64_t seed)
{
    return (tt_study_opts){.n_dk = 5, .dk = {4, 16, 64, 256, 1024}, .samples = 10000, .T = 16,
                           .seed = seed};
}

static void check_opts(const tt_study_opts *o)
{
    TT_ASSERT_MSG(o->n_dk >= 1 && o->n_dk <= TT_STUDY_MAX_DK, "study: n_dk %d outside 1..%d",
                  o->n_dk, TT_STUDY_MAX_DK);
    for (int i = 0; i < o->n_dk; i++)
        TT_ASSERT_MSG(o->dk[i] >= 1, "study: dk[%d] = %d must be positive", i, o->dk[i]);
    TT_ASSERT_MSG(o->samples >= 2 && o->T >= 1, "study: samples %d (>= 2) or T %d (>= 1)",
                  o->samples, o->T);
}

static int max_dk(const tt_study_opts *o)
{
    int m = 0;
    for (int i = 0; i < o->n_dk; i++) m = o->dk[i] > m ? o->dk[i] : m;
    return m;
}

int tt_study_rows(const tt_study_opts *o)
{
    int r = o->samples / o->T;
    return r < 200 ? 200 : r;
}

int tt_study_grad_batch(const tt_study_opts *o, int dk)
{
    int rows = tt_study_rows(o);
    if (dk <= 64) return rows;
    int b = (int)((int64_t)rows * 64 / dk);
    return b < 8 ? 8 : b;
}

/* The reals of each part's arena: 1 holds q, k, their dots and the scaled dots; 2 the queries,
 * keys, scores and both softmaxes; 3 (per d_k, the largest counts) ~16 [B,T,dk] tensors (inputs,
 * leaf grads, both paths' outputs and their grads), ~10 [B,T,T] (weights, scores, logits,
 * softmax and grads), attention scratch, the median's B*T doubles. */
static size_t variance_reals(const tt_study_opts *o)
{
    return (size_t)o->samples * (2 * (size_t)max_dk(o) + 2);
}

static size_t saturation_reals(const tt_study_opts *o)
{
    const size_t rows = (size_t)tt_study_rows(o), T = (size_t)o->T;
    return rows * ((size_t)max_dk(o) * (1 + T) + 4 * T);
}

static size_t gradient_reals(const tt_study_opts *o)
{
    const size_t T = (size_t)o->T;
    size_t need = 0;
    for (int i = 0; i < o->n_dk; i++) {
        size_t B = (size_t)tt_study_grad_batch(o, o->dk[i]);
        size_t n = 16 * B * T * (size_t)o->dk[i] + 10 * B * T * T + 4 * T * T + 2 * B * T;
        need = n > need ? n : need;
    }
    return need;
}

double tt_study_measure_bytes(const tt_study_opts *o)
{
    size_t most = variance_reals(o);
    if (saturation_reals(o) > most) most = saturation_reals(o);
    if (gradient_reals(o) > most) most = gradient_reals(o);
    return 2.0 * (double)(most * sizeof(real) + STUDY_SLACK) + (double)STUDY_META;
}

/* An arena pair (values on the study's device, the tape on the host) and a graph over it, not
 * training (no dropout, no rng needed). */
typedef struct study_graph {
    tt_arena data, meta;
    tt_graph g;
} study_graph;

static void study_graph_init(study_graph *s, const tt_study_opts *o, size_t reals)
{
    tt_arena_init(&s->data, "study-data", o->device, reals * sizeof(real) + STUDY_SLACK);
    tt_arena_init(&s->meta, "study-meta", TT_CPU, STUDY_META);
    tt_graph_init(&s->g, &s->data, &s->meta, NULL);
    s->g.training = false;
}

static void study_graph_free(study_graph *s)
{
    tt_arena_free(&s->data);
    tt_arena_free(&s->meta);
}

/* One Philox stream per (part, d_k): parts and widths never share draws. */
static tt_rng stream_for(uint64_t seed, int part, int dk)
{
    tt_rng r;
    tt_rng_init(&r, seed, ((uint64_t)part << 32) | (uint32_t)dk);
    return r;
}

/* A fresh [shape] var filled with N(0, std^2) from r (drawn on the host, then copied). */
static tt_var *normal_var(tt_graph *g, tt_shape s, tt_rng *r, real std)
{
    real *host = tt_xmalloc((size_t)tt_shape_numel(s) * sizeof(real));
    tt_rng_normal(r, host, tt_shape_numel(s), R(0), std);
    tt_var *v = tt_var_from_host(g, s, TT_REAL, host, false);
    free(host);
    return v;
}


static double mean_of(const real *x, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i];
    return s / (double)n;
}

/* sample variance, divisor n - 1 */
static double var_of(const real *x, int64_t n)
{
    double m = mean_of(x, n), s = 0;
    for (int64_t i = 0; i < n; i++) s += ((double)x[i] - m) * ((double)x[i] - m);
    return s / (double)(n - 1);
}

static double rms_of(const real *x, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    return sqrt(s / (double)n);
}

/* median over the rows of x [rows, C] of each row's RMS; tmp holds rows doubles */
static double median_row_rms(const real *x, int rows, int C, double *tmp)
{
    for (int r = 0; r < rows; r++) tmp[r] = rms_of(x + (int64_t)r * C, C);
    return tt_median(tmp, rows);
}

void tt_study_variance(const tt_study_opts *o, tt_study_var *out)
{
    check_opts(o);
    const int S = o->samples;
    study_graph sg;
    study_graph_init(&sg, o, variance_reals(o));
    tt_graph *g = &sg.g;
    for (int i = 0; i < o->n_dk; i++) {
        const int dk = o->dk[i];
        tt_graph_reset(g);
        tt_rng r = stream_for(o->seed, 1, dk);
        tt_var *q = normal_var(g, tt_shape3(S, 1, dk), &r, R(1));
        tt_var *k = normal_var(g, tt_shape3(S, 1, dk), &r, R(1));
        tt_var *dot = tt_matmul(g, q, k, false, true); /* [S,1,1]: one q.k per sample */
        tt_var *scaled = tt_scale(g, dot, R(1) / R_SQRT((real)dk));
        real *d = tt_tensor_host_copy(g->be, &dot->val);
        real *ds = tt_tensor_host_copy(g->be, &scaled->val);
        out[i] = (tt_study_var){.dk = dk, .var_unscaled = var_of(d, S),
                                .var_scaled = var_of(ds, S), .mean_unscaled = mean_of(d, S)};
        free(d);
        free(ds);
    }
    study_graph_free(&sg);
}

/* mean over rows of [rows, C] of the largest weight and of -sum w log w */
static void row_stats(const real *w, int rows, int C, double *max_w, double *entropy)
{
    double sm = 0, se = 0;
    for (int r = 0; r < rows; r++) {
        const real *row = w + (int64_t)r * C;
        double m = 0;
        for (int j = 0; j < C; j++) m = fmax(m, (double)row[j]);
        sm += m;
        se += tt_attn_row_entropy(row, C);
    }
    *max_w = sm / rows;
    *entropy = se / rows;
}

void tt_study_saturation(const tt_study_opts *o, tt_study_sat *out)
{
    check_opts(o);
    const int rows = tt_study_rows(o), T = o->T;
    study_graph sg;
    study_graph_init(&sg, o, saturation_reals(o));
    tt_graph *g = &sg.g;
    for (int i = 0; i < o->n_dk; i++) {
        const int dk = o->dk[i];
        tt_graph_reset(g);
        tt_rng r = stream_for(o->seed, 2, dk);
        tt_var *q = normal_var(g, tt_shape3(rows, 1, dk), &r, R(1));
        tt_var *keys = normal_var(g, tt_shape3(rows, T, dk), &r, R(1));
        tt_var *scores = tt_matmul(g, q, keys, false, true); /* [rows,1,T] */
        tt_var *w[2] = {tt_softmax(g, scores),
                        tt_softmax(g, tt_scale(g, scores, R(1) / R_SQRT((real)dk)))};
        out[i].dk = dk;
        for (int s = 0; s < 2; s++) {
            real *h = tt_tensor_host_copy(g->be, &w[s]->val);
            row_stats(h, rows, T, &out[i].max_w[s], &out[i].entropy[s]);
            free(h);
        }
    }
    study_graph_free(&sg);
}

/* A leaf over arena memory with a zeroed gradient of its own (leaf gradients accumulate). */
static tt_var *leaf_with_grad(tt_graph *g, tt_tensor val)
{
    tt_tensor grad = tt_arena_tensor(g->data, val.shape, TT_REAL);
    g->be->zero(grad.data, tt_tensor_bytes(&grad));
    return tt_var_alias(g, val, grad, true);
}

static tt_var *constant(tt_graph *g, tt_tensor val)
{
    return tt_var_alias(g, val, tt_tensor_view(NULL, val.shape, TT_REAL, val.device), false);
}

/* One variant of part 3 at width dk (data drawn afresh from the same stream, so both variants
 * see the same Q, K, V, R). Fused and composed paths share one graph and one backward; their
 * leaves alias the same values with separate gradient buffers. */
static void grad_variant(tt_graph *g, const tt_study_opts *o, int dk, int variant,
                         tt_study_grad *res)
{
    const int B = tt_study_grad_batch(o, dk), T = o->T;
    const tt_shape s = tt_shape3(B, T, dk);
    const real scale = variant ? R(1) / R_SQRT((real)dk) : R(1);
    tt_graph_reset(g);
    tt_rng r = stream_for(o->seed, 3, dk);
    tt_tensor qt = normal_var(g, s, &r, R(1))->val, kt = normal_var(g, s, &r, R(1))->val;
    tt_var *v = normal_var(g, s, &r, R(1));
    tt_var *rv = normal_var(g, s, &r, R(1) / R_SQRT((real)dk));

    tt_var *qf = leaf_with_grad(g, qt), *kf = leaf_with_grad(g, kt);
    tt_sdpa_opts so = {.scale = scale};
    tt_var *loss_f = tt_sum(g, tt_mul(g, tt_sdpa(g, qf, kf, v, 1, &so, NULL), rv));

    tt_var *qc = leaf_with_grad(g, qt), *kc = constant(g, kt);
    tt_var *logits = tt_scale(g, tt_matmul(g, qc, kc, false, true), scale); /* [B,T,T] */
    tt_var *oc = tt_matmul(g, tt_softmax(g, logits), v, false, false);
    tt_var *loss_c = tt_sum(g, tt_mul(g, oc, rv));

    tt_backward(g, tt_add(g, loss_f, loss_c));
    real *ds = tt_tensor_host_copy(g->be, &logits->grad);
    real *dq = tt_tensor_host_copy(g->be, &qf->grad);
    real *dkey = tt_tensor_host_copy(g->be, &kf->grad);
    double *tmp = tt_xmalloc((size_t)B * T * sizeof(double));
    res->dscores[variant] = rms_of(ds, logits->grad.n);
    res->dscores_med[variant] = median_row_rms(ds, B * T, T, tmp);
    res->dq[variant] = rms_of(dq, qf->grad.n);
    res->dkey[variant] = rms_of(dkey, kf->grad.n);
    free(tmp);
    free(ds);
    free(dq);
    free(dkey);
}

void tt_study_gradients(const tt_study_opts *o, tt_study_grad *out)
{
    check_opts(o);
    study_graph sg;
    study_graph_init(&sg, o, gradient_reals(o));
    for (int i = 0; i < o->n_dk; i++) {
        out[i].dk = o->dk[i];
        for (int variant = 0; variant < 2; variant++)
            grad_variant(&sg.g, o, o->dk[i], variant, &out[i]);
    }
    study_graph_free(&sg);
}

void tt_study_temperature(const double *scores, int n, const double *taus, int n_tau,
                          double *out)
{
    TT_ASSERT_MSG(n >= 1 && n_tau >= 1, "study temperature: %d scores, %d temperatures", n,
                  n_tau);
    study_graph sg;
    tt_study_opts on_cpu = tt_study_defaults(0);
    study_graph_init(&sg, &on_cpu, (size_t)n * (1 + 2 * (size_t)n_tau));
    tt_graph *g = &sg.g;
    real *host = tt_xmalloc((size_t)n * sizeof(real));
    for (int j = 0; j < n; j++) host[j] = (real)scores[j];
    tt_var *x = tt_var_from_host(g, tt_shape2(1, n), TT_REAL, host, false);
    for (int i = 0; i < n_tau; i++) {
        TT_ASSERT_MSG(taus[i] > 0, "study temperature: tau[%d] = %g must be positive", i,
                      taus[i]);
        tt_var *w = tt_softmax(g, tt_scale(g, x, (real)(1.0 / taus[i])));
        g->be->to_host(host, w->val.data, tt_tensor_bytes(&w->val));
        for (int j = 0; j < n; j++) out[(int64_t)i * n + j] = (double)host[j];
    }
    free(host);
    study_graph_free(&sg);
}

/* header, then rows x cols cells (%.6g), written atomically */
static int write_csv(const char *path, const char *header, const double *cells, int rows,
                     int cols, char *err, size_t errlen)
{
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    bool ok = fprintf(o.f, "%s\n", header) >= 0;
    for (int r = 0; r < rows && ok; r++)
        for (int c = 0; c < cols && ok; c++)
            ok = fprintf(o.f, "%.6g%c", cells[r * cols + c], c + 1 < cols ? ',' : '\n') >= 0;
    if (!ok) tt_errorf(err, errlen, "%s: cannot write %s", path, o.tmp);
    return tt_atomic_close(&o, ok, err, errlen);
}

#define CSV_MAX_COLS 9

static void check_rows(int n)
{
    TT_ASSERT_MSG(n >= 0 && n <= TT_STUDY_MAX_DK, "study csv: %d rows outside 0..%d", n,
                  TT_STUDY_MAX_DK);
}

int tt_study_write_csv_var(const char *path, const tt_study_var *v, int n, char *err,
                           size_t errlen)
{
    check_rows(n);
    double c[TT_STUDY_MAX_DK * CSV_MAX_COLS];
    for (int i = 0; i < n; i++) {
        double row[4] = {v[i].dk, v[i].var_unscaled, v[i].var_scaled, v[i].mean_unscaled};
        memcpy(c + i * 4, row, sizeof row);
    }
    return write_csv(path, "dk,var_unscaled,var_scaled,mean_unscaled", c, n, 4, err, errlen);
}

int tt_study_write_csv_sat(const char *path, const tt_study_sat *s, int n, char *err,
                           size_t errlen)
{
    check_rows(n);
    double c[TT_STUDY_MAX_DK * CSV_MAX_COLS];
    for (int i = 0; i < n; i++) {
        double row[5] = {s[i].dk, s[i].max_w[0], s[i].max_w[1], s[i].entropy[0], s[i].entropy[1]};
        memcpy(c + i * 5, row, sizeof row);
    }
    return write_csv(path, "dk,max_w_unscaled,max_w_scaled,entropy_unscaled,entropy_scaled", c,
                     n, 5, err, errlen);
}

int tt_study_write_csv_grad(const char *path, const tt_study_grad *gr, int n, char *err,
                            size_t errlen)
{
    check_rows(n);
    double c[TT_STUDY_MAX_DK * CSV_MAX_COLS];
    for (int i = 0; i < n; i++) {
        double row[9] = {gr[i].dk,          gr[i].dscores[0],    gr[i].dscores[1],
                         gr[i].dq[0],       gr[i].dq[1],         gr[i].dkey[0],
                         gr[i].dkey[1],     gr[i].dscores_med[0], gr[i].dscores_med[1]};
        memcpy(c + i * 9, row, sizeof row);
    }
    return write_csv(path,
                     "dk,dscores_unscaled,dscores_scaled,dq_unscaled,dq_scaled,dkey_unscaled,"
                     "dkey_scaled,dscores_med_unscaled,dscores_med_scaled",
                     c, n, 9, err, errlen);
}
