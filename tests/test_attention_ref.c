/* test_attention_ref.c: the fused attention kernels (cpu/attention.c, through the backend table)
 * against plain nested loops in double: scores, -inf masks, max-subtracted softmax, dropout with
 * the keep mask the kernel saved (itself checked against the scalar Philox core), out = D V, and
 * the backward by the chain rule written out. Odd sizes; every combination of causal, padding
 * (one sequence all padding), three scales and two dropout rates, in the packed and unpacked
 * layouts; backward into prefilled gradients for every subset of dq, dk, dv (the rest NULL).
 * Tolerance, relative to each tensor's largest value: 1e-12 in float64, 1e-5 in float32.
 * Conventions: kernel_ref.h. */
#include "kernel_ref.h"

#include "tensor/philox.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_DOUBLE
#define REF_TOL 1e-12
#else
#define REF_TOL 1e-5
#endif


/* T = 1 has one key per row; HS = 1 one channel per head; 13 and 7 leave Philox blocks and AVX2
 * lanes unaligned across heads */
static const struct {
    int B, T, NH, HS;
} ATT_SIZES[] = {{2, 1, 1, 1}, {3, 5, 3, 5}, {2, 7, 1, 8}, {3, 13, 3, 8}, {2, 13, 1, 5},
                 {3, 7, 3, 1}};
enum { N_ATT_SIZES = sizeof ATT_SIZES / sizeof ATT_SIZES[0] };

#define NEG_INF (-(double)INFINITY)

static const char *const SCALE_NAME[3] = {"1/sqrt(HS)", "1", "tau 0.5"};

/* One case: sizes, options, and the kernel's layout. Unpacked: q, k, v (and their gradients)
 * in three [B,T,D] buffers, out [B,T,D]. Packed: one [B,T,3D] buffer, q, k, v its column
 * blocks, and out rows of stride D + 2, so two columns per row that the kernel must not touch. */
typedef struct refcase {
    int B, T, NH, HS, D;
    bool causal, pad, packed;
    double scale, p;
    int ld, ldo, nbuf;  /* row stride of q/k/v, of out/dout; buffers holding q, k, v */
    int64_t nbuf_elems; /* elements of each of those buffers */
    char desc[128];
} refcase;

/* tensor t (0 q, 1 k, 2 v) of the buffers buf: base pointer in the kernel's layout */
static real *part(const refcase *c, real *const buf[3], int t)
{
    return c->packed ? buf[0] + (int64_t)t * c->D : buf[t];
}

/* element (b, i, h, d) of a tensor with row stride ld */
static int64_t at4(const refcase *c, int ld, int b, int i, int h, int d)
{
    return ((int64_t)b * c->T + i) * ld + (int64_t)h * c->HS + d;
}

/* padding at the end of each sequence, the last one all padding, and in sequence 0 an inner
 * key (a nonzero other than 1: any nonzero marks padding) */
static int32_t *make_pad(const refcase *c)
{
    int32_t *pad = tt_xcalloc((size_t)(c->B * c->T), sizeof *pad);
    for (int b = 0; b < c->B; b++) {
        int len = b == c->B - 1 ? 0 : b == 0 ? c->T : (c->T + 1) / 2;
        for (int j = len; j < c->T; j++) pad[b * c->T + j] = 1;
    }
    if (c->T > 2) pad[1] = 3;
    return pad;
}

/* The reference: P (B,NH,T,T) softmax weights, O and dq/dk/dv dense (B,T,D), all double.
 * X: q, k, v in the kernel's layout; dO with stride ldo; keep NULL when p == 0. */
