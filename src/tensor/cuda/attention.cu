/* cuda/attention.cu: fused scaled dot-product attention, the math of cpu/attention.c per (b, h):
 *   S = scale Q K^T masked to -inf, P = softmax(S) (all-masked row: 0)   saved: att = P, keep
 *   O = D V, D = P keep / (1-p);  backward: dP = dO V^T keep / (1-p), dS = P (dP - rowsum(dP P)),
 *   dQ += scale dS K, dK += scale dS^T Q, dV += D^T dO.
 * A block owns 32 rows of one head: query rows in forward_kernel and dq_kernel, which keep
 * their (32, T) score rows in shared memory; key rows in dkv_kernel, which reads the dS that
 * dq_kernel left in the scratch. Every product gives a (32, 64) tile as a 4 x 2 register tile
 * per thread over shared tiles; every sum runs in a fixed order, and there are no atomics.
 * These are the float-core kernels: a warp computes a 16 x 16 square of a tile, reading
 * 16-byte vectors. Their operands are staged in shared memory a chunk at a time through a
 * ring of buffers (attention.cuh's pipeline), in one of two ways (template argument ASYNC):
 * loaded and stored by the threads between one chunk's products and the next, two buffers
 * (TT_CUDA_ATTN_WIDE), or copied by cp.async while the chunks before are multiplied, three
 * buffers, the first chunks of P V and dS K on their way during the row passes, dkv's two
 * products one pipeline (TT_CUDA_ATTN_PIPE). The sums are the same either way. attention_tc.cu
 * has the same three kernels on tensor cores; the launchers here pick one by
 * tt_cuda_attention_set_math (cuda.h). */
#include "tensor/cuda/attention.cuh"

/* ---- the products -----------------------------------------------------------------------------
 * A block's (ROWS, CT) output tile: warp w has rows 16 (w / 4) .. +15 and columns 16 (w % 4)
 * .. +15, a lane (rg, cg) = (lane / 8, lane % 8) a 4 x 2 register tile acc[a][c] at rows
 * rg + 4a (SPREAD) or 4 rg + a (PACKED) and columns cg + 8c (SPREAD) or 2 cg + c (PAIRED):
 * rows SPREAD for operands read along the inner dimension from (row, k) chunks with a row
 * stride of 4 mod 32 reals, PACKED for one 16-byte read from a (k, row) chunk; columns SPREAD,
 * or PAIRED for one 8-byte read. Each warp reads 16-byte vectors, so that a multiply-add costs
 * a third of the shared-memory traffic of a warp over 4 whole rows. */
#define CW 2
enum tile_rows { ROWS_SPREAD, ROWS_PACKED };
enum tile_cols { COLS_SPREAD, COLS_PAIRED };

template <tile_rows L> static __device__ __forceinline__ int acc_row(int a)
{
    const int lane = (int)(threadIdx.x % 32), w16 = 16 * (int)(threadIdx.x / 128);
    return L == ROWS_SPREAD ? w16 + lane / 8 + 4 * a : w16 + 4 * (lane / 8) + a;
}

template <tile_cols L> static __device__ __forceinline__ int acc_col(int c)
{
    const int lane = (int)(threadIdx.x % 32), w16 = 16 * (int)(threadIdx.x / 32 % 4);
    return L == COLS_SPREAD ? w16 + lane % 8 + 8 * c : w16 + 2 * (lane % 8) + c;
}

static __device__ __forceinline__ void zero_acc(real acc[RW][CW])
{
#pragma unroll
    for (int a = 0; a < RW; a++)
#pragma unroll
        for (int c = 0; c < CW; c++) acc[a][c] = R(0);
}

/* dst[r ldd + col] = alpha acc (add: +=) for this thread's rows r < nr and columns col < nc */
template <tile_rows RL, tile_cols CL>
static __device__ void store_tile(real *dst, int64_t ldd, const real acc[RW][CW], real alpha,
                                  bool add, int nr, int nc)
{
#pragma unroll
    for (int a = 0; a < RW; a++)
#pragma unroll
        for (int c = 0; c < CW; c++) {
            int r = acc_row<RL>(a), col = acc_col<CL>(c);
            if (r >= nr || col >= nc) continue;
            real x = alpha * acc[a][c];
            dst[r * ldd + col] = add ? dst[r * ldd + col] + x : x;
        }
}

