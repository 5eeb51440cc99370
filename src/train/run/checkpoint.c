/* checkpoint.c: checkpoints, safetensors (docs/design.md section 5).
 * A checkpoint holds the parameters under their PyTorch names, the optimizer state under
 * optim.<kind>.<name>, the optimizer step and the random cursors as I64 optim.* scalars, and
 * in __metadata__ the resolved config, the step, the epoch, the vocabulary and the labels (JSON
 * arrays); a mid-epoch checkpoint (checkpoints/step_NNNNNNNN, written when a signal stops
 * the run) adds epoch_loss_sum ("%.17g", so the epoch's mean loss comes out the same) and
 * epoch_tokens. Loading checks all of it before anything changes, so a bad file leaves the run
 * as it was. */
#include "train/run/run.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *vocab_json(const tt_vocab *v)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < v->n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(v->words[i]));
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    TT_ASSERT_MSG(s, "out of memory printing a vocabulary");
    return s;
}

static const char *moment_name(const tt_optim *o, int k)
{
    if (o->kind == TT_OPT_SGD) return k == 0 ? "optim.momentum." : NULL;
    return k == 0 ? "optim.exp_avg." : "optim.exp_avg_sq.";
}

int tt_checkpoint_save(tt_run *r, const char *path, char *err, size_t errlen)
{
    const tt_params *ps = &r->model.params;
    /* host copies of the values and the moments the optimizer has (SGD: one), alive until the
     * save (the writer keeps pointers) */
    const real *dev[3] = {NULL, r->opt.m, r->opt.v};
    real *host[3] = {tt_params_host_alloc(ps, NULL, true), NULL, NULL};
    tt_st_writer w;
    tt_st_writer_init(&w);
    tt_params_write(ps, host[0], &w, "");
    for (int k = 0; k < 2; k++)
        if (moment_name(&r->opt, k)) {
            host[1 + k] = tt_params_host_alloc(ps, dev[1 + k], true);
            tt_params_write(ps, host[1 + k], &w, moment_name(&r->opt, k));
        }
    int64_t one = 1, state[3] = {r->opt.t, (int64_t)r->dropout.counter,
                                 (int64_t)r->mask.counter};
    tt_st_writer_add(&w, "optim.step", TT_ST_I64, 1, &one, &state[0]);
    tt_st_writer_add(&w, "optim.rng.dropout", TT_ST_I64, 1, &one, &state[1]);
    tt_st_writer_add(&w, "optim.rng.mask", TT_ST_I64, 1, &one, &state[2]);
    char *cfg = tt_config_to_json(&r->cfg), *words = vocab_json(&r->data.words),
         *labels = vocab_json(&r->data.labels), num[32];
    tt_st_writer_meta(&w, "format", "tiny-transformer checkpoint 1");
    tt_st_writer_meta(&w, "config", cfg);
    snprintf(num, sizeof num, "%lld", (long long)r->step);
    tt_st_writer_meta(&w, "step", num);
    snprintf(num, sizeof num, "%d", r->epoch);
    tt_st_writer_meta(&w, "epoch", num);
    tt_st_writer_meta(&w, "vocabulary", words);
    tt_st_writer_meta(&w, "labels", labels);
    char sum[40], tokens[32];
    if (r->epoch_step) {
        snprintf(sum, sizeof sum, "%.17g", r->epoch_loss_sum);
        snprintf(tokens, sizeof tokens, "%lld", (long long)r->epoch_tokens);
        tt_st_writer_meta(&w, "epoch_loss_sum", sum);
        tt_st_writer_meta(&w, "epoch_tokens", tokens);
    }
    int rc = tt_st_writer_save(&w, path, err, errlen);
    free(cfg);
    free(words);
    free(labels);
    for (int k = 0; k < 3; k++) free(host[k]);
    tt_st_writer_free(&w);
    return rc;
}

static int read_i64(const tt_st_file *f, const char *name, int64_t *out, const char *path,
                    char *err, size_t errlen)
{
    const tt_st_entry *e = tt_st_find(f, name);
    if (!e || e->dtype != TT_ST_I64 || e->numel != 1)
        return tt_errorf(err, errlen, "%s: %s is missing or not one I64; not a checkpoint of "
                         "./train", path, name);
    memcpy(out, e->data, sizeof *out);
    return 0;
}

/* A mid-epoch checkpoint's place in its epoch: its step lies strictly inside epoch + 1 (of
 * this run's steps per epoch), and epoch_loss_sum and epoch_tokens are plain finite numbers.
 * An epoch checkpoint (neither entry) leaves *in_epoch 0. */
