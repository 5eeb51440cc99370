/* kernel_math.h: the element math the CPU and CUDA kernels share, written once: GELU (erf form)
 * and its derivative, one AdamW and one SGD element update, and the dropout keep bits of one
 * Philox block. Header-only and TT_HD (__host__ __device__ under nvcc, tensor/philox.h), so
 * cpu/activation.c, cpu/optimizer.c and the .cu files compile the same expressions; the CPU
 * kernels call these in their loops, and tests/test_kernel_math.c checks them against the CPU
 * table on the host. The operation order is the contract: it is what makes the CPU's results
 * what they were (torch's order for the optimizers). nvcc contracts a * b + c into an FMA by
 * default, so device results may differ from the host's in the last bits (not the masks).
 * GELU is the one exception to "the same expression": on a float32 host it is tensor/erf_f32.h's
 * vectorisable erf (libm's erff is a call per element), on a device CUDA's erff (already
 * vectorised), and float64 keeps libm's erf exactly, the form the gradient checks and the
 * PyTorch parity compare with. */
#ifndef TT_KERNEL_MATH_H
#define TT_KERNEL_MATH_H

#include "tensor/backend.h"
#include "tensor/erf_f32.h"
#include "tensor/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_INV_SQRT2 R(0.70710678118654752440)
#define TT_INV_SQRT_2PI R(0.39894228040143267794)

/* gelu(x) = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 (PyTorch's approximate='none') */
TT_HD static inline real tt_gelu_value(real x)
{
#if defined(TT_DOUBLE) || defined(__CUDA_ARCH__)
    return R(0.5) * x * (R(1) + R_ERF(x * TT_INV_SQRT2));
#else
    return tt_gelu_f32(x);
#endif
}

/* gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
TT_HD static inline real tt_gelu_deriv(real x)
{
#if defined(TT_DOUBLE) || defined(__CUDA_ARCH__)
    real cdf = R(0.5) * (R(1) + R_ERF(x * TT_INV_SQRT2));
    real pdf = TT_INV_SQRT_2PI * R_EXP(R(-0.5) * x * x);
    return cdf + x * pdf;
#else
    return tt_gelu_deriv_f32(x);
#endif
}

/* One AdamW element, in place, torch's single-tensor order (backend.h states the scalars):
 * param.mul_(1 - lr*wd); exp_avg.mul_(b1).add_(g, alpha=1-b1);
 * exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2); denom = exp_avg_sq.sqrt() / sqrt(bc2) + eps;
 * param.addcdiv_(exp_avg, denom, value=-lr/bc1). All three loaded before any store. */
TT_HD static inline void tt_adamw_update(real *p, real *m, real *v, real g,
                                         const tt_adamw_scalars *s)
{
    real pd = *p * s->decay;
    real mn = *m * s->b1 + s->a1 * g;
    real vn = *v * s->b2 + s->a2 * g * g;
    *m = mn;
    *v = vn;
    *p = pd + -s->step * mn / (R_SQRT(vn) / s->bc2_sqrt + s->eps);
}

/* One SGD element, in place (torch.optim.SGD, dampening 0, nesterov off): d = g + wd*p when
 * wd != 0 (g itself unchanged); with momentum, buf = d at the first step, else buf*mu + d,
 * and d = buf; p += -lr*d. buf is read or written only with use_buf. */
TT_HD static inline void tt_sgd_update(real *p, real *buf, real g, const tt_sgd_scalars *s)
{
    real d = g;
    if (s->wd != R(0)) d = d + s->wd * *p;
    if (s->use_buf) {
        *buf = s->first ? d : *buf * s->mu + d;
        d = *buf;
    }
    *p = *p + s->neg_lr * d;
}

/* Dropout keep bits of elements 4j .. 4j+3 of the draw that started at cursor `at` (bit k:
 * element 4j+k, 1 = kept; thr = tt_philox_keep_threshold(p)). Element e of a draw is word
 * at->counter + e of (seed, stream) (rng.h), and word w is lane w % 4 of Philox block w / 4
 * (philox.h). tt_rng_take leaves counter a multiple of 4, so elements 4j .. 4j+3 are lanes
 * 0..3 of block counter/4 + j: one block, four bits. A data-parallel rank's share of a draw
 * (tt_graph_take) may start inside a block (counter % 4 = s > 0): its four elements are then
 * lanes s..3 of that block and 0..s-1 of the next. Either way the same bits tt_cpu_keep_mask
 * gives element by element. */
TT_HD static inline unsigned tt_dropout_keep4(const tt_rng *at, int64_t j, uint32_t thr)
{
    uint32_t w[8];
    const unsigned s = (unsigned)(at->counter & 3);
    const uint64_t b = (at->counter >> 2) + (uint64_t)j;
    tt_philox_block(at->seed, at->stream, b, w);
    if (s) tt_philox_block(at->seed, at->stream, b + 1, w + 4);
    return (unsigned)tt_philox_keep(w[s], thr) | (unsigned)tt_philox_keep(w[s + 1], thr) << 1 |
           (unsigned)tt_philox_keep(w[s + 2], thr) << 2 |
           (unsigned)tt_philox_keep(w[s + 3], thr) << 3;
}

#ifdef __cplusplus
}
#endif

#endif