/* A chunk stages WKC of the inner dimension: (rows, WKC) chunks at row stride WLD, 16-byte
 * rows 4 banks apart. STAGE_REALS is one staging buffer of the forward and dq kernels (A and B
 * of a product of rows; the (WKC, CT) chunk of the score rows' products fits in it), DKV_REALS
 * one of dkv's; each kernel has stages() of them (pipeline). The forward and dq kernels' score
 * rows follow their buffers. */
#define WKC 64
#define WLD (WKC + 4)
/* Buffers a pipeline has (attention.cuh): staged by cp.async (ASYNC), three in float32, so
 * that two chunks are on their way while one is multiplied (with base's T = 256 two blocks of
 * the forward kernel still fit an SM of an H100: 2 x 111 KiB); two in float64, whose checks
 * need no speed and whose buffers are twice the size; the threads' staging, two: its loads
 * are waited for where they are issued, so buffers further ahead would hold nothing. */
template <bool ASYNC> TT_HD constexpr int stages(void)
{
    return ASYNC && sizeof(real) == 4 ? 3 : 2;
}
#define STAGE_REALS ((ROWS + CT) * WLD)
#define DKV_REALS (WKC * (ROWS + CT))
static_assert(WKC * CT <= STAGE_REALS && STAGE_REALS % 4 == 0 && DKV_REALS % 4 == 0,
              "a buffer holds its products' chunks, and what follows it stays aligned");

/* d[0..N) = p[0..N) (N 2 or 4), p aligned to the vector's size, 16 bytes at most: one or two
 * vector loads on the GPU */
template <int N> static __device__ __forceinline__ void ldv(real d[N], const real *p)
{
#if defined(__CUDA_ARCH__) && !defined(TT_DOUBLE)
    if constexpr (N == 4) {
        float4 v = *(const float4 *)p;
        d[0] = v.x, d[1] = v.y, d[2] = v.z, d[3] = v.w;
    } else {
        float2 v = *(const float2 *)p;
        d[0] = v.x, d[1] = v.y;
    }
#elif defined(__CUDA_ARCH__)
#pragma unroll
    for (int k = 0; k < N; k += 2) {
        double2 v = *(const double2 *)(p + k);
        d[k] = v.x, d[k + 1] = v.y;
    }
#else /* the emulator: the alignment the GPU's vector loads need */
    const size_t align = N * sizeof(real) < 16 ? N * sizeof(real) : 16;
    TT_ASSERT_MSG((uintptr_t)p % align == 0, "ldv<%d>: %p not %zu-byte aligned", N,
                  (const void *)p, align);
    for (int k = 0; k < N; k++) d[k] = p[k];
#endif
}

/* acc += A B^T over kn (a multiple of 4) of a chunk: A (ROWS, WLD), B (CT, WLD), both read
 * along k (Q K^T, dO V^T) */
static __device__ __forceinline__ void rows_rows_mac(real acc[RW][CW], const real *As,
                                                     const real *Bs, int kn)
{
    for (int kk = 0; kk < kn; kk += 4) {
        real x[RW][4], y[CW][4];
#pragma unroll
        for (int a = 0; a < RW; a++) ldv<4>(x[a], As + acc_row<ROWS_SPREAD>(a) * WLD + kk);
#pragma unroll
        for (int c = 0; c < CW; c++) ldv<4>(y[c], Bs + acc_col<COLS_SPREAD>(c) * WLD + kk);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int a = 0; a < RW; a++)
#pragma unroll
                for (int c = 0; c < CW; c++) acc[a][c] += x[a][u] * y[c][u];
    }
}

/* acc += W M over kn (a multiple of 4) keys: W the score rows from this chunk's first key
 * (row stride lds, 4 mod 32), M the chunk (WKC, CT) (P V, dS K) */
static __device__ __forceinline__ void smem_rows_mac(real acc[RW][CW], const real *W, int lds,
                                                     const real *Ms, int kn)
{
    for (int kk = 0; kk < kn; kk += 4) {
        real x[RW][4];
#pragma unroll
        for (int a = 0; a < RW; a++) ldv<4>(x[a], W + acc_row<ROWS_SPREAD>(a) * lds + kk);
#pragma unroll
        for (int u = 0; u < 4; u++) {
            real y[CW];
            ldv<CW>(y, Ms + (kk + u) * CT + acc_col<COLS_PAIRED>(0));
#pragma unroll
            for (int a = 0; a < RW; a++)
#pragma unroll
                for (int c = 0; c < CW; c++) acc[a][c] += x[a][u] * y[c];
        }
    }
}

