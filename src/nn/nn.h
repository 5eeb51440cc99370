/* nn.h: layers with parameters, built from autograd ops (never from kernels directly).
 *
 * Each layer has three calls: _init registers its parameters by their PyTorch names in a
 * tt_params table (before tt_params_finalize), _reset gives them PyTorch's initial values for the
 * same module (after finalize, through a tt_nn_init), and _forward records it on a graph.
 * Layers hold pointers to vars owned by the table, so they live as long as it does. */
#ifndef TT_NN_H
#define TT_NN_H

#include "autograd/ops.h"
#include "autograd/params.h"

/* Initial values are drawn on the host into a mirror of the flat parameter buffer and copied
 * to the device once (tt_nn_init_done), so initialisation is the same on every backend. */
typedef struct tt_nn_init {
    tt_params *ps;
    real *host; /* ps->numel reals */
    tt_rng rng;
} tt_nn_init;

void tt_nn_init_begin(tt_nn_init *in, tt_params *ps, uint64_t seed);
void tt_nn_init_done(tt_nn_init *in); /* copies to the parameters and frees the mirror */
void tt_nn_init_uniform(tt_nn_init *in, tt_var *v, real bound); /* U(-bound, bound) */
void tt_nn_init_normal(tt_nn_init *in, tt_var *v, real std);    /* N(0, std^2) */
void tt_nn_init_const(tt_nn_init *in, tt_var *v, real value);

/* name = "<prefix>.<suffix>"; aborts if it does not fit */
void tt_nn_name(char name[TT_PARAM_NAME], const char *prefix, const char *suffix);

/* Linear: y = x W^T + b, W [out, in]. Reset: PyTorch's default, kaiming-uniform with a = sqrt 5,
 * which is U(-1/sqrt(in), 1/sqrt(in)) for the weight and the same bound for the bias. */
typedef struct tt_nn_linear {
    tt_var *weight, *bias;
    int in, out;
} tt_nn_linear;
void tt_nn_linear_init(tt_nn_linear *m, tt_params *ps, const char *prefix, int in, int out);
void tt_nn_linear_reset(const tt_nn_linear *m, tt_nn_init *in);
tt_var *tt_nn_linear_forward(tt_graph *g, const tt_nn_linear *m, tt_var *x);

/* Embedding: weight [V, C] rows gathered by int32 tokens, times `scale` (sqrt(C) when the model
 * scales embeddings, else 1). Reset: N(0, 1), as nn.Embedding. */
typedef struct tt_nn_embedding {
    tt_var *weight;
    int V, C;
    real scale;
} tt_nn_embedding;
void tt_nn_embedding_init(tt_nn_embedding *m, tt_params *ps, const char *prefix, int V, int C,
                          real scale);
void tt_nn_embedding_reset(const tt_nn_embedding *m, tt_nn_init *in);
tt_var *tt_nn_embedding_forward(tt_graph *g, const tt_nn_embedding *m, tt_var *tokens);

/* LayerNorm over the last dim, affine, eps 1e-5. Reset: weight 1, bias 0. */
typedef struct tt_nn_layernorm {
    tt_var *weight, *bias;
    real eps;
} tt_nn_layernorm;
void tt_nn_layernorm_init(tt_nn_layernorm *m, tt_params *ps, const char *prefix, int C);
void tt_nn_layernorm_reset(const tt_nn_layernorm *m, tt_nn_init *in);
tt_var *tt_nn_layernorm_forward(tt_graph *g, const tt_nn_layernorm *m, tt_var *x);

/* Positions added to x [B, T, C]: sinusoidal, PE(pos, 2i) = sin(pos / 10000^(2i/C)),
 * PE(pos, 2i+1) = cos(same), a constant table on the device (owned, freed by _free); or learned,
 * the first T rows of `weight` [max_len, C] (reset N(0, 1), as nn.Embedding). */
typedef enum tt_pos_kind { TT_POS_SINUSOIDAL, TT_POS_LEARNED } tt_pos_kind;
typedef struct tt_nn_posenc {
    tt_pos_kind kind;
    int max_len, C;
    tt_var *weight;  /* learned */
    tt_tensor table; /* sinusoidal [max_len, C] */
} tt_nn_posenc;
void tt_nn_posenc_init(tt_nn_posenc *m, tt_params *ps, const char *name, tt_pos_kind kind,
                       int max_len, int C);
