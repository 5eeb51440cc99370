/* reduce.h: row sums and exp for the row kernels (softmax, LayerNorm, cross-entropy),
 * written so that they vectorise under the strict IEEE flags of the Makefile.
 *
 * Sums: a plain `s += x[c]` loop is one chain of dependent additions (GCC may not reorder
 * float sums), 4 cycles each; here lane k sums x[k], x[k + 16], x[k + 32], ... and the 16
 * lanes are added in a fixed order at the end (tt_lanes_total). The lanes are one GCC vector
 * (tt_lanes_v: one AVX-512 register, two AVX2 ones, four SSE ones), so the loops vectorise
 * whatever GCC's SLP pass makes of a loop over an array of lanes (it left LayerNorm's
 * backward scalar). The order of every addition is written down, so the result is the same
 * on every run, at any thread count and any vector width; it differs from the sequential sum
 * only by rounding. */
#ifndef TT_CPU_REDUCE_H
#define TT_CPU_REDUCE_H

#include "tensor/real.h"

#include <stdint.h>
#include <string.h>

#define TT_LANES 16

/* The functions below are always inlined: each clone of a TT_VEC kernel (cpu.h) gets their
 * loops at its own vector width, where a call would go to one copy built for the baseline. */
#define TT_ROW_FN static inline __attribute__((always_inline))

/* TT_LANES reals as one vector: + and * lane by lane, IEEE, no contraction (-ffp-contract=off).
 * Loads go through tt_lanes_at, the same vector at a real's alignment (rows are not aligned);
 * no function takes or returns one (the ABI of a 64-byte vector depends on the target).
 * tt_lanes_i: the lanes' comparison masks. */
typedef real tt_lanes_v __attribute__((vector_size(TT_LANES * sizeof(real))));
typedef real tt_lanes_u __attribute__((vector_size(TT_LANES * sizeof(real)), aligned(sizeof(real)),
                                       may_alias));
#define tt_lanes_at(p) (*(const tt_lanes_u *)(p))
#ifdef TT_DOUBLE
typedef int64_t tt_lanes_i __attribute__((vector_size(TT_LANES * sizeof(real))));
#else
typedef int32_t tt_lanes_i __attribute__((vector_size(TT_LANES * sizeof(real))));
#endif

/* exp(x) for x <= 0 (a softmax's x - max, a cross-entropy's x - lse), as a loop body GCC
 * vectorises; libm's expf is a call per element (about 4% of a small training step).
 * float32: x = k ln2 + r with k = round(x / ln2) and |r| <= ln2/2 (ln2 in two parts, so r is
 * exact), exp(r) by its Taylor series to r^7/7! (truncation below 1e-8 relative), times 2^k
 * built in the exponent bits. Within 2 ulp of the exact value (tests/test_kernels.c checks
 * 4 ulp over the whole range); exp(0) = 1 and exp(-inf) = 0 exactly; below -87.3 (results
 * under FLT_MIN) it returns 0; NaN gives NaN. Meant for x <= 0 (correct up to x = 88).
 * float64 builds use libm's exp: they are for checking, not speed. */
#ifdef TT_DOUBLE
TT_ROW_FN real tt_exp_nonpos(real x) { return R_EXP(x); }
#else
TT_ROW_FN real tt_exp_nonpos(real x)
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

/* the lanes' total: lane k + lane k + 8, then those 8 in pairs of pairs; for reals, and for
 * doubles (the clipping norm's sum of squares in a float32 build, cpu/optimizer.c) */
#define TT_LANES_TOTAL(T, name)                                                                 \
    TT_ROW_FN T name(const T acc[TT_LANES])                                                     \
    {                                                                                           \
        T a[8];                                                                                 \
        for (int k = 0; k < 8; k++) a[k] = acc[k] + acc[k + 8];                                 \
        return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));               \
    }
TT_LANES_TOTAL(real, tt_lanes_total)
TT_LANES_TOTAL(double, tt_lanes_total_f64)

/* the total of a row's lanes *acc once lane k has also taken tail[k], k < n: the row's last
 * n < TT_LANES terms */