/* acc += W^T M over kn rows of a chunk: W (WKC, ROWS) as it lies (row t, column j), M (WKC,
 * CT) (dS^T Q, D^T dO) */
static __device__ __forceinline__ void cols_mac(real acc[RW][CW], const real *Ws, const real *Ms,
                                                int kn)
{
    for (int kk = 0; kk < kn; kk++) {
        real x[RW], y[CW];
        ldv<RW>(x, Ws + kk * ROWS + acc_row<ROWS_PACKED>(0));
        ldv<CW>(y, Ms + kk * CT + acc_col<COLS_PAIRED>(0));
#pragma unroll
        for (int a = 0; a < RW; a++)
#pragma unroll
            for (int c = 0; c < CW; c++) acc[a][c] += x[a] * y[c];
    }
}

/* A chunk's staging, with keep (NULL: none) D = src keep s: ASYNC (TT_CUDA_ATTN_PIPE) through
 * cp.async, in while the chunks before are used, keep's bytes waiting in kb for apply_keep
 * once it lands; else (TT_CUDA_ATTN_WIDE) loaded and stored by the threads, kept() applied,
 * in place when it returns */
template <bool ASYNC, int NR, int NC>
static __device__ __forceinline__ void stage_tile(real *dst, int ldt, const real *src,
                                                  const uint8_t *keep, uint32_t *kb, real s,
                                                  int64_t lds, int nr, int nc)
{
    if (ASYNC) copy_kept_tile<NR, NC>(dst, ldt, src, keep, kb, lds, nr, nc);
    else load_tile<NR, NC>(dst, ldt, src, keep, s, lds, nr, nc);
}

/* S[r lds + j] = alpha (A B^T)[i0 + r, j] for ROWS rows and keys j < kend: A, B (T, HS) head
 * blocks of row strides lda, ldb (Q K^T, dO V^T); chunk c is key tile c / nd, head columns
 * WKC (c % nd) onwards. With one chunk of head columns (nd 1, HS <= WKC) A's chunk is the same
 * for every key tile: ASYNC stages it in each buffer once, by the first chunk in each (the
 * threads' staging does it every time: skipping it cost forward_kernel a spill, ptxas sm_90). */
template <bool ASYNC>
static __device__ void scores(real *S, int lds, real alpha, real *tiles, const real *A, int lda,
                              const real *B, int ldb, int i0, int kend, int T, int HS)
{
    constexpr int NST = stages<ASYNC>();
    const int nd = (HS + WKC - 1) / WKC, n = (kend + CT - 1) / CT * nd;
    real acc[RW][CW];
    pipeline<NST>(
        n, tiles, STAGE_REALS,
        [&](int c, real *b, int) {
            const int j0 = c / nd * CT, d0 = c % nd * WKC;
            if (!ASYNC || nd > 1 || c < NST)
                stage_tile<ASYNC, ROWS, WKC>(b, WLD, A + (int64_t)i0 * lda + d0, NULL, NULL, R(1),
                                             lda, T - i0, HS - d0);
            stage_tile<ASYNC, CT, WKC>(b + ROWS * WLD, WLD, B + (int64_t)j0 * ldb + d0, NULL,
                                       NULL, R(1), ldb, T - j0, HS - d0);
        },
        land_nothing(),
        [&](int c, real *b) {
            const int j0 = c / nd * CT, d0 = c % nd * WKC;
            if (d0 == 0) zero_acc(acc);
            rows_rows_mac(acc, b, b + ROWS * WLD, round_up(imin(WKC, HS - d0), 4)); /* 0s past HS */
            if (d0 + WKC >= HS)
                store_tile<ROWS_SPREAD, COLS_SPREAD>(S + j0, lds, acc, alpha, false, ROWS,
                                                     kend - j0);
        });
}

/* rows_times's chunk c of M (T, HS), a head block of row stride ldm, over keys < kend, into
 * b: head columns CT (c / nk) onwards over keys WKC (c % nk) onwards (nk = keys_chunks) */
