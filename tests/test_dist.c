/* test_dist.c: data-parallel training (train/run/dist.h).
 * In every build: a share of a batch draws exactly the whole batch's dropout masks on its rows
 * (plain, fused with ReLU and GELU, the attention weights'), for shares that start inside a
 * Philox block too, and the rng cursor ends where the whole draw's does.
 * In an MPI build (make MPI=1; ./train linked against MPI, mpirun on PATH), ./train under
 * mpirun against ./train alone: the first step's summed gradients (--dump-first-step), tiny's
 * validation loss per epoch over 2 epochs with dropout, a 2-rank checkpoint resumed by one
 * process, and the refusals: ranks given different configs, a batch that does not split, a
 * rank killed mid-run (every rank stops, no hang). Without MPI those print SKIP and pass. */
#include "testutil.h"

#include "tensor/common.h"
#include "tensor/safetensors.h"
#include "train/run/dist.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* x [B, n] through op on the whole batch, then on each share of `parts` (a graph whose rng
 * starts where the whole one did): the share's output must be the whole output's rows, bit
 * for bit, and the cursor must end at the same place. */
enum { OP_DROPOUT, OP_RELU, OP_GELU, OP_SDPA, N_OPS };
static const char *const OP_NAMES[] = {"dropout", "relu_dropout", "gelu_dropout", "sdpa"};

static tt_var *apply(tt_graph *g, int op, const real *x, int B, int T, int D)
{
    tt_var *v = tt_var_from_host(g, tt_shape3(B, T, D), TT_REAL, x, false);
    const real p = R(0.3);
    switch (op) {
    case OP_DROPOUT: return tt_dropout(g, v, p);
    case OP_RELU: return tt_relu_dropout_(g, v, p);
    case OP_GELU: return tt_gelu_dropout(g, v, p);
    default: break;
    }
    tt_sdpa_opts o = {.scale = R(0.5), .causal = false, .pad = NULL, .dropout = p};
    tt_var *k = tt_var_from_host(g, tt_shape3(B, T, D), TT_REAL, x + (int64_t)B * T * D, false);
    tt_var *q = tt_var_from_host(g, tt_shape3(B, T, D), TT_REAL, x + 2 * (int64_t)B * T * D,
                                 false);
    return tt_sdpa(g, q, k, v, 1, &o, NULL);
}

START_TEST(test_mask_shares)
{
    /* T * D odd: a share of 1, 3, 5 rows starts inside a Philox block */
    const int B = 12, T = 3, D = 5, n = B * T * D;
    real *x = tt_test_alloc(3 * (int64_t)n), *whole = tt_test_alloc(n);
    real *share = tt_test_alloc(n);
    tt_test_normal(x, 3 * (int64_t)n, 7);
    for (int op = 0; op < N_OPS; op++) {
        tt_test_graph t;
        tt_test_graph_init(&t, 1 << 20, 42);
        tt_rng_take(&t.rng, 4); /* a cursor past zero */
        const tt_rng start = t.rng;
        tt_var *y = apply(&t.g, op, x, B, T, D);
        t.g.be->to_host(whole, y->val.data, (size_t)n * sizeof(real));
        const uint64_t end = t.rng.counter;
        tt_test_graph_free(&t);
        for (int parts = 2; parts <= 12; parts++) {
            if (B % parts) continue;
            const int b = B / parts, m = b * T * D;
            for (int part = 0; part < parts; part++) {
                tt_test_graph_init(&t, 1 << 20, 42);
                t.rng = start;
                t.g.part = part, t.g.parts = parts;
                /* the share's inputs: its rows of each of x's three tensors */
                real *xs = tt_test_alloc(3 * (int64_t)m);
                for (int k = 0; k < 3; k++)
                    memcpy(xs + (int64_t)k * m, x + (int64_t)k * n + (int64_t)part * m,
                           (size_t)m * sizeof(real));
                y = apply(&t.g, op, xs, b, T, D);
                t.g.be->to_host(share, y->val.data, (size_t)m * sizeof(real));
                ck_assert_msg(!memcmp(share, whole + (int64_t)part * m, (size_t)m * sizeof(real)),
                              "%s: share %d of %d differs from the whole batch's rows",
                              OP_NAMES[op], part, parts);
                ck_assert_msg(t.rng.counter == end, "%s: share %d of %d: cursor %llu, whole %llu",
                              OP_NAMES[op], part, parts, (unsigned long long)t.rng.counter,
                              (unsigned long long)end);
                free(xs);
                tt_test_graph_free(&t);
            }
        }
    }
    free(x);
    free(whole);
    free(share);
}
END_TEST

