/* test_kernels.c: the elementwise, activation, softmax, LayerNorm and embedding kernels of the
 * CPU table against naive loops, on odd and larger shapes. Conventions: kernel_ref.h. */
#include "kernel_ref.h"

#include "tensor/cpu/reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- elementwise -------------------------------------------------------------------------- */

typedef void (*binary_kernel)(real *out, const real *a, const real *b, int64_t n);

static double op_add(double a, double b) { return a + b; }
static double op_mul(double a, double b) { return a * b; }

/* out holds junk first: a forward kernel overwrites. */
static void check_binary_forward(const char *name, binary_kernel kernel,
                                 double (*op)(double, double))
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *a = randn(n, 100), *b = randn(n, 101), *out = randu(n, 102, -9, 9);
        real *want = tt_test_alloc(n);
        for (int64_t i = 0; i < n; i++) want[i] = (real)op((double)a[i], (double)b[i]);
        kernel(out, a, b, n);
        ck_assert_close(label("%s n=%lld", name, (long long)n), out, want, n, TOL, TOL);
        free_all(a, b, out, want);
    }
}

START_TEST(test_add_forward) { check_binary_forward("add_forward", be->add_forward, op_add); }
END_TEST

START_TEST(test_mul_forward) { check_binary_forward("mul_forward", be->mul_forward, op_mul); }
END_TEST

START_TEST(test_axpy)
{
    const real alpha = R(-0.375);
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *y = randn(n, 110), *x = randn(n, 111), *want = dup_real(y, n);
        for (int64_t i = 0; i < n; i++)
            want[i] = (real)((double)y[i] + (double)alpha * (double)x[i]);
        be->axpy(y, alpha, x, n);
        ck_assert_close(label("axpy n=%lld", (long long)n), y, want, n, TOL, TOL);
        free_all(y, x, want);
    }
}
END_TEST

START_TEST(test_scale_forward)
{
    const real scale = R(1.75);
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = randn(n, 120), *out = randu(n, 121, -9, 9), *want = tt_test_alloc(n);
        for (int64_t i = 0; i < n; i++) want[i] = (real)((double)scale * (double)x[i]);
        be->scale_forward(out, x, scale, n);
        ck_assert_close(label("scale_forward n=%lld", (long long)n), out, want, n, TOL, TOL);
        free_all(x, out, want);
    }
}
END_TEST

/* out == inp when in_place; otherwise out starts as junk. */
static void check_bias_forward(bool in_place)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N, n = N * SHAPES[s].C;
        int C = SHAPES[s].C;
        real *x = randn(n, 130), *bias = randn(C, 131), *want = tt_test_alloc(n);
        real *out = in_place ? x : randu(n, 132, -9, 9);
        for (int64_t i = 0; i < n; i++) want[i] = (real)((double)x[i] + (double)bias[i % C]);
        be->bias_forward(out, x, bias, N, C);
        ck_assert_close(label("bias_forward%s N=%lld C=%d", in_place ? " in place" : "",
                              (long long)N, C),
                        out, want, n, TOL, TOL);
        if (!in_place) free(out);
        free_all(x, bias, want);
    }
}

START_TEST(test_bias_forward) { check_bias_forward(false); }
END_TEST

START_TEST(test_bias_forward_in_place) { check_bias_forward(true); }
END_TEST

/* inp NULL: every row of out becomes the bias, whatever out held */
START_TEST(test_bias_forward_fill)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N, n = N * SHAPES[s].C;
        int C = SHAPES[s].C;
        real *bias = randn(C, 133), *out = randu(n, 134, -9, 9);
        be->bias_forward(out, NULL, bias, N, C);
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(out[i] == bias[i % C], "N=%lld C=%d: out[%lld] is not the bias",
                          (long long)N, C, (long long)i);
        free_all(bias, out);
    }
}
END_TEST

START_TEST(test_bias_backward)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N;
        int C = SHAPES[s].C;
        real *dout = randn(N * C, 140), *dbias = randn(C, 141), *want = dup_real(dbias, C);
        double *colsum = dzeros(C);
        for (int64_t i = 0; i < N * C; i++) colsum[i % C] += (double)dout[i];
        add_into(want, colsum, C);
        be->bias_backward(dbias, dout, N, C);
        ck_assert_close(label("bias_backward N=%lld C=%d", (long long)N, C), dbias, want, C,
                        tol_sum(N), tol_sum(N));
        free_all(dout, dbias, want, colsum);
    }
}
END_TEST

