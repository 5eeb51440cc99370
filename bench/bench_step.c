/* bench_step.c: the time and memory of one full training step of a config, exactly as ./train
 * runs it: tt_run_step (src/train/run/loop.c: batch fill, forward, zero grad, backward,
 * clipping, optimizer step at the schedule's rate, then the loss and the norm read to the
 * host, which on a GPU waits for the step's end) on the run bench_run.c builds, a
 * config file with its data or a named standard config (random tokens), cycling through the
 * epoch's batches (reshuffled per epoch, as ./train). One config per process, so that peak RSS
 * (getrusage ru_maxrss) is that config's, and on a device with its own memory (CUDA) the
 * device memory the run took: bench/run_step_bench.sh runs the rows and PyTorch on the CPU,
 * bench/gpu_bench.sh on a GPU. Prints the config's spec as one JSON line (bench_torch.py's
 * input), a few readable lines, then one JSON line of results. `--sgemm-peak` instead measures
 * the machine's cblas_sgemm 2048^3 GFLOP/s (best of 3) at the same thread count; `--gemm-peak`
 * the device's gemm through the backend table (cuBLAS on CUDA) at the config's device and
 * matmul_precision, in TFLOP/s; `--fma-peak` the FMA limit of the threads' cores (cores x
 * FMA units x vector width x clock, each measured) beside the FMA throughput they reach. */
#include "bench_run.h"
#include "bench_util.h"
#include "train/run/blas_env.h"
#include "train/run/dist.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifdef TT_DOUBLE
#error "bench_step times the float32 training step: build it against the float32 library"
#endif

/* Deterministic xorshift64* words: the sgemm inputs. */
static uint64_t next_u64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

/* Best of 3 cblas_sgemm 2048x2048x2048 at the current OpenBLAS thread count, in GFLOP/s. */
static double sgemm_peak(void)
{
    const int n = 2048;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *A = tt_xmalloc(bytes), *B = tt_xmalloc(bytes), *C = tt_xmalloc(bytes);
    uint64_t s = 42;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        A[i] = (float)(next_u64(&s) >> 40) / 16777216.0f - 0.5f;
        B[i] = (float)(next_u64(&s) >> 40) / 16777216.0f - 0.5f;
    }
    double best = 0;
    for (int r = 0; r < 4; r++) { /* the first call warms the thread pool and the pages */
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f,
                    C, n);
        double gf = 2.0 * n * n * n / (now_s() - t0) * 1e-9;
        if (r > 0 && gf > best) best = gf;
    }
    free(A);
    free(B);
    free(C);
    return best;
}

/* Best of 3 runs of GEMM_REPS gemms C = A B, n x n x n, through the device's table, in
 * TFLOP/s: the device's peak for the step's gemms as its BLAS reaches it (cuBLAS on CUDA, at
 * the precision set on the table). Random inputs (a GPU runs faster and hotter on zeros). A
 * run starts and ends with one element of C copied to the host: to_host waits for the device,
 * so the time is the gemms' whole. The first run is a warm-up (cuBLAS's heuristics, clocks). */
enum { GEMM_REPS = 5 };
static double gemm_peak(const tt_backend *be, int n)
{
    const size_t count = (size_t)n * n, bytes = count * sizeof(real);
    real *host = tt_xmalloc(bytes), *A = be->alloc(bytes), *B = be->alloc(bytes);
    real *C = be->alloc(bytes), one;
    uint64_t s = 42;
    for (int m = 0; m < 2; m++) {
        for (size_t i = 0; i < count; i++)
            host[i] = (real)(next_u64(&s) >> 40) / 16777216.0f - 0.5f;
        be->from_host(m ? B : A, host, bytes);
    }
    free(host);
    double best = 0;
    for (int r = 0; r < 4; r++) {
        be->to_host(&one, C, sizeof one);
        double t0 = now_s();
        for (int k = 0; k < GEMM_REPS; k++)
            be->gemm(false, false, n, n, n, 1, A, n, 0, B, n, 0, 0, C, n, 0, 1);
        be->to_host(&one, C, sizeof one);
        double tf = 2.0 * n * n * n * GEMM_REPS / (now_s() - t0) * 1e-12;
        if (r > 0 && tf > best) best = tf;
    }
    be->free(A);
    be->free(B);
    be->free(C);
    return best;
}

