/* pool.c: the CPU thread pool (see pool.h).
 *
 * A job is cut into chunks. The caller publishes it by bumping `gen`, and then every thread,
 * the caller included, claims chunks until none is left; the caller returns once every chunk
 * is done. A claim is a compare-and-swap on `claim` = (job id << 32 | next chunk), so a worker
 * that wakes late, after its job is over, finds another id and claims nothing. The caller
 * never waits for a worker that has not claimed a chunk: when another process has a worker's
 * core, the caller does the work itself instead of waiting for the scheduler.
 *
 * Sleeping uses the Dekker pattern on two sequentially consistent atomics: a worker counts
 * itself in `sleepers` before it looks at `gen` a last time under the mutex, and the caller
 * bumps `gen` before it looks at `sleepers`, so at least one of them sees the other and no
 * wake-up is lost. */
#include "tensor/cpu/pool.h"

#include "tensor/common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define SPIN_NS 1000000  /* a worker spins this long for the next job before it sleeps */
#define CHUNKS_PER_THREAD 4 /* tt_pool_for: more chunks than threads, for balance */
#define SUM_BLOCKS 1024  /* most partial sums of tt_pool_sum */

typedef struct job {
    tt_pool_fn fn;
    void *ctx;
    int64_t n, align;
    int64_t chunks; /* chunk c covers [c * n / chunks, (c + 1) * n / chunks) in align units */
} job;

static struct {
    int n; /* threads, the caller included */
    pthread_t th[TT_POOL_MAX];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;        /* id of the latest job */
    atomic_llong done;      /* chunks of the current job finished */
    atomic_llong chunks;    /* chunks of the current job (P.j.chunks, for lock-free reads) */
    atomic_int sleepers;
    atomic_bool stop;
    job j;
    /* own[t]: job id << 32 | how many of thread t's own chunks are claimed, each on a line of
     * its own, so that claiming one's own chunks touches no line another thread writes */
    struct {
        _Alignas(64) atomic_ullong claim;
    } own[TT_POOL_MAX];
} P = {.n = 1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local bool in_job; /* nested kernels run on their own thread */

int tt_pool_threads(void) { return P.n; }

bool tt_pool_in_job(void) { return in_job; }

static void run_chunk(const job *j, int64_t c, int tid)
{
    int64_t units = (j->n + j->align - 1) / j->align;
    int64_t b = units * c / j->chunks * j->align, e = units * (c + 1) / j->chunks * j->align;
    if (e > j->n) e = j->n;
    if (b < e) j->fn(j->ctx, b, e, tid);
}

/* Claims and runs chunks of job `id` until none is left: thread tid's own block of chunks
 * first, then what is left of the others' (in turn from tid + 1). Thread t owns chunks
 * [t * chunks / n, (t + 1) * chunks / n): the same rows for every job of one shape, so that a
 * row-wise kernel finds its rows in the cache of the core that wrote them in the kernel before;
 * the blocks of a thread another process holds are taken by the others. */
static void work(unsigned id, int tid)
{
    in_job = true;
    int64_t ran = 0;
    for (int s = 0; s < P.n; s++) {
        const int t = (tid + s) % P.n;
        for (;;) {
            unsigned long long c = atomic_load(&P.own[t].claim);
            const int64_t chunks = atomic_load(&P.chunks);
            const int64_t lo = chunks * t / P.n, hi = chunks * (t + 1) / P.n;
            if ((unsigned)(c >> 32) != id || lo + (int64_t)(c & 0xffffffffu) >= hi) break;
            if (!atomic_compare_exchange_weak(&P.own[t].claim, &c, c + 1)) continue;
            /* the job cannot finish, nor P.j change, before this chunk is done */
            run_chunk(&P.j, lo + (int64_t)(c & 0xffffffffu), tid);
            ran++;
        }
    }
    if (ran) atomic_fetch_add(&P.done, ran);
    in_job = false;
}

static int64_t elapsed_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 + (t.tv_nsec - t0->tv_nsec);
}

static unsigned gen0; /* gen when the workers were started */

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    unsigned seen = gen0; /* not a fresh load: a job may be published before this line runs */
    for (;;) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned spins = 1; atomic_load(&P.gen) == seen; spins++) {
            CPU_RELAX();
            if (spins % 256 || elapsed_ns(&t0) < SPIN_NS) continue;
            pthread_mutex_lock(&P.mu);
            atomic_fetch_add(&P.sleepers, 1);
            while (atomic_load(&P.gen) == seen) pthread_cond_wait(&P.cv, &P.mu);
            atomic_fetch_sub(&P.sleepers, 1);
            pthread_mutex_unlock(&P.mu);
        }
        seen = atomic_load(&P.gen);
        if (atomic_load(&P.stop)) return NULL;
        work(seen, t);
    }
}

/* The order of the stores matters. A worker still in work() for the previous job may load a
 * claim = (old id, the count of a finished block) just before this: while P.chunks still holds
 * the old count, that index fails the bound and the worker moves on; once the claim holds the
 * new id, its compare-and-swap on the old value fails. Storing chunks before the claims opened
 * a window in which an old claim passed the new, larger bound, the CAS succeeded, and the worker
 * ran a chunk of the new job (P.j) a second time and counted it in done (seen under load: a
 * doubled "+=", a caller that returned early; tests/test_threads.c's stress case reproduced it). */
