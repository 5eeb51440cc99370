/* bench_util.h: what both benchmarks need: a monotonic clock, and the median of timings. */
#ifndef TT_BENCH_UTIL_H
#define TT_BENCH_UTIL_H

#include "tensor/common.h"

#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sorts v. */
static inline double median(double *v, int n) { return tt_median(v, n); }

#endif