/* _i in 1..3: bit 0 asks for da, bit 1 for db; the other pointer is NULL. */
START_TEST(test_mul_backward)
{
    static const char *which[] = {"", "da only", "db only", "da and db"};
    bool want_da = _i & 1, want_db = _i & 2;
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *a = randn(n, 150), *b = randn(n, 151), *dout = randn(n, 152);
        real *da = randn(n, 153), *db = randn(n, 154);
        real *want_a = dup_real(da, n), *want_b = dup_real(db, n);
        for (int64_t i = 0; i < n; i++) {
            want_a[i] = (real)((double)want_a[i] + (double)dout[i] * (double)b[i]);
            want_b[i] = (real)((double)want_b[i] + (double)dout[i] * (double)a[i]);
        }
        be->mul_backward(want_da ? da : NULL, want_db ? db : NULL, dout, a, b, n);
        if (want_da)
            ck_assert_close(label("mul_backward %s: da n=%lld", which[_i], (long long)n), da,
                            want_a, n, TOL, TOL);
        if (want_db)
            ck_assert_close(label("mul_backward %s: db n=%lld", which[_i], (long long)n), db,
                            want_b, n, TOL, TOL);
        free_all(a, b, dout, da, db, want_a, want_b);
    }
}
END_TEST

START_TEST(test_mul_backward_aliased)
{
    /* y = x * x: a == b and da == db, so both contributions land: dx += 2 x dy */
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = randn(n, 160), *dout = randn(n, 161), *dx = randn(n, 162), *want = dup_real(dx, n);
        for (int64_t i = 0; i < n; i++)
            want[i] = (real)((double)want[i] + 2.0 * (double)dout[i] * (double)x[i]);
        be->mul_backward(dx, dx, dout, x, x, n);
        ck_assert_close(label("mul_backward x*x n=%lld", (long long)n), dx, want, n, TOL, TOL);
        free_all(x, dout, dx, want);
    }
}
END_TEST

/* ---- activations -------------------------------------------------------------------------- */

typedef void (*unary_forward)(real *out, const real *inp, int64_t n);
typedef void (*unary_backward)(real *dinp, const real *inp, const real *dout, int64_t n);

static double relu_ref(double x) { return x > 0 ? x : 0; }
static double relu_grad_ref(double x) { return x > 0 ? 1 : 0; }

static double normal_cdf(double x) { return 0.5 * (1.0 + erf(x / sqrt(2.0))); }
static double gelu_ref(double x) { return x * normal_cdf(x); }
static double gelu_grad_ref(double x)
{
    return normal_cdf(x) + x * exp(-0.5 * x * x) / sqrt(2.0 * acos(-1.0));
}

/* N(0, 9), with |x| >= 0.05 so ReLU's kink at 0 is never sampled. */
static real *activation_input(int64_t n, uint64_t seed)
{
    real *x = randn(n, seed);
    for (int64_t i = 0; i < n; i++) {
        double v = 3.0 * (double)x[i];
        x[i] = (real)(v >= 0 ? fmax(v, 0.05) : fmin(v, -0.05));
    }
    return x;
}

static void check_unary_forward(const char *name, unary_forward kernel, double (*f)(double))
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = activation_input(n, 170), *out = randu(n, 171, -9, 9);
        real *want = tt_test_alloc(n);
        for (int64_t i = 0; i < n; i++) want[i] = (real)f((double)x[i]);
        kernel(out, x, n);
        ck_assert_close(label("%s n=%lld", name, (long long)n), out, want, n, TOL, TOL);
        free_all(x, out, want);
    }
}

static void check_unary_backward(const char *name, unary_backward kernel, double (*df)(double))
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = activation_input(n, 180), *dout = randn(n, 181), *dx = randn(n, 182);
        real *want = dup_real(dx, n);
        for (int64_t i = 0; i < n; i++)
            want[i] = (real)((double)want[i] + (double)dout[i] * df((double)x[i]));
        kernel(dx, x, dout, n);
        ck_assert_close(label("%s n=%lld", name, (long long)n), dx, want, n, TOL, TOL);
        free_all(x, dout, dx, want);
    }
}

