/* cuda/attention.cu: fused scaled dot-product attention, the math of cpu/attention.c per (b, h):
 *   S = scale Q K^T masked to -inf, P = softmax(S) (all-masked row: 0)   saved: att = P, keep
 *   O = D V, D = P keep / (1-p);  backward: dP = dO V^T keep / (1-p), dS = P (dP - rowsum(dP P)),
 *   dQ += scale dS K, dK += scale dS^T Q, dV += D^T dO.
 * A block owns 32 rows of one head: query rows in forward_kernel and dq_kernel, which keep
 * their (32, T) score rows in shared memory; key rows in dkv_kernel, which reads the dS that
 * dq_kernel left in the scratch. Every product gives a (32, 64) tile as a 4 x 2 register tile
 * per thread over shared tiles; every sum runs in a fixed order, and there are no atomics.
 * These are the float-core kernels, in two tilings (template argument W): the narrow one
 * (TT_CUDA_ATTN_FLOAT) gives a warp 4 whole rows and reads its operands one real at a time;
 * the wide one (TT_CUDA_ATTN_WIDE) gives a warp a 16 x 16 square and reads 16-byte vectors,
 * a third of the narrow one's shared-memory traffic per multiply-add. attention_tc.cu has the
 * same three kernels on tensor cores; the launchers here pick one by
 * tt_cuda_attention_set_math (cuda.h). */
#include "tensor/cuda/attention.cuh"

/* The float-core kernels: a lane holds rows 4w..4w+3 times columns lane and lane + 32 of a
 * CT-wide column tile; TILE_REALS holds the largest staging: A (ROWS,KC+1) and B (CT,KC+1). */
#define CW 2
#define TILE_REALS ((ROWS + CT) * (KC + 1))

/* acc[a][c] += sum over kk < kn of W[(RW w + a) ldw + kk] * M[kk mk + (lane + 32 c) mc], the
 * narrow tiling's inner product; W and M in shared memory. W is read as broadcasts (a warp's
 * lanes share its rows); the M strides used (mk 1, mc KC+1; mk CT, mc 1) miss no bank, as do
 * load_tile's transposed stores (ldt KC+1, odd). */
static __device__ __forceinline__ void tile_mac(real acc[RW][CW], const real *W, int ldw,
                                                const real *M, int mk, int mc, int kn)
{
    const int lane = (int)(threadIdx.x % 32);
    W += RW * (int)(threadIdx.x / 32) * ldw;
    for (int kk = 0; kk < kn; kk++) {
        real x[RW], y[CW];
#pragma unroll
        for (int a = 0; a < RW; a++) x[a] = W[a * ldw + kk];
#pragma unroll
        for (int c = 0; c < CW; c++) y[c] = M[kk * mk + (lane + 32 * c) * mc];
#pragma unroll
        for (int a = 0; a < RW; a++)
#pragma unroll
            for (int c = 0; c < CW; c++) acc[a][c] += x[a] * y[c];
    }
}

static __device__ __forceinline__ void zero_acc(real acc[RW][CW])
{
#pragma unroll
    for (int a = 0; a < RW; a++)
#pragma unroll
        for (int c = 0; c < CW; c++) acc[a][c] = R(0);
}

/* Where acc[a][c] lies in the block's (ROWS, CT) tile. Narrow: rows RW w + a of warp w,
 * columns lane + 32 c. Wide (below): warp w has rows 16 (w / 4) .. +15 and columns
 * 16 (w % 4) .. +15, lane (rg, cg) = (lane / 8, lane % 8) rows rg + 4a (SPREAD) or 4 rg + a
 * (PACKED) and columns cg + 8c (SPREAD) or 2 cg + c (PAIRED). */
enum tile_rows { ROWS_NARROW, ROWS_SPREAD, ROWS_PACKED };
enum tile_cols { COLS_NARROW, COLS_SPREAD, COLS_PAIRED };

