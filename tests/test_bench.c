/* test_bench.c (suite bench, float32 runner only): BUILD/bench_step, the step benchmark beside
 * the runner (make runners builds it), run as a user runs it. The spec line of a config file
 * carries every model, batch and optimizer key as the file gives it, V and n_out as the data
 * loader finds them and the padding share worked out here; one step runs, writes no run folder,
 * and its result line holds the matmul FLOPs of the shapes (a causal model's attention at the
 * useful half) and no device memory on the CPU; the named rows have the issues' shapes (base:
 * issue 12's GPU row); --gemm-peak measures the table's gemm at the config's device and
 * precision; --kernel-times counts each CPU kernel's calls as the model makes them; a
 * missing file and a config error exit 2 with the project's message and print nothing on
 * stdout. No timing is asserted. */
#include "testutil.h"

#include "train/data/data.h"
#include "train_testutil.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { OUT_LEN = 1 << 14 };

/* bench_step's stdout and stderr, and its exit status */
typedef struct bench_out {
    char out[OUT_LEN], err[OUT_LEN];
    int status;
} bench_out;

/* Runs BUILD/bench_step (the runner's folder) with args, words the shell splits. */
static void run_bench(bench_out *o, const char *args)
{
    char bin[PATH_MAX + 16], cmd[2 * PATH_MAX + 1200];
    ssize_t n = readlink("/proc/self/exe", bin, PATH_MAX);
    ck_assert(n > 0);
    bin[n] = '\0';
    strcpy(strrchr(bin, '/') + 1, "bench_step");
    ck_assert_msg(access(bin, X_OK) == 0, "%s is not built. HINT: make runners builds it", bin);
    const char *err = tt_test_path("stderr.txt");
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", bin, args, err);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t got = fread(o->out, 1, OUT_LEN - 1, p);
    o->out[got] = '\0';
    int st = pclose(p);
    o->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    FILE *f = fopen(err, "r");
    ck_assert_ptr_nonnull(f);
    got = fread(o->err, 1, OUT_LEN - 1, f);
    o->err[got] = '\0';
    fclose(f);
}

/* The output's JSON line that starts with `start`, parsed (the test fails without one). */
static cJSON *json_line(const char *out, const char *start)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, start, strlen(start)) != 0) continue;
        const char *end = strchr(p, '\n');
        char *line = strndup(p, end ? (size_t)(end - p) : strlen(p));
        cJSON *j = cJSON_Parse(line);
        free(line);
        ck_assert_msg(j, "not JSON: %.200s", p);
        return j;
    }
    ck_abort_msg("no line starting %s in:\n%s", start, out);
    return NULL;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "%s: not a number", key);
    return v->valuedouble;
}

static void expect_str(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsString(v), "%s: not a string", key);
    ck_assert_msg(strcmp(v->valuestring, want) == 0, "%s: %s, want %s", key, v->valuestring,
                  want);
}

static void expect_bool(const cJSON *o, const char *key, bool want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsBool(v) && cJSON_IsTrue(v) == want, "%s: want %d", key, want);
}

static void expect_num(const cJSON *o, const char *key, double want)
{
    double got = num(o, key);
    ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want), "%s: %.17g, want %.17g", key, got, want);
}

/* Matmul FLOPs of a step (bench/README.md): 3x the forward gemms, causal scores at T(T+1)/2. */
static double flops(int B, int T, int d, int f, int H, int L, int n_out, bool causal)
{
    double N = (double)B * T, P = causal ? T * (T + 1) / 2.0 : (double)T * T;
    double layer = 2 * N * 3 * d * d + 2 * N * d * d + 4 * N * f * d + 4.0 * B * H * P * d / H;
    return 3 * (L * layer + 2 * N * n_out * d);
}

