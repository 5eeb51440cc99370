/* cuda/layernorm.cu: LayerNorm over the last dimension, with affine weight and bias.
 *   mean = sum x / C, var = sum (x - mean)^2 / C (biased, as PyTorch), rstd = 1/sqrt(var + eps)
 *   xhat = (x - mean) * rstd, y = xhat * w + b.  Saves mean and rstd per row.
 *   backward, per row, with g = dy * w:
 *     dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dy * xhat,  db += dy
 * Rows one warp each (lane l sums columns l, l + 32, ... in order, then a fixed butterfly);
 * dw and db are column sums, a second kernel with one fixed tree per column over the rows in
 * order. Deterministic: no atomics, the same bits on every run. g is rounded on its own
 * (MUL_RN) in both loops: contracted into g - mean(g) it left, where the row's g are all equal
 * (C = 1), the product's rounding error times rstd instead of the CPU's exact zero.
 * Where C is a multiple of 4 (at most 128 QMAX) and the rows' pointers are quad-aligned, the
 * forward and dx kernels hold a lane's part of the row in registers instead (below). */
#include "tensor/cuda/common.cuh"

#include <type_traits>

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


/* dinp (N,C) += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight, or
 * without acc dinp = 0 + the same (not read: a fresh gradient, with the bits of one zeroed
 * and added to); dout (N,C), inp (N,C), weight (C), mean (N), rstd (N) */
static __global__ void layernorm_dx_kernel(real *dinp, const real *dout, const real *inp,
                                           const real *weight, const real *mean, const real *rstd,
                                           int64_t N, int C, bool acc)
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
            dx[c] = (acc ? dx[c] : R(0)) +
                    s * (MUL_RN(dy[c], weight[c]) - gmean - (x[c] - m) * s * gxmean);
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

/* ---- a lane's part of the row in registers --------------------------------------------------
 * The loops above read a row from memory 3 times (forward) or twice (dx), each pass a chain of
 * 4-byte loads that wait one after another: at base (C = 768, 24 a lane a pass) a warp has one
 * load in flight, and stop 28's ncu gave LayerNorm 3.4 ms of base's step where its traffic is
 * worth about 1. Here lane l holds the quads l, l + 32, ..., l + 32 (Q - 1) of its row (quad
 * j: columns 4j .. 4j+3, those at or past C / 4 absent), all loaded at once, 16 bytes each,
 * and the passes run over registers. A lane adds its quads in order, each quad's 4 in order,
 * then warp_sum: a fixed order, the same bits on every run (not the loops' order above: the
 * CPU comparisons' tolerances cover both). Q is 1, 2, 4, 6 or 8 (C up to 128, 256, 512, 768,
 * 1024: 6 is base's, where 8 would hold 2 quads a lane for nothing, and dx's registers at 8,
 * 157 a thread, leave one block an SM; float64, whose quads are twice the registers, stops at
 * 4 so that the check builds do not spill). */
#ifdef TT_DOUBLE
#define QMAX 4
#else
#define QMAX 8
#endif

/* quad i of this lane's part of a row: its index in the row, or -1 where the row has none */
static __device__ __forceinline__ int lane_quad(int i, int C)
{
    const int j = threadIdx.x % 32 + 32 * i;
    return j < C / 4 ? j : -1;
}

/* out (N,C), mean (N), rstd (N), inp (N,C), weight (C), bias (C), as layernorm_kernel; weight
 * and bias restrict, so that their loads may go ahead of the stores to out */
template <int Q>
static __global__ void layernorm_quads_kernel(real *out, real *mean, real *rstd, const real *inp,
                                              const real *__restrict__ weight,
                                              const real *__restrict__ bias, int64_t N, int C,
                                              real eps)
{
    ROW_LOOP(r, N)
    {
        real4 x[Q] = {};
#pragma unroll
        for (int i = 0; i < Q; i++)
            if (lane_quad(i, C) >= 0) x[i] = ld_quad(inp + r * C, lane_quad(i, C));
        real s = R(0);
#pragma unroll
        for (int i = 0; i < Q; i++)
            if (lane_quad(i, C) >= 0)
                for (int k = 0; k < 4; k++) s += x[i].v[k];
        const real m = warp_sum(s) / (real)C;
        real v = R(0);
#pragma unroll
        for (int i = 0; i < Q; i++)
            if (lane_quad(i, C) >= 0)
                for (int k = 0; k < 4; k++) v += (x[i].v[k] - m) * (x[i].v[k] - m);
        const real rs = R(1) / R_SQRT(warp_sum(v) / (real)C + eps);
#pragma unroll
        for (int i = 0; i < Q; i++) {
            const int j = lane_quad(i, C);
            if (j < 0) continue;
            const real4 w = ld_quad(weight, j), b = ld_quad(bias, j);
            real4 y;
            for (int k = 0; k < 4; k++) y.v[k] = (x[i].v[k] - m) * rs * w.v[k] + b.v[k];
            st_quad(out + r * C, j, y);
        }
        if (threadIdx.x % 32 == 0) {
            mean[r] = m;
            rstd[r] = rs;
        }
    }
}