template <tile_rows L> static __device__ __forceinline__ int acc_row(int a)
{
    const int lane = (int)(threadIdx.x % 32), w16 = 16 * (int)(threadIdx.x / 128);
    return L == ROWS_NARROW   ? RW * (int)(threadIdx.x / 32) + a
           : L == ROWS_SPREAD ? w16 + lane / 8 + 4 * a
                              : w16 + 4 * (lane / 8) + a;
}

template <tile_cols L> static __device__ __forceinline__ int acc_col(int c)
{
    const int lane = (int)(threadIdx.x % 32), w16 = 16 * (int)(threadIdx.x / 32 % 4);
    return L == COLS_NARROW   ? lane + 32 * c
           : L == COLS_SPREAD ? w16 + lane % 8 + 8 * c
                              : w16 + 2 * (lane % 8) + c;
}

/* dst[r ldd + col] = alpha acc (add: +=) for this thread's rows r < nr and columns col < nc */
template <tile_rows RL = ROWS_NARROW, tile_cols CL = COLS_NARROW>
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

/* acc = A B^T over HS for ROWS rows of A from row i0 and CT rows of B from row j0: A, B (T, HS)
 * head blocks of row strides lda, ldb (Q K^T, dO V^T) */
static __device__ void rows_times_rows(real acc[RW][CW], real *tiles, const real *A, int lda,
                                       const real *B, int ldb, int i0, int j0, int T, int HS)
{
    real *As = tiles, *Bs = tiles + ROWS * (KC + 1);
    zero_acc(acc);
    for (int d0 = 0; d0 < HS; d0 += KC) {
        __syncthreads(); /* the tiles' last readers are done */
        load_tile<ROWS, KC>(As, KC + 1, A + (int64_t)i0 * lda + d0, NULL, R(1), lda, T - i0,
                            HS - d0);
        load_tile<CT, KC>(Bs, KC + 1, B + (int64_t)j0 * ldb + d0, NULL, R(1), ldb, T - j0, HS - d0);
        __syncthreads();
        tile_mac(acc, As, KC + 1, Bs, 1, KC + 1, imin(KC, HS - d0));
    }
}

/* acc = W M over keys [0, kend) for columns d0 .. d0+CT-1: W this block's (ROWS, T) rows in
 * shared memory (row stride T), M (T, HS) a head block of row stride ldm (D V, dS K) */
static __device__ void smem_rows_times(real acc[RW][CW], real *tiles, const real *W, int T,
                                       const real *M, int ldm, int d0, int kend, int HS)
{
    zero_acc(acc);
    for (int j0 = 0; j0 < kend; j0 += KC) {
        __syncthreads();
        load_tile<KC, CT>(tiles, CT, M + (int64_t)j0 * ldm + d0, NULL, R(1), ldm, kend - j0,
                          HS - d0);
        __syncthreads();
        tile_mac(acc, W + j0, T, tiles, CT, 1, imin(KC, kend - j0));
    }
}

/* acc = W^T M over rows i in [i_lo, T) for ROWS columns of W from j0 and columns d0..d0+CT-1
 * of M: W (T, T) one head's dS, or its att with keep given (then D = att keep s), M (T, HS) a
 * head block of row stride ldm (dS^T Q, D^T dO) */
static __device__ void cols_times(real acc[RW][CW], real *tiles, const real *W, const uint8_t *keep,
                                  real s, const real *M, int ldm, int j0, int i_lo, int d0, int T,
                                  int HS)
{
    real *Ws = tiles, *Ms = tiles + ROWS * (KC + 1);
    zero_acc(acc);
    for (int t0 = i_lo; t0 < T; t0 += KC) {
        const int64_t w0 = (int64_t)t0 * T + j0;
        __syncthreads();
        load_tile<KC, ROWS, true>(Ws, KC + 1, W + w0, keep ? keep + w0 : NULL, s, T, T - t0,
                                  T - j0);
        load_tile<KC, CT>(Ms, CT, M + (int64_t)t0 * ldm + d0, NULL, R(1), ldm, T - t0, HS - d0);
        __syncthreads();
        tile_mac(acc, Ws, KC + 1, Ms, CT, 1, imin(KC, T - t0));
    }
}

