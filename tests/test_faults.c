/* test_faults.c: what a run survives (issue 14). SIGTERM at a step mid-epoch: exit 143, a
 * step_ checkpoint, and its resume ends bit for bit as the uninterrupted run (also after a
 * SIGTERM from outside at random points, and a study stops at once); SIGINT: 130, and
 * a second SIGINT while the run stops ends it at once with the earlier files intact; SIGHUP
 * (raised twice, or a pty hung up): 129 and a step_ checkpoint, nothing under nohup; stdout a
 * pipe whose reader left: 141 and the epoch's checkpoint, 0 when the run was done; SIGKILL
 * at seeded random points: every checkpoint left resumes, every metrics line parses, and a
 * resume in the folder repeats no step; a disk that fills up (a small tmpfs, where the test
 * may mount one) and a metrics.jsonl that is /dev/full end with exit 2, never 0; numbers that
 * are not finite are written as null. ./train runs in process (hooks deliver the signals at a
 * precise step) or in a forked child where the signal must end the process. */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */

#include "testutil.h"

#include "train/cli.h"
#include "train/report/render.h"
#include "train/run/run.h"
#include "train_testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *CONFIG =
    "{\n"
    "  \"seed\": 3, \"threads\": 1,\n"
    "  \"data\": {\"task\": \"tag\", \"seq_len\": 6, \"probes\": [\"a x p a\"]},\n"
    "  \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 1, \"d_ff\": 32,\n"
    "            \"dropout\": 0.1},\n"
    "  \"train\": {\"epochs\": 2, \"batch_size\": 8, \"lr\": 0.003, \"schedule\": \"cosine\",\n"
    "            \"warmup_steps\": 3},\n"
    "  \"output\": {\"dir\": \"%s/run\", \"checkpoint_every\": 1}\n"
    "}\n";
enum { STEPS_PER_EPOCH = 11 }; /* 84 training lines in batches of 8 */

static void setup(void)
{
    tt_test_setup_tag_run(CONFIG);
}

static void teardown(void)
{
    tt_train_test_hooks(NULL, NULL, NULL);
    umount2(tt_test_path("small"), MNT_DETACH); /* test_disk_full's tmpfs, if a check failed */
    tt_tmp_teardown();
}

static const char *path(const char *rel) { return tt_test_path(rel); }

static const char *out(const char *name) { return tt_test_output_dir(name); }

static bool exists(const char *rel) { return access(path(rel), F_OK) == 0; }

/* The hooks' plan: at optimizer step `at`, raise `sig`; when the run stops, raise `again`
 * (0: nothing). */
typedef struct plan {
    int64_t at;
    int sig, again;
} plan;

static void at_step(tt_run *r, double loss, double grad_norm, void *ctx)
{
    (void)loss, (void)grad_norm;
    const plan *p = ctx;
    if (r->step == p->at) raise(p->sig);
}

static void at_stop(tt_run *r, double loss, double grad_norm, void *ctx)
{
    (void)r, (void)loss, (void)grad_norm;
    const plan *p = ctx;
    if (p->again) raise(p->again);
}

/* Every line of run/metrics.jsonl is whole and parses as a JSON object; no training step
 * appears twice, nor an epoch's evaluation. The number of lines. */
static int check_metrics(const char *run)
{
    char p[1200], err[512];
    snprintf(p, sizeof p, "%s/metrics.jsonl", path(run));
    char *text = tt_render_slurp(p, err, sizeof err);
    ck_assert_msg(text, "%s", err);
    ck_assert_msg(!*text || text[strlen(text) - 1] == '\n', "%s: the last line is cut short", p);
    static char seen_step[4096], seen_eval[512];
    memset(seen_step, 0, sizeof seen_step), memset(seen_eval, 0, sizeof seen_eval);
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), n++) {
        cJSON *o = cJSON_Parse(line);
        ck_assert_msg(cJSON_IsObject(o), "%s line %d does not parse: %s", p, n + 1, line);
        int step = cJSON_GetObjectItem(o, "step")->valueint;
        int epoch = cJSON_GetObjectItem(o, "epoch")->valueint;
        bool eval = cJSON_GetObjectItem(o, "valid_loss") != NULL;
        ck_assert_msg(step >= 0 && step < 4096 && epoch >= 0 && epoch < 512, "%s", line);
        char *seen = eval ? &seen_eval[epoch] : &seen_step[step];
        ck_assert_msg(!*seen, "%s: %s %d appears twice", p, eval ? "epoch" : "step",
                      eval ? epoch : step);
        *seen = 1;
        cJSON_Delete(o);
    }
    free(text);
    return n;
}

