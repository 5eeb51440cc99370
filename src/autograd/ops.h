/* ops.h: every differentiable op. Each returns a new var in the graph's arena and, when
 * recording, appends its node; its backward sits right below it in ops_*.c.
 * Shapes: "[..., C]" means any leading dims, flattened to rows N. */
#ifndef TT_OPS_H
#define TT_OPS_H

#include "autograd/graph.h"

/* op(a) op(b), with op(x) = x^T over the last two dims when the flag is set.
 * a [..., M, K] (or [..., K, M]); b [K, N] (or [N, K]) shared across a's leading dims, or
 * b with the same leading dims as a (batched). Out [..., M, N]. */
tt_var *tt_matmul(tt_graph *g, tt_var *a, tt_var *b, bool ta, bool tb);
/* x [..., in] W^T + bias, W [out, in], bias [out] or NULL: PyTorch's Linear. */
tt_var *tt_linear(tt_graph *g, tt_var *x, tt_var *w, tt_var *bias);

/* a + b, same shapes */
tt_var *tt_add(tt_graph *g, tt_var *a, tt_var *b);
/* x [..., *S] + bias [*S]: bias broadcast over x's leading dims (S: one or more trailing dims,
 * e.g. a [C] bias over rows, or positions [T, C] over a batch [B, T, C]) */
tt_var *tt_add_bias(tt_graph *g, tt_var *x, tt_var *bias);
/* a * b elementwise, same shapes */
tt_var *tt_mul(tt_graph *g, tt_var *a, tt_var *b);
/* s * x */
tt_var *tt_scale(tt_graph *g, tt_var *x, real s);

tt_var *tt_relu(tt_graph *g, tt_var *x);
/* erf form, as torch.nn.functional.gelu(approximate='none') */
tt_var *tt_gelu(tt_graph *g, tt_var *x);
/* Inverted dropout with probability p in [0,1), masks from g->rng. Identity (x itself) when
 * p == 0 or the graph is not training. */
tt_var *tt_dropout(tt_graph *g, tt_var *x, real p);

/* The encoder's dropouts fused with what comes before or after them, written over x (in
 * place, hence the underscore): x's old value is lost, so x must be a value that no recorded
 * node reads and that has no other use, such as a Linear's output. The masks are the ones
 * tt_dropout draws, so the results equal the unfused ops' bit for bit, with one tensor less
 * each. Not training or p == 0: no dropout. */
/* dropout(relu(x)); saves nothing (its backward needs only the output) */
tt_var *tt_relu_dropout_(tt_graph *g, tt_var *x, real p);
/* res + dropout(x): a sublayer's output into the residual stream; saves the mask */
tt_var *tt_dropout_add_(tt_graph *g, tt_var *x, tt_var *res, real p);
/* dropout(gelu(x)), out of place: one new tensor instead of two, the mask saved and gelu'(x),
 * computed with the value, saved in the arena for the backward; the same mask and values as
 * tt_dropout(g, tt_gelu(g, x), p), and the same gradient; x may have other uses. Not training
 * or p == 0: gelu(x). */
tt_var *tt_gelu_dropout(tt_graph *g, tt_var *x, real p);
/* The same, with gelu'(x) written over x's memory when a node records (no arena for it): x's
 * value is gone after the call, so x must have no other use (linear1's output in the
 * feed-forward block). */
tt_var *tt_gelu_dropout_(tt_graph *g, tt_var *x, real p);

/* softmax over the last dim of x [..., C] */
tt_var *tt_softmax(tt_graph *g, tt_var *x);
/* LayerNorm over the last dim: x [..., C], weight [C], bias [C] */
tt_var *tt_layernorm(tt_graph *g, tt_var *x, tt_var *weight, tt_var *bias, real eps);

/* Scaled dot-product attention, fused (one node, its own backward). */
typedef struct tt_sdpa_opts {
    real scale;           /* scores = scale * q.k: 1/(tau sqrt(d_k)), or 1/tau unscaled */
    bool causal;          /* key j > query i is masked */
    const tt_tensor *pad; /* int32 [B,T], nonzero = padding key (masked); NULL for none */
    real dropout;         /* inverted dropout on the weights, when the graph is training */
} tt_sdpa_opts;
/* q, k, v [B,T,D], heads are column blocks of width D/n_heads; out [B,T,D] (heads
 * concatenated). *weights (if not NULL) receives the attention weights [B,H,T,T] after softmax
 * and before dropout, in the data arena until the next reset. A query whose keys are all masked
 * gets zero weights and a zero output. */
tt_var *tt_sdpa(tt_graph *g, tt_var *q, tt_var *k, tt_var *v, int n_heads,
                const tt_sdpa_opts *o, tt_tensor *weights);
/* The same on a packed qkv [B,T,3D] (rows q, k, v: PyTorch's in_proj output), read in place. */
tt_var *tt_sdpa_packed(tt_graph *g, tt_var *qkv, int n_heads, const tt_sdpa_opts *o,
                       tt_tensor *weights);

/* weight [V, C] gathered by tokens [...] (int32): out [..., C] */
tt_var *tt_embedding(tt_graph *g, tt_var *weight, tt_var *tokens);

/* Mean cross-entropy of logits [..., V] against int32 targets [...]; targets of -100 are
 * ignored. Out: a scalar [1]. */
tt_var *tt_cross_entropy(tt_graph *g, tt_var *logits, tt_var *targets);
/* Scalar [1] sum / mean of every element. */
tt_var *tt_sum(tt_graph *g, tt_var *x);
tt_var *tt_mean(tt_graph *g, tt_var *x);

#endif