START_TEST(test_relu_forward) { check_unary_forward("relu_forward", be->relu_forward, relu_ref); }
END_TEST

START_TEST(test_relu_backward)
{
    check_unary_backward("relu_backward", be->relu_backward, relu_grad_ref);
}
END_TEST

START_TEST(test_gelu_forward) { check_unary_forward("gelu_forward", be->gelu_forward, gelu_ref); }
END_TEST

START_TEST(test_gelu_backward)
{
    check_unary_backward("gelu_backward", be->gelu_backward, gelu_grad_ref);
}
END_TEST

/* ---- softmax ------------------------------------------------------------------------------ */

static void ref_softmax(real *out, const real *inp, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C;
        double m = -HUGE_VAL, sum = 0.0;
        for (int c = 0; c < C; c++) m = fmax(m, (double)x[c]);
        for (int c = 0; c < C; c++) sum += m == -HUGE_VAL ? 0.0 : exp((double)x[c] - m);
        for (int c = 0; c < C; c++)
            out[r * C + c] = m == -HUGE_VAL ? R(0) : (real)(exp((double)x[c] - m) / sum);
    }
}

/* Runs the kernel on inp (N,C) over junk and compares with the reference. */
static real *softmax_checked(const char *what, const real *inp, int64_t N, int C)
{
    real *out = randu(N * C, 190, -9, 9), *want = tt_test_alloc(N * C);
    ref_softmax(want, inp, N, C);
    be->softmax_forward(out, inp, N, C);
    ck_assert_close(label("softmax_forward %s N=%lld C=%d", what, (long long)N, C), out, want,
                    N * C, TOL, TOL);
    free(want);
    return out;
}

START_TEST(test_softmax_forward)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N;
        int C = SHAPES[s].C;
        real *x = randn(N * C, 191);
        for (int64_t i = 0; i < N * C; i++) x[i] *= R(4);
        free(softmax_checked("random", x, N, C));
        free(x);
    }
}
END_TEST

START_TEST(test_softmax_rows_sum_to_one)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N;
        int C = SHAPES[s].C;
        real *x = randn(N * C, 192), *out = tt_test_alloc(N * C), *sums = tt_test_alloc(N);
        real *ones = tt_test_alloc(N);
        be->softmax_forward(out, x, N, C);
        for (int64_t r = 0; r < N; r++) {
            double sum = 0.0;
            for (int c = 0; c < C; c++) sum += (double)out[r * C + c];
            sums[r] = (real)sum;
            ones[r] = R(1);
        }
        ck_assert_close(label("softmax row sums N=%lld C=%d", (long long)N, C), sums, ones, N,
                        tol_sum(C), 0);
        free_all(x, out, sums, ones);
    }
}
END_TEST

START_TEST(test_softmax_large_inputs)
{
    /* exp(1000) overflows both precisions: only max subtraction keeps these finite */
    static const double rows[4][3] = {
        {1000, 1001, 1000.5}, {-1000, -1001, -999.5}, {88, 89, 90}, {1e4, -1e4, 0}};
    real x[12];
    for (int i = 0; i < 12; i++) x[i] = (real)rows[i / 3][i % 3];
    free(softmax_checked("large inputs", x, 4, 3));
}
END_TEST

START_TEST(test_softmax_masked_entries_exactly_zero)
{
    /* a causal mask: row r sees columns 0..r, the rest is -inf and must give exactly 0 */
    const int64_t N = 9;
    const int C = 9;
    real *x = randn(N * C, 193);
    for (int64_t r = 0; r < N; r++)
        for (int c = (int)r + 1; c < C; c++) x[r * C + c] = -R_INF;
    real *out = softmax_checked("causal mask", x, N, C);
    for (int64_t r = 0; r < N; r++)
        for (int c = (int)r + 1; c < C; c++)
            ck_assert_msg(out[r * C + c] == R(0), "softmax: masked entry (%lld,%d) is %g, not 0",
                          (long long)r, c, (double)out[r * C + c]);
    free_all(x, out);
}
END_TEST

