/* backend.h: the per-device kernel table. Autograd reaches every kernel through this table, so a
 * device adds one file that fills a tt_backend and nothing above src/tensor changes.
 *
 * The device boundary: everything above src/tensor treats memory the table allocated as memory
 * the host cannot touch. It reaches it only through the table's slots (kernels, zero, copy,
 * to_host, from_host) or helpers built on them (tt_params_to_host / tt_params_from_host);
 * it may compute addresses inside it (p + offset), never dereference, memcpy or fwrite them.
 * The guard device (tensor/guard/) enforces this in the tests: CPU kernels behind memory that
 * is mprotect'ed PROT_NONE outside every call.
 *
 * Conventions for every kernel (llm.c's):
 *   - arguments: outputs first, then saved values, inputs, weights, sizes;
 *   - all pointers are device pointers of the backend; sizes: N rows, C columns (channels),
 *     V vocabulary/classes, n a flat element count;
 *   - forward kernels overwrite their outputs; backward kernels ADD into gradient buffers
 *     (dinp += ..., cuBLAS beta = 1), so a tensor used twice gets both contributions;
 *   - where a backward kernel has several gradient outputs (mul, layernorm), any of them may be
 *     NULL when that input needs no gradient; single-output backward kernels are not called
 *     at all in that case. */
#ifndef TT_BACKEND_H
#define TT_BACKEND_H

#include "tensor/rng.h"
#include "tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of a fused attention call: B batches of T positions, NH heads of width HS; row strides
 * of q, k, v and out (>= NH*HS: a packed [B,T,3D] qkv tensor is read in place with ld 3D). */
typedef struct tt_attn_desc {
    int B, T, NH, HS;
    int ldq, ldk, ldv, ldo;
    real scale; /* multiplies the scores */
    bool causal;
    real p; /* dropout on the weights, [0,1) */
    bool full; /* tests only: a causal head computes the masked keys too (CPU; same results) */
    bool fresh; /* backward: dq, dk, dv are uninitialised and written, not added to */
} tt_attn_desc;

/* One gemm, as linear_backward takes it: C = alpha op(A) op(B) + beta C, row-major, no batch. */
typedef struct tt_gemm_op {
    bool ta, tb;
    int M, N, K;
    real alpha;
    const real *A;
    int lda;
    const real *B;
    int ldb;
    real beta;
    real *C;
    int ldc;
} tt_gemm_op;

/* One AdamW update (torch.optim.AdamW, amsgrad off; train/optim/optim.h states the rule), its
 * scalars worked out in double on the host and rounded once to real: p = p * decay;
 * m = m * b1 + a1 * g; v = v * b2 + a2 * g * g; p = p + -step * m / (sqrt(v) / bc2_sqrt + eps). */
typedef struct tt_adamw_scalars {
    real decay, b1, a1, b2, a2, step, bc2_sqrt, eps;
} tt_adamw_scalars;

/* One SGD update (torch.optim.SGD, dampening 0, nesterov off): d = g + wd * p (wd != 0); with
 * use_buf, buf = d at the first step else buf * mu + d, and d = buf; p = p + neg_lr * d. */
typedef struct tt_sgd_scalars {
    real wd, mu, neg_lr;
    bool first, use_buf;
} tt_sgd_scalars;

