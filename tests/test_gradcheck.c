/* test_gradcheck.c (float64 build only): every differentiable op against central differences,
 * eps 1e-6, atol 1e-5, rtol 1e-3 (PyTorch gradcheck's defaults), loss = sum(out * R), R random.
 * Inputs are drawn from N(0,1); for ReLU they are kept at least 0.05 away from the kink.
 * The last test shows the check catches a wrong backward. */
#include "testutil.h"

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/params.h"

#include <math.h>
#include <stdlib.h>

#ifdef TT_DOUBLE /* finite differences at eps 1e-6 are meaningless in float32 */

#define MAX_IN 4

typedef struct gc_case gc_case;
struct gc_case {
    const char *label;
    tt_gradcheck_fn f;
    int n_in;
    tt_shape shape[MAX_IN];
    real kink_gap;         /* push |x| >= kink_gap (ReLU) */
    bool ta, tb;           /* matmul transposes */
    real p;                /* dropout probability or scale */
    const int32_t *ids;    /* tokens or targets */
    tt_shape ids_shape;
};

static void run_case(const gc_case *c, uint64_t seed)
{
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 8 << 20, seed);
    tt_params_init(&ps, TT_CPU);
    tt_var *in[MAX_IN];
    char name[8] = "in0";
    for (int i = 0; i < c->n_in; i++) {
        name[2] = (char)('0' + i);
        in[i] = tt_params_add(&ps, name, c->shape[i]);
    }
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, seed);
    for (int64_t k = 0; k < ps.numel; k++)
        if (R_FABS(ps.data[k]) < c->kink_gap) ps.data[k] += ps.data[k] < 0 ? -c->kink_gap : c->kink_gap;

    tt_gradcheck_report rep;
    bool ok = tt_gradcheck(&t.g, c->f, (void *)c, in, c->n_in, TT_GRADCHECK_DEFAULTS, &rep);
    ck_assert_msg(ok, "%s: %s", c->label, rep.message);
    int64_t total = 0;
    for (int i = 0; i < c->n_in; i++) total += in[i]->val.n;
    ck_assert_msg(rep.checked == total, "%s: checked %lld of %lld elements", c->label,
                  (long long)rep.checked, (long long)total);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}

static const gc_case *ctx_of(void *ctx) { return ctx; }
static tt_var *ids_var(tt_graph *g, const gc_case *c)
{
    return tt_var_from_host(g, c->ids_shape, TT_I32, c->ids, false);
}

static tt_var *f_matmul(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_matmul(g, x[0], x[1], ctx_of(ctx)->ta, ctx_of(ctx)->tb);
}
static tt_var *f_matmul_self(tt_graph *g, tt_var **x, void *ctx)
{
    (void)ctx;
    return tt_matmul(g, x[0], x[0], false, true); /* x x^T: x gets both contributions */
}
static tt_var *f_linear(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_linear(g, x[0], x[1], ctx_of(ctx)->n_in > 2 ? x[2] : NULL);
}
static tt_var *f_add(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_add(g, x[0], x[1]); }
static tt_var *f_add_bias(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_add_bias(g, x[0], x[1]); }
static tt_var *f_mul(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_mul(g, x[0], x[1]); }
static tt_var *f_square(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_mul(g, x[0], x[0]); }
static tt_var *f_scale(tt_graph *g, tt_var **x, void *ctx) { return tt_scale(g, x[0], ctx_of(ctx)->p); }
static tt_var *f_relu(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_relu(g, x[0]); }
static tt_var *f_gelu(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_gelu(g, x[0]); }
static tt_var *f_dropout(tt_graph *g, tt_var **x, void *ctx) { return tt_dropout(g, x[0], ctx_of(ctx)->p); }
static tt_var *f_softmax(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_softmax(g, x[0]); }
/* the fused dropouts write over their input: give them a fresh copy of the leaf */
static tt_var *f_relu_dropout(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_relu_dropout_(g, tt_scale(g, x[0], R(1)), ctx_of(ctx)->p);
}
static tt_var *f_dropout_add(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_dropout_add_(g, tt_scale(g, x[0], R(1)), x[1], ctx_of(ctx)->p);
}
/* GELU + dropout, out of place: on the leaf (its gradient is added to) and on a fresh
 * intermediate (written) */
