/* test_runs.c: runs that never mix, ./train driven in process on a small tagging corpus: a
 * second run into a folder that holds a run exits 2 and leaves every byte as it was;
 * --overwrite replaces exactly that run's files (metrics.jsonl, the epoch files and the viewer
 * then hold only the new run; a file of the user's stays); --overwrite with --resume is a usage
 * error; a resume from an older checkpoint cuts the folder's history back, so it ends as the
 * uninterrupted run; train.schedule_epochs on resume (the schedule continues, or stretches when
 * asked); data.valid_share's split; a study leaves no empty folder or file; the progress line
 * fits every terminal width. */
#include "testutil.h"

#include "tensor/safetensors.h"
#include "train/cli.h"
#include "train/data/data.h"
#include "train/report/render.h"
#include "train/run/run.h"
#include "train_testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PI 3.14159265358979323846

static const char *CONFIG =
    "{\n"
    "  \"seed\": 3, \"threads\": 1,\n"
    "  \"data\": {\"task\": \"tag\", \"seq_len\": 6, \"probes\": [\"a x p a\", \"c x\"]},\n"
    "  \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 1, \"d_ff\": 32},\n"
    "  \"train\": {\"epochs\": 2, \"batch_size\": 8, \"lr\": 0.003, \"schedule\": \"cosine\",\n"
    "            \"warmup_steps\": 3},\n"
    "  \"output\": {\"dir\": \"%s/run\", \"checkpoint_every\": 1}\n"
    "}\n";
enum { STEPS_PER_EPOCH = 11 }; /* 84 training lines in batches of 8 */

static void setup(void)
{
    tt_test_setup_tag_run(CONFIG);
}

static const char *path(const char *rel) { return tt_test_path(rel); }

static const char *out(const char *name) { return tt_test_output_dir(name); }

static bool exists(const char *rel) { return access(path(rel), F_OK) == 0; }

/* The text of run/name (which must exist), malloc'ed. */
static char *read_in(const char *run, const char *name)
{
    char p[1200], err[512];
    snprintf(p, sizeof p, "%s/%s", path(run), name);
    char *text = tt_render_slurp(p, err, sizeof err);
    ck_assert_msg(text, "%s", err);
    return text;
}

/* The epochs that attention/index.html of run folder `run` embeds, into epochs; the count. */
static int viewer_epochs(const char *run, int *epochs, int max)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/attention/index.html", path(run));
    cJSON *data = tt_test_viewer_data(p);
    int n = 0;
    for (const cJSON *e = cJSON_GetObjectItem(data, "epochs")->child; e && n < max; e = e->next)
        epochs[n++] = cJSON_GetObjectItem(e, "epoch")->valueint;
    cJSON_Delete(data);
    return n;
}

static char *metrics(const char *run)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", path(run));
    return tt_test_metrics(p, 0);
}

START_TEST(test_second_run_refused)
{
    char msg[4096], want[1400];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), NULL) == 0, "%s", msg);
    tt_test_snap before = {0}, after = {0};
    tt_test_snapshot(&before, path("run"), "");
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), NULL), 2);
    snprintf(want, sizeof want, "%s: holds the files of an earlier run", path("run"));
    ck_assert_msg(strstr(msg, want) && strstr(msg, "metrics.jsonl"), "%s", msg);
    snprintf(want, sizeof want, "--resume %s", path("run/checkpoints/epoch_002.safetensors"));
    ck_assert_msg(strstr(msg, want), "the hint does not name the latest checkpoint: %s", msg);
    snprintf(want, sizeof want, "--set output.dir=%s_2", path("run"));
    ck_assert_msg(strstr(msg, "--overwrite") && strstr(msg, want), "%s", msg);
    /* --overwrite with --resume: a usage error, checked before anything is read */
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--overwrite", "--resume",
                                   path("run/checkpoints/epoch_001.safetensors"), NULL), 2);
    ck_assert_msg(strstr(msg, "--overwrite") && strstr(msg, "--resume"), "%s", msg);
    tt_test_snapshot(&after, path("run"), "");
    ck_assert_msg(before.n == after.n && memcmp(before.buf, after.buf, before.n) == 0,
                  "a refused run changed the folder");
    /* a folder with only the user's files is no run's */
    ck_assert_int_eq(mkdir(path("mine"), 0777), 0);
    tt_test_put("mine/notes.txt", "mine\n");
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("mine"),
                                "--set", "train.epochs=1", NULL) == 0, "%s", msg);
    free(before.buf);
    free(after.buf);
}
END_TEST

