/* reduce.h: row sums and exp for the row kernels (softmax, LayerNorm, cross-entropy),
 * written so that they vectorise under the strict IEEE flags of the Makefile.
 *
 * Sums: a plain `s += x[c]` loop is one chain of dependent additions (GCC may not reorder
 * float sums), 4 cycles each; here lane k
 * sums x[k], x[k + 8], x[k + 16], ... and the 8 lanes are added in a fixed order at the end.
 * The order of every addition is written down, so the result is the same on every run and at
 * any thread count; it differs from the sequential sum only by rounding. */
#ifndef TT_CPU_REDUCE_H
#define TT_CPU_REDUCE_H

#include "tensor/real.h"

#include <stdint.h>

#define TT_LANES 8

/* exp(x) for x <= 0 (a softmax's x - max, a cross-entropy's x - lse), as a loop body GCC
 * vectorises; libm's expf is a call per element (about 4% of a small training step).
 * float32: x = k ln2 + r with k = round(x / ln2) and |r| <= ln2/2 (ln2 in two parts, so r is
 * exact), exp(r) by its Taylor series to r^7/7! (truncation below 1e-8 relative), times 2^k
 * built in the exponent bits. Within 2 ulp of the exact value (tests/test_kernels.c checks
 * 4 ulp over the whole range); exp(0) = 1 and exp(-inf) = 0 exactly; below -87.3 (results
 * under FLT_MIN) it returns 0; NaN gives NaN. Meant for x <= 0 (correct up to x = 88).
 * float64 builds use libm's exp: they are for checking, not speed. */
#ifdef TT_DOUBLE
static inline real tt_exp_nonpos(real x) { return R_EXP(x); }
#else
static inline real tt_exp_nonpos(real x)
{
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693145751953125f;
    const float ln2_lo = 1.42860682030941723e-6f, round = 12582912.0f; /* 1.5 * 2^23 */
    float xc = x > -87.3f ? x : -87.3f; /* NaN too: no NaN reaches the integer conversion */
    xc = xc < 88.0f ? xc : 88.0f;       /* 2^k stays finite for a small positive x as well */
    float kf = (xc * log2e + round) - round; /* round to nearest, in [-126, 0] */
    float r = (xc - kf * ln2_hi) - kf * ln2_lo;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union {
        uint32_t u;
        float f;
    } scale = {.u = (uint32_t)((int32_t)kf + 127) << 23};
    float y = p * scale.f;
    return x > -87.3f ? y : x <= -87.3f ? 0.0f : x; /* the last: NaN stays NaN */
}
#endif

static inline real tt_lanes_total(const real acc[TT_LANES])
{
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

/* max of x[0..n) (-inf for n = 0), in lanes like the sums: the max is exact, so the order
 * changes nothing (at most which zero, +0 or -0, and x - m is the same for both) */
static inline real tt_row_max(const real *x, int n)
{
    real acc[TT_LANES] = {-R_INF, -R_INF, -R_INF, -R_INF, -R_INF, -R_INF, -R_INF, -R_INF};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES)
        for (int k = 0; k < TT_LANES; k++) acc[k] = x[c + k] > acc[k] ? x[c + k] : acc[k];
    for (int k = 0; c < n; c++, k++) acc[k] = x[c] > acc[k] ? x[c] : acc[k];
    real m = acc[0];
    for (int k = 1; k < TT_LANES; k++) m = acc[k] > m ? acc[k] : m;
    return m;
}

/* sum of x[0..n) */
static inline real tt_row_sum(const real *x, int n)
{
    real acc[TT_LANES] = {0};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES)
        for (int k = 0; k < TT_LANES; k++) acc[k] += x[c + k];
    for (int k = 0; c < n; c++, k++) acc[k] += x[c];
    return tt_lanes_total(acc);
}

/* sum of (x - m)^2 over x[0..n) */
static inline real tt_row_sq_dev(const real *x, real m, int n)
{
    real acc[TT_LANES] = {0};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES)
        for (int k = 0; k < TT_LANES; k++) acc[k] += (x[c + k] - m) * (x[c + k] - m);
    for (int k = 0; c < n; c++, k++) acc[k] += (x[c] - m) * (x[c] - m);
    return tt_lanes_total(acc);
}

/* sum of x * y over [0..n) */
static inline real tt_row_dot(const real *x, const real *y, int n)
{
    real acc[TT_LANES] = {0};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES)
        for (int k = 0; k < TT_LANES; k++) acc[k] += x[c + k] * y[c + k];
    for (int k = 0; c < n; c++, k++) acc[k] += x[c] * y[c];
    return tt_lanes_total(acc);
}

/* y[0..n) = softmax(x[0..n)): y_c = exp(x_c - m) / sum exp(x_k - m), m = max x; a row that is
 * all -inf gives zeros. In place (y == x) too. A longer row whose extra entries are -inf gives
 * the same bits on [0, n): those add exp(-inf) = +0 to the lanes' sums and leave the max. */
static inline void tt_softmax_row(real *y, const real *x, int n)
{
    real m = tt_row_max(x, n);
    if (m == -R_INF) {
        for (int c = 0; c < n; c++) y[c] = R(0);
        return;
    }
    for (int c = 0; c < n; c++) y[c] = tt_exp_nonpos(x[c] - m);
    real inv = R(1) / tt_row_sum(y, n);
    for (int c = 0; c < n; c++) y[c] *= inv;
}

#endif
