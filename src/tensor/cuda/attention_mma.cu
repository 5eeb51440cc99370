/* cuda/attention_mma.cu: the fused attention with each warp's tiles in registers (float32
 * builds; TF32 tensor cores through mma.sync m16n8k8, whose fragment layout PTX documents):
 * TT_CUDA_ATTN_MMA (one TF32 product, matmul_precision "high") and TT_CUDA_ATTN_MMA3 (3xTF32,
 * about float32's accuracy), for head sizes up to 64; past that attention_tc.cu's kernels with
 * the same passes. The math is attention.cu's, the layout another:
 *   - A warp owns 16 rows (query rows in the forward and dq kernels, key rows in dkv) and holds
 *     its operand rows (Q or dO) and its output tile (16 x HS) in registers the whole kernel. A
 *     block is up to MW warps; they share the other operand (K, V; Q, dO in dkv), staged KT rows
 *     at a time in shared memory by cp.async, MST tiles on their way (attention.cuh's
 *     pipeline). The score rows never go to shared memory: a warp's (16, KT) scores are 16
 *     registers a lane, and the softmax reads them there.
 *   - Softmax in two passes over the keys (as flash attention does): the first keeps each
 *     row's running max and sum, the second recomputes the scores and writes att = P, the
 *     dropout mask (Philox, bit for bit the CPU's) and O = D V. dq likewise: the first pass
 *     sums rowsum(dP P), the second writes dS into the scratch and adds dS K. (Flash attention
 *     2 takes rowsum(dP P) as rowsum(dO O) and saves the first pass. Tried here: it loses the
 *     CPU's exact dS = 0 where a row's weights are one-hot, as at T = 1 (dP - rowsum then
 *     subtracts two roundings of one number; with dropout, dk came out 1.1e-5 relative off the
 *     CPU's), and it moved tiny's valid_loss after one epoch with attention dropout 0.2 from
 *     3e-8 of the CPU's to 5.4e-5 (emulated, 3xTF32).) dkv reads dS and
 *     att from global memory straight into its fragments (8 consecutive floats a row: whole
 *     32-byte sectors).
 *   - P V and dS K take P (dS) from the accumulators as they lie: lane (g, t) holds keys 2t and
 *     2t + 1 of each 8, so the product's inner index k = t stands for key 2t and k = t + 4 for
 *     key 2t + 1, and the B fragment reads V's (K's) rows in that order. No shuffle.
 * Row strides of the staged tiles (floats) keep each fragment load on 32 distinct banks: HSP
 * + 4 (LD: 4 mod 32 at HSP 32 and 64, 20 at 16) for the forward and dq kernels' tiles, read at
 * rows g (K in Q K^T, V in dO V^T) or 2t and 2t + 1 (V in P V, K in dS K); HSP + 8 (LDQ: 8 mod
 * 32, 24 at 16) for dkv's Q and dO, read at rows t. Fixed order everywhere, no atomics: the
 * same bits on every run of one GPU. */
#include "tensor/cuda/attention.cuh"

#ifndef TT_DOUBLE

#include <mma.h>

#include <string.h>

#define MW 4  /* warps a block at most */
#define MR 16 /* rows a warp */
#define KT 32 /* rows of a staged tile: keys (forward, dq), queries (dkv) */
#define MST 3 /* staging buffers: two tiles on their way while one is used */
/* blocks an SM must hold at once (launch bounds): 2 lets a thread have up to 255 registers.
 * At 4 (128 registers) the first version's HS 64 kernels spilled, at 3 (168) three still did; at 2
 * they take 132 to 241 at sm_90 and none spills (make CUDA=1 ptxas) */
#define MMA_MIN_BLOCKS 2

#define NT (KT / 8) /* 8-column tiles of a warp's (16, KT) scores */

/* ---- mma.sync m16n8k8, TF32 in, float32 accumulate -------------------------------------------
 * Lane l = 4 g + t. A (16 x 8, row-major): a[0] (g, t), a[1] (g + 8, t), a[2] (g, t + 4),
 * a[3] (g + 8, t + 4). B (8 x 8, k by n): b[0] (t, g), b[1] (t + 4, g). C (16 x 8): c[0]
 * (g, 2t), c[1] (g, 2t + 1), c[2] (g + 8, 2t), c[3] (g + 8, 2t + 1). */
static __device__ __forceinline__ void mma_tf32(float c[4], const uint32_t a[4],
                                                const uint32_t b[2])
{
#if defined(__CUDA_ARCH__)
    /* volatile, as CUTLASS writes it: all 32 lanes must run a .sync.aligned instruction
     * together, and the compiler may sink a pure asm statement into a branch that only some
     * lanes take, where its results are used; ptxas still schedules it freely */
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(TT_CUDA_EMULATED)
    emu::mma_m16n8k8_tf32(c, a, b);
#else /* nvcc's host pass */
    (void)c, (void)a, (void)b;
#endif
}

