/* cpu/tri_gemm.c: the gemms of one causal attention head, on the lower triangle only.
 * C (M,N) = alpha op(A) B (+ C with add); B (K,N) row-major, op(A) (M,K) = A or A^T. Rows go in
 * tiles of TRI_R rows starting on multiples of TRI_R, and `tri` picks each tile's work:
 *   TT_TRI_COLS    columns [0, tt_tri_cols(i0, N)): the scores S = Q K^T, dP = dO V^T
 *   TT_TRI_K_UPTO  k in [0, i0 + TRI_R): O = D V, dQ = dS K (D, dS zero for keys k > query i)
 *   TT_TRI_K_FROM  k in [i0, K): dV = D^T dO, dK = dS^T Q (zero for queries k < key i0)
 *   TT_TRI_FULL    every column and k: the full computation, which the tests compare with.
 * Every element is one chain, c = fma(alpha, acc, add ? c : 0) after acc = fma(a_ik, b_kj, acc)
 * for k in order from acc = +0 (head_gemm.c's arithmetic, so a head it handles keeps its bits),
 * whatever the tile. Leaving out k whose a_ik is 0 keeps the bits: such a term adds +-0 to
 * acc, and acc is never -0 (it starts at +0, and a rounded sum is -0 only when both addends
 * are); with an inf or NaN in B it would not (0 * inf), and such inputs are out of scope.
 * TRI_R divides 8, so a tile's rows share tt_tri_cols and never reach past what the row that
 * wrote them (att, dS, scores) covers. AVX-512 or AVX2+FMA loops, the widest the CPU has
 * (checked at run time), one answer in both; float64 and other machines use plain loops of the
 * same order (a multiply and an add: no fma on x86-64). */
#include "tensor/cpu/cpu.h"

#if !defined(TT_DOUBLE) && defined(__x86_64__) && defined(__GNUC__)
#define TRI_AVX2 1
#endif

#define TRI_R 4 /* rows of a tile */
_Static_assert(8 % TRI_R == 0, "a tile's rows must share tt_tri_cols");
#define TRI_SCALAR_W 64 /* columns of the plain loops' accumulator row */

/* the k range and the columns of the row tile starting at i0 */
static void tile_range(tt_tri tri, int i0, int N, int K, int *kb, int *ke, int *n)
{
    *kb = 0;
    *ke = K;
    *n = N;
    if (tri == TT_TRI_COLS) *n = tt_tri_cols(i0, N);
    if (tri == TT_TRI_K_UPTO && i0 + TRI_R < K) *ke = i0 + TRI_R;
    if (tri == TT_TRI_K_FROM) *kb = i0 < K ? i0 : K;
}

static void tri_plain(tt_tri tri, bool ta, int M, int N, int K, real alpha, const real *A,
                      int lda, const real *B, int ldb, real *C, int ldc, bool add)
{
    real acc[TRI_SCALAR_W];
    for (int i0 = 0; i0 < M; i0 += TRI_R) {
        int kb, ke, n;
        tile_range(tri, i0, N, K, &kb, &ke, &n);
        for (int i = i0; i < i0 + TRI_R && i < M; i++)
            for (int c0 = 0; c0 < n; c0 += TRI_SCALAR_W) {
                int w = n - c0 < TRI_SCALAR_W ? n - c0 : TRI_SCALAR_W;
                for (int j = 0; j < w; j++) acc[j] = R(0);
                for (int k = kb; k < ke; k++) {
                    real a = ta ? A[(int64_t)k * lda + i] : A[(int64_t)i * lda + k];
                    const real *b = B + (int64_t)k * ldb + c0;
                    for (int j = 0; j < w; j++) acc[j] += a * b[j];
                }
                real *c = C + (int64_t)i * ldc + c0;
                for (int j = 0; j < w; j++) c[j] = alpha * acc[j] + (add ? c[j] : R(0));
            }
    }
}

#ifdef TRI_AVX2
#include <immintrin.h>