/* ---- the wide tiling ------------------------------------------------------------------------
 * A warp's 16 x 16 square (acc_row, acc_col), in the layout each product reads without bank
 * conflicts: rows SPREAD for operands read along the inner dimension from (row, k) tiles with
 * a row stride of 4 mod 32 reals, PACKED for one 16-byte read from a (k, row) tile; columns
 * SPREAD, or PAIRED for one 8-byte read. WKC of the inner dimension are staged at a time. */
#define WKC 64
#define WLD (WKC + 4) /* (rows, WKC) tiles: 16-byte rows 4 banks apart */
#define WIDE_TILE_REALS ((ROWS + CT) * WLD) /* forward and dq: the score rows follow it */
#define WIDE_DKV_REALS (WKC * (ROWS + CT))   /* dkv: static, 48 KiB at most in float64 */
static_assert(WKC * CT <= WIDE_TILE_REALS && WIDE_TILE_REALS % 4 == 0 &&
                  WIDE_DKV_REALS * sizeof(double) <= 48 * 1024,
              "the wide staging holds its products' tiles, and what follows it stays aligned");

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

/* rows_times_rows, wide: A (ROWS, WLD) and B (CT, WLD) chunks, both read along k */
static __device__ void wide_rows_times_rows(real acc[RW][CW], real *tiles, const real *A, int lda,
                                            const real *B, int ldb, int i0, int j0, int T, int HS)
{
    real *As = tiles, *Bs = tiles + ROWS * WLD;
    zero_acc(acc);
    for (int d0 = 0; d0 < HS; d0 += WKC) {
        __syncthreads();
        load_tile<ROWS, WKC>(As, WLD, A + (int64_t)i0 * lda + d0, NULL, R(1), lda, T - i0, HS - d0);
        load_tile<CT, WKC>(Bs, WLD, B + (int64_t)j0 * ldb + d0, NULL, R(1), ldb, T - j0, HS - d0);
        __syncthreads();
        const int kn = round_up(imin(WKC, HS - d0), 4); /* zeros past HS */
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
}

/* smem_rows_times, wide: W the score rows (row stride lds, 4 mod 32; zeros from kend to a
 * multiple of 4), M staged (WKC, CT) */
static __device__ void wide_smem_rows_times(real acc[RW][CW], real *tiles, const real *W, int lds,
                                            const real *M, int ldm, int d0, int kend, int HS)
{
    zero_acc(acc);
    for (int j0 = 0; j0 < kend; j0 += WKC) {
        __syncthreads();
        load_tile<WKC, CT>(tiles, CT, M + (int64_t)j0 * ldm + d0, NULL, R(1), ldm, kend - j0,
                           HS - d0);
        __syncthreads();
        const int kn = round_up(imin(WKC, kend - j0), 4);
        for (int kk = 0; kk < kn; kk += 4) {
            real x[RW][4];
#pragma unroll
            for (int a = 0; a < RW; a++) ldv<4>(x[a], W + acc_row<ROWS_SPREAD>(a) * lds + j0 + kk);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                real y[CW];
                ldv<CW>(y, tiles + (kk + u) * CT + acc_col<COLS_PAIRED>(0));
#pragma unroll
                for (int a = 0; a < RW; a++)
#pragma unroll
                    for (int c = 0; c < CW; c++) acc[a][c] += x[a][u] * y[c];
            }
        }
    }
}

