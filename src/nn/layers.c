/* layers.c: initialisation helpers and the simple layers: Linear, Embedding, LayerNorm,
 * feed-forward. Initial values follow PyTorch's for the same modules (see nn.h). */
#include "nn/nn.h"

#include <stdio.h>
#include <stdlib.h>

void tt_nn_name(char name[TT_PARAM_NAME], const char *prefix, const char *suffix)
{
    int len = snprintf(name, TT_PARAM_NAME, "%s.%s", prefix, suffix);
    TT_ASSERT_MSG(len > 0 && len < TT_PARAM_NAME, "parameter name too long: %s.%s", prefix,
                  suffix);
}

/* A parameter named "<prefix>.<suffix>". */
static tt_var *param(tt_params *ps, const char *prefix, const char *suffix, tt_shape s)
{
    char name[TT_PARAM_NAME];
    tt_nn_name(name, prefix, suffix);
    return tt_params_add(ps, name, s);
}

void tt_nn_init_begin(tt_nn_init *in, tt_params *ps, uint64_t seed)
{
    TT_ASSERT_MSG(ps->data, "tt_nn_init_begin: finalize the parameters first");
    in->ps = ps;
    in->host = tt_xcalloc((size_t)ps->numel, sizeof(real));
    tt_rng_init(&in->rng, seed, 0);
}

void tt_nn_init_done(tt_nn_init *in)
{
    tt_backend_get(in->ps->device)->from_host(in->ps->data, in->host,
                                               (size_t)in->ps->numel * sizeof(real));
    free(in->host);
    in->host = NULL;
}

static real *host_of(tt_nn_init *in, const tt_var *v)
{
    int64_t off = (real *)v->val.data - in->ps->data;
    TT_ASSERT_MSG(off >= 0 && off + v->val.n <= in->ps->numel, "init: a var outside the table");
    return in->host + off;
}

void tt_nn_init_uniform(tt_nn_init *in, tt_var *v, real bound)
{
    tt_rng_uniform(&in->rng, host_of(in, v), v->val.n, -bound, bound);
}

void tt_nn_init_normal(tt_nn_init *in, tt_var *v, real std)
{
    tt_rng_normal(&in->rng, host_of(in, v), v->val.n, R(0), std);
}

void tt_nn_init_const(tt_nn_init *in, tt_var *v, real value)
{
    real *h = host_of(in, v);
    for (int64_t i = 0; i < v->val.n; i++) h[i] = value;
}

void tt_nn_linear_init(tt_nn_linear *m, tt_params *ps, const char *prefix, int in, int out)
{
    m->in = in;
    m->out = out;
    m->weight = param(ps, prefix, "weight", tt_shape2(out, in));
    m->bias = param(ps, prefix, "bias", tt_shape1(out));
}

void tt_nn_linear_reset(const tt_nn_linear *m, tt_nn_init *in)
{
    real bound = R(1) / R_SQRT((real)m->in);
    tt_nn_init_uniform(in, m->weight, bound);
    tt_nn_init_uniform(in, m->bias, bound);
}

tt_var *tt_nn_linear_forward(tt_graph *g, const tt_nn_linear *m, tt_var *x)
{
    return tt_linear(g, x, m->weight, m->bias);
}

void tt_nn_embedding_init(tt_nn_embedding *m, tt_params *ps, const char *prefix, int V, int C,
                          real scale)
{
    *m = (tt_nn_embedding){.V = V, .C = C, .scale = scale};
    m->weight = param(ps, prefix, "weight", tt_shape2(V, C));
}

void tt_nn_embedding_reset(const tt_nn_embedding *m, tt_nn_init *in)
{
    tt_nn_init_normal(in, m->weight, R(1));
}

tt_var *tt_nn_embedding_forward(tt_graph *g, const tt_nn_embedding *m, tt_var *tokens)
{
    tt_var *x = tt_embedding(g, m->weight, tokens);
    return m->scale == R(1) ? x : tt_scale(g, x, m->scale);
}

void tt_nn_layernorm_init(tt_nn_layernorm *m, tt_params *ps, const char *prefix, int C)
{
    m->weight = param(ps, prefix, "weight", tt_shape1(C));
    m->bias = param(ps, prefix, "bias", tt_shape1(C));
    m->eps = R(1e-5);
}

void tt_nn_layernorm_reset(const tt_nn_layernorm *m, tt_nn_init *in)
{
    tt_nn_init_const(in, m->weight, R(1));
    tt_nn_init_const(in, m->bias, R(0));
}

tt_var *tt_nn_layernorm_forward(tt_graph *g, const tt_nn_layernorm *m, tt_var *x)
{
    return tt_layernorm(g, x, m->weight, m->bias, m->eps);
}

void tt_nn_ffn_init(tt_nn_ffn *m, tt_params *ps, const char *prefix, int C, int d_ff,
                    tt_activation act, real dropout)
{
    char name[TT_PARAM_NAME];
    tt_nn_name(name, prefix, "linear1");
    tt_nn_linear_init(&m->linear1, ps, name, C, d_ff);
    tt_nn_name(name, prefix, "linear2");
    tt_nn_linear_init(&m->linear2, ps, name, d_ff, C);
    m->act = act;
    m->dropout = dropout;
}

void tt_nn_ffn_reset(const tt_nn_ffn *m, tt_nn_init *in)
{
    tt_nn_linear_reset(&m->linear1, in);
    tt_nn_linear_reset(&m->linear2, in);
}

tt_var *tt_nn_ffn_forward(tt_graph *g, const tt_nn_ffn *m, tt_var *x)
{
    tt_var *h = tt_nn_linear_forward(g, &m->linear1, x);
    /* the activation and dropout fused: ReLU in place over linear1's output (one [N, d_ff]
     * tensor instead of three), GELU into one more, its derivative for the backward written
     * over linear1's output, which nothing else reads */
    if (m->act == TT_ACT_RELU)
        h = tt_relu_dropout_(g, h, m->dropout);
    else
        h = tt_gelu_dropout_(g, h, m->dropout);
    return tt_nn_linear_forward(g, &m->linear2, h);
}
