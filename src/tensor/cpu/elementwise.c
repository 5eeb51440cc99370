/* cpu/elementwise.c: add, scale, axpy, bias add and elementwise multiply.
 *   out = a + b       backward: da += dout, db += dout          (axpy with alpha 1)
 *   out = s * x       backward: dx += s * dout                  (axpy with alpha s)
 *   out = x + bias    backward: dx += dout, dbias += colsum(dout)
 *   out = a * b       backward: da += dout * b, db += dout * a */
#include "tensor/cpu/cpu.h"

void tt_cpu_axpy(real *y, real alpha, const real *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

void tt_cpu_add_forward(real *out, const real *a, const real *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void tt_cpu_scale_forward(real *out, const real *inp, real s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] = s * inp[i];
}

/* out (N,C), inp (N,C), bias (C) */
void tt_cpu_bias_forward(real *out, const real *inp, const real *bias, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *x = inp + r * C;
        real *y = out + r * C;
        for (int c = 0; c < C; c++) y[c] = x[c] + bias[c];
    }
}

/* dbias (C), dout (N,C) */
void tt_cpu_bias_backward(real *dbias, const real *dout, int64_t N, int C)
{
    for (int64_t r = 0; r < N; r++) {
        const real *dy = dout + r * C;
        for (int c = 0; c < C; c++) dbias[c] += dy[c];
    }
}

void tt_cpu_mul_forward(real *out, const real *a, const real *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}

/* da, db may be NULL; when a == b (x*x) both are written and both contributions land. */
void tt_cpu_mul_backward(real *da, real *db, const real *dout, const real *a, const real *b,
                         int64_t n)
{
    if (da)
        for (int64_t i = 0; i < n; i++) da[i] += dout[i] * b[i];
    if (db)
        for (int64_t i = 0; i < n; i++) db[i] += dout[i] * a[i];
}
