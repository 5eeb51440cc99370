/* test_attention.c: the fused attention op against attention composed from primitive ops
 * (matmul, scale, mask add, softmax, dropout, matmul), forward and backward, for every
 * combination of scale, temperature, masks and dropout; the packed layout against separate
 * q, k, v; the weights' invariants (rows sum to 1, causal and padding zeros, an all-masked row
 * gives zeros and no NaN); eval mode turning attention dropout off; causal heads that skip the
 * masked keys giving the bits of the full computation. */
#include "kernel_ref.h"

#include "autograd/ops.h"
#include "autograd/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, T = 5 };

/* padding at the end; batch 2 is all padding, so every one of its query rows is fully masked */
static const int32_t PAD[B * T] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};

typedef struct attn_case {
    real scale;
    bool causal, pad;
    real p;
} attn_case;

typedef struct run {
    real *out, *att, *dq, *dk, *dv; /* malloc'ed copies */
} run;

static real *copy_of(const real *x, int64_t n)
{
    real *y = tt_test_alloc(n);
    memcpy(y, x, (size_t)n * sizeof(real));
    return y;
}

static void run_free(run *r)
{
    free(r->out);
    free(r->att);
    free(r->dq);
    free(r->dk);
    free(r->dv);
}

/* q, k, v [B,T,D] leaves; loss = sum(out * R); returns the output, weights, gradients. */
static run attend(const attn_case *c, int D, bool fused, uint64_t seed)
{
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 4 << 20, 99); /* the same rng state for both ways */
    tt_params_init(&ps, TT_CPU);
    tt_var *q = tt_params_add(&ps, "q", tt_shape3(B, T, D));
    tt_var *k = tt_params_add(&ps, "k", tt_shape3(B, T, D));
    tt_var *v = tt_params_add(&ps, "v", tt_shape3(B, T, D));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, seed);
    tt_graph *g = &t.g;
    tt_tensor pad = tt_tensor_view((void *)PAD, tt_shape2(B, T), TT_I32, TT_CPU);
    tt_var *out;
    tt_tensor att;
    if (fused) {
        tt_sdpa_opts o = {.scale = c->scale, .causal = c->causal, .pad = c->pad ? &pad : NULL,
                          .dropout = c->p};
        out = tt_sdpa(g, q, k, v, 1, &o, &att);
    } else {
        real *mask = tt_test_alloc(B * T * T);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++)
                    if ((c->causal && j > i) || (c->pad && PAD[b * T + j]))
                        mask[(b * T + i) * T + j] = -R_INF;
        tt_var *s = tt_scale(g, tt_matmul(g, q, k, false, true), c->scale);
        s = tt_add(g, s, tt_var_from_host(g, tt_shape3(B, T, T), TT_REAL, mask, false));
        tt_var *w = tt_softmax(g, s);
        att = w->val;
        out = tt_matmul(g, tt_dropout(g, w, c->p), v, false, false);
        free(mask);
    }
    real *r = tt_test_alloc(out->val.n);
    tt_test_normal(r, out->val.n, seed + 1);
    tt_var *loss = tt_sum(g, tt_mul(g, out, tt_var_from_host(g, out->val.shape, TT_REAL, r, false)));
    tt_backward(g, loss);
    run res = {copy_of(out->val.data, out->val.n), copy_of(att.data, att.n),
               copy_of(q->grad.data, q->val.n), copy_of(k->grad.data, k->val.n),
               copy_of(v->grad.data, v->val.n)};
    free(r);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
    return res;
}

static void all_finite(const char *label, const real *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(isfinite((double)x[i]), "%s: element %lld is %g", label, (long long)i,
                      (double)x[i]);
}

