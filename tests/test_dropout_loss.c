/* test_dropout_loss.c: the dropout kernels (mask rule, rate, counter-based determinism) and the
 * fused cross-entropy and sum kernels against naive loops. Conventions: kernel_ref.h. */
#include "kernel_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- dropout ------------------------------------------------------------------------------ */

static const double DROP_P[] = {0.1, 0.5}; /* loop tests: _i indexes this */
#define DROP_N 100000

/* A cursor some draws into (seed, stream), as a training step would hold it. */
static tt_rng dropout_cursor(uint64_t seed, uint64_t stream, int64_t skip)
{
    tt_rng r;
    tt_rng_init(&r, seed, stream);
    tt_rng_take(&r, skip);
    return tt_rng_take(&r, DROP_N);
}

/* Runs the forward on N(0,1) input; returns the input, fills out and mask (DROP_N each). */
static real *dropout_run(real *out, uint8_t *mask, real p, tt_rng at)
{
    real *x = randn(DROP_N, 250);
    be->dropout_forward(out, mask, x, p, at, DROP_N);
    return x;
}

static int64_t count_differences(const uint8_t *a, const uint8_t *b, int64_t n)
{
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

START_TEST(test_dropout_forward_follows_mask_rule)
{
    /* keep_i = uniform(at, i) >= p; kept: x / (1 - p), dropped: 0; the mask says which */
    real p = (real)DROP_P[_i];
    tt_rng at = dropout_cursor(7, 3, 1000);
    real *out = tt_test_alloc(DROP_N), *want = tt_test_alloc(DROP_N);
    uint8_t *mask = tt_xmalloc(DROP_N);
    real *x = dropout_run(out, mask, p, at);
    for (int64_t i = 0; i < DROP_N; i++) {
        bool keep = tt_rng_uniform_at(&at, i) >= p;
        TT_CHECK(mask[i] == keep, "dropout p=%g: mask[%lld] = %d, the draw says %d",
                 (double)p, (long long)i, mask[i], keep);
        TT_CHECK((out[i] != R(0)) == keep, "dropout p=%g: out[%lld] = %g but mask %d",
                 (double)p, (long long)i, (double)out[i], mask[i]);
        want[i] = keep ? (real)((double)x[i] / (1.0 - (double)p)) : R(0);
    }
    ck_assert_close(label("dropout_forward p=%g n=%d", (double)p, DROP_N), out, want, DROP_N,
                    TOL, TOL);
    free_all(out, want, mask, x);
}
END_TEST

START_TEST(test_dropout_fraction_near_p)
{
    real p = (real)DROP_P[_i];
    real *out = tt_test_alloc(DROP_N);
    uint8_t *mask = tt_xmalloc(DROP_N);
    free(dropout_run(out, mask, p, dropout_cursor(11, 3, 0)));
    int64_t dropped = 0;
    for (int64_t i = 0; i < DROP_N; i++) dropped += !mask[i];
    double frac = (double)dropped / DROP_N, sigma = sqrt((double)p * (1 - (double)p) / DROP_N);
    ck_assert_msg(fabs(frac - (double)p) < 5 * sigma,
                  "dropout p=%g: dropped fraction %g is more than 5 sigma (%g) from p", (double)p,
                  frac, sigma);
    free_all(out, mask);
}
END_TEST

START_TEST(test_dropout_same_cursor_same_mask)
{
    real p = (real)DROP_P[_i];
    tt_rng at = dropout_cursor(5, 3, 4000);
    real *out1 = tt_test_alloc(DROP_N), *out2 = tt_test_alloc(DROP_N);
    uint8_t *mask1 = tt_xmalloc(DROP_N), *mask2 = tt_xmalloc(DROP_N);
    free(dropout_run(out1, mask1, p, at));
    free(dropout_run(out2, mask2, p, at));
    ck_assert_msg(count_differences(mask1, mask2, DROP_N) == 0,
                  "dropout p=%g: the same cursor gave two different masks", (double)p);
    ck_assert_close(label("dropout p=%g same cursor", (double)p), out2, out1, DROP_N, 0, 0);
    free_all(out1, out2, mask1, mask2);
}
END_TEST

START_TEST(test_dropout_other_cursor_other_mask)
{
    /* another seed, another stream, or the next draw of the same stream: independent masks
     * disagree on 2p(1-p) of the elements; ask for at least half of that */
    real p = (real)DROP_P[_i];
    static const char *what[] = {"other seed", "other stream", "next draw"};
    tt_rng base = dropout_cursor(5, 3, 0);
    tt_rng others[3] = {dropout_cursor(6, 3, 0), dropout_cursor(5, 4, 0),
                        dropout_cursor(5, 3, DROP_N)};
    real *out = tt_test_alloc(DROP_N);
    uint8_t *mask = tt_xmalloc(DROP_N), *other = tt_xmalloc(DROP_N);
    free(dropout_run(out, mask, p, base));
    for (int k = 0; k < 3; k++) {
        free(dropout_run(out, other, p, others[k]));
        int64_t d = count_differences(mask, other, DROP_N);
        double expected = 2 * (double)p * (1 - (double)p) * DROP_N;
        ck_assert_msg((double)d > 0.5 * expected,
                      "dropout p=%g, %s: masks differ in %lld elements, expected about %.0f",
                      (double)p, what[k], (long long)d, expected);
    }
    free_all(out, mask, other);
}
END_TEST

START_TEST(test_dropout_two_halves_equal_one_fill)
{
    /* element e of a draw depends only on cursor + e: taking n1 (a multiple of 4, so no padding)
     * then the rest continues the sequence exactly where one draw of n would */
    real p = (real)DROP_P[_i];
    const int64_t n = 1001, n1 = 500;
    tt_rng r1, r2;
    tt_rng_init(&r1, 9, 3);
    tt_rng_init(&r2, 9, 3);
    tt_rng whole = tt_rng_take(&r1, n);
    tt_rng first = tt_rng_take(&r2, n1), rest = tt_rng_take(&r2, n - n1);
    real *x = randn(n, 260), *out1 = tt_test_alloc(n), *out2 = tt_test_alloc(n);
    uint8_t *mask1 = tt_xmalloc(n), *mask2 = tt_xmalloc(n);
    be->dropout_forward(out1, mask1, x, p, whole, n);
    be->dropout_forward(out2, mask2, x, p, first, n1);
    be->dropout_forward(out2 + n1, mask2 + n1, x + n1, p, rest, n - n1);
    ck_assert_msg(count_differences(mask1, mask2, n) == 0,
                  "dropout p=%g: two halves gave a different mask than one fill", (double)p);
    ck_assert_close(label("dropout p=%g two halves", (double)p), out2, out1, n, 0, 0);
    free_all(x, out1, out2, mask1, mask2);
}
END_TEST

START_TEST(test_dropout_backward)
{
    real p = (real)DROP_P[_i];
    real *out = tt_test_alloc(DROP_N), *dout = randn(DROP_N, 270), *dx = randn(DROP_N, 271);
    real *want = dup_real(dx, DROP_N);
    uint8_t *mask = tt_xmalloc(DROP_N);
    free(dropout_run(out, mask, p, dropout_cursor(13, 3, 0)));
    for (int64_t i = 0; i < DROP_N; i++)
        if (mask[i]) want[i] = (real)((double)want[i] + (double)dout[i] / (1.0 - (double)p));
    be->dropout_backward(dx, mask, dout, p, DROP_N, true);
    ck_assert_close(label("dropout_backward p=%g", (double)p), dx, want, DROP_N, TOL, TOL);
    /* written, not added (a fresh gradient): dx's old values are never read */
    for (int64_t i = 0; i < DROP_N; i++) {
        want[i] = mask[i] ? (real)((double)dout[i] / (1.0 - (double)p)) : R(0);
        dx[i] = (real)NAN;
    }
    be->dropout_backward(dx, mask, dout, p, DROP_N, false);
    ck_assert_close(label("dropout_backward p=%g written", (double)p), dx, want, DROP_N, TOL, TOL);
    free_all(out, dout, dx, want, mask);
}
END_TEST

/* ---- cross-entropy and sum ---------------------------------------------------------------- */

/* Targets in [0, V) with every third row (1, 4, 7, ...) ignored. */
static int32_t *ce_targets(int64_t N, int V, uint64_t seed)
{
    int32_t *t = random_tokens(N, V, seed);
    for (int64_t i = 1; i < N; i += 3) t[i] = TT_IGNORE_INDEX;
    return t;
}

/* log sum_v exp(x_v) of one row, max subtracted. */
static double ref_lse(const real *x, int V)
{
    double m = -HUGE_VAL, s = 0.0;
    for (int v = 0; v < V; v++) m = fmax(m, (double)x[v]);
    for (int v = 0; v < V; v++) s += exp((double)x[v] - m);
    return m + log(s);
}

/* Fills lse for every row (ignored ones too: the contract saves all N) and returns the loss,
 * the mean over counted rows of lse - logit[target]. */
static double ref_crossentropy(real *lse, const real *logits, const int32_t *targets, int64_t N,
                               int V)
{
    double total = 0.0;
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
        double l = ref_lse(logits + i * V, V);
        lse[i] = (real)l;
        if (targets[i] == TT_IGNORE_INDEX) continue;
        total += l - (double)logits[i * V + targets[i]];
        count++;
    }
    return count ? total / (double)count : 0.0;
}

