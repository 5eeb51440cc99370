/* test_ckpt.c: checkpoints as user input, ./train --resume and ./infer driven in process on a
 * small tagging run: every bad value the issue names (a step or epoch that is negative, huge,
 * not a plain integer or inconsistent; a random cursor off its Philox block; optim.step
 * INT64_MAX; NaN in a parameter or a moment) exits 2 naming the file and the entry; a 64 GB
 * sparse file, garbage or a sound header declaring huge tensors, and a FIFO or /dev/zero exit
 * 2 at once, in small memory; a checkpoint of another model is refused naming every differing
 * key, while a legal change (train.epochs) resumes. The run folder: atomic writes by mkstemp
 * names that no leftover blocks, a killed run's temporary files removed by the next, and the
 * folder's lock (a second ./train exits 2, the folder unchanged). */
#include "testutil.h"
#include "train_testutil.h"

#include "tensor/safetensors.h"
#include "train/cli.h"
#include "train/infer.h"
#include "train/report/render.h"
#include "train/run/run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *CONFIG =
    "{\n"
    "  \"seed\": 3, \"threads\": 1,\n"
    "  \"data\": {\"task\": \"tag\", \"seq_len\": 6},\n"
    "  \"model\": {\"d_model\": 16, \"n_heads\": 2, \"n_layers\": 1, \"d_ff\": 32},\n"
    "  \"train\": {\"epochs\": 1, \"batch_size\": 8, \"lr\": 0.003},\n"
    "  \"output\": {\"dir\": \"%s/run\", \"checkpoint_every\": 1}\n"
    "}\n";
enum { STEPS_PER_EPOCH = 11 }; /* 84 training lines in batches of 8 */
#define CKPT "run/checkpoints/epoch_001.safetensors"

#define LEN 8192
static char msg[LEN], out[LEN];

static const char *path(const char *rel) { return tt_test_path(rel); }

static int call(int (*main_fn)(int, char **), ...)
{
    va_list ap;
    va_start(ap, main_fn);
    int rc = tt_test_main(main_fn, out, msg, LEN, ap);
    va_end(ap);
    return rc;
}

/* The corpus, the config, and one epoch trained: CKPT. */
static void setup(void)
{
    tt_test_setup_tag_run(CONFIG);
    ck_assert_msg(call(tt_train_main, path("cfg.json"), NULL) == 0, "%s", msg);
}

/* One change to a checkpoint: metadata `key` set to val (NULL: removed), optionally a second
 * key; element 0 of `tensor` set to real_v (a real tensor) or int_v (an I64). */
typedef struct edit {
    const char *key, *val, *key2, *val2;
    const char *tensor;
    double real_v;
    int64_t int_v;
    const char *want; /* the entry the message must name */
    bool resume_only; /* ./infer cannot tell (it has no data: the steps of an epoch) */
} edit;

/* src with the edit applied, written to dst. */
static void rewrite(const char *src, const char *dst, const edit *e)
{
    tt_st_file f;
    char err[512];
    ck_assert_msg(tt_st_load(&f, src, err, sizeof err) == 0, "%s", err);
    tt_st_writer w;
    tt_st_writer_init(&w);
    uint8_t *copy = NULL;
    for (int i = 0; i < f.n; i++) {
        const tt_st_entry *t = &f.entries[i];
        const void *data = t->data;
        if (e->tensor && !strcmp(t->name, e->tensor)) {
            copy = tt_xmalloc(t->nbytes);
            memcpy(copy, t->data, t->nbytes);
            float x = (float)e->real_v;
            if (t->dtype == TT_ST_I64) memcpy(copy, &e->int_v, 8);
            else if (t->dtype == TT_ST_F64) memcpy(copy, &e->real_v, 8);
            else memcpy(copy, &x, 4);
            data = copy;
        }
        tt_st_writer_add(&w, t->name, t->dtype, t->ndim, t->shape, data);
    }
    ck_assert_msg(!e->tensor || copy, "no tensor %s", e->tensor);
    for (int i = 0; i < f.n_meta; i++) {
        const char *k = f.meta_keys[i];
        bool one = e->key && !strcmp(k, e->key), two = e->key2 && !strcmp(k, e->key2);
        if (!one && !two) tt_st_writer_meta(&w, k, f.meta_vals[i]);
    }
    if (e->key && e->val) tt_st_writer_meta(&w, e->key, e->val);
    if (e->key2 && e->val2) tt_st_writer_meta(&w, e->key2, e->val2);
    ck_assert_msg(tt_st_writer_save(&w, dst, err, sizeof err) == 0, "%s", err);
    tt_st_writer_free(&w);
    free(copy);
    tt_st_close(&f);
}

