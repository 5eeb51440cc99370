/* cpu/attention.c: fused scaled dot-product attention over heads packed in rows.
 * For each batch b and head h, with Q, K, V the (T, HS) column blocks of head h read in place
 * (row strides ldq, ldk, ldv: no copy for the head split):
 *   S = scale * Q K^T, masked (causal: key j > query i; padding: pad[b, j] != 0) to -inf
 *   P = softmax(S) per row (a row with every key masked is all zeros)      saved: att = P
 *   D = P * keep / (1 - p)  (inverted dropout; keep saved as one byte)     identity when p = 0
 *   O = D V, written to the head's columns of out (row stride ldo)
 * Backward (every gradient added):
 *   dD = dO V^T, dV += D^T dO, dP = dD * keep / (1 - p),
 *   dS = P * (dP - rowsum(dP * P)),  dQ += scale * dS K,  dK += scale * dS^T Q.
 * Masked entries have P = 0, so they get dS = 0 and the mask is not needed again.
 * The (batch, head) pairs are handed out over the pool, each with its own (T,T) scratch and
 * single-threaded gemms: every head's work stays in its core's cache. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"
#include "tensor/cpu/reduce.h"

#include <stddef.h>

/* offset of head h of batch b in a (B, T, ld) tensor */
static ptrdiff_t head_at(int ld, int T, int b, int h, int HS)
{
    return (ptrdiff_t)b * T * ld + (ptrdiff_t)h * HS;
}

/* dst (T,T) = att (T,T) * keep / (1 - p), or a copy when keep is NULL */
static void dropped_weights(real *dst, const real *att, const uint8_t *keep, real p, int T)
{
    int64_t n = (int64_t)T * T;
    if (!keep) {
        for (int64_t e = 0; e < n; e++) dst[e] = att[e];
        return;
    }
    real s = R(1) / (R(1) - p);
    for (int64_t e = 0; e < n; e++) {
        real v = att[e] * s; /* unconditional, then a select: the loop vectorises */
        dst[e] = keep[e] ? v : R(0);
    }
}

/* C (M,N) of row stride ldc = 0, so a head's gemm can add to it (beta 1): OpenBLAS's own
 * zeroing for beta 0 is a call per gemm, and for small heads that call costs more than these
 * stores (3.5% of a tiny step). */
static void zero_rows(real *C, int M, int N, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(int64_t)i * ldc + j] = R(0);
}

typedef struct attn_job {
    real *out, *att, *dq, *dk, *dv;
    uint8_t *keep;
    const uint8_t *ckeep;
    const real *q, *k, *v, *dout, *catt;
    const int32_t *pad;
    const tt_attn_desc *a;
    tt_rng at;
    real *scratch; /* per thread: T*T (forward) or 2*T*T (backward) reals */
} attn_job;

static void forward_heads(void *ctx, int64_t lo, int64_t hi, int tid)
{
    const attn_job *j = ctx;
    const tt_attn_desc *a = j->a;
    const int T = a->T, HS = a->HS;
    const int64_t TT = (int64_t)T * T;
    real *scratch = j->scratch + tid * TT;
    for (int64_t bh = lo; bh < hi; bh++) {
        int b = (int)(bh / a->NH), h = (int)(bh % a->NH);
        real *P = j->att + bh * TT;
        const real *Q = j->q + head_at(a->ldq, T, b, h, HS),
                   *K = j->k + head_at(a->ldk, T, b, h, HS),
                   *V = j->v + head_at(a->ldv, T, b, h, HS);
        zero_rows(P, T, T, T);
        tt_cpu_head_gemm(false, true, T, T, HS, a->scale, Q, a->ldq, K, a->ldk, P, T);
        const int32_t *pad = j->pad ? j->pad + (int64_t)b * T : NULL;
        if (a->causal || pad)
            for (int i = 0; i < T; i++)
                for (int jj = 0; jj < T; jj++)
                    if ((a->causal && jj > i) || (pad && pad[jj])) P[(int64_t)i * T + jj] = -R_INF;
        tt_cpu_softmax_forward(P, P, T, T);
        const real *D = P;
        if (j->keep) {
            uint8_t *kp = j->keep + bh * TT;
            tt_cpu_keep_mask(kp, &j->at, bh * TT, TT, a->p);
            dropped_weights(scratch, P, kp, a->p, T);
            D = scratch;
        }
        real *O = j->out + head_at(a->ldo, T, b, h, HS);
        zero_rows(O, T, HS, a->ldo);
        tt_cpu_head_gemm(false, false, T, HS, T, R(1), D, T, V, a->ldv, O, a->ldo);
    }
}

