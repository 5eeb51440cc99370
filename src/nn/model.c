/* model.c: the whole encoder model (see model.h). */
#include "nn/model.h"

#include <stdio.h>
#include <stdlib.h>

static void check_config(const tt_model_config *c)
{
    TT_ASSERT_MSG(c->vocab > 0 && c->n_out > 0 && c->d_model > 0 && c->n_heads > 0 &&
                      c->n_layers >= 0 && c->d_ff > 0 && c->max_len > 0,
                  "model: sizes must be positive (vocab %d n_out %d d_model %d n_heads %d "
                  "n_layers %d d_ff %d max_len %d)", c->vocab, c->n_out, c->d_model, c->n_heads,
                  c->n_layers, c->d_ff, c->max_len);
    TT_ASSERT_MSG(c->d_model % c->n_heads == 0, "model: d_model %d not divisible by %d heads",
                  c->d_model, c->n_heads);
    TT_ASSERT_MSG(c->dropout >= R(0) && c->dropout < R(1) && c->attn_dropout >= R(0) &&
                      c->attn_dropout < R(1),
                  "model: dropout %g / attn_dropout %g outside [0,1)", (double)c->dropout,
                  (double)c->attn_dropout);
    TT_ASSERT_MSG(c->attn_temperature > R(0), "model: temperature %g <= 0",
                  (double)c->attn_temperature);
}

void tt_model_init(tt_model *m, const tt_model_config *cfg, tt_device dev)
{
    check_config(cfg);
    *m = (tt_model){.cfg = *cfg};
    const tt_model_config *c = &m->cfg;
    tt_params_init(&m->params, dev);
    tt_nn_embedding_init(&m->embed, &m->params, "embed", c->vocab, c->d_model,
                         c->embed_scale ? R_SQRT((real)c->d_model) : R(1));
    tt_nn_posenc_init(&m->pos, &m->params, "pos_embed", c->positional, c->max_len, c->d_model);
    tt_nn_layer_config lc = {.C = c->d_model, .n_heads = c->n_heads, .d_ff = c->d_ff,
                             .act = c->activation, .pre_norm = c->pre_norm,
                             .dropout = c->dropout, .attn_dropout = c->attn_dropout,
                             .scale = c->attn_scale, .temperature = c->attn_temperature,
                             .causal = c->causal};
    m->layers = tt_xcalloc((size_t)(c->n_layers ? c->n_layers : 1), sizeof *m->layers);
    for (int l = 0; l < c->n_layers; l++) {
        char prefix[TT_PARAM_NAME];
        snprintf(prefix, sizeof prefix, "encoder.layers.%d", l);
        tt_nn_encoder_layer_init(&m->layers[l], &m->params, prefix, &lc);
    }
    if (c->pre_norm) tt_nn_layernorm_init(&m->norm, &m->params, "encoder.norm", c->d_model);
    tt_nn_linear_init(&m->head, &m->params, "head", c->d_model, c->n_out);
    tt_params_finalize(&m->params);
}

void tt_model_reset(tt_model *m, uint64_t seed)
{
    tt_nn_init in;
    tt_nn_init_begin(&in, &m->params, seed);
    tt_nn_embedding_reset(&m->embed, &in);
    tt_nn_posenc_reset(&m->pos, &in);
    for (int l = 0; l < m->cfg.n_layers; l++) tt_nn_encoder_layer_reset(&m->layers[l], &in);
    if (m->cfg.pre_norm) tt_nn_layernorm_reset(&m->norm, &in);
    tt_nn_linear_reset(&m->head, &in);
    tt_nn_init_done(&in);
}

void tt_model_free(tt_model *m)
{
    tt_nn_posenc_free(&m->pos);
    free(m->layers);
    tt_params_free(&m->params);
    *m = (tt_model){0};
}

void tt_model_set_temperature(tt_model *m, real tau)
{
    for (int l = 0; l < m->cfg.n_layers; l++)
        m->layers[l].self_attn.scale = tt_nn_attn_scale(m->cfg.attn_scale, tau, m->cfg.d_model,
                                                        m->cfg.n_heads);
}

tt_var *tt_model_encode(tt_graph *g, const tt_model *m, tt_var *tokens, const tt_tensor *pad,
                        tt_tensor *att)
{
    char a[TT_SHAPE_STR];
    TT_ASSERT_MSG(tokens->val.dtype == TT_I32 && tokens->val.shape.ndim == 2,
                  "model: tokens %s must be int32 [B,T]", tt_shape_str(tokens->val.shape, a));
    tt_var *x = tt_nn_embedding_forward(g, &m->embed, tokens);
    x = tt_nn_posenc_forward(g, &m->pos, x);
    x = tt_dropout(g, x, m->cfg.dropout);
    for (int l = 0; l < m->cfg.n_layers; l++)
        x = tt_nn_encoder_layer_forward(g, &m->layers[l], x, pad, att ? &att[l] : NULL);
    if (m->cfg.pre_norm) x = tt_nn_layernorm_forward(g, &m->norm, x);
    return x;
}

tt_var *tt_model_forward(tt_graph *g, const tt_model *m, tt_var *tokens, const tt_tensor *pad,
                         tt_tensor *att)
{
    return tt_nn_linear_forward(g, &m->head, tt_model_encode(g, m, tokens, pad, att));
}