/* cols_times, wide: W staged (WKC, ROWS) as it lies (row t, column j), M staged (WKC, CT) */
static __device__ void wide_cols_times(real acc[RW][CW], real *tiles, const real *W,
                                       const uint8_t *keep, real s, const real *M, int ldm,
                                       int j0, int i_lo, int d0, int T, int HS)
{
    real *Ws = tiles, *Ms = tiles + WKC * ROWS;
    zero_acc(acc);
    for (int t0 = i_lo; t0 < T; t0 += WKC) {
        const int64_t w0 = (int64_t)t0 * T + j0;
        __syncthreads();
        load_tile<WKC, ROWS>(Ws, ROWS, W + w0, keep ? keep + w0 : NULL, s, T, T - t0, T - j0);
        load_tile<WKC, CT>(Ms, CT, M + (int64_t)t0 * ldm + d0, NULL, R(1), ldm, T - t0, HS - d0);
        __syncthreads();
        const int kn = imin(WKC, T - t0);
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
}

/* The layouts of a tiling's products (acc_row, acc_col): R and C for Q K^T and dO V^T; R and PC
 * for the score rows times V or K; PR and PC for dS^T Q and D^T dO. The narrow tiling has one. */
template <bool W> struct lay {
    static constexpr tile_rows R = W ? ROWS_SPREAD : ROWS_NARROW, PR = W ? ROWS_PACKED : R;
    static constexpr tile_cols C = W ? COLS_SPREAD : COLS_NARROW, PC = W ? COLS_PAIRED : C;
};

/* ---- the kernels, either tiling ---------------------------------------------------------------
 * The score rows' stride: narrow T; wide 4 mod 32 reals past a multiple of 4 (zeros after T),
 * so that wide_smem_rows_times's 16-byte reads of 4 rows miss each other's banks. */
template <bool W> TT_HD static inline int score_stride(int T)
{
    return W ? round_up(T, 32) + 4 : T;
}

template <bool W> TT_HD static inline int score_cols(int T)
{
    return W ? round_up(T, 4) : T;
}

/* out (B,T,ldo): O; att (B,NH,T,T): P; keep (B,NH,T,T) or NULL (no dropout); q, k, v
 * (B,T,ld*) read at head h's columns; pad (B,T) or NULL. Block (row tile, h, b); dynamic
 * shared memory: TILE_REALS + ROWS T reals. */
template <bool W>
static __global__ void __launch_bounds__(THREADS, 2)
    forward_kernel(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                   const real *v, const int32_t *pad, tt_attn_desc a, tt_rng at,
                   const tt_cuda_vary *vary, uint32_t thr, real s)
{
    if (vary) at.counter += vary->rng_delta; /* a replayed step's cursor (cuda.h) */
    extern __shared__ __align__(16) unsigned char smem[];
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0), lds = score_stride<W>(T);
    real *tiles = (real *)smem, *S = tiles + (W ? WIDE_TILE_REALS : TILE_REALS);
    const int64_t bh = head_index(a);
    q += head_at(a, a.ldq);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    out += head_at(a, a.ldo) + (int64_t)i0 * a.ldo;
    real acc[RW][CW];
    for (int j0 = 0; j0 < kend; j0 += CT) {
        if (W) wide_rows_times_rows(acc, tiles, q, a.ldq, k, a.ldk, i0, j0, T, HS);
        else rows_times_rows(acc, tiles, q, a.ldq, k, a.ldk, i0, j0, T, HS);
        store_tile<lay<W>::R, lay<W>::C>(S + j0, lds, acc, a.scale, false, ROWS, kend - j0);
    }
    /* a warp's S rows are its own from here to the end, narrow; wide, its rows came from
     * other warps */
    if (W) __syncthreads();
    else __syncwarp();
    softmax_rows(S, lds, score_cols<W>(T), att, keep,
                 pad ? pad + (int64_t)blockIdx.z * T : NULL, a.causal, at, thr, s, bh, T, i0,
                 kend);
    for (int d0 = 0; d0 < HS; d0 += CT) {
        if (W) wide_smem_rows_times(acc, tiles, S, lds, v, a.ldv, d0, kend, HS);
        else smem_rows_times(acc, tiles, S, T, v, a.ldv, d0, kend, HS);
        store_tile<lay<W>::R, lay<W>::PC>(out + d0, a.ldo, acc, R(1), false, T - i0, HS - d0);
    }
}

/* dq (B,T,ldq) += scale dS K, or NULL; ds (B,NH,T,T) = dS for dkv_kernel, or NULL; dout
 * (B,T,ldo); att, keep (B,NH,T,T) saved (keep NULL: no dropout); k, v (B,T,ld*). Block (row
 * tile, h, b), dynamic shared memory as forward_kernel's. */