static __device__ __forceinline__ int keys_chunks(int kend)
{
    return (kend + WKC - 1) / WKC;
}

template <bool ASYNC>
static __device__ __forceinline__ void rows_stage(int c, real *b, const real *M, int ldm,
                                                  int kend, int HS)
{
    const int nk = keys_chunks(kend), d0 = c / nk * CT, j0 = c % nk * WKC;
    stage_tile<ASYNC, WKC, CT>(b, CT, M + (int64_t)j0 * ldm + d0, NULL, NULL, R(1), ldm,
                               kend - j0, HS - d0);
}

/* rows_times's first chunks on their way, the buffers free: a kernel calls it before the row
 * passes that make rows_times's W, so that M comes in meanwhile */
template <bool ASYNC>
static __device__ __forceinline__ void rows_prefetch(real *tiles, const real *M, int ldm,
                                                     int kend, int HS)
{
    pipeline_start<stages<ASYNC>()>(
        (HS + CT - 1) / CT * keys_chunks(kend), tiles, STAGE_REALS,
        [&](int c, real *b, int) { rows_stage<ASYNC>(c, b, M, ldm, kend, HS); });
}

/* dst = alpha W M (add: +=) for rows r < nr: W the block's score rows (row stride lds, zeros
 * from kend to a multiple of 4), M (T, HS) a head block of row stride ldm (P V, dS K), in
 * rows_stage's chunks; started: rows_prefetch has issued the first (then the first barrier
 * of the pipeline also waits for the row passes' writes to W), else the threads' staging */
template <bool ASYNC>
static __device__ void rows_times(real *dst, int64_t ldd, real alpha, bool add, int nr,
                                  real *tiles, const real *W, int lds, const real *M, int ldm,
                                  int kend, int HS)
{
    constexpr int NST = stages<ASYNC>();
    const int nk = keys_chunks(kend), n = (HS + CT - 1) / CT * nk;
    real acc[RW][CW];
    auto stage = [&](int c, real *b, int) { rows_stage<ASYNC>(c, b, M, ldm, kend, HS); };
    if (!ASYNC) {
        __syncthreads(); /* the row passes' W; the buffers' readers are done */
        pipeline_start<NST>(n, tiles, STAGE_REALS, stage);
    }
    pipeline_run<NST>(n, tiles, STAGE_REALS, stage, land_nothing(), [&](int c, real *b) {
        const int d0 = c / nk * CT, j0 = c % nk * WKC;
        if (j0 == 0) zero_acc(acc);
        smem_rows_mac(acc, W + j0, lds, b, round_up(imin(WKC, kend - j0), 4));
        if (j0 + WKC >= kend)
            store_tile<ROWS_SPREAD, COLS_PAIRED>(dst + d0, ldd, acc, alpha, add, nr, HS - d0);
    });
}

/* The products p[0] then p[1] (attention.cuh cols_prod, either's dst NULL: none) for ROWS
 * columns of W from j0, summed over rows i in [i_lo, T), as one pipeline: a product's chunk c
 * is head columns CT (c / nt) onwards over rows i_lo + WKC (c % nt) onwards. ASYNC: the keep
 * bytes of a chunk on its way wait in its slot's kb until it is in. */
template <bool ASYNC>
static __device__ void cols_times(const cols_prod p[2], real s, real *tiles, int j0, int i_lo,
                                  int T, int HS)
{
    constexpr int NST = stages<ASYNC>();
    const int nt = (T - i_lo + WKC - 1) / WKC, per = (HS + CT - 1) / CT * nt;
    const int n0 = p[0].dst ? per : 0, n = n0 + (p[1].dst ? per : 0);
    real acc[RW][CW];
    uint32_t kb[NST][KEEP_WORDS(WKC, ROWS)]; /* by slot */
    pipeline<NST>(
        n, tiles, DKV_REALS,
        [&](int c, real *b, int slot) {
            int cc;
            const cols_prod q = prod_of(p, n0, c, &cc);
            const int d0 = cc / nt * CT, t0 = i_lo + cc % nt * WKC;
            const int64_t w0 = (int64_t)t0 * T + j0;
            stage_tile<ASYNC, WKC, ROWS>(b, ROWS, q.W + w0, q.keep ? q.keep + w0 : NULL, kb[slot],
                                         s, T, T - t0, T - j0);
            stage_tile<ASYNC, WKC, CT>(b + WKC * ROWS, CT, q.M + (int64_t)t0 * q.ldm + d0, NULL,
                                       NULL, R(1), q.ldm, T - t0, HS - d0);
        },
        [&](int c, real *b, int slot) {
            if (ASYNC && (c >= n0 ? p[1].keep : p[0].keep))
                apply_keep<WKC, ROWS>(b, ROWS, kb[slot], s);
        },
        [&](int c, real *b) {
            int cc;
            const cols_prod q = prod_of(p, n0, c, &cc);
            const int d0 = cc / nt * CT, t = cc % nt * WKC, t0 = i_lo + t;
            if (t == 0) zero_acc(acc);
            cols_mac(acc, b, b + WKC * ROWS, imin(WKC, T - t0));
            if (t0 + WKC >= T)
                store_tile<ROWS_PACKED, COLS_PAIRED>(q.dst + d0, q.ldd, acc, q.alpha, true,
                                                     T - j0, HS - d0);
        });
}

