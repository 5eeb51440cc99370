/* cpu/attention.c: fused scaled dot-product attention over heads packed in rows.
 * For each batch b and head h, with Q, K, V the (T, HS) column blocks of head h read in place
 * (row strides ldq, ldk, ldv: no copy for the head split):
 *   S = scale * Q K^T, masked (causal: key j > query i; padding: pad[b, j] != 0) to -inf
 *   P = softmax(S) per row (a row with every key masked is all zeros)      saved: att = P
 *   D = P * keep / (1 - p)  (inverted dropout; keep saved as one byte)     identity when p = 0
 *   O = D V, written to the head's columns of out (row stride ldo)
 * Backward (every gradient added, or written when desc.fresh: the buffers hold nothing yet):
 *   dD = dO V^T, dV += D^T dO, dP = dD * keep / (1 - p),
 *   dS = P * (dP - rowsum(dP * P)),  dQ += scale * dS K,  dK += scale * dS^T Q.
 * Masked entries have P = 0, so they get dS = 0 and the mask is not needed again.
 * A causal head works on query row i's keys [0, tt_tri_cols(i, T)) only, about half: the
 * scores, softmax, dropout and dS on that prefix, the gemms on the triangle (tri_gemm.c); the
 * rest of each att row is stored as zeros, and every result has the bits of the full
 * computation (desc.full; reduce.h and tri_gemm.c say why). The dropout mask is still drawn
 * whole, so keep holds every element's bit (and the rng cursor moves as before).
 * The (batch, head) pairs are handed out over the pool, each with its own scratch and
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

/* reals of one pool thread's scratch: D (T,T), the dropped weights, [then dP (T,T) backward].
 * A causal head's transposed K or V (HS,T) borrows D's room: K^T is used up before D is made,
 * and D (backward) before V^T is made. So the scratch grows past the bidirectional one only
 * when HS > T. */
static int64_t scratch_reals(const tt_attn_desc *a, bool backward)
{
    int64_t d = (int64_t)a->T * (a->HS > a->T ? a->HS : a->T);
    return d + (backward ? (int64_t)a->T * a->T : 0);
}

/* keys of query row i that are computed: a causal head's prefix, else all */
static int row_keys(const tt_attn_desc *a, int i)
{
    return a->causal && !a->full ? tt_tri_cols(i, a->T) : a->T;
}

/* The row passes of a head below, each on row i's computed keys [0, row_keys(a, i)), are
 * compiled for AVX-512, AVX2 and the baseline (TT_VEC, cpu.h): the same operations in the
 * same order in each, so the same bits.
 * dst (T,T) = att * keep / (1 - p) */
TT_VEC static void dropped_rows(const tt_attn_desc *a, real *dst, const real *att,
                                const uint8_t *keep)
{
    const real s = R(1) / (R(1) - a->p);
    for (int i = 0; i < a->T; i++) {
        const int64_t r = (int64_t)i * a->T;
        for (int e = 0, n = row_keys(a, i); e < n; e++) {
            real v = att[r + e] * s; /* unconditional, then a select: the loop vectorises */
            dst[r + e] = keep[r + e] ? v : R(0);
        }
    }
}

/* P (T,T): the scores in, the weights out (masked to -inf, softmax, zeros past the computed
 * keys); D = P * keep / (1 - p) when keep */
TT_VEC static void weight_rows(const tt_attn_desc *a, real *P, real *D, const uint8_t *keep,
                               const int32_t *pad)
{
    const int T = a->T;
    for (int i = 0; i < T; i++) {
        real *row = P + (int64_t)i * T;
        int n = row_keys(a, i);
        if (pad)
            for (int jj = 0; jj < n; jj++) row[jj] = pad[jj] ? -R_INF : row[jj];
        if (a->causal)
            for (int jj = i + 1; jj < n; jj++) row[jj] = -R_INF;
        tt_softmax_row(row, row, n);
        for (int jj = n; jj < T; jj++) row[jj] = R(0);
    }
    if (keep) dropped_rows(a, D, P, keep);
}

/* dP (T,T) in: dO V^T; out: dS = P * (dP' - rowsum(dP' * P)), dP' = dP * keep / (1 - p) */
TT_VEC static void score_grad_rows(const tt_attn_desc *a, real *dP, const real *P,
                                   const uint8_t *keep)
{
    const int T = a->T;
    const real s = keep ? R(1) / (R(1) - a->p) : R(1);
    for (int i = 0; i < T; i++) {
        const real *p = P + (int64_t)i * T;
        real *g = dP + (int64_t)i * T;
        int n = row_keys(a, i);
        if (keep)
            for (int jj = 0; jj < n; jj++) {
                real v = g[jj] * s;
                g[jj] = keep[(int64_t)i * T + jj] ? v : R(0);
            }
        real dot = tt_row_dot(g, p, n);
        for (int jj = 0; jj < n; jj++) g[jj] = p[jj] * (g[jj] - dot);
    }
}

/* C (M,N) = alpha op(A) op(B), + C when add, for one head: a causal head's on `part` of its
 * triangle (tri_gemm.c; a transposed B is copied to Bt (K,N) first), any other's through
 * head_gemm.c */