/* Not one key at its default, so that each is seen to come from the file. */
static const char *CONFIG =
    "{\"seed\": 3, \"threads\": 1,\n"
    " \"data\": {\"task\": \"tag\", \"seq_len\": 6},\n"
    " \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 2, \"d_ff\": 40, \"max_len\": 9,\n"
    "           \"norm\": \"pre\", \"activation\": \"gelu\", \"positional\": \"learned\",\n"
    "           \"causal\": true, \"embed_scale\": true, \"dropout\": 0.2,\n"
    "           \"attn_dropout\": 0.05, \"attn_scale\": \"none\", \"attn_temperature\": 0.5},\n"
    " \"train\": {\"batch_size\": 8, \"optimizer\": \"sgd\", \"lr\": 0.01, \"momentum\": 0.5,\n"
    "           \"weight_decay\": 0.02, \"grad_clip\": 0.5, \"schedule\": \"linear\",\n"
    "           \"warmup_steps\": 2, \"beta1\": 0.8, \"beta2\": 0.99, \"eps\": 1e-7},\n"
    " \"output\": {\"dir\": \"%s/run\"}}\n";

static void setup(void) { tt_test_setup_tag_run(CONFIG); }

START_TEST(test_config_file_spec_and_step)
{
    tt_config c;
    tt_corpus d;
    char err[1024], args[1200];
    ck_assert_msg(!tt_config_load(&c, tt_test_path("cfg.json"), NULL, 0, err, sizeof err), "%s",
                  err);
    ck_assert_msg(!tt_corpus_load(&d, &c, err, sizeof err), "%s", err);
    int64_t inputs = 0;
    for (int i = 0; i < d.train.n; i++) inputs += d.train.ex[i].n < 6 ? d.train.ex[i].n : 6;
    double pad = 1 - (double)inputs / ((d.train.n + 7) / 8 * 8 * 6.0);
    const int V = d.words.n, n_out = tt_corpus_n_out(&d);
    tt_corpus_free(&d);
    tt_config_free(&c);

    static bench_out o;
    snprintf(args, sizeof args, "--config '%s' --threads 1 --warmup 0 --steps 1",
             tt_test_path("cfg.json"));
    run_bench(&o, args);
    ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
    cJSON *line = json_line(o.out, "{\"spec\"");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(line, "spec");
    expect_str(s, "name", tt_test_path("cfg.json"));
    expect_str(s, "task", "tag");
    expect_num(s, "V", V);
    expect_num(s, "n_out", n_out);
    const char *ints[] = {"T", "B", "d", "h", "L", "d_ff", "max_len", "warmup_steps", "seed",
                          "threads"};
    const double int_want[] = {6, 8, 16, 2, 2, 40, 9, 2, 3, 1};
    for (int i = 0; i < 10; i++) expect_num(s, ints[i], int_want[i]);
    const char *reals[] = {"dropout", "attn_dropout", "attn_temperature", "lr", "momentum",
                           "weight_decay", "grad_clip", "beta1", "beta2", "eps"};
    const double real_want[] = {0.2, 0.05, 0.5, 0.01, 0.5, 0.02, 0.5, 0.8, 0.99, 1e-7};
    for (int i = 0; i < 10; i++) expect_num(s, reals[i], real_want[i]);
    expect_str(s, "norm", "pre");
    expect_str(s, "activation", "gelu");
    expect_str(s, "positional", "learned");
    expect_str(s, "attn_scale", "none");
    expect_str(s, "optimizer", "sgd");
    expect_str(s, "schedule", "linear");
    expect_str(s, "device", "cpu");
    expect_bool(s, "causal", true);
    expect_bool(s, "embed_scale", true);
    ck_assert_msg(fabs(num(s, "pad_share") - pad) < 1e-12, "pad_share %g, want %g",
                  num(s, "pad_share"), pad);
    cJSON_Delete(line);

    cJSON *r = json_line(o.out, "{\"impl\"");
    expect_str(r, "impl", "ours");
    expect_num(r, "steps", 1);
    expect_num(r, "warmup", 0);
    expect_num(r, "threads", 1);
    ck_assert(num(r, "median_ms") > 0 && num(r, "peak_rss_mb") > 0 && num(r, "params") > 0);
    ck_assert(isfinite(num(r, "first_loss")));
    expect_num(r, "step_gflop", flops(8, 6, 16, 40, 2, 2, n_out, true) * 1e-9);
    cJSON_Delete(r);
    ck_assert_msg(access(tt_test_path("run"), F_OK) != 0, "the bench made output.dir");
}
END_TEST

/* The model kind a spec names: norm, activation, positional encoding, causal. */
static void expect_kind(const cJSON *s, const char *norm, const char *activation,
                        const char *positional, bool causal)
{
    expect_str(s, "norm", norm);
    expect_str(s, "activation", activation);
    expect_str(s, "positional", positional);
    expect_bool(s, "causal", causal);
}