static void reference(const refcase *c, real *const X[3], const real *dO, const int32_t *pad,
                      const uint8_t *keep, double *P, double *O, double *G[3])
{
    const int T = c->T, HS = c->HS;
    double *S = dzeros((int64_t)T * T), *Dm = dzeros((int64_t)T * T), *dS = dzeros((int64_t)T * T);
    const real *q = X[0], *k = X[1], *v = X[2];
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->NH; h++) {
            int64_t bh = (int64_t)b * c->NH + h;
            double *Pbh = P + bh * T * T;
            /* forward: S = scale Q K^T masked to -inf, P = softmax(S), D = P keep / (1-p),
             * O = D V */
            for (int i = 0; i < T; i++) {
                double m = NEG_INF;
                for (int j = 0; j < T; j++) {
                    double s = NEG_INF;
                    if (!((c->causal && j > i) || (pad && pad[b * T + j]))) {
                        s = 0;
                        for (int d = 0; d < HS; d++)
                            s += (double)q[at4(c, c->ld, b, i, h, d)] *
                                 (double)k[at4(c, c->ld, b, j, h, d)];
                        s *= c->scale;
                    }
                    S[i * T + j] = s;
                    if (s > m) m = s;
                }
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    double e = m == NEG_INF ? 0 : exp(S[i * T + j] - m);
                    Pbh[i * T + j] = e;
                    sum += e;
                }
                for (int j = 0; j < T; j++) {
                    int64_t e = (bh * T + i) * T + j;
                    if (sum > 0) Pbh[i * T + j] /= sum;
                    double kd = keep ? (keep[e] ? 1 / (1 - c->p) : 0) : 1;
                    Dm[i * T + j] = Pbh[i * T + j] * kd;
                }
                for (int d = 0; d < HS; d++) {
                    double o = 0;
                    for (int j = 0; j < T; j++)
                        o += Dm[i * T + j] * (double)v[at4(c, c->ld, b, j, h, d)];
                    O[at4(c, c->D, b, i, h, d)] = o;
                }
            }
            /* backward: dD = dO V^T, dP = dD keep / (1-p), dS = P (dP - rowsum(dP P)),
             * dQ = scale dS K, dK = scale dS^T Q, dV = D^T dO */
            for (int i = 0; i < T; i++) {
                double dot = 0;
                for (int j = 0; j < T; j++) {
                    int64_t e = (bh * T + i) * T + j;
                    double dD = 0;
                    for (int d = 0; d < HS; d++)
                        dD += (double)dO[at4(c, c->ldo, b, i, h, d)] *
                              (double)v[at4(c, c->ld, b, j, h, d)];
                    double kd = keep ? (keep[e] ? 1 / (1 - c->p) : 0) : 1;
                    dS[i * T + j] = dD * kd; /* dP for now */
                    dot += dS[i * T + j] * Pbh[i * T + j];
                }
                for (int j = 0; j < T; j++)
                    dS[i * T + j] = Pbh[i * T + j] * (dS[i * T + j] - dot);
            }
            for (int i = 0; i < T; i++)
                for (int d = 0; d < HS; d++) {
                    double gq = 0, gk = 0, gv = 0;
                    for (int j = 0; j < T; j++) {
                        gq += dS[i * T + j] * (double)k[at4(c, c->ld, b, j, h, d)];
                        gk += dS[j * T + i] * (double)q[at4(c, c->ld, b, j, h, d)];
                        gv += Dm[j * T + i] * (double)dO[at4(c, c->ldo, b, j, h, d)];
                    }
                    G[0][at4(c, c->D, b, i, h, d)] = c->scale * gq;
                    G[1][at4(c, c->D, b, i, h, d)] = c->scale * gk;
                    G[2][at4(c, c->D, b, i, h, d)] = gv;
                }
        }
    free_all(S, Dm, dS);
}

