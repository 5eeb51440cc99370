/* cuda/attention_tc.cu: the fused attention of attention.cu with its products on tensor cores
 * (float32 builds; wmma, TF32 m16n16k8): the same blocks of 32 rows of one head, the same
 * row passes (attention.cuh: softmax and dropout, dS), the same scratch; only Q K^T, P V,
 * dO V^T, dS K, dS^T Q and D^T dO change. A block's output tile is 32 x 64, one 16 x 16
 * fragment per warp, its chunks copied to shared memory by cp.async three chunks ahead of the
 * one multiplied (attention.cuh's pipeline; the first chunks of P V and dS K during the row
 * passes, dkv's two products one pipeline), at leading dimensions that make the fragment
 * loads miss no bank. passes 1 rounds both operands to TF32 (matmul_precision "high");
 * passes 3 splits each float32 x into hi = tf32(x) and lo = tf32(x - hi) and adds lo*hi +
 * hi*lo + hi*hi, about float32's accuracy. Fixed order everywhere, no atomics. */
#include "tensor/cuda/attention.cuh"

#ifndef TT_DOUBLE

#include <mma.h>

namespace wm = nvcuda::wmma;

/* KC of the inner dimension a chunk: a warp's 4 products of 16 x 16 x 8 (12 at 3xTF32) */
#define KC 32

/* Leading dimensions (floats) of the staged chunks, by how a fragment reads them: lane l takes
 * row l/4 and column l%4 of an 8 x 4 block, so a row-major A or col-major B wants ld = 4 mod
 * 32 (LD_K), a row-major B or col-major A ld = 8 mod 32 (LD_N for 64 columns, LD_W for 32). */
#define LD_K (KC + 4)   /* (rows, KC) chunks of Q, K, dO, V read along the head dimension */
#define LD_N (CT + 8)   /* (KC, CT) chunks of V, K, Q, dO read along the keys or queries */
#define LD_W (ROWS + 8) /* (KC, ROWS) chunks of dS or D, read transposed */
#define LD_OUT (CT + 4) /* (ROWS, CT) staging of an output tile */
/* One of a kernel's TC_STAGES staging buffers (attention.cuh's pipeline): the largest chunk, a
 * (KC, ROWS) and a (KC, CT); (ROWS + CT, LD_K) is smaller. After them, the output tile's
 * stage, OUT_TILE (store_out), then the score rows. Multiples of 8, so that each stays
 * 32-byte aligned, as wmma's loads and stores need. */
#define TC_TILE (KC * LD_W + KC * LD_N)
/* Four buffers: three chunks on their way while one is multiplied, as a chunk's products take
 * a warp a few instructions and its copies a round trip to memory (with base's T = 256 two
 * blocks of the forward kernel still fit an SM of an H100: 2 x 97 KiB) */
#define TC_STAGES 4
#define OUT_TILE (ROWS * LD_OUT)
static_assert((ROWS + CT) * LD_K <= TC_TILE && TC_TILE % 8 == 0 && OUT_TILE % 8 == 0,
              "attention_tc: the staging area");

typedef wm::fragment<wm::accumulator, 16, 16, 8, float> acc_t;
template <typename L> using frag_a = wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, L>;
template <typename L> using frag_b = wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, L>;

/* Row stride of the score rows: past the last CT tile (their stores write whole tiles), and 4
 * mod 32 (they are a row-major A). */
TT_HD static inline int rows_ld(int T)
{
    return round_up(T, CT) + 4;
}

/* dynamic shared memory: the forward and dq kernels', and dkv's (without score rows) */
static size_t rows_smem(int T)
{
    return (TC_STAGES * TC_TILE + OUT_TILE + (size_t)ROWS * rows_ld(T)) * sizeof(float);
}

static const size_t dkv_smem = (TC_STAGES * TC_TILE + OUT_TILE) * sizeof(float);

/* this warp's 16 x 16 fragment of the block's (ROWS, CT) output tile */
static __device__ __forceinline__ int warp_row(void)
{
    return 16 * ((int)threadIdx.x / 128);
}
static __device__ __forceinline__ int warp_col(void)
{
    return 16 * ((int)(threadIdx.x / 32) % 4);
}

template <typename F> static __device__ __forceinline__ void to_tf32(F &f)
{
#pragma unroll
    for (int e = 0; e < f.num_elements; e++)
        f.x[e] = wm::__float_to_tf32(f.x[e]);
}

