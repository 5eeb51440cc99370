/* test_autograd.c: the tape's behaviour: accumulation on reuse, no-grad mode, aborts on shape
 * mismatch and on a second backward, one-call gradient zeroing, exact values of a few ops
 * worked out by hand, and a stable arena high-water mark across repeated steps. */
#include "testutil.h"

#include "autograd/ops.h"
#include "autograd/params.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A graph over private arenas, and parameters, for one test. */
typedef struct fixture {
    tt_test_graph t;
    tt_params ps;
} fixture;

static fixture *fixture_new(void)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tt_test_graph_init(&f->t, 1 << 20, 1);
    tt_params_init(&f->ps, TT_CPU);
    return f;
}

/* A fixture whose only parameter is `name` of shape s, already finalized. */
static fixture *fixture_with_param(const char *name, tt_shape s, tt_var **param)
{
    fixture *f = fixture_new();
    *param = tt_params_add(&f->ps, name, s);
    tt_params_finalize(&f->ps);
    return f;
}

static void fixture_free(fixture *f)
{
    tt_params_free(&f->ps);
    tt_test_graph_free(&f->t);
    free(f);
}

static void set_values(tt_var *v, const real *x) { memcpy(v->val.data, x, tt_tensor_bytes(&v->val)); }

static tt_var *constant(tt_graph *g, tt_shape s, const real *x)
{
    return tt_var_from_host(g, s, TT_REAL, x, false);
}

static tt_var *tokens(tt_graph *g, tt_shape s, const int32_t *ids)
{
    return tt_var_from_host(g, s, TT_I32, ids, false);
}

START_TEST(test_reuse_accumulates)
{
    tt_var *x;
    fixture *f = fixture_with_param("x", tt_shape1(4), &x);
    const real xv[4] = {R(-2), R(-0.5), R(1), R(3)};
    set_values(x, xv);

    /* loss = sum(x + x) + sum(x * x) + sum(relu(x)) + sum(3 x)
     * dloss/dx = 2 + 2x + [x > 0] + 3 */
    tt_graph *g = &f->t.g;
    tt_var *loss = tt_add(g, tt_add(g, tt_sum(g, tt_add(g, x, x)), tt_sum(g, tt_mul(g, x, x))),
                          tt_add(g, tt_sum(g, tt_relu(g, x)), tt_sum(g, tt_scale(g, x, R(3)))));
    tt_backward(g, loss);
    const real want[4] = {R(1), R(4), R(8), R(12)};
    ck_assert_close("d/dx", x->grad.data, want, 4, 1e-6, 0);
    fixture_free(f);
}
END_TEST

START_TEST(test_leaf_grads_accumulate_until_zeroed)
{
    fixture *f = fixture_new();
    tt_var *a = tt_params_add(&f->ps, "a", tt_shape1(3));
    tt_var *b = tt_params_add(&f->ps, "b", tt_shape2(2, 2));
    tt_params_finalize(&f->ps);
    const real av[3] = {R(1), R(2), R(3)}, bv[4] = {R(1), R(1), R(1), R(1)};
    set_values(a, av);
    set_values(b, bv);
    tt_graph *g = &f->t.g;
    for (int step = 0; step < 2; step++) {
        tt_graph_reset(g);
        tt_backward(g, tt_add(g, tt_sum(g, tt_scale(g, a, R(2))), tt_mean(g, b)));
    }
    const real two_steps_a[3] = {R(4), R(4), R(4)}, two_steps_b[4] = {R(0.5), R(0.5), R(0.5), R(0.5)};
    ck_assert_close("a after 2 steps", a->grad.data, two_steps_a, 3, 1e-12, 0);
    ck_assert_close("b after 2 steps", b->grad.data, two_steps_b, 4, 1e-12, 0);
    tt_params_zero_grad(&f->ps); /* one call clears every gradient */
    for (int64_t i = 0; i < f->ps.numel; i++) ck_assert(f->ps.grad[i] == R(0));
    fixture_free(f);
}
END_TEST

START_TEST(test_no_grad_records_nothing)
{
    tt_var *w;
    fixture *f = fixture_with_param("w", tt_shape2(3, 2), &w);
    tt_graph *g = &f->t.g;
    const real xv[4] = {R(1), R(2), R(3), R(4)};
    bool old = tt_graph_set_no_grad(g, true);
    ck_assert(!old);
    tt_var *y = tt_gelu(g, tt_linear(g, constant(g, tt_shape2(2, 2), xv), w, NULL));
    ck_assert_int_eq(g->n_nodes, 0);
    ck_assert_ptr_null(g->tail);
    ck_assert(!y->requires_grad);
    tt_graph_set_no_grad(g, false);
    /* ops on constants only record nothing either */
    tt_var *z = tt_relu(g, constant(g, tt_shape1(4), xv));
    ck_assert_int_eq(g->n_nodes, 0);
    ck_assert(!z->requires_grad);
    /* and with a parameter they do */
    tt_linear(g, constant(g, tt_shape2(2, 2), xv), w, NULL);
    ck_assert_int_eq(g->n_nodes, 1);
    fixture_free(f);
}
END_TEST