START_TEST(test_softmax_all_masked_row_gives_zeros)
{
    /* row 1 of 3 is all -inf (every key masked): zeros, no NaN, and the other rows unaffected */
    const int64_t N = 3;
    const int C = 17;
    real *x = randn(N * C, 194);
    for (int c = 0; c < C; c++) x[C + c] = -R_INF;
    real *out = softmax_checked("all-masked row", x, N, C);
    for (int c = 0; c < C; c++)
        ck_assert_msg(out[C + c] == R(0), "softmax: all-masked row, column %d is %g, not 0", c,
                      (double)out[C + c]);
    free_all(x, out);
}
END_TEST

START_TEST(test_softmax_backward)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N, n = N * SHAPES[s].C;
        int C = SHAPES[s].C;
        real *x = randn(n, 200), *y = tt_test_alloc(n), *dy = randn(n, 201);
        real *dx = randn(n, 202), *want = dup_real(dx, n);
        double *grad = dzeros(n);
        ref_softmax(y, x, N, C);
        for (int64_t r = 0; r < N; r++) {
            double dot = 0.0;
            for (int c = 0; c < C; c++) dot += (double)dy[r * C + c] * (double)y[r * C + c];
            for (int c = 0; c < C; c++)
                grad[r * C + c] = (double)y[r * C + c] * ((double)dy[r * C + c] - dot);
        }
        add_into(want, grad, n);
        be->softmax_backward(dx, y, dy, N, C);
        ck_assert_close(label("softmax_backward N=%lld C=%d", (long long)N, C), dx, want, n,
                        tol_sum(C), tol_sum(C));
        free_all(x, y, dy, dx, want, grad);
    }
}
END_TEST

/* ---- layernorm ---------------------------------------------------------------------------- */

#define LN_EPS 1e-5

/* x ~ 3 + 2 N(0,1): an offset mean, so a one-pass variance would lose digits. */
static real *layernorm_input(int64_t n, uint64_t seed)
{
    real *x = randn(n, seed);
    for (int64_t i = 0; i < n; i++) x[i] = (real)(3.0 + 2.0 * (double)x[i]);
    return x;
}

static void ref_layernorm(real *out, real *mean, real *rstd, const real *inp, const real *w,
                          const real *b, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C;
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++) m += (double)x[c];
        m /= C;
        for (int c = 0; c < C; c++) v += ((double)x[c] - m) * ((double)x[c] - m);
        double s = 1.0 / sqrt(v / C + LN_EPS);
        for (int c = 0; c < C; c++)
            out[r * C + c] = (real)(((double)x[c] - m) * s * (double)w[c] + (double)b[c]);
        mean[r] = (real)m;
        rstd[r] = (real)s;
    }
}

/* The gradients (not prefill-added) from the saved mean and rstd, per row with g = dy * w:
 * dx = rstd (g - mean(g) - xhat mean(g xhat)), dw = sum_rows dy xhat, db = sum_rows dy. */
static void ref_layernorm_backward(double *dx, double *dw, double *db, const real *dout,
                                   const real *inp, const real *w, const real *mean,
                                   const real *rstd, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C, *dy = dout + r * C;
        double m = (double)mean[r], s = (double)rstd[r], gmean = 0.0, gxmean = 0.0;
        for (int c = 0; c < C; c++) {
            double xhat = ((double)x[c] - m) * s, g = (double)dy[c] * (double)w[c];
            gmean += g / C;
            gxmean += g * xhat / C;
            dw[c] += (double)dy[c] * xhat;
            db[c] += (double)dy[c];
        }
        for (int c = 0; c < C; c++) {
            double xhat = ((double)x[c] - m) * s, g = (double)dy[c] * (double)w[c];
            dx[r * C + c] = s * (g - gmean - xhat * gxmean);
        }
    }
}

