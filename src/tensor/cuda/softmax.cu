/* cuda/softmax.cu: row softmax over the last dimension, one warp per row.
 *   y_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k (so no overflow)
 *   A row whose entries are all -inf (every key masked) gives zeros, never NaN.
 *   backward, per row: dx_j += y_j * (dy_j - sum_k dy_k y_k). Saves its output y.
 * Lane l reduces columns l, l + 32, ... in order, then the lanes combine in a fixed butterfly:
 * the same bits on every run, for any C (the warp loops past 32 columns). */
#include "tensor/cuda/common.cuh"

/* out (N,C), inp (N,C) */
static __global__ void softmax_kernel(real *out, const real *inp, int64_t N, int C)
{
    const int lane = threadIdx.x % 32;
    ROW_LOOP(r, N)
    {
        const real *x = inp + r * C;
        real *y = out + r * C;
        real m = -R_INF;
        for (int c = lane; c < C; c += 32)
            m = x[c] > m ? x[c] : m;
        m = warp_max(m);
        if (m == -R_INF) {
            for (int c = lane; c < C; c += 32)
                y[c] = R(0);
            continue;
        }
        real s = R(0);
        for (int c = lane; c < C; c += 32)
            s += R_EXP(x[c] - m);
        real inv = R(1) / warp_sum(s);
        for (int c = lane; c < C; c += 32)
            y[c] = R_EXP(x[c] - m) * inv;
    }
}

void tt_cuda_softmax_forward(real *out, const real *inp, int64_t N, int C)
{
    if (N <= 0 || C <= 0) return;
    softmax_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(out, inp, N, C);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (N,C) += out * (dout - sum(dout * out)) per row; out (N,C) saved, dout (N,C) */
static __global__ void softmax_backward_kernel(real *dinp, const real *out, const real *dout,
                                               int64_t N, int C)
{
    const int lane = threadIdx.x % 32;
    ROW_LOOP(r, N)
    {
        const real *y = out + r * C, *dy = dout + r * C;
        real *dx = dinp + r * C;
        real dot = R(0);
        for (int c = lane; c < C; c += 32)
            dot += dy[c] * y[c];
        dot = warp_sum(dot);
        for (int c = lane; c < C; c += 32)
            dx[c] += y[c] * (dy[c] - dot);
    }
}

void tt_cuda_softmax_backward(real *dinp, const real *out, const real *dout, int64_t N, int C)
{
    if (N <= 0 || C <= 0) return;
    softmax_backward_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(dinp, out,
                                                                                      dout, N, C);
    TT_CUDA_CHECK(cudaGetLastError());
}
