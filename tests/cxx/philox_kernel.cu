/* philox_kernel.cu: compiled (not run) by `make header-check` when nvcc is on the PATH, to show
 * that tensor/philox.h is device code. Two kernels of the shape the CUDA backend will have, one
 * thread per Philox block of 4 elements: a dropout keep mask, drawn as element e of the cursor
 * `at` exactly as tt_cpu_keep_mask draws it, and uniforms in [lo, hi) as tt_rng_uniform fills
 * them. The host code around them includes rng.h, so nvcc parses that too; a third kernel calls
 * tensor/kernel_math.h's functions. */
#include "tensor/kernel_math.h"
#include "tensor/philox.h"
#include "tensor/rng.h"

/* keep (n): keep[e] = uniform(at, first + e) >= p */
__global__ void tt_philox_check_keep(uint8_t *keep, tt_rng at, int64_t first, int64_t n, double p)
{
    int64_t e0 = 4 * ((int64_t)blockIdx.x * blockDim.x + threadIdx.x);
    if (e0 >= n) return;
    uint32_t thr = tt_philox_keep_threshold(p);
    if ((first & 3) == 0) { /* block-aligned: one block for four elements */
        uint32_t w[4];
        tt_philox_block(at.seed, at.stream, (at.counter + (uint64_t)(first + e0)) >> 2, w);
        for (int k = 0; k < 4 && e0 + k < n; k++) keep[e0 + k] = (uint8_t)tt_philox_keep(w[k], thr);
        return;
    }
    for (int64_t e = e0; e < e0 + 4 && e < n; e++)
        keep[e] = (uint8_t)tt_philox_keep(
            tt_philox_word(at.seed, at.stream, at.counter + (uint64_t)(first + e)), thr);
}

/* out (n): lo + (hi - lo) * uniform(at, e), in the build's precision */
__global__ void tt_philox_check_uniform(real *out, tt_rng at, int64_t n, real lo, real hi)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * j >= n) return;
    uint32_t w[4];
    tt_philox_block(at.seed, at.stream, (at.counter >> 2) + (uint64_t)j, w);
    for (int k = 0; k < 4 && 4 * j + k < n; k++)
        out[4 * j + k] = lo + (hi - lo) * (real)tt_philox_uniform(w[k]);
}

/* host side: a launch, as the backend's table entry would make it */
void tt_philox_check_launch(uint8_t *keep, const tt_rng *at, int64_t n, real p)
{
    int threads = 256, blocks = (int)((n + 4 * threads - 1) / (4 * threads));
    tt_philox_check_keep<<<blocks, threads>>>(keep, *at, 0, n, (double)p);
}

/* tensor/kernel_math.h in device code: GELU and its derivative, the AdamW and SGD element
 * updates and the dropout keep bits, one thread per element, as the CUDA kernels call them.
 * p, m, v, g, buf (n); y (n) = gelu(g) + gelu'(g) */
__global__ void tt_kernel_math_check(real *y, real *p, real *m, real *v, real *buf,
                                     const real *g, tt_adamw_scalars as, tt_sgd_scalars ss,
                                     tt_rng at, uint8_t *keep, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = tt_gelu_value(g[i]) + tt_gelu_deriv(g[i]);
    tt_adamw_update(&p[i], &m[i], &v[i], g[i], &as);
    tt_sgd_update(&p[i], &buf[i], g[i], &ss);
    unsigned bits = tt_dropout_keep4(&at, i / 4, tt_philox_keep_threshold(0.1));
    keep[i] = (uint8_t)(bits >> (i % 4) & 1u);
}
