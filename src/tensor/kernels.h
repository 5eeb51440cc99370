/* kernels.h: the device kernels of tt_backend, listed once. TT_KERNELS(X) expands X(name, params,
 * args) for each kernel, under its contract: the slot's name, its parameter list, and the same
 * names as an argument list (what a wrapper passes on). From this one list come the kernel slots
 * of tt_backend (backend.h), the declarations of tt_cpu_NAME (cpu/cpu.h) and tt_cuda_NAME
 * (cuda/cuda.h), the CPU and CUDA tables, and the guard device's wrappers. Adding a kernel is an
 * entry here, its tt_cpu_NAME (cpu/) and tt_cuda_NAME (cuda/), and the autograd op that calls
 * it: nothing else changes.
 *
 * What makes a slot a kernel: it returns nothing, works on device memory (and on the host
 * descriptors it is handed, read during the call), and may be called inside a training step, so
 * the CUDA backend records it in its graph and the guard device wraps it like every other. The
 * rest of tt_backend (memory, threads, the host read sum_squares, attention_scratch's sizes, the
 * step bracket) differs from device to device by nature and is written out in backend.h.
 *
 * Conventions for every kernel (llm.c's):
 *   - arguments: outputs first, then saved values, inputs, weights, sizes;
 *   - all pointers are device pointers of the backend; sizes: N rows, C columns (channels),
 *     V vocabulary/classes, n a flat element count;
 *   - forward kernels overwrite their outputs; backward kernels ADD into gradient buffers
 *     (dinp += ..., cuBLAS beta = 1), so a tensor used twice gets both contributions;
 *   - where a backward kernel has several gradient outputs (mul, layernorm), any of them may be
 *     NULL when that input needs no gradient; single-output backward kernels are not called
 *     at all in that case.
 *
 * The list names the types of backend.h (tt_gemm_op, tt_attn_desc, ...): expand it where those
 * are declared. */
#ifndef TT_KERNELS_H
#define TT_KERNELS_H

