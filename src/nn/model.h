/* model.h: the model of docs/design.md section 1, the contract PyTorch reproduces with stock
 * modules:
 *   x = embed(tokens) * (embed_scale ? sqrt(d) : 1) + P[0:T];  x = dropout(x)
 *   x = encoder layers (post-LN or pre-LN);  pre-LN only: x = encoder.norm(x)
 *   logits = head(x) per token
 * Parameters live in one named table (m->params) with section 5's names, registered in
 * PyTorch's state_dict order; the model owns the table and the sinusoidal position table. */
#ifndef TT_MODEL_H
#define TT_MODEL_H

#include "nn/nn.h"

typedef struct tt_model_config {
    int vocab, n_out, d_model, n_heads, n_layers, d_ff, max_len;
    tt_activation activation;
    bool pre_norm;
    tt_pos_kind positional;
    bool embed_scale;
    real dropout, attn_dropout;
    tt_attn_scale attn_scale;
    real attn_temperature;
    bool causal;
} tt_model_config;

typedef struct tt_model {
    tt_model_config cfg;
    tt_params params;
    tt_nn_embedding embed;
    tt_nn_posenc pos;
    tt_nn_encoder_layer *layers; /* cfg.n_layers, owned */
    tt_nn_layernorm norm;        /* encoder.norm, pre-LN only */
    tt_nn_linear head;
} tt_model;

/* Registers and allocates every parameter (values uninitialised until tt_model_reset or a
 * load). The config must be valid (the trainer validates user input first): a bad one aborts. */
void tt_model_init(tt_model *m, const tt_model_config *cfg, tt_device dev);
/* PyTorch's initial values for the same modules (nn.h), drawn from (seed, stream 0). */
void tt_model_reset(tt_model *m, uint64_t seed);
void tt_model_free(tt_model *m);
/* Every layer's score scale recomputed for temperature tau (> 0): 1/(tau sqrt(d_k)), or 1/tau
 * unscaled. cfg.attn_temperature is what the model trains with; a study of temperature sets
 * others on a trained model and puts it back with this same call. */
void tt_model_set_temperature(tt_model *m, real tau);

/* tokens: int32 var [B,T]; pad: int32 [B,T] (1 = padding key) or NULL; att: NULL or an array
 * of n_layers tensors that receive each layer's weights [B,H,T,T] (after softmax, before
 * dropout; in the graph's arena). Returns the final hidden states [B,T,d]. */
tt_var *tt_model_encode(tt_graph *g, const tt_model *m, tt_var *tokens, const tt_tensor *pad,
                        tt_tensor *att);
/* head(encode(...)): logits [B,T,n_out] */
tt_var *tt_model_forward(tt_graph *g, const tt_model *m, tt_var *tokens, const tt_tensor *pad,
                         tt_tensor *att);

#endif