/* C (R, 8V) = alpha op(A) B (+ C) over k in [kb, ke), with R, V, ta, part constants after
 * inlining; part: the last vector has `lanes` columns, read and written under a mask (B's and
 * C's columns past it may not exist) */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile(const int R, const int V, const bool ta, const bool part, int kb, int ke, float alpha,
     const float *A, int lda, const float *B, int ldb, float *C, int ldc, bool add, int lanes)
{
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 acc[TRI_R][3];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) acc[r][v] = _mm256_setzero_ps();
    for (int k = kb; k < ke; k++) {
        const float *b = B + (int64_t)k * ldb;
        __m256 bv[3];
        for (int v = 0; v < V; v++)
            bv[v] = part && v == V - 1 ? _mm256_maskload_ps(b + 8 * v, mask)
                                       : _mm256_loadu_ps(b + 8 * v);
        for (int r = 0; r < R; r++) {
            __m256 a = _mm256_set1_ps(ta ? A[(int64_t)k * lda + r] : A[(int64_t)r * lda + k]);
            for (int v = 0; v < V; v++) acc[r][v] = _mm256_fmadd_ps(a, bv[v], acc[r][v]);
        }
    }
    const __m256 al = _mm256_set1_ps(alpha);
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) {
            float *c = C + (int64_t)r * ldc + 8 * v;
            bool pv = part && v == V - 1;
            __m256 old = !add ? _mm256_setzero_ps()
                         : pv ? _mm256_maskload_ps(c, mask)
                              : _mm256_loadu_ps(c);
            __m256 x = _mm256_fmadd_ps(al, acc[r][v], old);
            if (pv)
                _mm256_maskstore_ps(c, mask, x);
            else
                _mm256_storeu_ps(c, x);
        }
}

/* one tile of R rows (1..4) and V vectors (1..3, or one partial vector when lanes < W), the
 * constants spelled out for the compiler; FN: tile (AVX2, W 8) or tile512 (AVX-512, W 16) */
#define TILE_ARGS kb, ke, alpha, A, lda, B, ldb, C, ldc, add, lanes
#define TILE_CASES(FN, W, TA)                                                                   \
    switch (lanes < W ? R : R * 4 + V) {                                                       \
    case 1: FN(1, 1, TA, true, TILE_ARGS); break;                                               \
    case 2: FN(2, 1, TA, true, TILE_ARGS); break;                                               \
    case 3: FN(3, 1, TA, true, TILE_ARGS); break;                                               \
    case 4: FN(4, 1, TA, true, TILE_ARGS); break;                                               \
    case 5: FN(1, 1, TA, false, TILE_ARGS); break;                                              \
    case 6: FN(1, 2, TA, false, TILE_ARGS); break;                                              \
    case 7: FN(1, 3, TA, false, TILE_ARGS); break;                                              \
    case 9: FN(2, 1, TA, false, TILE_ARGS); break;                                              \
    case 10: FN(2, 2, TA, false, TILE_ARGS); break;                                             \
    case 11: FN(2, 3, TA, false, TILE_ARGS); break;                                             \
    case 13: FN(3, 1, TA, false, TILE_ARGS); break;                                             \
    case 14: FN(3, 2, TA, false, TILE_ARGS); break;                                             \
    case 15: FN(3, 3, TA, false, TILE_ARGS); break;                                             \
    case 17: FN(4, 1, TA, false, TILE_ARGS); break;                                             \
    case 18: FN(4, 2, TA, false, TILE_ARGS); break;                                             \
    default: FN(4, 3, TA, false, TILE_ARGS); break;                                             \
    }

__attribute__((target("avx2,fma"))) static void tile_any(int R, int V, bool ta, int kb, int ke,
                                                         float alpha, const float *A, int lda,
                                                         const float *B, int ldb, float *C,
                                                         int ldc, bool add, int lanes)
{
    if (ta)
        TILE_CASES(tile, 8, true)
    else
        TILE_CASES(tile, 8, false)
}

/* The same tiles 16 columns wide (AVX-512F: twice the multiply-adds an instruction where the
 * CPU has 512-bit units). Every element is the same chain of fused multiply-adds in the same
 * order as in tile(), so the two give the same bits; a partial vector is read and written
 * under a mask register. */