/* ./train --resume and ./infer on `file` exit 2, naming the file and `a` (and b). */
static void expect_refused(const char *label, const char *file, const char *a, const char *b,
                           bool infer_too)
{
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--resume", file, NULL) == 2,
                  "%s: --resume accepted it: %s", label, msg);
    ck_assert_msg(strstr(msg, file) && strstr(msg, a) && (!b || strstr(msg, b)),
                  "%s: --resume: want %s and %s in: %s", label, a, b ? b : "", msg);
    if (!infer_too) return;
    ck_assert_msg(call(tt_infer_main, "predict", file, "a x p a", NULL) == 2,
                  "%s: ./infer accepted it: %s", label, msg);
    ck_assert_msg(strstr(msg, file) && strstr(msg, a) && (!b || strstr(msg, b)),
                  "%s: ./infer: want %s and %s in: %s", label, a, b ? b : "", msg);
}

START_TEST(test_bad_values)
{
    static const edit cases[] = {
        {.key = "step", .val = "-1", .want = "__metadata__.step"},
        {.key = "step", .val = "99999999999999999999", .want = "__metadata__.step"},
        {.key = "step", .val = "12", .want = "__metadata__.step", .resume_only = true},
        {.key = "step", .val = "0x0b", .want = "__metadata__.step"},
        {.key = "epoch", .val = "abc", .want = "__metadata__.epoch"},
        {.key = "epoch", .val = "-1", .want = "__metadata__.epoch"},
        {.key = "epoch", .val = "1e3", .want = "__metadata__.epoch"},
        {.key = "epoch", .val = " 3", .want = "__metadata__.epoch"},
        {.key = "epoch", .val = "1000000", .want = "__metadata__.epoch"},
        {.key = "epoch", .val = NULL, .want = "__metadata__.epoch"},
        {.key = "format", .val = "safetensors", .want = "__metadata__.format"},
        {.key = "run", .val = "not-a-run-id", .want = "__metadata__.run"},
        {.key = "run", .val = "0123456789ABCDEF0123456789ABCDEF", .want = "__metadata__.run"},
        {.key = "epoch_loss_sum", .val = "3.5", .want = "epoch_tokens"},
        {.key = "epoch_loss_sum", .val = "nan", .key2 = "epoch_tokens", .val2 = "40",
         .want = "epoch_loss_sum"},
        {.key = "epoch_loss_sum", .val = "3.5", .key2 = "epoch_tokens", .val2 = "40",
         .want = "mid-epoch", .resume_only = true}, /* step 11 ends epoch 1: not inside it */
        {.tensor = "optim.step", .int_v = INT64_MAX, .want = "optim.step"},
        {.tensor = "optim.step", .int_v = 10, .want = "optim.step"},
        {.tensor = "optim.rng.dropout", .int_v = 6, .want = "optim.rng.dropout"},
        {.tensor = "optim.rng.dropout", .int_v = -4, .want = "optim.rng.dropout"},
        {.tensor = "optim.rng.mask", .int_v = INT64_MAX - 3, .want = "optim.rng.mask"},
        {.tensor = "embed.weight", .real_v = NAN, .want = "embed.weight"},
        {.tensor = "head.bias", .real_v = INFINITY, .want = "head.bias"},
        {.tensor = "optim.exp_avg.head.weight", .real_v = NAN, .want = "optim.exp_avg.head"},
        {.tensor = "optim.exp_avg_sq.head.bias", .real_v = -1, .want = "optim.exp_avg_sq"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const edit *e = &cases[i];
        char name[64], label[128];
        snprintf(name, sizeof name, "bad_%zu.safetensors", i);
        snprintf(label, sizeof label, "case %zu (%s %s)", i, e->key ? e->key : e->tensor,
                 e->val ? e->val : "");
        rewrite(path(CKPT), path(name), e);
        expect_refused(label, path(name), e->want, NULL, !e->resume_only);
    }
    /* the untouched file resumes (train.epochs raised: a legal change) and is usable */
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                       "train.epochs=2", NULL) == 0, "%s", msg);
    ck_assert_msg(call(tt_infer_main, "predict", path(CKPT), "a x p a", NULL) == 0, "%s", msg);
}
END_TEST

