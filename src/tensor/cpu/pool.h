/* pool.h: the CPU kernels' one thread pool.
 *
 * Every CPU kernel, gemms included, runs its work on this pool: OpenBLAS is kept at one thread
 * and each pool thread calls it on its own block. One pool means no second set of threads
 * spinning for the same cores (on 2 cores a spinning pool next to OpenBLAS's own halves the
 * speed: docs/design.md section 9).
 *
 * The threads are started by tt_pool_start (through the backend's set_threads, before the first
 * step), never inside a step. Between jobs a worker spins for about a millisecond, so the next
 * kernel starts at once, then sleeps on a condition variable. A job is run by the caller and
 * the workers together; the call returns when all of it is done. A kernel called from inside a
 * job (a gemm inside an attention head) runs on the calling thread alone. */
#ifndef TT_CPU_POOL_H
#define TT_CPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_POOL_MAX 64

/* Runs items [begin, end) on pool thread `tid` (0 = the caller, < tt_pool_threads()). */
typedef void (*tt_pool_fn)(void *ctx, int64_t begin, int64_t end, int tid);

/* Starts n - 1 workers (n <= 0: one per core; at most TT_POOL_MAX); stops the old ones first.
 * Not thread-safe: call it from the main thread while no job runs. */
void tt_pool_start(int n);
/* Joins the workers; the pool then runs everything on the caller. Also at exit. */
void tt_pool_stop(void);
/* Threads a job uses, the caller included (1 before tt_pool_start). */
int tt_pool_threads(void);
/* Whether the calling thread is running a job's items (so a kernel it calls runs inline). */
bool tt_pool_in_job(void);

/* fn over [0, n) in contiguous ranges (up to 4 per thread, handed out as threads come free).
 * Range boundaries are multiples of `align` (so a kernel may rely on, e.g., 4-element Philox
 * blocks starting a range); ranges have at least `grain` items, so small n runs on the caller
 * alone, and grain = n / threads gives exactly one range per thread. */
void tt_pool_for(int64_t n, int64_t align, int64_t grain, tt_pool_fn fn, void *ctx);
/* fn over [0, n) one item at a time, handed out dynamically: for items of uneven cost, or
 * more items than threads (attention heads). */
void tt_pool_each(int64_t n, tt_pool_fn fn, void *ctx);

/* Deterministic sums: partial sums over fixed blocks of `block` items, added in block order,
 * so a result does not depend on the thread count. fn returns the sum over [begin, end). */
typedef double (*tt_pool_sum_fn)(void *ctx, int64_t begin, int64_t end);
double tt_pool_sum(int64_t n, int64_t block, tt_pool_sum_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