static unsigned publish(void)
{
    unsigned id = atomic_load(&P.gen) + 1;
    atomic_store(&P.done, 0);
    for (int t = 0; t < P.n; t++) atomic_store(&P.own[t].claim, (unsigned long long)id << 32);
    atomic_store(&P.chunks, P.j.chunks);
    atomic_store(&P.gen, id);
    if (atomic_load(&P.sleepers) > 0) {
        pthread_mutex_lock(&P.mu);
        pthread_cond_broadcast(&P.cv);
        pthread_mutex_unlock(&P.mu);
    }
    return id;
}

static void run_job(const job *j)
{
    P.j = *j;
    unsigned id = publish();
    work(id, 0);
    /* only chunks a worker has claimed are left: spin briefly, then give the core away */
    for (unsigned spins = 0; atomic_load(&P.done) < j->chunks; spins++) {
        if (spins < 4096) CPU_RELAX();
        else sched_yield();
    }
}

void tt_pool_stop(void)
{
    if (P.n <= 1) return;
    atomic_store(&P.stop, true);
    P.j.chunks = 0;
    publish();
    for (int t = 1; t < P.n; t++) pthread_join(P.th[t], NULL);
    atomic_store(&P.stop, false);
    P.n = 1;
}

static void stop_at_exit(void) { tt_pool_stop(); }

/* A forked child has only the thread that forked (Check runs each test in one): it starts
 * with no workers and fresh locks, and may start its own pool. */
static void child_after_fork(void)
{
    P.n = 1;
    atomic_store(&P.sleepers, 0);
    atomic_store(&P.stop, false);
    pthread_mutex_init(&P.mu, NULL);
    pthread_cond_init(&P.cv, NULL);
    in_job = false;
}

void tt_pool_start(int n)
{
    static bool registered;
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    if (n > TT_POOL_MAX) n = TT_POOL_MAX;
    if (n == P.n) return;
    tt_pool_stop();
    gen0 = atomic_load(&P.gen);
    for (int t = 1; t < n; t++) {
        int rc = pthread_create(&P.th[t], NULL, worker, (void *)(intptr_t)t);
        TT_ASSERT_MSG(rc == 0, "could not start pool thread %d of %d (error %d)", t, n, rc);
        P.n = t + 1;
    }
    if (!registered)
        registered = atexit(stop_at_exit) == 0 && pthread_atfork(NULL, NULL, child_after_fork) == 0;
}

/* fn over [0, n) on the caller, as a job: kernels it calls run inline too, as they would on a
 * worker, so a nested gemm is one call at any thread count */
static void run_inline(int64_t n, tt_pool_fn fn, void *ctx, bool each)
{
    bool was = in_job;
    in_job = true;
    if (each)
        for (int64_t i = 0; i < n; i++) fn(ctx, i, i + 1, 0);
    else
        fn(ctx, 0, n, 0);
    in_job = was;
}

void tt_pool_for(int64_t n, int64_t align, int64_t grain, tt_pool_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (align < 1) align = 1;
    if (grain < align) grain = align;
    int64_t chunks = n / grain, most = (int64_t)P.n * CHUNKS_PER_THREAD;
    if (chunks > most) chunks = most;
    if (chunks <= 1 || P.n == 1 || in_job) {
        run_inline(n, fn, ctx, false);
        return;
    }
    run_job(&(job){.fn = fn, .ctx = ctx, .n = n, .align = align, .chunks = chunks});
}

void tt_pool_each(int64_t n, tt_pool_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (n == 1 || P.n == 1 || in_job) {
        run_inline(n, fn, ctx, true);
        return;
    }
    TT_ASSERT_MSG(n <= 0xffffffffLL, "tt_pool_each: %lld items, at most 2^32 - 1", (long long)n);
    run_job(&(job){.fn = fn, .ctx = ctx, .n = n, .align = 1, .chunks = n});
}

typedef struct sum_job {
    tt_pool_sum_fn fn;
    void *ctx;
    int64_t n, block;
    double *part;
} sum_job;

static void sum_blocks(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    sum_job *s = ctx;
    for (int64_t b = begin; b < end; b++) {
        int64_t lo = b * s->block, hi = lo + s->block < s->n ? lo + s->block : s->n;
        s->part[b] = s->fn(s->ctx, lo, hi);
    }
}

double tt_pool_sum(int64_t n, int64_t block, tt_pool_sum_fn fn, void *ctx)
{
    if (n <= 0) return 0;
    if (block < 1) block = 1;
    if ((n + block - 1) / block > SUM_BLOCKS) block = (n + SUM_BLOCKS - 1) / SUM_BLOCKS;
    double part[SUM_BLOCKS];
    sum_job s = {.fn = fn, .ctx = ctx, .n = n, .block = block, .part = part};
    int64_t blocks = (n + block - 1) / block;
    tt_pool_for(blocks, 1, 1, sum_blocks, &s);
    double total = 0;
    for (int64_t b = 0; b < blocks; b++) total += part[b];
    return total;
}
