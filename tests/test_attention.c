/* test_attention.c: the fused attention op against attention composed from primitive ops
 * (matmul, scale, mask add, softmax, dropout, matmul), forward and backward, for every
 * combination of scale, temperature, masks and dropout; the packed layout against separate
 * q, k, v; the weights' invariants (rows sum to 1, causal and padding zeros, an all-masked row
 * gives zeros and no NaN); eval mode turning attention dropout off. */
#include "testutil.h"

#include "autograd/ops.h"
#include "autograd/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, T = 5 };

/* padding at the end; batch 2 is all padding, so every one of its query rows is fully masked */
static const int32_t PAD[B * T] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};

typedef struct attn_case {
    real scale;
    bool causal, pad;
    real p;
} attn_case;

typedef struct run {
    real *out, *att, *dq, *dk, *dv; /* malloc'ed copies */
} run;

static real *copy_of(const real *x, int64_t n)
{
    real *y = tt_test_alloc(n);
    memcpy(y, x, (size_t)n * sizeof(real));
    return y;
}

static void run_free(run *r)
{
    free(r->out);
    free(r->att);
    free(r->dq);
    free(r->dk);
    free(r->dv);
}

/* q, k, v [B,T,D] leaves; loss = sum(out * R); returns the output, weights, gradients. */
static run attend(const attn_case *c, int D, bool fused, uint64_t seed)
{
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 4 << 20, 99); /* the same rng state for both ways */
    tt_params_init(&ps, TT_CPU);
    tt_var *q = tt_params_add(&ps, "q", tt_shape3(B, T, D));
    tt_var *k = tt_params_add(&ps, "k", tt_shape3(B, T, D));
    tt_var *v = tt_params_add(&ps, "v", tt_shape3(B, T, D));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, seed);
    tt_graph *g = &t.g;
    tt_tensor pad = tt_tensor_view((void *)PAD, tt_shape2(B, T), TT_I32, TT_CPU);
    tt_var *out;
    tt_tensor att;
    if (fused) {
        tt_sdpa_opts o = {.scale = c->scale, .causal = c->causal, .pad = c->pad ? &pad : NULL,
                          .dropout = c->p};
        out = tt_sdpa(g, q, k, v, 1, &o, &att);
    } else {
        real *mask = tt_test_alloc(B * T * T);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++)
                    if ((c->causal && j > i) || (c->pad && PAD[b * T + j]))
                        mask[(b * T + i) * T + j] = -R_INF;
        tt_var *s = tt_scale(g, tt_matmul(g, q, k, false, true), c->scale);
        s = tt_add(g, s, tt_var_from_host(g, tt_shape3(B, T, T), TT_REAL, mask, false));
        tt_var *w = tt_softmax(g, s);
        att = w->val;
        out = tt_matmul(g, tt_dropout(g, w, c->p), v, false, false);
        free(mask);
    }
    real *r = tt_test_alloc(out->val.n);
    tt_test_normal(r, out->val.n, seed + 1);
    tt_var *loss = tt_sum(g, tt_mul(g, out, tt_var_from_host(g, out->val.shape, TT_REAL, r, false)));
    tt_backward(g, loss);
    run res = {copy_of(out->val.data, out->val.n), copy_of(att.data, att.n),
               copy_of(q->grad.data, q->val.n), copy_of(k->grad.data, k->val.n),
               copy_of(v->grad.data, v->val.n)};
    free(r);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
    return res;
}

static void all_finite(const char *label, const real *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(isfinite((double)x[i]), "%s: element %lld is %g", label, (long long)i,
                      (double)x[i]);
}

START_TEST(test_fused_equals_composed)
{
    const int D = 4;
    tt_tensor pad = tt_tensor_view((void *)PAD, tt_shape2(B, T), TT_I32, TT_CPU);
    for (int n = 0; n < TT_SDPA_COMBOS; n++) {
        char label[96];
        tt_sdpa_opts o = tt_test_sdpa_combo(n, D, &pad, label, sizeof label);
        attn_case c = {.scale = o.scale, .causal = o.causal, .pad = o.pad, .p = o.dropout};
        run f = attend(&c, D, true, 10 + n), ref = attend(&c, D, false, 10 + n);
        const real *got[5] = {f.out, f.att, f.dq, f.dk, f.dv};
        const real *want[5] = {ref.out, ref.att, ref.dq, ref.dk, ref.dv};
        const char *what[5] = {"out", "weights", "dq", "dk", "dv"};
        for (int k = 0; k < 5; k++) {
            char full[128];
            snprintf(full, sizeof full, "%s: %s", label, what[k]);
            int64_t len = k == 1 ? B * T * T : B * T * D;
            ck_assert_close(full, got[k], want[k], len, TOL, TOL);
            all_finite(full, got[k], len);
        }
        run_free(&f);
        run_free(&ref);
    }
}
END_TEST

/* Weights: every row sums to 1 unless all its keys are masked (then it is all zeros); zeros
 * above the diagonal when causal and in padding columns. */