/* dlogits (prefilled) += dloss / count * (softmax(row) - onehot(target)) for counted rows. */
static void ref_crossentropy_backward(real *dlogits, double dloss, const real *logits,
                                      const int32_t *targets, int64_t N, int V)
{
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) count += targets[i] != TT_IGNORE_INDEX;
    for (int64_t i = 0; i < N; i++) {
        if (targets[i] == TT_IGNORE_INDEX) continue;
        double l = ref_lse(logits + i * V, V);
        for (int v = 0; v < V; v++) {
            double prob = exp((double)logits[i * V + v] - l);
            double g = dloss / (double)count * (prob - (v == targets[i] ? 1.0 : 0.0));
            dlogits[i * V + v] = (real)((double)dlogits[i * V + v] + g);
        }
    }
}

/* Forward (loss, lse) then backward with dloss = 0.7 on prefilled dlogits, both compared. */
static void check_crossentropy(const char *what, const real *logits, const int32_t *targets,
                               int64_t N, int V, double tol)
{
    real loss = R(123), want_loss, dloss = R(0.7);
    real *lse = randu(N, 280, -9, 9), *want_lse = tt_test_alloc(N);
    real *dlogits = randn(N * V, 281), *want = dup_real(dlogits, N * V);
    want_loss = (real)ref_crossentropy(want_lse, logits, targets, N, V);
    ref_crossentropy_backward(want, (double)dloss, logits, targets, N, V);
    be->crossentropy_forward(&loss, lse, logits, targets, N, V);
    be->crossentropy_backward(dlogits, &dloss, logits, lse, targets, N, V);
    ck_assert_close(label("crossentropy %s loss N=%lld V=%d", what, (long long)N, V), &loss,
                    &want_loss, 1, tol, tol);
    ck_assert_close(label("crossentropy %s lse N=%lld V=%d", what, (long long)N, V), lse,
                    want_lse, N, tol, tol);
    ck_assert_close(label("crossentropy %s dlogits N=%lld V=%d", what, (long long)N, V), dlogits,
                    want, N * V, tol, tol);
    free_all(lse, want_lse, dlogits, want);
}

