/* test_budget.c: the memory check before a run (src/train/run/budget.c). The issue's two
 * configs too large for any machine exit 2 naming the bytes and the keys, and leave an earlier
 * run's files byte for byte; the parameter count against a real model; the readers of /proc
 * and /sys on fake trees (cgroup v2 with a parent's limit, v1 with a path the container does
 * not show); RLIMIT_AS in a child of our own (so CK_FORK=no works too); the device's free
 * memory through the backend table. The fake trees reach ./train through TT_MEM_ROOT. The real
 * ./train under a grid of `ulimit -v` values around what it needs: exit 2 below, 0 at and
 * above, never a hang (float32 runner only; skipped under ASan). */
#include "testutil.h"

#include "train/cli.h"
#include "tensor/cpu/cpu.h"
#include "train/run/budget.h"
#include "train/run/run.h"
#include "train_testutil.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *CONFIG =
    "{\"seed\": 3, \"threads\": 1,\n"
    " \"data\": {\"task\": \"tag\", \"seq_len\": 6},\n"
    " \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 2, \"d_ff\": 32},\n"
    " \"train\": {\"epochs\": 1, \"batch_size\": 8},\n"
    " \"output\": {\"dir\": \"%s/run\"}}\n";

static void setup(void)
{
    tt_tmp_setup();
    tt_test_tag_corpus();
    char text[1024];
    snprintf(text, sizeof text, CONFIG, tt_test_tmpdir());
    tt_test_put("cfg.json", text);
}

