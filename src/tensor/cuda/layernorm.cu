/* cuda/layernorm.cu: LayerNorm over the last dimension, with affine weight and bias.
 *   mean = sum x / C, var = sum (x - mean)^2 / C (biased, as PyTorch), rstd = 1/sqrt(var + eps)
 *   xhat = (x - mean) * rstd, y = xhat * w + b.  Saves mean and rstd per row.
 *   backward, per row, with g = dy * w:
 *     dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dy * xhat,  db += dy
 * Rows one warp each (lane l sums columns l, l + 32, ... in order, then a fixed butterfly);
 * dw and db are column sums, a second kernel with one fixed tree per column over the rows in
 * order. Deterministic: no atomics, the same bits on every run. g is rounded on its own
 * (MUL_RN) in both loops: contracted into g - mean(g) it left, where the row's g are all equal
 * (C = 1), the product's rounding error times rstd instead of the CPU's exact zero. */
#include "tensor/cuda/common.cuh"

/* out (N,C), mean (N), rstd (N), inp (N,C), weight (C), bias (C) */
static __global__ void layernorm_kernel(real *out, real *mean, real *rstd, const real *inp,
                                        const real *weight, const real *bias, int64_t N, int C,
                                        real eps)
{
    const int lane = threadIdx.x % 32;
    ROW_LOOP(r, N)
    {
        const real *x = inp + r * C;
        real *y = out + r * C;
        real s = R(0);
        for (int c = lane; c < C; c += 32)
            s += x[c];
        real m = warp_sum(s) / (real)C;
        real v = R(0);
        for (int c = lane; c < C; c += 32)
            v += (x[c] - m) * (x[c] - m);
        real rs = R(1) / R_SQRT(warp_sum(v) / (real)C + eps);
        for (int c = lane; c < C; c += 32)
            y[c] = (x[c] - m) * rs * weight[c] + bias[c];
        if (lane == 0) {
            mean[r] = m;
            rstd[r] = rs;
        }
    }
}

void tt_cuda_layernorm_forward(real *out, real *mean, real *rstd, const real *inp,
                               const real *weight, const real *bias, int64_t N, int C, real eps)
{
    if (N <= 0 || C <= 0) return;
    layernorm_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(
        out, mean, rstd, inp, weight, bias, N, C, eps);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (N,C) += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight;
 * dout (N,C), inp (N,C), weight (C), mean (N), rstd (N) */
static __global__ void layernorm_dx_kernel(real *dinp, const real *dout, const real *inp,
                                           const real *weight, const real *mean, const real *rstd,
                                           int64_t N, int C)
{
    const int lane = threadIdx.x % 32;
    ROW_LOOP(r, N)
    {
        const real *x = inp + r * C, *dy = dout + r * C;
        real *dx = dinp + r * C;
        real m = mean[r], s = rstd[r];
        real ga = R(0), gxa = R(0);
        for (int c = lane; c < C; c += 32) {
            real g = MUL_RN(dy[c], weight[c]);
            ga += g;
            gxa += g * (x[c] - m);
        }
        real gmean = warp_sum(ga) / (real)C, gxmean = warp_sum(gxa) * s / (real)C;
        for (int c = lane; c < C; c += 32)
            dx[c] += s * (MUL_RN(dy[c], weight[c]) - gmean - (x[c] - m) * s * gxmean);
    }
}

/* dweight (C) += colsum(dout * xhat), dbias (C) += colsum(dout), either may be NULL
 * (common.cuh's column sums); a thread's rows are read 4 at a time, then added in order */
static __global__ void __launch_bounds__(COL_W * COL_H)
layernorm_dwdb_kernel(real *dweight, real *dbias, const real *dout, const real *inp,
                      const real *mean, const real *rstd, int64_t N, int C)
{
    __shared__ real part[2][COL_H][COL_W]; /* dweight's, dbias's */
    const int tx = threadIdx.x, ty = threadIdx.y, c = blockIdx.x * COL_W + tx;
    real sw = R(0), sb = R(0);
    if (c < C) {
        int64_t r = ty;
        for (; r + 3 * COL_H < N; r += 4 * COL_H) {
            real dy[4], x[4], m[4], rs[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int64_t ru = r + u * COL_H;
                dy[u] = dout[ru * C + c], x[u] = inp[ru * C + c], m[u] = mean[ru];
                rs[u] = rstd[ru];
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                sw += dy[u] * ((x[u] - m[u]) * rs[u]);
                sb += dy[u];
            }
        }
        for (; r < N; r += COL_H) {
            const real dy = dout[r * C + c];
            sw += dy * ((inp[r * C + c] - mean[r]) * rstd[r]);
            sb += dy;
        }
    }
    part[0][ty][tx] = sw;
    part[1][ty][tx] = sb;
    col_tree(part, 2);
    if (ty > 0 || c >= C) return;
    if (dweight) dweight[c] += part[0][0][tx];
    if (dbias) dbias[c] += part[1][0][tx];
}

/* dinp (N,C), dweight (C), dbias (C) (any may be NULL), dout (N,C), inp (N,C), weight (C),
 * mean (N), rstd (N) */
void tt_cuda_layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout,
                                const real *inp, const real *weight, const real *mean,
                                const real *rstd, int64_t N, int C)
{
    if (N <= 0 || C <= 0) return;
    tt_cuda_beside( /* dweight, dbias beside dinp */
        dinp && (dweight || dbias),
        [&] {
            if (!dweight && !dbias) return;
            layernorm_dwdb_kernel<<<(C + COL_W - 1) / COL_W, dim3(COL_W, COL_H), 0,
                                    stream()>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
            TT_CUDA_CHECK(cudaGetLastError());
        },
        [&] {
            if (!dinp) return;
            layernorm_dx_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(
                dinp, dout, inp, weight, mean, rstd, N, C);
            TT_CUDA_CHECK(cudaGetLastError());
        });
}
