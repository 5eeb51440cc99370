/* allreduce.c: issue 16's all-reduce benchmark, a standalone MPI program (MPI, libc and libm
 * only; the project's library is not linked). It times MPI_Allreduce(MPI_IN_PLACE, buf, n,
 * MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), the call data-parallel training makes on the flat
 * gradient buffer once a step, for n from 1 Ki to 64 Mi (powers of 4) and for the exact flat
 * buffers of the bench rows and of `base`. Per size: warm-up calls, then K timed calls, each
 * after an MPI_Barrier, K chosen so that a size takes about --time seconds; every call's result
 * is checked (rank r adds r + 1, so every element must be N(N+1)/2 exactly) and a wrong one
 * exits 1. Rank 0 prints a markdown table. Built and run by bench/mpi.mk (make bench-allreduce). */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Untimed calls per size (the first pays for page faults and the library's buffers); the
 * bounds on the timed ones (at least 5 for a median worth the name, at most MAX_REPS so that
 * the smallest sizes do not take seconds of barriers). */
enum { WARMUP = 2, MIN_REPS = 5, MAX_REPS = 20000, MAX_SIZES = 32 };

/* A model whose gradient buffer is a row of the table: the bench rows of bench/bench_run.c
 * (n_out = V: tag and lm both) and `base`, GPT-style like the gpt rows (pre-LN, learned
 * positions with max_len = T, an lm head). */
typedef struct model {
    const char *name;
    long long V, T, d, L, d_ff;
    int pre_ln_learned; /* pre-LN and learned positions (the gpt rows, base), else post-LN */
} model;

static const model MODELS[] = {
    {"tiny", 64, 16, 64, 2, 256, 0},
    {"small", 256, 64, 128, 4, 512, 0},
    {"medium", 1024, 128, 256, 6, 1024, 0},
    {"gpt-small", 256, 64, 128, 4, 512, 1},
    {"gpt-medium", 1024, 128, 256, 6, 1024, 1},
    {"base", 8192, 256, 768, 12, 3072, 1},
};
#define N_MODELS ((int)(sizeof MODELS / sizeof MODELS[0]))

/* One parameter's share of the flat buffer: src/autograd/params.c starts every parameter on a
 * 16-element boundary, so the buffer the trainer reduces is a little larger than the count. */
static long long slot(long long numel)
{
    return (numel + 15) / 16 * 16;
}

/* The flat gradient buffer's elements, in the order src/nn/model.c adds the parameters:
 * embedding, positions (learned only), per layer in_proj (3d x d, 3d), out_proj (d x d, d),
 * linear1 (d_ff x d, d_ff), linear2 (d x d_ff, d), norm1 and norm2 (d, d each), the final norm
 * (pre-LN only), the head (V x d, V). Checked against ./train's and bench_step's counts. */
static long long flat_elements(const model *m)
{
    const long long d = m->d, f = m->d_ff;
    long long layer = slot(3 * d * d) + slot(3 * d) + slot(d * d) + slot(d) + slot(f * d) +
                      slot(f) + slot(d * f) + slot(d) + 4 * slot(d);
    long long n = slot(m->V * d) + m->L * layer + slot(m->V * d) + slot(m->V);
    if (m->pre_ln_learned) n += slot(m->T * d) + 2 * slot(d);
    return n;
}

typedef struct size_row {
    char label[16];
    long long n;
} size_row;

static int by_elements(const void *a, const void *b)
{
    long long x = ((const size_row *)a)->n, y = ((const size_row *)b)->n;
    return (x > y) - (x < y);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The sizes to time, ascending: 4^5 .. 4^13, then the models, all up to max_n elements. */
static int make_sizes(size_row *rows, long long max_n)
{
    int k = 0;
    for (int p = 5; p <= 13; p++) {
        long long n = 1LL << (2 * p);
        if (n > max_n) continue;
        rows[k].n = n;
        snprintf(rows[k++].label, sizeof rows[0].label, "4^%d", p);
    }
    for (int i = 0; i < N_MODELS; i++) {
        long long n = flat_elements(&MODELS[i]);
        if (n > max_n) continue;
        rows[k].n = n;
        snprintf(rows[k++].label, sizeof rows[0].label, "%s", MODELS[i].name);
    }
    qsort(rows, (size_t)k, sizeof *rows, by_elements);
    return k;
}

/* The wrong elements after one call, and the first of them. */
typedef struct check {
    long long bad, first;
    float got;
} check;

static void fill(float *buf, int n, float v)
{
    for (int i = 0; i < n; i++)
        buf[i] = v;
}

static void verify(check *c, const float *buf, int n, float expect)
{
    for (int i = 0; i < n; i++) {
        if (buf[i] == expect) continue;
        if (!c->bad++) {
            c->first = i;
            c->got = buf[i];
        }
    }
}

/* One call as the table counts it: the buffer refilled (rank + 1) and every rank at the
 * barrier, then the call alone timed, then its result checked; returns the call's seconds on
 * this rank. The refill keeps the exact check possible (in place, a second sum would multiply
 * by N) and writes the buffer just before the call, as a backward pass does. */
static double one_call(float *buf, int n, int rank, float expect, check *c)
{
    fill(buf, n, (float)(rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    verify(c, buf, n, expect);
    return t;
}

typedef struct result {
    int reps;
    double median, min; /* seconds, of the slowest rank's time of each call */
    long long bad;      /* wrong elements, summed over the ranks */
} result;

/* Times one size on every rank; the result is rank 0's. A call's time is the largest over the
 * ranks (the collective is done when its last rank is), the median and min over the calls. */
static result time_size(float *buf, int n, int rank, int np, double target, double *t,
                        double *t_max)
{
    const float expect = (float)np * (float)(np + 1) / 2;
    check c = {0};
    double cycle = 0, worst;
    for (int i = 0; i < WARMUP; i++) {
        double t0 = MPI_Wtime();
        one_call(buf, n, rank, expect, &c);
        cycle = MPI_Wtime() - t0; /* fill, barrier, call and check: what a rep costs */
    }
    /* every rank must make the same number of calls: agree on the slowest rank's cycle */
    MPI_Allreduce(&cycle, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double want = worst > 0 ? target / worst : MAX_REPS;
    result r = {.reps = want < MIN_REPS ? MIN_REPS : want > MAX_REPS ? MAX_REPS : (int)want};
    for (int i = 0; i < r.reps; i++)
        t[i] = one_call(buf, n, rank, expect, &c);
    MPI_Reduce(t, t_max, r.reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&c.bad, &r.bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (c.bad)
        fprintf(stderr,
                "bench_allreduce: rank %d, %d elements: %lld wrong elements over %d "
                "calls; the first, element %lld, holds %.9g, expected %.9g = N(N+1)/2 with "
                "N = %d ranks\n",
                rank, n, c.bad, WARMUP + r.reps, c.first, (double)c.got, (double)expect, np);
    if (rank == 0) {
        qsort(t_max, (size_t)r.reps, sizeof *t_max, by_value);
        r.min = t_max[0];
        r.median = r.reps % 2 ? t_max[r.reps / 2] : (t_max[r.reps / 2 - 1] + t_max[r.reps / 2]) / 2;
    }
    return r;
}

static void header(int np, double target, const size_row *rows, int n_rows)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    MPI_Get_processor_name(host, &len);
    double load = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = -1;
        fclose(f);
    }
    printf("bench_allreduce: MPI_Allreduce(MPI_IN_PLACE, float32, MPI_SUM, MPI_COMM_WORLD) on "
           "%d ranks (%s), rank 0 on %s, load average %.2f at the start\n",
           np, lib, host, load);
    printf("per size: %d warm-up calls, then K timed calls (%d <= K <= %d, about %.2f s a size), "
           "each after an MPI_Barrier; a call's time is the slowest rank's; median and min over "
           "the K; every result checked (N(N+1)/2)\n",
           WARMUP, MIN_REPS, MAX_REPS, target);
    printf("MB = 10^6 bytes; algbw = bytes / median time; busbw = algbw * 2(N-1)/N, NCCL's "
           "convention (the bytes each rank sends in a ring all-reduce), GB/s = 10^9 bytes/s; "
           "largest buffer %.1f MB a rank\n\n",
           (double)rows[n_rows - 1].n * 4 / 1e6);
    printf("| size | elements | MB | K | median us | min us | algbw GB/s | busbw GB/s | ranks |\n"
           "|------|---------:|---:|--:|----------:|-------:|-----------:|-----------:|------:|\n");
    fflush(stdout);
}

static void table_row(const size_row *s, const result *r, int np)
{
    const double bytes = (double)s->n * sizeof(float), alg = bytes / r->median / 1e9;
    printf("| %s | %lld | %.3f | %d | %.1f | %.1f | %.2f | ", s->label, s->n, bytes / 1e6, r->reps,
           r->median * 1e6, r->min * 1e6, alg);
    if (np > 1)
        printf("%.2f | %d |\n", alg * 2 * (np - 1) / np, np);
    else
        printf("n/a | %d |\n", np);
    fflush(stdout);
}

static int usage(const char *argv0, int rank)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: mpirun -np N %s [--time SECONDS] [--max ELEMENTS]\n"
                "  --time  about how long each size is timed (default 0.3; 0.01 to 60)\n"
                "  --max   leave out the sizes above this many float32 elements (default: all,\n"
                "          up to base's %lld, %.0f MB a rank)\n",
                argv0, flat_elements(&MODELS[N_MODELS - 1]),
                (double)flat_elements(&MODELS[N_MODELS - 1]) * 4 / 1e6);
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double target = 0.3;
    long long max_n = 1LL << 40;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (i + 1 < argc && strcmp(argv[i], "--time") == 0)
            target = strtod(argv[++i], &end);
        else if (i + 1 < argc && strcmp(argv[i], "--max") == 0)
            max_n = strtoll(argv[++i], &end, 10);
        if (!end || *end || target < 0.01 || target > 60 || max_n < 1) {
            int rc = usage(argv[0], rank);
            MPI_Finalize();
            return rc;
        }
    }
    size_row rows[MAX_SIZES];
    int n_rows = make_sizes(rows, max_n);
    if (n_rows == 0) {
        if (rank == 0)
            fprintf(stderr,
                    "bench_allreduce: --max %lld leaves no size (the "
                    "smallest is 1024)\n",
                    max_n);
        MPI_Finalize();
        return 2;
    }
    /* one buffer for all sizes, its largest; MPI's count is an int */
    const long long most = rows[n_rows - 1].n;
    float *buf = malloc((size_t)most * sizeof(float));
    double *t = malloc(2 * MAX_REPS * sizeof(double));
    if (!buf || !t || most > 0x7fffffff) {
        fprintf(stderr, "bench_allreduce: rank %d cannot hold %lld float32 elements (%.1f MB)\n",
                rank, most, (double)most * 4 / 1e6);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) header(np, target, rows, n_rows);
    long long bad = 0;
    for (int i = 0; i < n_rows; i++) {
        result r = time_size(buf, (int)rows[i].n, rank, np, target, t, t + MAX_REPS);
        bad += r.bad;
        if (rank == 0) table_row(&rows[i], &r, np);
    }
    free(buf);
    free(t);
    MPI_Finalize();
    if (bad && rank == 0)
        fprintf(stderr, "bench_allreduce: FAIL: %lld wrong elements in all (above)\n", bad);
    return bad ? 1 : 0;
}