/* A mid-epoch checkpoint (the agreement with the signal handling: step strictly inside the
 * next epoch, epoch_loss_sum and epoch_tokens present) passes; the same pair on an epoch's
 * step, or a step of another epoch, does not. */
START_TEST(test_mid_epoch_values)
{
    static const struct {
        const char *step, *loss, *tokens;
        int ok;
    } cases[] = {
        {"15", "30.25", "120", 1},   {"12", "0", "0", 1},        {"21", "1e2", "7", 1},
        {"11", "30.25", "120", 0},   {"22", "30.25", "120", 0},  {"15", NULL, NULL, 0},
        {"15", "-1", "120", 0},      {"15", "inf", "120", 0},    {"15", "30", "-5", 0},
        {"15", " 30", "120", 0},     {"15", "30x", "120", 0},    {"11", NULL, NULL, 1},
        {"15", "", "120", 0},        {"15", "30", "", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        edit e = {.key = "step", .val = cases[i].step, .key2 = "epoch_loss_sum",
                  .val2 = cases[i].loss};
        rewrite(path(CKPT), path("mid.safetensors"), &e);
        edit t = {.key = "epoch_tokens", .val = cases[i].tokens};
        rewrite(path("mid.safetensors"), path("mid.safetensors"), &t);
        tt_st_file f;
        tt_ckpt_info info;
        char err[1024] = "";
        ck_assert(tt_st_open(&f, path("mid.safetensors"), err, sizeof err) == 0);
        int rc = tt_checkpoint_check_meta(&f, "mid", &info, err, sizeof err);
        if (!rc) rc = tt_checkpoint_check_step(&info, "mid", STEPS_PER_EPOCH, err, sizeof err);
        tt_st_close(&f);
        ck_assert_msg((rc == 0) == cases[i].ok, "case %zu: step %s, loss %s, tokens %s: %s", i,
                      cases[i].step, cases[i].loss, cases[i].tokens, rc ? err : "accepted");
        if (rc == 0 && cases[i].loss)
            ck_assert(info.mid_epoch && info.epoch_tokens == atoll(cases[i].tokens) &&
                      info.epoch_loss_sum == atof(cases[i].loss));
        if (rc) ck_assert_msg(strstr(err, "mid: __metadata__."), "%s", err);
    }
}
END_TEST

START_TEST(test_model_mismatch)
{
    ck_assert_int_eq(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                          "model.d_model=32", "--set", "model.n_heads=4", "--set",
                          "train.batch_size=4", "--set", "train.epochs=2", NULL), 2);
    static const char *const want[] = {
        "model.d_model: 16 in the checkpoint, 32 in the config",
        "model.n_heads: 2 in the checkpoint, 4 in the config",
        "train.batch_size: 8 in the checkpoint, 4 in the config", CKPT};
    for (int i = 0; i < 4; i++) ck_assert_msg(strstr(msg, want[i]), "no %s in: %s", want[i], msg);
    ck_assert_msg(!strstr(msg, "train.epochs"), "a legal change named: %s", msg);
    ck_assert_int_eq(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                          "data.seq_len=5", "--set", "train.optimizer=\"sgd\"", NULL), 2);
    ck_assert_msg(strstr(msg, "data.seq_len: 6 in the checkpoint, 5 in the config") &&
                  strstr(msg, "train.optimizer"), "%s", msg);
    /* legal: a longer run on more threads, and another learning rate (with a note) */
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                       "train.epochs=2", "--set", "train.lr=0.001", "--set",
                       "threads=2", NULL) == 0, "%s", msg);
    ck_assert_msg(strstr(out, "train.lr: 0.003 in the checkpoint, 0.001 in the config") &&
                  !strstr(out, "threads") && !strstr(out, "train.epochs"), "%s", out);
}
END_TEST