START_TEST(test_layernorm_forward)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N, n = N * SHAPES[s].C;
        int C = SHAPES[s].C;
        real *x = layernorm_input(n, 210), *w = randn(C, 211), *b = randn(C, 212);
        real *out = randu(n, 213, -9, 9), *mean = randu(N, 214, -9, 9);
        real *rstd = randu(N, 215, -9, 9), *want = tt_test_alloc(n);
        real *want_mean = tt_test_alloc(N), *want_rstd = tt_test_alloc(N);
        ref_layernorm(want, want_mean, want_rstd, x, w, b, N, C);
        be->layernorm_forward(out, mean, rstd, x, w, b, N, C, R(LN_EPS));
        double tol = tol_sum(C);
        ck_assert_close(label("layernorm_forward out N=%lld C=%d", (long long)N, C), out, want, n,
                        tol, tol);
        ck_assert_close(label("layernorm_forward mean N=%lld C=%d", (long long)N, C), mean,
                        want_mean, N, tol, tol);
        ck_assert_close(label("layernorm_forward rstd N=%lld C=%d", (long long)N, C), rstd,
                        want_rstd, N, tol, tol);
        free_all(x, w, b, out, mean, rstd, want, want_mean, want_rstd);
    }
}
END_TEST

/* Prefilled dinp, dweight, dbias; `null` (0, 1, 2) names the one passed as NULL, -1 none.
 * With acc dinp is added to; without, it holds junk and is written. */
static void check_layernorm_backward(int null)
{
    static const char *names[] = {"dinp", "dweight", "dbias"};
    for (int s = 0; s < 2 * NSHAPES; s++) {
        const bool acc = s < NSHAPES;
        int64_t N = SHAPES[s % NSHAPES].N, n = N * SHAPES[s % NSHAPES].C;
        int C = SHAPES[s % NSHAPES].C;
        real *x = layernorm_input(n, 220), *w = randn(C, 221), *b = randn(C, 222);
        real *y = tt_test_alloc(n), *mean = tt_test_alloc(N), *rstd = tt_test_alloc(N);
        real *dy = randn(n, 223);
        real *grads[3] = {acc ? randn(n, 224) : randu(n, 224, -9, 9), randn(C, 225),
                          randn(C, 226)};
        double *refs[3] = {dzeros(n), dzeros(C), dzeros(C)};
        int64_t sizes[3] = {n, C, C};
        ref_layernorm(y, mean, rstd, x, w, b, N, C);
        ref_layernorm_backward(refs[0], refs[1], refs[2], dy, x, w, mean, rstd, N, C);
        real *wants[3];
        for (int k = 0; k < 3; k++) {
            wants[k] = k == 0 && !acc ? tt_test_alloc(sizes[k]) : dup_real(grads[k], sizes[k]);
            add_into(wants[k], refs[k], sizes[k]);
        }
        be->layernorm_backward(null == 0 ? NULL : grads[0], null == 1 ? NULL : grads[1],
                               null == 2 ? NULL : grads[2], dy, x, w, mean, rstd, N, C, acc);
        /* dinp sums over C per row, dweight and dbias over N per column */
        double tol = tol_sum(N > C ? N : C);
        for (int k = 0; k < 3; k++) {
            if (k != null)
                ck_assert_close(label("layernorm_backward %s (%s NULL) N=%lld C=%d acc=%d",
                                      names[k], null < 0 ? "none" : names[null], (long long)N, C,
                                      acc),
                                grads[k], wants[k], sizes[k], tol, tol);
            free_all(grads[k], refs[k], wants[k]);
        }
        free_all(x, w, b, y, mean, rstd, dy);
    }
}

START_TEST(test_layernorm_backward) { check_layernorm_backward(-1); }
END_TEST

/* Rows wider than the one-pass backward keeps partial column sums for (cpu/layernorm.c's
 * LN_PART_C, 4096) take the pass by columns: both agree with the reference */