START_TEST(test_overwrite_keeps_only_the_new_run)
{
    char msg[4096];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), NULL) == 0, "%s", msg);
    ck_assert(exists("run/attention/epoch_002.json") &&
              exists("run/checkpoints/epoch_002.safetensors"));
    tt_test_put("run/notes.txt", "the user's\n");
    tt_test_put("run/attention/mine.txt", "the user's too\n");
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--overwrite", "--set",
                                "train.epochs=1", NULL) == 0, "%s", msg);
    static const char *const gone[] = {"run/attention/epoch_002.json",
                                       "run/attention/epoch_002.svg",
                                       "run/checkpoints/epoch_002.safetensors"};
    for (int i = 0; i < 3; i++) ck_assert_msg(!exists(gone[i]), "%s is left", gone[i]);
    ck_assert(exists("run/checkpoints/epoch_001.safetensors") && exists("run/notes.txt") &&
              exists("run/attention/mine.txt"));
    int epochs[8];
    ck_assert_int_eq(viewer_epochs("run", epochs, 8), 2);
    ck_assert(epochs[0] == 0 && epochs[1] == 1);
    /* the metrics are those of a 1-epoch run alone */
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("alone"),
                                "--set", "train.epochs=1", NULL) == 0, "%s", msg);
    char *a = metrics("run"), *b = metrics("alone");
    ck_assert(strlen(a) > 100);
    tt_test_same_lines("run/metrics.jsonl against a run of its own", a, b);
    free(a), free(b);
}
END_TEST

/* Resumed in its own folder from epoch 1 (with a line cut short at the end of metrics.jsonl,
 * as a crash leaves it), a 3-epoch run ends as the uninterrupted one; resumed from epoch 1 for
 * 2 epochs, its epoch-3 files are gone. */
START_TEST(test_resume_cuts_history)
{
    char msg[4096];
    for (int k = 0; k < 2; k++)
        ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set",
                                    out(k ? "cut" : "full"), "--set", "train.epochs=3",
                                    NULL) == 0, "%s", msg);
    FILE *f = fopen(path("cut/metrics.jsonl"), "a");
    fputs("{\"step\": 34, \"epoch\": 4, \"lo", f);
    fclose(f);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("cut"),
                                "--set", "train.epochs=3", "--resume",
                                path("cut/checkpoints/epoch_001.safetensors"), NULL) == 0,
                  "%s", msg);
    char *a = metrics("full"), *b = metrics("cut");
    ck_assert(strlen(a) > 100);
    tt_test_same_lines("metrics.jsonl, resumed against uninterrupted", a, b);
    free(a), free(b);
    for (int e = 0; e <= 3; e++) {
        char name[64];
        snprintf(name, sizeof name, "attention/epoch_%03d.json", e);
        char *x = read_in("full", name), *y = read_in("cut", name);
        ck_assert_msg(strcmp(x, y) == 0, "%s differs after the resume", name);
        free(x), free(y);
    }
    int epochs[8];
    ck_assert_int_eq(viewer_epochs("cut", epochs, 8), 4);
    /* back to epoch 1 for a 2-epoch run: what epoch 3 wrote goes */
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("cut"),
                                "--resume", path("cut/checkpoints/epoch_001.safetensors"),
                                NULL) == 0, "%s", msg);
    ck_assert(!exists("cut/attention/epoch_003.json") && !exists("cut/attention/epoch_003.svg"));
    ck_assert(!exists("cut/checkpoints/epoch_003.safetensors"));
    ck_assert(exists("cut/checkpoints/epoch_001.safetensors"));
    ck_assert_int_eq(viewer_epochs("cut", epochs, 8), 3);
    ck_assert_int_eq(epochs[2], 2);
    a = metrics("cut");
    ck_assert_msg(!strstr(a, "\"epoch\": 3") && strstr(a, "\"epoch\": 2"), "%s", a);
    free(a);
}
END_TEST

/* ./train with the arguments (NULL-terminated): its stdout into said (len bytes; stderr too
 * when it fails); the exit status. */
