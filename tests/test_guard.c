/* test_guard.c: the device boundary, proven on the CPU. The guard device (tensor/guard/) runs
 * the CPU's kernels behind memory the host cannot touch outside a kernel call, so everything
 * above src/tensor that works on it reaches device memory only through the backend table.
 * Here: a host read or write of guard memory dies with SIGSEGV; and ./train on the guard
 * device (the tiny config for 2 epochs, a save and --resume, --dump-first-step, attention
 * dumps, the scaling study's trainings) gives the CPU's results bit for bit. The end-to-end
 * cases run in the float32 runner only (the program trains in float32). */
#include "testutil.h"

#include "tensor/safetensors.h"
#include "train/cli.h"
#include "train/report/render.h"

#include <cjson/cJSON.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ASan installs its own SIGSEGV handler (it reports and exits 1): the deliberate faults below
 * must die of the signal itself, so the forked test restores the default action first. */
static void default_segv(void) { signal(SIGSEGV, SIG_DFL); }

START_TEST(test_host_read_crashes)
{
    const tt_backend *be = &tt_guard_backend;
    real *p = be->alloc(64 * sizeof(real));
    be->fill(p, R(1.5), 64); /* through the table: fine */
    default_segv();
    volatile real x = p[3]; /* a host read of device memory: SIGSEGV here */
    ck_abort_msg("read %g from guard memory outside a kernel call", (double)x);
}
END_TEST

START_TEST(test_host_write_crashes)
{
    real *p = tt_guard_backend.alloc(16 * sizeof(real));
    default_segv();
    memset(p, 0, 16 * sizeof(real)); /* what checkpoint.c once did to the parameters */
    ck_abort_msg("wrote guard memory outside a kernel call");
}
END_TEST

/* Kernels, copies and frees work, and give the CPU's numbers. */
START_TEST(test_kernels_through_table)
{
    const tt_backend *g = &tt_guard_backend;
    enum { N = 1000 };
    real host[N], back[N], want[N];
    tt_test_normal(host, N, 3);
    real *a = g->alloc(N * sizeof(real)), *b = g->alloc(N * sizeof(real));
    g->from_host(a, host, sizeof host);
    g->gelu_forward(b, a, N);
    g->to_host(back, b, sizeof back);
    tt_cpu_backend.gelu_forward(want, host, N);
    ck_assert(memcmp(back, want, sizeof back) == 0);
    double ss = 0;
    for (int i = 0; i < N; i++) ss += (double)host[i] * (double)host[i];
    ck_assert(g->sum_squares(a, N) == tt_cpu_backend.sum_squares(host, N));
    ck_assert(fabs(g->sum_squares(a, N) - ss) <= 1e-9 * ss);
    g->free(a);
    real *c = g->alloc(3 * N * sizeof(real)); /* reuses the freed gap and more */
    g->copy(c, b, sizeof back);
    g->to_host(host, c, sizeof host);
    ck_assert(memcmp(host, want, sizeof host) == 0);
    g->free(b);
    g->free(c);
}
END_TEST

/* A device the build lacks is the user's mistake: a message with a hint, not an abort. */
START_TEST(test_missing_device_is_user_error)
{
    char err[256] = "";
#ifndef TT_WITH_CUDA
    ck_assert_ptr_null(tt_backend_open(TT_CUDA, err, sizeof err));
    ck_assert_msg(strstr(err, "device \"cuda\"") && strstr(err, "HINT: build with `make CUDA=1`"),
                  "%s", err);
#endif
    ck_assert_ptr_eq(tt_backend_open(TT_GUARD, err, sizeof err), &tt_guard_backend);
    ck_assert_ptr_eq(tt_backend_open(TT_CPU, err, sizeof err), &tt_cpu_backend);
}
END_TEST

START_TEST(test_foreign_free_aborts)
{
    real x[4];
    tt_expect_abort("guard device", "did not allocate", NULL);
    tt_guard_backend.free(x);
}
END_TEST

#ifndef TT_DOUBLE

/* The test's folder (testutil's fixture) followed by the printf-formatted rest; one of 8
 * rotating buffers. */