/* ---- bounded: files too large, or not files ---- */

static size_t max_rss_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (size_t)u.ru_maxrss;
}

/* A sparse file of 64 GiB starting with bytes[0..n); false (and a SKIP line) where the
 * filesystem cannot hold one. */
static bool sparse_64g(const char *file, const void *bytes, size_t n)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert(fd >= 0);
    ck_assert(write(fd, bytes, n) == (ssize_t)n);
    struct stat st;
    bool ok = ftruncate(fd, (off_t)64 << 30) == 0 && fstat(fd, &st) == 0 &&
              (uint64_t)st.st_blocks * 512 < ((uint64_t)64 << 20);
    close(fd);
    if (!ok) {
        printf("SKIP: %s: this filesystem holds no sparse 64 GiB file\n", file);
        unlink(file);
    }
    return ok;
}

/* The checkpoint's header (metadata, every tensor) plus "optim.zzz", an F32 tensor that fills
 * the file up to 64 GiB: a sound header that declares huge data. */
static size_t huge_header(uint8_t **bytes)
{
    tt_st_file f;
    char err[512];
    ck_assert_msg(tt_st_load(&f, path(CKPT), err, sizeof err) == 0, "%s", err);
    cJSON *h = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(h, "__metadata__");
    for (int i = 0; i < f.n_meta; i++) cJSON_AddStringToObject(meta, f.meta_keys[i],
                                                              f.meta_vals[i]);
    for (int i = 0; i < f.n; i++) {
        const tt_st_entry *e = &f.entries[i];
        cJSON *t = cJSON_AddObjectToObject(h, e->name);
        cJSON_AddStringToObject(t, "dtype", tt_st_dtype_name(e->dtype));
        double shape[TT_ST_MAX_DIMS], off[2] = {(double)e->offset, (double)(e->offset + e->nbytes)};
        for (int d = 0; d < e->ndim; d++) shape[d] = (double)e->shape[d];
        cJSON_AddItemToObject(t, "shape", cJSON_CreateDoubleArray(shape, e->ndim));
        cJSON_AddItemToObject(t, "data_offsets", cJSON_CreateDoubleArray(off, 2));
    }
    char *text = cJSON_PrintUnformatted(h);
    size_t n = (strlen(text) + 160) & ~(size_t)7; /* 8 + n a multiple of 8, room for the entry */
    double end = (double)(((uint64_t)64 << 30) - 8 - n);
    char entry[256];
    snprintf(entry, sizeof entry, ",\"optim.zzz\":{\"dtype\":\"F32\",\"shape\":[%.0f],"
             "\"data_offsets\":[%zu,%.0f]}}", (end - (double)f.data_size) / 4, f.data_size, end);
    text[strlen(text) - 1] = '\0';
    uint8_t *b = tt_xcalloc(1, 8 + n + f.data_size + strlen(entry));
    uint64_t len = n;
    memcpy(b, &len, 8);
    int w = snprintf((char *)b + 8, n + 1, "%s%s", text, entry);
    ck_assert(w > 0 && (size_t)w <= n);
    memset(b + 8 + w, ' ', n - (size_t)w);
    memcpy(b + 8 + n, f.buf + f.data_at, f.data_size);
    free(text);
    cJSON_Delete(h);
    size_t total = 8 + n + f.data_size;
    tt_st_close(&f);
    *bytes = b;
    return total;
}