TT_ROW_FN real tt_lanes_finish(const tt_lanes_v *acc, const real *tail, int n)
{
    real a[TT_LANES];
    memcpy(a, acc, sizeof a);
    for (int k = 0; k < n; k++) a[k] += tail[k];
    return tt_lanes_total(a);
}

/* max of x[0..n) (-inf for n = 0), in lanes like the sums: the max is exact, so the order
 * changes nothing (at most which zero, +0 or -0, and x - m is the same for both) */
TT_ROW_FN real tt_row_max(const real *x, int n)
{
    tt_lanes_v v = (tt_lanes_v){0} - R_INF;
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES) { /* v = x > v ? x : v, lane by lane */
        tt_lanes_v xv = tt_lanes_at(x + c);
        tt_lanes_i gt = xv > v;
        v = (tt_lanes_v)(((tt_lanes_i)xv & gt) | ((tt_lanes_i)v & ~gt));
    }
    real acc[TT_LANES];
    memcpy(acc, &v, sizeof acc);
    for (int k = 0; c < n; c++, k++) acc[k] = x[c] > acc[k] ? x[c] : acc[k];
    real m = acc[0];
    for (int k = 1; k < TT_LANES; k++) m = acc[k] > m ? acc[k] : m;
    return m;
}

/* sum of x[0..n) */
TT_ROW_FN real tt_row_sum(const real *x, int n)
{
    tt_lanes_v acc = {0};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES) acc += tt_lanes_at(x + c);
    return tt_lanes_finish(&acc, x + c, n - c);
}

/* sum of (x - m)^2 over x[0..n) */
TT_ROW_FN real tt_row_sq_dev(const real *x, real m, int n)
{
    tt_lanes_v acc = {0};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES) {
        tt_lanes_v d = tt_lanes_at(x + c) - m;
        acc += d * d;
    }
    real t[TT_LANES];
    for (int k = 0; c + k < n; k++) t[k] = (x[c + k] - m) * (x[c + k] - m);
    return tt_lanes_finish(&acc, t, n - c);
}

/* sum of x * y over [0..n) */
TT_ROW_FN real tt_row_dot(const real *x, const real *y, int n)
{
    tt_lanes_v acc = {0};
    int c = 0;
    for (; c + TT_LANES <= n; c += TT_LANES) acc += tt_lanes_at(x + c) * tt_lanes_at(y + c);
    real t[TT_LANES];
    for (int k = 0; c + k < n; k++) t[k] = x[c + k] * y[c + k];
    return tt_lanes_finish(&acc, t, n - c);
}

/* sum of exp(x - m) over x[0..n) (x <= m), in lanes: the exps a piece at a time into a buffer
 * (a loop GCC vectorises), then added to the lanes */
#define TT_EXP_PIECE 256
TT_ROW_FN real tt_row_sum_exp(const real *x, real m, int n)
{
    _Alignas(64) real e[TT_EXP_PIECE];
    tt_lanes_v acc = {0};
    int c = 0;
    for (; c + TT_LANES <= n;) {
        int len = (n - c) / TT_LANES * TT_LANES;
        len = len < TT_EXP_PIECE ? len : TT_EXP_PIECE;
        for (int j = 0; j < len; j++) e[j] = tt_exp_nonpos(x[c + j] - m);
        for (int j = 0; j < len; j += TT_LANES) acc += tt_lanes_at(e + j);
        c += len;
    }
    for (int k = 0; c + k < n; k++) e[k] = tt_exp_nonpos(x[c + k] - m);
    return tt_lanes_finish(&acc, e, n - c);
}

/* y[0..n) = softmax(x[0..n)): y_c = exp(x_c - m) / sum exp(x_k - m), m = max x; a row that is
 * all -inf gives zeros. In place (y == x) too. A longer row whose extra entries are -inf gives
 * the same bits on [0, n): those add exp(-inf) = +0 to the lanes' sums and leave the max. */
TT_ROW_FN void tt_softmax_row(real *y, const real *x, int n)
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