/* A number rounded to 4 decimals, for the JSON line. */
static void add_num(cJSON *o, const char *key, double v)
{
    cJSON_AddNumberToObject(o, key, round(v * 1e4) / 1e4);
}

/* --fma-peak: the FMA limit of `cores` cores, cores x FMA units x vector width x clock, from
 * factors measured here rather than read from a data sheet (a VM's /proc/cpuinfo "cpu MHz" is
 * not the clock the core runs at), and the FMA throughput the cores reach beside it. x86-64
 * only. The clock: a chain of dependent integer adds, one cycle each on every x86-64 core, run
 * on all the cores at once (a VM's cores can run at different clocks). The width: the widest
 * FMA the CPU and its OS support (tt_cpu_isa_read: AVX-512F 16 floats, else AVX2 with FMA 8).
 * The units: one thread's FMA flops per cycle / (2 x lanes), rounded. */
enum { MAX_CORES = 256 };
#if defined(__x86_64__) && defined(__GNUC__)
#define FMA_X86 1
#include "tensor/cpu/cpu.h"

#include <immintrin.h>
#include <pthread.h>
#include <unistd.h>

/* 16 dependent adds an iteration, so 16 cycles; the loop's count and branch run beside the
 * chain. Register adds, not `add $1`: a renamer that folds immediate adds (reported of Intel's
 * Golden Cove) runs those faster than one a cycle. */
#define ADD1 "add %[one], %[x]\n\t"
#define ADD4 ADD1 ADD1 ADD1 ADD1
enum { ADDS_PER_ITER = 16 };
static void add_chain(uint64_t iters) /* iters >= 1 */
{
    uint64_t x = 0;
    const uint64_t one = 1;
    __asm__ volatile("1:\n\t" ADD4 ADD4 ADD4 ADD4 "dec %[n]\n\t"
                     "jnz 1b"
                     : [x] "+r"(x), [n] "+r"(iters)
                     : [one] "r"(one)
                     : "cc");
}

/* acc = acc * a + b on independent accumulators: 16 zmm (of 32 registers) or 12 ymm (of 16),
 * more than latency x units (4 x 2 on current cores) FMAs in flight; the unrolled inner loop
 * keeps them in registers (GCC and clang). Each starts at its own value (equal ones could be
 * merged into one); a < 1 keeps them finite and away from subnormals. Their sum is returned,
 * so no FMA is dead code. */
enum { ACC512 = 16, ACC256 = 12 };
__attribute__((target("avx512f"))) static float fma_loop_512(uint64_t iters)
{
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
    __m512 c[ACC512];
    for (int i = 0; i < ACC512; i++) c[i] = _mm512_set1_ps(0.01f * (float)i);
    for (uint64_t k = 0; k < iters; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < ACC512; i++) c[i] = _mm512_fmadd_ps(c[i], a, b);
    }
    for (int i = 1; i < ACC512; i++) c[0] = _mm512_add_ps(c[0], c[i]);
    return _mm512_reduce_add_ps(c[0]);
}

__attribute__((target("avx2,fma"))) static float fma_loop_256(uint64_t iters)
{
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
    __m256 c[ACC256];
    for (int i = 0; i < ACC256; i++) c[i] = _mm256_set1_ps(0.01f * (float)i);
    for (uint64_t k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < ACC256; i++) c[i] = _mm256_fmadd_ps(c[i], a, b);
    }
    for (int i = 1; i < ACC256; i++) c[0] = _mm256_add_ps(c[0], c[i]);
    float lane[8], sum = 0;
    _mm256_storeu_ps(lane, c[0]);
    for (int i = 0; i < 8; i++) sum += lane[i];
    return sum;
}

