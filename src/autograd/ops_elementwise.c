/* ops_elementwise.c: add, bias add, multiply and scale, each with its backward below it. */
#include "autograd/ops.h"

/* y = a + b  =>  da += dy, db += dy */
static void add_backward(tt_graph *g, tt_node *n)
{
    const real *dy = n->out->grad.data;
    int64_t len = n->out->val.n;
    for (int k = 0; k < 2; k++) {
        real *d = tt_grad_or_null(g, n->in[k]);
        if (d) g->be->axpy(d, R(1), dy, len);
    }
}

tt_var *tt_add(tt_graph *g, tt_var *a, tt_var *b)
{
    tt_assert_same_shape(a->val.shape, b->val.shape, "add");
    tt_var *out = tt_var_new(g, a->val.shape, TT_REAL);
    g->be->add_forward(out->val.data, a->val.data, b->val.data, out->val.n);
    tt_record(g, "add", add_backward, out, a, b, NULL);
    return out;
}

/* y = x + bias, bias broadcast over the leading dims of x (its shape is x's trailing dims)
 *   =>  dx += dy, dbias += sums of dy over the leading dims */
static void add_bias_backward(tt_graph *g, tt_node *n)
{
    const real *dy = n->out->grad.data;
    int C = n->i[0];
    real *dx = tt_grad_or_null(g, n->in[0]), *db = tt_grad_or_null(g, n->in[1]);
    if (dx) g->be->axpy(dx, R(1), dy, n->out->val.n);
    if (db) g->be->bias_backward(db, dy, n->out->val.n / C, C);
}

tt_var *tt_add_bias(tt_graph *g, tt_var *x, tt_var *bias)
{
    tt_shape xs = x->val.shape, bs = bias->val.shape;
    bool ok = bs.ndim >= 1 && bs.ndim <= xs.ndim;
    for (int k = 0; ok && k < bs.ndim; k++) ok = xs.d[xs.ndim - bs.ndim + k] == bs.d[k];
    char a[TT_SHAPE_STR], b[TT_SHAPE_STR];
    TT_ASSERT_MSG(ok, "add_bias: bias %s is not the trailing dims of the input %s",
                  tt_shape_str(bs, b), tt_shape_str(xs, a));
    int C = (int)bias->val.n;
    tt_var *out = tt_var_new(g, xs, TT_REAL);
    g->be->bias_forward(out->val.data, x->val.data, bias->val.data, C ? x->val.n / C : 0, C);
    tt_node *n = tt_record(g, "add_bias", add_bias_backward, out, x, bias, NULL);
    if (n) n->i[0] = C;
    return out;
}

/* y = a * b  =>  da += dy * b, db += dy * a (a == b gets both: 2 a dy) */
static void mul_backward(tt_graph *g, tt_node *n)
{
    tt_var *a = n->in[0], *b = n->in[1];
    real *da = tt_grad_or_null(g, a), *db = tt_grad_or_null(g, b);
    g->be->mul_backward(da, db, n->out->grad.data, a->val.data, b->val.data, n->out->val.n);
}

tt_var *tt_mul(tt_graph *g, tt_var *a, tt_var *b)
{
    tt_assert_same_shape(a->val.shape, b->val.shape, "mul");
    tt_var *out = tt_var_new(g, a->val.shape, TT_REAL);
    g->be->mul_forward(out->val.data, a->val.data, b->val.data, out->val.n);
    tt_record(g, "mul", mul_backward, out, a, b, NULL);
    return out;
}

/* y = s x  =>  dx += s dy */
static void scale_backward(tt_graph *g, tt_node *n)
{
    g->be->axpy(tt_var_grad(g, n->in[0]), n->f[0], n->out->grad.data, n->out->val.n);
}

tt_var *tt_scale(tt_graph *g, tt_var *x, real s)
{
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    g->be->scale_forward(out->val.data, x->val.data, s, out->val.n);
    tt_node *n = tt_record(g, "scale", scale_backward, out, x, NULL, NULL);
    if (n) n->f[0] = s;
    return out;
}
