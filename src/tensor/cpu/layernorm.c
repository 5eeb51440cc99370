/* cpu/layernorm.c: LayerNorm over the last dimension, with affine weight and bias.
 *   mean = sum x / C, var = sum (x - mean)^2 / C (biased, as PyTorch), rstd = 1/sqrt(var + eps)
 *   xhat = (x - mean) * rstd, y = xhat * w + b.  Saves mean and rstd per row.
 *   backward, per row, with g = dy * w:
 *     dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dy * xhat,  db += dy
 * Row sums in lanes (reduce.h). Rows split over the pool; dw and db are column sums, so they
 * are a second pass split by columns (each sum over the rows in order, as on one thread). */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/cpu/reduce.h"

typedef struct ln {
    real *y, *mean, *rstd, *dw, *db;
    const real *x, *w, *b, *dy;
    const real *cmean, *crstd;
    real eps;
    int64_t N;
    int C;
    bool acc; /* backward: dx added to (else written) */
} ln;

TT_VEC static void ln_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ln *l = ctx;
    const int C = l->C;
    for (int64_t r = lo; r < hi; r++) {
        const real *x = l->x + r * C;
        real *y = l->y + r * C;
        real m = tt_row_sum(x, C) / (real)C;
        real v = tt_row_sq_dev(x, m, C) / (real)C;
        real s = R(1) / R_SQRT(v + l->eps);
        for (int c = 0; c < C; c++) y[c] = (x[c] - m) * s * l->w[c] + l->b[c];
        l->mean[r] = m;
        l->rstd[r] = s;
    }
}

/* out (N,C), mean (N), rstd (N), inp (N,C), weight (C), bias (C) */
void tt_cpu_layernorm_forward(real *out, real *mean, real *rstd, const real *inp,
                              const real *weight, const real *bias, int64_t N, int C, real eps)
{
    ln l = {.y = out, .mean = mean, .rstd = rstd, .x = inp, .w = weight, .b = bias, .eps = eps,
            .C = C};
    tt_pool_for(N, 1, tt_cpu_row_grain(C) / 2, ln_rows, &l);
}

TT_VEC static void ln_backward_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ln *l = ctx;
    const int C = l->C;
    for (int64_t r = lo; r < hi; r++) {
        const real *x = l->x + r * C, *dy = l->dy + r * C;
        real m = l->cmean[r], s = l->crstd[r];
        /* mean(g) and mean(g * xhat), g = dy * w, in lanes (reduce.h) */
        real ga[TT_LANES] = {0}, gxa[TT_LANES] = {0};
        int c = 0;
        for (; c + TT_LANES <= C; c += TT_LANES)
            for (int k = 0; k < TT_LANES; k++) {
                real g = dy[c + k] * l->w[c + k];
                ga[k] += g;
                gxa[k] += g * (x[c + k] - m);
            }
        for (int k = 0; c < C; c++, k++) {
            real g = dy[c] * l->w[c];
            ga[k] += g;
            gxa[k] += g * (x[c] - m);
        }
        real gmean = tt_lanes_total(ga) / (real)C, gxmean = tt_lanes_total(gxa) * s / (real)C;
        real *dx = l->y + r * C;
        /* without acc dx is not read: 0 + the term, the bits of a zeroed gradient added to */
        for (c = 0; c < C; c++)
            dx[c] = (l->acc ? dx[c] : R(0)) +
                    s * (dy[c] * l->w[c] - gmean - (x[c] - m) * s * gxmean);
    }
}

TT_VEC static void ln_backward_cols(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ln *l = ctx;
    const int C = l->C;
    for (int64_t r = 0; r < l->N; r++) {
        const real *x = l->x + r * C, *dy = l->dy + r * C;
        real m = l->cmean[r], s = l->crstd[r];
        if (l->dw)
            for (int64_t c = lo; c < hi; c++) l->dw[c] += dy[c] * ((x[c] - m) * s);
        if (l->db)
            for (int64_t c = lo; c < hi; c++) l->db[c] += dy[c];
    }
}

/* dinp (N,C), dweight (C), dbias (C), dout (N,C), inp (N,C), weight (C), mean (N), rstd (N);
 * dinp added to, or written when !acc */
void tt_cpu_layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout,
                               const real *inp, const real *weight, const real *mean,
                               const real *rstd, int64_t N, int C, bool acc)
{
    ln l = {.y = dinp, .dw = dweight, .db = dbias, .x = inp, .w = weight, .dy = dout,
            .cmean = mean, .crstd = rstd, .N = N, .C = C, .acc = acc};
    if (dinp) tt_pool_for(N, 1, tt_cpu_row_grain(C) / 2, ln_backward_rows, &l);
    if (dweight || dbias)
        tt_pool_for(C, TT_CPU_ALIGN, N * C >= TT_CPU_GRAIN ? TT_CPU_ALIGN : C, ln_backward_cols,
                    &l);
}