START_TEST(test_weights_invariants)
{
    attn_case c = {.scale = R(0.7), .causal = true, .pad = true, .p = R(0.3)};
    run f = attend(&c, 6, true, 3);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            const real *row = f.att + (b * T + i) * T;
            double sum = 0;
            bool any_key = false;
            for (int j = 0; j < T; j++) {
                bool masked = j > i || PAD[b * T + j];
                any_key |= !masked;
                if (masked) ck_assert_msg(row[j] == R(0), "b%d i%d j%d: masked weight %g", b, i,
                                          j, (double)row[j]);
                sum += (double)row[j];
            }
            ck_assert_msg(fabs(sum - (any_key ? 1.0 : 0.0)) < 1e-5, "b%d i%d: row sums to %g", b,
                          i, sum);
        }
    /* batch 2 is all padding: zero output and zero gradients, never NaN */
    for (int e = 2 * T * 6; e < 3 * T * 6; e++) {
        ck_assert_msg(f.out[e] == R(0), "all-masked row: out[%d] = %g", e, (double)f.out[e]);
        ck_assert_msg(f.dq[e] == R(0) && f.dk[e] == R(0) && f.dv[e] == R(0),
                      "all-masked row: nonzero gradient at %d", e);
    }
    run_free(&f);
}
END_TEST

/* The packed [B,T,3D] layout with 2 heads equals separate q, k, v [B,T,D] cut from it. */
START_TEST(test_packed_equals_separate)
{
    enum { D = 6, H = 2 };
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 4 << 20, 5);
    tt_params_init(&ps, TT_CPU);
    tt_var *qkv = tt_params_add(&ps, "qkv", tt_shape3(B, T, 3 * D));
    tt_var *part[3];
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) part[i] = tt_params_add(&ps, names[i], tt_shape3(B, T, D));
    tt_params_finalize(&ps);
    tt_test_normal(qkv->val.data, qkv->val.n, 8);
    for (int r = 0; r < B * T; r++)
        for (int i = 0; i < 3; i++)
            memcpy((real *)part[i]->val.data + r * D, (real *)qkv->val.data + r * 3 * D + i * D,
                   D * sizeof(real));
    tt_tensor pad = tt_tensor_view((void *)PAD, tt_shape2(B, T), TT_I32, TT_CPU);
    tt_sdpa_opts o = {.scale = R(0.6), .causal = true, .pad = &pad, .dropout = R(0.25)};
    tt_graph *g = &t.g;
    tt_rng saved = *g->rng;
    tt_tensor wa, wb;
    tt_var *a = tt_sdpa_packed(g, qkv, H, &o, &wa);
    *g->rng = saved;
    tt_var *b = tt_sdpa(g, part[0], part[1], part[2], H, &o, &wb);
    ck_assert_close("out", a->val.data, b->val.data, a->val.n, TOL, TOL);
    ck_assert_close("weights", wa.data, wb.data, wa.n, TOL, TOL);
    ck_assert_int_eq(wa.shape.ndim, 4);
    ck_assert_int_eq(wa.shape.d[1], H);
    real *r = tt_test_alloc(a->val.n);
    tt_test_normal(r, a->val.n, 9);
    tt_var *rv = tt_var_from_host(g, a->val.shape, TT_REAL, r, false);
    tt_backward(g, tt_add(g, tt_sum(g, tt_mul(g, a, rv)), tt_sum(g, tt_mul(g, b, rv))));
    real *want = tt_test_alloc(qkv->val.n);
    for (int row = 0; row < B * T; row++)
        for (int i = 0; i < 3; i++)
            memcpy(want + row * 3 * D + i * D, (real *)part[i]->grad.data + row * D,
                   D * sizeof(real));
    ck_assert_close("dqkv", qkv->grad.data, want, qkv->val.n, TOL, TOL);
    free(r);
    free(want);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}
END_TEST

/* Not training: no dropout, and the output is exactly weights x V. */
START_TEST(test_eval_mode_no_dropout)
{
    attn_case c = {.scale = R(0.5), .p = R(0.5)};
    run train = attend(&c, 4, true, 21);
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 1 << 20, 99);
    tt_params_init(&ps, TT_CPU);
    tt_var *q = tt_params_add(&ps, "q", tt_shape3(B, T, 4));
    tt_var *k = tt_params_add(&ps, "k", tt_shape3(B, T, 4));
    tt_var *v = tt_params_add(&ps, "v", tt_shape3(B, T, 4));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, 21);
    t.g.training = false;
    tt_rng before = *t.g.rng;
    tt_sdpa_opts o = {.scale = c.scale, .dropout = c.p};
    tt_tensor att;
    tt_var *out = tt_sdpa(&t.g, q, k, v, 1, &o, &att);
    ck_assert_msg(t.g.rng->counter == before.counter, "eval mode drew random numbers");
    ck_assert_close("eval weights = train weights", att.data, train.att, att.n, TOL, TOL);
    real *pv = tt_test_alloc(out->val.n);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++)
            for (int d = 0; d < 4; d++) {
                double s = 0;
                for (int j = 0; j < T; j++)
                    s += (double)((real *)att.data)[(b * T + i) * T + j] *
                         (double)((real *)v->val.data)[(b * T + j) * 4 + d];
                pv[(b * T + i) * 4 + d] = (real)s;
            }
    ck_assert_close("eval out = weights V", out->val.data, pv, out->val.n, TOL, TOL);
    free(pv);
    run_free(&train);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}
END_TEST

Suite *attention_suite(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("sdpa");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fused_equals_composed);
    tcase_add_test(tc, test_weights_invariants);
    tcase_add_test(tc, test_packed_equals_separate);
    tcase_add_test(tc, test_eval_mode_no_dropout);
    suite_add_tcase(s, tc);
    return s;
}
