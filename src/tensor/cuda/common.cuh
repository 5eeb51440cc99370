/* cuda/common.cuh: what the kernel files of the CUDA backend share (C++ only, included after
 * cuda.h): the stream, the grid-stride and row-per-warp loops, and the warp reductions. Every
 * reduction here is a fixed xor butterfly, so it gives the same bits on every run. */
#ifndef TT_CUDA_COMMON_CUH
#define TT_CUDA_COMMON_CUH

#include "tensor/cuda/cuda.h"

#include <cuda_runtime.h>

#include <initializer_list>

#define WARPS (TT_CUDA_THREADS / 32)

/* x * y rounded to real, never contracted into an FMA with a later add: the CPU's product (the
 * C build has -ffp-contract=off) */
#ifdef TT_DOUBLE
#define MUL_RN __dmul_rn
#else
#define MUL_RN __fmul_rn
#endif

static inline cudaStream_t stream(void)
{
    return (cudaStream_t)tt_cuda_stream();
}

/* i over [0, n), one thread each, a grid apart */
#define GRID_LOOP(i, n)                                                                            \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* r over the rows [0, N), one warp each, a grid of warps apart */
#define ROW_LOOP(r, N)                                                                             \
    for (int64_t r = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32; r < (N);                      \
         r += (int64_t)gridDim.x * WARPS)

/* Over each group of W consecutive lanes (W a power of 2, up to the warp's 32; the mma.sync
 * attention's rows are groups of 4), called by every lane of the warp. The sum: every lane of
 * a group gets the same bits (a + b == b + a in IEEE, so the butterfly is symmetric). */
template <int W = 32> static __device__ inline real warp_sum(real v)
{
    for (int o = W / 2; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* the group's max, NaNs skipped as on the CPU; its first lane's, broadcast, so every lane of
 * the group agrees */
template <int W = 32> static __device__ inline real warp_max(real v)
{
    for (int o = W / 2; o > 0; o /= 2) {
        real u = __shfl_xor_sync(0xffffffffu, v, o);
        v = u > v ? u : v;
    }
    return __shfl_sync(0xffffffffu, v, (int)(threadIdx.x % 32) & ~(W - 1));
}

/* Four consecutive elements in one access (16 bytes in float32, 32 in float64: two accesses
 * there), for kernels whose pointers the launch found aligned to it (tt_cuda_quads) */
struct __align__(4 * sizeof(real)) real4 {
    real v[4];
};

/* the emulator (a CPU allows what a GPU faults on): a quad's access at its alignment */
static __device__ __forceinline__ void check_quad(const void *at, size_t align)
{
#ifndef __CUDA_ARCH__
    TT_ASSERT_MSG((uintptr_t)at % align == 0, "a quad access at %p, not %zu-byte aligned", at,
                  align);
#else
    (void)at, (void)align;
#endif
}

/* p[j], the quad j of p (elements 4j .. 4j+3), checked on the emulator */
static __device__ __forceinline__ real4 ld_quad(const real *p, int64_t j)
{
    check_quad(p + 4 * j, sizeof(real4));
    return ((const real4 *)p)[j];
}

static __device__ __forceinline__ void st_quad(real *p, int64_t j, real4 q)
{
    check_quad(p + 4 * j, sizeof(real4));
    ((real4 *)p)[j] = q;
}

/* every pointer given aligned to a quad (NULL counts as aligned) */
static inline bool tt_cuda_quads(std::initializer_list<const void *> ptrs)
{
    for (const void *p : ptrs)
        if ((uintptr_t)p % sizeof(real4)) return false;
    return true;
}

/* Column sums (bias and LayerNorm gradients): a block of COL_W x COL_H threads per COL_W
 * columns, thread (x, y) summing rows y, y + COL_H, ... of its column in order, then the
 * block's COL_H partial sums of each column added in col_tree's fixed tree: the same bits on
 * every run. COL_W = 8 columns are a 32-byte sector of a row (a warp reads 4 rows' sectors,
 * none wasted), so that even C = 768 gives 96 blocks; at 32 columns it gave 24, which left
 * most of an H100's 132 SMs idle. A block of 1024 threads launches only at 64 registers a
 * thread or fewer: __launch_bounds__(COL_W * COL_H) holds nvcc to that. */
#define COL_W 8
#define COL_H 128

/* part[t][y][x] (np tables of COL_H x COL_W) summed over y into part[t][0][x], each in a
 * fixed tree, the tables side by side (one barrier a level for all); every thread of the
 * block calls it */
static __device__ inline void col_tree(real (*part)[COL_H][COL_W], int np)
{
    const int x = threadIdx.x, y = threadIdx.y;
    __syncthreads();
    for (int k = COL_H / 2; k > 0; k /= 2) {
        if (y < k)
            for (int t = 0; t < np; t++) part[t][y][x] += part[t][y + k][x];
        __syncthreads();
    }
}

#endif
