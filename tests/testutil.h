/* testutil.h: what every suite shares: the suites' declarations (suites.h), array comparison
 * with a useful report, and random test data. Tests build for float32 and float64; TOL is the
 * precision's tolerance for comparisons against a reference loop. */
#ifndef TT_TESTUTIL_H
#define TT_TESTUTIL_H

#include <check.h>

#include "suites.h"

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "tensor/arena.h"
#include "tensor/rng.h"

#ifdef TT_DOUBLE
#define TOL 1e-10
#else
#define TOL 2e-5
#endif

/* every suite's NAME_suite(), from the lists of suites.h */
#define TT_SUITE_DECLARE(name, what) Suite *name##_suite(void);
TT_SUITES(TT_SUITE_DECLARE)
TT_SUITES_F64(TT_SUITE_DECLARE)
TT_SUITES_F32(TT_SUITE_DECLARE)
TT_SUITES_CUDA(TT_SUITE_DECLARE)

/* Fails the current test with the label, the first bad index, both values and the largest
 * difference, unless |got - want| <= atol + rtol * |want| everywhere. */
#define ck_assert_close(label, got, want, n, atol, rtol)                                           \
    tt_check_close(__FILE__, __LINE__, label, got, want, n, atol, rtol)
void tt_check_close(const char *file, int line, const char *label, const real *got,
                    const real *want, int64_t n, double atol, double rtol);

/* ck_assert_msg for checks in loops over many elements: Check is called only on a failure.
 * Every passing ck_assert is a message to the runner's parent process, which keeps them all:
 * a million of them grew the sanitizer build's runner by hundreds of MB, and every later
 * fork (one per test) slowed with it. */
#define TT_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                                    \
    } while (0)

/* |got - want| / |want| in 2-norm (|got - want| when want is 0): the relative error of a
 * whole tensor, as the parity tests report it. */
double tt_rel_err(const real *got, const real *want, int64_t n);

/* A CPU graph with its own data and meta arenas (`bytes` each) and an rng (seed, stream 1). */
typedef struct tt_test_graph {
    tt_arena data, meta;
    tt_rng rng;
    tt_graph g;
} tt_test_graph;
void tt_test_graph_init(tt_test_graph *t, size_t bytes, uint64_t seed);
void tt_test_graph_free(tt_test_graph *t);

/* For tests registered with tcase_add_test_raise_signal(..., SIGABRT): the coming fatal error
 * must name each non-NULL string, or the forked test exits normally instead of aborting (and
 * so fails). Expected aborts print nothing. */
void tt_expect_abort(const char *a, const char *b, const char *c);

/* n values from N(0, 1) (or U[lo, hi)) drawn from a test-local stream; deterministic per seed. */
void tt_test_normal(real *x, int64_t n, uint64_t seed);
void tt_test_uniform(real *x, int64_t n, uint64_t seed, real lo, real hi);
/* Attention option combination i of TT_SDPA_COMBOS: {scaled by 1/sqrt(d_k), unscaled} x
 * {tau 1, 0.5} x {no mask, causal, padding (pad), both} x {dropout 0, 0.2}; label describes it. */
#define TT_SDPA_COMBOS 32
tt_sdpa_opts tt_test_sdpa_combo(int i, int d_k, const tt_tensor *pad, char *label, size_t len);

/* Temporary folders, one fixture for every suite that writes files. The runner calls
 * tt_test_tmp_init once, before any suite: it makes a root folder $TMPDIR/tt_check_XXXXXX (or
 * under /tmp) and registers its removal, with everything in it, for when the runner exits.
 * A tcase whose tests write files adds the checked fixture tt_tmp_setup / tt_tmp_teardown:
 * each test then gets a fresh, empty folder inside the root (tt_test_tmpdir), removed after
 * the test. A test that fails, aborts or times out ends its forked child without the teardown;
 * the root's removal is what still leaves nothing behind then. */
int tt_test_tmp_init(void); /* 0, or -1 after a message on stderr */
void tt_tmp_setup(void);
void tt_tmp_teardown(void);
/* The current test's folder; fails the test when the tcase has no tt_tmp_setup fixture. */
const char *tt_test_tmpdir(void);
/* tt_test_tmpdir()/name, in one of 8 static buffers used in turn (so a few can be held at
 * once); fails the test if the path does not fit. */
const char *tt_test_path(const char *name);
/* A fresh folder inside the test's (for tests that need several), its path into dir. */
void tt_test_mkdir(char *dir, size_t len);
/* Removes path, a file or a folder with everything in it (symbolic links are removed, never
 * followed); fails the test on any error but a path that does not exist. */
void tt_test_rm_tree(const char *path);

/* Two safetensors files hold the same tensors (names, dtypes, shapes, bytes), and the same
 * values of the metadata keys in meta (NULL-terminated; NULL for none). */
void tt_test_same_tensors(const char *a, const char *b, const char *const *meta);

/* malloc'ed, never NULL; free with free() */
real *tt_test_alloc(int64_t n);

#endif
