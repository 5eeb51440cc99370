/* cli.c: the command line of ./train (docs/design.md section 2) and the choice between a training
 * run, a first-step dump and a study:
 *   ./train CONFIG [--set KEY=VALUE]... [--resume CHECKPOINT | --overwrite]
 *                  [--dump-first-step FILE]
 * Everything is loaded and checked (config, data, the memory the run needs, checkpoint) before
 * anything is written; then the run folder is locked (one ./train a folder) and claimed. Exit
 * status 0 when done, 2 for any error in the user's input (a write that fails included),
 * 128 + the signal when SIGINT, SIGTERM, SIGHUP or SIGPIPE stopped the run (it wrote a
 * checkpoint and says how to resume): the one place where a status of src/train becomes an
 * exit status and a message on stderr. */
#include "train/cli.h"

#include "train/run/budget.h"
#include "train/run/dist.h"
#include "train/run/run.h"
#include "train/study/study.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tt_step_hook test_on_step, test_on_stop;
static void *test_ctx;

void tt_train_test_hooks(tt_step_hook on_step, tt_step_hook on_stop, void *ctx)
{
    test_on_step = on_step, test_on_stop = on_stop, test_ctx = ctx;
}

#define ERR_LEN 2048
#define MAX_SETS 64

static const char USAGE[] =
    "usage: ./train CONFIG.json [--set KEY=VALUE]... [--resume CHECKPOINT | --overwrite]\n"
    "                           [--dump-first-step FILE]\n"
    "  --set KEY=VALUE         override one config value (dotted path, JSON value or string),\n"
    "                          e.g. --set model.d_model=128 --set train.lr=3e-4;\n"
    "                          KEY=null removes a key the file gives (its default applies)\n"
    "  --resume CHECKPOINT     continue a run exactly from a checkpoint it wrote (its folder's\n"
    "                          history after the checkpoint is dropped)\n"
    "  --overwrite             output.dir holds an earlier run: remove that run's files (only\n"
    "                          those), then train; without it such a folder is refused\n"
    "  --dump-first-step FILE  one forward and backward pass on the first training batch,\n"
    "                          written to FILE (safetensors), then exit\n"
    "  -h, --help              this text\n"
    "Exit status: 0 done; 2 a mistake in the input or a failed write; 128 + the signal that\n"
    "stopped the run after a checkpoint: 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE\n"
    "(mpirun itself signalled exits 1: Open MPI's status).\n"
    "Every config key and its default: docs/config.md; the outputs: docs/training.md.\n";
/* what a mistake on the command line prints after its message */
static const char SHORT_USAGE[] =
    "usage: ./train CONFIG.json [--set KEY=VALUE]... [--resume CHECKPOINT | --overwrite] "
    "[--dump-first-step FILE]\nmore: ./train --help";

/* The message of an error every process meets alike (the command line; a training error
 * the ranks agreed on): said once, by rank 0 (dist.h). */
static int fail(const char *msg)
{
    if (tt_dist_rank() == 0) {
        fputs("train: ", stderr);
        tt_term_puts(stderr, msg, "\n");
        fputc('\n', stderr);
    }
    return 2;
}

/* a word as the shell reads it back: as it is when plain, else in single quotes, or as $'...'
 * with \xHH escapes when it holds a byte that is not printable text (tt_term_printable), which
 * must not reach the terminal raw */
static void put_word(FILE *f, const char *w)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_./=:,+-@%";
    const size_t n = strlen(w);
    if (*w && strspn(w, plain) == n) {
        fprintf(f, " %s", w);
        return;
    }
    if (tt_term_printable_prefix(w, n) < n) {
        fputs(" $'", f);
        for (size_t i = 0, k; i < n; i += k) {
            k = tt_term_printable(w + i, n - i);
            if (!k) fprintf(f, "\\x%02x", (unsigned char)w[i]), k = 1;
            else if (w[i] == '\'' || w[i] == '\\') fprintf(f, "\\%c", w[i]);
            else fwrite(w + i, 1, k, f);
        }
        fputc('\'', f);
        return;
    }
    fputs(" '", f);
    for (; *w; w++) *w == '\'' ? fputs("'\\''", f) : fputc(*w, f);
    fputc('\'', f);
}

/* A signal stopped the run (err says where): the message, how to resume, and 128 + the
 * signal's number, the shell's convention (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE).
 * The line is put together first and written in one write (stderr is unbuffered: word by
 * word, a process ended meanwhile, mpirun's by its kill, would leave it cut short); a failed
 * write (the terminal closed, the pipe gone) is let be. */
static int interrupted(int sig, const char *err, const char *config, const char **sets,
                       int n_sets, const char *checkpoint)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) f = stderr; /* no memory for the line: word by word */
    fputs("train: ", f);
    tt_term_puts(f, err, "\n");
    if (checkpoint && *checkpoint) {
        fputs("; resume with:", f);
        if (tt_dist_size() > 1) fprintf(f, " mpirun -np %d", tt_dist_size());
        fputs(" ./train", f);
        put_word(f, config);
        for (int i = 0; i < n_sets; i++) fputs(" --set", f), put_word(f, sets[i]);
        fputs(" --resume", f);
        put_word(f, checkpoint);
    }
    fputc('\n', f);
    if (f != stderr && fclose(f) == 0) /* one write; a pipe or terminal may take less */
        for (size_t done = 0; done < len;) {
            ssize_t n = write(STDERR_FILENO, text + done, len - done);
            if (n <= 0) break;
            done += (size_t)n;
        }
    free(text);
    return 128 + sig;
}

