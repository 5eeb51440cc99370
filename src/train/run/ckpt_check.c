/* ckpt_check.c: the values of a checkpoint, checked before any of them is used (run.h), by
 * --resume (checkpoint.c) and ./infer (use/open.c) alike. The safetensors reader checks the
 * format; here every value copied out of the file is range-checked, with a message naming the
 * file and the entry: the metadata (format, step, epoch, a mid-epoch checkpoint's
 * epoch_loss_sum and epoch_tokens) from the header alone, before any data is read; then the
 * optimizer step, the random cursors and every real tensor (finite; exp_avg_sq >= 0). A value
 * that passes cannot overflow or break an invariant later (a counter off its Philox block,
 * a bias correction of step INT64_MAX + 1). */
#include "train/run/run.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FORMAT "tiny-transformer checkpoint 1"
#define MAX_EPOCH 999999
#define MAX_COUNT 999999999999999LL /* steps, tokens: far beyond any run, far from overflow */
/* Random cursors: a multiple of 4 (each draw starts on a fresh Philox block of 4 words, which
 * the kernels assert) and at most 2^62, so that no run's draws can wrap the 64-bit counter. */
#define MAX_CURSOR (INT64_C(1) << 62)

/* s as a plain decimal integer in [0, max]: digits only, no sign, space or trailing text. */
static bool plain_int(const char *s, long long max, long long *out)
{
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18) return false;
    long long v = strtoll(s, NULL, 10);
    if (v > max) return false;
    *out = v;
    return true;
}

static int bad_meta(const char *path, const char *key, const char *found, const char *allowed,
                    char *err, size_t errlen)
{
    return tt_errorf(err, errlen, "%s: __metadata__.%s: %s%s%s; allowed: %s", path, key,
                     found ? "\"" : "", found ? found : "missing", found ? "\"" : "", allowed);
}

/* a metadata count: plain_int, or the error naming it */
static int meta_int(const tt_st_file *f, const char *key, long long max, long long *out,
                    const char *path, char *err, size_t errlen)
{
    const char *s = tt_st_meta(f, key);
    char allowed[64];
    snprintf(allowed, sizeof allowed, "an integer 0..%lld", max);
    return plain_int(s, max, out) ? 0 : bad_meta(path, key, s, allowed, err, errlen);
}

/* What a file that tt_st_open refused is, when its first 4 KiB make it plain: a JSON object
 * with a data or model section (a config), other text, or NULL. A safetensors file starts
 * with its header's length, 8 bytes little-endian, so never with text. */
static const char *kind_of(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char head[4096];
    size_t n = fread(head, 1, sizeof head, f);
    size_t skip = n >= 3 && !memcmp(head, "\xEF\xBB\xBF", 3) ? 3 : 0; /* a byte order mark */
    /* UTF-8 (but for a character cut at the end) without control characters */
    const char *kind = n && tt_utf8_valid_prefix(head, n) + 3 >= n ? "a text file" : NULL;
    for (size_t i = 0; kind && i < n; i++)
        if ((unsigned char)head[i] < 0x20 && !isspace((unsigned char)head[i])) kind = NULL;
    size_t first = skip;
    while (first < n && isspace((unsigned char)head[first])) first++;
    char *buf = NULL, why[256];
    size_t len = 0;
    if (kind && first < n && head[first] == '{' && !fseek(f, 0, SEEK_SET) &&
        !tt_read_bounded(f, path, (size_t)1 << 20, "", &buf, &len, why, sizeof why)) {
        cJSON *j = cJSON_Parse(buf + skip);
        if (cJSON_IsObject(j) && (cJSON_HasObjectItem(j, "data") ||
                                  cJSON_HasObjectItem(j, "model")))
            kind = "a config";
        cJSON_Delete(j);
        free(buf);
    }
    fclose(f);
    return kind;
}

