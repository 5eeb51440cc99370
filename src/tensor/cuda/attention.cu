/* cuda/attention.cu: fused scaled dot-product attention, the math of cpu/attention.c per (b, h):
 *   S = scale Q K^T masked to -inf, P = softmax(S) (all-masked row: 0)   saved: att = P, keep
 *   O = D V, D = P keep / (1-p);  backward: dP = dO V^T keep / (1-p), dS = P (dP - rowsum(dP P)),
 *   dQ += scale dS K, dK += scale dS^T Q, dV += D^T dO.
 * A block owns 32 rows of one head: query rows in forward_kernel and dq_kernel, which keep
 * their (32, T) score rows in shared memory; key rows in dkv_kernel, which reads the dS that
 * dq_kernel left in the scratch. Every product is one 4 x 2 register tile per thread over
 * shared tiles (tile_mac); every sum runs in a fixed order, and there are no atomics.
 * These are the float-core kernels; attention_tc.cu has the same three on tensor cores, and
 * the launchers here pick one by tt_cuda_attention_set_math (cuda.h). */
#include "tensor/cuda/attention.cuh"

/* The float-core kernels: a lane holds rows 4w..4w+3 times columns lane and lane + 32 of a
 * CT-wide column tile; TILE_REALS holds the largest staging: A (ROWS,KC+1) and B (CT,KC+1). */
#define CW 2
#define TILE_REALS ((ROWS + CT) * (KC + 1))

/* The transpose: dst[c ldt + r] = kept(src, keep, s, r lds + c), 0 outside (nr, nc). With
 * ldt odd the stores miss no bank. */
static __device__ void load_tile_t(real *dst, int ldt, const real *src, const uint8_t *keep, real s,
                                   int64_t lds, int rows, int cols, int nr, int nc)
{
    for (int e = (int)threadIdx.x; e < rows * cols; e += THREADS) {
        int r = e / cols, c = e % cols;
        dst[c * ldt + r] = r < nr && c < nc ? kept(src, keep, s, r * lds + c) : R(0);
    }
}

/* acc[a][c] += sum over kk < kn of W[(RW w + a) ldw + kk] * M[kk mk + (lane + 32 c) mc], the
 * one inner product of this file; W and M in shared memory. W is read as broadcasts (a warp's
 * lanes share its rows); the M strides used (mk 1, mc KC+1; mk CT, mc 1) miss no bank. */
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

/* dst[r ldd + c] = alpha acc (add: +=) for this thread's rows r < nr and columns c < nc */
static __device__ void store_tile(real *dst, int64_t ldd, const real acc[RW][CW], real alpha,
                                  bool add, int nr, int nc)
{
    const int lane = (int)(threadIdx.x % 32), r0 = RW * (int)(threadIdx.x / 32);
#pragma unroll
    for (int a = 0; a < RW; a++)
#pragma unroll
        for (int c = 0; c < CW; c++) {
            int r = r0 + a, col = lane + 32 * c;
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
        load_tile(As, KC + 1, A + (int64_t)i0 * lda + d0, NULL, R(1), lda, ROWS, KC, T - i0,
                  HS - d0);
        load_tile(Bs, KC + 1, B + (int64_t)j0 * ldb + d0, NULL, R(1), ldb, CT, KC, T - j0,
                  HS - d0);
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
        load_tile(tiles, CT, M + (int64_t)j0 * ldm + d0, NULL, R(1), ldm, KC, CT, kend - j0,
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
        load_tile_t(Ws, KC + 1, W + w0, keep ? keep + w0 : NULL, s, T, KC, ROWS, T - t0, T - j0);
        load_tile(Ms, CT, M + (int64_t)t0 * ldm + d0, NULL, R(1), ldm, KC, CT, T - t0, HS - d0);
        __syncthreads();
        tile_mac(acc, Ws, KC + 1, Ms, CT, 1, imin(KC, T - t0));
    }
}

/* out (B,T,ldo): O; att (B,NH,T,T): P; keep (B,NH,T,T) or NULL (no dropout); q, k, v
 * (B,T,ld*) read at head h's columns; pad (B,T) or NULL. Block (row tile, h, b); dynamic
 * shared memory: TILE_REALS + ROWS T reals. */
static __global__ void __launch_bounds__(THREADS, 2)
    forward_kernel(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                   const real *v, const int32_t *pad, tt_attn_desc a, tt_rng at,
                   const tt_cuda_vary *vary, uint32_t thr, real s)
{
    if (vary) at.counter += vary->rng_delta; /* a replayed step's cursor (cuda.h) */
    extern __shared__ __align__(16) unsigned char smem[];
    real *tiles = (real *)smem, *S = tiles + TILE_REALS;
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0);
    const int64_t bh = head_index(a);
    q += head_at(a, a.ldq);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    out += head_at(a, a.ldo) + (int64_t)i0 * a.ldo;
    real acc[RW][CW];
    for (int j0 = 0; j0 < kend; j0 += CT) {
        rows_times_rows(acc, tiles, q, a.ldq, k, a.ldk, i0, j0, T, HS);
        store_tile(S + j0, T, acc, a.scale, false, ROWS, kend - j0);
    }
    __syncwarp(); /* a warp's S rows are its own from here to the end */
    softmax_rows(S, T, T, att, keep, pad ? pad + (int64_t)blockIdx.z * T : NULL, a.causal, at,
                 thr, s, bh, T, i0, kend);
    for (int d0 = 0; d0 < HS; d0 += CT) {
        smem_rows_times(acc, tiles, S, T, v, a.ldv, d0, kend, HS);
        store_tile(out + d0, a.ldo, acc, R(1), false, T - i0, HS - d0);
    }
}

