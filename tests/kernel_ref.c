/* kernel_ref.c: helpers shared by the kernel reference suites (see kernel_ref.h). */
#include "kernel_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *label(const char *fmt, ...)
{
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

double tol_sum(int64_t terms) { return TOL * sqrt((double)(terms > 1 ? terms : 1)); }

real *randn(int64_t n, uint64_t seed)
{
    real *x = tt_test_alloc(n);
    tt_test_normal(x, n, seed);
    return x;
}

real *randu(int64_t n, uint64_t seed, double lo, double hi)
{
    real *x = tt_test_alloc(n);
    tt_test_uniform(x, n, seed, (real)lo, (real)hi);
    return x;
}

void free_list(void **p)
{
    for (; *p; p++) free(*p);
}

real *dup_real(const real *x, int64_t n)
{
    real *y = tt_test_alloc(n);
    memcpy(y, x, (size_t)n * sizeof *x);
    return y;
}

int32_t *random_tokens(int64_t n, int V, uint64_t seed)
{
    real *u = randu(n, seed, 0, 1);
    int32_t *t = tt_xmalloc((size_t)n * sizeof *t);
    for (int64_t i = 0; i < n; i++) {
        int32_t v = (int32_t)((double)u[i] * V);
        t[i] = v < V ? v : V - 1;
    }
    t[n - 1] = t[0];
    free(u);
    return t;
}

void add_into(real *want, const double *add, int64_t n)
{
    for (int64_t i = 0; i < n; i++) want[i] = (real)((double)want[i] + add[i]);
}

double *dzeros(int64_t n) { return tt_xcalloc((size_t)(n ? n : 1), sizeof(double)); }

const int64_t SIZES[] = {1, 3, 7, 17, 33, 65, 129, 100003};
const int NSIZES = (int)(sizeof SIZES / sizeof SIZES[0]);

const struct row_shape SHAPES[] = {{1, 1},  {1, 7},   {3, 5},    {7, 17},  {33, 65},
                                   {5, 129}, {65, 1}, {257, 33}, {17, 1025}};
const int NSHAPES = (int)(sizeof SHAPES / sizeof SHAPES[0]);

TCase *new_tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return tc;
}
