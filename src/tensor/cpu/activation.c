/* cpu/activation.c: ReLU and GELU (erf form, PyTorch's default approximate='none').
 *   relu: y = max(x, 0),       dx += dy * [x > 0]
 *   gelu: y = x * Phi(x),      Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2/2) / sqrt(2 pi)
 *         dx += dy * (Phi(x) + x * phi(x))
 * Both save nothing but their input. Elementwise, split over the pool; GELU's math is
 * tensor/kernel_math.h's (in float32 tensor/erf_f32.h's branch-free erf), in loops that GCC
 * vectorises, for the x86-64 baseline (4 floats), AVX2 (8) and AVX-512 (16): TT_VEC, the same
 * expressions and so the same bits. The GELU row loops also serve the fused
 * GELU + dropout (cpu/dropout.c). */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/kernel_math.h"

typedef struct act {
    real *y;
    const real *x, *dy;
} act;

TT_VEC static void relu_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    for (int64_t i = lo; i < hi; i++) a->y[i] = a->x[i] > R(0) ? a->x[i] : R(0);
}

void tt_cpu_relu_forward(real *out, const real *inp, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, relu_range, &(act){.y = out, .x = inp});
}

TT_VEC static void relu_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
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

/* ---- GELU: the row loops, compiled three times ------------------------------------------ */

/* GELU's ranges: about 2 ns an element with AVX2 (libm's erff: 10), so a quarter of the grain
 * is about its 5 us (measured alone, on a loaded machine; it is a grain, not a benchmark) */
#define GELU_GRAIN (TT_CPU_GRAIN / 4)

#if defined(__GNUC__)
#define GELU_LOOP static inline __attribute__((always_inline)) void
#else
#define GELU_LOOP static inline void
#endif

GELU_LOOP gelu_loop(real *restrict y, const real *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = tt_gelu_value(x[i]);
}

/* two loops, not one with a select on acc: the write needs no read of dx */
GELU_LOOP gelu_grad_loop(real *restrict dx, const real *restrict x, const real *restrict dy,
                         int64_t n, bool acc)
{
    if (acc)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * tt_gelu_deriv(x[i]);
    else
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * tt_gelu_deriv(x[i]);
}

/* the value and the derivative in one pass: the two share erf's exp and polynomials, which the
 * compiler computes once (the same expressions, so the same bits as two passes) */
GELU_LOOP gelu_both_loop(real *restrict y, real *restrict d, const real *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = tt_gelu_value(x[i]);
        d[i] = tt_gelu_deriv(x[i]);
    }
}

/* two loops, as gelu_grad_loop's */
GELU_LOOP mul_loop(real *restrict dx, const real *restrict dy, const real *restrict d, int64_t n,
                   bool acc)
{
    if (acc)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * d[i];
    else
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * d[i];
}

/* TT_VEC (cpu.h): the loops compiled for AVX-512, AVX2 and the baseline, one answer in all */
TT_VEC void tt_cpu_gelu_rows(real *y, const real *x, int64_t n) { gelu_loop(y, x, n); }

TT_VEC void tt_cpu_gelu_both_rows(real *y, real *d, const real *x, int64_t n)
{
    gelu_both_loop(y, d, x, n);
}

TT_VEC void tt_cpu_mul_rows(real *dx, const real *dy, const real *d, int64_t n, bool acc)
{
    mul_loop(dx, dy, d, n, acc);
}

TT_VEC void tt_cpu_gelu_grad_rows(real *dx, const real *x, const real *dy, int64_t n, bool acc)
{
    gelu_grad_loop(dx, x, dy, n, acc);
}

/* ---- GELU: the kernels --------------------------------------------------------------------- */

static void gelu_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    tt_cpu_gelu_rows(a->y + lo, a->x + lo, hi - lo);
}

void tt_cpu_gelu_forward(real *out, const real *inp, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, GELU_GRAIN, gelu_range, &(act){.y = out, .x = inp});
}

static void gelu_backward_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const act *a = ctx;
    tt_cpu_gelu_grad_rows(a->y + lo, a->x + lo, a->dy + lo, hi - lo, true);
}

void tt_cpu_gelu_backward(real *dinp, const real *inp, const real *dout, int64_t n)
{
    act a = {.y = dinp, .x = inp, .dy = dout};
    tt_pool_for(n, TT_CPU_ALIGN, GELU_GRAIN, gelu_backward_range, &a);
}
