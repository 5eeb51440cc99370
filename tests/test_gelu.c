/* test_gelu.c: GELU's math and kernels. Float32: tensor/erf_f32.h's erf, GELU and GELU'
 * against double-precision references over every 257th float of their ranges (tails, tiny and
 * subnormal arguments included) and at the special values, in ulps; the CPU kernels (AVX2 where
 * the CPU has it) give the element functions' bits. Float64: the kernels are exactly the erf
 * form with libm's erf (the form the gradient checks and the PyTorch parity compare with).
 * Both: the fused GELU + dropout kernels give the bits of dropout_forward(gelu_forward) with the
 * same mask, and their backward the unfused backward's values, added or written. */
#include "kernel_ref.h"

#include "tensor/cpu/cpu.h"
#include "tensor/kernel_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef TT_DOUBLE

/* x Phi(x) and its derivative in double; Phi from erfc keeps its relative accuracy for x < 0 */
static double phi_ref(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double gelu_ref(double x) { return x * phi_ref(x); }
static double gelu_deriv_ref(double x)
{
    return phi_ref(x) + x * exp(-0.5 * x * x) / sqrt(2.0 * acos(-1.0));
}

/* every STRIDE-th float: about 4 million per sign and range, in 1-2 s */
#define STRIDE 257

/* The float ulp at |v| (the subnormals' below FLT_MIN), so that errors of results that
 * underflow are counted in the units they are rounded to. */
static double ulp_at(double v)
{
    float f = (float)fabs(v);
    if (f < 0x1p-126f) return 0x1p-149;
    int e;
    frexpf(f, &e);
    return ldexp(1.0, e - 24);
}

typedef struct worst {
    double err;
    float at;
} worst;

static void note(worst *w, double err, float x)
{
    if (err > w->err || err != err) *w = (worst){err, x};
}

START_TEST(test_erf_f32_within_2_ulp)
{
    worst w = {0, 0}, odd = {0, 0};
    for (uint32_t u = 0; u < tt_f32_bits(4.5f); u += STRIDE) { /* above 3.92 erf rounds to 1 */
        float z = tt_f32_from_bits(u);
        double want = erf((double)z);
        note(&w, fabs((double)tt_erf_f32(z) - want) / ulp_at(want), z);
        note(&odd, fabs((double)tt_erf_f32(-z) + (double)tt_erf_f32(z)), z);
    }
    /* every float of [0, 4.5]: 1.45 ulp at most (measured once, outside the suite) */
    ck_assert_msg(w.err <= 2, "erf: %.3f ulp at z = %a", w.err, (double)w.at);
    ck_assert_msg(odd.err == 0, "erf(-z) != -erf(z) at z = %a", (double)odd.at);
}
END_TEST

START_TEST(test_erf_f32_special_values)
{
    ck_assert(tt_erf_f32(0.0f) == 0.0f && !signbit(tt_erf_f32(0.0f)));
    ck_assert(tt_erf_f32(-0.0f) == 0.0f && signbit(tt_erf_f32(-0.0f)));
    ck_assert(tt_erf_f32(INFINITY) == 1.0f && tt_erf_f32(-INFINITY) == -1.0f);
    ck_assert(tt_erf_f32(4.0f) == 1.0f && tt_erf_f32(-1e30f) == -1.0f);
    ck_assert(isnan(tt_erf_f32(NAN)));
    /* tiny and subnormal z: erf(z) = 2z / sqrt(pi), rounded once */
    const float tiny[] = {1e-20f, -3e-30f, 1.5e-38f, 1e-40f, -0x1p-149f};
    for (int i = 0; i < 5; i++) {
        double want = 2.0 * (double)tiny[i] / sqrt(acos(-1.0));
        ck_assert_msg(fabs((double)tt_erf_f32(tiny[i]) - want) <= ulp_at(want), "erf(%a) = %a",
                      (double)tiny[i], (double)tt_erf_f32(tiny[i]));
    }
}
END_TEST

/* GELU within 5 ulp of x Phi(x) over [-16, 12] (it is x itself above 5.6 and underflows below
 * -14), the derivative within 2e-7 absolute (it crosses 0 at -0.75, so not in ulps). The
 * worst over every float of the range (measured once, outside the suite): 4.74 ulp at -1.83
 * (under 1 ulp for 99% of them), 1.47e-7 at 0.89. */
START_TEST(test_gelu_f32_accuracy)
{
    worst wg = {0, 0}, wd = {0, 0};
    for (int neg = 0; neg < 2; neg++)
        for (uint32_t u = 0; u < tt_f32_bits(neg ? 16.0f : 12.0f); u += STRIDE) {
            float x = tt_f32_from_bits(u | (neg ? 0x80000000u : 0));
            double g = gelu_ref((double)x), d = gelu_deriv_ref((double)x);
            note(&wg, fabs((double)tt_gelu_f32(x) - g) / ulp_at(g), x);
            note(&wd, fabs((double)tt_gelu_deriv_f32(x) - d), x);
        }
    ck_assert_msg(wg.err <= 5, "gelu: %.3f ulp at x = %a", wg.err, (double)wg.at);
    ck_assert_msg(wd.err <= 2e-7, "gelu': %.3g off at x = %a", wd.err, (double)wd.at);
}
END_TEST

START_TEST(test_gelu_f32_special_values)
{
    ck_assert(tt_gelu_f32(0.0f) == 0.0f && !signbit(tt_gelu_f32(0.0f)));
    ck_assert(tt_gelu_f32(-0.0f) == 0.0f && signbit(tt_gelu_f32(-0.0f)));
    ck_assert(tt_gelu_deriv_f32(0.0f) == 0.5f && tt_gelu_deriv_f32(-0.0f) == 0.5f);
    const float big[] = {6.0f, 10.0f, 1e10f, 3.4e38f, INFINITY};
    for (int i = 0; i < 5; i++) {
        ck_assert_msg(tt_gelu_f32(big[i]) == big[i], "gelu(%g)", (double)big[i]);
        if (i < 4) ck_assert_msg(tt_gelu_deriv_f32(big[i]) == 1.0f, "gelu'(%g)", (double)big[i]);
    }
    /* far below: -0 (the value underflows), and the derivative 0 */
    ck_assert(tt_gelu_f32(-20.0f) == 0.0f && signbit(tt_gelu_f32(-20.0f)));
    ck_assert(tt_gelu_deriv_f32(-20.0f) == 0.0f && tt_gelu_deriv_f32(-3e38f) == 0.0f);
    /* as the erf form gives them (and PyTorch): -inf * 0 and inf * 0 are NaN */
    ck_assert(isnan(tt_gelu_f32(-INFINITY)) && isnan(tt_gelu_deriv_f32(INFINITY)));
    ck_assert(isnan(tt_gelu_f32(NAN)) && isnan(tt_gelu_deriv_f32(NAN)));
    /* the tail keeps its relative accuracy where 1 + erf(x / sqrt 2) cancels to nothing */
    const float tail[] = {-4.0f, -6.0f, -9.5f, -13.0f};
    for (int i = 0; i < 4; i++) {
        double want = gelu_ref((double)tail[i]);
        ck_assert_msg(fabs((double)tt_gelu_f32(tail[i]) - want) <= 5 * ulp_at(want),
                      "gelu(%g) = %a, want %a", (double)tail[i], (double)tt_gelu_f32(tail[i]),
                      want);
    }
}
END_TEST

/* The kernels (AVX2 loops on a CPU that has it, several threads) give the element functions'
 * bits: on every 4099th float of [-16, 16], the specials, forward and backward. */
START_TEST(test_gelu_kernels_match_elements)
{
    int64_t n = 0, cap = 2 * ((int64_t)tt_f32_bits(16.0f) / 4099 + 1) + 8;
    float *x = tt_test_alloc(cap);
    for (int neg = 0; neg < 2; neg++)
        for (uint32_t u = 0; u < tt_f32_bits(16.0f); u += 4099)
            x[n++] = tt_f32_from_bits(u | (neg ? 0x80000000u : 0));
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -13.5f, 1e-40f, -1e-40f};
    for (int i = 0; i < 8; i++) x[n++] = special[i];
    float *y = tt_test_alloc(n), *dy = randn(n, 700), *dx = randn(n, 701);
    float *want = tt_test_alloc(n), *dwant = dup_real(dx, n);
    be->gelu_forward(y, x, n);
    be->gelu_backward(dx, x, dy, n);
    for (int64_t i = 0; i < n; i++) {
        want[i] = tt_gelu_f32(x[i]);
        dwant[i] += dy[i] * tt_gelu_deriv_f32(x[i]);
    }
    int64_t i = 0, j = 0; /* the first element whose bits differ; no assertion per element */
    while (i < n && memcmp(&y[i], &want[i], sizeof y[i]) == 0) i++;
    while (j < n && memcmp(&dx[j], &dwant[j], sizeof dx[j]) == 0) j++;
    int64_t a = i < n ? i : 0, b = j < n ? j : 0; /* the message's arguments are always read */
    ck_assert_msg(i == n, "gelu(%a): %a, want %a", (double)x[a], (double)y[a], (double)want[a]);
    ck_assert_msg(j == n, "gelu'(%a): %a, want %a", (double)x[b], (double)dx[b],
                  (double)dwant[b]);
    free_all(x, y, dy, dx, want, dwant);
}
END_TEST