static const char *path(const char *fmt, ...)
{
    static char buf[8][512];
    static int slot;
    char *p = buf[slot++ % 8], rest[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rest, sizeof rest, fmt, ap);
    va_end(ap);
    snprintf(p, 512, "%s/%s", tt_test_tmpdir(), rest);
    return p;
}


/* ./train with the arguments (NULL-terminated), stdout and stderr to DIR/log.txt; returns the
 * exit status. */
static int run(const char *first, ...)
{
    char *argv[32] = {"train", (char *)first};
    int argc = 2;
    va_list ap;
    va_start(ap, first);
    for (const char *a; (a = va_arg(ap, const char *)) && argc < 31;) argv[argc++] = (char *)a;
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2);
    int log = open(path("log.txt"), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(log, 1);
    dup2(log, 2);
    int rc = tt_train_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out), close(err), close(log);
    return rc;
}

/* Every line of two metrics.jsonl files equal, but for tokens_per_s (a timing). */
static void same_metrics(const char *a, const char *b)
{
    FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
    ck_assert_msg(fa && fb, "%s or %s missing", a, b);
    char la[8192], lb[8192];
    int n = 0;
    for (;;) {
        char *ra = fgets(la, sizeof la, fa), *rb = fgets(lb, sizeof lb, fb);
        ck_assert_msg(!ra == !rb, "%s and %s have different line counts", a, b);
        if (!ra) break;
        cJSON *ja = cJSON_Parse(la), *jb = cJSON_Parse(lb);
        ck_assert(ja && jb);
        cJSON_DeleteItemFromObject(ja, "tokens_per_s");
        cJSON_DeleteItemFromObject(jb, "tokens_per_s");
        ck_assert_msg(cJSON_Compare(ja, jb, true), "%s line %d differs from %s:\n%s%s", a, n + 1,
                      b, la, lb);
        cJSON_Delete(ja);
        cJSON_Delete(jb);
        n++;
    }
    ck_assert_int_gt(n, 2);
    fclose(fa);
    fclose(fb);
}

static bool same_file(const char *a, const char *b)
{
    char err[512];
    char *x = tt_render_slurp(a, err, sizeof err), *y = tt_render_slurp(b, err, sizeof err);
    bool same = x && y && strcmp(x, y) == 0;
    free(x);
    free(y);
    return same;
}

static const char *const CKPT_META[] = {"step", "epoch", "vocabulary", "labels", NULL};

static int train_on(const char *config, const char *dev, const char *out, const char *a,
                    const char *b, const char *c, const char *d)
{
    char set_dev[32], set_out[600];
    snprintf(set_dev, sizeof set_dev, "device=%s", dev);
    snprintf(set_out, sizeof set_out, "output.dir=%s", out);
    return run(config, "--set", set_dev, "--set", set_out, "--set", a, "--set", b, "--set", c,
               "--set", d, NULL);
}

/* The tiny config, 2 epochs, on both devices: the same metrics, checkpoints and attention
 * maps; then --resume on the guard device from its epoch-1 checkpoint ends where the CPU did. */
START_TEST(test_tiny_trains_as_on_cpu)
{
    const char *dev[2] = {"cpu", "guard"};
    for (int d = 0; d < 2; d++)
        ck_assert_int_eq(train_on("configs/tiny.json", dev[d], path("%s", dev[d]),
                                  "train.epochs=2", "output.checkpoint_every=1",
                                  "train.epochs=2", "train.epochs=2"),
                         0);
    same_metrics(path("cpu/metrics.jsonl"), path("guard/metrics.jsonl"));
    for (int e = 1; e <= 2; e++)
        tt_test_same_tensors(path("cpu/checkpoints/epoch_%03d.safetensors", e),
                     path("guard/checkpoints/epoch_%03d.safetensors", e), CKPT_META);
    for (int e = 0; e <= 2; e++)
        ck_assert_msg(same_file(path("cpu/attention/epoch_%03d.json", e),
                                path("guard/attention/epoch_%03d.json", e)),
                      "attention epoch %d differs on the guard device", e);
    ck_assert(access(path("guard/attention/index.html"), R_OK) == 0);
    ck_assert(access(path("guard/attention/epoch_002.svg"), R_OK) == 0);

    /* resume on the guard device from epoch 1 */
    char set_out[600];
    snprintf(set_out, sizeof set_out, "output.dir=%s", path("resumed"));
    ck_assert_int_eq(run("configs/tiny.json", "--set", "device=guard", "--set", set_out, "--set",
                         "train.epochs=2", "--resume",
                         path("guard/checkpoints/epoch_001.safetensors"), NULL),
                     0);
    tt_test_same_tensors(path("cpu/checkpoints/epoch_002.safetensors"),
                 path("resumed/checkpoints/epoch_002.safetensors"), CKPT_META);
}
END_TEST

