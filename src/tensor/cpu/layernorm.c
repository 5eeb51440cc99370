/* cpu/layernorm.c: LayerNorm over the last dimension, with affine weight and bias.
 *   mean = sum x / C, var = sum (x - mean)^2 / C (biased, as PyTorch), rstd = 1/sqrt(var + eps)
 *   xhat = (x - mean) * rstd, y = xhat * w + b.  Saves mean and rstd per row.
 *   backward, per row, with g = dy * w:
 *     dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  dw += dy * xhat,  db += dy */
#include "tensor/cpu/cpu.h"

/* out (N,C), mean (N), rstd (N), inp (N,C), weight (C), bias (C) */
void tt_cpu_layernorm_forward(real *out, real *mean, real *rstd, const real *inp,
                              const real *weight, const real *bias, int64_t N, int C, real eps)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C;
        real *y = out + r * C;
        real m = R(0);
        for (int c = 0; c < C; c++) m += x[c];
        m /= (real)C;
        real v = R(0);
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= (real)C;
        real s = R(1) / R_SQRT(v + eps);
        for (int c = 0; c < C; c++) y[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[r] = m;
        rstd[r] = s;
    }
}

/* dinp (N,C), dweight (C), dbias (C), dout (N,C), inp (N,C), weight (C), mean (N), rstd (N) */
void tt_cpu_layernorm_backward(real *dinp, real *dweight, real *dbias, const real *dout,
                               const real *inp, const real *weight, const real *mean,
                               const real *rstd, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C, *dy = dout + r * C;
        real m = mean[r], s = rstd[r];
        real gmean = R(0), gxmean = R(0);
        for (int c = 0; c < C; c++) {
            real xhat = (x[c] - m) * s;
            real g = dy[c] * weight[c];
            gmean += g;
            gxmean += g * xhat;
            if (dweight) dweight[c] += dy[c] * xhat;
            if (dbias) dbias[c] += dy[c];
        }
        gmean /= (real)C;
        gxmean /= (real)C;
        if (!dinp) continue;
        real *dx = dinp + r * C;
        for (int c = 0; c < C; c++) {
            real xhat = (x[c] - m) * s;
            dx[c] += s * (dy[c] * weight[c] - gmean - xhat * gxmean);
        }
    }
}
