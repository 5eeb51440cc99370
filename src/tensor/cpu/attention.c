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
 * Masked entries have P = 0, so they get dS = 0 and the mask is not needed again. */
#include "tensor/cpu/cpu.h"

#include <stddef.h>

/* offset of head h of batch b in a (B, T, ld) tensor */
static ptrdiff_t head_at(int ld, int T, int b, int h, int HS)
{
    return (ptrdiff_t)b * T * ld + (ptrdiff_t)h * HS;
}

/* keep[e] = uniform(at, first + e) >= p for e < n: the elements tt_dropout would draw, one
 * Philox block per 4 of them */
static void keep_mask(uint8_t *keep, const tt_rng *at, int64_t first, int64_t n, real p)
{
    real u[4];
    for (int64_t e = 0; e < n; e++) {
        int64_t i = first + e;
        if (e == 0 || (i & 3) == 0) tt_rng_uniform4_at(at, i >> 2, u);
        keep[e] = u[i & 3] >= p;
    }
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
    for (int64_t e = 0; e < n; e++) dst[e] = keep[e] ? att[e] * s : R(0);
}

/* out, att (B,NH,T,T), keep (B,NH,T,T) or NULL when p == 0, q/k/v rows of width >= NH*HS,
 * pad (B,T) or NULL, scratch (T,T) */
void tt_cpu_attention_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                              const real *v, const int32_t *pad, const tt_attn_desc *a, tt_rng at,
                              real *scratch)
{
    const int T = a->T, HS = a->HS;
    const int64_t TT = (int64_t)T * T;
    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->NH; h++) {
            int64_t bh = (int64_t)b * a->NH + h;
            real *P = att + bh * TT;
            const real *Q = q + head_at(a->ldq, T, b, h, HS), *K = k + head_at(a->ldk, T, b, h, HS),
                       *V = v + head_at(a->ldv, T, b, h, HS);
            tt_cpu_gemm(false, true, T, T, HS, a->scale, Q, a->ldq, 0, K, a->ldk, 0, R(0), P, T, 0,
                        1);
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++)
                    if ((a->causal && j > i) || (pad && pad[(int64_t)b * T + j]))
                        P[(int64_t)i * T + j] = -R_INF;
            tt_cpu_softmax_forward(P, P, T, T);
            const real *D = P;
            if (keep) {
                uint8_t *kp = keep + bh * TT;
                keep_mask(kp, &at, bh * TT, TT, a->p);
                dropped_weights(scratch, P, kp, a->p, T);
                D = scratch;
            }
            real *O = out + head_at(a->ldo, T, b, h, HS);
            tt_cpu_gemm(false, false, T, HS, T, R(1), D, T, 0, V, a->ldv, 0, R(0), O, a->ldo, 0, 1);
        }
}

/* dq, dk, dv: gradients with the layout of q, k, v (any may be NULL); dout like out;
 * scratch (2,T,T) */
void tt_cpu_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                               const uint8_t *keep, const real *q, const real *k, const real *v,
                               const tt_attn_desc *a, real *scratch)
{
    const int T = a->T, HS = a->HS;
    const int64_t TT = (int64_t)T * T;
    real *D = scratch, *dP = scratch + TT;
    real s = keep ? R(1) / (R(1) - a->p) : R(1);
    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->NH; h++) {
            int64_t bh = (int64_t)b * a->NH + h;
            const real *P = att + bh * TT;
            const uint8_t *kp = keep ? keep + bh * TT : NULL;
            const real *dO = dout + head_at(a->ldo, T, b, h, HS);
            if (dv) {
                dropped_weights(D, P, kp, a->p, T);
                tt_cpu_gemm(true, false, T, HS, T, R(1), D, T, 0, dO, a->ldo, 0, R(1),
                            dv + head_at(a->ldv, T, b, h, HS), a->ldv, 0, 1);
            }
            if (!dq && !dk) continue;
            const real *V = v + head_at(a->ldv, T, b, h, HS);
            tt_cpu_gemm(false, true, T, T, HS, R(1), dO, a->ldo, 0, V, a->ldv, 0, R(0), dP, T, 0,
                        1);
            for (int i = 0; i < T; i++) {
                const real *p = P + (int64_t)i * T;
                real *g = dP + (int64_t)i * T;
                const uint8_t *kr = kp ? kp + (int64_t)i * T : NULL;
                real dot = R(0);
                for (int j = 0; j < T; j++) {
                    g[j] = kr ? (kr[j] ? g[j] * s : R(0)) : g[j];
                    dot += g[j] * p[j];
                }
                for (int j = 0; j < T; j++) g[j] = p[j] * (g[j] - dot);
            }
            if (dq)
                tt_cpu_gemm(false, false, T, HS, T, a->scale, dP, T, 0,
                            k + head_at(a->ldk, T, b, h, HS), a->ldk, 0, R(1),
                            dq + head_at(a->ldq, T, b, h, HS), a->ldq, 0, 1);
            if (dk)
                tt_cpu_gemm(true, false, T, HS, T, a->scale, dP, T, 0,
                            q + head_at(a->ldq, T, b, h, HS), a->ldq, 0, R(1),
                            dk + head_at(a->ldk, T, b, h, HS), a->ldk, 0, 1);
        }
}