#else /* TT_DOUBLE */

/* float64: the erf form with libm's erf, to 1e-15 (absolute below 1, relative above) */
START_TEST(test_gelu_f64_is_the_erf_form)
{
    const int64_t n = 100003;
    real *x = randu(n, 710, -12, 12), *y = tt_test_alloc(n), *dy = randn(n, 711);
    real *dx = randn(n, 712), *d0 = dup_real(dx, n);
    x[0] = 0, x[1] = -0.0, x[2] = 1e-300, x[3] = -30, x[4] = 30;
    be->gelu_forward(y, x, n);
    be->gelu_backward(dx, x, dy, n);
    for (int64_t i = 0; i < n; i++) {
        double cdf = 0.5 * (1.0 + erf(x[i] / sqrt(2.0)));
        double want = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
        double dwant = cdf + x[i] * exp(-0.5 * x[i] * x[i]) / sqrt(2.0 * acos(-1.0));
        ck_assert_msg(fabs(y[i] - want) <= 1e-15 * fmax(1.0, fabs(want)), "gelu(%.17g): %.17g, "
                      "want %.17g", x[i], y[i], want);
        ck_assert_msg(fabs(dx[i] - d0[i] - dy[i] * dwant) <= 1e-15 * fmax(1.0, fabs(d0[i])),
                      "gelu'(%.17g): %.17g, want %.17g", x[i], (dx[i] - d0[i]) / dy[i], dwant);
    }
    free_all(x, y, dy, dx, d0);
}
END_TEST

