/* cpu/tri_gemm.c: the gemms of one causal attention head, on the lower triangle only, and (at
 * the end) the whole gemm of any shape in the same tiles, tt_cpu_tile_gemm.
 * C (M,N) = alpha op(A) B (+ C with add); B (K,N) row-major, op(A) (M,K) = A or A^T. Rows go in
 * tiles of R rows starting on multiples of R (TRI_R_512 with AVX-512, else TRI_R), and `tri`
 * picks each tile's work:
 *   TT_TRI_COLS    columns [0, tt_tri_cols(i0, N)): the scores S = Q K^T, dP = dO V^T
 *   TT_TRI_K_UPTO  k in [0, i0 + R): O = D V, dQ = dS K (D, dS zero for keys k > query i)
 *   TT_TRI_K_FROM  k in [i0, K): dV = D^T dO, dK = dS^T Q (zero for queries k < key i0)
 *   TT_TRI_FULL    every column and k: the full computation, which the tests compare with.
 * Every element is one chain, c = fma(alpha, acc, add ? c : 0) after acc = fma(a_ik, b_kj, acc)
 * for k in order from acc = +0 (head_gemm.c's arithmetic, so a head it handles keeps its bits),
 * whatever the tile. Leaving out k whose a_ik is 0 keeps the bits: such a term adds +-0 to
 * acc, and acc is never -0 (it starts at +0, and a rounded sum is -0 only when both addends
 * are); with an inf or NaN in B it would not (0 * inf), and such inputs are out of scope.
 * R divides 8, so a tile's rows share tt_tri_cols and never reach past what the row that
 * wrote them (att, dS, scores) covers. AVX-512 or AVX2+FMA loops, the widest the CPU has
 * (checked at run time), one answer in both; float64 and other machines use plain loops of the
 * same order (a multiply and an add: no fma on x86-64). */
#include "tensor/cpu/cpu.h"

#include <string.h>

#if !defined(TT_DOUBLE) && defined(__x86_64__) && defined(__GNUC__)
#define TRI_AVX2 1
#endif

#define TRI_R 4 /* rows of a tile: AVX2's 16 registers hold 4 x 3 accumulators */
#define TRI_R_512 8 /* with AVX-512's 32, 8 x 3, a causal head faster (bench/RESULTS.md) */
#define TILE_RMAX 8 /* the most rows of any tile (the whole gemm's AVX-512 ones) */
_Static_assert(8 % TRI_R == 0 && 8 % TRI_R_512 == 0, "a tile's rows must share tt_tri_cols");
#define TRI_SCALAR_W 64 /* columns of the plain loops' accumulator row */

/* the k range and the columns of the tile of R rows starting at i0 */
static void tile_range(tt_tri tri, int i0, int R, int N, int K, int *kb, int *ke, int *n)
{
    *kb = 0;
    *ke = K;
    *n = N;
    if (tri == TT_TRI_COLS) *n = tt_tri_cols(i0, N);
    if (tri == TT_TRI_K_UPTO && i0 + R < K) *ke = i0 + R;
    if (tri == TT_TRI_K_FROM) *kb = i0 < K ? i0 : K;
}

