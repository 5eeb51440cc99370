/* cpu/backend.c: host memory and the CPU kernel table (its kernels tt_cpu_NAME, one for each
 * entry of tensor/kernels.h). */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"

#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(size_t bytes)
{
    /* 64-byte alignment: cache lines, and AVX-512 loads in OpenBLAS. */
    size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    TT_ASSERT_MSG(p, "out of memory: could not allocate %zu bytes on the CPU", bytes);
    return p;
}

static void cpu_free(void *p) { free(p); }

static void zero_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    memset((char *)ctx + lo, 0, (size_t)(hi - lo));
}

/* large buffers (the parameters' gradients) split over the pool */
static void cpu_zero(void *p, size_t bytes)
{
    tt_pool_for((int64_t)bytes, 64, 256 << 10, zero_range, p);
}
typedef struct copy_args {
    char *dst;
    const char *src;
} copy_args;

static void copy_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const copy_args *c = ctx;
    memcpy(c->dst + lo, c->src + lo, (size_t)(hi - lo));
}

/* large copies (a residual's gradient) split over the pool as zero is, or one thread would copy
 * while the others wait; overlapping buffers (memmove's case) in one piece */
static void cpu_copy(void *dst, const void *src, size_t bytes)
{
    const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (d < s + bytes && s < d + bytes) {
        memmove(dst, src, bytes);
        return;
    }
    tt_pool_for((int64_t)bytes, 64, 256 << 10, copy_range, &(copy_args){.dst = dst, .src = src});
}

typedef struct fill_args {
    real *x;
    real value;
} fill_args;

static void fill_range(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const fill_args *f = ctx;
    for (int64_t i = lo; i < hi; i++) f->x[i] = f->value;
}

static void cpu_fill(real *x, real value, int64_t n)
{
    tt_pool_for(n, TT_CPU_ALIGN, TT_CPU_GRAIN, fill_range, &(fill_args){.x = x, .value = value});
}

/* OpenBLAS's sgemm has no lower-precision mode: float32 throughout */
static void cpu_set_matmul_precision(bool high) { (void)high; }

static int cpu_available(char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return 0;
}

/* the CPU's memory is the host's */
static int cpu_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    return -1;
}

/* The CPU runs every step as it comes: nothing to stage, record or replay. */
static void cpu_step_setup(size_t staging_bytes, bool replay) { (void)staging_bytes, (void)replay; }
static void cpu_step_begin(const tt_rng *r) { (void)r; }
static void cpu_step_end(void) {}

/* .NAME = tt_cpu_NAME for each kernel of tensor/kernels.h; clang-format is off over the table,
 * which it would fold onto one line around the list */
#define CPU_KERNEL(name, params, args) .name = tt_cpu_##name,

/* clang-format off */
const tt_backend tt_cpu_backend = {
    .name = "cpu",
    .available = cpu_available,
    .mem_info = cpu_mem_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .to_host = cpu_copy,
    .from_host = cpu_copy,
    .fill = cpu_fill,
    .set_threads = tt_cpu_set_threads,
    .get_threads = tt_cpu_get_threads,
    .set_matmul_precision = cpu_set_matmul_precision,
    TT_KERNELS(CPU_KERNEL)
    .attention_scratch = tt_cpu_attention_scratch,
    .sum_squares = tt_cpu_sum_squares,
    .step_setup = cpu_step_setup,
    .step_begin = cpu_step_begin,
    .step_end = cpu_step_end,
};
/* clang-format on */