static __device__ __forceinline__ int lane_g(void)
{
    return (int)(threadIdx.x % 32) / 4;
}
static __device__ __forceinline__ int lane_t(void)
{
    return (int)(threadIdx.x % 4);
}
/* the row and column of an A fragment's element e, and of an accumulator's */
static __device__ __forceinline__ int a_row(int e)
{
    return lane_g() + 8 * (e & 1);
}
static __device__ __forceinline__ int a_col(int e)
{
    return lane_t() + 4 * (e >> 1);
}
static __device__ __forceinline__ int c_row(int e)
{
    return lane_g() + 8 * (e >> 1);
}
static __device__ __forceinline__ int c_col(int e)
{
    return 2 * lane_t() + (e & 1);
}

static __device__ __forceinline__ uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* An operand's N elements as TF32: hi = tf32(x), and at PASSES 3 lo = tf32(x - hi) (x - hi is
 * exact in float32), so that lo hi + hi lo + hi hi is x y to about float32's accuracy. */
template <int PASSES, int N> struct tf32_op {
    uint32_t hi[N], lo[PASSES == 3 ? N : 1];
    __device__ __forceinline__ explicit tf32_op(const float x[N])
    {
#pragma unroll
        for (int e = 0; e < N; e++) {
            const float h = nvcuda::wmma::__float_to_tf32(x[e]);
            hi[e] = bits_of(h);
            if constexpr (PASSES == 3) lo[e] = bits_of(nvcuda::wmma::__float_to_tf32(x[e] - h));
        }
    }
};

template <int PASSES>
static __device__ __forceinline__ void mma(float c[4], const tf32_op<PASSES, 4> &a,
                                           const tf32_op<PASSES, 2> &b)
{
    if constexpr (PASSES == 3) {
        mma_tf32(c, a.lo, b.hi);
        mma_tf32(c, a.hi, b.lo);
    }
    mma_tf32(c, a.hi, b.hi);
}

/* ---- staging and fragments ------------------------------------------------------------------- */

/* dst[r ld + c] = src[r lds + c] for r < nr, c < nc of a (KT, NC) tile, zeros elsewhere, by
 * cp.async (16 bytes a copy where src and lds allow it); the block's threads, however many */
template <int NC>
static __device__ __forceinline__ void stage_tile(float *dst, int ld, const float *src, int64_t lds,
                                                  int nr, int nc)
{
    if (lds % 4 == 0 && (uintptr_t)src % 16 == 0) {
        for (int e = (int)threadIdx.x; e < KT * NC / 4; e += (int)blockDim.x) {
            const int r = e / (NC / 4), c = e % (NC / 4) * 4;
            const int have = r < nr ? imin(4, nc - c) : 0;
            copy_async16(dst + r * ld + c, have > 0 ? src + r * lds + c : src, have > 0 ? have : 0);
        }
    } else {
        for (int e = (int)threadIdx.x; e < KT * NC; e += (int)blockDim.x) {
            const int r = e / NC, c = e % NC;
            const bool in = r < nr && c < nc;
            copy_async(dst + r * ld + c, in ? src + r * lds + c : src, in);
        }
    }
}

/* This warp's A fragments of rows r0 .. r0 + 15 of M (head block, row stride ldm), all HSP
 * columns (zeros past nr rows and HS columns): Q or dO, held the whole kernel */
template <int NK>
static __device__ __forceinline__ void load_rows(float f[NK][4], const float *M, int ldm, int r0,
                                                 int nr, int HS)
{
#pragma unroll
    for (int ks = 0; ks < NK; ks++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = r0 + a_row(e), c = 8 * ks + a_col(e);
            f[ks][e] = r < nr && c < HS ? M[(int64_t)r * ldm + c] : 0.0f;
        }
}

/* sc = A B^T for the warp's 16 rows and a staged tile's KT rows: A in registers (load_rows),
 * B (KT, HSP) at row stride LD */
