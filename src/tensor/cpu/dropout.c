/* cpu/dropout.c: inverted dropout with a counter-based mask.
 *   keep_i = uniform(at, i) >= p,  y_i = x_i * keep_i / (1 - p),  dx_i += dy_i * keep_i / (1 - p)
 * The mask depends only on (seed, stream, counter, i), so it is the same for any thread count
 * and on any backend. Saves the mask, one byte per element. */
#include "tensor/cpu/cpu.h"

void tt_cpu_dropout_forward(real *out, uint8_t *mask, const real *inp, real p, tt_rng at,
                            int64_t n)
{
    TT_ASSERT_MSG(p >= R(0) && p < R(1), "dropout: p = %g outside [0,1)", (double)p);
    real scale = R(1) / (R(1) - p), u[4];
    for (int64_t i = 0; i < n; i++) {
        if ((i & 3) == 0) tt_rng_uniform4_at(&at, i >> 2, u); /* one Philox block per 4 */
        uint8_t keep = u[i & 3] >= p;
        mask[i] = keep;
        out[i] = keep ? inp[i] * scale : R(0);
    }
}

void tt_cpu_dropout_backward(real *dinp, const uint8_t *mask, const real *dout, real p,
                             int64_t n)
{
    real scale = R(1) / (R(1) - p);
    for (int64_t i = 0; i < n; i++)
        if (mask[i]) dinp[i] += dout[i] * scale;
}