START_TEST(test_layernorm_backward_wide_rows)
{
    const int64_t N = 3;
    for (int C = 4095; C <= 4097; C++) {
        int64_t n = N * C;
        real *x = layernorm_input(n, 240), *w = randn(C, 241), *b = randn(C, 242);
        real *y = tt_test_alloc(n), *mean = tt_test_alloc(N), *rstd = tt_test_alloc(N);
        real *dy = randn(n, 243), *dx = randn(n, 244), *dw = randn(C, 245), *db = randn(C, 246);
        real *want[3] = {dup_real(dx, n), dup_real(dw, C), dup_real(db, C)};
        double *ref[3] = {dzeros(n), dzeros(C), dzeros(C)};
        ref_layernorm(y, mean, rstd, x, w, b, N, C);
        ref_layernorm_backward(ref[0], ref[1], ref[2], dy, x, w, mean, rstd, N, C);
        be->layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, N, C, true);
        real *got[3] = {dx, dw, db};
        int64_t sizes[3] = {n, C, C};
        double tol = tol_sum(C);
        for (int k = 0; k < 3; k++) {
            add_into(want[k], ref[k], sizes[k]);
            ck_assert_close(label("layernorm_backward wide C=%d part %d", C, k), got[k], want[k],
                            sizes[k], tol, tol);
            free_all(want[k], ref[k]);
        }
        free_all(x, w, b, y, mean, rstd, dy, dx, dw, db);
    }
}
END_TEST

/* _i: which of dinp, dweight, dbias is NULL */
START_TEST(test_layernorm_backward_one_null) { check_layernorm_backward(_i); }
END_TEST

/* ---- embedding ---------------------------------------------------------------------------- */

/* (N tokens, C channels, V vocabulary): V and C odd, N > V so tokens repeat. */
static const struct {
    int64_t N;
    int C, V;
} EMB_SHAPES[] = {{1, 1, 1}, {7, 3, 5}, {65, 33, 17}, {300, 129, 51}};
#define NEMB ((int)(sizeof EMB_SHAPES / sizeof EMB_SHAPES[0]))

START_TEST(test_embedding_forward)
{
    for (int s = 0; s < NEMB; s++) {
        int64_t N = EMB_SHAPES[s].N;
        int C = EMB_SHAPES[s].C, V = EMB_SHAPES[s].V;
        int32_t *tokens = random_tokens(N, V, 230);
        real *weight = randn((int64_t)V * C, 231), *out = randu(N * C, 232, -9, 9);
        real *want = tt_test_alloc(N * C);
        for (int64_t i = 0; i < N * C; i++) want[i] = weight[(int64_t)tokens[i / C] * C + i % C];
        be->embedding_forward(out, tokens, weight, N, C, V);
        ck_assert_close(label("embedding_forward N=%lld C=%d V=%d", (long long)N, C, V), out,
                        want, N * C, 0, 0);
        free_all(tokens, weight, out, want);
    }
}
END_TEST

START_TEST(test_embedding_backward_scatter_adds)
{
    for (int s = 0; s < NEMB; s++) {
        int64_t N = EMB_SHAPES[s].N, nw = (int64_t)EMB_SHAPES[s].V * EMB_SHAPES[s].C;
        int C = EMB_SHAPES[s].C, V = EMB_SHAPES[s].V;
        int32_t *tokens = random_tokens(N, V, 240);
        real *dout = randn(N * C, 241), *dweight = randn(nw, 242), *want = dup_real(dweight, nw);
        double *grad = dzeros(nw);
        for (int64_t i = 0; i < N * C; i++)
            grad[(int64_t)tokens[i / C] * C + i % C] += (double)dout[i];
        add_into(want, grad, nw);
        be->embedding_backward(dweight, tokens, dout, N, C);
        ck_assert_close(label("embedding_backward N=%lld C=%d V=%d", (long long)N, C, V),
                        dweight, want, nw, tol_sum(N), tol_sum(N));
        free_all(tokens, dout, dweight, want, grad);
    }
}
END_TEST


/* The row kernels' exp (tensor/cpu/reduce.h): within 4 ulp of exp in double over its whole
 * range, exactly 1 at 0, exactly 0 at -inf and where the result would be under FLT_MIN, NaN
 * for NaN. */