static int read_mid_epoch(const tt_run *r, const tt_st_file *f, int64_t step, int epoch,
                          int *in_epoch, double *loss_sum, int64_t *tokens, const char *path,
                          char *err, size_t errlen)
{
    const char *sum = tt_st_meta(f, "epoch_loss_sum"), *tok = tt_st_meta(f, "epoch_tokens");
    *in_epoch = 0, *loss_sum = 0, *tokens = 0;
    if (!sum && !tok) return 0;
    char *end_sum = NULL, *end_tok = NULL;
    if (sum) *loss_sum = strtod(sum, &end_sum);
    if (tok) *tokens = strtoll(tok, &end_tok, 10);
    const int64_t first = (int64_t)epoch * r->steps_per_epoch;
    if (!sum || !tok || end_sum == sum || *end_sum || !isfinite(*loss_sum) || *loss_sum < 0 ||
        end_tok == tok || *end_tok || *tokens <= 0 || epoch < 0 || step <= first ||
        step >= first + r->steps_per_epoch)
        return tt_errorf(err, errlen, "%s: a mid-epoch checkpoint whose step %lld, epoch %d, "
                         "epoch_loss_sum \"%s\" and epoch_tokens \"%s\" do not fit together "
                         "(%d steps per epoch: the step must lie strictly inside epoch %d); "
                         "HINT: resume with the config it was written with (data and "
                         "train.batch_size)", path, (long long)step, epoch, sum ? sum : "",
                         tok ? tok : "", r->steps_per_epoch, epoch + 1);
    *in_epoch = (int)(step - first);
    return 0;
}

static bool same_vocab(const char *json, const tt_vocab *v)
{
    cJSON *a = json ? cJSON_Parse(json) : NULL;
    bool same = cJSON_IsArray(a) && cJSON_GetArraySize(a) == v->n;
    for (int i = 0; same && i < v->n; i++) {
        const cJSON *s = cJSON_GetArrayItem(a, i);
        same = cJSON_IsString(s) && strcmp(s->valuestring, v->words[i]) == 0;
    }
    cJSON_Delete(a);
    return same;
}

int tt_checkpoint_load(tt_run *r, const char *path, char *err, size_t errlen)
{
    tt_st_file f;
    if (tt_st_load(&f, path, err, errlen)) return -1;
    int rc = 0;
    const char *step = tt_st_meta(&f, "step"), *epoch = tt_st_meta(&f, "epoch");
    int64_t t = 0, rng_dropout = 0, rng_mask = 0;
    tt_params *ps = &r->model.params;
    int n_params = 0;
    for (int i = 0; i < f.n; i++) n_params += strncmp(f.entries[i].name, "optim.", 6) != 0;
    if (!step || !epoch)
        rc = tt_errorf(err, errlen, "%s: no step or epoch in the metadata; not a checkpoint of "
                       "./train", path);
    else if (!same_vocab(tt_st_meta(&f, "vocabulary"), &r->data.words) ||
             !same_vocab(tt_st_meta(&f, "labels"), &r->data.labels))
        rc = tt_errorf(err, errlen, "%s: its vocabulary or labels differ from those of the data "
                       "(%s); resume with the data it was trained on", path, r->cfg.data.train);
    else if (n_params != ps->n)
        rc = tt_errorf(err, errlen, "%s: %d parameter tensors; this model has %d (compare the "
                       "model section of the config with the checkpoint's)", path, n_params,
                       ps->n);
    if (!rc) rc = read_i64(&f, "optim.step", &t, path, err, errlen);
    if (!rc) rc = read_i64(&f, "optim.rng.dropout", &rng_dropout, path, err, errlen);
    if (!rc) rc = read_i64(&f, "optim.rng.mask", &rng_mask, path, err, errlen);
    int in_epoch = 0;
    double loss_sum = 0;
    int64_t tokens = 0;
    if (!rc)
        rc = read_mid_epoch(r, &f, strtoll(step, NULL, 10), atoi(epoch), &in_epoch, &loss_sum,
                            &tokens, path, err, errlen);
    /* into host copies first: a failure half-way must not leave a half-loaded model */
    real *vals = tt_params_host_alloc(ps, NULL, false);
    real *mom[2] = {tt_params_host_alloc(ps, NULL, false), tt_params_host_alloc(ps, NULL, false)};
    char msg[512];
    if (!rc && tt_params_read(ps, vals, &f, "", false, msg, sizeof msg))
        rc = tt_errorf(err, errlen, "%s: %s", path, msg);
    for (int k = 0; k < 2 && !rc; k++)
        if (moment_name(&r->opt, k) &&
            tt_params_read(ps, mom[k], &f, moment_name(&r->opt, k), true, msg, sizeof msg))
            rc = tt_errorf(err, errlen, "%s: %s (was it saved with train.optimizer %s?)", path,
                           msg, r->opt.kind == TT_OPT_SGD ? "sgd" : "adamw");
    if (!rc) {
        tt_params_from_host(ps, NULL, vals);
        tt_params_from_host(ps, r->opt.m, mom[0]);
        tt_params_from_host(ps, r->opt.v, mom[1]);
        r->opt.t = t;
        r->dropout.counter = (uint64_t)rng_dropout;
        r->mask.counter = (uint64_t)rng_mask;
        r->step = strtoll(step, NULL, 10);
        r->epoch = atoi(epoch);
        r->epoch_step = in_epoch;
        r->epoch_loss_sum = loss_sum;
        r->epoch_tokens = tokens;
        tt_run_resume_schedule(r, tt_st_meta(&f, "config"));
    }
    free(vals);
    free(mom[0]);
    free(mom[1]);
    tt_st_close(&f);
    return rc;
}
