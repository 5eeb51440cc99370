/* testutil.c: shared helpers for the suites (see testutil.h). */
#define _XOPEN_SOURCE 700 /* nftw */

#include "testutil.h"

#include "tensor/safetensors.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* The runner's root folder, made in the parent process (forked tests inherit the path), and
 * the current test's folder inside it (set by tt_tmp_setup, cleared by tt_tmp_teardown). */
static char tmp_root[PATH_MAX], test_dir[PATH_MAX];
static pid_t tmp_owner;
/* The first failure of a removal: nftw's callback has no context argument. */
static char rm_failed[PATH_MAX + 64];

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    /* FTW_DEPTH: a folder comes after its contents (FTW_DP); FTW_PHYS: a link is an entry */
    if ((type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT) return 0;
    snprintf(rm_failed, sizeof rm_failed, "%s: %s", path, strerror(errno));
    return 1;
}

/* 0, or -1 with the first failure in rm_failed; a path that does not exist is no failure. */
static int rm_tree(const char *path)
{
    rm_failed[0] = '\0';
    int rc = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (rc == -1 && errno != ENOENT && !rm_failed[0])
        snprintf(rm_failed, sizeof rm_failed, "%s: %s", path, strerror(errno));
    return rc == 0 || !rm_failed[0] ? 0 : -1;
}

/* atexit: only the process that made the root removes it, not every forked test (a test's
 * child leaves through exit() and so runs this too). */
static void remove_tmp_root(void)
{
    if (getpid() != tmp_owner || !tmp_root[0]) return;
    if (rm_tree(tmp_root)) fprintf(stderr, "warning: cannot remove %s\n", rm_failed);
    tmp_root[0] = '\0';
}

int tt_test_tmp_init(void)
{
    const char *base = getenv("TMPDIR"), *why = NULL;
    if (!base || !*base) base = "/tmp";
    int n = snprintf(tmp_root, sizeof tmp_root, "%s/tt_check_XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof tmp_root) why = "path too long";
    else if (!mkdtemp(tmp_root)) why = strerror(errno);
    else if (atexit(remove_tmp_root) != 0) {
        why = "atexit failed";
        rmdir(tmp_root);
    }
    if (why) {
        fprintf(stderr, "cannot make a temporary folder in %s: %s\nHINT: set TMPDIR to a "
                "writable folder\n", base, why);
        tmp_root[0] = '\0';
        return -1;
    }
    tmp_owner = getpid();
    return 0;
}

void tt_tmp_setup(void)
{
    ck_assert_msg(tmp_root[0], "no temporary root folder: the runner calls tt_test_tmp_init");
    int n = snprintf(test_dir, sizeof test_dir, "%s/t_XXXXXX", tmp_root);
    ck_assert_msg(n > 0 && (size_t)n < sizeof test_dir, "%s: path too long", tmp_root);
    ck_assert_msg(mkdtemp(test_dir) != NULL, "mkdtemp %s: %s", test_dir, strerror(errno));
}

void tt_tmp_teardown(void)
{
    if (!test_dir[0]) return;
    char dir[PATH_MAX];
    memcpy(dir, test_dir, sizeof dir);
    test_dir[0] = '\0';
    tt_test_rm_tree(dir);
}

const char *tt_test_tmpdir(void)
{
    ck_assert_msg(test_dir[0], "no temporary folder: add the checked fixture tt_tmp_setup, "
                  "tt_tmp_teardown to the tcase");
    return test_dir;
}

const char *tt_test_path(const char *name)
{
    static char paths[8][PATH_MAX];
    static int slot;
    char *p = paths[slot++ % 8];
    int n = snprintf(p, PATH_MAX, "%s/%s", tt_test_tmpdir(), name);
    ck_assert_msg(n > 0 && n < PATH_MAX, "%s/%s: path too long", test_dir, name);
    return p;
}

void tt_test_mkdir(char *dir, size_t len)
{
    int n = snprintf(dir, len, "%s/d_XXXXXX", tt_test_tmpdir());
    ck_assert_msg(n > 0 && (size_t)n < len, "%s: path too long for %zu bytes", test_dir, len);
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

void tt_test_rm_tree(const char *path)
{
    ck_assert_msg(rm_tree(path) == 0, "cannot remove %s", rm_failed);
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

/* Two safetensors files hold the same tensors (names, dtypes, shapes, bytes) and, when given,
 * the same values of the metadata keys listed in meta (NULL-terminated, or NULL). */
void tt_test_same_tensors(const char *a, const char *b, const char *const *meta)
{
    tt_st_file fa, fb;
    char err[512];
    ck_assert_msg(tt_st_load(&fa, a, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(tt_st_load(&fb, b, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fa.n, fb.n);
    for (int i = 0; i < fa.n; i++) {
        const tt_st_entry *x = &fa.entries[i], *y = tt_st_find(&fb, x->name);
        ck_assert_msg(y, "%s: no tensor %s", b, x->name);
        ck_assert_int_eq(x->dtype, y->dtype);
        ck_assert_int_eq(x->numel, y->numel);
        ck_assert_msg(x->nbytes == y->nbytes && memcmp(x->data, y->data, x->nbytes) == 0,
                      "tensor %s differs between %s and %s", x->name, a, b);
    }
    for (int k = 0; meta && meta[k]; k++) {
        const char *ma = tt_st_meta(&fa, meta[k]), *mb = tt_st_meta(&fb, meta[k]);
        ck_assert_msg(ma && mb && strcmp(ma, mb) == 0, "metadata %s differs", meta[k]);
    }
    tt_st_close(&fa);
    tt_st_close(&fb);
}
