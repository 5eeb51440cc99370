/* cuda/activation.cu: ReLU and GELU (erf form, PyTorch's default approximate='none').
 *   relu: y = max(x, 0),       dx += dy * [x > 0]
 *   gelu: y = x * Phi(x),      dx += dy * (Phi(x) + x * phi(x))
 * GELU's math is tensor/kernel_math.h's, the expressions the CPU kernels call. Both save
 * nothing but their input. One thread per element, a grid stride apart. */
#include "tensor/cuda/common.cuh"
#include "tensor/kernel_math.h"

/* out (n) = max(inp (n), 0) */
static __global__ void relu_kernel(real *out, const real *inp, int64_t n)
{
    GRID_LOOP(i, n) out[i] = inp[i] > R(0) ? inp[i] : R(0);
}

void tt_cuda_relu_forward(real *out, const real *inp, int64_t n)
{
    if (n <= 0) return;
    relu_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(out, inp, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (n) += dout (n) where inp (n) > 0 */
static __global__ void relu_backward_kernel(real *dinp, const real *inp, const real *dout,
                                            int64_t n)
{
    GRID_LOOP(i, n) dinp[i] += inp[i] > R(0) ? dout[i] : R(0);
}

void tt_cuda_relu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    if (n <= 0) return;
    relu_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(dinp, inp, dout, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* out (n) = gelu(inp (n)) */
static __global__ void gelu_kernel(real *out, const real *inp, int64_t n)
{
    GRID_LOOP(i, n) out[i] = tt_gelu_value(inp[i]);
}

void tt_cuda_gelu_forward(real *out, const real *inp, int64_t n)
{
    if (n <= 0) return;
    gelu_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(out, inp, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (n) += dout (n) * gelu'(inp (n)) */
static __global__ void gelu_backward_kernel(real *dinp, const real *inp, const real *dout,
                                            int64_t n)
{
    GRID_LOOP(i, n) dinp[i] += dout[i] * tt_gelu_deriv(inp[i]);
}

void tt_cuda_gelu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    if (n <= 0) return;
    gelu_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(dinp, inp, dout, n);
    TT_CUDA_CHECK(cudaGetLastError());
}