static int train_out(char *said, size_t len, ...)
{
    char message[4096];
    va_list ap;
    va_start(ap, len);
    int rc = tt_test_main(tt_train_main, said, message, len < sizeof message ? len : sizeof message,
                          ap);
    va_end(ap);
    if (rc) snprintf(said, len, "%s", message);
    return rc;
}

/* The run id in RUN/run.json (33 bytes). */
static void run_id(const char *run, char *id)
{
    char *text = read_in(run, "run.json");
    cJSON *root = cJSON_Parse(text);
    const cJSON *v = cJSON_GetObjectItem(root, "run");
    ck_assert_msg(cJSON_IsString(v) && strlen(v->valuestring) == 32, "%s", text);
    strcpy(id, v->valuestring);
    cJSON_Delete(root);
    free(text);
}

/* --resume of another run's checkpoint into a folder (output.dir forgotten) is refused, exit
 * 2, naming the folder's run and both ways out, and nothing there changes; so is a checkpoint
 * of the folder's own run whose step its metrics.jsonl no longer holds. Into a new folder the
 * resumed run gets a new id, and run.json names where it came from. */
START_TEST(test_resume_into_another_run)
{
    char msg[4096], id[40], other[40], want[1400];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", "train.lr=0.001",
                                NULL) == 0, "%s", msg);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("a"), NULL) == 0,
                  "%s", msg);
    run_id("run", id);
    run_id("a", other);
    ck_assert_str_ne(id, other);
    tt_test_snap before = {0};
    tt_test_snapshot(&before, path("run"), "");
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--resume",
                                   path("a/checkpoints/epoch_001.safetensors"), NULL), 2);
    snprintf(want, sizeof want, "%s: this folder belongs to run %s", path("run"), id);
    ck_assert_msg(strstr(msg, want) && strstr(msg, other), "%s", msg);
    ck_assert_msg(strstr(msg, "HINT: --set output.dir=") && strstr(msg, "--overwrite"), "%s",
                  msg);
    tt_test_snap_unchanged("a resume of another run", &before, path("run"));
    free(before.buf);
    before = (tt_test_snap){0};
    /* the folder's own run, from a checkpoint past the history it holds now */
    char copy[1200], from[1200];
    snprintf(copy, sizeof copy, "%s", path("a_epoch_002.safetensors"));
    snprintf(from, sizeof from, "%s", path("a/checkpoints/epoch_002.safetensors"));
    ck_assert_int_eq(link(from, copy), 0);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("a"), "--set",
                                "train.epochs=1", "--resume",
                                path("a/checkpoints/epoch_001.safetensors"), NULL) == 0,
                  "%s", msg);
    ck_assert(!exists("a/checkpoints/epoch_002.safetensors"));
    tt_test_snapshot(&before, path("a"), "");
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("a"),
                                   "--resume", copy, NULL), 2);
    snprintf(want, sizeof want, "holds no evaluation of step %d", 2 * STEPS_PER_EPOCH);
    ck_assert_msg(strstr(msg, want) && strstr(msg, other), "%s", msg);
    tt_test_snap_unchanged("a resume past the folder's history", &before, path("a"));
    free(before.buf);
    /* into a new folder: a run of its own that names the checkpoint it came from */
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("b"),
                                "--set", "train.epochs=3", "--resume", copy, NULL) == 0,
                  "%s", msg);
    char fresh[40], *text = read_in("b", "run.json");
    run_id("b", fresh);
    ck_assert_msg(strcmp(fresh, other) && strcmp(fresh, id) && strstr(text, other) &&
                  strstr(text, "a_epoch_002.safetensors"), "%s", text);
    free(text);
    /* its checkpoints carry its id */
    tt_st_file f;
    char err[512];
    snprintf(from, sizeof from, "%s", path("b/checkpoints/epoch_003.safetensors"));
    ck_assert_msg(tt_st_open(&f, from, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(tt_st_meta(&f, "run") && !strcmp(tt_st_meta(&f, "run"), fresh), "%s",
                  tt_st_meta(&f, "run") ? tt_st_meta(&f, "run") : "no run");
    tt_st_close(&f);
    /* the same resume into b again: b's run starts over from the checkpoint, under its id,
     * and ends as it did, bit for bit; from another checkpoint of a's it stays refused */
    before = (tt_test_snap){0};
    tt_test_snapshot(&before, path("b/checkpoints"), "");
    char *lines = metrics("b");
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("b"),
                                "--set", "train.epochs=3", "--resume", copy, NULL) == 0,
                  "the same resume again: %s", msg);
    char again[40], *lines_again = metrics("b");
    run_id("b", again);
    ck_assert_str_eq(again, fresh);
    tt_test_snap_unchanged("the same resume again", &before, path("b/checkpoints"));
    tt_test_same_lines("b's metrics after the same resume again", lines, lines_again);
    free(lines);
    free(lines_again);
    free(before.buf);
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("b"),
                                   "--resume", path("a/checkpoints/epoch_001.safetensors"),
                                   NULL), 2);
    ck_assert_msg(strstr(msg, "this folder belongs to run"), "%s", msg);
}
END_TEST

