/* ops_norm.c: row softmax and LayerNorm, each with its backward below it.
 * Kernels and derivations: tensor/cpu/softmax.c and layernorm.c. */
#include "autograd/ops.h"

static int64_t rows_of(const tt_var *x, int C) { return C ? x->val.n / C : 0; }

/* softmax saves its own output (the out var), nothing else */
static void softmax_backward(tt_graph *g, tt_node *n)
{
    int C = n->i[0];
    g->be->softmax_backward(tt_var_grad(g, n->in[0]), n->out->val.data, n->out->grad.data,
                            rows_of(n->out, C), C);
}

tt_var *tt_softmax(tt_graph *g, tt_var *x)
{
    TT_ASSERT_MSG(x->val.shape.ndim >= 1, "softmax: scalar input");
    int C = x->val.shape.d[x->val.shape.ndim - 1];
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    g->be->softmax_forward(out->val.data, x->val.data, rows_of(x, C), C);
    tt_node *n = tt_record(g, "softmax", softmax_backward, out, x, NULL, NULL);
    if (n) n->i[0] = C;
    return out;
}

/* saved[0] = mean (N), saved[1] = rstd (N) */
static void layernorm_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0], *w = n->in[1], *b = n->in[2];
    int C = n->i[0];
    bool fresh = false; /* x's gradient is usually fresh: written, not zeroed and added to */
    real *dx = x->requires_grad ? tt_var_grad_maybe_fresh(g, x, &fresh) : NULL;
    g->be->layernorm_backward(dx, tt_grad_or_null(g, w), tt_grad_or_null(g, b),
                              n->out->grad.data, x->val.data, w->val.data, n->saved[0].data,
                              n->saved[1].data, rows_of(x, C), C, !fresh);
}

tt_var *tt_layernorm(tt_graph *g, tt_var *x, tt_var *weight, tt_var *bias, real eps)
{
    TT_ASSERT_MSG(x->val.shape.ndim >= 1, "layernorm: scalar input");
    int C = x->val.shape.d[x->val.shape.ndim - 1];
    tt_assert_same_shape(weight->val.shape, tt_shape1(C), "layernorm weight vs last dim");
    tt_assert_same_shape(bias->val.shape, tt_shape1(C), "layernorm bias vs last dim");
    int64_t N = rows_of(x, C);
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    tt_tensor mean = tt_arena_tensor(g->data, tt_shape1((int)N), TT_REAL);
    tt_tensor rstd = tt_arena_tensor(g->data, tt_shape1((int)N), TT_REAL);
    g->be->layernorm_forward(out->val.data, mean.data, rstd.data, x->val.data, weight->val.data,
                             bias->val.data, N, C, eps);
    tt_node *n = tt_record(g, "layernorm", layernorm_backward, out, x, weight, bias);
    if (n) {
        n->saved[0] = mean;
        n->saved[1] = rstd;
        n->i[0] = C;
    }
    return out;
}