/* ---- the kernels --------------------------------------------------------------------------
 * The score rows' stride: 4 mod 32 reals past a multiple of 4 (zeros after T), so that
 * smem_rows_mac's 16-byte reads of 4 rows miss each other's banks. */
TT_HD static inline int score_stride(int T)
{
    return round_up(T, 32) + 4;
}

/* out (B,T,ldo): O; att (B,NH,T,T): P; keep (B,NH,T,T) or NULL (no dropout); q, k, v
 * (B,T,ld*) read at head h's columns; pad (B,T) or NULL. Block (row tile, h, b); dynamic
 * shared memory rows_smem: the staging buffers and ROWS score rows. */
template <bool ASYNC>
static __global__ void __launch_bounds__(THREADS, 2)
    forward_kernel(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                   const real *v, const int32_t *pad, tt_attn_desc a, tt_rng at,
                   const tt_cuda_vary *vary, uint32_t thr, real s)
{
    if (vary) at.counter += vary->rng_delta; /* a replayed step's cursor (cuda.h) */
    extern __shared__ __align__(16) unsigned char smem[];
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0), lds = score_stride(T);
    real *tiles = (real *)smem, *S = tiles + stages<ASYNC>() * STAGE_REALS;
    const int64_t bh = head_index(a);
    q += head_at(a, a.ldq);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    scores<ASYNC>(S, lds, a.scale, tiles, q, a.ldq, k, a.ldk, i0, kend, T, HS);
    __syncthreads(); /* a warp's score rows came from other warps; the buffers are free */
    if (ASYNC) rows_prefetch<ASYNC>(tiles, v, a.ldv, kend, HS); /* in during the softmax */
    softmax_rows(S, lds, round_up(T, 4), att, keep, pad ? pad + (int64_t)blockIdx.z * T : NULL,
                 a.causal, at, thr, s, bh, T, i0, kend);
    rows_times<ASYNC>(out + head_at(a, a.ldo) + (int64_t)i0 * a.ldo, a.ldo, R(1), false, T - i0,
                      tiles, S, lds, v, a.ldv, kend, HS);
}

/* dq (B,T,ldq) += scale dS K, or NULL; ds (B,NH,T,T) = dS for dkv_kernel, or NULL; dout
 * (B,T,ldo); att, keep (B,NH,T,T) saved (keep NULL: no dropout); k, v (B,T,ld*). Block (row
 * tile, h, b), dynamic shared memory as forward_kernel's. */
template <bool ASYNC>
static __global__ void __launch_bounds__(THREADS, 2)
    dq_kernel(real *dq, real *ds, const real *dout, const real *att, const uint8_t *keep,
              const real *k, const real *v, tt_attn_desc a, real s)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0), lds = score_stride(T);
    real *tiles = (real *)smem, *S = tiles + stages<ASYNC>() * STAGE_REALS;
    const int64_t bh = head_index(a);
    dout += head_at(a, a.ldo);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    scores<ASYNC>(S, lds, R(1), tiles, dout, a.ldo, v, a.ldv, i0, kend, T, HS);
    __syncthreads(); /* as in forward_kernel */
    if (ASYNC && dq) rows_prefetch<ASYNC>(tiles, k, a.ldk, kend, HS); /* in during dS */
    ds_rows(S, lds, round_up(T, 4), ds, att, keep, s, bh, T, i0, kend);
    if (!dq) return; /* the same for the whole block */
    rows_times<ASYNC>(dq + head_at(a, a.ldq) + (int64_t)i0 * a.ldq, a.ldq, a.scale, true, T - i0,
                      tiles, S, lds, k, a.ldk, kend, HS);
}

