/* cuda/dropout.cu: inverted dropout with a counter-based mask, one thread per Philox block.
 *   keep_i = uniform(at, i) >= p,  y_i = x_i * keep_i / (1 - p),  dx_i += dy_i * keep_i / (1 - p)
 * Saves the mask, one byte per element (1 kept, 0 dropped). Fused, the same masks:
 *   relu then dropout   in place, x_i = keep_i * max(x_i, 0) / (1 - p); saves nothing, since
 *                       dx_i += dy_i / (1 - p) exactly where the output is > 0
 *   dropout then add    in place, x_i = res_i + keep_i * x_i / (1 - p); saves the mask
 *   gelu then dropout   y_i = keep_i * gelu(x_i) / (1 - p); saves the mask and gelu'(x_i):
 *                       dx_i += dy_i * keep_i / (1 - p) * gelu'(x_i)
 * The masks equal the CPU's bit for bit (tt_dropout_keep4 in tensor/kernel_math.h), and so do
 * the values: 1/(1-p) is rounded once on the host, as the CPU does, and the products are
 * rounded on their own (MUL_RN), never fused with the add that follows into an FMA (GELU
 * itself is CUDA's erff on the device, tensor/kernel_math.h, so there the last bits differ). */
#include "tensor/cuda/common.cuh"
#include "tensor/kernel_math.h"

/* How the CPU's elements map onto threads. Element i of a draw at cursor `at` is Philox word
 * at.counter + i of (at.seed, at.stream) (rng.h); word w is lane w % 4 of block w / 4
 * (philox.h: key = seed, counter = (block, stream)). Thread j computes the keep bits of
 * elements 4j .. 4j+3 (kernel_math.h's tt_dropout_keep4: lanes 0..3 of block at.counter / 4 + j,
 * or, for a data-parallel rank's share that starts inside a block, lanes of two blocks) and keeps
 * element 4j + k when (its lane >> 8) >= tt_philox_keep_threshold(p), the integer form of
 * uniform >= p that tt_cpu_keep_mask uses, scalar and AVX2 alike. With p == 0 the threshold is
 * 0, every element is kept whatever its word, so the kernels skip Philox and `at` is not read. */
static uint32_t keep_threshold(real p)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    return tt_philox_keep_threshold((double)p);
}

/* the keep bits of elements 4j .. 4j+3 (bit k: element 4j + k) */
static __device__ unsigned keep4(const tt_rng *at, int64_t j, uint32_t thr)
{
    return thr ? tt_dropout_keep4(at, j, thr) : 0xfu;
}

/* the number of Philox blocks of n elements, and so of threads */
static __host__ __device__ int64_t blocks4(int64_t n)
{
    return (n + 3) / 4;
}

/* A thread's 4 elements 4j .. 4j+3 in one access each way (16 bytes in float32, 32 in float64;
 * the mask's 4 bytes) where `whole`: the quad is inside n and the launch found every pointer
 * aligned to it (quads); else element by element, those past n left alone. With one access
 * per element, a warp's loads were 4 strided ones over the same lines. */
struct __align__(4) byte4 {
    uint8_t b[4];
};

static __device__ __forceinline__ void load4(real x[4], const real *p, int64_t i0, bool whole,
                                             int64_t n)
{
    if (whole) {
        check_quad(p + i0, sizeof(real4));
        const real4 q = *(const real4 *)(p + i0);
#pragma unroll
        for (int k = 0; k < 4; k++) x[k] = q.v[k];
    } else
#pragma unroll
        for (int k = 0; k < 4; k++) x[k] = i0 + k < n ? p[i0 + k] : R(0);
}

static __device__ __forceinline__ void store4(real *p, const real y[4], int64_t i0, bool whole,
                                              int64_t n)
{
    if (whole) {
        check_quad(p + i0, sizeof(real4));
        real4 q;
#pragma unroll
        for (int k = 0; k < 4; k++) q.v[k] = y[k];
        *(real4 *)(p + i0) = q;
    } else
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (i0 + k < n) p[i0 + k] = y[k];
}

