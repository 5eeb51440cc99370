/* posenc.c: positional encodings added to the embeddings, x [B,T,C] + P[0:T].
 * Sinusoidal: a constant table computed once in double; the gradient flows only to x.
 * Learned: the first T rows of pos_embed.weight, added as a broadcast bias, so its gradient is
 * the batch sum of dx (the bias backward) written straight into the table's gradient rows. */
#include "nn/nn.h"

#include <math.h>
#include <stdlib.h>

double tt_nn_sinusoid(int pos, int c, int C)
{
    double angle = pos / pow(10000.0, (double)(c - c % 2) / C);
    return c % 2 ? cos(angle) : sin(angle);
}

void tt_nn_posenc_init(tt_nn_posenc *m, tt_params *ps, const char *name, tt_pos_kind kind,
                       int max_len, int C)
{
    *m = (tt_nn_posenc){.kind = kind, .max_len = max_len, .C = C};
    if (kind == TT_POS_LEARNED) {
        char full[TT_PARAM_NAME];
        tt_nn_name(full, name, "weight");
        m->weight = tt_params_add(ps, full, tt_shape2(max_len, C));
        return;
    }
    const tt_backend *be = tt_backend_get(ps->device);
    size_t n = (size_t)max_len * C;
    real *host = tt_xmalloc(n * sizeof(real));
    for (int pos = 0; pos < max_len; pos++)
        for (int c = 0; c < C; c++) host[(size_t)pos * C + c] = (real)tt_nn_sinusoid(pos, c, C);
    m->table = tt_tensor_view(be->alloc(n * sizeof(real)), tt_shape2(max_len, C), TT_REAL,
                              ps->device);
    be->from_host(m->table.data, host, n * sizeof(real));
    free(host);
}

void tt_nn_posenc_reset(const tt_nn_posenc *m, tt_nn_init *in)
{
    if (m->kind == TT_POS_LEARNED) tt_nn_init_normal(in, m->weight, R(1));
}

tt_var *tt_nn_posenc_forward(tt_graph *g, const tt_nn_posenc *m, tt_var *x)
{
    tt_shape s = x->val.shape;
    char a[TT_SHAPE_STR];
    TT_ASSERT_MSG(s.ndim == 3 && s.d[2] == m->C && s.d[1] <= m->max_len,
                  "positions: input %s must be [B, T <= %d, %d]", tt_shape_str(s, a), m->max_len,
                  m->C);
    tt_shape rows = tt_shape2(s.d[1], m->C);
    tt_var *p;
    if (m->kind == TT_POS_LEARNED)
        p = tt_var_alias(g, tt_tensor_view(m->weight->val.data, rows, TT_REAL, g->device),
                         tt_tensor_view(m->weight->grad.data, rows, TT_REAL, g->device),
                         m->weight->requires_grad);
    else
        p = tt_var_alias(g, tt_tensor_view(m->table.data, rows, TT_REAL, g->device),
                         tt_tensor_view(NULL, rows, TT_REAL, g->device), false);
    return tt_add_bias(g, x, p);
}

void tt_nn_posenc_free(tt_nn_posenc *m)
{
    if (m->table.data) tt_backend_get(m->table.device)->free(m->table.data);
    m->table.data = NULL;
}