template <bool W>
static __global__ void __launch_bounds__(THREADS, 2)
    dq_kernel(real *dq, real *ds, const real *dout, const real *att, const uint8_t *keep,
              const real *k, const real *v, tt_attn_desc a, real s)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0), lds = score_stride<W>(T);
    real *tiles = (real *)smem, *S = tiles + (W ? WIDE_TILE_REALS : TILE_REALS);
    const int64_t bh = head_index(a);
    dout += head_at(a, a.ldo);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    real acc[RW][CW];
    for (int j0 = 0; j0 < kend; j0 += CT) {
        if (W) wide_rows_times_rows(acc, tiles, dout, a.ldo, v, a.ldv, i0, j0, T, HS);
        else rows_times_rows(acc, tiles, dout, a.ldo, v, a.ldv, i0, j0, T, HS);
        store_tile<lay<W>::R, lay<W>::C>(S + j0, lds, acc, R(1), false, ROWS, kend - j0);
    }
    if (W) __syncthreads(); /* as in forward_kernel */
    else __syncwarp();
    ds_rows(S, lds, score_cols<W>(T), ds, att, keep, s, bh, T, i0, kend);
    if (!dq) return;
    dq += head_at(a, a.ldq) + (int64_t)i0 * a.ldq;
    for (int d0 = 0; d0 < HS; d0 += CT) {
        if (W) wide_smem_rows_times(acc, tiles, S, lds, k, a.ldk, d0, kend, HS);
        else smem_rows_times(acc, tiles, S, T, k, a.ldk, d0, kend, HS);
        store_tile<lay<W>::R, lay<W>::PC>(dq + d0, a.ldq, acc, a.scale, true, T - i0, HS - d0);
    }
}

/* dk (B,T,ldk) += scale dS^T Q and dv (B,T,ldv) += D^T dO, either NULL; ds (B,NH,T,T) from
 * dq_kernel (read when dk); att, keep (B,NH,T,T) saved; q (B,T,ldq), dout (B,T,ldo). Block
 * (key tile, h, b): its ROWS keys, summing over the queries i in order; causal: only i >= j
 * have P != 0, so the sums start at the tile's first key. */
template <bool W>
static __global__ void __launch_bounds__(THREADS, 2)
    dkv_kernel(real *dk, real *dv, const real *ds, const real *dout, const real *att,
               const uint8_t *keep, const real *q, tt_attn_desc a, real s)
{
    __shared__ __align__(16) real tiles[W ? WIDE_DKV_REALS : TILE_REALS];
    const int T = a.T, HS = a.HS, j0 = row0();
    const int64_t bhTT = head_index(a) * T * T;
    const int i_lo = a.causal ? j0 : 0;
    q += head_at(a, a.ldq);
    dout += head_at(a, a.ldo);
    if (dk) dk += head_at(a, a.ldk) + (int64_t)j0 * a.ldk; /* this block's key rows */
    if (dv) dv += head_at(a, a.ldv) + (int64_t)j0 * a.ldv;
    real acc[RW][CW];
    for (int d0 = 0; d0 < HS; d0 += CT) {
        if (dk) {
            const real *dsh = ds + bhTT;
            if (W) wide_cols_times(acc, tiles, dsh, NULL, R(1), q, a.ldq, j0, i_lo, d0, T, HS);
            else cols_times(acc, tiles, dsh, NULL, R(1), q, a.ldq, j0, i_lo, d0, T, HS);
            store_tile<lay<W>::PR, lay<W>::PC>(dk + d0, a.ldk, acc, a.scale, true, T - j0, HS - d0);
        }
        if (dv) {
            const uint8_t *kp = keep ? keep + bhTT : NULL;
            if (W) wide_cols_times(acc, tiles, att + bhTT, kp, s, dout, a.ldo, j0, i_lo, d0, T, HS);
            else cols_times(acc, tiles, att + bhTT, kp, s, dout, a.ldo, j0, i_lo, d0, T, HS);
            store_tile<lay<W>::PR, lay<W>::PC>(dv + d0, a.ldv, acc, R(1), true, T - j0, HS - d0);
        }
    }
}