/* One core's run: REPS rounds of a ~2 ms add chain then a ~2 ms FMA loop (none at bits 0),
 * keeping each loop's shortest time. Short loops and the best of many are what a shared
 * machine allows: another process takes a core for a few ms at a time, and a run it cut into
 * only looks slower. Back to back, the two loops see the same clock. */
enum { REPS = 50 };
typedef struct core_job {
    pthread_barrier_t *start; /* the cores of a run pass it together */
    int bits;
    uint64_t add_iters, fma_iters;
    double add_s, fma_s; /* out: the shortest time of each loop */
    float sum;
} core_job;

static volatile float fma_sink; /* the FMA loops' sums end here, so none is dead code */

static float fma_loop(int bits, uint64_t iters)
{
    return bits == 512 ? fma_loop_512(iters) : fma_loop_256(iters);
}

static void *core_thread(void *arg)
{
    core_job *j = arg;
    j->add_s = j->fma_s = INFINITY;
    pthread_barrier_wait(j->start);
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        add_chain(j->add_iters);
        double t1 = now_s();
        if (j->bits) j->sum += fma_loop(j->bits, j->fma_iters);
        double t2 = now_s();
        j->add_s = fmin(j->add_s, t1 - t0);
        j->fma_s = fmin(j->fma_s, t2 - t1);
    }
    return NULL;
}

/* `cores` threads at once, each its own core_job (the OS puts busy threads on cores of their
 * own while there are enough). */
static void run_cores(core_job *job, int cores, int bits, uint64_t add_iters,
                      uint64_t fma_iters)
{
    pthread_t tid[MAX_CORES];
    pthread_barrier_t start;
    TT_ASSERT(cores >= 1 && cores <= MAX_CORES);
    int rc = pthread_barrier_init(&start, NULL, (unsigned)cores);
    TT_ASSERT_MSG(rc == 0, "pthread_barrier_init: error %d", rc);
    for (int c = 0; c < cores; c++) {
        job[c] = (core_job){.start = &start, .bits = bits, .add_iters = add_iters,
                            .fma_iters = fma_iters};
        rc = pthread_create(&tid[c], NULL, core_thread, &job[c]);
        TT_ASSERT_MSG(rc == 0, "pthread_create: error %d", rc);
    }
    for (int c = 0; c < cores; c++) {
        pthread_join(tid[c], NULL);
        fma_sink = fma_sink + job[c].sum;
    }
    pthread_barrier_destroy(&start);
}

/* Iterations of the add chain (bits 0) or the FMA loop for about 2 ms on this thread. */
static uint64_t loop_iters(int bits)
{
    uint64_t iters = 256;
    double t;
    for (;;) {
        double t0 = now_s();
        if (bits) fma_sink = fma_sink + fma_loop(bits, iters);
        else add_chain(iters);
        if ((t = now_s() - t0) >= 5e-4) break;
        iters *= 2;
    }
    return (uint64_t)((double)iters * 2e-3 / t) + 1;
}
#endif

/* /proc/cpuinfo's first "model name" ("unknown" without one) into buf. */
static void cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, size, "%s", colon);
        break;
    }
    fclose(f);
}