/* hi = tf32(x), lo = tf32(x - hi); x - hi is exact in float32 */
template <typename F> static __device__ __forceinline__ void split(F &hi, F &lo)
{
#pragma unroll
    for (int e = 0; e < hi.num_elements; e++) {
        float x = hi.x[e], h = wm::__float_to_tf32(x);
        hi.x[e] = h;
        lo.x[e] = wm::__float_to_tf32(x - h);
    }
}

/* c += A B over one chunk of 8: A (16, 8) at a, B (8, 16) at b, in the layouts LA, LB */
template <int PASSES, typename LA, typename LB>
static __device__ __forceinline__ void mma8(acc_t &c, const float *a, unsigned lda, const float *b,
                                            unsigned ldb)
{
    frag_a<LA> ah;
    frag_b<LB> bh;
    wm::load_matrix_sync(ah, a, lda);
    wm::load_matrix_sync(bh, b, ldb);
    if (PASSES == 3) {
        frag_a<LA> al;
        frag_b<LB> bl;
        split(ah, al);
        split(bh, bl);
        wm::mma_sync(c, al, bh, c);
        wm::mma_sync(c, ah, bl, c);
    } else {
        to_tf32(ah);
        to_tf32(bh);
    }
    wm::mma_sync(c, ah, bh, c);
}

/* c times alpha into the score rows S (row stride lds) at column j0 */
static __device__ __forceinline__ void store_rows(float *S, int lds, acc_t &c, float alpha, int j0)
{
#pragma unroll
    for (int e = 0; e < c.num_elements; e++)
        c.x[e] *= alpha;
    wm::store_matrix_sync(S + warp_row() * lds + j0 + warp_col(), c, (unsigned)lds,
                          wm::mem_row_major);
}

/* dst[r ldd + col] = alpha c (add: +=) for r < nr, col < nc of the block's tile, through
 * stage (ROWS, LD_OUT), apart from the pipeline's buffers, whose next chunk may be on its way
 * (a fragment's element-to-lane map is opaque); coalesced stores */
static __device__ __forceinline__ void store_out(float *dst, int64_t ldd, acc_t &c, float *stage,
                                                 float alpha, bool add, int nr, int nc)
{
    __syncthreads(); /* the stage's last readers are done */
    wm::store_matrix_sync(stage + warp_row() * LD_OUT + warp_col(), c, LD_OUT, wm::mem_row_major);
    __syncthreads();
    for (int e = (int)threadIdx.x; e < ROWS * CT; e += THREADS) {
        int r = e / CT, col = e % CT;
        if (r >= nr || col >= nc) continue;
        float x = alpha * stage[r * LD_OUT + col];
        dst[r * ldd + col] = add ? dst[r * ldd + col] + x : x;
    }
}

/* S[r lds + j] = alpha (A B^T)[i0 + r, j] for ROWS rows and key tiles below kend: A, B (T, HS)
 * head blocks of row strides lda, ldb (Q K^T, dO V^T); chunk c is key tile c / nd, head columns
 * KC (c % nd) onwards, staged as (rows, KC) at LD_K. Where nd divides TC_STAGES, chunk c's
 * slot c % TC_STAGES always holds the same head columns, so A's chunk is staged in each slot
 * once, by the first chunk there. */
template <int PASSES>
static __device__ void scores(float *S, int lds, float alpha, float *tiles, const float *A,
                              int lda, const float *B, int ldb, int i0, int kend, int T, int HS)
{
    const int nd = (HS + KC - 1) / KC, n = (kend + CT - 1) / CT * nd;
    const int wr = warp_row(), wc = warp_col();
    acc_t acc;
    pipeline<TC_STAGES>(
        n, tiles, TC_TILE,
        [&](int c, float *b, int) {
            const int j0 = c / nd * CT, d0 = c % nd * KC;
            if (c < TC_STAGES || TC_STAGES % nd != 0) /* else the slot has this A chunk */
                copy_tile<ROWS, KC>(b, LD_K, A + (int64_t)i0 * lda + d0, lda, T - i0, HS - d0);
            copy_tile<CT, KC>(b + ROWS * LD_K, LD_K, B + (int64_t)j0 * ldb + d0, ldb, T - j0,
                              HS - d0);
        },
        land_nothing(),
        [&](int c, float *b) {
            const int j0 = c / nd * CT, d0 = c % nd * KC, kn = round_up(imin(KC, HS - d0), 8);
            if (d0 == 0) wm::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < kn; kk += 8) /* zeros past HS */
                mma8<PASSES, wm::row_major, wm::col_major>(acc, b + wr * LD_K + kk, LD_K,
                                                           b + (ROWS + wc) * LD_K + kk, LD_K);
            if (d0 + KC >= HS) store_rows(S, lds, acc, alpha, j0);
        });
}