START_TEST(test_huge_and_special_files)
{
    size_t rss = max_rss_kb();
    const char *big = path("big.safetensors");
    static const char garbage[] = "\x47\x41\x52\x42\x41\x47\x45\x21 not a checkpoint";
    if (sparse_64g(big, garbage, sizeof garbage))
        expect_refused("64 GiB of garbage", big, "header length", NULL, true);
    uint8_t *hdr;
    size_t n = huge_header(&hdr);
    if (sparse_64g(big, hdr, n)) expect_refused("64 GiB declared", big, "bytes", NULL, true);
    free(hdr);
    unlink(big);
    ck_assert_msg(max_rss_kb() < rss + 256 * 1024, "max RSS grew from %zu to %zu kB", rss,
                  max_rss_kb());
    /* not regular files: refused at once, a FIFO without waiting for a writer */
    ck_assert(mkfifo(path("fifo"), 0600) == 0);
    expect_refused("a FIFO", path("fifo"), "not a regular file", NULL, true);
    expect_refused("/dev/zero", "/dev/zero", "not a regular file", NULL, true);
    expect_refused("/dev/urandom", "/dev/urandom", "not a regular file", NULL, true);
}
END_TEST

/* ---- the run folder: temporary files and the lock ---- */

/* A leftover with this process's pid (the old naming) or any other name never blocks an
 * atomic write; the file gets 0666 less the umask, as open() gave it. */
START_TEST(test_atomic_names)
{
    char old[512], err[512];
    snprintf(old, sizeof old, "%s.tmp.%ld", path("x.txt"), (long)getpid());
    tt_test_put("x.txt.tmp.1", "left by a killed PID 1\n");
    tt_test_put(strrchr(old, '/') + 1, "left by this pid\n");
    static const mode_t masks[] = {022, 077, 0};
    for (int i = 0; i < 3; i++) {
        mode_t before = umask(masks[i]);
        tt_atomic_file o;
        ck_assert_msg(tt_atomic_open(&o, path("x.txt"), err, sizeof err) == 0, "%s", err);
        ck_assert_msg(strncmp(o.tmp, path("x.txt.tmp."), strlen(path("x.txt.tmp."))) == 0 &&
                      strlen(o.tmp) == strlen(path("x.txt.tmp.XXXXXX")), "%s", o.tmp);
        fputs("new\n", o.f);
        ck_assert_msg(tt_atomic_close(&o, true, err, sizeof err) == 0, "%s", err);
        umask(before);
        struct stat st;
        ck_assert(stat(path("x.txt"), &st) == 0);
        ck_assert_msg((st.st_mode & 0777) == (0666 & ~masks[i]), "mode %o under umask %03o",
                      (unsigned)(st.st_mode & 0777), (unsigned)masks[i]);
    }
}
END_TEST

static bool exists(const char *rel) { return access(path(rel), F_OK) == 0; }

/* Temporary files a killed run left (the old pid names and mkstemp's) block nothing and go
 * when the next run claims the folder; a user's file that merely looks alike stays. */
START_TEST(test_stale_temp_files)
{
    static const char *const stale[] = {"run/" "checkpoints/epoch_001.safetensors.tmp.1",
                                        "run/metrics.jsonl.tmp.Ab12Cd",
                                        "run/config.json.tmp.x9Y8z7"};
    for (int i = 0; i < 3; i++) tt_test_put(stale[i], "half a file");
    tt_test_put("run/notes.tmp.txt", "mine");
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                       "train.epochs=2", NULL) == 0, "%s", msg);
    for (int i = 0; i < 3; i++) ck_assert_msg(!exists(stale[i]), "%s is still there", stale[i]);
    ck_assert(exists("run/notes.tmp.txt") && exists("run/checkpoints/epoch_002.safetensors"));
    ck_assert_msg(strstr(out, "removed 3 temporary files"), "%s", out);
    /* a folder that holds only a killed run's temporary file is no run's: a new run starts */
    ck_assert_int_eq(mkdir(path("fresh"), 0777), 0);
    tt_test_put("fresh/config.json.tmp.123", "{");
    char dir[1200];
    snprintf(dir, sizeof dir, "output.dir=%s", path("fresh"));
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--set", dir, NULL) == 0, "%s", msg);
    ck_assert(!exists("fresh/config.json.tmp.123") && exists("fresh/config.json"));
}
END_TEST