void tt_nn_posenc_reset(const tt_nn_posenc *m, tt_nn_init *in);
tt_var *tt_nn_posenc_forward(tt_graph *g, const tt_nn_posenc *m, tt_var *x);
void tt_nn_posenc_free(tt_nn_posenc *m);
/* The sinusoidal value, in double: what the table holds, for tests and reports. */
double tt_nn_sinusoid(int pos, int c, int C);

/* Feed-forward: linear2(dropout(act(linear1(x)))), act ReLU or GELU (erf form). Parameters
 * are <prefix>.linear1 and <prefix>.linear2, as in nn.TransformerEncoderLayer. */
typedef enum tt_activation { TT_ACT_RELU, TT_ACT_GELU } tt_activation;
typedef struct tt_nn_ffn {
    tt_nn_linear linear1, linear2;
    tt_activation act;
    real dropout;
} tt_nn_ffn;
void tt_nn_ffn_init(tt_nn_ffn *m, tt_params *ps, const char *prefix, int C, int d_ff,
                    tt_activation act, real dropout);
void tt_nn_ffn_reset(const tt_nn_ffn *m, tt_nn_init *in);
tt_var *tt_nn_ffn_forward(tt_graph *g, const tt_nn_ffn *m, tt_var *x);

/* Multi-head self-attention in PyTorch's packed layout: in_proj_weight [3C, C] (rows q, k, v),
 * in_proj_bias [3C], out_proj [C, C]; head h is columns h*dk..(h+1)*dk of q, k and v, read in
 * place by the fused attention op. Reset as nn.MultiheadAttention: xavier-uniform in_proj_weight,
 * zero in_proj_bias and out_proj.bias, out_proj.weight Linear's default. */
typedef enum tt_attn_scale { TT_SCALE_SQRT_DK, TT_SCALE_NONE } tt_attn_scale;
typedef struct tt_nn_mha {
    tt_var *in_proj_weight, *in_proj_bias;
    tt_nn_linear out_proj;
    int C, n_heads;
    real scale;   /* 1/(tau sqrt(dk)) or 1/tau */
    bool causal;
    real dropout; /* on the attention weights */
} tt_nn_mha;
/* The factor on the scores: 1/(temperature sqrt(C/n_heads)), or 1/temperature for "none". */
real tt_nn_attn_scale(tt_attn_scale scale, real temperature, int C, int n_heads);
void tt_nn_mha_init(tt_nn_mha *m, tt_params *ps, const char *prefix, int C, int n_heads,
                    tt_attn_scale scale, real temperature, bool causal, real dropout);
void tt_nn_mha_reset(const tt_nn_mha *m, tt_nn_init *in);
/* x [B,T,C]; pad int32 [B,T] (1 = padding) or NULL; *weights gets [B,H,T,T] if not NULL. */
tt_var *tt_nn_mha_forward(tt_graph *g, const tt_nn_mha *m, tt_var *x, const tt_tensor *pad,
                          tt_tensor *weights);

/* nn.TransformerEncoderLayer (batch_first):
 *   post-LN: x = norm1(x + drop(SA(x)));  x = norm2(x + drop(FF(x)))
 *   pre-LN:  x = x + drop(SA(norm1(x)));  x = x + drop(FF(norm2(x))) */
typedef struct tt_nn_encoder_layer {
    tt_nn_mha self_attn;
    tt_nn_ffn ff;
    tt_nn_layernorm norm1, norm2;
    bool pre_norm;
    real dropout;
} tt_nn_encoder_layer;
typedef struct tt_nn_layer_config {
    int C, n_heads, d_ff;
    tt_activation act;
    bool pre_norm;
    real dropout, attn_dropout;
    tt_attn_scale scale;
    real temperature;
    bool causal;
} tt_nn_layer_config;
void tt_nn_encoder_layer_init(tt_nn_encoder_layer *m, tt_params *ps, const char *prefix,
                              const tt_nn_layer_config *c);
void tt_nn_encoder_layer_reset(const tt_nn_encoder_layer *m, tt_nn_init *in);
tt_var *tt_nn_encoder_layer_forward(tt_graph *g, const tt_nn_encoder_layer *m, tt_var *x,
                                    const tt_tensor *pad, tt_tensor *weights);

#endif