/* --overwrite checks everything before the old run goes: a config it refuses leaves the
 * folder as it was; a linked checkpoints/ or metrics.jsonl is refused (nothing deleted or
 * written through the link). Then it removes only the files the run wrote: the user's files,
 * even those named like the run's, stay, the viewer reads none of them, and the message
 * names them. */
START_TEST(test_overwrite_is_transactional)
{
    char msg[4096];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), NULL) == 0, "%s", msg);
    static const char *const mine[] = {"run/attention/epoch_notes.json",
                                       "run/attention/epoch_0001.json",
                                       "run/checkpoints/epoch_001.safetensors.tmp.mine"};
    for (int i = 0; i < 3; i++) tt_test_put(mine[i], "x\n");
    tt_test_snap before = {0};
    tt_test_snapshot(&before, path("run"), "");
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--overwrite", "--set",
                                   "train.lr=-1", NULL), 2);
    tt_test_snap_unchanged("a refused --overwrite", &before, path("run"));
    /* a checkpoints/ that links to another folder */
    ck_assert_int_eq(mkdir(path("elsewhere"), 0777), 0);
    tt_test_put("elsewhere/epoch_001.safetensors", "the user's\n");
    ck_assert_int_eq(rename(path("run/checkpoints"), path("ckpts")), 0);
    ck_assert_int_eq(symlink(path("elsewhere"), path("run/checkpoints")), 0);
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--overwrite", NULL), 2);
    ck_assert_msg(strstr(msg, "checkpoints: is a symbolic link"), "%s", msg);
    ck_assert(exists("elsewhere/epoch_001.safetensors") && exists("run/metrics.jsonl"));
    ck_assert_int_eq(unlink(path("run/checkpoints")), 0);
    ck_assert_int_eq(rename(path("ckpts"), path("run/checkpoints")), 0);
    /* a metrics.jsonl that links to the user's file */
    tt_test_put("user.jsonl", "the user's\n");
    ck_assert_int_eq(rename(path("run/metrics.jsonl"), path("metrics.jsonl")), 0);
    ck_assert_int_eq(symlink(path("user.jsonl"), path("run/metrics.jsonl")), 0);
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, path("cfg.json"), "--overwrite", NULL), 2);
    ck_assert_msg(strstr(msg, "metrics.jsonl: is a symbolic link"), "%s", msg);
    char *text = read_in(".", "user.jsonl");
    ck_assert_str_eq(text, "the user's\n");
    free(text);
    ck_assert_int_eq(unlink(path("run/metrics.jsonl")), 0);
    ck_assert_int_eq(rename(path("metrics.jsonl"), path("run/metrics.jsonl")), 0);
    tt_test_snap_unchanged("the refused --overwrite runs", &before, path("run"));
    free(before.buf);
    /* the overwrite itself: the user's files stay, named in what it says */
    char said[8192];
    ck_assert_msg(train_out(said, sizeof said, path("cfg.json"), "--overwrite", "--set",
                            "train.epochs=1", NULL) == 0, "%s", said);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(exists(mine[i]), "%s was removed", mine[i]);
        ck_assert_msg(strstr(said, mine[i] + 4), "%s not named: %s", mine[i], said);
    }
    ck_assert_msg(strstr(said, "kept 3 files the run did not write"), "%s", said);
    int epochs[8];
    ck_assert_int_eq(viewer_epochs("run", epochs, 8), 2);
    ck_assert(!exists("run/attention/epoch_002.json"));
}
END_TEST