/* A number, or null where it was not measured. */
static void add_num_or_null(cJSON *o, const char *key, double v, bool have)
{
    if (have) add_num(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static int fma_peak_main(int threads)
{
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    double ghz = 0, gf1 = 0, gfn = 0, flop_cycle = 0, clock[MAX_CORES] = {0};
    int bits = 0, units = 0, cores = threads < MAX_CORES ? threads : MAX_CORES;
    const char *none = "not an x86-64 build: the clock and the FMA units are not measured";
#ifdef FMA_X86
    tt_cpu_isa isa;
    tt_cpu_isa_read(&isa);
    bits = isa.avx512f ? 512 : isa.avx2 && isa.fma ? 256 : 0;
    none = bits ? NULL : "no FMA: neither AVX-512F nor AVX2 with FMA on this CPU and OS";
    long online = sysconf(_SC_NPROCESSORS_ONLN); /* more threads than cores would share them */
    cores = online > 0 && online < cores ? (int)online : cores;
    const uint64_t add_n = loop_iters(0), fma_n = bits ? loop_iters(bits) : 0;
    const double adds = (double)ADDS_PER_ITER * (double)add_n;
    const double flops = 2.0 * (bits / 32) * (bits == 512 ? ACC512 : ACC256) * (double)fma_n;
    static core_job one[1], all[MAX_CORES];
    run_cores(one, 1, bits, add_n, fma_n);
    if (cores > 1) run_cores(all, cores, bits, add_n, fma_n);
    else all[0] = one[0];
    for (int c = 0; c < cores; c++) {
        clock[c] = adds / all[c].add_s * 1e-9;
        ghz += clock[c] / cores;
        if (bits) gfn += flops / all[c].fma_s * 1e-9;
    }
    if (bits) {
        gf1 = flops / one[0].fma_s * 1e-9;
        flop_cycle = gf1 / (adds / one[0].add_s * 1e-9); /* one core, the others idle */
        units = (int)lround(flop_cycle / (2.0 * (bits / 32)));
        units = units < 1 ? 1 : units;
    }
#endif
    const double limit = cores * units * (bits / 32) * 2.0 * ghz;
    if (none) printf("FMA limit: none (%s)", none);
    else
        printf("FMA limit %.1f GFLOP/s = %d core%s x %d FMA unit%s x %d bit x %.2f GHz; "
               "measured %.1f GFLOP/s on %d thread%s", limit, cores, cores > 1 ? "s" : "",
               units, units > 1 ? "s" : "", bits, ghz, gfn, cores, cores > 1 ? "s" : "");
    if (!none && cores > 1) printf(", %.1f on 1", gf1);
    if (!none) printf(" (%.1f flop/cycle)", flop_cycle);
    if (!none && flop_cycle < 1.5 * (bits / 32)) /* 3/4 of one unit's: not register-bound */
        printf("; WARNING: below one FMA unit, an unoptimized build?");
    if (ghz > 0) {
        printf("; clock by core");
        for (int c = 0; c < cores; c++) printf(" %.2f", clock[c]);
        printf(" GHz");
    }
    printf("; CPU %s\n", cpu);
    cJSON *o = cJSON_CreateObject();
    add_num_or_null(o, "fma_limit_gflops", limit, !none);
    add_num_or_null(o, "fma_measured_gflops", gfn, !none);
    add_num_or_null(o, "fma_1thread_gflops", gf1, !none);
    add_num_or_null(o, "clock_ghz", ghz, ghz > 0);
    add_num_or_null(o, "fma_units", units, !none);
    add_num_or_null(o, "vector_bits", bits, !none);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "cores", cores);
    cJSON_AddStringToObject(o, "cpu", cpu);
    if (none) cJSON_AddStringToObject(o, "none", none);
    char *line = cJSON_PrintUnformatted(o);
    printf("%s\n", line);
    free(line);
    cJSON_Delete(o);
    return 0;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --config NAME|FILE.json [--set KEY=VALUE]... [--threads N] [--warmup N]\n"
            "                  [--steps N|auto] [--spec] [--kernel-times]\n"
            "       %s --sgemm-peak [--threads N]\n"
            "       %s --fma-peak [--threads N]\n"
            "       %s --gemm-peak [--config NAME|FILE.json] [--set KEY=VALUE]... [--gemm-n N]\n"
            "  --config      a config file (its data as ./train loads them) or a named config:\n"
            "                %s; one a process (peak RSS is per process)\n"
            "  --set         override one config value, as ./train's --set\n"
            "  --threads     threads (default 2; replaces the config's): the backend's pool,\n"
            "                OpenBLAS's for the sgemm peak, the FMA peak's loops (and cores)\n"
            "  --warmup      untimed steps first (default 5)\n"
            "  --steps       timed steps (default 30, at least 1); auto: at least 30 and about\n"
            "                1 s worth after the warm-up (at most 1000)\n"
            "  --spec        only print the config's spec (one JSON line) and exit\n"
            "  --kernel-times  also print the time of each CPU kernel a timed step calls\n"
            "                (wall time on the step's thread, pool waits included), as a\n"
            "                table and a JSON line; device cpu only\n"
            "  --sgemm-peak  only measure cblas_sgemm 2048^3, best of 3, GFLOP/s\n"
            "  --fma-peak    only measure the FMA limit of N cores, cores x FMA units x vector\n"
            "                width x clock (x86-64), and the FMA GFLOP/s of N threads beside it\n"
            "  --gemm-peak   only measure the device's gemm through the backend table, n^3, best\n"
            "                of 3 runs of %d, TFLOP/s, at the config's (default tiny) device and\n"
            "                matmul_precision: --set device=cuda --set matmul_precision=high\n"
            "  --gemm-n      n for --gemm-peak (default 8192, sized for a GPU)\n"
            "Runs the table and PyTorch: bench/run_step_bench.sh (make bench), on a GPU\n"
            "bench/gpu_bench.sh (make CUDA=1 bench-gpu)\n",
            argv0, argv0, argv0, argv0, BENCH_NAMES, GEMM_REPS);
    return 2;
}