typedef struct tt_backend {
    const char *name;
    /* 0 when the device can run in this process; else -1 with err naming the device, what is
     * missing and a HINT (a CUDA build on a machine without a GPU). */
    int (*available)(char *err, size_t errlen);
    /* The device's own memory: 0 with its free and total bytes, or -1 when it has none apart
     * from the host's (the CPU, the guard device): the memory check before a run
     * (train/run/budget.c) then counts everything against the host's memory. */
    int (*mem_info)(size_t *free_bytes, size_t *total_bytes);

    /* memory */
    void *(*alloc)(size_t bytes); /* aborts with the size on failure */
    void (*free)(void *p);
    void (*zero)(void *p, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);      /* device to device */
    void (*to_host)(void *dst, const void *src, size_t bytes);   /* device to host */
    void (*from_host)(void *dst, const void *src, size_t bytes); /* host to device */
    void (*fill)(real *x, real value, int64_t n);

    /* threads for the kernels and the BLAS; 0 means all cores */
    void (*set_threads)(int n);
    int (*get_threads)(void);
    /* PyTorch's matmul precision: high lets gemms use TF32 tensor cores (GPUs); highest keeps
     * float32 (the default). A device without such a mode ignores it. */
    void (*set_matmul_precision)(bool high);

    /* C = alpha * op(A) op(B) + beta * C, row-major, op(X) = X^T when tX; repeated `batch`
     * times with element strides sA, sB, sC between the matrices (stride 0 = shared).
     * A (M,K) or (K,M) with leading dimension lda; B (K,N) or (N,K), ldb; C (M,N), ldc. */
    void (*gemm)(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                 int64_t sA, const real *B, int ldb, int64_t sB, real beta, real *C, int ldc,
                 int64_t sC, int batch);
    /* A Linear's forward: out (N,OUT) = x (N,IN) W^T + bias (OUT), with W (OUT,IN); bias NULL:
     * none. out is written, never read. */
    void (*linear_forward)(real *out, const real *x, const real *w, const real *bias, int N,
                           int IN, int OUT);
    /* A Linear's backward, its three parts side by side where the device can: the gemms
     * dx = dy W and dW = dy^T x (the same FLOPs; distinct outputs) and, if db is not NULL,
     * db (C) += the column sums of dy (N,C). */
    void (*linear_backward)(const tt_gemm_op *dx, const tt_gemm_op *dw, real *db,
                            const real *dy, int64_t N, int C);

    /* y += alpha * x  (n): the backward of add and scale */
    void (*axpy)(real *y, real alpha, const real *x, int64_t n);
    /* out = a + b  (n) */
    void (*add_forward)(real *out, const real *a, const real *b, int64_t n);
    /* out = s * inp  (n) */
    void (*scale_forward)(real *out, const real *inp, real s, int64_t n);
    /* out (N,C) = inp (N,C) + bias (C); out may equal inp; inp NULL: out = the bias in every
     * row (how a Linear starts, before its gemm with beta 1) */
    void (*bias_forward)(real *out, const real *inp, const real *bias, int64_t N, int C);
    /* dbias (C) += column sums of dout (N,C) */
    void (*bias_backward)(real *dbias, const real *dout, int64_t N, int C);
    /* out = a * b elementwise (n); da += dout * b, db += dout * a */
    void (*mul_forward)(real *out, const real *a, const real *b, int64_t n);
    void (*mul_backward)(real *da, real *db, const real *dout, const real *a, const real *b,
                         int64_t n);

    /* out = max(inp, 0); dinp += dout * (inp > 0) */
    void (*relu_forward)(real *out, const real *inp, int64_t n);
    void (*relu_backward)(real *dinp, const real *inp, const real *dout, int64_t n);
    /* out = inp * Phi(inp) (erf form); dinp += dout * (Phi(inp) + inp * phi(inp)) */
    void (*gelu_forward)(real *out, const real *inp, int64_t n);
    void (*gelu_backward)(real *dinp, const real *inp, const real *dout, int64_t n);

    /* out (N,C) = softmax of each row of inp (N,C), max subtracted; a row of all -inf gives
     * zeros. dinp += out * (dout - sum(dout * out)) per row. */
    void (*softmax_forward)(real *out, const real *inp, int64_t N, int C);
    void (*softmax_backward)(real *dinp, const real *out, const real *dout, int64_t N, int C);

    /* out (N,C) = (inp - mean) * rstd * weight + bias per row, saving mean (N), rstd (N). */
    void (*layernorm_forward)(real *out, real *mean, real *rstd, const real *inp,
                              const real *weight, const real *bias, int64_t N, int C, real eps);
    void (*layernorm_backward)(real *dinp, real *dweight, real *dbias, const real *dout,
                               const real *inp, const real *weight, const real *mean,
                               const real *rstd, int64_t N, int C);

    /* out (N,C) = weight[tokens[i]] (weight (V,C)); dweight[tokens[i]] += dout[i] */
    void (*embedding_forward)(real *out, const int32_t *tokens, const real *weight, int64_t N,
                              int C, int V);
    void (*embedding_backward)(real *dweight, const int32_t *tokens, const real *dout,
                               int64_t N, int C);

    /* Inverted dropout: element i is kept when uniform(at, i) >= p, and then scaled by
     * 1/(1-p). mask (n) saves 1 for kept elements, 0 for dropped ones. The backward adds
     * dout * mask / (1-p) to dinp, or writes it when !acc (dinp uninitialised: fresh). */
    void (*dropout_forward)(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                            int64_t n);
    void (*dropout_backward)(real *dinp, const uint8_t *mask, const real *dout, real p,
                             int64_t n, bool acc);
    /* In place, the same masks: x = dropout(relu(x)), saving nothing (p = 0: relu, and `at` is
     * not used); backward dx += dy / (1-p) where out > 0 (kept and positive), or dx = that
     * when !acc (dx uninitialised: a fresh gradient). */
    void (*relu_dropout_forward)(real *x, real p, tt_rng at, int64_t n);
    void (*relu_dropout_backward)(real *dx, const real *out, const real *dout, real p,
                                  int64_t n, bool acc);
    /* In place: x = res + dropout(x), mask as dropout_forward's (p = 0: x = res + x, mask and
     * `at` not used). The backward is dropout_backward and axpy. */
    void (*dropout_add_forward)(real *x, uint8_t *mask, const real *res, real p, tt_rng at,
                                int64_t n);
    /* Out of place, the same masks: out = dropout(gelu(inp)), mask (n) as dropout_forward's
     * (p = 0: out = gelu(inp), mask and `at` not used); inp is kept for the backward, dinp +=
     * dout * mask / (1-p) * gelu'(inp) (mask NULL: dout * gelu'(inp)), or dinp = that when
     * !acc (dinp uninitialised: a fresh gradient). */
    void (*gelu_dropout_forward)(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                                 int64_t n);
    void (*gelu_dropout_backward)(real *dinp, const uint8_t *mask, const real *inp,
                                  const real *dout, real p, int64_t n, bool acc);

    /* Fused log-softmax + cross-entropy over logits (N,V) with targets (N); targets equal to
     * -100 are ignored. loss[0] = mean over counted rows (0 when none count); lse (N) saves the
     * log-sum-exp of each row. dlogits += dloss[0] / count * (softmax(row) - onehot(target)). */
    void (*crossentropy_forward)(real *loss, real *lse, const real *logits,
                                 const int32_t *targets, int64_t N, int V);
    void (*crossentropy_backward)(real *dlogits, const real *dloss, const real *logits,
                                  const real *lse, const int32_t *targets, int64_t N, int V);

    /* Fused scaled dot-product attention (math in tensor/cpu/attention.c). att (B,NH,T,T)
     * saves the weights after softmax and before dropout; keep (B,NH,T,T) the dropout mask,
     * drawn as element ((b*NH+h)*T+i)*T+j of `at` (as tt_dropout on att would), NULL when
     * p == 0. pad (B,T): nonzero marks a padding key, or NULL. scratch: attention_scratch
     * bytes. Any of dq, dk, dv may be NULL. */
    void (*attention_forward)(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                              const real *v, const int32_t *pad, const tt_attn_desc *a,
                              tt_rng at, real *scratch);
    void (*attention_backward)(real *dq, real *dk, real *dv, const real *dout, const real *att,
                               const uint8_t *keep, const real *q, const real *k,
                               const real *v, const tt_attn_desc *a, real *scratch);
    /* Bytes of device scratch one attention_forward (or, with backward, one
     * attention_backward) call of these sizes needs: the caller allocates them. */
    size_t (*attention_scratch)(const tt_attn_desc *a, bool backward);

    /* out[0] = sum of inp (n); dinp += dout[0] * s */
    void (*sum_forward)(real *out, const real *inp, int64_t n);
    void (*sum_backward)(real *dinp, const real *dout, real s, int64_t n);

    /* The optimizers, elementwise over the flat buffers (n): p, m, v, g (AdamW) and p, buf, g
     * (SGD) have the parameters' layout; the same bits at any thread count. gate: the step's
     * loss (one real on the device), and nothing changes when it is not finite (a step
     * decides this without a host read); NULL: always update. */
    void (*adamw_step)(real *p, real *m, real *v, const real *g, const tt_adamw_scalars *s,
                       const real *gate, int64_t n);
    void (*sgd_step)(real *p, real *buf, const real *g, const tt_sgd_scalars *s,
                     const real *gate, int64_t n);
    /* sum of x[i]^2 (n) accumulated in double, returned to the host (a device synchronises
     * here: never inside a step). The same value at any thread count. */
    double (*sum_squares)(const real *x, int64_t n);
    /* Global-norm clipping without a host read: norm[0] (a double on the device) = the square
     * root of sum_squares(g, n); when max_norm > 0 and norm > max_norm, g *= (real)(max_norm /
     * (norm + 1e-6)) (the scale rounded once, as scale_forward). */
    void (*clip_grads)(real *g, int64_t n, double max_norm, double *norm);

    /* A training step's bracket (train/run/loop.c). step_begin before the step's first call
     * (r: the step's dropout stream, where its draws start), step_end after its last; in
     * between, no host read (to_host, sum_squares) and no allocation, so a device may record
     * the calls once and replay them (CUDA graphs), and the guard device asserts both.
     * step_setup at start-up, outside steps: the most bytes a step copies in with from_host
     * (a device stages them in pinned memory) and whether it may replay; setup(0, false)
     * releases what it holds. */
    void (*step_setup)(size_t staging_bytes, bool replay);
    void (*step_begin)(const tt_rng *r);
    void (*step_end)(void);
} tt_backend;

#define TT_IGNORE_INDEX (-100)

/* The table of a device; aborts with a hint if that backend was not built in (an internal
 * error: a user's choice of device goes through tt_backend_open first). */
const tt_backend *tt_backend_get(tt_device dev);
/* The table of a device the user asked for, checked: NULL with err ("device \"cuda\": ...
 * HINT: ...") when this build lacks it or it cannot run here. */
const tt_backend *tt_backend_open(tt_device dev, char *err, size_t errlen);
const char *tt_device_name(tt_device dev);
/* A malloc'ed host copy of a tensor on the table's device (outside training steps: it
 * allocates); free() it. */
void *tt_tensor_host_copy(const tt_backend *be, const tt_tensor *t);

extern const tt_backend tt_cpu_backend;
extern const tt_backend tt_guard_backend;

#ifdef __cplusplus
}
#endif

#endif
