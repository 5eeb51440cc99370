/* cpu/softmax.c: row softmax over the last dimension, rows split over the pool.
 *   y_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k (so no overflow)
 *   A row whose entries are all -inf (every key masked) gives zeros, never NaN.
 *   backward, per row: dx_j += y_j * (dy_j - sum_k dy_k y_k). Saves its output y.
 * One row: tt_softmax_row (reduce.h), its sums in lanes. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/cpu/reduce.h"

typedef struct sm {
    real *y;
    const real *x, *dy;
    int C;
} sm;

TT_VEC static void softmax_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const sm *s = ctx;
    const int C = s->C;
    for (int64_t r = lo; r < hi; r++) {
        tt_softmax_row(s->y + r * C, s->x + r * C, C);
    }
}

/* out (N,C), inp (N,C) */
void tt_cpu_softmax_forward(real *out, const real *inp, int64_t N, int C)
{
    tt_pool_for(N, 1, tt_cpu_row_grain(C) / 4, softmax_rows, &(sm){.y = out, .x = inp, .C = C});
}

TT_VEC static void softmax_backward_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const sm *s = ctx;
    const int C = s->C;
    for (int64_t r = lo; r < hi; r++) {
        const real *y = s->x + r * C, *dy = s->dy + r * C;
        real *dx = s->y + r * C;
        real dot = tt_row_dot(dy, y, C);
        for (int c = 0; c < C; c++) dx[c] += y[c] * (dy[c] - dot);
    }
}

/* dinp (N,C), out (N,C) saved, dout (N,C) */
void tt_cpu_softmax_backward(real *dinp, const real *out, const real *dout, int64_t N, int C)
{
    sm s = {.y = dinp, .x = out, .dy = dout, .C = C};
    tt_pool_for(N, 1, tt_cpu_row_grain(C), softmax_backward_rows, &s);
}