#endif

/* ---- the fused GELU + dropout --------------------------------------------------------------- */

/* the cursor of a draw of n after `skip` elements of one stream */
static tt_rng draw_at(int64_t skip, int64_t n)
{
    tt_rng r;
    tt_rng_init(&r, 77, 5);
    tt_rng_take(&r, skip);
    return tt_rng_take(&r, n);
}

/* forward: dropout_forward's mask and the bits of dropout_forward(gelu_forward(x)); p = 0:
 * gelu_forward's bits, the mask untouched; the derivative it saves, gelu_backward's with dy 1,
 * into its own buffer, over x itself (the in-place op's call), or not at all (NULL) */
START_TEST(test_gelu_dropout_forward_is_unfused)
{
    static const double P[] = {0, 0.1, 0.5};
    for (int k = 0; k < NSIZES; k++)
        for (int j = 0; j < 3; j++)
            for (int where = 0; where < 3; where++) {
                int64_t n = SIZES[k];
                real p = (real)P[j];
                tt_rng at = draw_at(13 * k, n);
                real *x = randn(n, 720), *h = tt_test_alloc(n), *want = tt_test_alloc(n);
                real *out = tt_test_alloc(n), *d = tt_test_alloc(n), *wd = tt_test_alloc(n);
                real *ones = tt_test_alloc(n), *x2 = tt_test_alloc(n);
                uint8_t *mask = tt_xmalloc((size_t)n), *wmask = tt_xmalloc((size_t)n);
                for (int64_t i = 0; i < n; i++) {
                    x[i] *= R(4);
                    x2[i] = x[i];
                    ones[i] = R(1);
                    wd[i] = R(0);
                }
                memset(mask, 0xab, (size_t)n);
                be->gelu_forward(h, x, n);
                be->gelu_backward(wd, x, ones, n); /* 0 + 1 * gelu'(x): gelu'(x) exactly */
                if (p > R(0))
                    be->dropout_forward(want, wmask, h, p, at, n);
                else
                    memcpy(want, h, (size_t)n * sizeof(real));
                real *deriv = where == 0 ? d : where == 1 ? x2 : NULL;
                be->gelu_dropout_forward(out, p > R(0) ? mask : NULL, deriv, where == 1 ? x2 : x,
                                         p, at, n);
                const char *what = label("gelu_dropout_forward n=%lld p=%g deriv %s", (long long)n,
                                         (double)p, where == 0 ? "apart" : where == 1 ? "over x"
                                                                                      : "NULL");
                ck_assert_msg(memcmp(out, want, (size_t)n * sizeof(real)) == 0, "%s: values",
                              what);
                if (p > R(0))
                    ck_assert_msg(memcmp(mask, wmask, (size_t)n) == 0, "%s: mask", what);
                if (deriv)
                    ck_assert_msg(memcmp(deriv, wd, (size_t)n * sizeof(real)) == 0,
                                  "%s: gelu'(x)", what);
                free_all(x, h, want, out, d, wd, ones, x2, mask, wmask);
            }
}
END_TEST