static int sgemm_peak_main(int threads, const char *coretype)
{
    /* OpenBLAS's own threads, not our pool: the machine's peak as OpenBLAS reaches it */
    openblas_set_num_threads(threads);
    double gf = sgemm_peak();
    printf("sgemm 2048^3, %d OpenBLAS threads, OPENBLAS_CORETYPE=%s, core %s: %.1f GFLOP/s\n",
           openblas_get_num_threads(), coretype, openblas_get_corename(), gf);
    printf("{\"sgemm_gflops\": %.2f, \"threads\": %d, \"coretype\": \"%s\", "
           "\"core\": \"%s\"}\n", gf, openblas_get_num_threads(), coretype,
           openblas_get_corename());
    return 0;
}

/* The device and matmul_precision come from a config (`name`, or tiny: its model is not
 * built), so that --set device=cuda and --set matmul_precision=high are checked as ./train
 * checks them; bench_load opens the device. */
static int gemm_peak_main(const char *name, const char *const *sets, int n_sets, int threads,
                          int n)
{
    static bench_run b;
    char err[4096];
    if (bench_load(&b, name ? name : "tiny", sets, n_sets, threads, err, sizeof err)) {
        fprintf(stderr, "bench_step: %s\n", err);
        return 2;
    }
    const tt_config *c = &b.r.cfg;
    const tt_backend *be = tt_backend_get(c->device);
    be->set_threads(c->threads);
    be->set_matmul_precision(c->matmul_high);
    const char *precision = c->matmul_high ? "high" : "highest";
    double tf = gemm_peak(be, n);
    printf("gemm %d^3 through the %s table, matmul_precision %s, %d threads: %.2f TFLOP/s "
           "(best of 3 runs of %d)\n", n, be->name, precision, be->get_threads(), tf,
           GEMM_REPS);
    printf("{\"gemm_tflops\": %.3f, \"n\": %d, \"device\": \"%s\", "
           "\"matmul_precision\": \"%s\", \"threads\": %d}\n", tf, n, be->name, precision,
           be->get_threads());
    bench_free(&b);
    return 0;
}