/* rows_times's chunk c of M (T, HS), a head block of row stride ldm, over keys < kend, into
 * b: head columns CT (c / nk) onwards over keys KC (c % nk) onwards (nk = keys_chunks), staged
 * (KC, CT) at LD_N; n_chunks of them in all */
static __device__ __forceinline__ int keys_chunks(int kend)
{
    return (kend + KC - 1) / KC;
}

static __device__ __forceinline__ int n_chunks(int kend, int HS)
{
    return (HS + CT - 1) / CT * keys_chunks(kend);
}

static __device__ __forceinline__ void rows_stage(int c, float *b, const float *M, int ldm,
                                                  int kend, int HS)
{
    const int nk = keys_chunks(kend), d0 = c / nk * CT, j0 = c % nk * KC;
    copy_tile<KC, CT>(b, LD_N, M + (int64_t)j0 * ldm + d0, ldm, kend - j0, HS - d0);
}

/* rows_times's first chunks on their way (the buffers free), before the row passes */
static __device__ __forceinline__ void rows_prefetch(float *tiles, const float *M, int ldm,
                                                     int kend, int HS)
{
    pipeline_start<TC_STAGES>(n_chunks(kend, HS), tiles, TC_TILE, [&](int c, float *b, int) {
        rows_stage(c, b, M, ldm, kend, HS);
    });
}

/* dst = alpha W M (add: +=) for rows r < nr: W the block's score rows (row stride lds; finite,
 * zeros past the keys, up to kend rounded up to 8), M (P V, dS K) in rows_stage's chunks, their
 * pipeline started by rows_prefetch; out the output tile's stage */
template <int PASSES>
static __device__ void rows_times(float *dst, int64_t ldd, float alpha, bool add, int nr,
                                  float *tiles, float *out, const float *W, int lds,
                                  const float *M, int ldm, int kend, int HS)
{
    const int wr = warp_row(), wc = warp_col(), nk = keys_chunks(kend);
    acc_t acc;
    pipeline_run<TC_STAGES>(
        n_chunks(kend, HS), tiles, TC_TILE,
        [&](int c, float *b, int) { rows_stage(c, b, M, ldm, kend, HS); }, land_nothing(),
        [&](int c, float *b) {
            const int d0 = c / nk * CT, j0 = c % nk * KC, kn = round_up(imin(KC, kend - j0), 8);
            if (j0 == 0) wm::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < kn; kk += 8)
                mma8<PASSES, wm::row_major, wm::row_major>(acc, W + wr * lds + j0 + kk, lds,
                                                           b + kk * LD_N + wc, LD_N);
            if (j0 + KC >= kend) store_out(dst + d0, ldd, acc, out, alpha, add, nr, HS - d0);
        });
}

/* The products p[0] then p[1] (attention.cuh cols_prod, either's dst NULL: none) for ROWS
 * columns of W from j0, summed over rows i in [i_lo, T), as one pipeline: a product's chunk c
 * is head columns CT (c / nt) onwards over rows i_lo + KC (c % nt) onwards. W's chunk is
 * staged (KC, ROWS) as it lies and read as a col-major A: no transpose; the keep bytes of a
 * chunk on its way wait in its slot's kb. out: the output tile's stage. */
template <int PASSES>
static __device__ void cols_times(const cols_prod p[2], float s, float *tiles, float *out, int j0,
                                  int i_lo, int T, int HS)
{
    const int nt = (T - i_lo + KC - 1) / KC, per = (HS + CT - 1) / CT * nt;
    const int n0 = p[0].dst ? per : 0, n = n0 + (p[1].dst ? per : 0);
    const int wr = warp_row(), wc = warp_col();
    acc_t acc;
    uint32_t kb[TC_STAGES][KEEP_WORDS(KC, ROWS)]; /* by slot */
    pipeline<TC_STAGES>(
        n, tiles, TC_TILE,
        [&](int c, float *b, int slot) {
            int cc;
            const cols_prod q = prod_of(p, n0, c, &cc);
            const int d0 = cc / nt * CT, t0 = i_lo + cc % nt * KC;
            const int64_t w0 = (int64_t)t0 * T + j0;
            copy_kept_tile<KC, ROWS>(b, LD_W, q.W + w0, q.keep ? q.keep + w0 : NULL, kb[slot], T,
                                     T - t0, T - j0);
            copy_tile<KC, CT>(b + KC * LD_W, LD_N, q.M + (int64_t)t0 * q.ldm + d0, q.ldm, T - t0,
                              HS - d0);
        },
        [&](int c, float *b, int slot) {
            if (c >= n0 ? p[1].keep : p[0].keep) apply_keep<KC, ROWS>(b, LD_W, kb[slot], s);
        },
        [&](int c, float *b) {
            int cc;
            const cols_prod q = prod_of(p, n0, c, &cc);
            const int d0 = cc / nt * CT, t = cc % nt * KC, t0 = i_lo + t;
            const int kn = round_up(imin(KC, T - t0), 8);
            if (t == 0) wm::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < kn; kk += 8)
                mma8<PASSES, wm::col_major, wm::row_major>(acc, b + kk * LD_W + wr, LD_W,
                                                           b + KC * LD_W + kk * LD_N + wc, LD_N);
            if (t0 + KC >= T)
                store_out(q.dst + d0, q.ldd, acc, out, q.alpha, true, T - j0, HS - d0);
        });
}