template <int NK, int PASSES, int N>
static __device__ __forceinline__ void rows_by_tile(float sc[N][4], const float f[NK][4],
                                                    const float *b, int ld)
{
    const int g = lane_g(), t = lane_t();
#pragma unroll
    for (int n = 0; n < N; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            sc[n][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < NK; ks++) {
        const tf32_op<PASSES, 4> A(f[ks]);
#pragma unroll
        for (int n = 0; n < N; n++) {
            const float *p = b + (8 * n + g) * ld + 8 * ks + t;
            const float x[2] = {p[0], p[4]};
            mma<PASSES>(sc[n], A, tf32_op<PASSES, 2>(x));
        }
    }
}

/* acc[d] += A B_d for d < NK, one step of 8 along the inner dimension: A's fragment values a,
 * B_d the (8, 8) block of a staged tile whose b[0] and b[1] (for this lane) are at p + 8 d and
 * p + 8 d + k4 (p: this lane's first element, k4: from inner index t to t + 4) */
template <int NK, int PASSES>
static __device__ __forceinline__ void acc_step(float acc[NK][4], const float a[4],
                                                const float *p, int k4)
{
    const tf32_op<PASSES, 4> A(a);
#pragma unroll
    for (int d = 0; d < NK; d++) {
        const float x[2] = {p[8 * d], p[8 * d + k4]};
        mma<PASSES>(acc[d], A, tf32_op<PASSES, 2>(x));
    }
}

/* acc += W M for the warp's 16 rows: W (16, KT) as the accumulators left it (sc), M a staged
 * (KT, HSP) tile at row stride LD, read in W's key order (rows 2t, 2t + 1 of each 8) */
template <int NK, int PASSES, int N>
static __device__ __forceinline__ void acc_times_tile(float acc[NK][4], const float sc[N][4],
                                                      const float *m, int ld)
{
#pragma unroll
    for (int n = 0; n < N; n++) {
        const float w[4] = {sc[n][0], sc[n][2], sc[n][1], sc[n][3]};
        acc_step<NK, PASSES>(acc, w, m + (8 * n + 2 * lane_t()) * ld + lane_g(), ld);
    }
}

/* dst[r ldd + c] (+)= alpha acc for the warp's rows r0 + r < nr and columns c < HS */
template <int NK>
static __device__ __forceinline__ void store_acc(float *dst, int64_t ldd, const float acc[NK][4],
                                                 float alpha, bool add, int r0, int nr, int HS)
{
#pragma unroll
    for (int d = 0; d < NK; d++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = r0 + c_row(e), c = 8 * d + c_col(e);
            if (r >= nr || c >= HS) continue;
            float *p = dst + (int64_t)r * ldd + c;
            const float x = alpha * acc[d][e];
            *p = add ? *p + x : x;
        }
}

/* the warp's 16 rows from the block's: (row tile, h, b) as attention.cuh's grid_of, rows a
 * block 16 a warp */
static __device__ __forceinline__ int block_rows(void)
{
    return (int)blockDim.x / 32 * MR;
}
static __device__ __forceinline__ int warp_rows(void)
{
    return (int)blockIdx.x * block_rows() + (int)threadIdx.x / 32 * MR;
}

/* the scores of a tile (keys j0 ..) for the warp's rows from iw: times scale, -inf where
 * masked (past T, causally, padding) */
static __device__ __forceinline__ void mask_scores(float sc[NT][4], float scale, const int32_t *pad,
                                                   bool causal, int T, int iw, int j0)
{
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = iw + c_row(e), j = j0 + 8 * n + c_col(e);
            const bool masked = j >= T || (causal && j > i) || (pad && pad[imin(j, T - 1)]);
            sc[n][e] = masked ? -R_INF : scale * sc[n][e];
        }
}

/* w[i], by selects: an index unknown to the compiler would put w in local memory */
static __device__ __forceinline__ uint32_t word(const uint32_t w[4], unsigned i)
{
    return i == 0 ? w[0] : i == 1 ? w[1] : i == 2 ? w[2] : w[3];
}

/* The keep bits of this lane's elements of the 8 keys from jt in its two rows (iw + g, iw + g
 * + 8): keys jt + 2t and jt + 2t + 1 as bits 0 and 1 of kp[0] and kp[1]. Lanes t and t ^ 1
 * hold a row's 4 keys from jq between them, elements eq .. eq + 3 of the draw, which lie in
 * Philox block eq / 4 and, unless eq is a multiple of 4, the next: each lane of the pair
 * computes the first block of one row (t & 1) and gives it to the other, so that an aligned
 * draw costs a lane one block for its 4 elements (2 rows, 2 keys), not one per 2; a lane whose
 * elements reach into the next block computes that itself. Every lane of the warp calls it
 * (a shuffle). */