/* dinp (N,C) += (or, without acc, = 0 +) as layernorm_dx_kernel; dout (N,C), inp (N,C),
 * weight (C), mean (N), rstd (N). g = dy * w and x - mean are kept; dinp's quads are all
 * loaded before the first is stored. */
template <int Q>
static __global__ void layernorm_dx_quads_kernel(real *dinp, const real *dout, const real *inp,
                                                 const real *weight, const real *mean,
                                                 const real *rstd, int64_t N, int C, bool acc)
{
    ROW_LOOP(r, N)
    {
        const real m = mean[r], s = rstd[r];
        real4 g[Q] = {}, xc[Q] = {};
#pragma unroll
        for (int i = 0; i < Q; i++) {
            const int j = lane_quad(i, C);
            if (j < 0) continue;
            const real4 dy = ld_quad(dout + r * C, j), x = ld_quad(inp + r * C, j);
            const real4 w = ld_quad(weight, j);
            for (int k = 0; k < 4; k++) {
                g[i].v[k] = MUL_RN(dy.v[k], w.v[k]);
                xc[i].v[k] = x.v[k] - m;
            }
        }
        real ga = R(0), gxa = R(0);
#pragma unroll
        for (int i = 0; i < Q; i++)
            if (lane_quad(i, C) >= 0)
                for (int k = 0; k < 4; k++) {
                    ga += g[i].v[k];
                    gxa += g[i].v[k] * xc[i].v[k];
                }
        const real gmean = warp_sum(ga) / (real)C, gxmean = warp_sum(gxa) * s / (real)C;
        real4 dx[Q] = {};
#pragma unroll
        for (int i = 0; i < Q; i++)
            if (acc && lane_quad(i, C) >= 0) dx[i] = ld_quad(dinp + r * C, lane_quad(i, C));
#pragma unroll
        for (int i = 0; i < Q; i++) {
            const int j = lane_quad(i, C);
            if (j < 0) continue;
            for (int k = 0; k < 4; k++)
                dx[i].v[k] += s * (g[i].v[k] - gmean - xc[i].v[k] * s * gxmean);
            st_quad(dinp + r * C, j, dx[i]);
        }
    }
}

/* the Q a row of C takes in registers, or 0 where it stays in memory: C not a multiple of 4,
 * over 128 QMAX, or a pointer (the rows' start, the weight's) not at a quad */
static int row_quads(int C, std::initializer_list<const void *> ptrs)
{
    if (C % 4 || C > 128 * QMAX || !tt_cuda_quads(ptrs)) return 0;
    const int q = (C + 127) / 128;
    return q <= 1 ? 1 : q <= 2 ? 2 : q <= 4 ? 4 : q <= 6 ? 6 : 8;
}

/* f(Q) with Q = q as a constant, for the q that row_quads gives (float64 instantiates no 6 or 8) */
template <typename F> static void with_quads(int q, F f)
{
    using std::integral_constant;
    if (q == 1)
        f(integral_constant<int, 1>{});
    else if (q == 2)
        f(integral_constant<int, 2>{});
    else if (q == 4)
        f(integral_constant<int, 4>{});
    else if constexpr (QMAX >= 8) {
        if (q == 6)
            f(integral_constant<int, 6>{});
        else
            f(integral_constant<int, 8>{});
    }
}

void tt_cuda_layernorm_forward(real *out, real *mean, real *rstd, const real *inp,
                               const real *weight, const real *bias, int64_t N, int C, real eps)
{
    if (N <= 0 || C <= 0) return;
    const int q = row_quads(C, {out, inp, weight, bias});
    if (q)
        with_quads(q, [&](auto Q) {
            layernorm_quads_kernel<Q()><<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(
                out, mean, rstd, inp, weight, bias, N, C, eps);
        });
    else
        layernorm_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(
            out, mean, rstd, inp, weight, bias, N, C, eps);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (N,C), dweight (C), dbias (C) (any may be NULL), dout (N,C), inp (N,C), weight (C),
 * mean (N), rstd (N); dinp added to, or written when !acc */
void tt_cuda_layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout,
                                const real *inp, const real *weight, const real *mean,
                                const real *rstd, int64_t N, int C, bool acc)
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
            const int q = row_quads(C, {dinp, dout, inp, weight});
            if (q)
                with_quads(q, [&](auto Q) {
                    layernorm_dx_quads_kernel<Q()><<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0,
                                                     stream()>>>(dinp, dout, inp, weight, mean,
                                                                 rstd, N, C, acc);
                });
            else
                layernorm_dx_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(
                    dinp, dout, inp, weight, mean, rstd, N, C, acc);
            TT_CUDA_CHECK(cudaGetLastError());
        });
}
