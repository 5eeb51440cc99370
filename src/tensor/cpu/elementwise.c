/* cpu/elementwise.c: add, scale, axpy, bias add and elementwise multiply, on the pool.
 *   out = a + b       backward: da += dout, db += dout          (axpy with alpha 1)
 *   out = s * x       backward: dx += s * dout                  (axpy with alpha s)
 *   out = x + bias    backward: dx += dout, dbias += colsum(dout)
 *   out = a * b       backward: da += dout * b, db += dout * a
 * Each kernel is a loop over a range of elements (or rows), split by tt_pool_for. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"

typedef struct ew {
    real *y;
    const real *a, *b;
    real s;
    int C;
} ew;

TT_VEC static void axpy_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ew *e = ctx;
    for (int64_t i = lo; i < hi; i++) e->y[i] += e->s * e->a[i];
}

void tt_cpu_axpy(real *y, real alpha, const real *x, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, axpy_range, &(ew){.y = y, .a = x, .s = alpha});
}

TT_VEC static void add_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ew *e = ctx;
    for (int64_t i = lo; i < hi; i++) e->y[i] = e->a[i] + e->b[i];
}

void tt_cpu_add_forward(real *out, const real *a, const real *b, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, add_range, &(ew){.y = out, .a = a, .b = b});
}

TT_VEC static void scale_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ew *e = ctx;
    for (int64_t i = lo; i < hi; i++) e->y[i] = e->s * e->a[i];
}

void tt_cpu_scale_forward(real *out, const real *inp, real s, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, scale_range, &(ew){.y = out, .a = inp, .s = s});
}

/* rows [lo, hi) of out (N,C) = inp + bias (C), or the bias alone when inp is NULL */
TT_VEC static void bias_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ew *e = ctx;
    for (int64_t r = lo; r < hi; r++) {
        real *y = e->y + r * e->C;
        if (!e->a) {
            for (int c = 0; c < e->C; c++) y[c] = e->b[c];
            continue;
        }
        const real *x = e->a + r * e->C;
        for (int c = 0; c < e->C; c++) y[c] = x[c] + e->b[c];
    }
}

void tt_cpu_bias_forward(real *out, const real *inp, const real *bias, int64_t N, int C)
{
    tt_pool_for(N, 1, tt_cpu_row_grain(C), bias_rows, &(ew){.y = out, .a = inp, .b = bias, .C = C});
}

/* columns [lo, hi) of dbias += the column sums of dout (N,C) */
typedef struct colsum {
    real *dbias;
    const real *dout;
    int64_t N;
    int C;
} colsum;

TT_VEC static void colsum_cols(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const colsum *s = ctx;
    for (int64_t r = 0; r < s->N; r++) {
        const real *dy = s->dout + r * s->C;
        for (int64_t c = lo; c < hi; c++) s->dbias[c] += dy[c];
    }
}

/* dbias (C), dout (N,C): split by columns, so each sum runs over the rows in order, as on one
 * thread */
void tt_cpu_bias_backward(real *dbias, const real *dout, int64_t N, int C)
{
    colsum s = {.dbias = dbias, .dout = dout, .N = N, .C = C};
    tt_pool_for(C, TT_CPU_ALIGN, N * C >= TT_CPU_GRAIN ? TT_CPU_ALIGN : C, colsum_cols, &s);
}

TT_VEC static void mul_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ew *e = ctx;
    for (int64_t i = lo; i < hi; i++) e->y[i] = e->a[i] * e->b[i];
}

void tt_cpu_mul_forward(real *out, const real *a, const real *b, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, mul_range, &(ew){.y = out, .a = a, .b = b});
}

typedef struct mulb {
    real *da, *db;
    const real *dout, *a, *b;
} mulb;

TT_VEC static void mul_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const mulb *m = ctx;
    if (m->da)
        for (int64_t i = lo; i < hi; i++) m->da[i] += m->dout[i] * m->b[i];
    if (m->db)
        for (int64_t i = lo; i < hi; i++) m->db[i] += m->dout[i] * m->a[i];
}

/* da, db may be NULL; when a == b (x*x) both are written and both contributions land. */
void tt_cpu_mul_backward(real *da, real *db, const real *dout, const real *a, const real *b,
                         int64_t n)
{
    mulb m = {.da = da, .db = db, .dout = dout, .a = a, .b = b};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, mul_backward_range, &m);
}