static __device__ __forceinline__ void store4b(uint8_t *p, unsigned bits, int64_t i0, bool whole,
                                               int64_t n)
{
    if (whole) {
        check_quad(p + i0, sizeof(byte4));
        byte4 q;
#pragma unroll
        for (int k = 0; k < 4; k++) q.b[k] = (uint8_t)(bits >> k & 1u);
        *(byte4 *)(p + i0) = q;
    } else
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (i0 + k < n) p[i0 + k] = (uint8_t)(bits >> k & 1u);
}

/* every pointer given (NULL counts as aligned) at a multiple of its quad's size */
static bool quads(const void *a, const void *b, const void *c, const void *d,
                  const uint8_t *mask)
{
    return tt_cuda_quads({a, b, c, d}) && (uintptr_t)mask % sizeof(byte4) == 0;
}

/* out (n) = inp (n) * keep * scale, mask (n) = keep, or no mask when NULL (p = 0); with gelu,
 * gelu(inp) in place of inp, and deriv (n), when not NULL, = gelu'(inp); res (n), when not NULL,
 * is added: out = res + that. out and deriv may equal inp (a quad is loaded before it is
 * stored). vec: quads() of the pointers. */
static __global__ void dropout_kernel(real *out, uint8_t *mask, real *deriv, const real *inp,
                                      const real *res, bool gelu, real scale, tt_rng at,
                                      const tt_cuda_vary *vary, uint32_t thr, int64_t n, bool vec)
{
    if (vary) at.counter += vary->rng_delta; /* a replayed step's cursor (cuda.h) */
    GRID_LOOP(j, blocks4(n))
    {
        const unsigned keep = keep4(&at, j, thr);
        const int64_t i0 = 4 * j;
        const bool whole = vec && i0 + 4 <= n;
        real x[4], r[4] = {}, y[4], g[4] = {};
        load4(x, inp, i0, whole, n);
        if (res) load4(r, res, i0, whole, n);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            bool kept = keep >> k & 1u;
            real v = MUL_RN(gelu ? tt_gelu_value(x[k]) : x[k], scale);
            y[k] = res ? r[k] + (kept ? v : R(0)) : kept ? v : R(0);
            if (deriv) g[k] = tt_gelu_deriv(x[k]);
        }
        if (mask) store4b(mask, keep, i0, whole, n);
        if (deriv) store4(deriv, g, i0, whole, n);
        store4(out, y, i0, whole, n);
    }
}

static void launch_dropout(real *out, uint8_t *mask, real *deriv, const real *inp,
                           const real *res, bool gelu, real p, tt_rng at, int64_t n)
{
    uint32_t thr = keep_threshold(p);
    if (n <= 0) return;
    dropout_kernel<<<tt_cuda_blocks(blocks4(n)), TT_CUDA_THREADS, 0, stream()>>>(
        out, mask, deriv, inp, res, gelu, R(1) / (R(1) - p), at, tt_cuda_step_vary(), thr, n,
        quads(out, inp, res, deriv, mask));
    TT_CUDA_CHECK(cudaGetLastError());
}

/* out (n), mask (n), inp (n) */
void tt_cuda_dropout_forward(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                             int64_t n)
{
    launch_dropout(out, mask, NULL, inp, NULL, false, p, at, n);
}

/* x (n) = res (n) + dropout(x), mask (n) written only when p > 0 */
void tt_cuda_dropout_add_forward(real *x, uint8_t *mask, const real *res, real p, tt_rng at,
                                 int64_t n)
{
    launch_dropout(x, p > R(0) ? mask : NULL, NULL, x, res, false, p, at, n);
}

/* out (n) = dropout(gelu(inp (n))), mask (n) written only when p > 0, deriv (n) = gelu'(inp)
 * unless NULL */
