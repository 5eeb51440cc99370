/* memory.c: the memory of one training step, worked out from the config before the first
 * step (tt_step_sizes_for in run.h), so that nothing grows inside a step. */
#include "train/run/run.h"

#include <math.h>

/* The step's memory in bytes, from the sizes alone (N = B*T rows, f = d_ff, H heads, R =
 * sizeof(real), P threads; dropout masks are one byte per element). tests/test_memory_plan.c
 * checks every part against real steps over a grid of configs: at least the use, at most twice.
 *
 * Values (the data arena): what the forward pass records and keeps until the step ends. Per
 * layer, post-LN and pre-LN alike, at most: 8 N*d reals (qkv 3, attention output, out_proj,
 * linear2, two norms; each dropout and residual add is written over out_proj's or linear2's
 * output), 2 N*f for GELU (linear1, and GELU fused with its dropout into one more: GELU's
 * backward reads linear1's output) but 1 for ReLU (ReLU and dropout are fused in place over
 * linear1's output), 4 N norm statistics, B*H*T*T attention weights, and the attention
 * scratch the backend asks for (forward and backward; the CPU's: T*T and 2 T*T reals per
 * thread; the backward's is the only thing backward takes from the arena); plus masks of at
 * most 2 N*d + N*f + B*H*T*T bytes (ReLU's fused dropout saves no mask: 2 N*d + B*H*T*T). Around the layers: embedding, its scale, positions, dropout
 * and (pre-LN) the final norm, 5 N*d + 2 N reals and an N*d mask; the head N*n_out, the loss's
 * N row statistics, classify's pooling (N weights, B*d); int32 tokens, padding, targets (12 N
 * bytes). Every allocation may lose 63 bytes to alignment (24 per layer, 32 more). Evaluation
 * (no grad, no dropout) records a subset of the same. These counts are what a step with dropout
 * really takes (the plan is 1.32-1.39 times its use over the test's grid with GELU); a 25%
 * margin covers what they miss. Without dropout a step uses less (the plan stays within 2x).
 *
 * Gradients (the heap): tt_backward releases each intermediate gradient as soon as the node
 * that made the var has run, so only a few are alive at once. Walking a layer's tape backwards
 * from d(out) [N,d] (post-LN; pre-LN moves the norms, which changes one line; fused or not):
 *   norm2, add2, dropout            3 N*d   (d of the sum, d of both its inputs)
 *   linear2, dropout, activation    N*d + 2 N*f   (d(x1) waits; one [N,f] made from another)
 *   linear1 (pre-LN: d(norm2 in))   2 N*d + N*f
 *   norm1, add1, dropout, out_proj  3 N*d
 *   sdpa                            5 N*d   (d(x) waits, d of its output, d(qkv) 3 N*d)
 * and the layer ends with d(x) [N,d] alone, so layers do not add up. The head's backward holds
 * d(logits) N*n_out and d(h) N*d at once, the embedding end at most 2 N*d: the peak in use is
 * max(5 N*d, N*d + 2 N*f, 2 N*d + N*f, N*(d + n_out)) reals. First fit leaves holes, so the
 * region touched passes the peak in use: by up to one [N, max(d,f)] gradient, measured over a
 * grid of sizes (d_ff from d to 8d, n_out below and above d), both norms, with and without
 * dropout. The heap gets that sum and 25%; on the CPU only the touched part costs memory. At
 * most 3 gradients are alive at once (sdpa's: d(x), d(out), d(qkv)); the table holds 64: 1 KiB
 * of host memory, so that an op keeping a few more alive does not abort a run.
 *
 * Tape (the meta arena, host memory): each recorded op takes a tt_node and its output's
 * tt_var, each rounded up to the arena's alignment, and nothing here depends on N. Per layer
 * at most 10 ops (Linear for qkv, sdpa, out_proj, two dropout-adds, two norms, linear1, the
 * activation with its dropout, linear2). Around the layers at most 8 nodes
 * (embedding, its scale, learned positions' add, dropout, final norm, classify's pooling, the
 * head, the loss) and 13 vars (those, plus tokens, padding, targets, pooling weights and the
 * positions' alias). Evaluation records vars only. The same 25% margin. */
tt_step_sizes tt_step_sizes_for(const tt_backend *be, int B, int T, int d, int d_ff,
                                int n_heads, int n_layers, int n_out, bool gelu)
{
    double N = (double)B * T, D = d, f = d_ff, H = n_heads, L = n_layers, R = sizeof(real);
    double att = B * H * T * (double)T;
    tt_attn_desc a = {.B = B, .T = T, .NH = n_heads, .HS = n_heads ? d / n_heads : 0};
    double scratch = (double)be->attention_scratch(&a, false) +
                     (double)be->attention_scratch(&a, true);
    double ffn = gelu ? 2 : 1, ffn_mask = gelu ? 1 : 0;
    double layer = R * (8 * N * D + ffn * N * f + 4 * N + att) + scratch +
                   (2 * N * D + ffn_mask * N * f + att) + 64.0 * 24;
    double ends = R * (5 * N * D + 2 * N + N * n_out + 2 * N + (double)B * D) + N * D + 12 * N +
                  64.0 * 32;
    double values = 1.25 * (L * layer + ends);
    double peak = fmax(fmax(5 * N * D, N * D + 2 * N * f),
                       fmax(2 * N * D + N * f, N * (D + n_out)));
    double grads = 1.25 * R * (peak + N * fmax(D, f)) + 64.0 * 64;
    const double align = TT_ARENA_ALIGN;
    double node = ceil((double)sizeof(tt_node) / align) * align;
    double var = ceil((double)sizeof(tt_var) / align) * align;
    double tape = 1.25 * (L * 10 * (node + var) + 8 * node + 13 * var);
    return (tt_step_sizes){.values = (size_t)values, .grads = (size_t)grads, .grad_blocks = 64,
                           .tape = (size_t)tape};
}
