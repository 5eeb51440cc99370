/* ops_loss.c: fused cross-entropy, sum and mean, each with its backward below it. */
#include "autograd/ops.h"

/* saved[0] = lse (N) */
static void cross_entropy_backward(tt_graph *g, tt_node *n)
{
    tt_var *logits = n->in[0], *targets = n->in[1];
    int V = n->i[0];
    g->be->crossentropy_backward(tt_var_grad(g, logits), n->out->grad.data, logits->val.data,
                                 n->saved[0].data, targets->val.data, targets->val.n, V);
}

tt_var *tt_cross_entropy(tt_graph *g, tt_var *logits, tt_var *targets)
{
    char sl[TT_SHAPE_STR], st[TT_SHAPE_STR];
    tt_shape ls = logits->val.shape, ts = targets->val.shape;
    bool fits = ls.ndim == ts.ndim + 1;
    for (int i = 0; fits && i < ts.ndim; i++) fits = ls.d[i] == ts.d[i];
    TT_ASSERT_MSG(fits, "cross_entropy: logits %s do not fit targets %s (expected [...,V] and "
                  "[...])", tt_shape_str(ls, sl), tt_shape_str(ts, st));
    TT_ASSERT_MSG(targets->val.dtype == TT_I32 && !targets->requires_grad,
                  "cross_entropy: targets must be an int32 constant");
    int V = ls.d[ls.ndim - 1];
    int64_t N = targets->val.n;
    tt_var *out = tt_var_new(g, tt_shape1(1), TT_REAL);
    tt_tensor lse = tt_arena_tensor(g->data, tt_shape1((int)N), TT_REAL);
    g->be->crossentropy_forward(out->val.data, lse.data, logits->val.data, targets->val.data, N, V);
    tt_node *n = tt_record(g, "cross_entropy", cross_entropy_backward, out, logits, targets, NULL);
    if (n) {
        n->saved[0] = lse;
        n->i[0] = V;
    }
    return out;
}

/* y = s * sum(x)  =>  dx += s dy (s = 1 for sum, 1/n for mean) */
static void sum_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    g->be->sum_backward(tt_var_grad(g, x), n->out->grad.data, n->f[0], x->val.n);
}

static tt_var *scaled_sum(tt_graph *g, tt_var *x, real s, const char *name)
{
    tt_var *out = tt_var_new(g, tt_shape1(1), TT_REAL);
    g->be->sum_forward(out->val.data, x->val.data, x->val.n);
    if (s != R(1)) g->be->scale_forward(out->val.data, out->val.data, s, 1);
    tt_node *n = tt_record(g, name, sum_backward, out, x, NULL, NULL);
    if (n) n->f[0] = s;
    return out;
}

tt_var *tt_sum(tt_graph *g, tt_var *x) { return scaled_sum(g, x, R(1), "sum"); }

tt_var *tt_mean(tt_graph *g, tt_var *x)
{
    TT_ASSERT_MSG(x->val.n > 0, "mean of an empty tensor");
    return scaled_sum(g, x, R(1) / (real)x->val.n, "mean");
}
