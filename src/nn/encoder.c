/* encoder.c: multi-head self-attention and the Transformer encoder layer, with
 * nn.MultiheadAttention's and nn.TransformerEncoderLayer's parameters, initial values and
 * semantics (see nn.h). */
#include "nn/nn.h"

real tt_nn_attn_scale(tt_attn_scale scale, real temperature, int C, int n_heads)
{
    real dk = (real)(C / n_heads);
    return scale == TT_SCALE_SQRT_DK ? R(1) / (temperature * R_SQRT(dk)) : R(1) / temperature;
}

void tt_nn_mha_init(tt_nn_mha *m, tt_params *ps, const char *prefix, int C, int n_heads,
                    tt_attn_scale scale, real temperature, bool causal, real dropout)
{
    TT_ASSERT_MSG(n_heads > 0 && C % n_heads == 0, "attention: d_model %d not divisible by %d "
                  "heads", C, n_heads);
    TT_ASSERT_MSG(temperature > R(0), "attention: temperature %g <= 0", (double)temperature);
    char name[TT_PARAM_NAME];
    *m = (tt_nn_mha){.C = C, .n_heads = n_heads, .causal = causal, .dropout = dropout};
    m->scale = tt_nn_attn_scale(scale, temperature, C, n_heads);
    tt_nn_name(name, prefix, "in_proj_weight");
    m->in_proj_weight = tt_params_add(ps, name, tt_shape2(3 * C, C));
    tt_nn_name(name, prefix, "in_proj_bias");
    m->in_proj_bias = tt_params_add(ps, name, tt_shape1(3 * C));
    tt_nn_name(name, prefix, "out_proj");
    tt_nn_linear_init(&m->out_proj, ps, name, C, C);
}

void tt_nn_mha_reset(const tt_nn_mha *m, tt_nn_init *in)
{
    /* xavier-uniform over the whole [3C, C] matrix: fan_in C, fan_out 3C */
    tt_nn_init_uniform(in, m->in_proj_weight, R_SQRT(R(6) / (R(4) * (real)m->C)));
    tt_nn_init_const(in, m->in_proj_bias, R(0));
    tt_nn_linear_reset(&m->out_proj, in);
    tt_nn_init_const(in, m->out_proj.bias, R(0));
}

tt_var *tt_nn_mha_forward(tt_graph *g, const tt_nn_mha *m, tt_var *x, const tt_tensor *pad,
                          tt_tensor *weights)
{
    tt_var *qkv = tt_linear(g, x, m->in_proj_weight, m->in_proj_bias);
    tt_sdpa_opts o = {.scale = m->scale, .causal = m->causal, .pad = pad, .dropout = m->dropout};
    tt_var *h = tt_sdpa_packed(g, qkv, m->n_heads, &o, weights);
    return tt_nn_linear_forward(g, &m->out_proj, h);
}

void tt_nn_encoder_layer_init(tt_nn_encoder_layer *m, tt_params *ps, const char *prefix,
                              const tt_nn_layer_config *c)
{
    char name[TT_PARAM_NAME];
    m->pre_norm = c->pre_norm;
    m->dropout = c->dropout;
    /* registration order is PyTorch's state_dict order */
    tt_nn_name(name, prefix, "self_attn");
    tt_nn_mha_init(&m->self_attn, ps, name, c->C, c->n_heads, c->scale, c->temperature,
                   c->causal, c->attn_dropout);
    tt_nn_ffn_init(&m->ff, ps, prefix, c->C, c->d_ff, c->act, c->dropout);
    tt_nn_name(name, prefix, "norm1");
    tt_nn_layernorm_init(&m->norm1, ps, name, c->C);
    tt_nn_name(name, prefix, "norm2");
    tt_nn_layernorm_init(&m->norm2, ps, name, c->C);
}

void tt_nn_encoder_layer_reset(const tt_nn_encoder_layer *m, tt_nn_init *in)
{
    tt_nn_mha_reset(&m->self_attn, in);
    tt_nn_ffn_reset(&m->ff, in);
    tt_nn_layernorm_reset(&m->norm1, in);
    tt_nn_layernorm_reset(&m->norm2, in);
}

tt_var *tt_nn_encoder_layer_forward(tt_graph *g, const tt_nn_encoder_layer *m, tt_var *x,
                                    const tt_tensor *pad, tt_tensor *weights)
{
    /* x + dropout(sublayer(...)) is tt_dropout_add_, written over the sublayer's output (a
     * Linear's, which nothing else reads) */
    tt_var *h;
    if (m->pre_norm) {
        h = tt_nn_mha_forward(g, &m->self_attn, tt_nn_layernorm_forward(g, &m->norm1, x), pad,
                              weights);
        x = tt_dropout_add_(g, h, x, m->dropout);
        h = tt_nn_ffn_forward(g, &m->ff, tt_nn_layernorm_forward(g, &m->norm2, x));
        return tt_dropout_add_(g, h, x, m->dropout);
    }
    h = tt_nn_mha_forward(g, &m->self_attn, x, pad, weights);
    x = tt_nn_layernorm_forward(g, &m->norm1, tt_dropout_add_(g, h, x, m->dropout));
    h = tt_nn_ffn_forward(g, &m->ff, x);
    return tt_nn_layernorm_forward(g, &m->norm2, tt_dropout_add_(g, h, x, m->dropout));
}