static __device__ __forceinline__ void keep_bits(unsigned kp[2], const tt_rng &at, int64_t bh,
                                                 int T, int iw, int jt, uint32_t thr)
{
    const unsigned p = (unsigned)lane_t() & 1u;
    const int jq = jt + 4 * (lane_t() >> 1);
    uint64_t eq[2];
#pragma unroll
    for (int r = 0; r < 2; r++)
        eq[r] = keep_element(&at, bh, T, iw + lane_g() + 8 * r, jq);
    uint32_t w[4], lo[2][4];
    tt_philox_block(at.seed, at.stream, (p ? eq[1] : eq[0]) >> 2, w);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint32_t o = __shfl_xor_sync(0xffffffffu, w[k], 1);
        lo[0][k] = p ? o : w[k];
        lo[1][k] = p ? w[k] : o;
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const uint64_t e = eq[r] + 2 * p; /* this lane's first element */
        uint32_t hi[4] = {0, 0, 0, 0};
        if (((eq[r] & 3) + 2 * p + 1) >= 4)
            tt_philox_block(at.seed, at.stream, (eq[r] >> 2) + 1, hi);
        kp[r] = 0;
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const uint64_t eu = e + (uint64_t)u;
            const unsigned i = (unsigned)(eu & 3);
            const uint32_t x = (eu >> 2) == (eq[r] >> 2) ? word(lo[r], i) : word(hi, i);
            kp[r] |= (unsigned)tt_philox_keep(x, thr) << u;
        }
    }
}

/* ---- the kernels ------------------------------------------------------------------------- */

/* Row stride of a staged (KT, HSP) tile read along its rows (LD) and across them (LDQ). */
TT_HD constexpr int mma_ld(int hsp)
{
    return hsp + 4;
}
TT_HD constexpr int mma_ldq(int hsp)
{
    return hsp + 8;
}

/* The key tiles the forward and dq kernels' block reads: up to the block's causal end */
static __device__ __forceinline__ int key_tiles(const tt_attn_desc &a)
{
    const int i0 = (int)blockIdx.x * block_rows();
    return ((a.causal ? imin(a.T, i0 + block_rows()) : a.T) + KT - 1) / KT;
}

/* Whether a warp's rows from iw see a key of the tile from j0 (causal: a tile past the warp's
 * last row is masked for all of them, its products not needed); the same for the whole warp.
 * A masked element adds nothing anywhere: exp(-inf) to l, P = 0 to rowsum(dP P), dS = 0 to dq,
 * and dkv never reads the dS of a key past its query (so dq need not write it). */
static __device__ __forceinline__ bool sees_tile(const tt_attn_desc &a, int iw, int j0)
{
    return !a.causal || j0 <= iw + MR - 1;
}

/* The first pass of the forward and dq kernels: M's (K's, V's) first n tiles of KT keys staged
 * in turn, use(c, b) on tile c at b */
template <int HSP, class Use>
static __device__ __forceinline__ void over_key_tiles(int n, float *buf, const float *M, int ldm,
                                                      int T, int HS, Use use)
{
    pipeline<MST>(
        n, buf, 2 * KT * mma_ld(HSP),
        [&](int c, float *b, int) {
            stage_tile<HSP>(b, mma_ld(HSP), M + (int64_t)c * KT * ldm, ldm, T - c * KT, HS);
        },
        land_nothing(), use);
}

/* forward, per warp: pass 1 the rows' max m and sum l of exp(S - m) (online: l rescaled as m
 * grows), pass 2 P = exp(S - m) / l into att, the keep mask, D into O; keys past the block's
 * causal end are all masked: their att zeros and keep bits need no product. Dynamic shared
 * memory: MST tiles of K and V. */
template <int HSP, int PASSES>
static __global__ void __launch_bounds__(MW * 32, MMA_MIN_BLOCKS)
    mma_forward(float *out, float *att, uint8_t *keep, const float *q, const float *k,
                const float *v, const int32_t *pad, tt_attn_desc a, tt_rng at,
                const tt_cuda_vary *vary, uint32_t thr, float s)
{
    constexpr int NK = HSP / 8, LD = mma_ld(HSP), TILE = 2 * KT * LD;
    if (vary) at.counter += vary->rng_delta; /* a replayed step's cursor (cuda.h) */
    extern __shared__ __align__(128) unsigned char smem_mma[];
    float *buf = (float *)smem_mma;
    const int T = a.T, HS = a.HS, iw = warp_rows(), nk = key_tiles(a);
    const int64_t bh = head_index(a);
    const int32_t *pb = pad ? pad + (int64_t)blockIdx.z * T : NULL;
    q += head_at(a, a.ldq);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    float f[NK][4];
    load_rows<NK>(f, q, a.ldq, iw, T, HS);

    float m[2] = {-R_INF, -R_INF}, l[2] = {0.0f, 0.0f}; /* rows g, g + 8 */
    over_key_tiles<HSP>(nk, buf, k, a.ldk, T, HS, [&](int c, float *b) {
        if (!sees_tile(a, iw, c * KT)) return;
        float sc[NT][4];
        rows_by_tile<NK, PASSES, NT>(sc, f, b, LD);
        mask_scores(sc, a.scale, pb, a.causal, T, iw, c * KT);
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float x = -R_INF;
#pragma unroll
            for (int n = 0; n < NT; n++) {
                x = sc[n][2 * r] > x ? sc[n][2 * r] : x;
                x = sc[n][2 * r + 1] > x ? sc[n][2 * r + 1] : x;
            }
            x = warp_max<4>(x); /* the row group (t) of 4 lanes */
            const float mn = x > m[r] ? x : m[r];
            if (mn == -R_INF) continue; /* every key so far masked: l stays 0 */
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < NT; n++)
                sum += R_EXP(sc[n][2 * r] - mn) + R_EXP(sc[n][2 * r + 1] - mn);
            l[r] = (m[r] == -R_INF ? 0.0f : l[r] * R_EXP(m[r] - mn)) + sum;
            m[r] = mn;
        }
    });
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] = warp_sum<4>(l[r]);
        inv[r] = l[r] > 0.0f ? 1.0f / l[r] : 0.0f; /* 0: every key masked */
    }

    /* pass 2; tiles from nk on (causal) are masked for every row of the block */
    float o[NK][4] = {};
    const int ntiles = (T + KT - 1) / KT;
    const int ldv = a.ldv;
    auto probs = [&](float sc[NT][4], int j0) {
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = e >> 1;
                const float p = m[r] == -R_INF ? 0.0f : R_EXP(sc[n][e] - m[r]) * inv[r];
                sc[n][e] = p;
            }