/* What the run is, on one line. */
static void describe(const bench_run *b, const char *coretype)
{
    const tt_config *c = &b->r.cfg;
    printf("bench_step %s: %s, V=%d n_out=%d T=%d B=%d d=%d h=%d L=%d d_ff=%d, %s-LN, %s, %s "
           "positions, %s, dropout %g / attention %g, %s lr %g, grad_clip %g", b->name,
           tt_task_name(c->data.task), b->r.data.words.n, tt_corpus_n_out(&b->r.data),
           c->data.seq_len, c->train.batch_size, c->model.d_model, c->model.n_heads,
           c->model.n_layers, c->model.d_ff, c->model.pre_norm ? "pre" : "post",
           c->model.gelu ? "gelu" : "relu", c->model.learned_pos ? "learned" : "sinusoidal",
           c->model.causal ? "causal" : "bidirectional", c->model.dropout,
           c->model.attn_dropout, c->train.optimizer == TT_OPT_SGD ? "sgd" : "adamw",
           c->train.lr, c->train.grad_clip);
    if (b->pad_share > 0) printf(", padding %.1f%% of the positions", 100 * b->pad_share);
    if (tt_dist_size() > 1)
        printf(", data parallel over %d processes (%d rows each)", tt_dist_size(), b->r.batch.B);
    printf("; %lld params, %d threads (%s%s, OPENBLAS_CORETYPE=%s, core %s)\n",
           (long long)b->r.model.params.numel, b->r.g.be->get_threads(),
           tt_device_name(c->device), c->matmul_high ? ", matmul_precision high" : "", coretype,
           openblas_get_corename());
}

#define MAX_SETS 64

static int by_time(const void *a, const void *b)
{
    double x = ((const tt_kernel_time *)a)->seconds, y = ((const tt_kernel_time *)b)->seconds;
    return (x < y) - (x > y);
}

/* --kernel-times: the timed steps' kernel calls per step, slowest first, as a table and as
 * one JSON line ({"kernel_times": [{"kernel", "calls", "ms"}...], "step_ms"}: per step;
 * step_ms the steps' mean, so the kernels' ms and "outside" add up to it) */
static void print_kernel_times(int steps, double step_ms)
{
    enum { MOST = 128 };
    tt_kernel_time t[MOST];
    int n = tt_kernel_times(t, MOST, false);
    qsort(t, (size_t)n, sizeof t[0], by_time);
    double in = 0;
    for (int i = 0; i < n; i++) in += t[i].seconds * 1e3 / steps;
    printf("  kernel times per timed step (each call on the step's thread, entry to return):\n"
           "  | kernel | calls | ms | %% of step |\n  |---|--:|--:|--:|\n");
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "kernel_times");
    for (int i = 0; i < n; i++) {
        double calls = (double)t[i].calls / steps, ms = t[i].seconds * 1e3 / steps;
        printf("  | %s | %.1f | %.3f | %.1f%% |\n", t[i].name, calls, ms, 100 * ms / step_ms);
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "kernel", t[i].name);
        cJSON_AddNumberToObject(k, "calls", calls);
        add_num(k, "ms", ms);
        cJSON_AddItemToArray(a, k);
    }
    printf("  | (outside the kernels) | | %.3f | %.1f%% |\n", step_ms - in,
           100 * (step_ms - in) / step_ms);
    add_num(o, "step_ms", step_ms);
    char *line = cJSON_PrintUnformatted(o);
    printf("%s\n", line);
    free(line);
    cJSON_Delete(o);
}

