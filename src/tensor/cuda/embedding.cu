/* cuda/embedding.cu: row gather and its scatter-add.
 *   out[i] = weight[tokens[i]],  dweight[tokens[i]] += dout[i]  (a token seen twice gets both)
 * The gather is one warp per row. The scatter is deterministic without atomics or a sort:
 * element (v, c) of dweight has one owner thread, lane c % 32 of the warp for column tile
 * c / 32 and bucket v % BUCKETS, which scans all N tokens in order and adds the rows of its
 * bucket, so each sum runs over the tokens in order, as on the CPU (the same bits: the running
 * sum of one vocabulary row waits in a register while the same token repeats, which changes
 * no rounding). A warp tests 32 tokens at a time with one ballot. Saves nothing. */
#include "tensor/cuda/common.cuh"

#include <assert.h>

#define BUCKETS 64 /* vocabulary rows per column tile: a multiple of WARPS */
#define FULL 0xffffffffu

/* out (N,C), tokens (N), weight (V,C): one warp per row, a grid of warps apart */
static __global__ void embedding_kernel(real *out, const int32_t *tokens, const real *weight,
                                        int64_t N, int C, int V)
{
    for (int64_t r = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32; r < N;
         r += (int64_t)gridDim.x * WARPS) {
        int32_t t = tokens[r];
        assert(t >= 0 && t < V); /* the CPU's TT_ASSERT: a token outside [0, V) */
        const real *w = weight + (int64_t)t * C;
        for (int c = threadIdx.x % 32; c < C; c += 32)
            out[r * C + c] = w[c];
    }
}

void tt_cuda_embedding_forward(real *out, const int32_t *tokens, const real *weight, int64_t N,
                               int C, int V)
{
    if (N <= 0 || C <= 0) return;
    embedding_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(out, tokens, weight,
                                                                               N, C, V);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dweight (V,C) += dout (N,C) scattered by tokens (N). Block (x, y): columns 32x .. 32x + 31,
 * buckets WARPS y .. WARPS y + WARPS - 1, one per warp. `row` is the vocabulary row whose
 * running sum `acc` holds (-1: none); it goes back to memory when another row of the bucket
 * comes, and at the end. */
static __global__ void embedding_backward_kernel(real *dweight, const int32_t *tokens,
                                                 const real *dout, int64_t N, int C)
{
    const int lane = threadIdx.x % 32, c = blockIdx.x * 32 + lane;
    const int bucket = blockIdx.y * WARPS + threadIdx.x / 32;
    int64_t row = -1;
    real acc = R(0);
    for (int64_t i0 = 0; i0 < N; i0 += 32) {
        int32_t v = i0 + lane < N ? tokens[i0 + lane] : -1;
        /* hits is the same on every lane, so the whole warp runs each iteration below */
        for (unsigned hits = __ballot_sync(FULL, v >= 0 && v % BUCKETS == bucket); hits;
             hits &= hits - 1) {
            int k = __ffs(hits) - 1; /* tokens i0 + k in increasing order */
            int64_t t = __shfl_sync(FULL, v, k);
            if (c >= C) continue;
            if (t != row) {
                if (row >= 0) dweight[row * C + c] = acc;
                row = t;
                acc = dweight[row * C + c];
            }
            acc += dout[(i0 + k) * C + c];
        }
    }
    if (row >= 0 && c < C) dweight[row * C + c] = acc;
}

void tt_cuda_embedding_backward(real *dweight, const int32_t *tokens, const real *dout, int64_t N,
                                int C)
{
    if (N <= 0 || C <= 0) return;
    dim3 grid((C + 31) / 32, BUCKETS / WARPS);
    embedding_backward_kernel<<<grid, TT_CUDA_THREADS, 0, stream()>>>(dweight, tokens, dout, N, C);
    TT_CUDA_CHECK(cudaGetLastError());
}