static void tri_plain(tt_tri tri, bool ta, int M, int N, int K, real alpha, const real *A,
                      int lda, const real *B, int ldb, real *C, int ldc, bool add)
{
    real acc[TRI_SCALAR_W];
    for (int i0 = 0; i0 < M; i0 += TRI_R) {
        int kb, ke, n;
        tile_range(tri, i0, TRI_R, N, K, &kb, &ke, &n);
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

/* C (R, 8V) = alpha op(A) B (+ C with add, or + the bias row when bias) over k in [kb, ke),
 * with R, V, ta, part constants after inlining; part: the last vector has `lanes` columns,
 * read and written under a mask (B's, C's and the bias's columns past it may not exist) */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile(const int R, const int V, const bool ta, const bool part, int kb, int ke, float alpha,
     const float *A, int lda, const float *B, int ldb, float *C, int ldc, bool add, int lanes,
     const float *bias)
{
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 acc[TILE_RMAX][3];
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
            const float *o = bias ? bias + 8 * v : c; /* what acc is added to */
            __m256 old = !bias && !add ? _mm256_setzero_ps()
                         : pv          ? _mm256_maskload_ps(o, mask)
                                       : _mm256_loadu_ps(o);
            __m256 x = _mm256_fmadd_ps(al, acc[r][v], old);
            if (pv)
                _mm256_maskstore_ps(c, mask, x);
            else
                _mm256_storeu_ps(c, x);
        }
}

/* one tile of R rows (1..8) and V vectors (1..3, or one partial vector when lanes < W), the
 * constants spelled out for the compiler; FN: tile (AVX2, W 8) or tile512 (AVX-512, W 16). The
 * callers keep R x V within the registers: AVX2's 16 hold 12 accumulators (4 x 3, 6 x 2),
 * AVX-512's 32 hold 24 (8 x 3). */
#define TILE_ARGS kb, ke, alpha, A, lda, B, ldb, C, ldc, add, lanes, bias
#define TILE_V(FN, W, R_, TA)                                                                   \
    do {                                                                                        \
        if (lanes < W)                                                                          \
            FN(R_, 1, TA, true, TILE_ARGS);                                                     \
        else if (V == 1)                                                                        \
            FN(R_, 1, TA, false, TILE_ARGS);                                                    \
        else if (V == 2)                                                                        \
            FN(R_, 2, TA, false, TILE_ARGS);                                                    \
        else                                                                                    \
            FN(R_, 3, TA, false, TILE_ARGS);                                                    \
    } while (0)
#define TILE_CASES8(FN, W, TA)                                                                  \
    switch (R) {                                                                                \
    case 1: TILE_V(FN, W, 1, TA); break;                                                        \
    case 2: TILE_V(FN, W, 2, TA); break;                                                        \
    case 3: TILE_V(FN, W, 3, TA); break;                                                        \
    case 4: TILE_V(FN, W, 4, TA); break;                                                        \
    case 5: TILE_V(FN, W, 5, TA); break;                                                        \
    case 6: TILE_V(FN, W, 6, TA); break;                                                        \
    case 7: TILE_V(FN, W, 7, TA); break;                                                        \
    default: TILE_V(FN, W, 8, TA); break;                                                       \
    }

__attribute__((target("avx2,fma"))) static void tile_any(int R, int V, bool ta, int kb, int ke,
                                                         float alpha, const float *A, int lda,
                                                         const float *B, int ldb, float *C,
                                                         int ldc, bool add, int lanes,
                                                         const float *bias)
{
    if (ta)
        TILE_CASES8(tile, 8, true)
    else
        TILE_CASES8(tile, 8, false)
}

/* The same tiles 16 columns wide (AVX-512F: twice the multiply-adds an instruction where the
 * CPU has 512-bit units). Every element is the same chain of fused multiply-adds in the same
 * order as in tile(), so the two give the same bits; a partial vector is read and written
 * under a mask register. */
__attribute__((target("avx512f"), always_inline)) static inline void
tile512(const int R, const int V, const bool ta, const bool part, int kb, int ke, float alpha,
        const float *A, int lda, const float *B, int ldb, float *C, int ldc, bool add, int lanes,
        const float *bias)
{
    const __mmask16 mask = (__mmask16)((1u << lanes) - 1);
    for (int r = 0; r < R; r++) /* C's lines on their way while the sums run */
        for (int v = 0; v < V; v++)
            _mm_prefetch((const char *)(C + (int64_t)r * ldc + 16 * v), _MM_HINT_T0);
    __m512 acc[TILE_RMAX][3];
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
            const float *o = bias ? bias + 16 * v : c; /* what acc is added to */
            __m512 old = !bias && !add ? _mm512_setzero_ps()
                         : pv          ? _mm512_maskz_loadu_ps(mask, o)
                                       : _mm512_loadu_ps(o);
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
                                                           int ldc, bool add, int lanes,
                                                           const float *bias)
{
    if (ta)
        TILE_CASES8(tile512, 16, true)
    else
        TILE_CASES8(tile512, 16, false)
}

/* The walk over tiles of MR rows, either width: columns in chunks of 2 or 3 vectors of W (with
 * AVX2, 4 rows: 8 or 12 accumulators of its 16 registers, enough in flight for the FMA
 * latency; with AVX-512, 8 rows: up to 24 of its 32); a partial last vector is a chunk of its
 * own. run_tile: tile_any (W 8) or tile512_any (W 16). */
typedef void tile_fn(int R, int V, bool ta, int kb, int ke, float alpha, const float *A, int lda,
                     const float *B, int ldb, float *C, int ldc, bool add, int lanes,
                     const float *bias);
static void tri_walk(tile_fn *run_tile, int W, int MR, tt_tri tri, bool ta, int M, int N, int K,
                     float alpha, const float *A, int lda, const float *B, int ldb, float *C,
                     int ldc, bool add)
{
    for (int i0 = 0; i0 < M; i0 += MR) {
        int kb, ke, n, R = M - i0 < MR ? M - i0 : MR;
        tile_range(tri, i0, MR, N, K, &kb, &ke, &n);
        const float *a = ta ? A + i0 : A + (int64_t)i0 * lda;
        float *c = C + (int64_t)i0 * ldc;
        int full = n / W;
        for (int v0 = 0; v0 < full;) {
            int V = full - v0 == 4 ? 2 : full - v0 < 3 ? full - v0 : 3;
            run_tile(R, V, ta, kb, ke, alpha, a, lda, B + W * v0, ldb, c + W * v0, ldc, add, W,
                     NULL);
            v0 += V;
        }
        if (n % W)
            run_tile(R, 1, ta, kb, ke, alpha, a, lda, B + W * full, ldb, c + W * full, ldc,
                     add, n % W, NULL);
    }
}

/* The whole gemm C (M,N) = alpha op(A) op(B) (+ C, or + a bias row) in tiles, k in blocks of
 * GEMM_KC: each block is one chain per element, as above, added to C as it stands (c = fma(alpha,
 * acc, c), c starting as the bias, C, or 0), so C itself carries the sum between blocks and the
 * bits depend on neither the tiles nor the vector width. In a block, columns go in chunks
 * whose block of B fits tile_b, rows in groups sized so that the group's A (256 KiB) stays in
 * the core's L2 cache while every column panel of the chunk reads it; columns in panels of NV
 * vectors, rows in tiles of MR: 8 x 3 vectors of 16 (48 columns) with AVX-512, 24
 * accumulators of its 32 registers; 6 x 2 of 8 with AVX2, 12 of its 16, which leaves both
 * vectors of B in registers (4 x 3 left one to be loaded again for every row: medium's step
 * 10% slower than on OpenBLAS's Haswell kernels).
 * A row-major A is read where it lies, one broadcast an element. A transposed A (the weight
 * gradients' dy^T) is first copied a group at a time, row by row (one k), into rows whose
 * stride is not a multiple of 4 KiB: dy's own rows lie a power of two apart, in the same few
 * cache sets, and a copy tile by tile fetched each of their lines once for every tile.
 * B is packed a chunk at a time, panel by panel, each panel's block row-major and n wide: a
 * transposed B must be (tt_cpu_transpose), and the AVX2 tiles, whose panel is one cache line
 * wide, lost up to a quarter of their rate to B's rows read in place a power of two apart
 * (bench/RESULTS.md); the AVX-512 ones read three lines a row and were as fast in place, so
 * they read a row-major B there and skip the copy.
 * The copies live in thread-local buffers: no allocation, any thread. */
#define GEMM_KC 512
#define GEMM_NC 48               /* the widest panel: 3 vectors of 16 */
#define GEMM_GROUP_A (64 * 1024) /* the floats of a group's block of A: 256 KiB */
#define GEMM_PAD_A 24            /* most floats a row of the copied A^T is padded by */
static _Thread_local _Alignas(64) float tile_a[GEMM_GROUP_A + GEMM_PAD_A * GEMM_KC];
#define GEMM_B (256 * 1024) /* the floats of a chunk's block of B, all its panels */
static _Thread_local _Alignas(64) float tile_b[GEMM_B];

#ifdef TRI_AVX2
/* rows lines of C, `n` floats each from c (stride ldc), fetched for writing (prefetchw: the
 * line arrives owned, so the tile's store or load-then-store does not wait for it) */
static void prefetch_c(const float *c, int64_t ldc, int rows, int n)
{
    /* asm: GCC's __builtin_prefetch gives PREFETCHW only where the whole unit is built for it */
    for (int r = 0; r < rows; r++)
        for (int l = 0; l < n; l += 16)
            __asm__ volatile("prefetchw %0" ::"m"(*(const char *)(c + r * ldc + l)));
}
#endif

/* dst's rows (stride ds) = `rows` rows of `width` floats of src (stride ss): the copies of a
 * row-major B's panel and of a group of A^T below */
static void copy_rows(float *dst, int64_t ds, const float *src, int64_t ss, int rows, int width)
{
    for (int r = 0; r < rows; r++)
        memcpy(dst + r * ds, src + r * ss, (size_t)width * sizeof(float));
}

static void full_walk(tile_fn *run_tile, int W, int MR, int NV, bool ta, bool tb, int M, int N,
                      int K, float alpha, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, bool add, const float *bias)
{
    const int NC = NV * W;
    const bool pack = tb || W == 8;
    /* C's lines for the next panel are fetched while this one is computed (the first k block:
     * the one that writes C, or reads it to add): in a step C is an output whose lines are
     * not in this core's cache, and the tiles' stores waited for each (measured in
     * bench/RESULTS.md, "C's first touch") */
    const bool ahead = tt_cpu_have_prefetchw();
    for (int kb = 0; kb < K || kb == 0; kb += GEMM_KC) {
        int ke = K - kb < GEMM_KC ? K : kb + GEMM_KC, kn = ke - kb;
        int MG = GEMM_GROUP_A / (kn > MR ? kn : MR) / MR * MR;
        int JC = pack ? GEMM_B / (kn > NC ? kn : NC) / NC * NC : N;
        bool first = kb == 0;
        for (int jc = 0; jc < N; jc += JC) {
            int jn = N - jc < JC ? N - jc : JC;
            for (int j0 = 0; pack && j0 < jn; j0 += NC) {
                int n = jn - j0 < NC ? jn - j0 : NC;
                float *t = tile_b + (int64_t)j0 * kn;
                if (tb)
                    tt_cpu_transpose(t, B + (int64_t)(jc + j0) * ldb + kb, n, kn, ldb);
                else
                    copy_rows(t, n, B + (int64_t)kb * ldb + jc + j0, ldb, kn, n);
            }
            for (int g0 = 0; g0 < M; g0 += MG) {
                int g1 = M - g0 < MG ? M : g0 + MG;
                /* the copied A^T's row stride: a multiple of 16 floats, plus 8 */
                int ls = (g1 - g0 + 15) / 16 * 16 + 8;
                if (ta) copy_rows(tile_a, ls, A + (int64_t)kb * lda + g0, lda, kn, g1 - g0);
                for (int j0 = 0; j0 < jn; j0 += NC) {
                    int n = jn - j0 < NC ? jn - j0 : NC, full = n / W;
                    const float *b = pack ? tile_b + (int64_t)j0 * kn /* n wide */
                                          : B + (int64_t)kb * ldb + jc + j0;
                    int bs = pack ? n : ldb;
                    const float *o = first && bias ? bias + jc + j0 : NULL;
                    for (int i0 = g0; i0 < g1; i0 += MR) {
                        int R = g1 - i0 < MR ? g1 - i0 : MR;
                        const float *a = ta ? tile_a + (i0 - g0) : A + (int64_t)i0 * lda + kb;
                        int la = ta ? ls : lda;
                        float *c = C + (int64_t)i0 * ldc + jc + j0;
                        if (ahead && first && j0 + NC < jn)
                            prefetch_c(c + NC, ldc, R, jn - j0 - NC < NC ? jn - j0 - NC : NC);
                        if (full)
                            run_tile(R, full, ta, 0, kn, alpha, a, la, b, bs, c, ldc,
                                     add || !first, W, o);
                        if (n % W)
                            run_tile(R, 1, ta, 0, kn, alpha, a, la, b + W * full, bs,
                                     c + W * full, ldc, add || !first, n % W,
                                     o ? o + W * full : NULL);
                    }
                }
            }
        }
        if (K == 0) break;
    }
}

#endif

void tt_cpu_tri_gemm_on(tt_cpu_vec vec, tt_tri tri, bool ta, int M, int N, int K, real alpha,
                        const real *A, int lda, const real *B, int ldb, real *C, int ldc, bool add)
{
#ifdef TRI_AVX2
    if (vec == TT_CPU_VEC_AVX512 && tt_cpu_have_avx512f()) {
        tri_walk(tile512_any, 16, TRI_R_512, tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc,
                 add);
        return;
    }
    if (vec >= TT_CPU_VEC_AVX2 && tt_cpu_have_avx2_fma()) {
        tri_walk(tile_any, 8, TRI_R, tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
        return;
    }
#else
    (void)vec;
#endif
    tri_plain(tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
}

bool tt_cpu_tile_gemm_on(tt_cpu_vec vec, bool ta, bool tb, int M, int N, int K, real alpha,
                         const real *A, int lda, const real *B, int ldb, real *C, int ldc,
                         bool add, const real *bias)
{
#ifdef TRI_AVX2
    if (vec == TT_CPU_VEC_AVX512 && tt_cpu_have_avx512f()) {
        full_walk(tile512_any, 16, 8, 3, ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, add,
                  bias);
        return true;
    }
    if (vec >= TT_CPU_VEC_AVX2 && tt_cpu_have_avx2_fma()) {
        full_walk(tile_any, 8, 6, 2, ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, add,
                  bias);
        return true;
    }
#else
    (void)vec, (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
    (void)B, (void)ldb, (void)C, (void)ldc, (void)add, (void)bias;
#endif
    return false;
}

bool tt_cpu_tile_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                      const real *B, int ldb, real *C, int ldc, bool add, const real *bias)
{
    return tt_cpu_tile_gemm_on(TT_CPU_VEC_AVX512, ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc,
                               add, bias);
}

void tt_cpu_tri_gemm(tt_tri tri, bool ta, int M, int N, int K, real alpha, const real *A, int lda,
                     const real *B, int ldb, real *C, int ldc, bool add)
{
    tt_cpu_tri_gemm_on(TT_CPU_VEC_AVX512, tri, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
}
