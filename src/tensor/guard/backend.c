/* guard/backend.c: the guard device, for the tests. It runs the CPU's kernels, but its memory
 * is mmap'ed and kept PROT_NONE except while one of its own table slots runs, so a host read
 * or write of it from anywhere else (a memcpy, a dereference, an fwrite of a device pointer
 * above src/tensor) dies with SIGSEGV at the faulting line instead of passing unnoticed, as it
 * would on the CPU and would not on a GPU. Every slot opens the memory, calls the CPU table's
 * slot, and closes it again (the pool's threads work inside that window): two mprotect calls
 * per kernel, so it is slower than the CPU; the results are the CPU's bit for bit. */
/* MAP_ANONYMOUS is not POSIX 2008 */
#define _DEFAULT_SOURCE
#include "tensor/call_log.h"
#include "tensor/cpu/cpu.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* All guard memory is carved out of one reservation, so opening and closing it is one
 * mprotect of the part in use (the extent), not one per allocation; transparent huge pages
 * (madvise) keep that call cheap: a few page-table entries per 2 MiB instead of 512. The
 * reservation is MAP_NORESERVE and PROT_NONE: it costs address space, not memory. Blocks
 * (page-aligned, first fit, sorted by offset) are few: parameters, gradients, moments, the
 * step arena, the gradient heap, position tables; they are made and freed outside steps. */
#define RESERVE ((size_t)64 << 30)
#define HUGE_PAGE ((size_t)2 << 20)
#define MAX_BLOCKS 256

typedef struct block {
    size_t off, len;
} block;

static char *base;
static size_t extent; /* bytes from base that are toggled: the highest block end, rounded */
static block blocks[MAX_BLOCKS];
static int n_blocks, depth;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool in_step;    /* between step_begin and step_end (the step rules, below) */
static bool replayable; /* step_setup's replay: steps that may be replayed */
static void step_rule(bool ok, const char *what);

static void protect(int prot)
{
    if (extent)
        TT_ASSERT_MSG(mprotect(base, extent, prot) == 0,
                      "guard device: mprotect of %zu bytes failed", extent);
}

/* Nested calls (none today) keep the memory open until the outermost one closes it. */
static void guard_open(void)
{
    pthread_mutex_lock(&lock);
    if (depth++ == 0) protect(PROT_READ | PROT_WRITE);
    pthread_mutex_unlock(&lock);
}

static void guard_close(void)
{
    pthread_mutex_lock(&lock);
    if (--depth == 0) protect(PROT_NONE);
    pthread_mutex_unlock(&lock);
}

/* ---- the replay check ----------------------------------------------------------------------
 * A CUDA run captures its second training step as a graph and replays it for every later step
 * (cuda/backend.cu): right only if every later step makes the same calls on the same device
 * memory with the same sizes and constants, only the batch's bytes, the dropout cursor and the
 * optimizer's scalars changing. The guard device asserts that on the CPU: inside steps that may
 * be replayed, each call is hashed (the slot, its device pointers as offsets into the
 * reservation, its sizes and constants; host pointers (the caller's descriptors) by what they
 * hold, never their address; a cursor by its stream, not its counter; the optimizer's scalars
 * not at all) and every step from the third on must repeat the second's hashes. */
static uint64_t call_hash;
static tt_call_log calls;  /* the second step's (call_log.h) */
static int64_t step_no;    /* steps begun since step_setup */

static void fold_i64(int64_t v) { call_hash = tt_hash_bytes(call_hash, &v, sizeof v); }
static void fold_real(double v) { call_hash = tt_hash_bytes(call_hash, &v, sizeof v); }

/* guard memory: its offset (+1); host memory and NULL: 0 */
static void fold_ptr(const void *p)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
    fold_i64(p && base && a >= b && a - b < RESERVE ? (int64_t)(a - b) + 1 : 0);
}

static void fold_rng(tt_rng r) { call_hash = tt_hash_rng(call_hash, r); }
static void fold_desc(const tt_attn_desc *a) { call_hash = tt_hash_attn_desc(call_hash, a); }
static void fold_gemm(const tt_gemm_op *g) { call_hash = tt_hash_gemm_op(call_hash, g); }
static void fold_adamw(const tt_adamw_scalars *s) { (void)s; } /* they vary */
static void fold_sgd(const tt_sgd_scalars *s) { call_hash = tt_hash_sgd(call_hash, s); }

#define FOLD(x)                                                                                \
    _Generic((x),                                                                              \
        tt_rng: fold_rng,                                                                      \
        const tt_attn_desc *: fold_desc,                                                       \
        const tt_gemm_op *: fold_gemm,                                                         \
        const tt_adamw_scalars *: fold_adamw,                                                  \
        const tt_sgd_scalars *: fold_sgd,                                                      \
        float: fold_real,                                                                      \
        double: fold_real,                                                                     \
        bool: fold_i64,                                                                        \
        int: fold_i64,                                                                         \
        long: fold_i64,                                                                        \
        unsigned long: fold_i64,                                                               \
        default: fold_ptr)(x)