START_TEST(test_fused_equals_composed)
{
    const int D = 4;
    tt_tensor pad = tt_tensor_view((void *)PAD, tt_shape2(B, T), TT_I32, TT_CPU);
    for (int n = 0; n < TT_SDPA_COMBOS; n++) {
        char label[96];
        tt_sdpa_opts o = tt_test_sdpa_combo(n, D, &pad, label, sizeof label);
        attn_case c = {.scale = o.scale, .causal = o.causal, .pad = o.pad, .p = o.dropout};
        run f = attend(&c, D, true, 10 + n), ref = attend(&c, D, false, 10 + n);
        const real *got[5] = {f.out, f.att, f.dq, f.dk, f.dv};
        const real *want[5] = {ref.out, ref.att, ref.dq, ref.dk, ref.dv};
        const char *what[5] = {"out", "weights", "dq", "dk", "dv"};
        for (int k = 0; k < 5; k++) {
            char full[128];
            snprintf(full, sizeof full, "%s: %s", label, what[k]);
            int64_t len = k == 1 ? B * T * T : B * T * D;
            ck_assert_close(full, got[k], want[k], len, TOL, TOL);
            all_finite(full, got[k], len);
        }
        run_free(&f);
        run_free(&ref);
    }
}
END_TEST

/* Weights: every row sums to 1 unless all its keys are masked (then it is all zeros); zeros
 * above the diagonal when causal and in padding columns. */
START_TEST(test_weights_invariants)
{
    attn_case c = {.scale = R(0.7), .causal = true, .pad = true, .p = R(0.3)};
    run f = attend(&c, 6, true, 3);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            const real *row = f.att + (b * T + i) * T;
            double sum = 0;
            bool any_key = false;
            for (int j = 0; j < T; j++) {
                bool masked = j > i || PAD[b * T + j];
                any_key |= !masked;
                if (masked) ck_assert_msg(row[j] == R(0), "b%d i%d j%d: masked weight %g", b, i,
                                          j, (double)row[j]);
                sum += (double)row[j];
            }
            ck_assert_msg(fabs(sum - (any_key ? 1.0 : 0.0)) < 1e-5, "b%d i%d: row sums to %g", b,
                          i, sum);
        }
    /* batch 2 is all padding: zero output and zero gradients, never NaN */
    for (int e = 2 * T * 6; e < 3 * T * 6; e++) {
        ck_assert_msg(f.out[e] == R(0), "all-masked row: out[%d] = %g", e, (double)f.out[e]);
        ck_assert_msg(f.dq[e] == R(0) && f.dk[e] == R(0) && f.dv[e] == R(0),
                      "all-masked row: nonzero gradient at %d", e);
    }
    run_free(&f);
}
END_TEST

/* The packed [B,T,3D] layout with 2 heads equals separate q, k, v [B,T,D] cut from it. */
START_TEST(test_packed_equals_separate)
{
    enum { D = 6, H = 2 };
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 4 << 20, 5);
    tt_params_init(&ps, TT_CPU);
    tt_var *qkv = tt_params_add(&ps, "qkv", tt_shape3(B, T, 3 * D));
    tt_var *part[3];
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) part[i] = tt_params_add(&ps, names[i], tt_shape3(B, T, D));
    tt_params_finalize(&ps);
    tt_test_normal(qkv->val.data, qkv->val.n, 8);
    for (int r = 0; r < B * T; r++)
        for (int i = 0; i < 3; i++)
            memcpy((real *)part[i]->val.data + r * D, (real *)qkv->val.data + r * 3 * D + i * D,
                   D * sizeof(real));
    tt_tensor pad = tt_tensor_view((void *)PAD, tt_shape2(B, T), TT_I32, TT_CPU);
    tt_sdpa_opts o = {.scale = R(0.6), .causal = true, .pad = &pad, .dropout = R(0.25)};
    tt_graph *g = &t.g;
    tt_rng saved = *g->rng;
    tt_tensor wa, wb;
    tt_var *a = tt_sdpa_packed(g, qkv, H, &o, &wa);
    *g->rng = saved;
    tt_var *b = tt_sdpa(g, part[0], part[1], part[2], H, &o, &wb);
    ck_assert_close("out", a->val.data, b->val.data, a->val.n, TOL, TOL);
    ck_assert_close("weights", wa.data, wb.data, wa.n, TOL, TOL);
    ck_assert_int_eq(wa.shape.ndim, 4);
    ck_assert_int_eq(wa.shape.d[1], H);
    real *r = tt_test_alloc(a->val.n);
    tt_test_normal(r, a->val.n, 9);
    tt_var *rv = tt_var_from_host(g, a->val.shape, TT_REAL, r, false);
    tt_backward(g, tt_add(g, tt_sum(g, tt_mul(g, a, rv)), tt_sum(g, tt_mul(g, b, rv))));
    real *want = tt_test_alloc(qkv->val.n);
    for (int row = 0; row < B * T; row++)
        for (int i = 0; i < 3; i++)
            memcpy(want + row * 3 * D + i * D, (real *)part[i]->grad.data + row * D,
                   D * sizeof(real));
    ck_assert_close("dqkv", qkv->grad.data, want, qkv->val.n, TOL, TOL);
    free(r);
    free(want);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}
