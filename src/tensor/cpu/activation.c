/* cpu/activation.c: ReLU and GELU (erf form, PyTorch's default approximate='none').
 *   relu: y = max(x, 0),       dx += dy * [x > 0]
 *   gelu: y = x * Phi(x),      Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2/2) / sqrt(2 pi)
 *         dx += dy * (Phi(x) + x * phi(x))
 * Both save nothing but their input. Elementwise, split over the pool; GELU's math is
 * tensor/kernel_math.h's, shared with the CUDA kernels. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/kernel_math.h"

typedef struct act {
    real *y;
    const real *x, *dy;
} act;

static void relu_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    for (int64_t i = lo; i < hi; i++) a->y[i] = a->x[i] > R(0) ? a->x[i] : R(0);
}

void tt_cpu_relu_forward(real *out, const real *inp, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, relu_range, &(act){.y = out, .x = inp});
}

static void relu_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    real *restrict dx = a->y;
    const real *restrict x = a->x, *restrict dy = a->dy;
    /* a select, not a branch: the loop vectorises */
    for (int64_t i = lo; i < hi; i++) {
        real g = dy[i];
        dx[i] += x[i] > R(0) ? g : R(0);
    }
}

void tt_cpu_relu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    act a = {.y = dinp, .x = inp, .dy = dout};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, relu_backward_range, &a);
}

static void gelu_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    for (int64_t i = lo; i < hi; i++)
        a->y[i] = tt_gelu_value(a->x[i]);
}

void tt_cpu_gelu_forward(real *out, const real *inp, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 8, gelu_range, &(act){.y = out, .x = inp});
}

static void gelu_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    for (int64_t i = lo; i < hi; i++)
        a->y[i] += a->dy[i] * tt_gelu_deriv(a->x[i]);
}

void tt_cpu_gelu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    act a = {.y = dinp, .x = inp, .dy = dout};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN / 8, gelu_backward_range, &a);
}