/* ---- ./train under mpirun (MPI builds) ------------------------------------------------------ */

#define MPIRUN                                                                                 \
    "mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"

/* Whether these tests can run here: an MPI build whose ./train is the MPI one, and mpirun. */
static bool mpi_ready(void)
{
    if (!tt_dist_built()) {
        printf("SKIP: not an MPI build (make MPI=1 runners all; mpirun runs ./train)\n");
        return false;
    }
    ck_assert_msg(access("build/.train-mpi-cpu", F_OK) == 0 ||
                      access("build/.train-mpi-cuda", F_OK) == 0,
                  "./train is not the MPI build (no build/.train-mpi-*). HINT: make MPI=1 all");
    ck_assert_msg(system("command -v mpirun >/dev/null") == 0,
                  "mpirun is not on PATH. HINT: make deps (openmpi-bin)");
    return true;
}

/* Runs a shell command line with a time limit, its stderr into the test's folder; the exit
 * status (124 when the limit was reached). */
static int sh(int limit_s, const char *fmt, ...) TT_PRINTF(2, 3);
static int sh(int limit_s, const char *fmt, ...)
{
    char cmd[4096], line[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "timeout -k 5 %d sh -c '%s' >%s 2>%s", limit_s, cmd,
             tt_test_path("stdout"), tt_test_path("stderr"));
    int rc = system(line);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/* The test folder's stderr (the last command's), for messages. */
static const char *stderr_text(void)
{
    static char buf[4096];
    FILE *f = fopen(tt_test_path("stderr"), "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    return buf;
}

/* Each epoch's valid_loss of a run's metrics.jsonl, into v; returns how many. */
static int valid_losses(const char *dir, double *v, int max)
{
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: missing", path);
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"valid_loss\": ");
        if (p) v[n++] = strtod(p + 14, NULL);
    }
    fclose(f);
    return n;
}

#define TINY "./train configs/tiny.json --set threads=1 --set model.dropout=0.1"

/* The first step's gradients summed over 2 ranks equal one process's within 1e-6 relative
 * (each tensor, 2-norm); the inputs put back together equal one process's batch exactly. */
