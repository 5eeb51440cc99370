/* cli.c: the command line of ./train (docs/design.md section 2) and the choice between a training
 * run, a first-step dump and a study:
 *   ./train CONFIG [--set KEY=VALUE]... [--resume CHECKPOINT | --overwrite]
 *                  [--dump-first-step FILE]
 * Everything is loaded and checked (config, data, the memory the run needs, checkpoint) before
 * anything is written; then the run folder is locked (one ./train a folder) and claimed. Exit
 * status 0 when done, 2 for any error in the user's input: the one place where a status of
 * src/train becomes an exit status and a message on stderr. */
#include "train/cli.h"

#include "train/run/budget.h"
#include "train/run/run.h"
#include "train/study/study.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    "Every config key, its default and the outputs: README.md.\n";

static int fail(const char *msg)
{
    fprintf(stderr, "train: %s\n", msg);
    return 2;
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
            snprintf(err, sizeof err, "%s: unknown option or missing value\n%s", a, USAGE);
            return fail(err);
        } else if (config) {
            snprintf(err, sizeof err, "%s: a second config file (one is allowed)\n%s", a, USAGE);
            return fail(err);
        } else {
            config = a;
        }
    }
    if (!config) {
        snprintf(err, sizeof err, "no config file given\n%s", USAGE);
        return fail(err);
    }
    if (overwrite && resume)
        return fail("--overwrite and --resume: choose one (--resume continues the run in its "
                    "folder; --overwrite removes that run and starts a new one)");
    tt_run r = {0};
    int rc = 2, lock = -1; /* the run folder's lock, held to the end */
    if (tt_config_load(&r.cfg, config, sets, n_sets, err, sizeof err) ||
        tt_corpus_load(&r.data, &r.cfg, err, sizeof err) ||
        tt_run_check_memory(&r.cfg, &r.data, err, sizeof err) ||
        tt_run_init(&r, err, sizeof err) ||
        (resume && tt_checkpoint_load(&r, resume, err, sizeof err))) {
        fail(err);
        goto out;
    }
    if (dump) {
        rc = tt_dump_first_step(&r, dump, err, sizeof err) ? fail(err) : 0;
        if (!rc) printf("wrote %s\n", dump);
        goto out;
    }
    const bool study = r.cfg.study.kind == TT_STUDY_SCALING;
    if (tt_run_folder_lock(r.cfg.output.dir, &lock, err, sizeof err) ||
        tt_run_folder_claim(&r, resume, overwrite, err, sizeof err) ||
        (study ? tt_run_write_config(&r, err, sizeof err)
               : tt_run_prepare_dir(&r, resume != NULL, err, sizeof err))) {
        fail(err);
        goto out;
    }
    if (study) {
        err[0] = '\0';
        rc = tt_study_main(&r, err, sizeof err) ? fail(err) : 0;
        goto out;
    }
    tt_run_describe(&r);
    if (resume) printf("resumed from %s: epoch %d, step %lld\n", resume, r.epoch,
                       (long long)r.step);
    err[0] = '\0';
    rc = tt_run_train(&r, err, sizeof err) ? fail(err) : 0;
out:
    tt_run_free(&r);
    if (lock >= 0) close(lock);
    return rc;
}