static tt_var *f_gelu_dropout(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_gelu_dropout(g, x[0], ctx_of(ctx)->p);
}
static tt_var *f_gelu_dropout_fresh(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_gelu_dropout(g, tt_scale(g, x[0], R(1)), ctx_of(ctx)->p);
}
/* in place: gelu'(x) over x's memory, so x must be an intermediate (x * 1) */
static tt_var *f_gelu_dropout_in_place(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_gelu_dropout_(g, tt_scale(g, x[0], R(1)), ctx_of(ctx)->p);
}
static tt_var *f_sum(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_sum(g, x[0]); }
static tt_var *f_mean(tt_graph *g, tt_var **x, void *ctx) { (void)ctx; return tt_mean(g, x[0]); }
static tt_var *f_layernorm(tt_graph *g, tt_var **x, void *ctx)
{
    (void)ctx;
    return tt_layernorm(g, x[0], x[1], x[2], R(1e-5));
}
static tt_var *f_embedding(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_embedding(g, x[0], ids_var(g, ctx_of(ctx)));
}
static tt_var *f_cross_entropy(tt_graph *g, tt_var **x, void *ctx)
{
    return tt_cross_entropy(g, x[0], ids_var(g, ctx_of(ctx)));
}

#define CASE(...) run_case(&(gc_case){__VA_ARGS__}, 42)

START_TEST(test_gc_matmul_2d)
{
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        CASE(.label = "matmul 2d", .f = f_matmul, .n_in = 2, .ta = ta, .tb = tb,
             .shape = {ta ? tt_shape2(4, 3) : tt_shape2(3, 4), tb ? tt_shape2(5, 4) : tt_shape2(4, 5)});
    }
}
END_TEST

START_TEST(test_gc_matmul_batched)
{
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        CASE(.label = "matmul batched", .f = f_matmul, .n_in = 2, .ta = ta, .tb = tb,
             .shape = {ta ? tt_shape3(2, 4, 3) : tt_shape3(2, 3, 4),
                       tb ? tt_shape3(2, 5, 4) : tt_shape3(2, 4, 5)});
    }
    CASE(.label = "matmul 4d (batch, head)", .f = f_matmul, .n_in = 2, .tb = true,
         .shape = {tt_shape4(2, 3, 3, 4), tt_shape4(2, 3, 5, 4)});
}
END_TEST

START_TEST(test_gc_matmul_shared_weight)
{
    CASE(.label = "matmul [2,3,4] x [5,4]^T", .f = f_matmul, .n_in = 2, .tb = true,
         .shape = {tt_shape3(2, 3, 4), tt_shape2(5, 4)});
    CASE(.label = "matmul [2,3,4] x [4,5]", .f = f_matmul, .n_in = 2,
         .shape = {tt_shape3(2, 3, 4), tt_shape2(4, 5)});
    CASE(.label = "matmul x x^T", .f = f_matmul_self, .n_in = 1, .shape = {tt_shape2(3, 4)});
}
END_TEST

START_TEST(test_gc_linear)
{
    CASE(.label = "linear with bias", .f = f_linear, .n_in = 3,
         .shape = {tt_shape3(2, 3, 4), tt_shape2(5, 4), tt_shape1(5)});
    CASE(.label = "linear without bias", .f = f_linear, .n_in = 2,
         .shape = {tt_shape2(3, 7), tt_shape2(2, 7)});
}
END_TEST

START_TEST(test_gc_elementwise)
{
    CASE(.label = "add", .f = f_add, .n_in = 2, .shape = {tt_shape2(3, 5), tt_shape2(3, 5)});
    CASE(.label = "add_bias", .f = f_add_bias, .n_in = 2, .shape = {tt_shape3(2, 3, 5), tt_shape1(5)});
    CASE(.label = "mul", .f = f_mul, .n_in = 2, .shape = {tt_shape2(3, 5), tt_shape2(3, 5)});
    CASE(.label = "mul x*x", .f = f_square, .n_in = 1, .shape = {tt_shape1(7)});
    CASE(.label = "scale", .f = f_scale, .n_in = 1, .p = R(-1.7), .shape = {tt_shape2(3, 5)});
}
END_TEST