/* The replay check (guard/backend.c) on the other tasks and options: an epoch each of mlm
 * (masks drawn on the host), lm (causal, pre-LN, GELU), classify (pooling weights copied in)
 * and tiny with SGD and attention dropout; a step that differed from the second would abort. */
START_TEST(test_every_task_replays)
{
    static const char *const RUNS[][3] = {
        {"configs/mlm.json", "train.batch_size=32", "model.attn_dropout=0.1"},
        {"configs/lm.json", "train.batch_size=32", "model.dropout=0.1"},
        {"configs/bank_classify.json", "train.batch_size=32", "model.dropout=0.1"},
        {"configs/tiny.json", "train.optimizer=\"sgd\"", "model.attn_dropout=0.1"}};
    for (size_t i = 0; i < sizeof RUNS / sizeof RUNS[0]; i++)
        ck_assert_msg(train_on(RUNS[i][0], "guard", path("run%zu", i), "train.epochs=1",
                               "output.attention_every=0", RUNS[i][1], RUNS[i][2]) == 0,
                      "%s on the guard device failed", RUNS[i][0]);
}
END_TEST

/* --dump-first-step writes the same tensors from either device. */
START_TEST(test_dump_first_step_as_on_cpu)
{
    const char *dev[2] = {"device=cpu", "device=guard"}, *file[2] = {"cpu.st", "guard.st"};
    for (int d = 0; d < 2; d++)
        ck_assert_int_eq(run("configs/tiny.json", "--set", dev[d], "--dump-first-step",
                             path("%s", file[d]), NULL),
                         0);
    tt_test_same_tensors(path("cpu.st"), path("guard.st"), NULL);
}
END_TEST

/* The scaling study, small, on the guard device: parts 1-3 and both trainings run, and the
 * trainings' metrics and part 3's numbers equal the CPU's. */
START_TEST(test_study_as_on_cpu)
{
    const char *dev[2] = {"cpu", "guard"};
    for (int d = 0; d < 2; d++)
        ck_assert_int_eq(train_on("configs/scaling.json", dev[d], path("%s", dev[d]),
                                  "study.samples=1000", "study.epochs=1", "study.d_model=32",
                                  "study.seeds=1"),
                         0);
    const char *part[2] = {"train_sqrt_dk", "train_none"};
    for (int k = 0; k < 2; k++)
        same_metrics(path("cpu/%s/metrics.jsonl", part[k]),
                     path("guard/%s/metrics.jsonl", part[k]));
    ck_assert_msg(same_file(path("cpu/gradients.csv"), path("guard/gradients.csv")),
                  "the study's part 3 differs on the guard device");
    ck_assert(access(path("guard/report.md"), R_OK) == 0);
}
END_TEST

#endif

Suite *guard_suite(void)
{
    Suite *s = suite_create("guard");
    TCase *tc = tcase_create("memory");
    tcase_add_test_raise_signal(tc, test_host_read_crashes, SIGSEGV);
    tcase_add_test_raise_signal(tc, test_host_write_crashes, SIGSEGV);
    tcase_add_test(tc, test_kernels_through_table);
    tcase_add_test_raise_signal(tc, test_foreign_free_aborts, SIGABRT);
    tcase_add_test(tc, test_missing_device_is_user_error);
    suite_add_tcase(s, tc);
#ifndef TT_DOUBLE
    tc = tcase_create("train");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_tiny_trains_as_on_cpu);
    tcase_add_test(tc, test_every_task_replays);
    tcase_add_test(tc, test_dump_first_step_as_on_cpu);
    tcase_add_test(tc, test_study_as_on_cpu);
    suite_add_tcase(s, tc);
#endif
    return s;
}