START_TEST(test_mpi_first_step)
{
    if (!mpi_ready()) return;
    const char *one = tt_test_path("one.safetensors"), *two = tt_test_path("two.safetensors");
    ck_assert_msg(sh(120, TINY " --dump-first-step %s", one) == 0, "%s", stderr_text());
    ck_assert_msg(sh(120, MPIRUN " -np 2 " TINY " --dump-first-step %s", two) == 0, "%s",
                  stderr_text());
    tt_st_file a, b;
    char err[512];
    ck_assert_msg(tt_st_load(&a, one, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(tt_st_load(&b, two, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(a.n, b.n);
    double worst = 0;
    int grads = 0;
    for (int i = 0; i < a.n; i++) {
        const tt_st_entry *ea = &a.entries[i], *eb = tt_st_find(&b, ea->name);
        ck_assert_msg(eb && eb->numel == ea->numel, "%s: missing or resized", ea->name);
        if (!strncmp(ea->name, "input.", 6)) {
            ck_assert_msg(ea->nbytes == eb->nbytes && !memcmp(ea->data, eb->data, ea->nbytes),
                          "%s differs", ea->name);
            continue;
        }
        real *x = tt_test_alloc(ea->numel), *y = tt_test_alloc(ea->numel);
        ck_assert(tt_st_read_real(ea, x, ea->numel, err, sizeof err) == 0);
        ck_assert(tt_st_read_real(eb, y, eb->numel, err, sizeof err) == 0);
        double rel = tt_rel_err(y, x, ea->numel);
        if (!strncmp(ea->name, "grad.", 5)) worst = fmax(worst, rel), grads++;
        ck_assert_msg(rel <= 1e-6, "%s: 2 ranks vs 1 process: relative error %.3g", ea->name,
                      rel);
        free(x);
        free(y);
    }
    ck_assert_msg(grads > 0, "no grad.* tensors in the dump");
    printf("mpi first step: %d gradient tensors, largest relative difference %.3g\n", grads,
           worst);
    tt_st_close(&a);
    tt_st_close(&b);
}
END_TEST

/* tiny, 2 epochs, dropout 0.1: each evaluation's validation loss within 1e-4 relative of one
 * process's (the masks are the whole batch's, so only the order of sums differs). */
START_TEST(test_mpi_tiny_two_epochs)
{
    if (!mpi_ready()) return;
    char d1[256], d2[256];
    tt_test_mkdir(d1, sizeof d1);
    tt_test_mkdir(d2, sizeof d2);
    ck_assert_msg(sh(300, TINY " --set train.epochs=2 --set output.dir=%s --overwrite", d1) == 0,
                  "%s", stderr_text());
    ck_assert_msg(sh(300, MPIRUN " -np 2 " TINY " --set train.epochs=2 --set output.dir=%s "
                     "--overwrite", d2) == 0, "%s", stderr_text());
    double a[8], b[8], worst = 0;
    int n = valid_losses(d1, a, 8);
    ck_assert_int_eq(n, 3); /* epoch 0 (before training), 1, 2 */
    ck_assert_int_eq(valid_losses(d2, b, 8), n);
    for (int i = 0; i < n; i++) {
        double rel = fabs(b[i] - a[i]) / fabs(a[i]);
        worst = fmax(worst, rel);
        ck_assert_msg(rel <= 1e-4, "epoch %d: valid_loss %.9g on 2 ranks, %.9g on one (%.3g)", i,
                      b[i], a[i], rel);
    }
    printf("mpi tiny 2 epochs: valid_loss %.9g (1 process) vs %.9g (2 ranks), largest relative "
           "gap %.3g\n", a[n - 1], b[n - 1], worst);
}
END_TEST

/* A checkpoint written by 2 ranks resumes on one process: its last epoch's validation loss is
 * the uninterrupted 2-rank run's within 1e-4 relative. */
START_TEST(test_mpi_resume_two_to_one)
{
    if (!mpi_ready()) return;
    char d[256];
    tt_test_mkdir(d, sizeof d);
    ck_assert_msg(sh(300, MPIRUN " -np 2 " TINY " --set train.epochs=2 --set "
                     "output.checkpoint_every=1 --set output.dir=%s --overwrite", d) == 0, "%s",
                  stderr_text());
    double full[8], resumed[8];
    ck_assert_int_eq(valid_losses(d, full, 8), 3);
    ck_assert_msg(sh(300, TINY " --set train.epochs=2 --set output.checkpoint_every=1 --set "
                     "output.dir=%s --resume %s/checkpoints/epoch_001.safetensors", d, d) == 0,
                  "%s", stderr_text());
    ck_assert_int_eq(valid_losses(d, resumed, 8), 3);
    double rel = fabs(resumed[2] - full[2]) / fabs(full[2]);
    ck_assert_msg(rel <= 1e-4, "epoch 2: %.9g resumed on 1 process, %.9g on 2 ranks (%.3g)",
                  resumed[2], full[2], rel);
}
END_TEST

/* Ranks given different configs stop at start-up, exit status 2, with one message. */
START_TEST(test_mpi_config_mismatch)
{
    if (!mpi_ready()) return;
    char d[256];
    tt_test_mkdir(d, sizeof d);
    int rc = sh(120, MPIRUN " -np 1 " TINY " --set output.dir=%s --overwrite : -np 1 " TINY
                " --set output.dir=%s --overwrite --set train.lr=0.001", d, d);
    ck_assert_msg(rc == 2, "exit %d, want 2: %s", rc, stderr_text());
    ck_assert_msg(strstr(stderr_text(), "rank 1 was given a different config"), "%s",
                  stderr_text());
    char path[512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", d);
    ck_assert_msg(access(path, F_OK) != 0, "a refused run wrote %s", path);
}
END_TEST

/* train.batch_size 32 over 3 ranks: exit status 2 at start-up, the rule in the message. */
START_TEST(test_mpi_batch_split)
{
    if (!mpi_ready()) return;
    int rc = sh(120, MPIRUN " -np 3 " TINY " --set output.dir=%s", tt_test_path("run"));
    ck_assert_msg(rc == 2, "exit %d, want 2: %s", rc, stderr_text());
    ck_assert_msg(strstr(stderr_text(), "train.batch_size: 32 rows do not split into 3"), "%s",
                  stderr_text());
}
END_TEST

/* One rank killed (SIGKILL) in the middle of training: mpirun ends every rank and exits with a
 * failure well within the limit, never hangs. */
START_TEST(test_mpi_rank_dies)
{
    if (!mpi_ready()) return;
    /* a run long enough to be killed in the middle: the newest process whose command line
     * starts with ./train and names this test's folder is a rank (not mpirun, not a shell);
     * exit 3 when there is none, so the test cannot pass without killing one */
    int rc = sh(90, "(" MPIRUN " -np 2 " TINY " --set train.epochs=200 --set output.dir=%s "
                ">/dev/null 2>&1; echo $? >%s) & sleep 3; pkill -KILL -n -f "
                "\"^[.]/train .*output.dir=%s\" || exit 3; wait", tt_test_path("run"),
                tt_test_path("rc"), tt_test_path("run"));
    ck_assert_msg(rc != 3, "no rank of the job was found to kill");
    ck_assert_msg(rc == 0, "the job did not end within 90 s after a rank was killed (exit %d)",
                  rc);
    FILE *f = fopen(tt_test_path("rc"), "r");
    int job = -1;
    ck_assert_msg(f && fscanf(f, "%d", &job) == 1, "no exit status of mpirun");
    fclose(f);
    ck_assert_msg(job != 0, "mpirun exited 0 although a rank was killed");
}
END_TEST

/* The last command's stderr: one "interrupted (SIG)" line, whole, from rank 0 (its resume
 * command, "mpirun -np 2 ./train ... --resume CHECKPOINT", ends the line), and a checkpoint
 * that exists. The command into cmd; the epoch a resume ends the interrupted one at. */
static int resume_line(const char *sig, char *cmd, size_t len)
{
    char want[64];
    snprintf(want, sizeof want, "train: interrupted (%s) at ", sig);
    const char *said = stderr_text(), *first = strstr(said, want);
    ck_assert_msg(first && !strstr(first + 8, "interrupted"), "want one \"%s\" line: %s", want,
                  said);
    const char *from = strstr(first, "; resume with: mpirun -np 2 ./train configs/tiny.json ");
    const char *end = from ? strchr(from, '\n') : NULL;
    ck_assert_msg(from && end && !strncmp(end - 12, ".safetensors", 12), "not whole: %s", said);
    snprintf(cmd, len, "%.*s", (int)(end - from - 15), from + 15);
    char path[512];
    ck_assert(sscanf(strstr(cmd, " --resume ") + 10, "%511s", path) == 1);
    ck_assert_msg(access(path, F_OK) == 0, "%s: not written", path);
    /* to the end of the interrupted epoch ("at step N, epoch E step s/S"), or one epoch more
     * when the signal came at an epoch's end ("at step N, the end of epoch E") */
    int epoch = 0;
    const char *at = strstr(first, ", epoch "), *at_end = strstr(first, ", the end of epoch ");
    bool parsed = at && at < from ? sscanf(at, ", epoch %d", &epoch) == 1
                                  : at_end && sscanf(at_end, ", the end of epoch %d", &epoch) == 1;
    ck_assert_msg(parsed && epoch > 0, "no epoch in: %s", first);
    return at && at < from ? epoch : epoch + 1;
}

/* SIGTERM to mpirun mid-run: mpirun passes SIGTERM on to every rank, they stop after the same
 * step, rank 0 writes the step's checkpoint and says so once, whole; mpirun itself then exits
 * 1, whatever the ranks return (Open MPI 4.1). One process resumes from the checkpoint. */
START_TEST(test_mpi_sigterm)
{
    if (!mpi_ready()) return;
    const char *run = tt_test_path("run");
    int rc = sh(90, MPIRUN " -np 2 " TINY " --set train.epochs=200 --set output.dir=%s & "
                "job=$!; sleep 3; kill -TERM $job; wait $job", run);
    ck_assert_msg(rc == 1, "mpirun exit %d after SIGTERM, want 1: %s", rc, stderr_text());
    char cmd[1024];
    const int epoch = resume_line("SIGTERM", cmd, sizeof cmd);
    rc = sh(120, TINY " --set train.epochs=%d --set output.dir=%s --resume %s", epoch, run,
            strstr(cmd, " --resume ") + 10);
    ck_assert_msg(rc == 0, "resume on one process: exit %d: %s", rc, stderr_text());
    double v[400];
    ck_assert_int_eq(valid_losses(run, v, 400), epoch + 1); /* epoch 0's line, then each */
}
END_TEST

/* SIGTERM to the ranks themselves (mpirun's children), as a scheduler may send it: mpirun exits
 * 143, the ranks' status, with the one whole line; that line's command, run as it is (with
 * train.epochs to end at the interrupted epoch), resumes on 2 ranks. */
START_TEST(test_mpi_sigterm_ranks)
{
    if (!mpi_ready()) return;
    const char *run = tt_test_path("run");
    int rc = sh(90, MPIRUN " -np 2 " TINY " --set train.epochs=200 --set output.dir=%s & "
                "job=$!; sleep 3; kill -TERM $(pgrep -P $job); wait $job", run);
    ck_assert_msg(rc == 143, "mpirun exit %d after SIGTERM to the ranks: %s", rc, stderr_text());
    char cmd[1024];
    const int epoch = resume_line("SIGTERM", cmd, sizeof cmd);
    rc = sh(120, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
            "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
            "%s --set train.epochs=%d", cmd, epoch);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", cmd, rc, stderr_text());
    double v[400];
    ck_assert_int_eq(valid_losses(run, v, 400), epoch + 1);
}
END_TEST

/* SIGHUP to rank 1 alone: both ranks stop after the same step with that signal (rank 0 caught
 * none), so mpirun exits 129, and rank 0 says SIGHUP once. */
START_TEST(test_mpi_sighup_one_rank)
{
    if (!mpi_ready()) return;
    int rc = sh(90, MPIRUN " -np 2 " TINY " --set train.epochs=200 --set output.dir=%s & "
                "job=$!; sleep 3; kill -HUP $(pgrep -n -P $job); wait $job",
                tt_test_path("run"));
    ck_assert_msg(rc == 129, "mpirun exit %d after SIGHUP to rank 1: %s", rc, stderr_text());
    char cmd[1024];
    resume_line("SIGHUP", cmd, sizeof cmd);
}
END_TEST

Suite *dist_suite(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("shares");
    tcase_add_test(tc, test_mask_shares);
    suite_add_tcase(s, tc);
    tc = tcase_create("mpi");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_mpi_first_step);
    tcase_add_test(tc, test_mpi_tiny_two_epochs);
    tcase_add_test(tc, test_mpi_resume_two_to_one);
    tcase_add_test(tc, test_mpi_config_mismatch);
    tcase_add_test(tc, test_mpi_batch_split);
    tcase_add_test(tc, test_mpi_rank_dies);
    tcase_add_test(tc, test_mpi_sigterm);
    tcase_add_test(tc, test_mpi_sigterm_ranks);
    tcase_add_test(tc, test_mpi_sighup_one_rank);
    suite_add_tcase(s, tc);
    return s;
}