START_TEST(test_backward_of_no_grad_value_aborts)
{
    tt_var *w;
    fixture *f = fixture_with_param("w", tt_shape1(3), &w);
    tt_graph_set_no_grad(&f->t.g, true);
    tt_var *loss = tt_sum(&f->t.g, w);
    tt_expect_abort("does not require grad", NULL, NULL);
    tt_backward(&f->t.g, loss);
}
END_TEST

START_TEST(test_shape_mismatch_aborts_naming_both)
{
    fixture *f = fixture_new();
    tt_var *a = tt_var_new(&f->t.g, tt_shape2(2, 3), TT_REAL);
    tt_var *b = tt_var_new(&f->t.g, tt_shape2(3, 2), TT_REAL);
    tt_expect_abort("add", "[2,3]", "[3,2]");
    tt_add(&f->t.g, a, b);
}
END_TEST

START_TEST(test_matmul_mismatch_aborts_naming_both)
{
    fixture *f = fixture_new();
    tt_var *a = tt_var_new(&f->t.g, tt_shape3(4, 5, 6), TT_REAL);
    tt_var *b = tt_var_new(&f->t.g, tt_shape2(7, 8), TT_REAL);
    tt_expect_abort("matmul", "[4,5,6]", "[7,8]");
    tt_matmul(&f->t.g, a, b, false, false);
}
END_TEST

START_TEST(test_backward_twice_aborts)
{
    tt_var *w;
    fixture *f = fixture_with_param("w", tt_shape1(3), &w);
    tt_var *loss = tt_sum(&f->t.g, w);
    tt_backward(&f->t.g, loss);
    tt_expect_abort("backward called twice", NULL, NULL);
    tt_backward(&f->t.g, loss);
}
END_TEST

START_TEST(test_backward_needs_scalar)
{
    tt_var *w;
    fixture *f = fixture_with_param("w", tt_shape1(3), &w);
    tt_expect_abort("scalar", NULL, NULL);
    tt_backward(&f->t.g, tt_relu(&f->t.g, w));
}
END_TEST

/* Values worked out by hand, independent of the kernels' own reference tests. */
START_TEST(test_hand_computed_values)
{
    fixture *f = fixture_new();
    tt_graph *g = &f->t.g;
    const real av[6] = {R(1), R(2), R(3), R(4), R(5), R(6)};     /* [2,3] */
    const real bv[6] = {R(1), R(0), R(0), R(1), R(1), R(1)};     /* [3,2] */
    tt_var *c = tt_matmul(g, constant(g, tt_shape2(2, 3), av), constant(g, tt_shape2(3, 2), bv),
                          false, false);
    const real cv[4] = {R(4), R(5), R(10), R(11)};
    ck_assert_close("matmul", c->val.data, cv, 4, 1e-6, 0);

    /* cross-entropy of two equal logits is ln 2; the ignored row counts for nothing */
    const real logits[4] = {R(0), R(0), R(100), R(-100)};
    const int32_t targets[2] = {0, TT_IGNORE_INDEX};
    tt_var *ce = tt_cross_entropy(g, constant(g, tt_shape2(2, 2), logits),
                                  tokens(g, tt_shape1(2), targets));
    const real ln2 = R(0.69314718055994530942);
    ck_assert_close("cross_entropy", ce->val.data, &ln2, 1, 1e-6, 0);

    /* LayerNorm of (1, 3): mean 2, var 1 -> (-1, 1) up to eps */
    const real xv[2] = {R(1), R(3)}, ones[2] = {R(1), R(1)}, zeros[2] = {R(0), R(0)};
    tt_var *ln = tt_layernorm(g, constant(g, tt_shape2(1, 2), xv), constant(g, tt_shape1(2), ones),
                              constant(g, tt_shape1(2), zeros), R(0));
    const real lnv[2] = {R(-1), R(1)};
    ck_assert_close("layernorm", ln->val.data, lnv, 2, 1e-6, 0);

    /* embedding gathers rows */
    const int32_t ids[3] = {2, 0, 2};
    tt_var *e = tt_embedding(g, constant(g, tt_shape2(3, 2), av), tokens(g, tt_shape1(3), ids));
    const real ev[6] = {R(5), R(6), R(1), R(2), R(5), R(6)};
    ck_assert_int_eq(e->val.shape.ndim, 2);
    ck_assert_close("embedding", e->val.data, ev, 6, 0, 0);
    fixture_free(f);
}
END_TEST