END_TEST

/* Not training: no dropout, and the output is exactly weights x V. */
START_TEST(test_eval_mode_no_dropout)
{
    attn_case c = {.scale = R(0.5), .p = R(0.5)};
    run train = attend(&c, 4, true, 21);
    tt_test_graph t;
    tt_params ps;
    tt_test_graph_init(&t, 1 << 20, 99);
    tt_params_init(&ps, TT_CPU);
    tt_var *q = tt_params_add(&ps, "q", tt_shape3(B, T, 4));
    tt_var *k = tt_params_add(&ps, "k", tt_shape3(B, T, 4));
    tt_var *v = tt_params_add(&ps, "v", tt_shape3(B, T, 4));
    tt_params_finalize(&ps);
    tt_test_normal(ps.data, ps.numel, 21);
    t.g.training = false;
    tt_rng before = *t.g.rng;
    tt_sdpa_opts o = {.scale = c.scale, .dropout = c.p};
    tt_tensor att;
    tt_var *out = tt_sdpa(&t.g, q, k, v, 1, &o, &att);
    ck_assert_msg(t.g.rng->counter == before.counter, "eval mode drew random numbers");
    ck_assert_close("eval weights = train weights", att.data, train.att, att.n, TOL, TOL);
    real *pv = tt_test_alloc(out->val.n);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++)
            for (int d = 0; d < 4; d++) {
                double s = 0;
                for (int j = 0; j < T; j++)
                    s += (double)((real *)att.data)[(b * T + i) * T + j] *
                         (double)((real *)v->val.data)[(b * T + j) * 4 + d];
                pv[(b * T + i) * 4 + d] = (real)s;
            }
    ck_assert_close("eval out = weights V", out->val.data, pv, out->val.n, TOL, TOL);
    free(pv);
    run_free(&train);
    tt_params_free(&ps);
    tt_test_graph_free(&t);
}
END_TEST

/* One causal kernel call pair (forward, then backward into prefilled gradients) on B = 2
 * sequences of NH = 2 heads. Packed: q, k, v column blocks of one [B,T,3D] buffer, out rows of
 * stride D + 3 (columns the kernel must leave alone); else three [B,T,D] buffers. pad: the
 * second sequence padded from T/2 on, and key 1 of the first. */
typedef struct skip_case {
    int T, HS;
    bool pad, packed;
    double p;
} skip_case;

enum { SK_B = 2, SK_NH = 2, SK_BUFS = 6 }; /* buffers: out, att, keep, then gradients */