/* A file under the test's folder, its parent folders made. */
static void put_deep(const char *rel, const char *text)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", tt_test_tmpdir(), rel);
    for (char *s = strchr(path + strlen(tt_test_tmpdir()) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* A fake root whose only limit is MemAvailable 8 GB (8000000 kB = 8.2 GB). */
static const char *fake_8gb(void)
{
    put_deep("root/proc/meminfo", "MemTotal: 9000000 kB\nMemAvailable: 8000000 kB\n");
    return tt_test_path("root");
}

static char *slurp(const char *path)
{
    char *out = tt_xcalloc(1, 1 << 16);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, (1 << 16) - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

/* The issue's configs: exit 2 before anything is allocated or written, the message naming the
 * bytes needed and available and the keys; run/config.json and run/metrics.jsonl of an earlier
 * run stay as they were, even with --overwrite. */
START_TEST(test_issue_configs_exit_2)
{
    static const struct {
        const char *set[2], *keys[2];
    } cases[] = {
        {{"model.d_model=65536", "model.n_heads=1"}, {"model.d_model 65536", "model.d_ff 32"}},
        {{"data.seq_len=4096", "train.batch_size=1024"},
         {"data.seq_len 4096", "train.batch_size 1024"}},
    };
    setenv("TT_MEM_ROOT", fake_8gb(), 1);
    put_deep("run/config.json", "{\"an earlier run\": true}\n");
    put_deep("run/metrics.jsonl", "{\"epoch\": 0, \"step\": 0}\n");
    char *before[2] = {slurp(tt_test_path("run/config.json")),
                       slurp(tt_test_path("run/metrics.jsonl"))};
    char msg[4096];
    for (int i = 0; i < 2; i++) {
        int rc = tt_test_train(msg, sizeof msg, tt_test_path("cfg.json"), "--set",
                               cases[i].set[0], "--set", cases[i].set[1], "--overwrite", NULL);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", cases[i].set[0], rc, msg);
        const char *want[] = {"memory: this run needs ", " GB", "the process may use 8.2 GB",
                              "MemAvailable 8.2 GB", cases[i].keys[0], cases[i].keys[1],
                              "HINT: lower"};
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
            ck_assert_msg(strstr(msg, want[k]), "'%s' not in: %s", want[k], msg);
        char *after[2] = {slurp(tt_test_path("run/config.json")),
                          slurp(tt_test_path("run/metrics.jsonl"))};
        ck_assert_str_eq(after[0], before[0]);
        ck_assert_str_eq(after[1], before[1]);
        free(after[0]), free(after[1]);
    }
    unsetenv("TT_MEM_ROOT");
    free(before[0]), free(before[1]);
}
END_TEST

static void load(tt_run *r, const char *const *sets, int n_sets)
{
    char err[TT_CONFIG_ERR];
    *r = (tt_run){0};
    ck_assert_msg(!tt_config_load(&r->cfg, tt_test_path("cfg.json"), sets, n_sets, err,
                                  sizeof err), "%s", err);
    ck_assert_msg(!tt_corpus_load(&r->data, &r->cfg, err, sizeof err), "%s", err);
}

/* The parameter count matches the model tt_run_init builds (learned positions, pre-LN, the
 * sinusoidal table counted with the parameters); a d_model of 65536 overflows nothing. */
START_TEST(test_need_counts_the_model)
{
    static const char *const variants[][2] = {
        {"model.positional=\"sinusoidal\"", "model.norm=\"post\""},
        {"model.positional=\"learned\"", "model.norm=\"pre\""}};
    const tt_backend *be = tt_backend_get(TT_CPU);
    char err[TT_CONFIG_ERR];
    for (int i = 0; i < 2; i++) {
        tt_run r;
        load(&r, variants[i], 2);
        tt_mem_need n;
        tt_mem_need_for(&n, &r.cfg, &r.data, be, false);
        ck_assert_msg(!tt_run_init(&r, err, sizeof err), "%s", err);
        double R = sizeof(real), P = (double)r.model.params.numel;
        double table = i ? 0 : (double)r.cfg.model.max_len * r.cfg.model.d_model;
        ck_assert_double_eq(n.part[TT_MEM_PARAMS], R * (P + table));
        ck_assert_double_eq(n.part[TT_MEM_MOMENTS], 2 * R * P);
        ck_assert_double_eq(n.part[TT_MEM_ARENA], (double)r.arena.cap);
        ck_assert_double_eq(n.device, 0);
        ck_assert_double_eq(n.part[TT_MEM_DEVICE_RUNTIME], 0); /* no device memory */
        ck_assert(n.host > n.part[TT_MEM_PARAMS] * 4);
        tt_run_free(&r);
    }
    tt_run r;
    const char *big[] = {"model.d_model=65536", "model.n_heads=1", "data.seq_len=4096",
                         "train.batch_size=1024", "model.d_ff=262144"};
    load(&r, big, 5);
    tt_mem_need n;
    tt_mem_need_for(&n, &r.cfg, &r.data, be, true);
    /* 2 layers of 4 d^2 + 2 d d_ff reals: 1.03e11 parameters; the values, gradients and
     * moments on the device */
    const double R = sizeof(real);
    ck_assert(isfinite(n.device) && n.part[TT_MEM_PARAMS] > R * 1.03e11);
    ck_assert(n.device > 4 * R * 1.03e11);
    ck_assert(n.on_device[TT_MEM_ARENA] && !n.on_device[TT_MEM_TAPE]);
    /* cuBLAS's two workspaces (one a stream) and the step's graph: counted on the device */
    ck_assert(n.on_device[TT_MEM_DEVICE_RUNTIME] && n.part[TT_MEM_DEVICE_RUNTIME] == 96 << 20);
    tt_run_free(&r);
}
END_TEST

/* cgroup v2: the parent's limit is the tightest (the leaf says max); v1: the process's path
 * is not shown, so the mount's root counts; v1's "no limit" number is no limit. */
START_TEST(test_fake_cgroup_trees)
{
    put_deep("v2/proc/meminfo", "MemAvailable: 64000000 kB\n");
    put_deep("v2/proc/self/cgroup", "0::/a/b\n");
    put_deep("v2/sys/fs/cgroup/a/memory.max", "100000000\n");
    put_deep("v2/sys/fs/cgroup/a/memory.current", "60000000\n");
    put_deep("v2/sys/fs/cgroup/a/b/memory.max", "max\n");
    put_deep("v2/sys/fs/cgroup/a/b/memory.current", "50000000\n");
    tt_mem_avail a;
    tt_mem_avail_read(&a, tt_test_path("v2"));
    ck_assert_double_eq(a.meminfo, 64000000.0 * 1024);
    ck_assert_double_eq(a.cgroup, 40000000);
    ck_assert_double_eq(a.host, 40000000);

    put_deep("v1/proc/self/cgroup", "5:cpu:/\n4:memory:/docker/abc\n0::/\n");
    put_deep("v1/sys/fs/cgroup/memory/memory.limit_in_bytes", "300000000\n");
    put_deep("v1/sys/fs/cgroup/memory/memory.usage_in_bytes", "100000000\n");
    tt_mem_avail_read(&a, tt_test_path("v1"));
    ck_assert_double_eq(a.meminfo, -1);
    ck_assert_double_eq(a.cgroup, 200000000);
    ck_assert_double_eq(a.host, 200000000);
    put_deep("v1/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    tt_mem_avail_read(&a, tt_test_path("v1"));
    ck_assert_double_eq(a.cgroup, -1);

    /* ./train under the v2 tree: the small config needs more than 40 MB (the runtime
     * allowance alone is 80 MiB, 83.9 MB) */
    setenv("TT_MEM_ROOT", tt_test_path("v2"), 1);
    char msg[4096];
    int rc = tt_test_train(msg, sizeof msg, tt_test_path("cfg.json"), NULL);
    unsetenv("TT_MEM_ROOT");
    ck_assert_msg(rc == 2, "exit %d: %s", rc, msg);
    ck_assert_msg(strstr(msg, "may use 40.0 MB (MemAvailable 65.5 GB; cgroup limit 40.0 MB left"),
                  "%s", msg);
    ck_assert_msg(strstr(msg, "runtime allowance 83.9 MB"), "%s", msg);
    ck_assert_msg(strstr(msg, "takes (64 MiB and 16 MiB a thread)") && strstr(msg, "lower threads"),
                  "%s", msg);
}
END_TEST

/* RLIMIT_AS: refused with the limit in force, accepted without it. A child of our own sets
 * the limit (so the runner's process keeps its own, with or without CK_FORK). */
START_TEST(test_rlimit_as)
{
    tt_run r;
    load(&r, NULL, 0);
    char err[2048];
    ck_assert_msg(!tt_run_check_memory(&r.cfg, &r.data, err, sizeof err), "%s", err);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        double vm = -1;
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "VmSize:", 7)) vm = atof(line + 7) * 1024;
        if (f) fclose(f);
        /* 30 MB more than is mapped now: less than the config's 80 MB runtime allowance */
        struct rlimit rl = {.rlim_cur = (rlim_t)vm + (30u << 20), .rlim_max = RLIM_INFINITY};
        if (vm < 0 || setrlimit(RLIMIT_AS, &rl)) _exit(20);
        int rc = tt_run_check_memory(&r.cfg, &r.data, err, sizeof err);
        _exit(rc == -1 && strstr(err, "RLIMIT_AS 3") && strstr(err, " left)") ? 0 : 21);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
    tt_run_free(&r);
}
END_TEST

#ifndef TT_DOUBLE
/* ./train beside the runner: BUILD/train, or the checkout's ./train for the builds that link
 * it there (the runner in build/, or in build/cuda/ for make CUDA=1); "" when none is built. */
static void train_binary(char *bin, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert(n > 0);
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    static const char *const up[] = {"", "/..", "/../.."};
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        snprintf(bin, len, "%s%s/train", self, up[i]);
        if (access(bin, X_OK) == 0) return;
    }
    bin[0] = '\0';
}

/* The real ./train on cfg.json, run in folder dir, stderr into err.txt, with none of
 * tt_blas_env's own variables (its re-exec is what is tested) and the environment variable
 * `var` set to `val` (NULL: unset), 2 threads; under `ulimit -v kb` when kb > 0.
 * SIGKILLed after 60 s. The exit status, or -1 when it had to be killed (a hang). */
static int train_child(const char *bin, long kb, const char *var, const char *val,
                       const char *dir)
{
    char set_dir[1200];
    snprintf(set_dir, sizeof set_dir, "output.dir=%s", tt_test_path(dir));
    fflush(NULL);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        struct rlimit rl = {.rlim_cur = (rlim_t)kb * 1024, .rlim_max = RLIM_INFINITY};
        FILE *out = freopen("/dev/null", "w", stdout);
        FILE *e = freopen(tt_test_path("err.txt"), "w", stderr);
        unsetenv("TT_BLAS_REEXEC");
        unsetenv("TT_BLAS_PICKED");
        unsetenv("TT_BLAS_AUTO");
        int env = val ? setenv(var, val, 1) : unsetenv(var);
        if (!out || !e || env || (kb > 0 && setrlimit(RLIMIT_AS, &rl))) _exit(20);
        execl(bin, "train", tt_test_path("cfg.json"), "--set", set_dir, "--set", "threads=2",
              (char *)NULL);
        _exit(21);
    }
    int status = 0;
    for (int i = 0; i < 1200; i++) { /* 60 s */
        pid_t got = waitpid(child, &status, WNOHANG);
        ck_assert(got >= 0);
        if (got == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    kill(child, SIGKILL);
    ck_assert(waitpid(child, &status, 0) == child);
    return -1;
}

/* run.json's string `key` in folder dir ("" when absent), into buf */
static const char *record_field(const char *dir, const char *key, char *buf, size_t len)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/run.json", tt_test_path(dir));
    char *text = slurp(p);
    cJSON *root = cJSON_Parse(text);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(root);
    free(text);
    return buf;
}

/* A set OPENBLAS_CORETYPE is never replaced (the run records it, no line said); unset, the
 * program runs OpenBLAS's own pick unless a better set suits this CPU (tt_blas_core_better):
 * then it runs that one, says so once, and run.json records both. Where OpenBLAS knows this
 * CPU the second half is skipped, with its pick named. */
START_TEST(test_blas_core_chosen)
{
    char bin[PATH_MAX + 16], core[64], picked[64];
    train_binary(bin, sizeof bin);
    ck_assert_msg(bin[0], "./train is not built beside the runner. HINT: make train");
    ck_assert_int_eq(train_child(bin, 0, "OPENBLAS_CORETYPE", "Prescott", "set"), 0);
    char *msg = slurp(tt_test_path("err.txt"));
    ck_assert_msg(!strstr(msg, "blas:"), "%s", msg);
    free(msg);
    ck_assert_str_eq(record_field("set", "blas_core", core, sizeof core), "Prescott");
    ck_assert_str_eq(record_field("set", "blas_core_openblas_picked", picked, sizeof picked), "");
    ck_assert_int_eq(train_child(bin, 0, "OPENBLAS_CORETYPE", NULL, "unset"), 0);
    msg = slurp(tt_test_path("err.txt"));
    record_field("unset", "blas_core", core, sizeof core);
    record_field("unset", "blas_core_openblas_picked", picked, sizeof picked);
    tt_cpu_isa isa;
    tt_cpu_isa_read(&isa);
    if (!*picked) {
        ck_assert_msg(!tt_blas_core_better(&isa, core) && !strstr(msg, "blas:"), "%s: %s", core,
                      msg);
        printf("SKIP: budget's kernel choice: OpenBLAS knows this CPU (it picks %s)\n", core);
    } else {
        const char *want = tt_blas_core_better(&isa, picked);
        ck_assert_msg(want && !strcmp(core, want), "OpenBLAS picked %s, ran %s", picked, core);
        char line[256];
        snprintf(line, sizeof line, "blas: OpenBLAS picked its %s kernels for this CPU, which it "
                 "does not know; running %s instead", picked, core);
        ck_assert_msg(strstr(msg, line) && strstr(msg, "TT_BLAS_AUTO=0"), "%s", msg);
    }
    free(msg);
}
END_TEST

/* A grid of `ulimit -v` values around what the run needs (its HINT names the figure): below
 * it ./train exits 2 at once naming RLIMIT_AS, at and above it the run finishes; never a hang
 * (OpenBLAS retries a buffer it cannot map forever, and SIGTERM does not stop it). */
START_TEST(test_ulimit_grid)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("SKIP: budget's ulimit grid: an ASan build maps terabytes of shadow memory, so it "
           "cannot run under RLIMIT_AS at all\n");
    return;
#endif
#if defined(TT_WITH_CUDA) && !defined(TT_CUDA_EMULATED)
    /* the ./train beside this runner is the same CUDA build (make CUDA=1 makes both) */
    printf("SKIP: budget's ulimit grid: a CUDA build's ./train maps cuBLAS and the CUDA runtime "
           "before main, so under a low RLIMIT_AS the loader refuses it (exit 127, its own "
           "message) before the program can say anything\n");
    return;
#endif
    char bin[PATH_MAX + 16];
    train_binary(bin, sizeof bin);
    ck_assert_msg(bin[0], "./train is not built beside the runner. HINT: make train");
    /* a user's OPENBLAS_NUM_THREADS=2 too: its thread could not map its buffer at load */
    int rc = train_child(bin, 100000, "OPENBLAS_NUM_THREADS", "2", "low");
    char *msg = slurp(tt_test_path("err.txt"));
    ck_assert_msg(rc == 2, "ulimit -v 100000: exit %d: %s", rc, msg);
    const char *at = strstr(msg, "raise the address-space limit to `ulimit -v ");
    ck_assert_msg(at && strstr(msg, "of address space (OpenBLAS buffers 268.4 MB") &&
                  strstr(msg, "RLIMIT_AS ") && strstr(msg, "(it is 100000)"), "%s", msg);
    const long need = atol(at + strlen("raise the address-space limit to `ulimit -v "));
    ck_assert_msg(need > 300000 && need < 2000000, "%ld kB: %s", need, msg);
    free(msg);
    const long grid[] = {need / 2, need - 40000, need - 4000, need, need + 4000, need + 40000};
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) {
        char dir[32];
        snprintf(dir, sizeof dir, "run%zu", i);
        rc = train_child(bin, grid[i], "OPENBLAS_NUM_THREADS", NULL, dir);
        msg = slurp(tt_test_path("err.txt"));
        ck_assert_msg(rc != -1, "ulimit -v %ld (the run needs %ld): hung, killed after 60 s",
                      grid[i], need);
        ck_assert_msg(rc == (grid[i] < need ? 2 : 0), "ulimit -v %ld (needs %ld): exit %d: %s",
                      grid[i], need, rc, msg);
        if (rc == 2) ck_assert_msg(strstr(msg, "HINT: raise the address-space limit"), "%s", msg);
        free(msg);
    }
}
END_TEST
#endif