START_TEST(test_gc_activations)
{
    CASE(.label = "relu", .f = f_relu, .n_in = 1, .kink_gap = R(0.05), .shape = {tt_shape2(4, 9)});
    CASE(.label = "gelu", .f = f_gelu, .n_in = 1, .shape = {tt_shape2(4, 9)});
}
END_TEST

START_TEST(test_gc_dropout)
{
    CASE(.label = "dropout p=0.2", .f = f_dropout, .n_in = 1, .p = R(0.2), .shape = {tt_shape2(6, 7)});
    CASE(.label = "dropout p=0.5", .f = f_dropout, .n_in = 1, .p = R(0.5), .shape = {tt_shape1(33)});
    CASE(.label = "relu_dropout p=0", .f = f_relu_dropout, .n_in = 1, .kink_gap = R(0.05),
         .shape = {tt_shape2(5, 9)});
    CASE(.label = "relu_dropout p=0.3", .f = f_relu_dropout, .n_in = 1, .p = R(0.3),
         .kink_gap = R(0.05), .shape = {tt_shape2(5, 9)});
    CASE(.label = "gelu_dropout p=0", .f = f_gelu_dropout, .n_in = 1, .shape = {tt_shape2(5, 9)});
    CASE(.label = "gelu_dropout p=0.3", .f = f_gelu_dropout, .n_in = 1, .p = R(0.3),
         .shape = {tt_shape2(5, 9)});
    CASE(.label = "gelu_dropout p=0 fresh", .f = f_gelu_dropout_fresh, .n_in = 1,
         .shape = {tt_shape2(5, 9)});
    CASE(.label = "gelu_dropout p=0.3 fresh", .f = f_gelu_dropout_fresh, .n_in = 1,
         .p = R(0.3), .shape = {tt_shape2(5, 9)});
    CASE(.label = "gelu_dropout_ p=0", .f = f_gelu_dropout_in_place, .n_in = 1,
         .shape = {tt_shape2(5, 9)});
    CASE(.label = "gelu_dropout_ p=0.3", .f = f_gelu_dropout_in_place, .n_in = 1, .p = R(0.3),
         .shape = {tt_shape2(5, 9)});
    CASE(.label = "dropout_add p=0", .f = f_dropout_add, .n_in = 2,
         .shape = {tt_shape2(4, 7), tt_shape2(4, 7)});
    CASE(.label = "dropout_add p=0.3", .f = f_dropout_add, .n_in = 2, .p = R(0.3),
         .shape = {tt_shape2(4, 7), tt_shape2(4, 7)});
}
END_TEST

START_TEST(test_gc_softmax)
{
    CASE(.label = "softmax", .f = f_softmax, .n_in = 1, .shape = {tt_shape3(2, 3, 7)});
}
END_TEST

START_TEST(test_gc_layernorm)
{
    CASE(.label = "layernorm", .f = f_layernorm, .n_in = 3,
         .shape = {tt_shape3(2, 3, 6), tt_shape1(6), tt_shape1(6)});
}
END_TEST

START_TEST(test_gc_embedding)
{
    static const int32_t ids[8] = {3, 0, 6, 3, 3, 1, 0, 5};
    CASE(.label = "embedding", .f = f_embedding, .n_in = 1, .shape = {tt_shape2(7, 5)},
         .ids = ids, .ids_shape = tt_shape2(2, 4));
}
END_TEST

START_TEST(test_gc_cross_entropy)
{
    static const int32_t t1[6] = {0, 4, TT_IGNORE_INDEX, 2, 2, TT_IGNORE_INDEX};
    CASE(.label = "cross_entropy", .f = f_cross_entropy, .n_in = 1, .shape = {tt_shape2(6, 5)},
         .ids = t1, .ids_shape = tt_shape1(6));
    CASE(.label = "cross_entropy 3d", .f = f_cross_entropy, .n_in = 1,
         .shape = {tt_shape3(2, 3, 5)}, .ids = t1, .ids_shape = tt_shape2(2, 3));
}
END_TEST

