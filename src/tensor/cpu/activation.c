/* cpu/activation.c: ReLU and GELU (erf form, PyTorch's default approximate='none').
 *   relu: y = max(x, 0),       dx += dy * [x > 0]
 *   gelu: y = x * Phi(x),      Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2/2) / sqrt(2 pi)
 *         dx += dy * (Phi(x) + x * phi(x))
 * Both save nothing but their input. */
#include "tensor/cpu/cpu.h"

#define INV_SQRT2 R(0.70710678118654752440)
#define INV_SQRT_2PI R(0.39894228040143267794)

void tt_cpu_relu_forward(real *out, const real *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] = inp[i] > R(0) ? inp[i] : R(0);
}

void tt_cpu_relu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (inp[i] > R(0)) dinp[i] += dout[i];
}

void tt_cpu_gelu_forward(real *out, const real *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        real x = inp[i];
        out[i] = R(0.5) * x * (R(1) + R_ERF(x * INV_SQRT2));
    }
}

void tt_cpu_gelu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        real x = inp[i];
        real cdf = R(0.5) * (R(1) + R_ERF(x * INV_SQRT2));
        real pdf = INV_SQRT_2PI * R_EXP(R(-0.5) * x * x);
        dinp[i] += dout[i] * (cdf + x * pdf);
    }
}