/* FOLD each of up to 17 arguments */
#define F1(a) FOLD(a)
#define F2(a, ...) FOLD(a), F1(__VA_ARGS__)
#define F3(a, ...) FOLD(a), F2(__VA_ARGS__)
#define F4(a, ...) FOLD(a), F3(__VA_ARGS__)
#define F5(a, ...) FOLD(a), F4(__VA_ARGS__)
#define F6(a, ...) FOLD(a), F5(__VA_ARGS__)
#define F7(a, ...) FOLD(a), F6(__VA_ARGS__)
#define F8(a, ...) FOLD(a), F7(__VA_ARGS__)
#define F9(a, ...) FOLD(a), F8(__VA_ARGS__)
#define F10(a, ...) FOLD(a), F9(__VA_ARGS__)
#define F11(a, ...) FOLD(a), F10(__VA_ARGS__)
#define F12(a, ...) FOLD(a), F11(__VA_ARGS__)
#define F13(a, ...) FOLD(a), F12(__VA_ARGS__)
#define F14(a, ...) FOLD(a), F13(__VA_ARGS__)
#define F15(a, ...) FOLD(a), F14(__VA_ARGS__)
#define F16(a, ...) FOLD(a), F15(__VA_ARGS__)
#define F17(a, ...) FOLD(a), F16(__VA_ARGS__)
#define NARGS(...) NARGS_(__VA_ARGS__, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, n, ...) n
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

static void note_call(const char *slot);

/* the call's hash, noted inside a step that may be replayed */
#define NOTE(slot, ...)                                                                        \
    do {                                                                                       \
        if (!in_step || !replayable) break;                                                    \
        call_hash = tt_hash_bytes(TT_HASH_START, slot, strlen(slot));                          \
        CAT(F, NARGS(__VA_ARGS__))(__VA_ARGS__);                                               \
        note_call(slot);                                                                       \
    } while (0)

/* The CPU table's slot `name` on the arguments, with the memory open, and the call noted for
 * the replay check (below). */
#define GUARDED(name, ...)                                                                     \
    do {                                                                                       \
        NOTE(#name, __VA_ARGS__);                                                              \
        guard_open();                                                                          \
        tt_cpu_backend.name(__VA_ARGS__);                                                      \
        guard_close();                                                                         \
    } while (0)

static int guard_available(char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return 0;
}

/* host pages behind mprotect: no memory of its own */
static int guard_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    return -1;
}