/* lr[k] = the learning rate of optimizer step k (1-based, as metrics.jsonl counts) */
static void read_lrs(const char *run, double *lr, int n)
{
    char p[1200], line[4096];
    snprintf(p, sizeof p, "%s/metrics.jsonl", path(run));
    FILE *f = fopen(p, "r");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < n; i++) lr[i] = -1;
    while (fgets(line, sizeof line, f)) {
        cJSON *o = cJSON_Parse(line);
        int step = cJSON_GetObjectItem(o, "step")->valueint;
        if (!cJSON_GetObjectItem(o, "valid_loss") && step < n)
            lr[step] = cJSON_GetObjectItem(o, "lr")->valuedouble;
        cJSON_Delete(o);
    }
    fclose(f);
}

static int config_schedule_epochs(const char *run)
{
    char *text = read_in(run, "config.json");
    cJSON *c = cJSON_Parse(text);
    int n = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "train"), "schedule_epochs")->valueint;
    cJSON_Delete(c);
    free(text);
    return n;
}

/* A 4-epoch cosine run, resumed from epoch 2 with train.epochs 6: its steps continue the
 * 4-epoch schedule, then keep its final rate 0; with train.schedule_epochs 6 the schedule is
 * stretched from the first resumed step on. */
START_TEST(test_schedule_epochs_on_resume)
{
    enum { S = STEPS_PER_EPOCH };
    char msg[4096];
    double ref[7 * S], kept[7 * S], stretched[7 * S];
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("ref"),
                                "--set", "train.epochs=4", NULL) == 0, "%s", msg);
    const char *from = path("ref/checkpoints/epoch_002.safetensors");
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("kept"),
                                "--set", "train.epochs=6", "--resume", from, NULL) == 0,
                  "%s", msg);
    ck_assert_msg(tt_test_train(msg, sizeof msg, path("cfg.json"), "--set", out("stretched"),
                                "--set", "train.epochs=6", "--set", "train.schedule_epochs=6",
                                "--resume", from, NULL) == 0, "%s", msg);
    read_lrs("ref", ref, 7 * S);
    read_lrs("kept", kept, 7 * S);
    read_lrs("stretched", stretched, 7 * S);
    for (int k = 2 * S + 1; k <= 4 * S; k++)
        ck_assert_msg(kept[k] == ref[k], "step %d: lr %.17g, the 4-epoch schedule's %.17g", k,
                      kept[k], ref[k]);
    for (int k = 4 * S + 1; k <= 6 * S; k++)
        ck_assert_msg(fabs(kept[k]) < 1e-15, "step %d: lr %g past the schedule's end", k,
                      kept[k]);
    for (int k = 2 * S + 1; k <= 6 * S; k++) { /* cosine over 6 epochs after 3 warm-up steps */
        double f = (double)(k - 1 - 3) / (6 * S - 3), want = 0.003 * 0.5 * (1 + cos(PI * f));
        ck_assert_msg(fabs(stretched[k] - want) <= 1e-8 * want + 1e-18, /* printed %.9g */
                      "step %d: lr %.17g, stretched cosine %.17g", k, stretched[k], want);
    }
    ck_assert_msg(stretched[2 * S + 1] > ref[2 * S + 1], "stretching did not raise the rate");
    ck_assert_int_eq(config_schedule_epochs("ref"), 4);
    ck_assert_int_eq(config_schedule_epochs("kept"), 4);
    ck_assert_int_eq(config_schedule_epochs("stretched"), 6);
}
END_TEST

/* A tag file of n lines "w<i> x<TAB>D N" (each line its own word), then one tagged Z. */
static void write_share_corpus(int n)
{
    char *text = tt_xcalloc(1, (size_t)n * 32 + 64), line[64];
    for (int i = 1; i <= n; i++) {
        snprintf(line, sizeof line, "w%d x\tD N\n", i);
        strcat(text, line);
    }
    strcat(text, "z x\tZ N\n");
    tt_test_put("share.txt", text);
    free(text);
}

/* Loads share.json with the overrides, then its corpus; valid[line] = 1 for the validation
 * lines (1-based), train[line] likewise. */