/* The spec line of a bench_step run that must succeed (free it with cJSON_Delete). */
static cJSON *spec_of(bench_out *o, const char *args)
{
    run_bench(o, args);
    ck_assert_msg(o->status == 0, "%s: exit %d: %s", args, o->status, o->err);
    return json_line(o->out, "{\"spec\"");
}

START_TEST(test_named_rows)
{
    static bench_out o;
    const char *keys[] = {"V", "T", "d", "h", "L", "d_ff", "B", "dropout", "attn_dropout",
                          "pad_share"};
    cJSON *line = spec_of(&o, "--config gpt-small --spec");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(line, "spec");
    const double small[] = {256, 64, 128, 4, 4, 512, 32, 0, 0, 0};
    for (int i = 0; i < 10; i++) expect_num(s, keys[i], small[i]);
    expect_kind(s, "pre", "gelu", "learned", true);
    expect_str(s, "optimizer", "adamw");
    cJSON_Delete(line);
    ck_assert_msg(!strstr(o.out, "{\"impl\""), "--spec ran steps");

    line = spec_of(&o, "--config gpt-medium --spec --set train.batch_size=4");
    s = cJSON_GetObjectItemCaseSensitive(line, "spec");
    const double medium[] = {1024, 128, 256, 8, 6, 1024, 4, 0, 0, 0}; /* B from --set */
    for (int i = 0; i < 10; i++) expect_num(s, keys[i], medium[i]);
    cJSON_Delete(line);

    /* base as issue 12 gives it (a small batch: the memory check runs for --spec too) */
    line = spec_of(&o, "--config base --spec --set train.batch_size=2");
    s = cJSON_GetObjectItemCaseSensitive(line, "spec");
    const double base[] = {8192, 256, 768, 12, 12, 3072, 2, 0.1, 0.1, 0};
    for (int i = 0; i < 10; i++) expect_num(s, keys[i], base[i]);
    expect_str(s, "task", "tag");
    expect_kind(s, "post", "relu", "sinusoidal", false);
    expect_str(s, "optimizer", "adamw");
    cJSON_Delete(line);

    /* tiny as since issue 6: post-LN, ReLU, sinusoidal, dropout 0.1, bidirectional; a step */
    line = spec_of(&o, "--config tiny --threads 1 --warmup 0 --steps 1");
    s = cJSON_GetObjectItemCaseSensitive(line, "spec");
    expect_kind(s, "post", "relu", "sinusoidal", false);
    expect_num(s, "dropout", 0.1);
    expect_num(s, "attn_dropout", 0.1);
    expect_num(s, "grad_clip", 0);
    cJSON_Delete(line);
    cJSON *r = json_line(o.out, "{\"impl\"");
    expect_num(r, "step_gflop", flops(32, 16, 64, 256, 4, 2, 64, false) * 1e-9);
    ck_assert_msg(!cJSON_GetObjectItemCaseSensitive(r, "device_mb"), "device_mb on the CPU");
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_gemm_peak)
{
    static bench_out o;
    run_bench(&o, "--gemm-peak --gemm-n 64 --threads 1 --set matmul_precision=high");
    ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
    cJSON *r = json_line(o.out, "{\"gemm_tflops\"");
    ck_assert(num(r, "gemm_tflops") > 0);
    expect_num(r, "n", 64);
    expect_num(r, "threads", 1);
    expect_str(r, "device", "cpu");
    expect_str(r, "matmul_precision", "high");
    cJSON_Delete(r);

    run_bench(&o, "--gemm-peak --set device=tpu");
    ck_assert_int_eq(o.status, 2);
    ck_assert_msg(strstr(o.err, "device"), "%s", o.err);
    ck_assert_str_eq(o.out, "");
}
END_TEST

/* The kernel of that name in a --kernel-times line (the test fails without one) */
static const cJSON *kernel(const cJSON *times, const char *name)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(times, "kernel_times"))
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(k, "kernel")->valuestring, name)) return k;
    ck_abort_msg("no kernel %s", name);
    return NULL;
}

/* --kernel-times: a timed step's calls of each CPU kernel, counted as the model makes them
 * (3 layers: 4 Linears each and the head; an attention each; one optimizer step), their
 * times within the step's, the same calls with no warm-up (none of the set-up's); the CPU
 * only; without it, no such line */