static void causal_pass(const skip_case *c, bool full, void *buf[SK_BUFS], int64_t len[SK_BUFS])
{
    /* L: the sequence length (T names the other tests' one) */
    const int L = c->T, D = SK_NH * c->HS, ld = c->packed ? 3 * D : D, ldo = c->packed ? D + 3 : D;
    const int64_t nin = (int64_t)SK_B * L * ld, natt = (int64_t)SK_B * SK_NH * L * L;
    len[0] = (int64_t)SK_B * L * ldo * (int64_t)sizeof(real); /* bytes */
    len[1] = natt * (int64_t)sizeof(real);
    len[2] = c->p > 0 ? natt : 0;
    real *in[3], *g[3];
    for (int t = 0; t < 3; t++) {
        bool own = !c->packed || t == 0; /* packed: one buffer, three column blocks */
        in[t] = own ? randn(nin, 40 + (uint64_t)t) : in[0] + t * D;
        g[t] = own ? randn(nin, 50 + (uint64_t)t) : g[0] + t * D;
        len[3 + t] = own ? nin * (int64_t)sizeof(real) : 0;
        buf[3 + t] = own ? g[t] : NULL;
    }
    const int64_t nout = (int64_t)SK_B * L * ldo;
    real *out = randn(nout, 60), *dO = randn(nout, 61);
    real *att = tt_test_alloc(natt);
    uint8_t *keep = c->p > 0 ? tt_xmalloc((size_t)natt) : NULL;
    int32_t *pad = NULL;
    if (c->pad) {
        pad = tt_xcalloc((size_t)(SK_B * L), sizeof *pad);
        for (int j = L / 2; j < L; j++) pad[L + j] = 1;
        if (L > 1) pad[1] = 1;
    }
    tt_attn_desc a = {.B = SK_B, .T = L, .NH = SK_NH, .HS = c->HS, .ldq = ld, .ldk = ld,
                      .ldv = ld, .ldo = ldo, .scale = (real)(1 / sqrt((double)c->HS)),
                      .causal = true, .p = (real)c->p, .full = full};
    tt_rng r;
    tt_rng_init(&r, 77, 3);
    tt_rng at = tt_rng_take(&r, natt);
    real *fs = tt_xmalloc(be->attention_scratch(&a, false)),
         *bs = tt_xmalloc(be->attention_scratch(&a, true));
    be->attention_forward(out, att, keep, in[0], in[1], in[2], pad, &a, at, fs);
    be->attention_backward(g[0], g[1], g[2], dO, att, keep, in[0], in[1], in[2], &a, bs);
    buf[0] = out;
    buf[1] = att;
    buf[2] = keep;
    free_all(dO, fs, bs);
    for (int t = 0; t < (c->packed ? 1 : 3); t++) free(in[t]);
    free(pad);
}

/* the first byte where two results differ, as the element of `real`s or bytes it falls in */
static void assert_same_bits(const skip_case *c, const char *what, const void *x, const void *y,
                             int64_t bytes, bool reals)
{
    if (!bytes || !memcmp(x, y, (size_t)bytes)) return;
    const unsigned char *bx = x, *by = y;
    int64_t e = 0;
    while (bx[e] == by[e]) e++;
    if (reals) e /= (int64_t)sizeof(real);
    double gx = reals ? (double)((const real *)x)[e] : bx[e];
    double gy = reals ? (double)((const real *)y)[e] : by[e];
    ck_abort_msg("T %d HS %d%s%s p %g: %s element %lld: skipping gives %.17g, full %.17g", c->T,
                 c->HS, c->pad ? " pad" : "", c->packed ? " packed" : "", c->p, what,
                 (long long)e, gx, gy);
}