/* forward_kernel of attention.cu on tensor cores; dynamic shared memory rows_smem(T) */
template <int PASSES>
static __global__ void __launch_bounds__(THREADS, 2)
    forward_kernel(float *out, float *att, uint8_t *keep, const float *q, const float *k,
                   const float *v, const int32_t *pad, tt_attn_desc a, tt_rng at,
                   const tt_cuda_vary *vary, uint32_t thr, float s)
{
    if (vary) at.counter += vary->rng_delta; /* a replayed step's cursor (cuda.h) */
    extern __shared__ __align__(128) unsigned char smem_tc[];
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0), lds = rows_ld(T);
    float *tiles = (float *)smem_tc, *stage = tiles + TC_STAGES * TC_TILE, *S = stage + OUT_TILE;
    const int64_t bh = head_index(a);
    q += head_at(a, a.ldq);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    scores<PASSES>(S, lds, a.scale, tiles, q, a.ldq, k, a.ldk, i0, kend, T, HS);
    __syncthreads(); /* a fragment spans the rows of four warps' row passes; buffers free */
    rows_prefetch(tiles, v, a.ldv, kend, HS); /* V on its way during the softmax */
    softmax_rows(S, lds, round_up(T, 8), att, keep, pad ? pad + (int64_t)blockIdx.z * T : NULL,
                 a.causal, at, thr, s, bh, T, i0, kend);
    rows_times<PASSES>(out + head_at(a, a.ldo) + (int64_t)i0 * a.ldo, a.ldo, 1, false, T - i0,
                       tiles, stage, S, lds, v, a.ldv, kend, HS);
}

/* dq_kernel of attention.cu on tensor cores */
template <int PASSES>
static __global__ void __launch_bounds__(THREADS, 2)
    dq_kernel(float *dq, float *ds, const float *dout, const float *att, const uint8_t *keep,
              const float *k, const float *v, tt_attn_desc a, float s)
{
    extern __shared__ __align__(128) unsigned char smem_tc[];
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0), lds = rows_ld(T);
    float *tiles = (float *)smem_tc, *stage = tiles + TC_STAGES * TC_TILE, *S = stage + OUT_TILE;
    const int64_t bh = head_index(a);
    dout += head_at(a, a.ldo);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    scores<PASSES>(S, lds, 1, tiles, dout, a.ldo, v, a.ldv, i0, kend, T, HS);
    __syncthreads();
    if (dq) rows_prefetch(tiles, k, a.ldk, kend, HS); /* K on its way during the dS rows */
    ds_rows(S, lds, round_up(T, 8), ds, att, keep, s, bh, T, i0, kend);
    if (!dq) return; /* the same for the whole block */
    rows_times<PASSES>(dq + head_at(a, a.ldq) + (int64_t)i0 * a.ldq, a.ldq, a.scale, true, T - i0,
                       tiles, stage, S, lds, k, a.ldk, kend, HS);
}

/* dkv_kernel of attention.cu on tensor cores; dynamic shared memory dkv_smem */
template <int PASSES>
static __global__ void __launch_bounds__(THREADS, 2)
    dkv_kernel(float *dk, float *dv, const float *ds, const float *dout, const float *att,
               const uint8_t *keep, const float *q, tt_attn_desc a, float s)
{
    extern __shared__ __align__(128) unsigned char smem_tc[];
    float *tiles = (float *)smem_tc, *stage = tiles + TC_STAGES * TC_TILE;
    const int j0 = row0();
    cols_prod p[2];
    dkv_products(p, dk, dv, ds, dout, att, keep, q, a, j0);
    cols_times<PASSES>(p, s, tiles, stage, j0, a.causal ? j0 : 0, a.T, a.HS);
}