START_TEST(test_dropout_identity_cases)
{
    fixture *f = fixture_new();
    tt_var *x = tt_var_new(&f->t.g, tt_shape1(8), TT_REAL);
    ck_assert_ptr_eq(tt_dropout(&f->t.g, x, R(0)), x);
    f->t.g.training = false;
    ck_assert_ptr_eq(tt_dropout(&f->t.g, x, R(0.5)), x);
    ck_assert_uint_eq(f->t.rng.counter, 0); /* no random numbers were used */
    fixture_free(f);
}
END_TEST

/* A gradient that reaches a node only through an unused branch is never computed, and a node
 * whose output got no gradient is skipped without allocating one. */
START_TEST(test_unused_branch_is_skipped)
{
    tt_var *w;
    fixture *f = fixture_with_param("w", tt_shape1(5), &w);
    tt_graph *g = &f->t.g;
    tt_var *unused = tt_gelu(g, w);
    tt_var *loss = tt_sum(g, w);
    tt_backward(g, loss);
    ck_assert_ptr_null(unused->grad.data);
    for (int i = 0; i < 5; i++) ck_assert(((real *)w->grad.data)[i] == R(1));
    fixture_free(f);
}
END_TEST

/* One training-like step of a small MLP classifier with every op kind; the arena's high-water
 * mark after step 1 must equal the one after step 5: a step allocates the same every time. */
static void mlp_step(fixture *f, tt_var **p, const real *x, const int32_t *y)
{
    tt_graph *g = &f->t.g;
    tt_graph_reset(g);
    tt_params_zero_grad(&f->ps);
    tt_var *h = tt_linear(g, constant(g, tt_shape3(2, 3, 8), x), p[0], p[1]);
    h = tt_dropout(g, tt_gelu(g, tt_layernorm(g, h, p[2], p[3], R(1e-5))), R(0.1));
    tt_var *logits = tt_add_bias(g, tt_matmul(g, tt_relu(g, h), p[4], false, true), p[5]);
    tt_var *loss = tt_cross_entropy(g, logits, tokens(g, tt_shape2(2, 3), y));
    tt_backward(g, loss);
    for (int64_t i = 0; i < f->ps.numel; i++) f->ps.data[i] -= R(0.1) * f->ps.grad[i];
}

START_TEST(test_arena_high_water_is_stable)
{
    fixture *f = fixture_new();
    tt_var *p[6] = {
        tt_params_add(&f->ps, "w1", tt_shape2(16, 8)), tt_params_add(&f->ps, "b1", tt_shape1(16)),
        tt_params_add(&f->ps, "ln.w", tt_shape1(16)),  tt_params_add(&f->ps, "ln.b", tt_shape1(16)),
        tt_params_add(&f->ps, "w2", tt_shape2(5, 16)), tt_params_add(&f->ps, "b2", tt_shape1(5)),
    };
    tt_params_finalize(&f->ps);
    tt_test_normal(f->ps.data, f->ps.numel, 11);
    real x[48];
    tt_test_normal(x, 48, 12);
    const int32_t y[6] = {0, 4, TT_IGNORE_INDEX, 2, 1, 3};
    mlp_step(f, p, x, y);
    size_t high1 = f->t.data.high, used1 = f->t.data.used, meta1 = f->t.meta.high;
    for (int step = 2; step <= 5; step++) mlp_step(f, p, x, y);
    ck_assert_uint_gt(high1, 0);
    ck_assert_uint_eq(f->t.data.high, high1);
    ck_assert_uint_eq(f->t.data.used, used1);
    ck_assert_uint_eq(f->t.meta.high, meta1);
    ck_assert_int_eq(f->t.g.n_nodes, 8); /* linear ln gelu dropout relu matmul bias ce */
    fixture_free(f);
}
END_TEST

Suite *autograd_suite(void)
{
    Suite *s = suite_create("autograd");
    TCase *tc = tcase_create("graph");
    tcase_add_test(tc, test_reuse_accumulates);
    tcase_add_test(tc, test_leaf_grads_accumulate_until_zeroed);
    tcase_add_test(tc, test_no_grad_records_nothing);
    tcase_add_test(tc, test_hand_computed_values);
    tcase_add_test(tc, test_dropout_identity_cases);
    tcase_add_test(tc, test_unused_branch_is_skipped);
    tcase_add_test(tc, test_arena_high_water_is_stable);
    suite_add_tcase(s, tc);

    tc = tcase_create("aborts");
    tcase_add_test_raise_signal(tc, test_backward_of_no_grad_value_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_shape_mismatch_aborts_naming_both, SIGABRT);
    tcase_add_test_raise_signal(tc, test_matmul_mismatch_aborts_naming_both, SIGABRT);
    tcase_add_test_raise_signal(tc, test_backward_twice_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_backward_needs_scalar, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}