void tt_cuda_gelu_dropout_forward(real *out, uint8_t *mask, real *deriv, const real *inp, real p,
                                  tt_rng at, int64_t n)
{
    launch_dropout(out, p > R(0) ? mask : NULL, deriv, inp, NULL, true, p, at, n);
}

/* dinp (n) (+)= dout (n) * keep * scale * deriv (n), deriv = gelu'(x) as the forward wrote it:
 * added with acc, else written; mask (n) NULL at p = 0 (every element kept, scale 1) */
static __global__ void gelu_dropout_backward_kernel(real *dinp, const uint8_t *mask,
                                                    const real *deriv, const real *dout,
                                                    real scale, int64_t n, bool acc)
{
    GRID_LOOP(i, n)
    {
        real g = !mask ? dout[i] : mask[i] ? MUL_RN(dout[i], scale) : R(0);
        real d = MUL_RN(g, deriv[i]);
        dinp[i] = acc ? dinp[i] + d : d;
    }
}

void tt_cuda_gelu_dropout_backward(real *dinp, const uint8_t *mask, const real *deriv,
                                   const real *dout, real p, int64_t n, bool acc)
{
    if (n <= 0) return;
    gelu_dropout_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(
        dinp, mask, deriv, dout, R(1) / (R(1) - p), n, acc);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (n) (+)= dout (n) * scale where mask (n) is 1: added with acc, else written */
static __global__ void dropout_backward_kernel(real *dinp, const uint8_t *mask, const real *dout,
                                               real scale, int64_t n, bool acc)
{
    GRID_LOOP(i, n)
    {
        real g = mask[i] ? MUL_RN(dout[i], scale) : R(0);
        dinp[i] = acc ? dinp[i] + g : g;
    }
}

void tt_cuda_dropout_backward(real *dinp, const uint8_t *mask, const real *dout, real p, int64_t n,
                              bool acc)
{
    if (n <= 0) return;
    dropout_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(
        dinp, mask, dout, R(1) / (R(1) - p), n, acc);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* x (n) = keep * max(x, 0) * scale, in place; vec: quads() of x */
static __global__ void relu_dropout_kernel(real *x, real scale, tt_rng at,
                                           const tt_cuda_vary *vary, uint32_t thr, int64_t n,
                                           bool vec)
{
    if (vary) at.counter += vary->rng_delta;
    GRID_LOOP(j, blocks4(n))
    {
        const unsigned keep = keep4(&at, j, thr);
        const int64_t i0 = 4 * j;
        const bool whole = vec && i0 + 4 <= n;
        real v[4];
        load4(v, x, i0, whole, n);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            real y = MUL_RN(v[k], scale);
            v[k] = (keep >> k & 1u) && v[k] > R(0) ? y : R(0);
        }
        store4(x, v, i0, whole, n);
    }
}

void tt_cuda_relu_dropout_forward(real *x, real p, tt_rng at, int64_t n)
{
    uint32_t thr = keep_threshold(p);
    if (n <= 0) return;
    relu_dropout_kernel<<<tt_cuda_blocks(blocks4(n)), TT_CUDA_THREADS, 0, stream()>>>(
        x, R(1) / (R(1) - p), at, tt_cuda_step_vary(), thr, n, quads(x, NULL, NULL, NULL, NULL));
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dx (n) (+)= dout (n) * scale where out (n) > 0: added with acc, else written */
static __global__ void relu_dropout_backward_kernel(real *dx, const real *out, const real *dout,
                                                    real scale, int64_t n, bool acc)
{
    GRID_LOOP(i, n)
    {
        real g = MUL_RN(dout[i], scale);
        real d = out[i] > R(0) ? g : R(0);
        dx[i] = acc ? dx[i] + d : d;
    }
}

void tt_cuda_relu_dropout_backward(real *dx, const real *out, const real *dout, real p, int64_t n,
                                   bool acc)
{
    if (n <= 0) return;
    relu_dropout_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(
        dx, out, dout, R(1) / (R(1) - p), n, acc);
    TT_CUDA_CHECK(cudaGetLastError());
}