int tt_checkpoint_open(tt_st_file *f, const char *path, char *err, size_t errlen)
{
    char why[1024];
    if (tt_st_open(f, path, why, sizeof why) == 0) return 0;
    struct stat st;
    const char *kind = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return tt_errorf(err, errlen, "%s is a folder, not a checkpoint\nHINT: a run's "
                         "checkpoints are its folder's checkpoints/epoch_NNN.safetensors", path);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) kind = kind_of(path);
    if (!kind) return tt_errorf(err, errlen, "%s", why);
    return tt_errorf(err, errlen, "%s is %s, not a checkpoint (a safetensors file ./train "
                     "writes)\nHINT: a checkpoint of a run of %s is in the run's folder "
                     "(output.dir): checkpoints/epoch_NNN.safetensors", path, kind,
                     !strcmp(kind, "a config") ? "this config" : "a config");
}

int tt_checkpoint_check_meta(const tt_st_file *f, const char *path, tt_ckpt_info *out,
                             char *err, size_t errlen)
{
    *out = (tt_ckpt_info){0};
    const char *format = tt_st_meta(f, "format"), *loss = tt_st_meta(f, "epoch_loss_sum");
    const char *tokens = tt_st_meta(f, "epoch_tokens");
    if (!format || strcmp(format, FORMAT))
        return bad_meta(path, "format", format, "\"" FORMAT "\": a checkpoint written by ./train",
                        err, errlen);
    if (!tt_st_meta(f, "config"))
        return bad_meta(path, "config", NULL, "the resolved config (JSON) ./train writes", err,
                        errlen);
    long long epoch = 0, step = 0, n_tokens = 0;
    if (meta_int(f, "epoch", MAX_EPOCH, &epoch, path, err, errlen) ||
        meta_int(f, "step", MAX_COUNT, &step, path, err, errlen))
        return -1;
    out->epoch = (int)epoch;
    out->step = step;
    const char *run = tt_st_meta(f, "run"); /* optional: older checkpoints name no run */
    if (run && !tt_record_id_valid(run))
        return bad_meta(path, "run", run, "the id of the run that wrote it, 32 lowercase hex "
                        "digits (as its folder's run.json has it)", err, errlen);
    if (run) strcpy(out->run, run);
    if (!loss != !tokens)
        return bad_meta(path, loss ? "epoch_tokens" : "epoch_loss_sum", NULL, "present with "
                        "epoch_loss_sum and epoch_tokens: a mid-epoch checkpoint carries both",
                        err, errlen);
    out->mid_epoch = loss != NULL;
    if (out->mid_epoch) {
        char *end = NULL;
        errno = 0;
        double sum = strtod(loss, &end);
        /* strtod takes leading spaces and signs: only what "%.17g" of a sum >= 0 writes */
        if (!(loss[0] >= '0' && loss[0] <= '9') || *end || errno || !isfinite(sum) || sum < 0)
            return bad_meta(path, "epoch_loss_sum", loss, "a finite number >= 0", err, errlen);
        if (meta_int(f, "epoch_tokens", MAX_COUNT, &n_tokens, path, err, errlen)) return -1;
        out->epoch_loss_sum = sum;
        out->epoch_tokens = n_tokens;
    }
    if (step >= epoch) return 0;
    char found[64], allowed[128];
    snprintf(found, sizeof found, "%lld", step);
    snprintf(allowed, sizeof allowed, "at least the epoch, %lld (an epoch takes a step or more)",
             epoch);
    return bad_meta(path, "step", found, allowed, err, errlen);
}

int tt_checkpoint_check_step(const tt_ckpt_info *info, const char *path, int steps_per_epoch,
                             char *err, size_t errlen)
{
    const int64_t first = (int64_t)info->epoch * steps_per_epoch, next = first + steps_per_epoch;
    const int64_t step = info->step;
    if (info->mid_epoch ? step > first && step < next : step == first) return 0;
    char found[64], allowed[256];
    snprintf(found, sizeof found, "%" PRId64, step);
    if (info->mid_epoch)
        snprintf(allowed, sizeof allowed, "%" PRId64 "..%" PRId64 " for a mid-epoch checkpoint "
                 "of epoch %d at %d steps an epoch", first + 1, next - 1, info->epoch + 1,
                 steps_per_epoch);
    else
        snprintf(allowed, sizeof allowed, "%" PRId64 ", epoch %d times %d steps an epoch", first,
                 info->epoch, steps_per_epoch);
    bad_meta(path, "step", found, allowed, err, errlen);
    size_t n = err ? strlen(err) : 0;
    if (err && n < errlen)
        snprintf(err + n, errlen - n, "\nHINT: the steps of an epoch follow from "
                 "train.batch_size and the training examples: resume with the data the "
                 "checkpoint was trained on");
    return -1;
}