template <int PASSES>
static void forward(float *out, float *att, uint8_t *keep, const float *q, const float *k,
                    const float *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                    uint32_t thr, float s)
{
    static size_t allowed;
    allow_smem((const void *)forward_kernel<PASSES>, &allowed, rows_smem(a->T), a->T);
    forward_kernel<PASSES>
        <<<grid_of(a), THREADS, rows_smem(a->T), (cudaStream_t)tt_cuda_stream()>>>(
            out, att, keep, q, k, v, pad, *a, at, tt_cuda_step_vary(), thr, s);
    TT_CUDA_CHECK(cudaGetLastError());
}

template <int PASSES>
static void backward(float *dq, float *dk, float *dv, float *ds, const float *dout,
                     const float *att, const uint8_t *keep, const float *q, const float *k,
                     const float *v, const tt_attn_desc *a, float s)
{
    static size_t allowed, allowed_dkv;
    cudaStream_t st = (cudaStream_t)tt_cuda_stream();
    if (dq || dk) {
        allow_smem((const void *)dq_kernel<PASSES>, &allowed, rows_smem(a->T), a->T);
        dq_kernel<PASSES>
            <<<grid_of(a), THREADS, rows_smem(a->T), st>>>(dq, ds, dout, att, keep, k, v, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    if (dk || dv) {
        allow_smem((const void *)dkv_kernel<PASSES>, &allowed_dkv, dkv_smem, a->T);
        dkv_kernel<PASSES>
            <<<grid_of(a), THREADS, dkv_smem, st>>>(dk, dv, ds, dout, att, keep, q, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
}

void tt_cuda_attention_tc_forward(float *out, float *att, uint8_t *keep, const float *q,
                                  const float *k, const float *v, const int32_t *pad,
                                  const tt_attn_desc *a, tt_rng at, uint32_t thr, float s,
                                  int passes)
{
    if (passes == 1)
        forward<1>(out, att, keep, q, k, v, pad, a, at, thr, s);
    else
        forward<3>(out, att, keep, q, k, v, pad, a, at, thr, s);
}

template <int PASSES> static void residency(const tt_attn_desc *a, int blocks[3])
{
    residency_of(blocks, (const void *)forward_kernel<PASSES>, (const void *)dq_kernel<PASSES>,
                 (const void *)dkv_kernel<PASSES>, rows_smem(a->T), dkv_smem);
}

void tt_cuda_attention_tc_residency(const tt_attn_desc *a, int blocks[3], int passes)
{
    if (passes == 1)
        residency<1>(a, blocks);
    else
        residency<3>(a, blocks);
}

void tt_cuda_attention_tc_backward(float *dq, float *dk, float *dv, float *ds, const float *dout,
                                   const float *att, const uint8_t *keep, const float *q,
                                   const float *k, const float *v, const tt_attn_desc *a, float s,
                                   int passes)
{
    if (passes == 1)
        backward<1>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s);
    else
        backward<3>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s);
}

#else /* float64: the float cores only (tt_cuda_attention_set_math keeps them) */

void tt_cuda_attention_tc_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                                  const real *v, const int32_t *pad, const tt_attn_desc *a,
                                  tt_rng at, uint32_t thr, real s, int passes)
{
    (void)out, (void)att, (void)keep, (void)q, (void)k, (void)v, (void)pad, (void)a, (void)at;
    (void)thr, (void)s, (void)passes;
    TT_ASSERT_MSG(false, "attention: no tensor-core kernels in a float64 build");
}

void tt_cuda_attention_tc_residency(const tt_attn_desc *a, int blocks[3], int passes)
{
    (void)a, (void)blocks, (void)passes;
    TT_ASSERT_MSG(false, "attention: no tensor-core kernels in a float64 build");
}

void tt_cuda_attention_tc_backward(real *dq, real *dk, real *dv, real *ds, const real *dout,
                                   const real *att, const uint8_t *keep, const real *q,
                                   const real *k, const real *v, const tt_attn_desc *a, real s,
                                   int passes)
{
    (void)dq, (void)dk, (void)dv, (void)ds, (void)dout, (void)att, (void)keep, (void)q, (void)k;
    (void)v, (void)a, (void)s, (void)passes;
    TT_ASSERT_MSG(false, "attention: no tensor-core kernels in a float64 build");
}

#endif