/* clang-format off */
#define TT_KERNELS(X)                                                                              \
    /* C = alpha * op(A) op(B) + beta * C, row-major, op(X) = X^T when tX; repeated `batch`        \
     * times with element strides sA, sB, sC between the matrices (stride 0 = shared).             \
     * A (M,K) or (K,M) with leading dimension lda; B (K,N) or (N,K), ldb; C (M,N), ldc. */        \
    X(gemm,                                                                                        \
      (bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda, int64_t sA,      \
       const real *B, int ldb, int64_t sB, real beta, real *C, int ldc, int64_t sC, int batch),    \
      (ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch))                   \
    /* A Linear's forward: out (N,OUT) = x (N,IN) W^T + bias (OUT), with W (OUT,IN); bias NULL:    \
     * none. out is written, never read. */                                                        \
    X(linear_forward,                                                                              \
      (real *out, const real *x, const real *w, const real *bias, int N, int IN, int OUT),         \
      (out, x, w, bias, N, IN, OUT))                                                               \
    /* A Linear's backward, its three parts side by side where the device can: the gemms           \
     * dx = dy W and dW = dy^T x (the same FLOPs; distinct outputs) and, if db is not NULL,        \
     * db (C) += the column sums of dy (N,C). */                                                   \
    X(linear_backward,                                                                             \
      (const tt_gemm_op *dx, const tt_gemm_op *dw, real *db, const real *dy, int64_t N, int C),    \
      (dx, dw, db, dy, N, C))                                                                      \
                                                                                                   \
    /* y += alpha * x  (n): the backward of add and scale */                                       \
    X(axpy, (real *y, real alpha, const real *x, int64_t n), (y, alpha, x, n))                     \
    /* out = a + b  (n) */                                                                         \
    X(add_forward, (real *out, const real *a, const real *b, int64_t n), (out, a, b, n))           \
    /* out = s * inp  (n) */                                                                       \
    X(scale_forward, (real *out, const real *inp, real s, int64_t n), (out, inp, s, n))            \
    /* out (N,C) = inp (N,C) + bias (C); out may equal inp; inp NULL: out = the bias in every      \
     * row (how a Linear starts, before its gemm with beta 1) */                                   \
    X(bias_forward, (real *out, const real *inp, const real *bias, int64_t N, int C),              \
      (out, inp, bias, N, C))                                                                      \
    /* dbias (C) += column sums of dout (N,C) */                                                   \
    X(bias_backward, (real *dbias, const real *dout, int64_t N, int C), (dbias, dout, N, C))       \
    /* out = a * b elementwise (n); da += dout * b, db += dout * a */                              \
    X(mul_forward, (real *out, const real *a, const real *b, int64_t n), (out, a, b, n))           \
    X(mul_backward,                                                                                \
      (real *da, real *db, const real *dout, const real *a, const real *b, int64_t n),             \
      (da, db, dout, a, b, n))                                                                     \
                                                                                                   \
    /* out = max(inp, 0); dinp += dout * (inp > 0) */                                              \
    X(relu_forward, (real *out, const real *inp, int64_t n), (out, inp, n))                        \
    X(relu_backward, (real *dinp, const real *inp, const real *dout, int64_t n),                   \
      (dinp, inp, dout, n))                                                                        \
    /* out = inp * Phi(inp) (erf form); dinp += dout * (Phi(inp) + inp * phi(inp)) */              \
    X(gelu_forward, (real *out, const real *inp, int64_t n), (out, inp, n))                        \
    X(gelu_backward, (real *dinp, const real *inp, const real *dout, int64_t n),                   \
      (dinp, inp, dout, n))                                                                        \
                                                                                                   \
    /* out (N,C) = softmax of each row of inp (N,C), max subtracted; a row of all -inf gives       \
     * zeros. dinp += out * (dout - sum(dout * out)) per row. */                                   \
    X(softmax_forward, (real *out, const real *inp, int64_t N, int C), (out, inp, N, C))           \
    X(softmax_backward, (real *dinp, const real *out, const real *dout, int64_t N, int C),         \
      (dinp, out, dout, N, C))                                                                     \
                                                                                                   \
    /* out (N,C) = (inp - mean) * rstd * weight + bias per row, saving mean (N), rstd (N).         \
     * Backward: dweight, dbias added to; dinp added to, or written when !acc (dinp                \
     * uninitialised: a fresh gradient). */                                                        \
    X(layernorm_forward,                                                                           \
      (real *out, real *mean, real *rstd, const real *inp, const real *weight, const real *bias,   \
       int64_t N, int C, real eps),                                                                \
      (out, mean, rstd, inp, weight, bias, N, C, eps))                                             \
    X(layernorm_backward,                                                                          \
      (real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,                  \
       const real *weight, const real *mean, const real *rstd, int64_t N, int C, bool acc),        \
      (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, acc))                            \
                                                                                                   \
    /* out (N,C) = weight[tokens[i]] (weight (V,C)); dweight[tokens[i]] += dout[i] */              \
    X(embedding_forward,                                                                           \
      (real *out, const int32_t *tokens, const real *weight, int64_t N, int C, int V),             \
      (out, tokens, weight, N, C, V))                                                              \
    X(embedding_backward,                                                                          \
      (real *dweight, const int32_t *tokens, const real *dout, int64_t N, int C),                  \
      (dweight, tokens, dout, N, C))                                                               \
                                                                                                   \
    /* Inverted dropout: element i is kept when uniform(at, i) >= p, and then scaled by            \
     * 1/(1-p). mask (n) saves 1 for kept elements, 0 for dropped ones. The backward adds          \
     * dout * mask / (1-p) to dinp, or writes it when !acc (dinp uninitialised: fresh). */         \
    X(dropout_forward,                                                                             \
      (real *out, uint8_t *mask, const real *inp, real p, tt_rng at, int64_t n),                   \
      (out, mask, inp, p, at, n))                                                                  \
    X(dropout_backward,                                                                            \
      (real *dinp, const uint8_t *mask, const real *dout, real p, int64_t n, bool acc),            \
      (dinp, mask, dout, p, n, acc))                                                               \
    /* In place, the same masks: x = dropout(relu(x)), saving nothing (p = 0: relu, and `at` is    \
     * not used); backward dx += dy / (1-p) where out > 0 (kept and positive), or dx = that        \
     * when !acc (dx uninitialised: a fresh gradient). */                                          \
    X(relu_dropout_forward, (real *x, real p, tt_rng at, int64_t n), (x, p, at, n))                \
    X(relu_dropout_backward,                                                                       \
      (real *dx, const real *out, const real *dout, real p, int64_t n, bool acc),                  \
      (dx, out, dout, p, n, acc))                                                                  \
    /* In place: x = res + dropout(x), mask as dropout_forward's (p = 0: x = res + x, mask and     \
     * `at` not used). The backward is dropout_backward and axpy. */                               \
    X(dropout_add_forward,                                                                         \
      (real *x, uint8_t *mask, const real *res, real p, tt_rng at, int64_t n),                     \
      (x, mask, res, p, at, n))                                                                    \
    /* Out of place, the same masks: out = dropout(gelu(inp)), mask (n) as dropout_forward's       \
     * (p = 0: out = gelu(inp), mask and `at` not used); deriv (n), unless NULL, = gelu'(inp)      \
     * for the backward, computed with the value (they share erf's exp); deriv may be inp (each    \
     * element is read before it is written). The backward: dinp += dout * mask / (1-p) *          \
     * deriv (mask NULL: dout * deriv), the products in the unfused order, or dinp = that when     \
     * !acc (dinp uninitialised: a fresh gradient). */                                             \
    X(gelu_dropout_forward,                                                                        \
      (real *out, uint8_t *mask, real *deriv, const real *inp, real p, tt_rng at, int64_t n),      \
      (out, mask, deriv, inp, p, at, n))                                                           \
    X(gelu_dropout_backward,                                                                       \
      (real *dinp, const uint8_t *mask, const real *deriv, const real *dout, real p, int64_t n,    \
       bool acc),                                                                                  \
      (dinp, mask, deriv, dout, p, n, acc))                                                        \
                                                                                                   \
    /* Fused log-softmax + cross-entropy over logits (N,V) with targets (N); targets equal to      \
     * -100 are ignored. loss[0] = mean over counted rows (0 when none count); lse (N) saves the   \
     * log-sum-exp of each row. dlogits += dloss[0] / count * (softmax(row) - onehot(target)). */  \
    X(crossentropy_forward,                                                                        \
      (real *loss, real *lse, const real *logits, const int32_t *targets, int64_t N, int V),       \
      (loss, lse, logits, targets, N, V))                                                          \
    X(crossentropy_backward,                                                                       \
      (real *dlogits, const real *dloss, const real *logits, const real *lse,                      \
       const int32_t *targets, int64_t N, int V),                                                  \
      (dlogits, dloss, logits, lse, targets, N, V))                                                \
                                                                                                   \
    /* Fused scaled dot-product attention (math in tensor/cpu/attention.c). att (B,NH,T,T)         \
     * saves the weights after softmax and before dropout; keep (B,NH,T,T) the dropout mask,       \
     * drawn as element ((b*NH+h)*T+i)*T+j of `at` (as tt_dropout on att would), NULL when         \
     * p == 0. pad (B,T): nonzero marks a padding key, or NULL. scratch: attention_scratch         \
     * bytes (backend.h). Any of dq, dk, dv may be NULL. */                                        \
    X(attention_forward,                                                                           \
      (real *out, real *att, uint8_t *keep, const real *q, const real *k, const real *v,           \
       const int32_t *pad, const tt_attn_desc *a, tt_rng at, real *scratch),                       \
      (out, att, keep, q, k, v, pad, a, at, scratch))                                              \
    X(attention_backward,                                                                          \
      (real *dq, real *dk, real *dv, const real *dout, const real *att, const uint8_t *keep,       \
       const real *q, const real *k, const real *v, const tt_attn_desc *a, real *scratch),         \
      (dq, dk, dv, dout, att, keep, q, k, v, a, scratch))                                          \
                                                                                                   \
    /* out[0] = sum of inp (n); dinp += dout[0] * s */                                             \
    X(sum_forward, (real *out, const real *inp, int64_t n), (out, inp, n))                         \
    X(sum_backward, (real *dinp, const real *dout, real s, int64_t n), (dinp, dout, s, n))         \
                                                                                                   \
    /* The optimizers, elementwise over the flat buffers (n): p, m, v, g (AdamW) and p, buf, g     \
     * (SGD) have the parameters' layout; the same bits at any thread count. gate: the step's      \
     * loss (one real on the device), and nothing changes when it is not finite (a step            \
     * decides this without a host read); NULL: always update. */                                  \
    X(adamw_step,                                                                                  \
      (real *p, real *m, real *v, const real *g, const tt_adamw_scalars *s, const real *gate,      \
       int64_t n),                                                                                 \
      (p, m, v, g, s, gate, n))                                                                    \
    X(sgd_step,                                                                                    \
      (real *p, real *buf, const real *g, const tt_sgd_scalars *s, const real *gate, int64_t n),   \
      (p, buf, g, s, gate, n))                                                                     \
    /* Global-norm clipping without a host read: norm[0] (a double on the device) = the square     \
     * root of sum_squares(g, n) (backend.h); when max_norm > 0 and norm > max_norm, g *=          \
     * (real)(max_norm / (norm + 1e-6)) (the scale rounded once, as scale_forward). */             \
    X(clip_grads, (real *g, int64_t n, double max_norm, double *norm), (g, n, max_norm, norm))
/* clang-format on */

#endif