/* What only one process does: a study is not data parallel. */
static int one_process_only(const tt_run *r, char *err, size_t errlen)
{
    if (tt_dist_size() == 1 || r->cfg.study.kind != TT_STUDY_SCALING) return 0;
    return tt_errorf(err, errlen, "a study (study.kind) runs on one process, not %d (mpirun -np "
                     "%d)\nHINT: run it without mpirun, or with -np 1", tt_dist_size(),
                     tt_dist_size());
}

/* The resolved config (after --set) and the data's sizes, hashed: the ranks compare it. */
static uint64_t run_hash(const tt_run *r)
{
    char *json = tt_config_to_json(&r->cfg);
    uint64_t h = tt_fnv1a(TT_FNV_OFFSET, json, strlen(json));
    free(json);
    const int64_t sizes[] = {r->data.train.n, r->data.valid.n, r->data.words.n,
                             tt_corpus_n_out(&r->data), r->step, r->epoch};
    return tt_fnv1a(h, sizes, sizeof sizes);
}

int tt_train_main(int argc, char **argv)
{
    const char *config = NULL, *resume = NULL, *dump = NULL, *sets[MAX_SETS];
    int n_sets = 0;
    bool overwrite = false;
    char err[ERR_LEN];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--set") && has_value) {
            if (n_sets == MAX_SETS) return fail("more than 64 --set options");
            sets[n_sets++] = argv[++i];
        } else if (!strcmp(a, "--resume") && has_value) {
            resume = argv[++i];
        } else if (!strcmp(a, "--overwrite")) {
            overwrite = true;
        } else if (!strcmp(a, "--dump-first-step") && has_value) {
            dump = argv[++i];
        } else if (a[0] == '-') {
            snprintf(err, sizeof err, "%s: unknown option or missing value\n%s", a,
                     SHORT_USAGE);
            return fail(err);
        } else if (config) {
            snprintf(err, sizeof err, "%s: a second config file (one is allowed)\n%s", a,
                     SHORT_USAGE);
            return fail(err);
        } else {
            config = a;
        }
    }
    if (!config) {
        snprintf(err, sizeof err, "no config file given\n%s", SHORT_USAGE);
        return fail(err);
    }
    if (overwrite && resume)
        return fail("--overwrite and --resume: choose one (--resume continues the run in its "
                    "folder; --overwrite removes that run and starts a new one)");
    tt_run r = {0};
    int rc = 2, lock = -1; /* the run folder's lock, held to the end */
    const bool lead = tt_dist_rank() == 0; /* the process that writes (dist.h) */
    /* loading may fail on one rank alone (its files): every rank learns it, one says why */
    bool failed = tt_config_load(&r.cfg, config, sets, n_sets, err, sizeof err) ||
                  tt_corpus_load(&r.data, &r.cfg, err, sizeof err) ||
                  tt_run_check_memory(&r.cfg, &r.data, err, sizeof err) ||
                  (r.cfg.study.kind == TT_STUDY_SCALING &&
                   tt_study_check_memory(&r.cfg, &r.data, err, sizeof err)) ||
                  tt_run_init(&r, err, sizeof err) ||
                  (resume && tt_checkpoint_load(&r, resume, err, sizeof err)) ||
                  one_process_only(&r, err, sizeof err);
    if (tt_dist_agree(failed, err) ||
        tt_dist_agree(tt_dist_same(run_hash(&r), err, sizeof err), err))
        goto out;
    if (dump) {
        rc = tt_dump_first_step(&r, dump, err, sizeof err) ? fail(err) : 0;
        if (!rc) {
            fputs("wrote ", stdout);
            tt_term_puts(stdout, dump, "");
            fputc('\n', stdout);
        }
        goto out;
    }
    const bool study = r.cfg.study.kind == TT_STUDY_SCALING;
    failed = lead && (tt_run_folder_lock(r.cfg.output.dir, &lock, err, sizeof err) ||
                      tt_run_folder_claim(&r, resume, overwrite, err, sizeof err) ||
                      (study ? tt_run_write_config(&r, err, sizeof err)
                             : tt_run_prepare_dir(&r, resume != NULL, err, sizeof err)));
    if (tt_dist_agree(failed, err)) goto out;
    err[0] = '\0';
    tt_signals_catch();
    if (study) {
        rc = tt_study_main(&r, err, sizeof err) ? 2 : 0;
    } else {
        tt_run_describe(&r);
        if (resume) {
            fputs("resumed from ", stdout);
            tt_term_puts(stdout, resume, "");
            printf(": epoch %d, step %lld\n", r.epoch, (long long)r.step);
        }
        if (tt_dist_size() > 1)
            printf("data parallel: %d processes, %d rows of each batch of %d on each\n",
                   tt_dist_size(), r.batch.B, r.cfg.train.batch_size);
        r.on_step = test_on_step, r.on_stop = test_on_stop, r.on_step_ctx = test_ctx;
        rc = tt_run_train(&r, err, sizeof err) ? 2 : 0;
    }
    fflush(stdout); /* while SIGPIPE is noted, not deadly: stdout may be a closed pipe */
    const int sig = r.stop_signal ? r.stop_signal : study && rc ? tt_signal_caught() : 0;
    tt_signals_release();
    if (rc && sig) {
        /* every rank stopped after the same step with the same signal; rank 0 says so, and
         * none exits before it has */
        rc = lead ? interrupted(sig, err, config, sets, n_sets, study ? NULL : r.stop_checkpoint)
                  : 128 + sig;
        tt_dist_barrier();
    } else if (rc && lead) {
        fail(err);
        /* the other ranks may wait for this one in a collective (a write failed here alone) */
        if (tt_dist_size() > 1 && !r.err_all) tt_dist_abort(rc);
    }
out:
    tt_record_end(); /* the run folder's record (run.json), if one was begun */
    tt_run_free(&r);
    if (lock >= 0) close(lock);
    return rc;
}
