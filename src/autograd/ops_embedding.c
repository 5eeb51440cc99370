/* ops_embedding.c: embedding lookup and its scatter-add backward. */
#include "autograd/ops.h"

static void embedding_backward(tt_graph *g, tt_node *n)
{
    tt_var *w = n->in[0], *tokens = n->in[1];
    int C = w->val.shape.d[1];
    g->be->embedding_backward(tt_var_grad(g, w), tokens->val.data, n->out->grad.data,
                              tokens->val.n, C);
}

tt_var *tt_embedding(tt_graph *g, tt_var *weight, tt_var *tokens)
{
    char sw[TT_SHAPE_STR];
    TT_ASSERT_MSG(weight->val.shape.ndim == 2, "embedding: weight %s is not [V,C]",
                  tt_shape_str(weight->val.shape, sw));
    TT_ASSERT_MSG(tokens->val.dtype == TT_I32 && !tokens->requires_grad,
                  "embedding: tokens must be an int32 constant");
    TT_ASSERT_MSG(tokens->val.shape.ndim < TT_MAX_DIMS, "embedding: tokens have too many dims");
    int V = weight->val.shape.d[0], C = weight->val.shape.d[1];
    tt_shape os = tokens->val.shape;
    os.d[os.ndim++] = C;
    tt_var *out = tt_var_new(g, os, TT_REAL);
    g->be->embedding_forward(out->val.data, tokens->val.data, weight->val.data, tokens->val.n, C,
                             V);
    tt_record(g, "embedding", embedding_backward, out, weight, tokens, NULL);
    return out;
}