uint64_t tt_checkpoint_max_data(const tt_params *ps)
{
    /* the values and at most two moments, F64 at most, and the three I64 scalars */
    return 3 * (uint64_t)ps->numel * 8 + 3 * 8;
}

/* optim.NAME: one I64 in [0, max], into *out */
static int optim_int(const tt_st_file *f, const char *name, int64_t max, int64_t *out,
                     const char *path, char *err, size_t errlen)
{
    const tt_st_entry *e = tt_st_find(f, name);
    if (!e || e->dtype != TT_ST_I64 || e->numel != 1)
        return tt_errorf(err, errlen, "%s: %s is missing or not one I64; not a checkpoint of "
                         "./train", path, name);
    memcpy(out, e->data, sizeof *out);
    if (*out >= 0 && *out <= max) return 0;
    return tt_errorf(err, errlen, "%s: %s: %" PRId64 "; allowed: an integer 0..%" PRId64, path,
                     name, *out, max);
}

/* Every element of a real tensor finite (and >= 0 for a second moment). */
static int check_reals(const tt_st_entry *e, const char *path, char *err, size_t errlen)
{
    if (e->dtype != TT_ST_F32 && e->dtype != TT_ST_F64) return 0;
    const bool square = strncmp(e->name, "optim.exp_avg_sq.", 17) == 0;
    const uint8_t *p = e->data;
    for (int64_t i = 0; i < e->numel; i++) {
        double v;
        if (e->dtype == TT_ST_F32) {
            float x;
            memcpy(&x, p + 4 * i, 4);
            v = (double)x;
        } else {
            memcpy(&v, p + 8 * i, 8);
        }
        if (isfinite(v) && (!square || v >= 0)) continue;
        return tt_errorf(err, errlen, "%s: tensor \"%s\": element %" PRId64 " is %g; allowed: %s "
                         "(did the run that wrote it diverge?)", path, e->name, i, v,
                         square ? "finite numbers >= 0 (a mean of squares)" : "finite numbers");
    }
    return 0;
}

int tt_checkpoint_check_data(const tt_st_file *f, const char *path, tt_ckpt_info *info,
                             char *err, size_t errlen)
{
    /* ./train takes one optimizer step a step: the bias corrections of a resumed AdamW would
     * be wrong with any other t */
    if (optim_int(f, "optim.step", MAX_COUNT, &info->optim_step, path, err, errlen) ||
        optim_int(f, "optim.rng.dropout", MAX_CURSOR, &info->rng_dropout, path, err, errlen) ||
        optim_int(f, "optim.rng.mask", MAX_CURSOR, &info->rng_mask, path, err, errlen))
        return -1;
    if (info->optim_step != info->step)
        return tt_errorf(err, errlen, "%s: optim.step: %" PRId64 "; allowed: %" PRId64 ", the "
                         "checkpoint's __metadata__.step (one optimizer step a training step)",
                         path, info->optim_step, info->step);
    const char *names[2] = {"optim.rng.dropout", "optim.rng.mask"};
    const int64_t cursors[2] = {info->rng_dropout, info->rng_mask};
    for (int k = 0; k < 2; k++)
        if (cursors[k] % 4)
            return tt_errorf(err, errlen, "%s: %s: %" PRId64 "; allowed: a multiple of 4 (every "
                             "draw starts on a fresh Philox block of 4 words)", path, names[k],
                             cursors[k]);
    for (int i = 0; i < f->n; i++)
        if (check_reals(&f->entries[i], path, err, errlen)) return -1;
    return 0;
}

/* ---- the config a checkpoint resumes under ---- */

