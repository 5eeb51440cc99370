/* kernel_ref.h: what the kernel reference suites (test_gemm.c, test_kernels.c,
 * test_dropout_loss.c) share. References accumulate in double (libm exp, log, erf, sqrt) and
 * round once to real, so they share nothing with the kernels but the contract in
 * tensor/kernels.h; tolerances grow with the length of the sums. Backward kernels add into their
 * gradients, so every backward test prefills the gradient with random values and expects
 * prefill + gradient. Buffers are allocated to the exact extent a kernel may touch, so the
 * sanitizer build catches reads and writes past it. */
#ifndef TT_KERNEL_REF_H
#define TT_KERNEL_REF_H

#include "testutil.h"

#include "tensor/backend.h"

/* A label for one comparison. One static buffer: use it before the next call, and never pass a
 * label() result back into label(). */
const char *label(const char *fmt, ...) TT_PRINTF(1, 2);
/* Rounding in a sum of `terms` O(1) values grows like a random walk, sqrt(terms) ulps; this is
 * what lets float32 pass gemm with K = 511 without hiding a wrong term (each is O(1)). */
double tol_sum(int64_t terms);
real *randn(int64_t n, uint64_t seed);
real *randu(int64_t n, uint64_t seed, double lo, double hi);
/* free_all(a, b, ...) frees each of a list of non-NULL pointers (the macro appends the NULL that
 * ends the list). */
#define free_all(...) free_list((void *[]){__VA_ARGS__, NULL})
void free_list(void **p);
real *dup_real(const real *x, int64_t n);
/* n tokens in [0, V); the last repeats the first so a scatter-add always meets a repeat. */
int32_t *random_tokens(int64_t n, int V, uint64_t seed);
/* want[i] = prefill[i] + add[i], the expectation of a backward kernel. */
void add_into(real *want, const double *add, int64_t n);
double *dzeros(int64_t n);
/* A test case added to s with a 120 s timeout: the references are naive loops, and at -O0 under
 * the sanitizers they need more than Check's default 4 s. */
TCase *new_tcase(Suite *s, const char *name);

/* flat sizes, and (N rows, C columns) for the row-wise kernels */
extern const int64_t SIZES[];
extern const int NSIZES;
struct row_shape {
    int64_t N;
    int C;
};
extern const struct row_shape SHAPES[];
extern const int NSHAPES;

/* every kernel under test is reached through the table, as autograd reaches it */
static const tt_backend *const be = &tt_cpu_backend;

#endif