/* SIGTERM at step 16 (epoch 2, step 5 of 11): exit 143, the message says where and how to
 * resume, checkpoints/step_00000016 holds that point; resumed, the run ends with the
 * uninterrupted run's final checkpoint, bit for bit, and its metrics (but tokens_per_s). A
 * new run into that folder is refused, pointing at the step_ checkpoint as the latest. */
START_TEST(test_sigterm_resumes_exactly)
{
    char msg[4096];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("full"),
                                NULL) == 0, "%s", msg);
    plan p = {.at = 16, .sig = SIGTERM};
    tt_train_test_hooks(at_step, NULL, &p);
    int rc = tt_test_train(msg, sizeof msg, path("cfg.json"), NULL);
    tt_train_test_hooks(NULL, NULL, NULL);
    ck_assert_msg(rc == 143, "exit %d: %s", rc, msg);
    ck_assert_msg(strstr(msg, "interrupted (SIGTERM) at step 16, epoch 2 step 5/11") &&
                      strstr(msg, "resume with: ./train") &&
                      strstr(msg, "--resume") && strstr(msg, "step_00000016.safetensors"),
                  "%s", msg);
    ck_assert(exists("run/checkpoints/step_00000016.safetensors"));
    ck_assert(exists("run/checkpoints/epoch_001.safetensors"));
    ck_assert(!exists("run/checkpoints/epoch_002.safetensors"));
    check_metrics("run");
    /* a new run there is refused; the hint resumes from the newest checkpoint */
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), NULL), 2);
    ck_assert_msg(strstr(msg, "--resume") && strstr(msg, "step_00000016.safetensors"), "%s",
                  msg);
    /* a resume with another batch size is refused (the config check names the key) */
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set",
                                   "train.batch_size=4", "--set", out("other"), "--resume",
                                   path("run/checkpoints/step_00000016.safetensors"), NULL), 2);
    ck_assert_msg(strstr(msg, "train.batch_size: 8 in the checkpoint, 4 in the config"), "%s",
                  msg);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--resume",
                                path("run/checkpoints/step_00000016.safetensors"), NULL) == 0,
                  "%s", msg);
    static const char *const meta[] = {"step", "epoch", NULL};
    tt_test_same_tensors(path("full/checkpoints/epoch_002.safetensors"),
                         path("run/checkpoints/epoch_002.safetensors"), meta);
    char *a = tt_test_metrics(path("full/metrics.jsonl"), 0);
    char *b = tt_test_metrics(path("run/metrics.jsonl"), 0);
    tt_test_same_lines("metrics.jsonl, SIGTERM and resumed against uninterrupted", a, b);
    free(a), free(b);
    ck_assert(exists("run/checkpoints/step_00000016.safetensors")); /* the one resumed */
}
END_TEST

/* SIGINT at step 16: exit 130. In a child, a second SIGINT while the run stops (before its
 * checkpoint lands) ends the process at once: no step_ checkpoint, the earlier checkpoint as
 * an uninterrupted run wrote it, every metrics line whole, and the run resumes from it. */
START_TEST(test_sigint_twice)
{
    char msg[4096];
    plan p = {.at = 16, .sig = SIGINT};
    tt_train_test_hooks(at_step, NULL, &p);
    int rc = tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("once"), NULL);
    ck_assert_msg(rc == 130, "exit %d: %s", rc, msg);
    ck_assert_msg(strstr(msg, "interrupted (SIGINT) at step 16"), "%s", msg);
    ck_assert(exists("once/checkpoints/step_00000016.safetensors"));
    p.again = SIGINT;
    tt_train_test_hooks(at_step, at_stop, &p);
    fflush(NULL);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) /* _exit: the runner's exit handlers are the parent's */
        _exit(tt_test_train(msg, sizeof msg, path("cfg.json"), NULL));
    int status = 0;
    ck_assert(waitpid(child, &status, 0) == child);
    tt_train_test_hooks(NULL, NULL, NULL);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
                  "the second SIGINT did not end the process (status %#x)", status);
    ck_assert(!exists("run/checkpoints/step_00000016.safetensors"));
    static const char *const meta[] = {"step", "epoch", NULL};
    tt_test_same_tensors(path("once/checkpoints/epoch_001.safetensors"),
                         path("run/checkpoints/epoch_001.safetensors"), meta);
    ck_assert_int_eq(check_metrics("run"), 1 + 16 + 1); /* epoch 0, 16 steps, epoch 1 */
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--resume",
                                path("run/checkpoints/epoch_001.safetensors"), NULL) == 0,
                  "%s", msg);
    check_metrics("run");
}
END_TEST

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int master = -1; /* test_terminal_closed's pty, held by the child alone */