START_TEST(test_crossentropy_with_ignored_rows)
{
    for (int s = 0; s < NSHAPES; s++) {
        int64_t N = SHAPES[s].N;
        int V = SHAPES[s].C;
        real *logits = randn(N * V, 290);
        for (int64_t i = 0; i < N * V; i++) logits[i] *= R(3);
        int32_t *targets = ce_targets(N, V, 291);
        check_crossentropy("random", logits, targets, N, V, tol_sum(V));
        free_all(logits, targets);
    }
}
END_TEST

START_TEST(test_crossentropy_all_ignored)
{
    /* nothing counts: loss 0 (not 0/0) and dlogits exactly as it was */
    const int64_t N = 5;
    const int V = 7;
    real *logits = randn(N * V, 300), *lse = tt_test_alloc(N), *dlogits = randn(N * V, 301);
    real *before = dup_real(dlogits, N * V), loss = R(123), dloss = R(1);
    int32_t targets[5];
    for (int i = 0; i < 5; i++) targets[i] = TT_IGNORE_INDEX;
    be->crossentropy_forward(&loss, lse, logits, targets, N, V);
    ck_assert_msg(loss == R(0), "crossentropy, all rows ignored: loss is %g, not 0",
                  (double)loss);
    be->crossentropy_backward(dlogits, &dloss, logits, lse, targets, N, V);
    ck_assert_close("crossentropy all ignored: dlogits untouched", dlogits, before, N * V, 0, 0);
    free_all(logits, lse, dlogits, before);
}
END_TEST

