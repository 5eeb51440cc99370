/* cpu/layernorm.c: LayerNorm over the last dimension, with affine weight and bias.
 *   mean = sum x / C, var = sum (x - mean)^2 / C (biased, as PyTorch), rstd = 1/sqrt(var + eps)
 *   xhat = (x - mean) * rstd, y = xhat * w + b.  Saves mean and rstd per row.
 *   backward, per row, with g = dy * w:
 *     dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dy * xhat,  db += dy
 * Row sums in lanes (reduce.h). Rows split over the pool; dw and db are column sums: partial
 * sums over fixed blocks of rows in the same pass as dx, then added in block order. */
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

/* The backward's one pass over the rows: each of LN_BLOCKS fixed blocks of rows (fixed by N
 * alone, not by the thread count) gives dx for its rows and its own partial column sums of
 * dy * xhat and dy into ln_part[b]; a second, small pass adds the blocks' partials to dw and db
 * in block order. So dy and x are read once (a pass by columns over all the rows would read
 * them again), and the sums have the same bits at any thread count. Rows wider than
 * LN_PART_C take that column pass (ln_backward_cols). */
#define LN_BLOCKS 32
#define LN_PART_C 4096
static _Alignas(64) real ln_part[LN_BLOCKS][2][LN_PART_C]; /* kernels run one at a time */

/* the blocks of N rows: LN_BLOCKS, or N if fewer */
static int64_t ln_blocks(int64_t N) { return N < LN_BLOCKS ? N : LN_BLOCKS; }

/* dx of one row (dy, x its rows; m, s its mean and rstd); inlined into each TT_VEC clone */
static inline __attribute__((always_inline)) void ln_dx_row(const ln *l, real *dx, const real *dy,
                                                            const real *x, real m, real s)
{
    const int C = l->C;
    /* mean(g) and mean(g * xhat), g = dy * w, in lanes (reduce.h) */
    tt_lanes_v gv = {0}, gxv = {0};
    int c = 0;
    for (; c + TT_LANES <= C; c += TT_LANES) {
        tt_lanes_v g = tt_lanes_at(dy + c) * tt_lanes_at(l->w + c);
        gv += g;
        gxv += g * (tt_lanes_at(x + c) - m);
    }
    real gt[TT_LANES], gxt[TT_LANES];
    for (int k = 0; c + k < C; k++) {
        gt[k] = dy[c + k] * l->w[c + k];
        gxt[k] = gt[k] * (x[c + k] - m);
    }
    real gmean = tt_lanes_finish(&gv, gt, C - c) / (real)C;
    real gxmean = tt_lanes_finish(&gxv, gxt, C - c) * s / (real)C;
    /* without acc dx is not read: 0 + the term, the bits of a zeroed gradient added to */
    for (c = 0; c < C; c++)
        dx[c] = (l->acc ? dx[c] : R(0)) + s * (dy[c] * l->w[c] - gmean - (x[c] - m) * s * gxmean);
}

TT_VEC static void ln_backward_blocks(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ln *l = ctx;
    const int C = l->C;
    for (int64_t b = lo; b < hi; b++) {
        int64_t r0 = l->N * b / ln_blocks(l->N), r1 = l->N * (b + 1) / ln_blocks(l->N);
        real *pw = ln_part[b][0], *pb = ln_part[b][1];
        if (l->dw)
            for (int c = 0; c < C; c++) pw[c] = R(0);
        if (l->db)
            for (int c = 0; c < C; c++) pb[c] = R(0);
        for (int64_t r = r0; r < r1; r++) {
            const real *x = l->x + r * C, *dy = l->dy + r * C;
            real m = l->cmean[r], s = l->crstd[r];
            if (l->y) ln_dx_row(l, l->y + r * C, dy, x, m, s);
            if (l->dw)
                for (int c = 0; c < C; c++) pw[c] += dy[c] * ((x[c] - m) * s);
            if (l->db)
                for (int c = 0; c < C; c++) pb[c] += dy[c];
        }
    }
}

/* dw, db += the blocks' partials, in block order; split by columns */
TT_VEC static void ln_backward_sum_parts(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ln *l = ctx;
    for (int64_t b = 0; b < ln_blocks(l->N); b++) {
        if (l->dw)
            for (int64_t c = lo; c < hi; c++) l->dw[c] += ln_part[b][0][c];
        if (l->db)
            for (int64_t c = lo; c < hi; c++) l->db[c] += ln_part[b][1][c];
    }
}

TT_VEC static void ln_backward_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ln *l = ctx;
    for (int64_t r = lo; r < hi; r++)
        ln_dx_row(l, l->y + r * l->C, l->dy + r * l->C, l->x + r * l->C, l->cmean[r],
                  l->crstd[r]);
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
    int64_t col_grain = N * C >= TT_CPU_GRAIN ? TT_CPU_ALIGN : C;
    if ((dweight || dbias) && C <= LN_PART_C && N > 0) {
        /* blocks of about N / LN_BLOCKS rows: as many per range as the rows' grain asks */
        int64_t nb = ln_blocks(N), per = (N + nb - 1) / nb;
        int64_t grain = tt_cpu_row_grain(C) / 2 / per;
        tt_pool_for(nb, 1, grain > 1 ? grain : 1, ln_backward_blocks, &l);
        tt_pool_for(C, TT_CPU_ALIGN, col_grain, ln_backward_sum_parts, &l);
        return;
    }
    if (dinp) tt_pool_for(N, 1, tt_cpu_row_grain(C) / 2, ln_backward_rows, &l);
    if (dweight || dbias) tt_pool_for(C, TT_CPU_ALIGN, col_grain, ln_backward_cols, &l);
}