/* The device's memory: the CPU and the guard device have none of their own; a GPU reports
 * free <= total (skipped without one). */
START_TEST(test_device_mem_info)
{
    size_t free_b = 1, total_b = 1;
    ck_assert_int_eq(tt_cpu_backend.mem_info(&free_b, &total_b), -1);
    ck_assert_int_eq(tt_guard_backend.mem_info(&free_b, &total_b), -1);
#ifdef TT_WITH_CUDA
    char err[512];
    const tt_backend *be = tt_backend_open(TT_CUDA, err, sizeof err);
    if (!be) return; /* a CUDA build without a device */
    ck_assert_int_eq(be->mem_info(&free_b, &total_b), 0);
    ck_assert(total_b > 0 && free_b <= total_b);
#endif
}
END_TEST

Suite *budget_suite(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("budget");
    tcase_add_checked_fixture(tc, setup, tt_tmp_teardown);
    tcase_add_test(tc, test_issue_configs_exit_2);
    tcase_add_test(tc, test_need_counts_the_model);
    tcase_add_test(tc, test_fake_cgroup_trees);
    tcase_add_test(tc, test_rlimit_as);
    tcase_add_test(tc, test_device_mem_info);
#ifndef TT_DOUBLE /* ./train is float32 */
    tcase_add_test(tc, test_ulimit_grid);
    tcase_add_test(tc, test_blas_core_chosen);
    tcase_set_timeout(tc, 180);
#endif
    suite_add_tcase(s, tc);
    return s;
}