/* backward, from the derivative the forward saved: what dropout_backward into a zeroed gradient,
 * then gelu_backward, give (mask NULL: gelu_backward alone), added to a prefill (acc) or written
 * over NaN (a fresh gradient) */
START_TEST(test_gelu_dropout_backward_is_unfused)
{
    for (int k = 0; k < NSIZES; k++)
        for (int j = 0; j < 2; j++)
            for (int acc = 0; acc < 2; acc++) {
                int64_t n = SIZES[k];
                real p = j ? R(0.3) : R(0);
                real *x = randn(n, 730), *dy = randn(n, 731), *g0 = randn(n, 732);
                real *dh = tt_test_alloc(n), *want = tt_test_alloc(n), *dx = tt_test_alloc(n);
                real *y = tt_test_alloc(n), *d = tt_test_alloc(n);
                uint8_t *mask = tt_xmalloc((size_t)n);
                for (int64_t i = 0; i < n; i++) x[i] *= R(4);
                be->gelu_dropout_forward(y, mask, d, x, p, draw_at(8, n), n);
                memset(dh, 0, (size_t)n * sizeof(real));
                if (p > R(0))
                    be->dropout_backward(dh, mask, dy, p, n, true);
                else
                    memcpy(dh, dy, (size_t)n * sizeof(real));
                for (int64_t i = 0; i < n; i++) {
                    want[i] = acc ? g0[i] : R(0);
                    dx[i] = acc ? g0[i] : (real)NAN;
                }
                be->gelu_backward(want, x, dh, n);
                be->gelu_dropout_backward(dx, p > R(0) ? mask : NULL, d, dy, p, n, acc);
                ck_assert_close(label("gelu_dropout_backward n=%lld p=%g acc=%d", (long long)n,
                                      (double)p, acc),
                                dx, want, n, 0, 0);
                free_all(x, dy, g0, dh, want, dx, y, d, mask);
            }
}
END_TEST

Suite *gelu_suite(void)
{
    Suite *s = suite_create("gelu");
    TCase *tc = new_tcase(s, "math");
#ifndef TT_DOUBLE
    tcase_add_test(tc, test_erf_f32_within_2_ulp);
    tcase_add_test(tc, test_erf_f32_special_values);
    tcase_add_test(tc, test_gelu_f32_accuracy);
    tcase_add_test(tc, test_gelu_f32_special_values);
    tcase_add_test(tc, test_gelu_kernels_match_elements);
#else
    tcase_add_test(tc, test_gelu_f64_is_the_erf_form);
#endif
    tc = new_tcase(s, "fused dropout");
    tcase_add_test(tc, test_gelu_dropout_forward_is_unfused);
    tcase_add_test(tc, test_gelu_dropout_backward_is_unfused);
    return s;
}
