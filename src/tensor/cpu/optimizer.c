/* cpu/optimizer.c: the optimizers' element loops and the clipping norm's sum of squares, split
 * over the pool. AdamW and SGD follow PyTorch's single-tensor code (torch 1.13) operation by
 * operation: the element updates are tensor/kernel_math.h's, shared with the CUDA kernels, and
 * the scalars come rounded from train/optim/optim.c, so the float64 build equals torch.optim to
 * the last few ulps. Elementwise, so the bits do not depend on the thread count; the sum of
 * squares is a tt_pool_sum over fixed blocks, the same at any thread count; clipping scales
 * by it in place. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/cpu/reduce.h"
#include "tensor/kernel_math.h"

#include <math.h>
#include <string.h>

typedef struct adamw_args {
    real *p, *m, *v;
    const real *g;
    const tt_adamw_scalars *s;
} adamw_args;

TT_VEC static void adamw_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const adamw_args *a = ctx;
    const tt_adamw_scalars s = *a->s;
    real *p = a->p, *m = a->m, *v = a->v;
    const real *g = a->g;
    for (int64_t i = lo; i < hi; i++)
        tt_adamw_update(&p[i], &m[i], &v[i], g[i], &s);
}

void tt_cpu_adamw_step(real *p, real *m, real *v, const real *g, const tt_adamw_scalars *s,
                       const real *gate, int64_t n)
{
    if (gate && !isfinite(*gate)) return;
    tt_pool_for(n, 16, 8192, adamw_range, &(adamw_args){.p = p, .m = m, .v = v, .g = g, .s = s});
}

typedef struct sgd_args {
    real *p, *buf;
    const real *g;
    const tt_sgd_scalars *s;
} sgd_args;

TT_VEC static void sgd_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const sgd_args *a = ctx;
    const tt_sgd_scalars s = *a->s;
    for (int64_t i = lo; i < hi; i++)
        tt_sgd_update(&a->p[i], &a->buf[i], a->g[i], &s);
}

void tt_cpu_sgd_step(real *p, real *buf, const real *g, const tt_sgd_scalars *s,
                     const real *gate, int64_t n)
{
    if (gate && !isfinite(*gate)) return;
    tt_pool_for(n, 16, 8192, sgd_range, &(sgd_args){.p = p, .buf = buf, .g = g, .s = s});
}

/* the sum of x^2 over [lo, hi) in double, in TT_LANES lanes (lane k: elements lo + k,
 * lo + k + 16, ...; one chain of additions would wait 4 cycles an element), the lanes added
 * in reduce.h's fixed order, then the tail: the same bits at any vector width */
typedef double sq_lanes __attribute__((vector_size(TT_LANES * sizeof(double))));

TT_VEC static double squares_range(void *ctx, int64_t lo, int64_t hi)
{
    const real *x = ctx;
    sq_lanes acc = {0};
    int64_t i = lo;
    for (; i + TT_LANES <= hi; i += TT_LANES) {
        sq_lanes v = __builtin_convertvector(tt_lanes_at(x + i), sq_lanes);
        acc += v * v;
    }
    double a[TT_LANES];
    memcpy(a, &acc, sizeof a);
    double ss = tt_lanes_total_f64(a);
    for (; i < hi; i++) ss += (double)x[i] * (double)x[i];
    return ss;
}

double tt_cpu_sum_squares(const real *x, int64_t n)
{
    return tt_pool_sum(n, 8192, squares_range, (void *)x);
}

/* the norm and the scale as optim.c computed them on the host before (the same bits) */
void tt_cpu_clip_grads(real *g, int64_t n, double max_norm, double *norm)
{
    *norm = sqrt(tt_cpu_sum_squares(g, n));
    if (max_norm > 0.0 && *norm > max_norm)
        tt_cpu_scale_forward(g, g, (real)(max_norm / (*norm + 1e-6)), n);
}
