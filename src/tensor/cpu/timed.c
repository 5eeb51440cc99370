/* cpu/timed.c: the CPU's table with a clock around every kernel slot, for `bench_step
 * --kernel-times` (backend.h): which kernels a step's wall time goes to, each call timed on
 * the caller from entry to return, so a kernel the pool runs on every thread counts its wall
 * time once, waits included. Two clock reads a call (the vDSO's, tens of nanoseconds) against
 * kernels of microseconds and more; the results are the CPU's, bit for bit. The totals are
 * plain counters: the slots are called from the thread that runs the step (the pool's threads
 * call the CPU's kernels directly, never through a table). */
#include "tensor/cpu/cpu.h"

#include <time.h>

#define ARGS(...) __VA_ARGS__

/* The timed slots: the memory ones a step calls, then every kernel of tensor/kernels.h */
#define TIMED_SLOT_ID(name, params, args) SLOT_##name,
enum { SLOT_zero, SLOT_copy, SLOT_fill, TT_KERNELS(TIMED_SLOT_ID) N_SLOTS };
#define TIMED_SLOT_NAME(name, params, args) #name,
static const char *const slot_name[N_SLOTS] = {"zero", "copy", "fill",
                                               TT_KERNELS(TIMED_SLOT_NAME)};

static struct {
    int64_t calls;
    double seconds;
} totals[N_SLOTS];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void note(int slot, double t0)
{
    totals[slot].calls++;
    totals[slot].seconds += now_s() - t0;
}

#define TIMED(slot, ...)                                                                       \
    do {                                                                                       \
        double t0_ = now_s();                                                                  \
        tt_cpu_backend.slot(__VA_ARGS__);                                                      \
        note(SLOT_##slot, t0_);                                                                \
    } while (0)

static void t_zero(void *p, size_t bytes) { TIMED(zero, p, bytes); }
static void t_copy(void *dst, const void *src, size_t bytes) { TIMED(copy, dst, src, bytes); }
static void t_fill(real *x, real value, int64_t n) { TIMED(fill, x, value, n); }

/* t_NAME: the CPU's slot NAME, timed */
#define TIMED_KERNEL(name, params, args)                                                       \
    static void t_##name params                                                                \
    {                                                                                          \
        TIMED(name, ARGS args);                                                                \
    }
TT_KERNELS(TIMED_KERNEL)

static tt_backend timed; /* the CPU's table, its kernel slots replaced; filled once */
static bool timing;

#define TIMED_TABLE_SLOT(name, params, args) timed.name = t_##name;

void tt_cpu_time_kernels(void)
{
    if (timing) return;
    timed = tt_cpu_backend;
    timed.zero = t_zero;
    timed.copy = t_copy;
    timed.fill = t_fill;
    TT_KERNELS(TIMED_TABLE_SLOT)
    timing = true;
}

const tt_backend *tt_cpu_table(void) { return timing ? &timed : &tt_cpu_backend; }

int tt_kernel_times(tt_kernel_time *out, int most, bool reset)
{
    int n = 0;
    for (int s = 0; s < N_SLOTS; s++) {
        if (totals[s].calls && n < most)
            out[n++] = (tt_kernel_time){slot_name[s], totals[s].calls, totals[s].seconds};
        if (reset) totals[s].calls = 0, totals[s].seconds = 0;
    }
    return n;
}