__attribute__((target("avx512f"), always_inline)) static inline void
tile512(const int R, const int V, const bool ta, const bool part, int kb, int ke, float alpha,
        const float *A, int lda, const float *B, int ldb, float *C, int ldc, bool add, int lanes)
{
    const __mmask16 mask = (__mmask16)((1u << lanes) - 1);
    __m512 acc[TRI_R][3];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) acc[r][v] = _mm512_setzero_ps();
    for (int k = kb; k < ke; k++) {
        const float *b = B + (int64_t)k * ldb;
        __m512 bv[3];
        for (int v = 0; v < V; v++)
            bv[v] = part && v == V - 1 ? _mm512_maskz_loadu_ps(mask, b + 16 * v)
                                       : _mm512_loadu_ps(b + 16 * v);
        for (int r = 0; r < R; r++) {
            __m512 a = _mm512_set1_ps(ta ? A[(int64_t)k * lda + r] : A[(int64_t)r * lda + k]);
            for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(a, bv[v], acc[r][v]);
        }
    }
    const __m512 al = _mm512_set1_ps(alpha);
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) {
            float *c = C + (int64_t)r * ldc + 16 * v;
            bool pv = part && v == V - 1;
            __m512 old = !add ? _mm512_setzero_ps()
                         : pv ? _mm512_maskz_loadu_ps(mask, c)
                              : _mm512_loadu_ps(c);
            __m512 x = _mm512_fmadd_ps(al, acc[r][v], old);
            if (pv)
                _mm512_mask_storeu_ps(c, mask, x);
            else
                _mm512_storeu_ps(c, x);
        }
}

__attribute__((target("avx512f"))) static void tile512_any(int R, int V, bool ta, int kb, int ke,
                                                           float alpha, const float *A, int lda,
                                                           const float *B, int ldb, float *C,
                                                           int ldc, bool add, int lanes)
{
    if (ta)
        TILE_CASES(tile512, 16, true)
    else
        TILE_CASES(tile512, 16, false)
}

/* The walk over row tiles, either width: columns in chunks of 2 or 3 vectors of W (8 or 12
 * accumulators of AVX2's 16 registers, enough in flight for the FMA latency); a partial last
 * vector is a chunk of its own. run_tile: tile_any (W 8) or tile512_any (W 16). */
typedef void tile_fn(int R, int V, bool ta, int kb, int ke, float alpha, const float *A, int lda,
                     const float *B, int ldb, float *C, int ldc, bool add, int lanes);
static void tri_walk(tile_fn *run_tile, int W, tt_tri tri, bool ta, int M, int N, int K,
                     float alpha, const float *A, int lda, const float *B, int ldb, float *C,
                     int ldc, bool add)
{
    for (int i0 = 0; i0 < M; i0 += TRI_R) {
        int kb, ke, n, R = M - i0 < TRI_R ? M - i0 : TRI_R;
        tile_range(tri, i0, N, K, &kb, &ke, &n);
        const float *a = ta ? A + i0 : A + (int64_t)i0 * lda;
        float *c = C + (int64_t)i0 * ldc;
        int full = n / W;
        for (int v0 = 0; v0 < full;) {
            int V = full - v0 == 4 ? 2 : full - v0 < 3 ? full - v0 : 3;
            run_tile(R, V, ta, kb, ke, alpha, a, lda, B + W * v0, ldb, c + W * v0, ldc, add, W);
            v0 += V;
        }
        if (n % W)
            run_tile(R, 1, ta, kb, ke, alpha, a, lda, B + W * full, ldb, c + W * full, ldc,
                     add, n % W);
    }
}

#endif

void tt_cpu_tri_gemm_on(tt_cpu_vec vec, tt_tri tri, bool ta, int M, int N, int K, real alpha,
                        const real *A, int lda, const real *B, int ldb, real *C, int ldc, bool add)
{
#ifdef TRI_AVX2
    if (vec == TT_CPU_VEC_AVX512 && tt_cpu_have_avx512f()) {
        tri_walk(tile512_any, 16, tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
        return;
    }
    if (vec >= TT_CPU_VEC_AVX2 && tt_cpu_have_avx2_fma()) {
        tri_walk(tile_any, 8, tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
        return;
    }
#else
    (void)vec;
#endif
    tri_plain(tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
}

void tt_cpu_tri_gemm(tt_tri tri, bool ta, int M, int N, int K, real alpha, const real *A, int lda,
                     const real *B, int ldb, real *C, int ldc, bool add)
{
    tt_cpu_tri_gemm_on(TT_CPU_VEC_AVX512, tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
}