static void set_extent(void)
{
    size_t end = n_blocks ? blocks[n_blocks - 1].off + blocks[n_blocks - 1].len : 0;
    end = (end + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    /* inside an open window (none today) a grown extent must be usable like the rest */
    if (depth && end > extent)
        TT_ASSERT(mprotect(base + extent, end - extent, PROT_READ | PROT_WRITE) == 0);
    extent = end;
}

static void *guard_alloc(size_t bytes)
{
    step_rule(!in_step, "an allocation");
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (bytes + page - 1) / page * page;
    if (!len) len = page;
    pthread_mutex_lock(&lock);
    if (!base) {
        void *p = mmap(NULL, RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        TT_ASSERT_MSG(p != MAP_FAILED, "guard device: cannot reserve %zu bytes of address space",
                      RESERVE);
        base = p;
        madvise(base, RESERVE, MADV_HUGEPAGE); /* a hint: without it, only slower */
    }
    TT_ASSERT_MSG(n_blocks < MAX_BLOCKS, "guard device: more than %d live allocations",
                  MAX_BLOCKS);
    /* the first gap that fits */
    size_t off = 0;
    int at = 0;
    while (at < n_blocks && blocks[at].off - off < len) {
        off = blocks[at].off + blocks[at].len;
        at++;
    }
    TT_ASSERT_MSG(off + len <= RESERVE, "out of memory: could not allocate %zu bytes on the "
                  "guard device (%zu reserved)", bytes, RESERVE);
    for (int k = n_blocks; k > at; k--) blocks[k] = blocks[k - 1];
    blocks[at] = (block){.off = off, .len = len};
    n_blocks++;
    set_extent();
    pthread_mutex_unlock(&lock);
    return base + off;
}

static void guard_free(void *p)
{
    step_rule(!in_step, "a free");
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < n_blocks && base + blocks[i].off != (char *)p) i++;
    TT_ASSERT_MSG(i < n_blocks, "guard device: free of %p, which it did not allocate", p);
    /* give the pages back; the range stays reserved (and PROT_NONE outside calls) */
    TT_ASSERT(madvise(p, blocks[i].len, MADV_DONTNEED) == 0);
    for (int k = i; k + 1 < n_blocks; k++) blocks[k] = blocks[k + 1];
    n_blocks--;
    set_extent();
    pthread_mutex_unlock(&lock);
}

static void guard_set_threads(int n) { tt_cpu_set_threads(n); }
static void guard_set_matmul_precision(bool high) { tt_cpu_backend.set_matmul_precision(high); }
static int guard_get_threads(void) { return tt_cpu_get_threads(); }

/* sizes only: no memory is touched */
static size_t guard_attention_scratch(const tt_attn_desc *a, bool backward)
{
    return tt_cpu_attention_scratch(a, backward);
}

static double guard_sum_squares(const real *x, int64_t n)
{
    step_rule(!in_step, "a host read (sum_squares)");
    guard_open();
    double s = tt_cpu_backend.sum_squares(x, n);
    guard_close();
    return s;
}

static void g_zero(void *p, size_t bytes)
{
    GUARDED(zero, p, bytes);
}

static void g_copy(void *dst, const void *src, size_t bytes)
{
    GUARDED(copy, dst, src, bytes);
}

/* A training step's rules (backend.h's step bracket), asserted here so that the CPU test suite
 * proves what a replayed step (a CUDA graph) needs: no host read and no allocation between
 * step_begin and step_end, and no more bytes copied in than step_setup announced. Only for
 * steps that may be replayed (step_setup's replay: a data-parallel step reads its loss). */
static size_t staging, staged;

static void step_rule(bool ok, const char *what)
{
    TT_ASSERT_MSG(ok || !replayable, "guard device: %s inside a training step (between "
                  "step_begin and step_end), which a device that replays its steps cannot do",
                  what);
}

static void guard_step_setup(size_t staging_bytes, bool replay)
{
    TT_ASSERT_MSG(!in_step, "guard device: step_setup inside a training step");
    staging = staging_bytes;
    replayable = replay && staging_bytes > 0;
    step_no = 0;
    calls.n = calls.n_kept = 0;
    if (replayable && !calls.kept) /* kept for the process's later runs */
        calls.kept = tt_xmalloc(TT_CALL_LOG_MAX * sizeof *calls.kept);
}

static void guard_step_begin(const tt_rng *r)
{
    (void)r;
    TT_ASSERT_MSG(!in_step, "guard device: step_begin inside a training step");
    in_step = true, staged = 0;
    step_no++;
}

static void note_call(const char *slot)
{
    if (step_no < 2) return; /* the first step may differ: only the second is recorded */
    TT_ASSERT_MSG(tt_call_log_note(&calls, call_hash, step_no == 2), "guard device: call %lld "
                  "(%s) of training step %lld differs from the second step's (other device "
                  "memory, sizes or constants): a CUDA graph captured at the second step could "
                  "not replay it", (long long)calls.n - 1, slot, (long long)step_no);
}

static void guard_step_end(void)
{
    TT_ASSERT_MSG(in_step, "guard device: step_end without step_begin");
    in_step = false;
    if (!replayable || step_no < 2) return;
    const int64_t made = calls.n;
    TT_ASSERT_MSG(tt_call_log_end(&calls, step_no == 2), "guard device: training step %lld "
                  "made %lld calls, the second %lld: a CUDA graph could not replay it",
                  (long long)step_no, (long long)made, (long long)calls.n_kept);
}

static void g_to_host(void *dst, const void *src, size_t bytes)
{
    step_rule(!in_step, "a host read (to_host)");
    GUARDED(to_host, dst, src, bytes);
}

static void g_from_host(void *dst, const void *src, size_t bytes)
{
    if (in_step && replayable) {
        staged += bytes;
        TT_ASSERT_MSG(staged <= staging, "guard device: a training step copied in %zu bytes, "
                      "more than the %zu its step_setup announced", staged, staging);
    }
    GUARDED(from_host, dst, src, bytes);
}

static void g_fill(real *x, real value, int64_t n)
{
    GUARDED(fill, x, value, n);
}

/* The kernels (tensor/kernels.h): g_NAME calls the CPU's slot NAME GUARDED, nothing else. The
 * slots with rules of their own are written out above: the memory's (alloc and free: not in a
 * step; to_host: no host read in a step; from_host: no more than step_setup announced),
 * sum_squares (a host read) and attention_scratch (sizes, no memory). */
#define ARGS(...) __VA_ARGS__
#define GUARD_KERNEL(name, params, args)                                                       \
    static void g_##name params                                                                \
    {                                                                                          \
        GUARDED(name, ARGS args);                                                              \
    }
TT_KERNELS(GUARD_KERNEL)

/* .NAME = g_NAME for each kernel; clang-format is off over the table, which it would fold onto
 * one line around the list */
#define GUARD_SLOT(name, params, args) .name = g_##name,

/* clang-format off */
const tt_backend tt_guard_backend = {
    .name = "guard",
    .available = guard_available,
    .mem_info = guard_mem_info,
    .alloc = guard_alloc,
    .free = guard_free,
    .set_threads = guard_set_threads,
    .get_threads = guard_get_threads,
    .set_matmul_precision = guard_set_matmul_precision,
    .attention_scratch = guard_attention_scratch,
    .sum_squares = guard_sum_squares,
    .zero = g_zero,
    .copy = g_copy,
    .to_host = g_to_host,
    .from_host = g_from_host,
    .fill = g_fill,
    TT_KERNELS(GUARD_SLOT)
    .step_setup = guard_step_setup,
    .step_begin = guard_step_begin,
    .step_end = guard_step_end,
};
/* clang-format on */