/* At step `at`, stdout's far end goes: sig SIGHUP, the terminal hangs up as closing its
 * window does (the pty's master closed: the kernel sends SIGHUP to the session's leader, and
 * writes to the terminal fail); else wait (up to 20 s) until stdout, a pipe, has no reader. */
static void at_step_out_gone(tt_run *r, double loss, double grad_norm, void *ctx)
{
    (void)loss, (void)grad_norm;
    const plan *p = ctx;
    if (r->step != p->at) return;
    if (p->sig == SIGHUP) close(master);
    struct pollfd out = {.fd = STDOUT_FILENO, .events = POLLOUT};
    for (double t0 = now(); !p->sig && !(out.revents & POLLERR) && now() - t0 < 20;)
        poll(&out, 1, 100);
}

/* The child's side of test_terminal_closed: a session of its own whose controlling terminal,
 * a new pty, is its stdin and stdout. */
static void own_terminal(void)
{
    char *slave = NULL;
    int fd = -1;
    if (setsid() < 0 || (master = posix_openpt(O_RDWR | O_NOCTTY)) < 0 || grantpt(master) ||
        unlockpt(master) || !(slave = ptsname(master)) || (fd = open(slave, O_RDWR)) < 0 ||
        ioctl(fd, TIOCSCTTY, 0) < 0) {
        perror("test_terminal_closed: no pty");
        _exit(99);
    }
    dup2(fd, STDIN_FILENO), dup2(fd, STDOUT_FILENO);
}

/* ./train with the arguments (NULL-terminated) in a child: stderr into the test's stderr.txt,
 * stdout on `out` (-1: unchanged), after prepare() when given. The wait status. */
static int train_forked(int out, void (*prepare)(void), ...)
{
    char *argv[16] = {"train"};
    int argc = 1;
    va_list ap;
    va_start(ap, prepare);
    for (char *a; (a = va_arg(ap, char *)) && argc < 15;) argv[argc++] = a;
    va_end(ap);
    fflush(NULL);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) { /* _exit: the runner's exit handlers are the parent's */
        int err = open(path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err < 0 || dup2(err, STDERR_FILENO) < 0) _exit(98);
        if (out >= 0) dup2(out, STDOUT_FILENO);
        if (prepare) prepare();
        const int rc = tt_train_main(argc, argv);
        fflush(stdout); /* as exit would, after main */
        _exit(rc);
    }
    if (out >= 0) close(out);
    int status = 0;
    ck_assert(waitpid(child, &status, 0) == child);
    return status;
}

/* The test's stderr.txt: exactly one "train: interrupted (SIG) at step ...; resume with:"
 * line, ending with the checkpoint; that checkpoint, which exists, into ckpt. */
static void said_once(const char *sig, char *ckpt, size_t len)
{
    char err[512], want[64], *text = tt_render_slurp(path("stderr.txt"), err, sizeof err);
    ck_assert_msg(text, "%s", err);
    snprintf(want, sizeof want, "train: interrupted (%s) at step ", sig);
    char *said = strstr(text, want), *from = said ? strstr(said, "--resume ") : NULL;
    char *end = from ? strchr(from, '\n') : NULL;
    ck_assert_msg(said == text && from && end && !end[1], "want one line, %s: %s", want, text);
    *end = '\0';
    ck_assert_msg(strstr(from, ".safetensors") == end - 12, "%s", text);
    snprintf(ckpt, len, "%s", from + 9);
    ck_assert_msg(access(ckpt, F_OK) == 0, "%s: not written", ckpt);
    free(text);
}

/* SIGHUP at step 16, and again while the run stops: exit 129, one message and one step_
 * checkpoint (a repeated hangup is not a second Ctrl-C), which resumes to the end. */