#pragma unroll
        for (int n = 0; n < NT; n++) {
            const int j = j0 + 8 * n + 2 * lane_t();
            unsigned kp[2] = {3u, 3u};
            if (keep) keep_bits(kp, at, bh, T, iw, j0 + 8 * n, thr); /* the whole warp */
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int i = iw + lane_g() + 8 * r;
                if (i >= T || j >= T) continue;
                const int64_t row = (bh * T + i) * T;
                float *pa = att + row + j;
                pa[0] = sc[n][2 * r];
                if (j + 1 < T) pa[1] = sc[n][2 * r + 1];
                if (!keep) continue;
                keep[row + j] = (uint8_t)(kp[r] & 1u);
                if (j + 1 < T) keep[row + j + 1] = (uint8_t)(kp[r] >> 1);
                const float x0 = sc[n][2 * r] * s, x1 = sc[n][2 * r + 1] * s;
                sc[n][2 * r] = kp[r] & 1u ? x0 : 0.0f;
                sc[n][2 * r + 1] = kp[r] & 2u ? x1 : 0.0f;
            }
        }
    };
    pipeline<MST>(
        nk, buf, TILE,
        [&](int c, float *b, int) {
            const int j0 = c * KT;
            stage_tile<HSP>(b, LD, k + (int64_t)j0 * a.ldk, a.ldk, T - j0, HS);
            stage_tile<HSP>(b + KT * LD, LD, v + (int64_t)j0 * ldv, ldv, T - j0, HS);
        },
        land_nothing(),
        [&](int c, float *b) {
            const int j0 = c * KT;
            const bool live = sees_tile(a, iw, j0);
            float sc[NT][4];
            if (live) {
                rows_by_tile<NK, PASSES, NT>(sc, f, b, LD);
                mask_scores(sc, a.scale, pb, a.causal, T, iw, j0);
            } else {
#pragma unroll
                for (int n = 0; n < NT; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        sc[n][e] = -R_INF;
            }
            probs(sc, j0);
            if (live) acc_times_tile<NK, PASSES, NT>(o, sc, b + KT * LD, LD);
        });
    for (int c = nk; c < ntiles; c++) {
        float sc[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                sc[n][e] = -R_INF;
        probs(sc, c * KT);
    }
    store_acc<NK>(out + head_at(a, a.ldo), a.ldo, o, 1.0f, false, iw, T, HS);
}

/* dq's view of the warp's two rows (g, g + 8; past T the last row, whose values are not
 * used): their offsets in the head's (T, T) att, keep and ds (32-bit: fewer registers) */
static __device__ __forceinline__ void dq_rows_of(int row[2], int T, int iw)
{
#pragma unroll
    for (int r = 0; r < 2; r++)
        row[r] = imin(iw + lane_g() + 8 * r, T - 1) * T;
}

/* dP = dD keep s of element e of n-tile n from the tile at j0, its product x = dD; in *p its
 * P (both 0 past T, rows or columns); att and keep the head's */
static __device__ __forceinline__ float dp_at(float x, float *p, const float *att,
                                              const uint8_t *keep, const int row[2], float s, int T,
                                              bool in, int j, int e)
{
    const int at = row[e >> 1] + imin(j, T - 1);
    const float pe = att[at];
    const bool kept = keep ? keep[at] != 0 : true;
    in = in && j < T;
    *p = in ? pe : 0.0f;
    const float g = x * s;
    return in && kept ? (keep ? g : x) : 0.0f;
}

/* dq's products for 8-column tiles h .. h + DN - 1 of a staged V tile b (keys from j0, the
 * first of them), dd = dO V^T, then each(dd[n][e], dP, P, j, e) for every element (j its key;
 * P and dP 0 past T) */
template <int NK, int PASSES, int DN, class Each>
static __device__ __forceinline__ void
dq_tiles(float dd[DN][4], const float f[NK][4], const float *b, int ld, const float *att,
         const uint8_t *keep, const int rows[2], float s, int T, int iw, int j0, Each each)
{
    rows_by_tile<NK, PASSES, DN>(dd, f, b, ld);
#pragma unroll
    for (int n = 0; n < DN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int j = j0 + 8 * n + c_col(e);
            float p;
            const float dp = dp_at(dd[n][e], &p, att, keep, rows, s, T, iw + c_row(e) < T, j, e);
            each(dd[n][e], dp, p, j, e);
        }
}

/* dq, per warp: pass 1 rowsum(dP P) (dP = dO V^T keep s), pass 2 dS = P (dP - that) into ds
 * (when given: dkv's) and dq += scale dS K. Dynamic shared memory: MST tiles of V and K. */
template <int HSP, int PASSES>
static __global__ void __launch_bounds__(MW * 32, MMA_MIN_BLOCKS)
    mma_dq(float *dq, float *ds, const float *dout, const float *att, const uint8_t *keep,
           const float *k, const float *v, tt_attn_desc a, float s)
{
    constexpr int NK = HSP / 8, LD = mma_ld(HSP), TILE = 2 * KT * LD;
    /* a tile's keys DN 8-column tiles at a time, in a loop nvcc keeps (unrolled, it held too
     * much of a tile in registers at once and spilled) */
    constexpr int DN = HSP == 64 && PASSES == 3 ? 1 : 2;
    extern __shared__ __align__(128) unsigned char smem_mma[];
    float *buf = (float *)smem_mma;
    const int T = a.T, HS = a.HS, iw = warp_rows(), nk = key_tiles(a);
    const int64_t bh = head_index(a);
    dout += head_at(a, a.ldo);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    float f[NK][4];
    load_rows<NK>(f, dout, a.ldo, iw, T, HS);

    const int64_t TT = (int64_t)T * T;
    att += bh * TT;
    if (keep) keep += bh * TT;
    if (ds) ds += bh * TT;
    int rows[2];
    dq_rows_of(rows, T, iw);
    float dot[2] = {0.0f, 0.0f};
    over_key_tiles<HSP>(nk, buf, v, a.ldv, T, HS, [&](int c, float *b) {
        if (!sees_tile(a, iw, c * KT)) return;
#pragma unroll 1
        for (int h = 0; h < NT; h += DN) {
            float dd[DN][4];
            dq_tiles<NK, PASSES, DN>(
                dd, f, b + 8 * h * LD, LD, att, keep, rows, s, T, iw, c * KT + 8 * h,
                [&](float &, float dp, float p, int, int e) { dot[e >> 1] += dp * p; });
        }
    });
    dot[0] = warp_sum<4>(dot[0]);
    dot[1] = warp_sum<4>(dot[1]);

    float acc[NK][4] = {};
    pipeline<MST>(
        nk, buf, TILE,
        [&](int c, float *b, int) {
            const int j0 = c * KT;
            stage_tile<HSP>(b, LD, v + (int64_t)j0 * a.ldv, a.ldv, T - j0, HS);
            if (dq) stage_tile<HSP>(b + KT * LD, LD, k + (int64_t)j0 * a.ldk, a.ldk, T - j0, HS);
        },
        land_nothing(),
        [&](int c, float *b) {
            if (!sees_tile(a, iw, c * KT)) return;
#pragma unroll 1
            for (int h = 0; h < NT; h += DN) {
                float dd[DN][4];
                dq_tiles<NK, PASSES, DN>(dd, f, b + 8 * h * LD, LD, att, keep, rows, s, T, iw,
                                         c * KT + 8 * h,
                                         [&](float &d, float dp, float p, int j, int e) {
                                             d = p * (dp - dot[e >> 1]); /* dS */
                                             if (ds && iw + c_row(e) < T && j < T)
                                                 ds[rows[e >> 1] + j] = d;
                                         });
                if (dq) acc_times_tile<NK, PASSES, DN>(acc, dd, b + KT * LD + 8 * h * LD, LD);
            }
        });
    if (dq) store_acc<NK>(dq + head_at(a, a.ldq), a.ldq, acc, a.scale, true, iw, T, HS);
}

/* dkv, per warp of 16 key rows from jw: dk += scale dS^T Q, dv += D^T dO (D = att keep s),
 * over the query tiles from i_lo (causal: the block's first key; before it every key of the
 * block is masked); dS and att read straight into A fragments (dS^T's (key, query) element
 * e at query t + 4 (e >> 1), key g + 8 (e & 1) of the 8 x 16 step), zeros where masked, a
 * tile ahead of their products.
 * Dynamic shared memory: MST tiles of Q and dO. */
template <int HSP, int PASSES>
static __global__ void __launch_bounds__(MW * 32, MMA_MIN_BLOCKS)
    mma_dkv(float *dk, float *dv, const float *ds, const float *dout, const float *att,
            const uint8_t *keep, const float *q, tt_attn_desc a, float s)
{
    constexpr int NK = HSP / 8, LDQ = mma_ldq(HSP), TILE = 2 * KT * LDQ;
    extern __shared__ __align__(128) unsigned char smem_mma[];
    float *buf = (float *)smem_mma;
    const int T = a.T, HS = a.HS, jw = warp_rows(), g = lane_g(), t = lane_t();
    const int i_lo = a.causal ? (int)blockIdx.x * block_rows() : 0;
    const int64_t bhTT = head_index(a) * T * T;
    q += head_at(a, a.ldq);
    dout += head_at(a, a.ldo);
    const int n = i_lo < T ? (T - i_lo + KT - 1) / KT : 0;
    float ka[NK][4] = {}, va[NK][4] = {};
    /* A's values of query tile c (dS^T, D^T; zeros where masked), a tile ahead: the next
     * tile's loads go out before this tile's products, and wait during them */
    float ns[KT / 8][4], nd[KT / 8][4];
    auto fetch = [&](int c) {
        const int t0 = i_lo + c * KT;
#pragma unroll
        for (int kk = 0; kk < KT / 8; kk++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = t0 + 8 * kk + a_col(e), j = jw + a_row(e);
                const bool in = i < T && j < T && !(a.causal && j > i);
                const int64_t at = bhTT + (int64_t)imin(i, T - 1) * T + imin(j, T - 1);
                ns[kk][e] = in && dk ? ds[at] : 0.0f;
                const float pe = in && dv ? att[at] : 0.0f;
                const bool kept = keep && dv ? keep[at] != 0 : true;
                nd[kk][e] = kept ? (keep ? pe * s : pe) : 0.0f;
            }
    };
    if (n > 0) fetch(0);
    pipeline<MST>(
        n, buf, TILE,
        [&](int c, float *b, int) {
            const int t0 = i_lo + c * KT;
            if (dk) stage_tile<HSP>(b, LDQ, q + (int64_t)t0 * a.ldq, a.ldq, T - t0, HS);
            if (dv)
                stage_tile<HSP>(b + KT * LDQ, LDQ, dout + (int64_t)t0 * a.ldo, a.ldo, T - t0, HS);
        },
        land_nothing(),
        [&](int c, float *b) {
            float xs[KT / 8][4], xd[KT / 8][4];
#pragma unroll
            for (int kk = 0; kk < KT / 8; kk++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    xs[kk][e] = ns[kk][e];
                    xd[kk][e] = nd[kk][e];
                }
            if (c + 1 < n) fetch(c + 1);
            /* causal: a tile whose queries all come before the warp's first key adds nothing */
            if (a.causal && i_lo + c * KT + KT - 1 < jw) return;
#pragma unroll
            for (int kk = 0; kk < KT / 8; kk++) {
                const float *bq = b + (8 * kk + t) * LDQ + g; /* Q's tile, then dO's */
                if (dk) acc_step<NK, PASSES>(ka, xs[kk], bq, 4 * LDQ);
                if (dv) acc_step<NK, PASSES>(va, xd[kk], bq + KT * LDQ, 4 * LDQ);
            }
        });
    if (dk) store_acc<NK>(dk + head_at(a, a.ldk), a.ldk, ka, a.scale, true, jw, T, HS);
    if (dv) store_acc<NK>(dv + head_at(a, a.ldv), a.ldv, va, 1.0f, true, jw, T, HS);
}

/* ---- launchers ------------------------------------------------------------------------------ */

/* warps a block: enough for T rows, at most MW */
static int block_warps(int T)
{
    return imin(MW, (T + MR - 1) / MR);
}

static dim3 mma_grid(const tt_attn_desc *a)
{
    const int rows = block_warps(a->T) * MR;
    return dim3((unsigned)((a->T + rows - 1) / rows), (unsigned)a->NH, (unsigned)a->B);
}

template <int HSP> static size_t rows_bytes(void)
{
    return (size_t)MST * 2 * KT * mma_ld(HSP) * sizeof(float);
}
template <int HSP> static size_t cols_bytes(void)
{
    return (size_t)MST * 2 * KT * mma_ldq(HSP) * sizeof(float);
}

template <int HSP, int PASSES>
static void forward(float *out, float *att, uint8_t *keep, const float *q, const float *k,
                    const float *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                    uint32_t thr, float s)
{
    static size_t allowed;
    allow_smem((const void *)mma_forward<HSP, PASSES>, &allowed, rows_bytes<HSP>(), a->T);
    mma_forward<HSP, PASSES><<<mma_grid(a), 32 * block_warps(a->T), rows_bytes<HSP>(),
                               (cudaStream_t)tt_cuda_stream()>>>(out, att, keep, q, k, v, pad, *a,
                                                                 at, tt_cuda_step_vary(), thr, s);
    TT_CUDA_CHECK(cudaGetLastError());
}

template <int HSP, int PASSES>
static void backward(float *dq, float *dk, float *dv, float *ds, const float *dout,
                     const float *att, const uint8_t *keep, const float *q, const float *k,
                     const float *v, const tt_attn_desc *a, float s)
{
    static size_t allowed, allowed_dkv;
    cudaStream_t st = (cudaStream_t)tt_cuda_stream();
    const unsigned threads = 32 * (unsigned)block_warps(a->T);
    if (dq || dk) {
        allow_smem((const void *)mma_dq<HSP, PASSES>, &allowed, rows_bytes<HSP>(), a->T);
        mma_dq<HSP, PASSES>
            <<<mma_grid(a), threads, rows_bytes<HSP>(), st>>>(dq, ds, dout, att, keep, k, v, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    if (dk || dv) {
        allow_smem((const void *)mma_dkv<HSP, PASSES>, &allowed_dkv, cols_bytes<HSP>(), a->T);
        mma_dkv<HSP, PASSES><<<mma_grid(a), threads, cols_bytes<HSP>(), st>>>(dk, dv, ds, dout, att,
                                                                              keep, q, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
}

template <int HSP, int PASSES> static void residency(const tt_attn_desc *a, int blocks[3])
{
    residency_of(blocks, (const void *)mma_forward<HSP, PASSES>, (const void *)mma_dq<HSP, PASSES>,
                 (const void *)mma_dkv<HSP, PASSES>, rows_bytes<HSP>(), cols_bytes<HSP>(),
                 32 * block_warps(a->T));
}

/* The head size rounded up to the kernels' HSP (16, 32, 64); 0 past 64: attention_tc.cu's. */
static int hsp_of(int HS)
{
    return HS <= 16 ? 16 : HS <= 32 ? 32 : HS <= 64 ? 64 : 0;
}

/* one of the six instantiations for (HSP, PASSES) */
#define MMA_DISPATCH(HSP_, PASSES_, CALL)                                                          \
    do {                                                                                           \
        if ((HSP_) == 16 && (PASSES_) == 1)                                                        \
            CALL(16, 1);                                                                           \
        else if ((HSP_) == 16)                                                                     \
            CALL(16, 3);                                                                           \
        else if ((HSP_) == 32 && (PASSES_) == 1)                                                   \
            CALL(32, 1);                                                                           \
        else if ((HSP_) == 32)                                                                     \
            CALL(32, 3);                                                                           \
        else if ((PASSES_) == 1)                                                                   \
            CALL(64, 1);                                                                           \
        else                                                                                       \
            CALL(64, 3);                                                                           \
    } while (0)

void tt_cuda_attention_mma_forward(float *out, float *att, uint8_t *keep, const float *q,
                                   const float *k, const float *v, const int32_t *pad,
                                   const tt_attn_desc *a, tt_rng at, uint32_t thr, float s,
                                   int passes)
{
    const int hsp = hsp_of(a->HS);
    if (!hsp) {
        tt_cuda_attention_tc_forward(out, att, keep, q, k, v, pad, a, at, thr, s, passes);
        return;
    }
#define FWD(H, P) forward<H, P>(out, att, keep, q, k, v, pad, a, at, thr, s)
    MMA_DISPATCH(hsp, passes, FWD);
#undef FWD
}

void tt_cuda_attention_mma_backward(float *dq, float *dk, float *dv, float *ds, const float *dout,
                                    const float *att, const uint8_t *keep, const float *q,
                                    const float *k, const float *v, const tt_attn_desc *a, float s,
                                    int passes)
{
    const int hsp = hsp_of(a->HS);
    if (!hsp) {
        tt_cuda_attention_tc_backward(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s, passes);
        return;
    }
#define BWD(H, P) backward<H, P>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s)
    MMA_DISPATCH(hsp, passes, BWD);
#undef BWD
}

void tt_cuda_attention_mma_residency(const tt_attn_desc *a, int blocks[3], int passes)
{
    const int hsp = hsp_of(a->HS);
    if (!hsp) {
        tt_cuda_attention_tc_residency(a, blocks, passes);
        return;
    }
#define RES(H, P) residency<H, P>(a, blocks)
    MMA_DISPATCH(hsp, passes, RES);
#undef RES
}

#endif
