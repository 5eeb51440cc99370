/* cpu/loss.c: fused log-softmax + cross-entropy, and the full sum.
 *   lse_i = m_i + log sum_v exp(x_iv - m_i),  loss = (1/count) sum_{i counted} (lse_i - x_i,t_i)
 *   dx_iv += dloss / count * (exp(x_iv - lse_i) - [v == t_i]) for counted rows i
 * Rows with target -100 (PyTorch's ignore_index) count for nothing. Saves lse (N) and recomputes
 * the probabilities in backward instead of keeping an (N,V) copy. */
#include "tensor/cpu/cpu.h"

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

/* loss (1), lse (N), logits (N,V), targets (N) */
void tt_cpu_crossentropy_forward(real *loss, real *lse, const real *logits,
                                 const int32_t *targets, int64_t N, int V)
{
    int64_t count = count_targets(targets, N, V);
    double total = 0.0;
    for (int64_t i = 0; i < N; i++) {
        const real *x = logits + i * V;
        real m = -R_INF;
        for (int v = 0; v < V; v++)
            if (x[v] > m) m = x[v];
        real s = R(0);
        for (int v = 0; v < V; v++) s += R_EXP(x[v] - m);
        lse[i] = m + R_LOG(s);
        if (targets[i] != TT_IGNORE_INDEX) total += (double)(lse[i] - x[targets[i]]);
    }
    loss[0] = count ? (real)(total / (double)count) : R(0);
}

/* dlogits (N,V), dloss (1), logits (N,V), lse (N) saved, targets (N) */
void tt_cpu_crossentropy_backward(real *dlogits, const real *dloss, const real *logits,
                                  const real *lse, const int32_t *targets, int64_t N, int V)
{
    int64_t count = count_targets(targets, N, V);
    if (!count) return;
    real g = dloss[0] / (real)count;
    for (int64_t i = 0; i < N; i++) {
        if (targets[i] == TT_IGNORE_INDEX) continue;
        const real *x = logits + i * V;
        real *dx = dlogits + i * V;
        for (int v = 0; v < V; v++) dx[v] += g * R_EXP(x[v] - lse[i]);
        dx[targets[i]] -= g;
    }
}

/* out (1), inp (n); accumulated in double so float32 sums of large tensors stay accurate */
void tt_cpu_sum_forward(real *out, const real *inp, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)inp[i];
    out[0] = (real)s;
}

void tt_cpu_sum_backward(real *dinp, const real *dout, real s, int64_t n)
{
    real g = dout[0] * s;
    for (int64_t i = 0; i < n; i++) dinp[i] += g;
}