START_TEST(test_causal_skip_same_bits)
{
    static const int Ts[] = {1, 5, 13, 16, 33, 64, 100}, HSs[] = {5, 8, 16, 32, 64};
    static const char *const what[SK_BUFS] = {"out", "att", "keep", "dq (dqkv)", "dk", "dv"};
    for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
        for (size_t hi = 0; hi < sizeof HSs / sizeof *HSs; hi++)
            for (int opt = 0; opt < 8; opt++) {
                skip_case c = {.T = Ts[ti], .HS = HSs[hi], .pad = opt & 1, .packed = opt & 2,
                               .p = opt & 4 ? 0.3 : 0.0};
                void *skip[SK_BUFS], *full[SK_BUFS];
                int64_t len[SK_BUFS];
                causal_pass(&c, false, skip, len);
                causal_pass(&c, true, full, len);
                for (int k = 0; k < SK_BUFS; k++) {
                    assert_same_bits(&c, what[k], skip[k], full[k], len[k], k != 2);
                    free(skip[k]);
                    free(full[k]);
                }
            }
}
END_TEST

/* The backward with fresh packed gradients (desc.fresh, as autograd passes a qkv gradient no
 * other op has written): every element written, never read (the buffer starts as NaN), with
 * the bits of adding to zeros; causal or not, with and without dropout, a head size the small
 * heads' loops take (8) and one OpenBLAS takes (48). */
START_TEST(test_backward_fresh_writes)
{
    for (int opt = 0; opt < 8; opt++) {
        const int Bn = 2, L = 24, NH = 2, HS = opt & 4 ? 48 : 8, D = NH * HS, ld = 3 * D;
        const int64_t nin = (int64_t)Bn * L * ld, nout = (int64_t)Bn * L * D,
                      natt = (int64_t)Bn * NH * L * L;
        tt_attn_desc a = {.B = Bn, .T = L, .NH = NH, .HS = HS, .ldq = ld, .ldk = ld, .ldv = ld,
                          .ldo = D, .scale = R(0.3), .causal = opt & 1, .p = opt & 2 ? R(0.2) : 0};
        real *qkv = randn(nin, 70), *out = tt_test_alloc(nout), *dO = randn(nout, 71);
        real *att = tt_test_alloc(natt), *added = tt_test_alloc(nin), *fresh = tt_test_alloc(nin);
        uint8_t *keep = a.p > 0 ? tt_xmalloc((size_t)natt) : NULL;
        tt_rng r;
        tt_rng_init(&r, 78, 1);
        real *fs = tt_xmalloc(be->attention_scratch(&a, false)),
             *bs = tt_xmalloc(be->attention_scratch(&a, true));
        be->attention_forward(out, att, keep, qkv, qkv + D, qkv + 2 * D, NULL, &a,
                              tt_rng_take(&r, natt), fs);
        for (int64_t i = 0; i < nin; i++) {
            added[i] = R(0);
            fresh[i] = (real)NAN;
        }
        be->attention_backward(added, added + D, added + 2 * D, dO, att, keep, qkv, qkv + D,
                               qkv + 2 * D, &a, bs);
        a.fresh = true;
        be->attention_backward(fresh, fresh + D, fresh + 2 * D, dO, att, keep, qkv, qkv + D,
                               qkv + 2 * D, &a, bs);
        for (int64_t i = 0; i < nin; i++)
            ck_assert_msg(fresh[i] == added[i], "causal %d p %g HS %d: element %lld written "
                          "%.9g, added to zeros %.9g", a.causal, (double)a.p, HS, (long long)i,
                          (double)fresh[i], (double)added[i]);
        free_all(qkv, out, dO, att, added, fresh, fs, bs);
        free(keep);
    }
}
END_TEST

Suite *attention_suite(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("sdpa");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fused_equals_composed);
    tcase_add_test(tc, test_weights_invariants);
    tcase_add_test(tc, test_packed_equals_separate);
    tcase_add_test(tc, test_eval_mode_no_dropout);
    tcase_add_test(tc, test_backward_fresh_writes);
    suite_add_tcase(s, tc);
    TCase *skip = new_tcase(s, "causal skip");
    tcase_add_test(skip, test_causal_skip_same_bits);
    return s;
}
