/* ops_activation.c: ReLU, GELU and dropout, each with its backward below it, then the fused
 * forms the encoder uses. The kernels and their derivations are in tensor/cpu/activation.c
 * and dropout.c. */
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

/* A dropout's mask (one byte per element, in the arena) and its cursor in g's rng, n elements
 * drawn; NULL and no draw when p is 0 */
static uint8_t *dropout_mask(tt_graph *g, int64_t n, real p, tt_rng *at)
{
    *at = p > R(0) ? tt_graph_take(g, n) : (tt_rng){0};
    return p > R(0) ? tt_arena_alloc(g->data, (size_t)n) : NULL;
}

/* Records a node that saves a dropout's mask (saved[0].data) and p (f[0]); the node or NULL */
static tt_node *record_dropout(tt_graph *g, const char *op, tt_backward_fn backward,
                               tt_var *out, tt_var *x, tt_var *res, uint8_t *mask, real p)
{
    tt_node *n = tt_record(g, op, backward, out, x, res, NULL);
    if (n) {
        n->saved[0].data = mask;
        n->f[0] = p;
    }
    return n;
}

/* saved[0].data: the keep mask */
/* v's gradient += dy * keep / (1 - p) (mask, p), or += dy without a mask; written instead
 * when it is fresh (no zeroing pass first): a dropout's backward, and a residual's */
static void add_dropped_grad(tt_graph *g, tt_var *v, const uint8_t *mask, const real *dy, real p)
{
    bool fresh;
    real *d = tt_var_grad_maybe_fresh(g, v, &fresh);
    if (mask)
        g->be->dropout_backward(d, mask, dy, p, v->val.n, !fresh);
    else if (fresh)
        g->be->copy(d, dy, tt_tensor_bytes(&v->grad));
    else
        g->be->axpy(d, R(1), dy, v->val.n);
}

static void dropout_backward(tt_graph *g, tt_node *n)
{
    add_dropped_grad(g, n->in[0], n->saved[0].data, n->out->grad.data, n->f[0]);
}

tt_var *tt_dropout(tt_graph *g, tt_var *x, real p)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    if (p == R(0) || !g->training) return x;
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    tt_rng at;
    uint8_t *mask = dropout_mask(g, x->val.n, p, &at);
    g->be->dropout_forward(out->val.data, mask, x->val.data, p, at, x->val.n);
    record_dropout(g, "dropout", dropout_backward, out, x, NULL, mask, p);
    return out;
}

/* ---- fused: the encoder's dropouts without a tensor of their own ------------------------ */

/* saved[0].data: the keep mask (NULL when p is 0); saved[1].data: gelu'(x), which the forward
 * wrote with the value (so the backward is products only, no erf) */
static void gelu_dropout_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    bool fresh;
    real *dx = tt_var_grad_maybe_fresh(g, x, &fresh); /* usually fresh: written, not added */
    g->be->gelu_dropout_backward(dx, n->saved[0].data, n->saved[1].data, n->out->grad.data,
                                 n->f[0], x->val.n, !fresh);
}

/* dropout(gelu(x)); when a node records, gelu'(x) goes over x's memory (over_x) or into the
 * arena */
static tt_var *gelu_dropout(tt_graph *g, tt_var *x, real p, bool over_x)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    if (!g->training) p = R(0);
    int64_t n = x->val.n;
    tt_var *out = tt_var_new(g, x->val.shape, TT_REAL);
    tt_rng at;
    uint8_t *mask = dropout_mask(g, n, p, &at);
    real *deriv = !tt_graph_records(g, x) ? NULL
                  : over_x                ? x->val.data
                                          : tt_arena_alloc(g->data, (size_t)n * sizeof(real));
    g->be->gelu_dropout_forward(out->val.data, mask, deriv, x->val.data, p, at, n);
    tt_node *node = record_dropout(g, "gelu_dropout", gelu_dropout_backward, out, x, NULL, mask, p);
    if (node) node->saved[1].data = deriv;
    return out;
}

tt_var *tt_gelu_dropout(tt_graph *g, tt_var *x, real p) { return gelu_dropout(g, x, p, false); }

tt_var *tt_gelu_dropout_(tt_graph *g, tt_var *x, real p) { return gelu_dropout(g, x, p, true); }

/* out aliases x's memory, so the node's output and input share a value: backward reads only
 * the output (x's old value is gone) */
static void relu_dropout_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0];
    bool fresh;
    real *dx = tt_var_grad_maybe_fresh(g, x, &fresh); /* usually fresh: written, not added */
    g->be->relu_dropout_backward(dx, n->out->val.data, n->out->grad.data, n->f[0], x->val.n,
                                 !fresh);
}

/* A var over x's memory: the result of an op written over x. */
static tt_var *in_place(tt_graph *g, tt_var *x)
{
    return tt_var_alias(g, x->val, tt_tensor_view(NULL, x->val.shape, TT_REAL, g->device), false);
}

tt_var *tt_relu_dropout_(tt_graph *g, tt_var *x, real p)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    if (!g->training) p = R(0);
    tt_rng at = p > R(0) ? tt_graph_take(g, x->val.n) : (tt_rng){0};
    g->be->relu_dropout_forward(x->val.data, p, at, x->val.n);
    tt_var *out = in_place(g, x);
    tt_node *n = tt_record(g, "relu_dropout", relu_dropout_backward, out, x, NULL, NULL);
    if (n) n->f[0] = p;
    return out;
}

/* saved[0].data: the keep mask (NULL when p is 0) */
static void dropout_add_backward(tt_graph *g, tt_node *n)
{
    tt_var *x = n->in[0], *res = n->in[1];
    const real *dy = n->out->grad.data;
    if (x->requires_grad) add_dropped_grad(g, x, n->saved[0].data, dy, n->f[0]);
    if (res->requires_grad) add_dropped_grad(g, res, NULL, dy, R(0));
}

tt_var *tt_dropout_add_(tt_graph *g, tt_var *x, tt_var *res, real p)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    tt_assert_same_shape(x->val.shape, res->val.shape, "dropout_add: x and the residual");
    if (!g->training) p = R(0);
    tt_rng at;
    uint8_t *mask = dropout_mask(g, x->val.n, p, &at);
    g->be->dropout_add_forward(x->val.data, mask, res->val.data, p, at, x->val.n);
    tt_var *out = in_place(g, x);
    record_dropout(g, "dropout_add", dropout_add_backward, out, x, res, mask, p);
    return out;
}