static int bench_main(int argc, char **argv)
{
    const char *name = NULL, *sets[MAX_SETS];
    int threads = 2, warmup = 5, steps = 30, n_sets = 0, gemm_n = 8192;
    bool peak_only = false, gemm_only = false, fma_only = false, spec_only = false;
    bool auto_steps = false, kernel_times = false;
    for (int i = 1; i < argc; i++) {
        bool value = i + 1 < argc;
        if (strcmp(argv[i], "--config") == 0 && value) name = argv[++i];
        else if (strcmp(argv[i], "--set") == 0 && value && n_sets < MAX_SETS)
            sets[n_sets++] = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && value) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && value) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && value && strcmp(argv[i + 1], "auto") == 0)
            auto_steps = true, i++;
        else if (strcmp(argv[i], "--steps") == 0 && value) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--sgemm-peak") == 0) peak_only = true;
        else if (strcmp(argv[i], "--gemm-peak") == 0) gemm_only = true;
        else if (strcmp(argv[i], "--fma-peak") == 0) fma_only = true;
        else if (strcmp(argv[i], "--gemm-n") == 0 && value) gemm_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--spec") == 0) spec_only = true;
        else if (strcmp(argv[i], "--kernel-times") == 0) kernel_times = true;
        else return usage(argv[0]);
    }
    const int modes = peak_only + gemm_only + fma_only;
    if (threads < 1 || warmup < 0 || steps < 1 || gemm_n < 1 || modes > 1 || (!modes && !name))
        return usage(argv[0]);
    if (fma_only) return fma_peak_main(threads);
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    coretype = coretype && *coretype ? coretype : "unset";
    if (peak_only) return sgemm_peak_main(threads, coretype);
    if (gemm_only) return gemm_peak_main(name, sets, n_sets, threads, gemm_n);

    static bench_run b; /* a tt_run holds a config of a few KB */
    char err[4096];
    if (kernel_times) tt_cpu_time_kernels(); /* before the run takes the CPU's table */
    if (bench_load(&b, name, sets, n_sets, threads, err, sizeof err)) {
        fprintf(stderr, "bench_step: %s\n", err);
        return 2;
    }
    if (kernel_times && b.r.cfg.device != TT_CPU) {
        fprintf(stderr, "bench_step: --kernel-times: the CPU's kernels only (device \"%s\"); "
                "allowed: device cpu\n", tt_device_name(b.r.cfg.device));
        bench_free(&b);
        return 2;
    }
    char *spec = bench_spec_json(&b);
    printf("{\"spec\": %s}\n", spec);
    free(spec);
    if (spec_only) {
        bench_free(&b);
        return 0;
    }
    /* A device with memory of its own (CUDA: cudaMemGetInfo; the context exists, bench_load's
     * memory check opened the device) is read before the run allocates anything and after
     * the timed steps: nothing is allocated inside a step, so the difference is the run's
     * peak, the CUDA context aside and cuBLAS's workspace in. */
    const tt_backend *be = tt_backend_get(b.r.cfg.device);
    size_t free0 = 0, free1 = 0, total = 0;
    const bool dev_mem = be->mem_info && be->mem_info(&free0, &total) == 0;
    /* Everything is allocated here, before the first step, as ./train does. */
    if (bench_init(&b, err, sizeof err)) {
        fprintf(stderr, "bench_step: %s\n", err);
        bench_free(&b);
        return 2;
    }
    tt_run *r = &b.r;
    const int most = warmup + (auto_steps ? 1000 : steps);
    double *ms = tt_xmalloc((size_t)most * sizeof(double));
    double *warm = tt_xmalloc((size_t)(warmup + 1) * sizeof(double)); /* --steps auto's */
    double first_loss = 0, last_loss = 0;
    int epoch = 0, n_steps = auto_steps ? warmup + 30 : most;
    r->g.training = true;
    for (int k = 0; k < n_steps; k++) {
        const int s = k % r->steps_per_epoch;
        if (s == 0) /* an epoch's start, untimed in ./train too */
            tt_shuffle(r->order, r->data.train.n, (uint64_t)r->cfg.seed, ++epoch);
        if (kernel_times && k == warmup) /* the timed steps' calls only, not set-up's */
            tt_kernel_times(NULL, 0, true);
        double grad_norm = 0, lr = 0, t0 = now_s();
        double l = tt_run_step(r, s, &grad_norm, &lr);
        ms[k] = (now_s() - t0) * 1e3;
        if (!isfinite(l)) {
            fprintf(stderr, "bench_step: %s step %d: the loss is %g\nHINT: lower train.lr, or "
                    "set train.grad_clip\n", b.name, k + 1, l);
            return 1;
        }
        r->step++;
        if (k == 0) first_loss = l;
        last_loss = l;
        if (auto_steps && k + 1 == warmup) { /* about 1 s of steps at the warm-up's pace */
            memcpy(warm, ms, (size_t)warmup * sizeof(double));
            double n = ceil(1000.0 / fmax(median(warm, warmup), 1e-3));
            /* data parallel: every rank takes rank 0's count (the steps are collectives) */
            if (tt_dist_rank() > 0) n = 0;
            tt_dist_sum(&n, 1);
            n_steps = warmup + (int)fmin(fmax(n, 30), 1000);
        }
    }
    steps = n_steps - warmup;
    double rss = peak_rss_mb(); /* before anything else is allocated */
    if (dev_mem && be->mem_info(&free1, &total) != 0) free1 = free0;
    const double MB = 1048576.0, device_mb = ((double)free0 - (double)free1) / MB;

    double *timed = ms + warmup;
    double mean = 0;
    for (int k = 0; k < steps; k++) mean += timed[k] / steps;
    double med = median(timed, steps), lo = timed[0], hi = timed[steps - 1];
    const int B = r->batch.B * r->batch.parts, T = r->batch.T; /* the whole batch's rows */
    double tok_s = B * T / (med * 1e-3);
    double flops = bench_step_flops(&b), gflops = flops / (med * 1e-3) * 1e-9;
    describe(&b, coretype);
    printf("  %d warm-up + %d timed steps: median %.2f ms (min %.2f, mean %.2f, max %.2f), "
           "%.0f tok/s\n", warmup, steps, med, lo, mean, hi, tok_s);
    printf("  matmul %.3f GFLOP per step%s -> %.1f GFLOP/s; peak RSS %.1f MB; step arena high "
           "%.1f of %.1f MB; gradient heap high %.1f touched, %.1f in use, of %.1f MB\n",
           flops * 1e-9, r->cfg.model.causal ? " (attention: the causal half)" : "", gflops,
           rss, (double)r->arena.high / MB, (double)r->arena.cap / MB,
           (double)r->grads.high_end / MB, (double)r->grads.high_used / MB,
           (double)r->grads.cap / MB);
    if (dev_mem)
        printf("  device memory %.1f MB taken by the run (of %.1f MB on %s)\n", device_mb,
               (double)total / MB, be->name);
    printf("  loss %.4f (step 1) -> %.4f (step %d); ln(n_out) = %.4f\n", first_loss, last_loss,
           n_steps, log((double)tt_corpus_n_out(&r->data)));
    if (kernel_times) print_kernel_times(steps, mean);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "impl", "ours");
    cJSON_AddStringToObject(o, "config", b.name);
    cJSON_AddNumberToObject(o, "threads", r->g.be->get_threads());
    cJSON_AddNumberToObject(o, "ranks", tt_dist_size());
    cJSON_AddStringToObject(o, "coretype", coretype);
    cJSON_AddNumberToObject(o, "warmup", warmup);
    cJSON_AddNumberToObject(o, "steps", steps);
    add_num(o, "median_ms", med);
    add_num(o, "min_ms", lo);
    add_num(o, "mean_ms", mean);
    add_num(o, "tokens_per_s", tok_s);
    cJSON_AddNumberToObject(o, "step_gflop", flops * 1e-9); /* whole: a small model's is tiny */
    add_num(o, "gflops", gflops);
    add_num(o, "peak_rss_mb", rss);
    if (dev_mem) add_num(o, "device_mb", device_mb);
    add_num(o, "arena_high_mb", (double)r->arena.high / MB);
    add_num(o, "heap_high_mb", (double)r->grads.high_end / MB);
    cJSON_AddNumberToObject(o, "params", (double)r->model.params.numel);
    add_num(o, "first_loss", first_loss);
    add_num(o, "last_loss", last_loss);
    char *line = cJSON_PrintUnformatted(o);
    printf("%s\n", line);
    free(line);
    cJSON_Delete(o);
    free(ms);
    free(warm);
    bench_free(&b);
    return 0;
}

/* With MPI=1, `mpirun -np N bench_step ...` times the data-parallel step (dist.h): each rank
 * its share, the gradients summed; rank 0 prints. */
int main(int argc, char **argv)
{
    tt_blas_env(argv); /* the kernels ./train runs (and PyTorch, which inherits them) */
    tt_dist_init(&argc, &argv);
    int rc = bench_main(argc, argv);
    tt_dist_finalize();
    return rc;
}
