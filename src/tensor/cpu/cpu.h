/* cpu.h: the CPU kernels (OpenBLAS for gemm, plain C loops for the rest). Each kernel's
 * contract is the matching field of tt_backend in tensor/backend.h. */
#ifndef TT_CPU_H
#define TT_CPU_H

#include "tensor/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threading of the elementwise and row kernels (pool.h): ranges start on multiples of
 * TT_CPU_ALIGN elements (whole 4-element Philox blocks, whole cache lines) and hold at least
 * TT_CPU_GRAIN elements, about 5 us of work, so a small tensor stays on one thread. */
#define TT_CPU_ALIGN 16
#define TT_CPU_GRAIN 16384
/* TT_VEC: a row or elementwise kernel compiled three times, for AVX-512 (x86-64-v4), AVX2
 * (x86-64-v3) and the x86-64 baseline the build targets (SSE2), the loader picking the widest
 * the CPU has (GCC's target_clones, an ifunc). The values are the same bits in all three: the
 * build's flags never let the vectoriser reorder floating-point operations, the lane sums of
 * reduce.h fix their order in the source, and -std=c11 with -ffp-contract=off (Makefile) keeps
 * a * b + c two roundings, never a fused multiply-add. Only the width of each instruction
 * changes. Not with clang (the fuzzers' compiler), nor outside x86-64, nor in float64 builds
 * (they are for checking), where it is nothing. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TT_DOUBLE) && \
    !defined(TT_NO_CLONES)
#define TT_VEC __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TT_VEC
#endif

/* The same grain in rows of C elements. */
static inline int64_t tt_cpu_row_grain(int64_t C)
{
    return C >= TT_CPU_GRAIN ? 1 : TT_CPU_GRAIN / (C > 0 ? C : 1);
}

/* blas_core.c: the vector extensions of this CPU that its OS enables, and the OpenBLAS core
 * (kernel set) name that suits them best when it ranks above `picked`, the one OpenBLAS chose
 * when it loaded (openblas_get_corename); NULL when picked is as good, or is not an x86-64
 * core name OpenBLAS uses. */
typedef struct tt_cpu_isa {
    bool avx, avx2, fma, avx512f, avx512bw, avx512dq, avx512vl, avx512cd;
} tt_cpu_isa;
void tt_cpu_isa_read(tt_cpu_isa *isa);
const char *tt_blas_core_better(const tt_cpu_isa *isa, const char *picked);

void tt_cpu_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                 int64_t sA, const real *B, int ldb, int64_t sB, real beta, real *C, int ldc,
                 int64_t sC, int batch);
void tt_cpu_linear_forward(real *out, const real *x, const real *w, const real *bias, int N,
                           int IN, int OUT);
void tt_cpu_linear_backward(const tt_gemm_op *dx, const tt_gemm_op *dw, real *db, const real *dy,
                            int64_t N, int C);
/* One attention head's gemm, C = alpha op(A) op(B), + C when add (head_gemm.c: its own AVX2
 * loops for small heads, else tt_cpu_gemm with beta 1, or 0 without add). */
void tt_cpu_head_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                      const real *B, int ldb, real *C, int ldc, bool add);
/* Whether this CPU runs AVX2 and FMA, and AVX-512F, with the OS's support (blas_core.c; the
 * kernels' own vector loops check them at run time). */
bool tt_cpu_have_avx2_fma(void);
bool tt_cpu_have_avx512f(void);
/* The gemms of one causal head over its lower triangle (tri_gemm.c): C (M,N) = alpha op(A) B
 * (+ C when add), B (K,N) row-major; `tri` says which part of the triangle a row tile needs. */
typedef enum tt_tri { TT_TRI_FULL, TT_TRI_COLS, TT_TRI_K_UPTO, TT_TRI_K_FROM } tt_tri;
void tt_cpu_tri_gemm(tt_tri tri, bool ta, int M, int N, int K, real alpha, const real *A, int lda,
                     const real *B, int ldb, real *C, int ldc, bool add);
/* The same with vector loops no wider than `vec` (the tests compare the widths' bits) */
typedef enum tt_cpu_vec { TT_CPU_VEC_PLAIN, TT_CPU_VEC_AVX2, TT_CPU_VEC_AVX512 } tt_cpu_vec;
void tt_cpu_tri_gemm_on(tt_cpu_vec vec, tt_tri tri, bool ta, int M, int N, int K, real alpha,
                        const real *A, int lda, const real *B, int ldb, real *C, int ldc, bool add);
/* dst (K,N) = src (N,K)^T, src of row stride lds (head_gemm.c; the B of TT_TRI_COLS) */
void tt_cpu_transpose(real *dst, const real *src, int N, int K, int lds);
/* Columns [0, tt_tri_cols(i, T)) of query row i are the keys a causal head computes: keys
 * j <= i, rounded up to a whole vector of 8 (the masked ones inside it are set to -inf). */