START_TEST(test_crossentropy_large_logits)
{
    /* rows around +-1000: exp overflows without the max subtraction. An ulp of 1000 is 6e-5 in
     * float32, so lse - logit keeps only ~1e-4 absolute accuracy: hence 100 TOL. */
    const int64_t N = 7;
    const int V = 33;
    real *logits = randn(N * V, 310);
    for (int64_t i = 0; i < N * V; i++)
        logits[i] = (real)((i / V % 2 ? -1000.0 : 1000.0) + 5.0 * (double)logits[i]);
    int32_t *targets = ce_targets(N, V, 311);
    check_crossentropy("large logits", logits, targets, N, V, 100 * TOL);
    free_all(logits, targets);
}
END_TEST

START_TEST(test_sum_forward)
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = randn(n, 320), out = R(123), want;
        double acc = 0.0;
        for (int64_t i = 0; i < n; i++) acc += (double)x[i];
        want = (real)acc;
        be->sum_forward(&out, x, n);
        ck_assert_close(label("sum_forward n=%lld", (long long)n), &out, &want, 1, tol_sum(n),
                        TOL);
        free(x);
    }
}
END_TEST

START_TEST(test_sum_backward)
{
    const real dout = R(1.5), scale = R(-0.25);
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *dx = randn(n, 330), *want = dup_real(dx, n);
        for (int64_t i = 0; i < n; i++)
            want[i] = (real)((double)want[i] + (double)dout * (double)scale);
        be->sum_backward(dx, &dout, scale, n);
        ck_assert_close(label("sum_backward n=%lld", (long long)n), dx, want, n, TOL, TOL);
        free_all(dx, want);
    }
}
END_TEST

Suite *dropout_loss_suite(void)
{
    Suite *s = suite_create("dropout_loss");

    TCase *tc = new_tcase(s, "dropout");
    tcase_add_loop_test(tc, test_dropout_forward_follows_mask_rule, 0, 2);
    tcase_add_loop_test(tc, test_dropout_fraction_near_p, 0, 2);
    tcase_add_loop_test(tc, test_dropout_same_cursor_same_mask, 0, 2);
    tcase_add_loop_test(tc, test_dropout_other_cursor_other_mask, 0, 2);
    tcase_add_loop_test(tc, test_dropout_two_halves_equal_one_fill, 0, 2);
    tcase_add_loop_test(tc, test_dropout_backward, 0, 2);

    tc = new_tcase(s, "loss");
    tcase_add_test(tc, test_crossentropy_with_ignored_rows);
    tcase_add_test(tc, test_crossentropy_all_ignored);
    tcase_add_test(tc, test_crossentropy_large_logits);
    tcase_add_test(tc, test_sum_forward);
    tcase_add_test(tc, test_sum_backward);

    return s;
}
