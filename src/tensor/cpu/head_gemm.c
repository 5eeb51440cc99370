/* cpu/head_gemm.c: the gemms of one attention head, C += alpha op(A) op(B), for heads up to
 * 32x32x32 (the tiny config's are 16x16x16): 3.65 -> 3.4 ms a tiny step. From the small
 * config's 64x64x32 on, tt_cpu_gemm (the tiles of tri_gemm.c, the same chains) gets them.
 *
 * There an OpenBLAS call costs more in its fixed part (a lock on its buffer pool, which two
 * threads contend for; packing both operands) than in the multiply-adds: 6 calls per head and
 * layer. This kernel keeps a row of C in up to 8 AVX2 registers (N = 8 * NV columns, NV a
 * compile-time constant through the switch below), and adds alpha a_ik B_k for k = 0..K-1 with
 * fused multiply-adds, as OpenBLAS's own kernels do; a transposed B is first copied into a
 * stack tile. Float32 with AVX2 and FMA only (checked at run time); anything else, and larger
 * heads, go to tt_cpu_gemm. The result does not depend on the thread count: a head is always
 * computed by one thread with the same loops. */
#include "tensor/cpu/cpu.h"

#if !defined(TT_DOUBLE) && defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HEAD_AVX2 1
#define HEAD_TILE 4096 /* K * N of a transposed B */
#define HEAD_SMALL (32 * 32 * 32) /* M * N * K: above, OpenBLAS was faster (measured) */

/* dst (K, N) = src (N, K)^T in 8x8 blocks of registers; the edges element by element */
__attribute__((target("avx2,fma"))) static void transpose_avx2(float *dst, const float *src,
                                                               int N, int K, int lds)
{
    int j0 = 0;
    for (; j0 + 8 <= N; j0 += 8) {
        int k0 = 0;
        for (; k0 + 8 <= K; k0 += 8) {
            __m256 r[8], t[8], u[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (int64_t)(j0 + i) * lds + k0);
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
            }
            for (int i = 0; i < 8; i += 4)
                for (int h = 0; h < 2; h++) {
                    u[i + 2 * h] = _mm256_shuffle_ps(t[i + h], t[i + h + 2], 0x44);
                    u[i + 2 * h + 1] = _mm256_shuffle_ps(t[i + h], t[i + h + 2], 0xee);
                }
            for (int i = 0; i < 4; i++) {
                _mm256_storeu_ps(dst + (int64_t)(k0 + i) * N + j0,
                                 _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
                _mm256_storeu_ps(dst + (int64_t)(k0 + i + 4) * N + j0,
                                 _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
            }
        }
        for (; k0 < K; k0++)
            for (int i = 0; i < 8; i++)
                dst[(int64_t)k0 * N + j0 + i] = src[(int64_t)(j0 + i) * lds + k0];
    }
    for (; j0 < N; j0++)
        for (int k = 0; k < K; k++) dst[(int64_t)k * N + j0] = src[(int64_t)j0 * lds + k];
}

/* C (M, 8 NV) = alpha op(A) (M,K) B (K, 8 NV) (+ C with add), B row-major with stride ldb */
__attribute__((target("avx2,fma"), always_inline)) static inline void
rows(int NV, bool ta, int M, int K, float alpha, const float *A, int lda, const float *B, int ldb,
     float *C, int ldc, bool add)
{
    const __m256 al = _mm256_set1_ps(alpha);
    for (int i = 0; i < M; i++) {
        __m256 acc[8];
        for (int v = 0; v < NV; v++) acc[v] = _mm256_setzero_ps();
        for (int k = 0; k < K; k++) {
            __m256 a = _mm256_set1_ps(ta ? A[(int64_t)k * lda + i] : A[(int64_t)i * lda + k]);
            const float *b = B + (int64_t)k * ldb;
            for (int v = 0; v < NV; v++)
                acc[v] = _mm256_fmadd_ps(a, _mm256_loadu_ps(b + 8 * v), acc[v]);
        }
        float *c = C + (int64_t)i * ldc;
        for (int v = 0; v < NV; v++) /* fma(alpha, acc, +0) without add: the added zeros' bits */
            _mm256_storeu_ps(c + 8 * v, _mm256_fmadd_ps(al, acc[v], add ? _mm256_loadu_ps(c + 8 * v)
                                                                         : _mm256_setzero_ps()));
    }
}

__attribute__((target("avx2,fma"))) static void head_gemm_avx2(bool ta, bool tb, int M, int N,
                                                               int K, float alpha,
                                                               const float *A, int lda,
                                                               const float *B, int ldb,
                                                               float *C, int ldc, bool add)
{
    float tile[HEAD_TILE];
    if (tb) { /* B (N,K) -> tile (K,N) */
        tt_cpu_transpose(tile, B, N, K, ldb);
        B = tile;
        ldb = N;
    }
    switch (N / 8) {
    case 1: rows(1, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    case 2: rows(2, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    case 3: rows(3, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    case 4: rows(4, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    case 5: rows(5, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    case 6: rows(6, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    case 7: rows(7, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    default: rows(8, ta, M, K, alpha, A, lda, B, ldb, C, ldc, add); break;
    }
}

#endif

void tt_cpu_head_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                      const real *B, int ldb, real *C, int ldc, bool add)
{
#ifdef HEAD_AVX2
    if (N % 8 == 0 && N <= 64 && !(ta && tb) && (int64_t)M * N * K <= HEAD_SMALL &&
        (!tb || (int64_t)K * N <= HEAD_TILE) && tt_cpu_have_avx2_fma()) {
        head_gemm_avx2(ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
        return;
    }
#endif
    /* beta 0 without add: C is written, never read (OpenBLAS's small-matrix kernels of the
     * AVX-512 sets have a beta-0 form; the others zero C first, as the callers did) */
    tt_cpu_gemm(ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, add ? R(1) : R(0), C, ldc, 0, 1);
}

/* dst (K, N) = src (N, K) transposed, src of row stride lds: the B of TT_TRI_COLS */
void tt_cpu_transpose(real *dst, const real *src, int N, int K, int lds)
{
#ifdef HEAD_AVX2
    if (tt_cpu_have_avx2_fma()) {
        transpose_avx2(dst, src, N, K, lds);
        return;
    }
#endif
    for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) dst[(int64_t)k * N + j] = src[(int64_t)j * lds + k];
}