static double max_abs(const double *x, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* got against want, to REF_TOL of want's largest value (and of each element) */
static void check_ref(const char *what, const refcase *c, const real *got, const double *want,
                      int64_t n)
{
    real *w = tt_test_alloc(n);
    for (int64_t i = 0; i < n; i++) w[i] = (real)want[i];
    ck_assert_close(label("%s: %s", c->desc, what), got, w, n, REF_TOL * max_abs(want, n),
                    REF_TOL);
    free(w);
}

/* The dropout mask the kernel saved is the scalar Philox core's keep bit of element
 * ((b*NH+h)*T+i)*T+j of the cursor `at`: what a device kernel draws for it. */
static void check_keep(const refcase *c, const uint8_t *keep, tt_rng at, int64_t natt)
{
    uint32_t thr = tt_philox_keep_threshold(c->p);
    int64_t kept = 0;
    for (int64_t e = 0; e < natt; e++) {
        uint32_t w = tt_philox_word(at.seed, at.stream, at.counter + (uint64_t)e);
        TT_CHECK(keep[e] == tt_philox_keep(w, thr), "%s: keep[%lld] = %d, Philox says %d",
                 c->desc, (long long)e, keep[e], tt_philox_keep(w, thr));
        kept += keep[e];
    }
    ck_assert_msg(natt < 100 || (kept > natt / 2 && kept < natt * 9 / 10),
                  "%s: %lld of %lld kept at p %g", c->desc, (long long)kept, (long long)natt,
                  c->p);
}

/* Rows of the all-padding sequence (the last): exact zeros in att and out, and gradients that
 * are exactly the prefill (nothing added, no NaN). */
static void check_all_masked(const refcase *c, const real *att, const real *out, real *const g[3],
                             real *const g0[3], const bool have[3])
{
    const int T = c->T, b = c->B - 1;
    for (int64_t e = (int64_t)b * c->NH * T * T; e < (int64_t)c->B * c->NH * T * T; e++)
        TT_CHECK(att[e] == R(0), "%s: all-masked att[%lld] = %g", c->desc, (long long)e,
                 (double)att[e]);
    for (int i = 0; i < T; i++)
        for (int d = 0; d < c->D; d++) {
            int64_t o = ((int64_t)b * T + i) * c->ldo + d;
            TT_CHECK(out[o] == R(0), "%s: all-masked out row %d col %d = %g", c->desc, i, d,
                     (double)out[o]);
            for (int t = 0; t < 3; t++) {
                int64_t x = ((int64_t)b * T + i) * c->ld + d;
                const real *gt = part(c, g, t), *g0t = part(c, g0, t);
                if (have[t])
                    TT_CHECK(gt[x] == g0t[x], "%s: all-masked d%c row %d col %d changed",
                             c->desc, "qkv"[t], i, d);
            }
        }
}

static void run_case(refcase *c, uint64_t seed)
{
    const int B = c->B, T = c->T, D = c->D;
    const int64_t nd = (int64_t)B * T * D, natt = (int64_t)B * c->NH * T * T,
                  nout = (int64_t)B * T * c->ldo;
    real *in[3] = {0}, *g0[3] = {0}, *g[3] = {0};
    for (int t = 0; t < c->nbuf; t++) {
        in[t] = randn(c->nbuf_elems, seed + (uint64_t)t);
        g0[t] = randn(c->nbuf_elems, seed + 10 + (uint64_t)t);
        g[t] = tt_test_alloc(c->nbuf_elems);
    }
    real *X[3] = {part(c, in, 0), part(c, in, 1), part(c, in, 2)};
    real *dO = randn(nout, seed + 20), *out0 = randn(nout, seed + 21), *out = dup_real(out0, nout);
    real *att = randu(natt, seed + 22, -9, 9);
    uint8_t *keep = c->p > 0 ? tt_xmalloc((size_t)natt) : NULL;
    int32_t *pad = c->pad ? make_pad(c) : NULL;
    tt_attn_desc a = {.B = B, .T = T, .NH = c->NH, .HS = c->HS, .ldq = c->ld, .ldk = c->ld,
                      .ldv = c->ld, .ldo = c->ldo, .scale = (real)c->scale,
                      .causal = c->causal, .p = (real)c->p};
    tt_rng r;
    tt_rng_init(&r, seed, 5);
    tt_rng_take(&r, (int64_t)(seed % 97) * 4); /* a cursor past the start */
    tt_rng at = tt_rng_take(&r, natt);
    /* scratch of exactly the size each call asks for: the sanitizer build sees any overrun */
    real *fscratch = tt_xmalloc(be->attention_scratch(&a, false));
    real *bscratch = tt_xmalloc(be->attention_scratch(&a, true));

    be->attention_forward(out, att, keep, X[0], X[1], X[2], pad, &a, at, fscratch);
    if (keep) check_keep(c, keep, at, natt);
    double *P = dzeros(natt), *O = dzeros(nd), *G[3] = {dzeros(nd), dzeros(nd), dzeros(nd)};
    reference(c, X, dO, pad, keep, P, O, G);
    check_ref("att", c, att, P, natt);
    real *got = tt_test_alloc(nd);
    for (int64_t row = 0; row < (int64_t)B * T; row++) {
        memcpy(got + row * D, out + row * c->ldo, (size_t)D * sizeof(real));
        for (int d = D; d < c->ldo; d++)
            TT_CHECK(out[row * c->ldo + d] == out0[row * c->ldo + d],
                     "%s: out row %lld column %d past D was written", c->desc,
                     (long long)row, d);
    }
    check_ref("out", c, got, O, nd);

    /* backward with each subset of dq, dk, dv (bit t of mask set: gradient t wanted). The
     * parts cover their buffers (packed: three column blocks, no gap), so comparing each part
     * with the prefill plus the reference (or the prefill alone) checks every element. */
    double *want = dzeros(nd);
    for (int mask = 0; mask < 8; mask++) {
        bool have[3] = {mask & 1, mask & 2, mask & 4};
        for (int t = 0; t < c->nbuf; t++)
            memcpy(g[t], g0[t], (size_t)c->nbuf_elems * sizeof(real));
        real *dX[3];
        for (int t = 0; t < 3; t++) dX[t] = have[t] ? part(c, g, t) : NULL;
        be->attention_backward(dX[0], dX[1], dX[2], dO, att, keep, X[0], X[1], X[2], &a,
                               bscratch);
        for (int t = 0; t < 3; t++) {
            const real *gt = part(c, g, t), *g0t = part(c, g0, t);
            for (int64_t row = 0; row < (int64_t)B * T; row++)
                for (int d = 0; d < D; d++) {
                    got[row * D + d] = gt[row * c->ld + d];
                    want[row * D + d] = (double)g0t[row * c->ld + d] +
                                        (have[t] ? G[t][row * D + d] : 0.0);
                }
            /* the tolerance scales with the gradient, not with the prefill */
            real *w = tt_test_alloc(nd);
            for (int64_t e = 0; e < nd; e++) w[e] = (real)want[e];
            ck_assert_close(label("%s: d%c (computing d%s%s%s)", c->desc, "qkv"[t],
                                  have[0] ? "q" : "", have[1] ? "k" : "", have[2] ? "v" : ""),
                            got, w, nd, REF_TOL * max_abs(G[t], nd), REF_TOL);
            free(w);
        }
        if (c->pad) check_all_masked(c, att, out, g, g0, have);
    }
    free_all(dO, out0, out, att, fscratch, bscratch, P, O, G[0], G[1], G[2], got, want);
    free(keep);
    free(pad);
    for (int t = 0; t < c->nbuf; t++) free_all(in[t], g0[t], g[t]);
}

/* every size and option combination in one layout */
static void run_layout(bool packed)
{
    int n = 0;
    for (int s = 0; s < N_ATT_SIZES; s++)
        for (int opt = 0; opt < 24; opt++, n++) {
            refcase c = {.B = ATT_SIZES[s].B, .T = ATT_SIZES[s].T, .NH = ATT_SIZES[s].NH,
                         .HS = ATT_SIZES[s].HS, .packed = packed};
            c.D = c.NH * c.HS;
            c.causal = opt & 1;
            c.pad = opt & 2;
            c.p = opt & 4 ? (double)R(0.3) : 0.0;
            int sk = opt / 8;
            double rs = 1 / sqrt((double)c.HS);
            /* the scale as real, as the op passes it: the reference uses the same number */
            c.scale = (double)(real)(sk == 0 ? rs : sk == 1 ? 1.0 : rs / 0.5);
            c.ld = packed ? 3 * c.D : c.D;
            c.ldo = packed ? c.D + 2 : c.D;
            c.nbuf = packed ? 1 : 3;
            c.nbuf_elems = (int64_t)c.B * c.T * c.ld;
            snprintf(c.desc, sizeof c.desc, "%s B%d T%d NH%d HS%d%s%s scale %s p %g",
                     packed ? "packed" : "unpacked", c.B, c.T, c.NH, c.HS,
                     c.causal ? " causal" : "", c.pad ? " pad" : "", SCALE_NAME[sk], c.p);
            run_case(&c, 1000 + 100 * (uint64_t)n + (packed ? 50000 : 0));
        }
}

START_TEST(test_attention_ref_unpacked) { run_layout(false); }
END_TEST

START_TEST(test_attention_ref_packed) { run_layout(true); }
END_TEST

Suite *attention_ref_suite(void)
{
    Suite *s = suite_create("attention_ref");
    TCase *tc = new_tcase(s, "naive loops");
    tcase_add_test(tc, test_attention_ref_unpacked);
    tcase_add_test(tc, test_attention_ref_packed);
    return s;
}