START_TEST(test_sighup_twice)
{
    char msg[4096];
    plan p = {.at = 16, .sig = SIGHUP, .again = SIGHUP};
    tt_train_test_hooks(at_step, at_stop, &p);
    int rc = tt_test_train(msg, sizeof msg, path("cfg.json"), NULL);
    tt_train_test_hooks(NULL, NULL, NULL);
    ck_assert_msg(rc == 129, "exit %d: %s", rc, msg);
    char ckpt[1024];
    said_once("SIGHUP", ckpt, sizeof ckpt);
    ck_assert_msg(strstr(msg, "(SIGHUP) at step 16, epoch 2 step 5/11") &&
                      strstr(ckpt, "run/checkpoints/step_00000016.safetensors"), "%s", msg);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--resume", ckpt, NULL) == 0,
                  "%s", msg);
    ck_assert(exists("run/checkpoints/epoch_002.safetensors"));
    ck_assert_int_eq(check_metrics("run"), 1 + 22 + 2);
}
END_TEST

/* SIGHUP ignored when the run starts (nohup): the hangup at step 16 changes nothing. */
START_TEST(test_nohup)
{
    char msg[4096];
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGHUP, &ign, &old);
    plan p = {.at = 16, .sig = SIGHUP};
    tt_train_test_hooks(at_step, NULL, &p);
    int rc = tt_test_train(msg, sizeof msg, path("cfg.json"), NULL);
    tt_train_test_hooks(NULL, NULL, NULL);
    sigaction(SIGHUP, &old, NULL);
    ck_assert_msg(rc == 0, "exit %d under nohup: %s", rc, msg);
    ck_assert(!exists("run/checkpoints/step_00000016.safetensors"));
    ck_assert(exists("run/checkpoints/epoch_002.safetensors"));
}
END_TEST

/* ./train --set `set` with stdout a pipe whose reader takes the first line and leaves
 * (./train cfg | head -1; the child waits at step 12, epoch 2's first, until it has). The wait
 * status. */
static int piped_to_head(const char *set)
{
    int fds[2];
    ck_assert(pipe(fds) == 0);
    plan p = {.at = 12};
    tt_train_test_hooks(at_step_out_gone, NULL, &p);
    fflush(NULL);
    pid_t reader = fork();
    ck_assert(reader >= 0);
    if (reader == 0) {
        close(fds[1]);
        char c = 0;
        while (read(fds[0], &c, 1) == 1 && c != '\n') continue;
        _exit(c == '\n' ? 0 : 1);
    }
    close(fds[0]);
    int status = train_forked(fds[1], NULL, path("cfg.json"), "--set", set, NULL);
    tt_train_test_hooks(NULL, NULL, NULL);
    int head = 0;
    ck_assert(waitpid(reader, &head, 0) == reader && WIFEXITED(head) && !WEXITSTATUS(head));
    return status;
}

/* | head -1: the next write raises SIGPIPE, the run stops at the end of epoch 2 with its
 * checkpoint, says so once on stderr and exits 141, not killed by the SIGPIPE of a later
 * write; the checkpoint resumes to the end. When epoch 2 is the last, the run is done: exit
 * 0, and the write at exit does not kill it either. */
START_TEST(test_sigpipe_head)
{
    int status = piped_to_head("train.epochs=3");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 141, "status %#x", status);
    char ckpt[1024], msg[4096];
    said_once("SIGPIPE", ckpt, sizeof ckpt);
    ck_assert_msg(strstr(ckpt, "run/checkpoints/epoch_002.safetensors"), "%s", ckpt);
    ck_assert(!exists("run/checkpoints/epoch_003.safetensors"));
    ck_assert_int_eq(check_metrics("run"), 1 + 22 + 2);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", "train.epochs=3",
                                "--resume", ckpt, NULL) == 0, "%s", msg);
    ck_assert(exists("run/checkpoints/epoch_003.safetensors"));
    status = piped_to_head(out("done"));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    ck_assert(exists("done/checkpoints/epoch_002.safetensors"));
}
END_TEST

/* The terminal closed at step 16 (stdout on a pty whose master goes; stderr a file here, so
 * that the message can be read): SIGHUP, exit 129, the step_ checkpoint, which resumes. */
