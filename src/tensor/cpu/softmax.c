/* cpu/softmax.c: row softmax over the last dimension.
 *   y_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k (so no overflow)
 *   A row whose entries are all -inf (every key masked) gives zeros, never NaN.
 *   backward, per row: dx_j += y_j * (dy_j - sum_k dy_k y_k). Saves its output y. */
#include "tensor/cpu/cpu.h"

/* out (N,C), inp (N,C) */
void tt_cpu_softmax_forward(real *out, const real *inp, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C;
        real *y = out + r * C;
        real m = -R_INF;
        for (int c = 0; c < C; c++)
            if (x[c] > m) m = x[c];
        if (m == -R_INF) {
            for (int c = 0; c < C; c++) y[c] = R(0);
            continue;
        }
        real sum = R(0);
        for (int c = 0; c < C; c++) {
            y[c] = R_EXP(x[c] - m);
            sum += y[c];
        }
        real inv = R(1) / sum;
        for (int c = 0; c < C; c++) y[c] *= inv;
    }
}

/* dinp (N,C), out (N,C) saved, dout (N,C) */
void tt_cpu_softmax_backward(real *dinp, const real *out, const real *dout, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *y = out + r * C, *dy = dout + r * C;
        real *dx = dinp + r * C;
        real dot = R(0);
        for (int c = 0; c < C; c++) dot += dy[c] * y[c];
        for (int c = 0; c < C; c++) dx[c] += y[c] * (dy[c] - dot);
    }
}