static void load_share(const char *const *sets, int n_sets, tt_config *c, tt_corpus *d,
                       int *train, int *valid, int n_lines)
{
    char err[2048];
    ck_assert_msg(tt_config_load(c, path("share.json"), sets, n_sets, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_msg(tt_corpus_load(d, c, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i <= n_lines; i++) train[i] = valid[i] = 0;
    for (int i = 0; i < d->train.n; i++) train[d->train.ex[i].line]++;
    for (int i = 0; i < d->valid.n; i++) valid[d->valid.ex[i].line]++;
}

START_TEST(test_valid_share)
{
    enum { N = 40, LINES = N + 1 };
    char err[2048], name[16];
    int tr[LINES + 1], va[LINES + 1], tr2[LINES + 1], va2[LINES + 1];
    write_share_corpus(N);
    tt_test_put("share.json", "{\"seed\": 5, \"data\": {\"task\": \"tag\", \"seq_len\": 4, "
                              "\"train\": \"share.txt\", \"valid_share\": 0.25}}");
    tt_config c, c2;
    tt_corpus d, d2;
    load_share(NULL, 0, &c, &d, tr, va, LINES);
    ck_assert_int_eq(d.valid.n, 10); /* round(0.25 * 41) */
    ck_assert_int_eq(d.train.n, LINES - 10);
    for (int line = 1; line <= LINES; line++) /* no overlap, and together the whole file */
        ck_assert_msg(tr[line] + va[line] == 1, "line %d: %d times in train, %d in valid", line,
                      tr[line], va[line]);
    ck_assert_str_eq(d.valid.path, c.data.train);
    /* the words come from the training part, the tags from the whole file */
    for (int line = 1; line <= N; line++) {
        snprintf(name, sizeof name, "w%d", line);
        ck_assert_msg((tt_vocab_find(&d.words, name, strlen(name)) >= 0) == (tr[line] == 1),
                      "%s: in the vocabulary: %d, a training line: %d", name,
                      tt_vocab_find(&d.words, name, strlen(name)) >= 0, tr[line]);
    }
    ck_assert_int_eq(d.labels.n, 3);
    ck_assert_int_ge(tt_vocab_find(&d.labels, "Z", 1), 0);
    /* the same seed, the same split; the resolved config loads again to it */
    char *json = tt_config_to_json(&c);
    ck_assert_msg(strstr(json, "\"valid_share\":") && !strstr(json, "\"valid\":"), "%s", json);
    tt_test_put("share.json", json);
    free(json);
    load_share(NULL, 0, &c2, &d2, tr2, va2, LINES);
    ck_assert(memcmp(va, va2, sizeof va) == 0 && memcmp(tr, tr2, sizeof tr) == 0);
    tt_corpus_free(&d2), tt_config_free(&c2);
    /* another seed, another split */
    const char *seed[] = {"seed=6"};
    load_share(seed, 1, &c2, &d2, tr2, va2, LINES);
    ck_assert_int_eq(d2.valid.n, 10);
    ck_assert_msg(memcmp(va, va2, sizeof va) != 0, "seeds 5 and 6 drew the same split");
    tt_corpus_free(&d2), tt_config_free(&c2);
    tt_corpus_free(&d), tt_config_free(&c);
    /* data.valid and data.valid_share together: an error naming both; null drops the file's */
    const char *both[] = {"data.valid=\"valid.txt\""}, *none[] = {"data.valid=null"};
    ck_assert_int_eq(tt_config_load(&c, path("share.json"), both, 1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "data.valid_share") && strstr(err, "data.valid "), "%s", err);
    ck_assert_msg(tt_config_load(&c, path("cfg.json"), (const char *[]){"data.valid_share=0.1"},
                                 1, err, sizeof err) == 0, "%s", err);
    tt_config_free(&c);
    tt_test_put("cfg2.json", "{\"data\": {\"task\": \"tag\", \"seq_len\": 4, \"valid\": "
                             "\"valid.txt\", \"valid_share\": 0.1}}");
    ck_assert_int_eq(tt_config_load(&c, path("cfg2.json"), NULL, 0, err, sizeof err), -1);
    ck_assert_msg(tt_config_load(&c, path("cfg2.json"), none, 1, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_str_eq(c.data.valid, "");
    tt_config_free(&c);
    /* a file of one example cannot be split */
    tt_test_put("share.txt", "a x\tD N\n");
    ck_assert_int_eq(tt_config_load(&c, path("share.json"), NULL, 0, err, sizeof err), 0);
    ck_assert_int_eq(tt_corpus_load(&d, &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "share.txt") && strstr(err, "data.valid_share"), "%s", err);
    tt_config_free(&c);
}
END_TEST

/* The scaling study, small: no empty folder or file anywhere in its folder (no checkpoints/
 * or attention/ without files, no metrics.jsonl without lines); a second study there is
 * refused. */
START_TEST(test_study_leaves_nothing_empty)
{
    char msg[4096];
    const char *study[] = {"study.samples=1000", "study.epochs=1", "study.d_model=16",
                           "study.n_heads=2"};
    ck_assert_msg(tt_test_train(msg, sizeof msg, "configs/scaling.json", "--set", out("study"),
                                "--set", study[0], "--set", study[1], "--set", study[2],
                                "--set", study[3], NULL) == 0,
                  "./train configs/scaling.json (from the repository root?): %s", msg);
    tt_test_snap s = {0};
    tt_test_snapshot(&s, path("study"), "");
    ck_assert_msg(!s.empty[0], "the study left %s empty", s.empty);
    ck_assert(exists("study/report.md") && exists("study/train_none/metrics.jsonl"));
    ck_assert(!exists("study/checkpoints") && !exists("study/attention"));
    free(s.buf);
    ck_assert_int_eq(tt_test_train(msg, sizeof msg, "configs/scaling.json", "--set",
                                   out("study"), NULL), 2);
    ck_assert_msg(strstr(msg, "report.md") && strstr(msg, "train_none/"), "%s", msg);
}
END_TEST

/* The progress line is shorter than the terminal at every width (so it never wraps), and keeps
 * the most important fields where there is room. */
START_TEST(test_progress_fits)
{
    const tt_progress big = {.epoch = 10, .epochs = 10, .step = 12345, .steps = 12345,
                             .loss = 12.3456, .tokens_per_s = 1234567, .eta_s = 123456};
    const tt_progress small = {.epoch = 3, .epochs = 10, .step = 45, .steps = 125, .loss = 0.1234,
                               .tokens_per_s = 12345, .eta_s = 12};
    char line[512];
    for (int w = 1; w <= 200; w++)
        for (int k = 0; k < 2; k++) {
            tt_progress_format(line, sizeof line, k ? &big : &small, w);
            ck_assert_msg((int)strlen(line) < w, "width %d: \"%s\" (%zu)", w, line, strlen(line));
            ck_assert(!strchr(line, '\n') && !strchr(line, '\r'));
        }
    static const struct {
        int width;
        const char *want[6];
    } cases[] = {
        {20, {"epoch 3/10"}},
        {40, {"epoch 3/10", "45/125", "loss 0.1234"}},
        {80, {"epoch 3/10", "[", "45/125", "loss 0.1234", "12345 tok/s", "ETA 12s"}},
        {200, {"epoch 3/10", "[========>", "45/125", "loss 0.1234", "12345 tok/s", "ETA 12s"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_progress_format(line, sizeof line, &small, cases[i].width);
        for (int k = 0; k < 6 && cases[i].want[k]; k++)
            ck_assert_msg(strstr(line, cases[i].want[k]), "width %d: \"%s\" lacks \"%s\"",
                          cases[i].width, line, cases[i].want[k]);
    }
    tt_progress_format(line, sizeof line, &small, 200);
    ck_assert_msg(strstr(line, "[========>               ]"), "the bar: \"%s\"", line);
}
END_TEST

Suite *runs_suite(void)
{
    Suite *s = suite_create("runs");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, tt_tmp_teardown);
    tcase_add_test(tc, test_second_run_refused);
    tcase_add_test(tc, test_overwrite_keeps_only_the_new_run);
    tcase_add_test(tc, test_resume_cuts_history);
    tcase_add_test(tc, test_resume_into_another_run);
    tcase_add_test(tc, test_overwrite_is_transactional);
    tcase_add_test(tc, test_schedule_epochs_on_resume);
    tcase_add_test(tc, test_valid_share);
    tcase_add_test(tc, test_study_leaves_nothing_empty);
    tcase_add_test(tc, test_progress_fits);
    suite_add_tcase(s, tc);
    return s;
}
