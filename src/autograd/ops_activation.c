/* ops_activation.c: ReLU, GELU and dropout, each with its backward below it.
 * The kernels and their derivations are in tensor/cpu/activation.c and dropout.c. */
#include "autograd/ops.h"

static void relu_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    g->be->relu_backward(tt_var_grad(g, x), x->val.data, n->out->grad.data, x->val.n);
}

tt_var *tt_relu(tt_graph *g, tt_var *x)
{
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    g->be->relu_forward(out->val.data, x->val.data, x->val.n);
    tt_record(g, "relu", relu_backward, out, x, NULL, NULL);
    return out;
}

static void gelu_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    g->be->gelu_backward(tt_var_grad(g, x), x->val.data, n->out->grad.data, x->val.n);
}

tt_var *tt_gelu(tt_graph *g, tt_var *x)
{
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    g->be->gelu_forward(out->val.data, x->val.data, x->val.n);
    tt_record(g, "gelu", gelu_backward, out, x, NULL, NULL);
    return out;
}

/* saved[0].data: the keep mask, one byte per element, in the arena */
static void dropout_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    g->be->dropout_backward(tt_var_grad(g, x), n->saved[0].data, n->out->grad.data, n->f[0],
                            x->val.n);
}

tt_var *tt_dropout(tt_graph *g, tt_var *x, real p)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    if (p == R(0) || !g->training) return x;
    TT_ASSERT_MSG(g->rng, "dropout: the graph has no rng (tt_graph_init with an rng)");
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    uint8_t *mask = tt_arena_alloc(g->data, (size_t)x->val.n);
    tt_rng at = tt_rng_take(g->rng, x->val.n);
    g->be->dropout_forward(out->val.data, mask, x->val.data, p, at, x->val.n);
    tt_node *n = tt_record(g, "dropout", dropout_backward, out, x, NULL, NULL);
    if (n) {
        n->saved[0].data = mask;
        n->f[0] = p;
    }
    return out;
}