/* A checkpoint that names no run (an older version's) is refused by a folder that has a
 * run.json; a folder with none (an older version's) takes only one of its own checkpoints,
 * the very file, and then gets a run.json listing its files; --overwrite of such a folder
 * removes the exact names a run writes, never a file of the user's named like one. */
START_TEST(test_run_identity)
{
    rewrite(path(CKPT), path("legacy.safetensors"), &(edit){.key = "run", .val = NULL});
    tt_test_snap before = {0};
    tt_test_snapshot(&before, path("run"), "");
    ck_assert_int_eq(call(tt_train_main, path("cfg.json"), "--resume", path("legacy.safetensors"),
                          "--set", "train.epochs=2", NULL), 2);
    ck_assert_msg(strstr(msg, "this folder belongs to run") && strstr(msg, "none named") &&
                  strstr(msg, "HINT:"), "%s", msg);
    tt_test_snap_unchanged("a checkpoint of no run", &before, path("run"));
    /* a run.json that is no record (or a link) leaves the folder's run unknown: refused */
    char *record = tt_render_slurp(path("run/run.json"), msg, sizeof msg);
    ck_assert_msg(record, "%s", msg);
    static const char *const broken[] = {"{\"run\": \"x\", \"files\": []}\n",
                                         "{\"run\": \"0123456789abcdef0123456789abcdef\", "
                                         "\"started\": \"now\", \"files\": [\"../x\"]}\n"};
    for (int i = 0; i < 3; i++) {
        if (i < 2) tt_test_put("run/run.json", broken[i]);
        else ck_assert(!unlink(path("run/run.json")) && !symlink("run.real", path("run/run.json")));
        for (int k = 0; k < 2; k++) {
            free(before.buf);
            before = (tt_test_snap){0};
            tt_test_snapshot(&before, path("run"), "");
            ck_assert_int_eq(k ? call(tt_train_main, path("cfg.json"), "--overwrite", NULL)
                               : call(tt_train_main, path("cfg.json"), "--resume", path(CKPT),
                                      NULL), 2);
            ck_assert_msg(strstr(msg, "run.json: ") && strstr(msg, "nothing was changed"), "%s",
                          msg);
            tt_test_snap_unchanged("a broken run.json", &before, path("run"));
        }
    }
    free(before.buf);
    before = (tt_test_snap){0};
    ck_assert_int_eq(unlink(path("run/run.json")), 0);
    tt_test_put("run/run.json", record);
    free(record);
    /* the folder of an older version: no run.json */
    ck_assert_int_eq(unlink(path("run/run.json")), 0);
    tt_test_snapshot(&before, path("run"), "");
    ck_assert_int_eq(call(tt_train_main, path("cfg.json"), "--resume", path("legacy.safetensors"),
                          "--set", "train.epochs=2", NULL), 2);
    ck_assert_msg(strstr(msg, "no run.json") && strstr(msg, "not one of its checkpoints"), "%s",
                  msg);
    tt_test_snap_unchanged("a checkpoint from elsewhere", &before, path("run"));
    free(before.buf);
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                       "train.epochs=2", NULL) == 0, "%s", msg);
    char err[512], *text = tt_render_slurp(path("run/run.json"), err, sizeof err);
    ck_assert_msg(text && strstr(text, "\"checkpoints/epoch_001.safetensors\"") &&
                  strstr(text, "\"checkpoints/epoch_002.safetensors\"") &&
                  strstr(text, "\"metrics.jsonl\""), "%s", text ? text : err);
    free(text);
    /* --overwrite of an older version's folder: the exact names only */
    ck_assert_int_eq(unlink(path("run/run.json")), 0);
    static const char *const mine[] = {"run/checkpoints/epoch_0001.safetensors",
                                       "run/checkpoints/epoch_001.safetensors.tmp.mine",
                                       "run/checkpoints/step_1.safetensors",
                                       "run/metrics.jsonl.tmp.x"};
    for (int i = 0; i < 4; i++) tt_test_put(mine[i], "the user's\n");
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--overwrite", NULL) == 0, "%s", msg);
    for (int i = 0; i < 4; i++) ck_assert_msg(exists(mine[i]), "%s was removed", mine[i]);
    ck_assert(!exists("run/checkpoints/epoch_002.safetensors") && exists(CKPT));
    ck_assert_msg(strstr(out, "kept 4 files the run did not write"), "%s", out);
}
END_TEST