START_TEST(test_kernel_times)
{
    static bench_out o;
    run_bench(&o, "--config tiny --set model.n_layers=3 --threads 1 --warmup 1 --steps 2 "
                  "--kernel-times");
    ck_assert_msg(o.status == 0, "exit %d: %s", o.status, o.err);
    cJSON *t = json_line(o.out, "{\"kernel_times\"");
    expect_num(kernel(t, "linear_forward"), "calls", 13);
    expect_num(kernel(t, "linear_backward"), "calls", 13);
    expect_num(kernel(t, "attention_forward"), "calls", 3);
    expect_num(kernel(t, "attention_backward"), "calls", 3);
    expect_num(kernel(t, "adamw_step"), "calls", 1);
    double sum = 0, step = num(t, "step_ms");
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(t, "kernel_times"))
    {
        ck_assert(num(k, "ms") >= 0 && num(k, "calls") > 0);
        sum += num(k, "ms");
    }
    ck_assert_msg(sum > 0 && sum <= step * (1 + 1e-6), "kernels %g ms of a %g ms step", sum,
                  step);
    ck_assert_msg(strstr(o.out, "| linear_forward | 13.0 |"), "%s", o.out);

    /* no warm-up: the same calls, none of the set-up's (it zeroes and fills before step 1) */
    static bench_out o0;
    run_bench(&o0, "--config tiny --set model.n_layers=3 --threads 1 --warmup 0 --steps 1 "
                   "--kernel-times");
    ck_assert_msg(o0.status == 0, "exit %d: %s", o0.status, o0.err);
    cJSON *t0 = json_line(o0.out, "{\"kernel_times\"");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t0, "kernel_times")),
                     cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "kernel_times")));
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(t, "kernel_times"))
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(k, "kernel")->valuestring;
        ck_assert_msg(num(kernel(t0, name), "calls") == num(k, "calls"),
                      "%s: %g calls without a warm-up, %g with one", name,
                      num(kernel(t0, name), "calls"), num(k, "calls"));
    }
    cJSON_Delete(t0);
    cJSON_Delete(t);

    run_bench(&o, "--config tiny --set device=guard --kernel-times --steps 1");
    ck_assert_int_eq(o.status, 2);
    ck_assert_msg(strstr(o.err, "--kernel-times") && strstr(o.err, "guard"), "%s", o.err);
    ck_assert_str_eq(o.out, "");

    run_bench(&o, "--config tiny --threads 1 --warmup 0 --steps 1");
    ck_assert_msg(o.status == 0 && !strstr(o.out, "kernel_times"), "%s", o.out);
}
END_TEST

START_TEST(test_errors_exit_2)
{
    static bench_out o;
    char args[1200];
    snprintf(args, sizeof args, "--config '%s' --steps 1", tt_test_path("none.json"));
    run_bench(&o, args);
    ck_assert_int_eq(o.status, 2);
    ck_assert_msg(strstr(o.err, "none.json") && strstr(o.err, "HINT"), "%s", o.err);
    ck_assert_str_eq(o.out, "");

    tt_test_put("bad.json", "{\"data\": {\"task\": \"tag\", \"seq_len\": 6},\n"
                            " \"model\": {\"dropuot\": 0.1}}\n");
    snprintf(args, sizeof args, "--config '%s' --steps 1", tt_test_path("bad.json"));
    run_bench(&o, args);
    ck_assert_int_eq(o.status, 2);
    ck_assert_msg(strstr(o.err, "bad.json") && strstr(o.err, "model.dropuot"), "%s", o.err);
    ck_assert_str_eq(o.out, "");

    run_bench(&o, "--config tiny --steps 0");
    ck_assert_int_eq(o.status, 2);
    ck_assert_msg(strstr(o.err, "usage"), "%s", o.err);
}
END_TEST

Suite *bench_suite(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench_step");
    tcase_add_checked_fixture(tc, setup, tt_tmp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_config_file_spec_and_step);
    tcase_add_test(tc, test_named_rows);
    tcase_add_test(tc, test_gemm_peak);
    tcase_add_test(tc, test_kernel_times);
    tcase_add_test(tc, test_errors_exit_2);
    suite_add_tcase(s, tc);
    return s;
}