START_TEST(test_terminal_closed)
{
    plan p = {.at = 16, .sig = SIGHUP};
    tt_train_test_hooks(at_step_out_gone, NULL, &p);
    int status = train_forked(-1, own_terminal, path("cfg.json"), NULL);
    tt_train_test_hooks(NULL, NULL, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 129, "status %#x", status);
    char ckpt[1024], msg[4096];
    said_once("SIGHUP", ckpt, sizeof ckpt);
    ck_assert_msg(strstr(ckpt, "run/checkpoints/step_00000016.safetensors"), "%s", ckpt);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--resume", ckpt, NULL) == 0,
                  "%s", msg);
    ck_assert(exists("run/checkpoints/epoch_002.safetensors"));
}
END_TEST

/* ./train with the arguments in a child; SIGKILLed after `kill_after` seconds (< 0: never).
 * Returns the wait status. */
static int train_child(double kill_after, const char *dir)
{
    fflush(NULL);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        char msg[2048];
        _exit(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out(dir), "--set",
                            "train.epochs=3", NULL));
    }
    if (kill_after >= 0) {
        struct timespec ts = {(time_t)kill_after, (long)(1e9 * (kill_after - floor(kill_after)))};
        nanosleep(&ts, NULL);
        kill(child, SIGKILL);
    }
    int status = 0;
    ck_assert(waitpid(child, &status, 0) == child);
    return status;
}

/* The lines of run/metrics.jsonl so far (0: none yet). */
static int lines_in(const char *run)
{
    char p[1200], buf[4096];
    snprintf(p, sizeof p, "%s/metrics.jsonl", path(run));
    FILE *f = fopen(p, "r");
    int n = 0;
    for (size_t got; f && (got = fread(buf, 1, sizeof buf, f)) > 0;)
        for (size_t i = 0; i < got; i++) n += buf[i] == '\n';
    if (f) fclose(f);
    return n;
}

/* SIGTERM from outside (a real, asynchronous signal) at 3 seeded random points of a 3-epoch
 * run, once it has written that many metrics lines: exit 143 and a checkpoint named in the
 * message, whose resume in the same folder ends bit for bit as the uninterrupted run (a run
 * that finished before the signal came is let be). */
START_TEST(test_random_sigterms)
{
    char msg[4096];
    int status = train_child(-1, "whole");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    const int total = lines_in("whole"); /* 1 + 3 * 11 + 3 */
    for (int k = 0; k < 3; k++) {
        char dir[32], name[128];
        snprintf(dir, sizeof dir, "term%d", k);
        const int at = 1 + (int)(tt_rng_word(15, 0, k) % (uint32_t)(total - 12));
        fflush(NULL);
        pid_t child = fork();
        ck_assert(child >= 0);
        if (child == 0)
            _exit(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out(dir), "--set",
                                "train.epochs=3", NULL));
        for (double t0 = now(); lines_in(dir) < at && now() - t0 < 60;) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
        kill(child, SIGTERM);
        ck_assert(waitpid(child, &status, 0) == child);
        snprintf(name, sizeof name, "%s/checkpoints/epoch_003.safetensors", dir);
        if (exists(name) && (WIFEXITED(status) ? WEXITSTATUS(status) == 0
                                               : WTERMSIG(status) == SIGTERM))
            continue; /* done before the signal came, or as it came */
        char err[512], *text = tt_render_slurp(path("stderr.txt"), err, sizeof err);
        ck_assert_msg(text, "%s", err);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 143, "status %#x after %d "
                      "lines: %s", status, at, text);
        char *from = strstr(text, "--resume "), *end = from ? strchr(from, '\n') : NULL;
        ck_assert_msg(from && end, "no resume command: %s", text);
        *end = '\0';
        ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out(dir),
                                    "--set", "train.epochs=3", "--resume", from + 9, NULL) == 0,
                      "%s: %s", from, msg);
        free(text);
        static const char *const meta[] = {"step", "epoch", NULL};
        tt_test_same_tensors(path("whole/checkpoints/epoch_003.safetensors"), path(name), meta);
        char *a = tt_test_metrics(path("whole/metrics.jsonl"), 0);
        snprintf(name, sizeof name, "%s/metrics.jsonl", dir);
        char *b = tt_test_metrics(path(name), 0);
        tt_test_same_lines("metrics.jsonl, SIGTERM and resumed against uninterrupted", a, b);
        free(a), free(b);
    }
}
END_TEST