/* Which kernels run: set_matmul_precision picks (backend.cu; the wide float cores, also
 * before it is called), tests and bench_attention force one. float64 builds have only the
 * float cores, either tiling. */
static tt_cuda_attn_math math_mode = TT_CUDA_ATTN_WIDE;

void tt_cuda_attention_set_math(tt_cuda_attn_math m)
{
#ifdef TT_DOUBLE
    if (m != TT_CUDA_ATTN_WIDE) m = TT_CUDA_ATTN_FLOAT;
#endif
    math_mode = m;
}

tt_cuda_attn_math tt_cuda_attention_math(void) { return math_mode; }

static int tc_passes(void) { return math_mode == TT_CUDA_ATTN_TF32 ? 1 : 3; }

/* Dynamic shared memory of forward_kernel and dq_kernel: the tiles and ROWS score rows. */
template <bool W> static size_t rows_smem(int T)
{
    return ((W ? WIDE_TILE_REALS : TILE_REALS) + (size_t)ROWS * (size_t)score_stride<W>(T)) *
           sizeof(real);
}

template <bool W>
static void forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                    const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                    uint32_t thr, real s)
{
    static size_t allowed;
    allow_smem((const void *)forward_kernel<W>, &allowed, rows_smem<W>(a->T), a->T);
    forward_kernel<W><<<grid_of(a), THREADS, rows_smem<W>(a->T),
                        (cudaStream_t)tt_cuda_stream()>>>(out, att, keep, q, k, v, pad, *a, at,
                                                          tt_cuda_step_vary(), thr, s);
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
    if (math_mode == TT_CUDA_ATTN_WIDE) forward<true>(out, att, keep, q, k, v, pad, a, at, thr, s);
    else if (math_mode == TT_CUDA_ATTN_FLOAT)
        forward<false>(out, att, keep, q, k, v, pad, a, at, thr, s);
    else tt_cuda_attention_tc_forward(out, att, keep, q, k, v, pad, a, at, thr, s, tc_passes());
}

/* dq_kernel runs when dq or dk is wanted (dk needs its dS, in the scratch), then dkv_kernel
 * when dk or dv is. */
template <bool W>
static void backward(real *dq, real *dk, real *dv, real *ds, const real *dout, const real *att,
                     const uint8_t *keep, const real *q, const real *k, const real *v,
                     const tt_attn_desc *a, real s)
{
    static size_t allowed;
    cudaStream_t st = (cudaStream_t)tt_cuda_stream();
    if (dq || dk) {
        allow_smem((const void *)dq_kernel<W>, &allowed, rows_smem<W>(a->T), a->T);
        dq_kernel<W><<<grid_of(a), THREADS, rows_smem<W>(a->T), st>>>(dq, ds, dout, att, keep,
                                                                      k, v, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    if (dk || dv) {
        dkv_kernel<W><<<grid_of(a), THREADS, 0, st>>>(dk, dv, ds, dout, att, keep, q, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
}

void tt_cuda_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                                const uint8_t *keep, const real *q, const real *k, const real *v,
                                const tt_attn_desc *a, real *scratch)
{
    check_desc(a);
    if (a->B == 0 || (!dq && !dk && !dv)) return;
    real s = keep ? R(1) / (R(1) - a->p) : R(1);
    real *ds = dk ? scratch : NULL;
    TT_ASSERT_MSG(!dk || scratch, "attention backward: dk needs the scratch (attention_scratch)");
    if (math_mode == TT_CUDA_ATTN_WIDE)
        backward<true>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s);
    else if (math_mode == TT_CUDA_ATTN_FLOAT)
        backward<false>(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s);
    else
        tt_cuda_attention_tc_backward(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s,
                                      tc_passes());
}

/* forward: none; backward: dS (B,NH,T,T) for dkv_kernel */
size_t tt_cuda_attention_scratch(const tt_attn_desc *a, bool backward)
{
    return backward ? (size_t)a->B * (size_t)a->NH * (size_t)a->T * (size_t)a->T * sizeof(real)
                    : 0;
}