/* dk (B,T,ldk) += scale dS^T Q and dv (B,T,ldv) += D^T dO, either NULL; ds (B,NH,T,T) from
 * dq_kernel (read when dk); att, keep (B,NH,T,T) saved; q (B,T,ldq), dout (B,T,ldo). Block
 * (key tile, h, b): its ROWS keys, summing over the queries i in order; causal: only i >= j
 * have P != 0, so the sums start at the tile's first key. Dynamic shared memory dkv_smem. */
template <bool ASYNC>
static __global__ void __launch_bounds__(THREADS, 2)
    dkv_kernel(real *dk, real *dv, const real *ds, const real *dout, const real *att,
               const uint8_t *keep, const real *q, tt_attn_desc a, real s)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int j0 = row0();
    cols_prod p[2];
    dkv_products(p, dk, dv, ds, dout, att, keep, q, a, j0);
    cols_times<ASYNC>(p, s, (real *)smem, j0, a.causal ? j0 : 0, a.T, a.HS);
}

/* Which kernels run: set_matmul_precision picks (backend.cu; every run calls it at start, and
 * before that this is its pick at highest, the default precision: the float cores with
 * cp.async staging), tests and bench_attention force one. float64 builds have only the float
 * cores, with either staging. */
static tt_cuda_attn_math math_mode = TT_CUDA_ATTN_PIPE;

void tt_cuda_attention_set_math(tt_cuda_attn_math m)
{
#ifdef TT_DOUBLE
    if (m != TT_CUDA_ATTN_PIPE) m = TT_CUDA_ATTN_WIDE;
#endif
    math_mode = m;
}

tt_cuda_attn_math tt_cuda_attention_math(void) { return math_mode; }

static int tc_passes(void)
{
    return math_mode == TT_CUDA_ATTN_TF32 || math_mode == TT_CUDA_ATTN_MMA ? 1 : 3;
}

#ifndef TT_DOUBLE
static bool mma_math(void)
{
    return math_mode == TT_CUDA_ATTN_MMA || math_mode == TT_CUDA_ATTN_MMA3;
}
#endif

/* dynamic shared memory of forward_kernel and dq_kernel: the buffers and ROWS score rows */
template <bool ASYNC> static size_t rows_smem(int T)
{
    return (stages<ASYNC>() * STAGE_REALS + (size_t)ROWS * (size_t)score_stride(T)) *
           sizeof(real);
}

/* of dkv_kernel: the buffers (24 KiB each in float32, 48 KiB in float64) */
template <bool ASYNC> static size_t dkv_smem(void)
{
    return stages<ASYNC>() * DKV_REALS * sizeof(real);
}

template <bool ASYNC>
static void forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                    const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                    uint32_t thr, real s)
{
    static size_t allowed;
    const size_t bytes = rows_smem<ASYNC>(a->T);
    allow_smem((const void *)forward_kernel<ASYNC>, &allowed, bytes, a->T);
    forward_kernel<ASYNC><<<grid_of(a), THREADS, bytes, (cudaStream_t)tt_cuda_stream()>>>(
        out, att, keep, q, k, v, pad, *a, at, tt_cuda_step_vary(), thr, s);
    TT_CUDA_CHECK(cudaGetLastError());
}

void tt_cuda_attention_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                               const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                               real *scratch)
{
    (void)scratch; /* none needed: attention_scratch says 0 */
    check_desc(a);
    if (a->B == 0) return;
    /* keep (not p) says whether to drop, as on the CPU; the threshold is philox.h's */
    uint32_t thr = keep ? tt_philox_keep_threshold((double)a->p) : 0;
    real s = keep ? R(1) / (R(1) - a->p) : R(1);
    if (math_mode == TT_CUDA_ATTN_WIDE) forward<false>(out, att, keep, q, k, v, pad, a, at, thr, s);
    else if (math_mode == TT_CUDA_ATTN_PIPE)
        forward<true>(out, att, keep, q, k, v, pad, a, at, thr, s);
#ifndef TT_DOUBLE /* float64 builds have no mma.sync kernels (set_math never picks them) */
    else if (mma_math())
        tt_cuda_attention_mma_forward(out, att, keep, q, k, v, pad, a, at, thr, s, tc_passes());
#endif
    else tt_cuda_attention_tc_forward(out, att, keep, q, k, v, pad, a, at, thr, s, tc_passes());
}