/* dq (B,T,ldq) += scale dS K, or NULL; ds (B,NH,T,T) = dS for dkv_kernel, or NULL; dout
 * (B,T,ldo); att, keep (B,NH,T,T) saved (keep NULL: no dropout); k, v (B,T,ld*). Block (row
 * tile, h, b), dynamic shared memory as forward_kernel's. */
static __global__ void __launch_bounds__(THREADS, 2)
    dq_kernel(real *dq, real *ds, const real *dout, const real *att, const uint8_t *keep,
              const real *k, const real *v, tt_attn_desc a, real s)
{
    extern __shared__ __align__(16) unsigned char smem[];
    real *tiles = (real *)smem, *S = tiles + TILE_REALS;
    const int T = a.T, HS = a.HS, i0 = row0(), kend = keys_seen(a, i0);
    const int64_t bh = head_index(a);
    dout += head_at(a, a.ldo);
    k += head_at(a, a.ldk);
    v += head_at(a, a.ldv);
    real acc[RW][CW];
    for (int j0 = 0; j0 < kend; j0 += CT) {
        rows_times_rows(acc, tiles, dout, a.ldo, v, a.ldv, i0, j0, T, HS);
        store_tile(S + j0, T, acc, R(1), false, ROWS, kend - j0);
    }
    __syncwarp();
    ds_rows(S, T, T, ds, att, keep, s, bh, T, i0, kend);
    if (!dq) return;
    dq += head_at(a, a.ldq) + (int64_t)i0 * a.ldq;
    for (int d0 = 0; d0 < HS; d0 += CT) {
        smem_rows_times(acc, tiles, S, T, k, a.ldk, d0, kend, HS);
        store_tile(dq + d0, a.ldq, acc, a.scale, true, T - i0, HS - d0);
    }
}

/* dk (B,T,ldk) += scale dS^T Q and dv (B,T,ldv) += D^T dO, either NULL; ds (B,NH,T,T) from
 * dq_kernel (read when dk); att, keep (B,NH,T,T) saved; q (B,T,ldq), dout (B,T,ldo). Block
 * (key tile, h, b): its ROWS keys, summing over the queries i in order; causal: only i >= j
 * have P != 0, so the sums start at the tile's first key. */