/* SIGKILL at 4 seeded random points of a 3-epoch run: every checkpoint left (none
 * half-written: temporary files are not checkpoints) resumes to the end, every metrics line
 * parses, and the latest resumed in the folder itself repeats no step. */
START_TEST(test_random_kills)
{
    double t0 = now();
    int status = train_child(-1, "whole");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    const double whole = now() - t0;
    for (int k = 0; k < 4; k++) {
        char dir[32], rel[96], msg[4096];
        snprintf(dir, sizeof dir, "kill%d", k);
        double at = whole * (0.1 + 0.9 * (double)tt_rng_word_uniform(tt_rng_word(14, 0, k)));
        train_child(at, dir);
        if (access(path(dir), F_OK) != 0) continue; /* killed before the folder */
        snprintf(rel, sizeof rel, "%s/checkpoints", dir);
        DIR *d = opendir(path(rel));
        const char *latest = NULL;
        char names[8][256];
        int n = 0;
        for (struct dirent *e; d && (e = readdir(d));)
            if (strstr(e->d_name, ".safetensors") && !strstr(e->d_name, ".tmp.") && n < 8)
                snprintf(names[n++], sizeof names[0], "%s", e->d_name);
        if (d) closedir(d);
        for (int i = 0; i < n; i++) {
            char from[4096], again[64];
            snprintf(from, sizeof from, "%s/checkpoints/%s", dir, names[i]);
            snprintf(again, sizeof again, "%s_from%d", dir, i);
            ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out(again),
                                        "--set", "train.epochs=3", "--resume", path(from),
                                        NULL) == 0, "resume from %s: %s", from, msg);
            if (!latest || strcmp(names[i], latest) > 0) latest = names[i];
        }
        if (access(path(dir), F_OK) == 0 && exists(strcat(strcpy(rel, dir), "/metrics.jsonl")))
            check_metrics(dir);
        if (latest) { /* back into the killed run's own folder */
            char from[4096];
            snprintf(from, sizeof from, "%s/checkpoints/%s", dir, latest);
            ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out(dir),
                                        "--set", "train.epochs=3", "--resume", path(from),
                                        NULL) == 0, "resume from %s: %s", from, msg);
            check_metrics(dir);
        }
    }
}
END_TEST

/* metrics.jsonl a link to /dev/full: the resume into it is refused up front (a run never
 * writes through a link), exit 2 naming the file; the folder stays as it was. */
START_TEST(test_metrics_on_dev_full)
{
    char msg[4096];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", "train.epochs=1",
                                NULL) == 0, "%s", msg);
    ck_assert(unlink(path("run/metrics.jsonl")) == 0);
    ck_assert(symlink("/dev/full", path("run/metrics.jsonl")) == 0);
    tt_test_snap before = {0}, after = {0};
    tt_test_snapshot(&before, path("run"), "");
    int rc = tt_test_train(msg, sizeof msg, path("cfg.json"), "--resume",
                           path("run/checkpoints/epoch_001.safetensors"), NULL);
    ck_assert_msg(rc == 2, "exit %d: %s", rc, msg);
    ck_assert_msg(strstr(msg, "metrics.jsonl: is a symbolic link") && strstr(msg, "HINT:"),
                  "%s", msg);
    tt_test_snapshot(&after, path("run"), "");
    ck_assert_msg(before.n == after.n && memcmp(before.buf, after.buf, before.n) == 0,
                  "a refused resume changed the folder");
    free(before.buf);
    free(after.buf);
}
END_TEST

/* A disk that fills up mid-run (a 320 KB tmpfs): exit 2 with the reason; the checkpoints
 * written before it load and resume elsewhere, and every metrics line parses. */
