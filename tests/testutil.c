/* testutil.c: shared helpers for the suites (see testutil.h). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tt_check_close(const char *file, int line, const char *label, const real *got,
                    const real *want, int64_t n, double atol, double rtol)
{
    int64_t first_bad = -1;
    double max_diff = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double g = (double)got[i], w = (double)want[i];
        double d = fabs(g - w);
        bool same_inf = isinf(g) && isinf(w) && (g > 0) == (w > 0);
        if (same_inf) continue;
        if (!(d <= atol + rtol * fabs(w))) { /* NaN fails too */
            if (first_bad < 0) first_bad = i;
            if (!(d <= max_diff)) max_diff = d;
        } else if (d > max_diff) {
            max_diff = d;
        }
    }
    if (first_bad >= 0)
        ck_abort_msg("%s:%d: %s: first mismatch at index %lld: got %.10g want %.10g "
                     "(max |diff| %.3g, atol %.1g rtol %.1g, n %lld)", file, line, label,
                     (long long)first_bad, (double)got[first_bad], (double)want[first_bad],
                     max_diff, atol, rtol, (long long)n);
}

double tt_rel_err(const real *got, const real *want, int64_t n)
{
    double d = 0, w = 0;
    for (int64_t i = 0; i < n; i++) {
        double diff = (double)got[i] - (double)want[i];
        d += diff * diff;
        w += (double)want[i] * (double)want[i];
    }
    return w > 0 ? sqrt(d / w) : sqrt(d);
}

void tt_test_normal(real *x, int64_t n, uint64_t seed)
{
    tt_rng r;
    tt_rng_init(&r, seed, 1000);
    tt_rng_normal(&r, x, n, R(0), R(1));
}

void tt_test_uniform(real *x, int64_t n, uint64_t seed, real lo, real hi)
{
    tt_rng r;
    tt_rng_init(&r, seed, 1001);
    tt_rng_uniform(&r, x, n, lo, hi);
}

tt_sdpa_opts tt_test_sdpa_combo(int i, int d_k, const tt_tensor *pad, char *label, size_t len)
{
    bool scaled = i & 1, causal = i & 4, padded = i & 8, drop = i & 16;
    real tau = i & 2 ? R(0.5) : R(1);
    tt_sdpa_opts o = {.scale = R(1) / (tau * (scaled ? R_SQRT((real)d_k) : R(1))),
                      .causal = causal, .pad = padded ? pad : NULL,
                      .dropout = drop ? R(0.2) : R(0)};
    snprintf(label, len, "sdpa %s tau=%g causal=%d pad=%d p=%g", scaled ? "scaled" : "unscaled",
             (double)tau, causal, padded, (double)o.dropout);
    return o;
}

void tt_test_tmpdir(char *dir, size_t len, const char *tag)
{
    snprintf(dir, len, "/tmp/tt_%s_XXXXXX", tag);
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
}

void tt_test_rm_tree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

real *tt_test_alloc(int64_t n) { return tt_xcalloc((size_t)(n ? n : 1), sizeof(real)); }

static const char *expected[3];

static void check_fatal_message(const char *message)
{
    for (int i = 0; i < 3; i++)
        if (expected[i] && !strstr(message, expected[i])) _exit(3);
    if (!freopen("/dev/null", "w", stderr)) _exit(4);
}

void tt_expect_abort(const char *a, const char *b, const char *c)
{
    expected[0] = a;
    expected[1] = b;
    expected[2] = c;
    tt_fatal_hook = check_fatal_message;
}

void tt_test_graph_init(tt_test_graph *t, size_t bytes, uint64_t seed)
{
    tt_arena_init(&t->data, "test-data", TT_CPU, bytes);
    tt_arena_init(&t->meta, "test-meta", TT_CPU, bytes);
    tt_rng_init(&t->rng, seed, 1);
    tt_graph_init(&t->g, &t->data, &t->meta, &t->rng);
}

void tt_test_graph_free(tt_test_graph *t)
{
    tt_arena_free(&t->data);
    tt_arena_free(&t->meta);
}