/* dq_kernel runs when dq or dk is wanted (dk needs its dS, in the scratch), then dkv_kernel
 * when dk or dv is. */
template <bool ASYNC>
static void backward(real *dq, real *dk, real *dv, real *ds, const real *dout, const real *att,
                     const uint8_t *keep, const real *q, const real *k, const real *v,
                     const tt_attn_desc *a, real s)
{
    static size_t allowed, allowed_dkv;
    cudaStream_t st = (cudaStream_t)tt_cuda_stream();
    const size_t rows = rows_smem<ASYNC>(a->T), cols = dkv_smem<ASYNC>();
    if (dq || dk) {
        allow_smem((const void *)dq_kernel<ASYNC>, &allowed, rows, a->T);
        dq_kernel<ASYNC><<<grid_of(a), THREADS, rows, st>>>(dq, ds, dout, att, keep, k, v, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    if (dk || dv) {
        allow_smem((const void *)dkv_kernel<ASYNC>, &allowed_dkv, cols, a->T);
        dkv_kernel<ASYNC><<<grid_of(a), THREADS, cols, st>>>(dk, dv, ds, dout, att, keep, q, *a,
                                                             s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
}

void tt_cuda_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                                const uint8_t *keep, const real *q, const real *k, const real *v,
                                const tt_attn_desc *a, real *scratch)
{
    check_desc(a);
    if (a->B == 0 || (!dq && !dk && !dv)) return;
    if (a->fresh) { /* the kernels add: the heads' columns of each gradient start at zero */
        const size_t width = (size_t)a->NH * a->HS * sizeof(real), rows = (size_t)a->B * a->T;
        const int ld[3] = {a->ldq, a->ldk, a->ldv};
        real *d[3] = {dq, dk, dv};
        for (int t = 0; t < 3; t++)
            if (d[t])
                TT_CUDA_CHECK(cudaMemset2DAsync(d[t], (size_t)ld[t] * sizeof(real), 0, width,
                                                rows, (cudaStream_t)tt_cuda_stream()));
    }
    real s = keep ? R(1) / (R(1) - a->p) : R(1);
    real *ds = dk ? scratch : NULL;
    TT_ASSERT_MSG(!dk || scratch, "attention backward: dk needs the scratch (attention_scratch)");
    if (math_mode == TT_CUDA_ATTN_WIDE)
        backward<false>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s);
    else if (math_mode == TT_CUDA_ATTN_PIPE)
        backward<true>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s);
#ifndef TT_DOUBLE
    else if (mma_math())
        tt_cuda_attention_mma_backward(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s,
                                       tc_passes());
#endif
    else
        tt_cuda_attention_tc_backward(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s,
                                      tc_passes());
}

template <bool ASYNC> static void residency(const tt_attn_desc *a, int blocks[3])
{
    residency_of(blocks, (const void *)forward_kernel<ASYNC>, (const void *)dq_kernel<ASYNC>,
                 (const void *)dkv_kernel<ASYNC>, rows_smem<ASYNC>(a->T), dkv_smem<ASYNC>());
}

void tt_cuda_attention_residency(const tt_attn_desc *a, int blocks[3])
{
    if (math_mode == TT_CUDA_ATTN_WIDE) residency<false>(a, blocks);
    else if (math_mode == TT_CUDA_ATTN_PIPE) residency<true>(a, blocks);
#ifndef TT_DOUBLE
    else if (mma_math()) tt_cuda_attention_mma_residency(a, blocks, tc_passes());
#endif
    else tt_cuda_attention_tc_residency(a, blocks, tc_passes());
}

/* forward: none; backward: dS (B,NH,T,T) for dkv_kernel */
size_t tt_cuda_attention_scratch(const tt_attn_desc *a, bool backward)
{
    return backward ? (size_t)a->B * (size_t)a->NH * (size_t)a->T * (size_t)a->T * sizeof(real)
                    : 0;
}