START_TEST(test_gc_reductions)
{
    CASE(.label = "sum", .f = f_sum, .n_in = 1, .shape = {tt_shape2(3, 4)});
    CASE(.label = "mean", .f = f_mean, .n_in = 1, .shape = {tt_shape3(2, 3, 4)});
}
END_TEST

/* A chain of every op kind, as a network would use them. */
static tt_var *f_chain(tt_graph *g, tt_var **x, void *ctx)
{
    static const int32_t targets[6] = {1, 0, 3, TT_IGNORE_INDEX, 2, 1};
    tt_var *h = tt_linear(g, x[0], x[1], NULL);                     /* [2,3,4] -> [2,3,6] */
    h = tt_dropout(g, tt_gelu(g, tt_layernorm(g, h, x[2], x[3], R(1e-5))), R(0.25));
    tt_var *att = tt_softmax(g, tt_matmul(g, h, h, false, true));  /* [2,3,3] */
    h = tt_add(g, h, tt_matmul(g, att, h, false, false));
    tt_var *logits = tt_scale(g, tt_matmul(g, h, x[1], false, false), R(0.5)); /* [2,3,4] */
    (void)ctx;
    return tt_cross_entropy(g, logits, tt_var_from_host(g, tt_shape2(2, 3), TT_I32, targets, false));
}

START_TEST(test_gc_chain)
{
    CASE(.label = "chain", .f = f_chain, .n_in = 4,
         .shape = {tt_shape3(2, 3, 4), tt_shape2(6, 4), tt_shape1(6), tt_shape1(6)});
}
END_TEST

/* An op with a wrong backward (y = x^2 with dx += x dy, the factor 2 missing): the check must
 * fail, or a passing check proves nothing. */
static void bad_square_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    g->be->mul_backward(tt_var_grad(g, x), NULL, n->out->grad.data, x->val.data, x->val.data,
                        x->val.n);
}

static tt_var *f_bad_square(tt_graph *g, tt_var **x, void *ctx)
{
    (void)ctx;
    tt_var *out = tt_var_new(g, x[0]->val.shape, TT_REAL);
    g->be->mul_forward(out->val.data, x[0]->val.data, x[0]->val.data, x[0]->val.n);
    tt_record(g, "bad_square", bad_square_backward, out, x[0], NULL, NULL);
    return out;
}

START_TEST(test_gc_catches_wrong_backward)
{
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 1 << 20, 3);
    tt_params_init(&ps, TT_CPU);
    tt_var *x = tt_params_add(&ps, "x", tt_shape1(5));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, 3);
    tt_gradcheck_report rep;
    bool ok = tt_gradcheck(&t.g, f_bad_square, NULL, &x, 1, TT_GRADCHECK_DEFAULTS, &rep);
    ck_assert(!ok);
    ck_assert_int_eq(rep.checked, 5);
    ck_assert_int_eq(rep.failed, 5);
    /* the correct op passes on the same input */
    ok = tt_gradcheck(&t.g, f_square, NULL, &x, 1, TT_GRADCHECK_DEFAULTS, &rep);
    ck_assert_msg(ok, "%s", rep.message);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}
END_TEST

Suite *gradcheck_suite(void)
{
    Suite *s = suite_create("gradcheck");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_gc_matmul_2d);
    tcase_add_test(tc, test_gc_matmul_batched);
    tcase_add_test(tc, test_gc_matmul_shared_weight);
    tcase_add_test(tc, test_gc_linear);
    tcase_add_test(tc, test_gc_elementwise);
    tcase_add_test(tc, test_gc_activations);
    tcase_add_test(tc, test_gc_dropout);
    tcase_add_test(tc, test_gc_softmax);
    tcase_add_test(tc, test_gc_layernorm);
    tcase_add_test(tc, test_gc_embedding);
    tcase_add_test(tc, test_gc_cross_entropy);
    tcase_add_test(tc, test_gc_reductions);
    tcase_add_test(tc, test_gc_chain);
    tcase_add_test(tc, test_gc_catches_wrong_backward);
    suite_add_tcase(s, tc);
    return s;
}

#endif