/* Keys that must match: the model's shapes and semantics (model.*), what shapes the corpus and
 * its split (seed: also the shuffle of every epoch and the valid_share split), what the saved
 * moments mean (train.optimizer) and the relation of steps to epochs (train.batch_size).
 * Keys that may change silently: where and how fast it runs, what it writes, how long it
 * trains. Any other difference (a learning rate, a data path...) is accepted with a note: a
 * deliberate change of course that leaves the checkpoint meaningful. docs/training.md's "Resume
 * rules" lists the same. */
static const char *const MUST_MATCH[] = {"seed", "model.*", "data.task", "data.seq_len",
                                         "data.truncate", "data.mask_prob", "data.valid_share",
                                         "train.optimizer", "train.batch_size"};
static const char *const MAY_CHANGE[] = {"device", "threads", "matmul_precision",
                                         "cuda_graphs", "output.*", "train.epochs",
                                         "train.schedule_epochs", "data.probes", "study.*"};

static bool listed(const char *key, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (fnmatch(list[i], key, 0) == 0) return true;
    return false;
}

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

/* Appends to out the keys (dotted) whose leaf values differ between objects a and b (either
 * may lack a key); `must` set: only the MUST_MATCH keys, else only the others that are not
 * MAY_CHANGE. Returns the count. */
static int differences(const cJSON *a, const cJSON *b, const char *prefix, bool must, char *out,
                       size_t len)
{
    int count = 0;
    for (int side = 0; side < 2; side++)
        for (const cJSON *x = (side ? b : a)->child; x; x = x->next) {
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(side ? a : b, x->string);
            if (side && y) continue; /* seen from a */
            char key[256];
            snprintf(key, sizeof key, "%s%s", prefix, x->string);
            if (cJSON_IsObject(x) && cJSON_IsObject(y)) {
                strcat(key, ".");
                count += differences(x, y, key, must, out, len);
                continue;
            }
            if ((y && cJSON_Compare(x, y, true)) || listed(key, MAY_CHANGE, N_OF(MAY_CHANGE)) ||
                listed(key, MUST_MATCH, N_OF(MUST_MATCH)) != must)
                continue;
            const cJSON *in_ckpt = side ? y : x, *in_cfg = side ? x : y;
            char *v1 = in_ckpt ? cJSON_PrintUnformatted(in_ckpt) : NULL;
            char *v2 = in_cfg ? cJSON_PrintUnformatted(in_cfg) : NULL;
            size_t n = strlen(out);
            snprintf(out + n, len - n, "\n  %s: %s in the checkpoint, %s in the config", key,
                     v1 ? v1 : "absent", v2 ? v2 : "absent");
            free(v1);
            free(v2);
            count++;
        }
    return count;
}

int tt_checkpoint_check_config(const tt_config *cfg, const char *ckpt_json, const char *path,
                               char *err, size_t errlen)
{
    tt_config old = {0};
    char origin[TT_CONFIG_PATH + 64], msg[1024];
    snprintf(origin, sizeof origin, "%s: __metadata__.config", path);
    if (tt_config_from_text(&old, ckpt_json, origin, NULL, 0, msg, sizeof msg))
        return tt_errorf(err, errlen, "%s", msg);
    /* both resolved the same way, so that a default spelt out in one is no difference */
    char *ta = tt_config_to_json(&old), *tb = tt_config_to_json(cfg);
    cJSON *a = cJSON_Parse(ta), *b = cJSON_Parse(tb);
    TT_ASSERT_MSG(a && b, "a resolved config does not parse back");
    char must[2048] = "", notes[2048] = "";
    int n = differences(a, b, "", true, must, sizeof must);
    if (!n && differences(a, b, "", false, notes, sizeof notes)) {
        fputs("note: resuming ", stdout);
        tt_term_puts(stdout, path, "");
        fputs(" with a config that differs from the checkpoint's:", stdout);
        tt_term_puts(stdout, notes, "\n");
        fputc('\n', stdout);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(ta);
    free(tb);
    tt_config_free(&old);
    if (!n) return 0;
    return tt_errorf(err, errlen, "%s: the checkpoint was trained under another config; %d "
                     "key%s must match to resume:%s\nHINT: resume with the config the checkpoint "
                     "was trained with (docs/training.md: Resume rules)",
                     path, n, n > 1 ? "s" : "", must);
}