static __global__ void __launch_bounds__(THREADS, 2)
    dkv_kernel(real *dk, real *dv, const real *ds, const real *dout, const real *att,
               const uint8_t *keep, const real *q, tt_attn_desc a, real s)
{
    __shared__ real tiles[TILE_REALS];
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
            cols_times(acc, tiles, ds + bhTT, NULL, R(1), q, a.ldq, j0, i_lo, d0, T, HS);
            store_tile(dk + d0, a.ldk, acc, a.scale, true, T - j0, HS - d0);
        }
        if (dv) {
            cols_times(acc, tiles, att + bhTT, keep ? keep + bhTT : NULL, s, dout, a.ldo, j0,
                       i_lo, d0, T, HS);
            store_tile(dv + d0, a.ldv, acc, R(1), true, T - j0, HS - d0);
        }
    }
}

/* Which kernels run: set_matmul_precision picks (backend.cu), tests and bench_attention force
 * one. float64 builds have only the float cores. */
static tt_cuda_attn_math math_mode = TT_CUDA_ATTN_FLOAT;

void tt_cuda_attention_set_math(tt_cuda_attn_math m)
{
#ifdef TT_DOUBLE
    m = TT_CUDA_ATTN_FLOAT;
#endif
    math_mode = m;
}

tt_cuda_attn_math tt_cuda_attention_math(void) { return math_mode; }

static int tc_passes(void) { return math_mode == TT_CUDA_ATTN_TF32 ? 1 : 3; }

/* Dynamic shared memory of forward_kernel and dq_kernel: the tiles and ROWS score rows. */
static size_t rows_smem(int T) { return (TILE_REALS + (size_t)ROWS * (size_t)T) * sizeof(real); }

void tt_cuda_attention_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                               const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                               real *scratch)
{
    static size_t allowed;
    (void)scratch; /* none needed: attention_scratch says 0 */
    check_desc(a);
    if (a->B == 0) return;
    /* keep (not p) says whether to drop, as on the CPU; the threshold is philox.h's */
    uint32_t thr = keep ? tt_philox_keep_threshold((double)a->p) : 0;
    real s = keep ? R(1) / (R(1) - a->p) : R(1);
    if (math_mode != TT_CUDA_ATTN_FLOAT) {
        tt_cuda_attention_tc_forward(out, att, keep, q, k, v, pad, a, at, thr, s, tc_passes());
        return;
    }
    allow_smem((const void *)forward_kernel, &allowed, rows_smem(a->T), a->T);
    forward_kernel<<<grid_of(a), THREADS, rows_smem(a->T), (cudaStream_t)tt_cuda_stream()>>>(
        out, att, keep, q, k, v, pad, *a, at, tt_cuda_step_vary(), thr, s);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dq_kernel runs when dq or dk is wanted (dk needs its dS, in the scratch), then dkv_kernel
 * when dk or dv is. */
void tt_cuda_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                                const uint8_t *keep, const real *q, const real *k, const real *v,
                                const tt_attn_desc *a, real *scratch)
{
    static size_t allowed;
    check_desc(a);
    if (a->B == 0 || (!dq && !dk && !dv)) return;
    cudaStream_t st = (cudaStream_t)tt_cuda_stream();
    real s = keep ? R(1) / (R(1) - a->p) : R(1);
    real *ds = dk ? scratch : NULL;
    TT_ASSERT_MSG(!dk || scratch, "attention backward: dk needs the scratch (attention_scratch)");
    if (math_mode != TT_CUDA_ATTN_FLOAT) {
        tt_cuda_attention_tc_backward(dq, dk, dv, ds, dout, att, keep, q, k, v, a, s,
                                      tc_passes());
        return;
    }
    if (dq || dk) {
        allow_smem((const void *)dq_kernel, &allowed, rows_smem(a->T), a->T);
        dq_kernel<<<grid_of(a), THREADS, rows_smem(a->T), st>>>(dq, ds, dout, att, keep, k, v,
                                                                  *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    if (dk || dv) {
        dkv_kernel<<<grid_of(a), THREADS, 0, st>>>(dk, dv, ds, dout, att, keep, q, *a, s);
        TT_CUDA_CHECK(cudaGetLastError());
    }
}

/* forward: none; backward: dS (B,NH,T,T) for dkv_kernel */
size_t tt_cuda_attention_scratch(const tt_attn_desc *a, bool backward)
{
    return backward ? (size_t)a->B * (size_t)a->NH * (size_t)a->T * (size_t)a->T * sizeof(real)
                    : 0;
}