static void head_mm(const tt_attn_desc *a, tt_tri part, bool ta, bool tb, int M, int N, int K,
                    real alpha, const real *A, int lda, const real *B, int ldb, real *C, int ldc,
                    bool add, real *Bt)
{
    if (!a->causal) {
        tt_cpu_head_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
        return;
    }
    if (tb) {
        tt_cpu_transpose(Bt, B, N, K, ldb);
        B = Bt;
        ldb = N;
    }
    tt_cpu_tri_gemm(a->full ? TT_TRI_FULL : part, ta, M, N, K, alpha, A, lda, B, ldb, C, ldc, add);
}

typedef struct attn_job {
    real *out, *att, *dq, *dk, *dv;
    uint8_t *keep;
    const uint8_t *ckeep;
    const real *q, *k, *v, *dout, *catt;
    const int32_t *pad;
    const tt_attn_desc *a;
    tt_rng at;
    real *scratch; /* per thread: scratch_reals */
} attn_job;

static void forward_heads(void *ctx, int64_t lo, int64_t hi, int tid)
{
    const attn_job *j = ctx;
    const tt_attn_desc *a = j->a;
    const int T = a->T, HS = a->HS;
    const int64_t TT = (int64_t)T * T;
    real *scratch = j->scratch + tid * scratch_reals(a, false), *Bt = scratch;
    for (int64_t bh = lo; bh < hi; bh++) {
        int b = (int)(bh / a->NH), h = (int)(bh % a->NH);
        real *P = j->att + bh * TT;
        const real *Q = j->q + head_at(a->ldq, T, b, h, HS),
                   *K = j->k + head_at(a->ldk, T, b, h, HS),
                   *V = j->v + head_at(a->ldv, T, b, h, HS);
        head_mm(a, TT_TRI_COLS, false, true, T, T, HS, a->scale, Q, a->ldq, K, a->ldk, P, T,
                false, Bt);
        uint8_t *kp = j->keep ? j->keep + bh * TT : NULL;
        if (kp) tt_cpu_keep_mask(kp, &j->at, bh * TT, TT, a->p);
        weight_rows(a, P, kp ? scratch : NULL, kp, j->pad ? j->pad + (int64_t)b * T : NULL);
        const real *D = kp ? scratch : P;
        head_mm(a, TT_TRI_K_UPTO, false, false, T, HS, T, R(1), D, T, V, a->ldv,
                j->out + head_at(a->ldo, T, b, h, HS), a->ldo, false, Bt);
    }
}

/* out, att (B,NH,T,T), keep (B,NH,T,T) or NULL when p == 0, q/k/v rows of width >= NH*HS,
 * pad (B,T) or NULL, scratch: tt_cpu_attention_scratch bytes */
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
    real *D = j->scratch + tid * scratch_reals(a, true), *Bt = D;
    real *dP = D + scratch_reals(a, false);
    for (int64_t bh = lo; bh < hi; bh++) {
        int b = (int)(bh / a->NH), h = (int)(bh % a->NH);
        const real *P = j->catt + bh * TT;
        const uint8_t *kp = j->ckeep ? j->ckeep + bh * TT : NULL;
        const real *dO = j->dout + head_at(a->ldo, T, b, h, HS);
        if (j->dv) {
            if (kp) dropped_rows(a, D, P, kp);
            head_mm(a, TT_TRI_K_FROM, true, false, T, HS, T, R(1), kp ? D : P, T, dO, a->ldo,
                    j->dv + head_at(a->ldv, T, b, h, HS), a->ldv, !a->fresh, Bt);
        }
        if (!j->dq && !j->dk) continue;
        head_mm(a, TT_TRI_COLS, false, true, T, T, HS, R(1), dO, a->ldo,
                j->v + head_at(a->ldv, T, b, h, HS), a->ldv, dP, T, false, Bt);
        score_grad_rows(a, dP, P, kp);
        if (j->dq)
            head_mm(a, TT_TRI_K_UPTO, false, false, T, HS, T, a->scale, dP, T,
                    j->k + head_at(a->ldk, T, b, h, HS), a->ldk,
                    j->dq + head_at(a->ldq, T, b, h, HS), a->ldq, !a->fresh, Bt);
        if (j->dk)
            head_mm(a, TT_TRI_K_FROM, true, false, T, HS, T, a->scale, dP, T,
                    j->q + head_at(a->ldq, T, b, h, HS), a->ldq,
                    j->dk + head_at(a->ldk, T, b, h, HS), a->ldk, !a->fresh, Bt);
    }
}

/* dq, dk, dv: gradients with the layout of q, k, v (any may be NULL); dout like out;
 * scratch: tt_cpu_attention_scratch bytes */
void tt_cpu_attention_backward(real *dq, real *dk, real *dv, const real *dout, const real *att,
                               const uint8_t *keep, const real *q, const real *k, const real *v,
                               const tt_attn_desc *a, real *scratch)
{
    attn_job j = {.dq = dq, .dk = dk, .dv = dv, .dout = dout, .catt = att, .ckeep = keep,
                  .q = q, .k = k, .v = v, .a = a, .scratch = scratch};
    tt_pool_each((int64_t)a->B * a->NH, backward_heads, &j);
}

/* scratch_reals per pool thread: the same for causal heads or not, so that a memory plan made
 * without the model's options (train/run/memory.c) holds */
size_t tt_cpu_attention_scratch(const tt_attn_desc *a, bool backward)
{
    return (size_t)tt_cpu_get_threads() * (size_t)scratch_reals(a, backward) * sizeof(real);
}