START_TEST(test_exp_nonpos)
{
    ck_assert(tt_exp_nonpos(R(0)) == R(1));
    ck_assert(tt_exp_nonpos(-R_INF) == R(0));
    ck_assert(isnan((double)tt_exp_nonpos((real)NAN)));
    double worst = 0;
    real worst_x = 0;
    for (int i = 0; i <= 2000000; i++) {
        real x = (real)(-87.0 * i / 2000000.0);
        double want = exp((double)x), got = (double)tt_exp_nonpos(x);
        double err = fabs(got - want) / want;
        if (err > worst) worst = err, worst_x = x;
    }
#ifdef TT_DOUBLE
    const double ulp = 0x1p-52;
#else
    const double ulp = 0x1p-23;
    ck_assert(tt_exp_nonpos(R(-87.5)) == R(0) && tt_exp_nonpos(R(-1000)) == R(0));
#endif
    ck_assert_msg(worst <= 4 * ulp, "worst relative error %.3g (%.2f ulp) at x = %.9g", worst,
                  worst / ulp, (double)worst_x);
    /* small positive inputs (rounding could give them) stay right too */
    for (real x = R(0.001); x < R(5); x *= R(1.7))
        ck_assert_msg(fabs((double)tt_exp_nonpos(x) / exp((double)x) - 1) <= 4 * ulp, "x = %g",
                      (double)x);
}
END_TEST

/* relu_dropout_backward adds (acc) or writes (a fresh, uninitialised gradient: prefilled with
 * NaN here, so an element it skipped shows) dy / (1-p) where out > 0 */
START_TEST(test_relu_dropout_backward_add_or_write)
{
    for (int k = 0; k < NSIZES; k++) {
        int64_t n = SIZES[k];
        real *out = randn(n, 140), *dy = randn(n, 141), *g0 = randn(n, 142);
        real *dx = tt_test_alloc(n), *want = tt_test_alloc(n);
        for (int64_t i = 0; i < n; i++) out[i] = out[i] < R(0) ? R(0) : out[i]; /* an output */
        for (int acc = 0; acc < 2; acc++) {
            for (int64_t i = 0; i < n; i++) {
                double g = out[i] > R(0) ? (double)dy[i] / (1.0 - 0.25) : 0.0;
                want[i] = (real)((acc ? (double)g0[i] : 0.0) + g);
                dx[i] = acc ? g0[i] : (real)NAN;
            }
            be->relu_dropout_backward(dx, out, dy, R(0.25), n, acc);
            ck_assert_close(label("relu_dropout_backward n=%lld acc=%d", (long long)n, acc), dx,
                            want, n, TOL, TOL);
        }
        free_all(out, dy, g0, dx, want);
    }
}
END_TEST

Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");

    TCase *tc = new_tcase(s, "elementwise");
    tcase_add_test(tc, test_axpy);
    tcase_add_test(tc, test_exp_nonpos);
    tcase_add_test(tc, test_relu_dropout_backward_add_or_write);
    tcase_add_test(tc, test_add_forward);
    tcase_add_test(tc, test_scale_forward);
    tcase_add_test(tc, test_bias_forward);
    tcase_add_test(tc, test_bias_forward_in_place);
    tcase_add_test(tc, test_bias_forward_fill);
    tcase_add_test(tc, test_bias_backward);
    tcase_add_test(tc, test_mul_forward);
    tcase_add_loop_test(tc, test_mul_backward, 1, 4);
    tcase_add_test(tc, test_mul_backward_aliased);

    tc = new_tcase(s, "activation");
    tcase_add_test(tc, test_relu_forward);
    tcase_add_test(tc, test_relu_backward);
    tcase_add_test(tc, test_gelu_forward);
    tcase_add_test(tc, test_gelu_backward);

    tc = new_tcase(s, "softmax");
    tcase_add_test(tc, test_softmax_forward);
    tcase_add_test(tc, test_softmax_rows_sum_to_one);
    tcase_add_test(tc, test_softmax_large_inputs);
    tcase_add_test(tc, test_softmax_masked_entries_exactly_zero);
    tcase_add_test(tc, test_softmax_all_masked_row_gives_zeros);
    tcase_add_test(tc, test_softmax_backward);

    tc = new_tcase(s, "layernorm");
    tcase_add_test(tc, test_layernorm_forward);
    tcase_add_test(tc, test_layernorm_backward);
    tcase_add_test(tc, test_layernorm_backward_wide_rows);
    tcase_add_loop_test(tc, test_layernorm_backward_one_null, 0, 3);

    tc = new_tcase(s, "embedding");
    tcase_add_test(tc, test_embedding_forward);
    tcase_add_test(tc, test_embedding_backward_scatter_adds);

    return s;
}
