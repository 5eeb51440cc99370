/* cpu.h: the CPU kernels (OpenBLAS for gemm, plain C loops for the rest): tt_cpu_NAME for each
 * kernel NAME of tensor/kernels.h, declared from that list (its contract is the list's), and the
 * helpers they share. */
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
    bool prefetchw; /* CPUID 0x80000001 ECX bit 8 (AMD since K8, Intel since Broadwell) */
} tt_cpu_isa;
void tt_cpu_isa_read(tt_cpu_isa *isa);
const char *tt_blas_core_better(const tt_cpu_isa *isa, const char *picked);

/* One attention head's gemm, C = alpha op(A) op(B), + C when add (head_gemm.c: its own AVX2
 * loops for small heads, else tt_cpu_gemm with beta 1, or 0 without add). */
void tt_cpu_head_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                      const real *B, int ldb, real *C, int ldc, bool add);
/* Whether this CPU runs AVX2 and FMA, and AVX-512F, with the OS's support (blas_core.c; the
 * kernels' own vector loops check them at run time). */
bool tt_cpu_have_avx2_fma(void);
/* Whether the CPU has PREFETCHW (tri_gemm.c fetches C's lines for writing with it) */
bool tt_cpu_have_prefetchw(void);
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
/* The whole gemm C (M,N) = alpha op(A) op(B) (+ C when add, or + bias_j with a bias row of N)
 * in the tiles' chains (tri_gemm.c): every element acc = fma(a_ik, b_kj, acc) for k in order
 * from +0, then fma(alpha, acc, bias ? bias_j : add ? c : 0), so the bits depend on neither
 * the vector width nor how C is split. False, and C untouched, where there are no vector tiles
 * (float64, no AVX2 + FMA). */
bool tt_cpu_tile_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                      const real *B, int ldb, real *C, int ldc, bool add, const real *bias);
bool tt_cpu_tile_gemm_on(tt_cpu_vec vec, bool ta, bool tb, int M, int N, int K, real alpha,
                         const real *A, int lda, const real *B, int ldb, real *C, int ldc,
                         bool add, const real *bias);
/* dst (K,N) = src (N,K)^T, src of row stride lds (head_gemm.c; the B of TT_TRI_COLS) */
void tt_cpu_transpose(real *dst, const real *src, int N, int K, int lds);
/* Columns [0, tt_tri_cols(i, T)) of query row i are the keys a causal head computes: keys
 * j <= i, rounded up to a whole vector of 8 (the masked ones inside it are set to -inf). */
static inline int tt_tri_cols(int i, int T)
{
    int c = (i / 8 + 1) * 8;
    return c < T ? c : T;
}
/* GELU's vectorised loops on the calling thread: y (n) = gelu(x (n)), y not overlapping x;
 * dx (n) += dy (n) * gelu'(x (n)), or = with !acc (dx then need not be initialised) */
void tt_cpu_gelu_rows(real *y, const real *x, int64_t n);
void tt_cpu_gelu_grad_rows(real *dx, const real *x, const real *dy, int64_t n, bool acc);
/* y (n) = gelu(x), d (n) = gelu'(x) in one pass, neither overlapping x or each other (the same
 * bits as tt_cpu_gelu_rows and tt_cpu_gelu_grad_rows' derivative); dx (n) += dy (n) * d (n), or
 * = with !acc */
void tt_cpu_gelu_both_rows(real *y, real *d, const real *x, int64_t n);
void tt_cpu_mul_rows(real *dx, const real *dy, const real *d, int64_t n, bool acc);
/* keep[e] = uniform(at, first + e) >= p for e < n: the mask tt_dropout draws, 32 elements at a
 * time (tt_rng_keep_at). Also the attention weights' dropout mask. */
void tt_cpu_keep_mask(uint8_t *keep, const tt_rng *at, int64_t first, int64_t n, real p);

/* The kernels: void tt_cpu_NAME(PARAMS) for each entry of tensor/kernels.h. */
#define TT_CPU_KERNEL(name, params, args) void tt_cpu_##name params;
TT_KERNELS(TT_CPU_KERNEL)
#undef TT_CPU_KERNEL

/* The slots of tt_backend outside the list that the CPU fills with functions of its own
 * (backend.h; the guard device calls them too). */
void tt_cpu_set_threads(int n);
int tt_cpu_get_threads(void);
size_t tt_cpu_attention_scratch(const tt_attn_desc *a, bool backward);
double tt_cpu_sum_squares(const real *x, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