START_TEST(test_disk_full)
{
    char msg[4096];
    ck_assert(mkdir(path("small"), 0777) == 0);
    if (mount("tmpfs", path("small"), "tmpfs", 0, "size=320k") != 0) {
        printf("SKIP: cannot mount a tmpfs (not root?): %s\n", strerror(errno));
        return;
    }
    int rc = tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("small/run"),
                           "--set", "train.epochs=40", "--set", "data.probes=null", NULL);
    char names[64][256];
    int n = 0;
    DIR *d = opendir(path("small/run/checkpoints"));
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".safetensors") && n < 64)
            snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    if (d) closedir(d);
    check_metrics("small/run");
    for (int i = 0; i < n; i++) {
        char from[4096], to[64];
        snprintf(from, sizeof from, "small/run/checkpoints/%s", names[i]);
        snprintf(to, sizeof to, "resumed%d", i);
        ck_assert_msg(!strstr(names[i], ".tmp."), "%s left behind", names[i]);
        if (i < 2)
            ck_assert_msg(tt_test_train(msg + 2048, 2048, path("cfg.json"), "--set", out(to),
                                        "--set", "data.probes=null", "--resume", path(from),
                                        "--set", "train.epochs=3", NULL) == 0,
                          "resume from %s: %s", from, msg + 2048);
    }
    umount2(path("small"), MNT_DETACH);
    ck_assert_msg(rc == 2, "exit %d on a full disk: %s", rc, msg);
    ck_assert_msg(strstr(msg, "No space left on device"), "%s", msg);
    ck_assert_msg(n >= 1, "no checkpoint before the disk filled: %s", msg);
}
END_TEST

/* SIGTERM while a study trains: it stops after that step and exits 143 at once (in a child:
 * the signal comes from outside, once the first training has begun). */
START_TEST(test_study_stops)
{
    fflush(NULL);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        char msg[2048];
        _exit(tt_test_train(msg, sizeof msg, "configs/scaling.json", "--set", out("study"),
                            "--set", "study.samples=1000", "--set", "study.epochs=500", "--set",
                            "study.d_model=16", "--set", "study.n_heads=2", NULL));
    }
    double t0 = now();
    while (!exists("study/train_sqrt_dk/metrics.jsonl") && now() - t0 < 60) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    kill(child, SIGTERM);
    double t1 = now();
    int status = 0;
    ck_assert(waitpid(child, &status, 0) == child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 143, "status %#x", status);
    ck_assert_msg(now() - t1 < 10, "the study took %.1f s to stop", now() - t1);
    char err[512], *text = tt_render_slurp(path("stderr.txt"), err, sizeof err);
    ck_assert_msg(text && strstr(text, "interrupted (SIGTERM)"), "%s", text ? text : err);
    free(text);
}
END_TEST

/* Numbers that are not finite are written as null: every metrics line parses. */
START_TEST(test_non_finite_as_null)
{
    static tt_run r; /* the fields the writer reads */
    double entropy[2] = {NAN, 0.5};
    r.cfg.model.n_layers = 1, r.cfg.model.n_heads = 2;
    r.entropy = entropy;
    r.step = 7, r.epoch = 1;
    snprintf(r.cfg.output.dir, sizeof r.cfg.output.dir, "%s", tt_test_tmpdir());
    ck_assert_ptr_nonnull(r.metrics = fopen(path("metrics.jsonl"), "w"));
    tt_metrics_begin(&r);
    char err[512];
    const tt_metrics_row m = {0.5, 1e-3, INFINITY, 100};
    const tt_eval e = {.loss = NAN, .acc = 0.25};
    ck_assert(!tt_metrics_step(&r, &m, err, sizeof err));
    ck_assert(!tt_metrics_eval(&r, &m, &e, err, sizeof err));
    ck_assert(!tt_metrics_eval(&r, NULL, &e, err, sizeof err));
    fclose(r.metrics);
    free(r.line);
    ck_assert_int_eq(check_metrics("."), 3);
    char *text = tt_test_metrics(path("metrics.jsonl"), 0);
    ck_assert_msg(strstr(text, "\"grad_norm\": null") && strstr(text, "\"valid_loss\": null") &&
                      strstr(text, "\"attention_entropy\": [[null, 0.5]]"), "%s", text);
    free(text);
}
END_TEST

Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sigterm_resumes_exactly);
    tcase_add_test(tc, test_sigint_twice);
    tcase_add_test(tc, test_sighup_twice);
    tcase_add_test(tc, test_nohup);
    tcase_add_test(tc, test_sigpipe_head);
    tcase_add_test(tc, test_terminal_closed);
    tcase_add_test(tc, test_random_kills);
    tcase_add_test(tc, test_random_sigterms);
    tcase_add_test(tc, test_metrics_on_dev_full);
    tcase_add_test(tc, test_disk_full);
    tcase_add_test(tc, test_non_finite_as_null);
    tcase_add_test(tc, test_study_stops);
    suite_add_tcase(s, tc);
    return s;
}