/* A second ./train into a folder whose lock another process holds exits 2 and changes no
 * byte there; the lock goes with its holder, even one killed by SIGKILL. */
START_TEST(test_folder_lock)
{
    ck_assert_int_eq(mkdir(path("maps"), 0777), 0);
    int ready[2], hold[2];
    ck_assert(pipe(ready) == 0 && pipe(hold) == 0);
    pid_t child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        char err[512], c = 0;
        int fd;
        close(ready[0]);
        close(hold[1]);
        if (tt_run_folder_lock(path("run"), &fd, err, sizeof err) != 0 ||
            tt_run_folder_lock(path("maps"), &fd, err, sizeof err) != 0)
            _exit(3);
        if (write(ready[1], &c, 1) != 1) _exit(4);
        while (read(hold[0], &c, 1) < 0 && errno == EINTR) continue;
        _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    char c;
    ck_assert_msg(read(ready[0], &c, 1) == 1, "the child did not take the lock");
    tt_test_snap before = {0}, after = {0};
    tt_test_snapshot(&before, path("run"), "");
    ck_assert_int_eq(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                          "train.epochs=2", NULL), 2);
    ck_assert_msg(strstr(msg, path("run")) && strstr(msg, "another ./train is using this "
                  "folder"), "%s", msg);
    ck_assert_int_eq(call(tt_train_main, path("cfg.json"), "--overwrite", NULL), 2);
    ck_assert_msg(strstr(msg, "another ./train"), "%s", msg);
    /* ./infer maps --out takes the same lock (maps/ is empty, as --out wants) */
    ck_assert_int_eq(call(tt_infer_main, "maps", path(CKPT), "a x", "--out", path("maps"),
                          NULL), 2);
    ck_assert_msg(strstr(msg, "another ./train"), "%s", msg);
    tt_test_snapshot(&after, path("run"), "");
    ck_assert_msg(before.n == after.n && memcmp(before.buf, after.buf, before.n) == 0,
                  "a refused run changed the folder");
    free(before.buf);
    free(after.buf);
    kill(child, SIGKILL);
    int status;
    ck_assert(waitpid(child, &status, 0) == child && WIFSIGNALED(status));
    close(ready[0]);
    close(hold[1]);
    ck_assert_msg(call(tt_train_main, path("cfg.json"), "--resume", path(CKPT), "--set",
                       "train.epochs=2", NULL) == 0, "%s", msg);
    ck_assert_msg(call(tt_infer_main, "maps", path(CKPT), "a x", "--out", path("maps"), NULL) ==
                  0, "%s", msg);
}
END_TEST

Suite *ckpt_suite(void)
{
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("values");
    tcase_add_checked_fixture(tc, setup, tt_tmp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_mid_epoch_values);
    tcase_add_test(tc, test_model_mismatch);
    suite_add_tcase(s, tc);
    /* a file read whole, or a FIFO waited on, would run past this */
    TCase *tb = tcase_create("bounded");
    tcase_add_checked_fixture(tb, setup, tt_tmp_teardown);
    tcase_set_timeout(tb, 30);
    tcase_add_test(tb, test_huge_and_special_files);
    suite_add_tcase(s, tb);
    TCase *tf = tcase_create("folder");
    tcase_add_checked_fixture(tf, setup, tt_tmp_teardown);
    tcase_set_timeout(tf, 120);
    tcase_add_test(tf, test_atomic_names);
    tcase_add_test(tf, test_stale_temp_files);
    tcase_add_test(tf, test_folder_lock);
    tcase_add_test(tf, test_run_identity);
    suite_add_tcase(s, tf);
    return s;
}
