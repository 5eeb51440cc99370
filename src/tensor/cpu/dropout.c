/* cpu/dropout.c: inverted dropout with a counter-based mask, split over the pool.
 *   keep_i = uniform(at, i) >= p,  y_i = x_i * keep_i / (1 - p),  dx_i += dy_i * keep_i / (1 - p)
 * The mask depends only on (seed, stream, counter, i), so it is the same for any thread count
 * and on any backend. Saves the mask, one byte per element.
 * Fused, with the same masks:
 *   relu then dropout   in place, x_i = keep_i * max(x_i, 0) / (1 - p); saves nothing, since
 *                       dx_i += dy_i / (1 - p) exactly where the output is > 0
 *   dropout then add    in place, x_i = res_i + keep_i * x_i / (1 - p); saves the mask
 *   gelu then dropout   y_i = keep_i * gelu(x_i) / (1 - p), the mask saved and gelu'(x_i)
 *                       written for the backward (over x when the caller says so); dx_i +=
 *                       dy_i * keep_i / (1 - p) * gelu'(x_i). The products are the unfused
 *                       ops', in their order: the same bits. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"

#include <string.h>

/* keep bit of element e of the draw at `at`, through the Philox core: the scalar path, the
 * per-element computation a device kernel makes */
static inline uint8_t keep_one(const tt_rng *at, int64_t e, uint32_t thr)
{
    uint32_t w = tt_philox_word(at->seed, at->stream, at->counter + (uint64_t)e);
    return (uint8_t)tt_philox_keep(w, thr);
}

void tt_cpu_keep_mask(uint8_t *keep, const tt_rng *at, int64_t first, int64_t n, real p)
{
    /* uniform >= p  <=>  (word >> 8) >= ceil(p * 2^24) (philox.h): an integer compare, with
     * the same threshold in the scalar head and tail and in the AVX2 blocks between them */
    uint32_t thr = tt_philox_keep_threshold((double)p);
    /* a rank's share of a draw may start inside a Philox block (tt_graph_take): the same
     * words from the block's start, elements counted s further */
    tt_rng aligned = *at;
    aligned.counter &= ~(uint64_t)3;
    first += (int64_t)(at->counter & 3);
    at = &aligned;
    int64_t e = 0;
    for (; (first + e) % 4 && e < n; e++) keep[e] = keep_one(at, first + e, thr);
    int64_t n32 = (n - e) / (4 * TT_RNG_LANES);
    tt_rng_keep_at(at, (first + e) / 4, thr, n32, keep + e);
    e += n32 * 4 * TT_RNG_LANES;
    for (; e < n; e++) keep[e] = keep_one(at, first + e, thr);
}

typedef struct drop {
    real *y;
    uint8_t *mask;
    real *deriv; /* gelu: gelu'(x), written by the forward (or NULL), read by the backward */
    const real *x, *res;
    real p;
    tt_rng at;
    bool acc; /* backward: add into y, or write it */
} drop;

/* y (n) = keep ? x * scale : 0; y may be x. Products first, then a select: branch-free, so the
 * loop vectorises (same values); no restrict, so GCC checks the overlap at run time, and an
 * in-place call (distance 0) passes it. */
static void masked_scale(real *y, const real *x, const uint8_t *keep, real scale, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        real v = x[i] * scale;
        y[i] = keep[i] ? v : R(0);
    }
}

TT_VEC static void dropout_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    tt_cpu_keep_mask(d->mask + lo, &d->at, lo, hi - lo, d->p);
    masked_scale(d->y + lo, d->x + lo, d->mask + lo, R(1) / (R(1) - d->p), hi - lo);
}

void tt_cpu_dropout_forward(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                            int64_t n)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    drop d = {.y = out, .mask = mask, .x = inp, .p = p, .at = at};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 4, dropout_range, &d);
}

/* two loops, not one with a select on acc: the write needs no read of dx */
TT_VEC static void dropout_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    real scale = R(1) / (R(1) - d->p);
    real *restrict dx = d->y;
    const real *restrict dy = d->x;
    const uint8_t *restrict keep = d->mask;
    if (d->acc)
        for (int64_t i = lo; i < hi; i++) {
            real g = dy[i] * scale;
            dx[i] += keep[i] ? g : R(0);
        }
    else
        for (int64_t i = lo; i < hi; i++) {
            real g = dy[i] * scale;
            dx[i] = keep[i] ? g : R(0);
        }
}

void tt_cpu_dropout_backward(real *dinp, const uint8_t *mask, const real *dout, real p,
                             int64_t n, bool acc)
{
    drop d = {.y = dinp, .mask = (uint8_t *)mask, .x = dout, .p = p, .acc = acc};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, dropout_backward_range, &d);
}

/* relu + dropout draws its mask into a stack buffer, a piece at a time */
#define PIECE 1024