/* out, att (B,NH,T,T), keep (B,NH,T,T) or NULL when p == 0, q/k/v rows of width >= NH*HS,
 * pad (B,T) or NULL, scratch (threads,T,T) */
void tt_cpu_attention_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                              const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                              real *scratch)
{
    attn_job j = {.out = out, .att = att, .keep = keep, .q = q, .k = k, .v = v, .pad = pad,
                  .a = a, .at = at, .scratch = scratch};
    tt_pool_each((int64_t)a->B * a->NH, forward_heads, &j);
}

static void backward_heads(void *ctx, int64_t lo, int64_t hi, int tid)
{
    const attn_job *j = ctx;
    const tt_attn_desc *a = j->a;
    const int T = a->T, HS = a->HS;
    const int64_t TT = (int64_t)T * T;
    real *D = j->scratch + 2 * tid * TT, *dP = D + TT;
    real s = j->ckeep ? R(1) / (R(1) - a->p) : R(1);
    for (int64_t bh = lo; bh < hi; bh++) {
        int b = (int)(bh / a->NH), h = (int)(bh % a->NH);
        const real *P = j->catt + bh * TT;
        const uint8_t *kp = j->ckeep ? j->ckeep + bh * TT : NULL;
        const real *dO = j->dout + head_at(a->ldo, T, b, h, HS);
        if (j->dv) {
            dropped_weights(D, P, kp, a->p, T);
            tt_cpu_head_gemm(true, false, T, HS, T, R(1), D, T, dO, a->ldo,
                             j->dv + head_at(a->ldv, T, b, h, HS), a->ldv);
        }
        if (!j->dq && !j->dk) continue;
        const real *V = j->v + head_at(a->ldv, T, b, h, HS);
        zero_rows(dP, T, T, T);
        tt_cpu_head_gemm(false, true, T, T, HS, R(1), dO, a->ldo, V, a->ldv, dP, T);
        for (int i = 0; i < T; i++) {
            const real *p = P + (int64_t)i * T;
            real *g = dP + (int64_t)i * T;
            const uint8_t *kr = kp ? kp + (int64_t)i * T : NULL;
            if (kr)
                for (int jj = 0; jj < T; jj++) {
                    real v = g[jj] * s;
                    g[jj] = kr[jj] ? v : R(0);
                }
            real dot = tt_row_dot(g, p, T);
            for (int jj = 0; jj < T; jj++) g[jj] = p[jj] * (g[jj] - dot);
        }
        if (j->dq)
            tt_cpu_head_gemm(false, false, T, HS, T, a->scale, dP, T,
                             j->k + head_at(a->ldk, T, b, h, HS), a->ldk,
                             j->dq + head_at(a->ldq, T, b, h, HS), a->ldq);
        if (j->dk)
            tt_cpu_head_gemm(true, false, T, HS, T, a->scale, dP, T,
                             j->q + head_at(a->ldq, T, b, h, HS), a->ldq,
                             j->dk + head_at(a->ldk, T, b, h, HS), a->ldk);
    }
}

/* dq, dk, dv: gradients with the layout of q, k, v (any may be NULL); dout like out;
 * scratch (threads,2,T,T) */
void tt_cpu_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                               const uint8_t *keep, const real *q, const real *k, const real *v,
                               const tt_attn_desc *a, real *scratch)
{
    attn_job j = {.dq = dq, .dk = dk, .dv = dv, .dout = dout, .catt = att, .ckeep = keep,
                  .q = q, .k = k, .v = v, .a = a, .scratch = scratch};
    tt_pool_each((int64_t)a->B * a->NH, backward_heads, &j);
}

/* T*T reals per pool thread forward, 2*T*T backward (the scratch shapes above) */
size_t tt_cpu_attention_scratch(const tt_attn_desc *a, bool backward)
{
    return (size_t)tt_cpu_get_threads() * (backward ? 2 : 1) * (size_t)a->T * (size_t)a->T *
           sizeof(real);
}
