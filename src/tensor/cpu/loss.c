/* cpu/loss.c: fused log-softmax + cross-entropy, and the full sum, rows split over the pool.
 *   lse_i = m_i + log sum_v exp(x_iv - m_i),  loss = (1/count) sum_{i counted} (lse_i - x_i,t_i)
 *   dx_iv += dloss / count * (exp(x_iv - lse_i) - [v == t_i]) for counted rows i
 * Rows with target -100 (PyTorch's ignore_index) count for nothing. Saves lse (N) and recomputes
 * the probabilities in backward instead of keeping an (N,V) copy. Sums go through
 * tt_pool_sum: in double, over fixed blocks, so they do not depend on the thread count. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/cpu/reduce.h"

static int64_t count_targets(const int32_t *targets, int64_t N, int V)
{
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
        int32_t t = targets[i];
        TT_ASSERT_MSG(t == TT_IGNORE_INDEX || (t >= 0 && t < V),
                      "cross-entropy: target %d at row %lld outside [0,%d) and not %d", t,
                      (long long)i, V, TT_IGNORE_INDEX);
        count += t != TT_IGNORE_INDEX;
    }
    return count;
}

typedef struct ce {
    real *lse, *dx;
    const real *x;
    const int32_t *t;
    real g;
    int V;
} ce;

/* lse of rows [lo, hi); returns the sum of their losses */
TT_VEC static double ce_rows(void *ctx, int64_t lo, int64_t hi)
{
    const ce *e = ctx;
    const int V = e->V;
    double total = 0.0;
    for (int64_t i = lo; i < hi; i++) {
        const real *x = e->x + i * V;
        real m = tt_row_max(x, V);
        real s = tt_row_sum_exp(x, m, V);
        e->lse[i] = m + R_LOG(s);
        if (e->t[i] != TT_IGNORE_INDEX) total += (double)(e->lse[i] - x[e->t[i]]);
    }
    return total;
}

/* loss (1), lse (N), logits (N,V), targets (N) */
void tt_cpu_crossentropy_forward(real *loss, real *lse, const real *logits,
                                 const int32_t *targets, int64_t N, int V)
{
    int64_t count = count_targets(targets, N, V);
    ce e = {.lse = lse, .x = logits, .t = targets, .V = V};
    double total = tt_pool_sum(N, tt_cpu_row_grain(V) / 4, ce_rows, &e);
    loss[0] = count ? (real)(total / (double)count) : R(0);
}

TT_VEC static void ce_backward_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const ce *e = ctx;
    const int V = e->V;
    for (int64_t i = lo; i < hi; i++) {
        if (e->t[i] == TT_IGNORE_INDEX) continue;
        const real *x = e->x + i * V;
        real *dx = e->dx + i * V, l = e->lse[i];
        for (int v = 0; v < V; v++) dx[v] += e->g * tt_exp_nonpos(x[v] - l);
        dx[e->t[i]] -= e->g;
    }
}

/* dlogits (N,V), dloss (1), logits (N,V), lse (N) saved, targets (N) */
void tt_cpu_crossentropy_backward(real *dlogits, const real *dloss, const real *logits,
                                  const real *lse, const int32_t *targets, int64_t N, int V)
{
    int64_t count = count_targets(targets, N, V);
    if (!count) return;
    ce e = {.lse = (real *)lse, .dx = dlogits, .x = logits, .t = targets, .V = V,
            .g = dloss[0] / (real)count};
    tt_pool_for(N, 1, tt_cpu_row_grain(V) / 4, ce_backward_rows, &e);
}

TT_VEC static double sum_range(void *ctx, int64_t lo, int64_t hi)
{
    const real *x = ctx;
    double s = 0.0;
    for (int64_t i = lo; i < hi; i++) s += (double)x[i];
    return s;
}

/* out (1), inp (n); accumulated in double so float32 sums of large tensors stay accurate */
void tt_cpu_sum_forward(real *out, const real *inp, int64_t n)
{
    out[0] = (real)tt_pool_sum(n, TT_CPU_GRAIN, sum_range, (void *)inp);
}

typedef struct fill {
    real *y;
    real g;
} fill;

TT_VEC static void add_const_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const fill *f = ctx;
    for (int64_t i = lo; i < hi; i++) f->y[i] += f->g;
}

void tt_cpu_sum_backward(real *dinp, const real *dout, real s, int64_t n)
{
    fill f = {.y = dinp, .g = dout[0] * s};
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, add_const_range, &f);
}