static inline int tt_tri_cols(int i, int T)
{
    int c = (i / 8 + 1) * 8;
    return c < T ? c : T;
}
void tt_cpu_set_threads(int n);
int tt_cpu_get_threads(void);

void tt_cpu_axpy(real *y, real alpha, const real *x, int64_t n);
void tt_cpu_add_forward(real *out, const real *a, const real *b, int64_t n);
void tt_cpu_scale_forward(real *out, const real *inp, real s, int64_t n);
void tt_cpu_bias_forward(real *out, const real *inp, const real *bias, int64_t N, int C);
void tt_cpu_bias_backward(real *dbias, const real *dout, int64_t N, int C);
void tt_cpu_mul_forward(real *out, const real *a, const real *b, int64_t n);
void tt_cpu_mul_backward(real *da, real *db, const real *dout, const real *a, const real *b,
                         int64_t n);

void tt_cpu_relu_forward(real *out, const real *inp, int64_t n);
void tt_cpu_relu_backward(real *dinp, const real *inp, const real *dout, int64_t n);
void tt_cpu_gelu_forward(real *out, const real *inp, int64_t n);
void tt_cpu_gelu_backward(real *dinp, const real *inp, const real *dout, int64_t n);
/* GELU's vectorised loops on the calling thread: y (n) = gelu(x (n)), y not overlapping x;
 * dx (n) += dy (n) * gelu'(x (n)), or = with !acc (dx then need not be initialised) */
void tt_cpu_gelu_rows(real *y, const real *x, int64_t n);
void tt_cpu_gelu_grad_rows(real *dx, const real *x, const real *dy, int64_t n, bool acc);

void tt_cpu_softmax_forward(real *out, const real *inp, int64_t N, int C);
void tt_cpu_softmax_backward(real *dinp, const real *out, const real *dout, int64_t N, int C);

void tt_cpu_layernorm_forward(real *out, real *mean, real *rstd, const real *inp,
                              const real *weight, const real *bias, int64_t N, int C, real eps);
void tt_cpu_layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout,
                               const real *inp, const real *weight, const real *mean,
                               const real *rstd, int64_t N, int C);

void tt_cpu_embedding_forward(real *out, const int32_t *tokens, const real *weight, int64_t N,
                              int C, int V);
void tt_cpu_embedding_backward(real *dweight, const int32_t *tokens, const real *dout, int64_t N,
                               int C);

/* keep[e] = uniform(at, first + e) >= p for e < n: the mask tt_dropout draws, 32 elements at a
 * time (tt_rng_keep_at). Also the attention weights' dropout mask. */
void tt_cpu_keep_mask(uint8_t *keep, const tt_rng *at, int64_t first, int64_t n, real p);
void tt_cpu_dropout_forward(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                            int64_t n);
void tt_cpu_dropout_backward(real *dinp, const uint8_t *mask, const real *dout, real p,
                             int64_t n, bool acc);
void tt_cpu_relu_dropout_forward(real *x, real p, tt_rng at, int64_t n);
void tt_cpu_relu_dropout_backward(real *dx, const real *out, const real *dout, real p, int64_t n,
                                  bool acc);
void tt_cpu_dropout_add_forward(real *x, uint8_t *mask, const real *res, real p, tt_rng at,
                                int64_t n);
void tt_cpu_gelu_dropout_forward(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                                 int64_t n);
void tt_cpu_gelu_dropout_backward(real *dinp, const uint8_t *mask, const real *inp,
                                  const real *dout, real p, int64_t n, bool acc);

void tt_cpu_crossentropy_forward(real *loss, real *lse, const real *logits,
                                 const int32_t *targets, int64_t N, int V);
void tt_cpu_crossentropy_backward(real *dlogits, const real *dloss, const real *logits,
                                  const real *lse, const int32_t *targets, int64_t N, int V);

void tt_cpu_attention_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                              const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                              real *scratch);
size_t tt_cpu_attention_scratch(const tt_attn_desc *a, bool backward);
void tt_cpu_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                               const uint8_t *keep, const real *q, const real *k, const real *v,
                               const tt_attn_desc *a, real *scratch);

void tt_cpu_sum_forward(real *out, const real *inp, int64_t n);

/* optimizer.c */
void tt_cpu_adamw_step(real *p, real *m, real *v, const real *g, const tt_adamw_scalars *s,
                       const real *gate, int64_t n);
void tt_cpu_sgd_step(real *p, real *buf, const real *g, const tt_sgd_scalars *s,
                     const real *gate, int64_t n);
double tt_cpu_sum_squares(const real *x, int64_t n);
void tt_cpu_clip_grads(real *g, int64_t n, double max_norm, double *norm);
void tt_cpu_sum_backward(real *dinp, const real *dout, real s, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