TT_VEC static void relu_dropout_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    real *x = d->y;
    if (d->p == R(0)) {
        for (int64_t i = lo; i < hi; i++) x[i] = x[i] > R(0) ? x[i] : R(0);
        return;
    }
    real scale = R(1) / (R(1) - d->p);
    uint8_t keep[PIECE];
    for (int64_t b = lo; b < hi; b += PIECE) {
        int64_t e = b + PIECE < hi ? b + PIECE : hi;
        tt_cpu_keep_mask(keep, &d->at, b, e - b, d->p);
        real *restrict xb = x + b;
        for (int64_t i = 0; i < e - b; i++) {
            real v = xb[i] * scale;
            xb[i] = keep[i] && xb[i] > R(0) ? v : R(0);
        }
    }
}

void tt_cpu_relu_dropout_forward(real *x, real p, tt_rng at, int64_t n)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    drop d = {.y = x, .p = p, .at = at};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 4, relu_dropout_range, &d);
}

TT_VEC static void relu_dropout_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    real scale = R(1) / (R(1) - d->p);
    real *restrict dx = d->y;
    const real *restrict out = d->x, *restrict dy = d->res;
    if (d->acc)
        for (int64_t i = lo; i < hi; i++) {
            real g = dy[i] * scale;
            dx[i] += out[i] > R(0) ? g : R(0);
        }
    else
        for (int64_t i = lo; i < hi; i++) {
            real g = dy[i] * scale;
            dx[i] = out[i] > R(0) ? g : R(0);
        }
}

void tt_cpu_relu_dropout_backward(real *dx, const real *out, const real *dout, real p, int64_t n,
                                  bool acc)
{
    drop d = {.y = dx, .x = out, .res = dout, .p = p, .acc = acc};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, relu_dropout_backward_range, &d);
}

TT_VEC static void dropout_add_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    real *x = d->y;
    if (d->p == R(0)) {
        for (int64_t i = lo; i < hi; i++) x[i] = d->res[i] + x[i];
        return;
    }
    real scale = R(1) / (R(1) - d->p);
    tt_cpu_keep_mask(d->mask + lo, &d->at, lo, hi - lo, d->p);
    const real *restrict res = d->res;
    const uint8_t *restrict keep = d->mask;
    for (int64_t i = lo; i < hi; i++) {
        real v = x[i] * scale;
        x[i] = res[i] + (keep[i] ? v : R(0));
    }
}

void tt_cpu_dropout_add_forward(real *x, uint8_t *mask, const real *res, real p, tt_rng at,
                                int64_t n)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    drop d = {.y = x, .mask = mask, .res = res, .p = p, .at = at};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 4, dropout_add_range, &d);
}

/* gelu + dropout, a piece at a time: GELU's vector loop (with the derivative into a stack
 * piece, copied out after, since deriv may be x), then the mask over the same piece while it
 * is in L1 */
TT_VEC static void gelu_dropout_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    real scale = d->p > R(0) ? R(1) / (R(1) - d->p) : R(1), deriv[PIECE];
    for (int64_t b = lo; b < hi; b += PIECE) {
        int64_t e = b + PIECE < hi ? b + PIECE : hi;
        if (d->deriv) {
            tt_cpu_gelu_both_rows(d->y + b, deriv, d->x + b, e - b);
            memcpy(d->deriv + b, deriv, (size_t)(e - b) * sizeof(real));
        } else {
            tt_cpu_gelu_rows(d->y + b, d->x + b, e - b);
        }
        if (d->p == R(0)) continue;
        tt_cpu_keep_mask(d->mask + b, &d->at, b, e - b, d->p);
        masked_scale(d->y + b, d->y + b, d->mask + b, scale, e - b);
    }
}

void tt_cpu_gelu_dropout_forward(real *out, uint8_t *mask, real *deriv, const real *inp, real p,
                                 tt_rng at, int64_t n)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    drop d = {.y = out, .mask = mask, .deriv = deriv, .x = inp, .p = p, .at = at};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 4, gelu_dropout_range, &d);
}

/* dropout's backward into a stack piece, then the product with the saved derivative: the
 * unfused order of the products, dx = (dy * keep * scale) * gelu'(x) */
TT_VEC static void gelu_dropout_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const drop *d = ctx;
    const real *deriv = d->deriv, *dy = d->res;
    if (!d->mask) {
        tt_cpu_mul_rows(d->y + lo, dy + lo, deriv + lo, hi - lo, d->acc);
        return;
    }
    real scale = R(1) / (R(1) - d->p);
    real g[PIECE];
    for (int64_t b = lo; b < hi; b += PIECE) {
        int64_t e = b + PIECE < hi ? b + PIECE : hi;
        masked_scale(g, dy + b, d->mask + b, scale, e - b);
        tt_cpu_mul_rows(d->y + b, g, deriv + b, e - b, d->acc);
    }
}

void tt_cpu_gelu_dropout_backward(real *dinp, const uint8_t *mask, const real *deriv,
                                  const real *dout, real p, int64_t n, bool acc)
{
    drop d = {.y = dinp, .mask = (uint8_t *)mask, .deriv = (real *)deriv, .res = dout, .p = p,
              .acc = acc};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 4, gelu_dropout_backward_range, &d);
}
