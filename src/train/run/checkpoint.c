/* checkpoint.c: checkpoints, safetensors (docs/design.md section 5).
 * A checkpoint holds the parameters under their PyTorch names, the optimizer state under
 * optim.<kind>.<name>, the optimizer step and the random cursors as I64 optim.* scalars, and
 * in __metadata__ the resolved config, the step, the epoch, the vocabulary and the labels (JSON
 * arrays), and "run", the id of the run that wrote it (its folder's run.json); a mid-epoch
 * checkpoint (checkpoints/step_NNNNNNNN, written when a signal stops the run) adds
 * epoch_loss_sum ("%.17g", so the epoch's mean loss comes out the same) and
 * epoch_tokens. Loading checks all of it before anything changes, so a bad file leaves the run
 * as it was: the header, its values and the config it was trained under first (ckpt_check.c),
 * then, the data's size bounded by the model's, the data and its values. */
#include "train/run/run.h"

#include <cjson/cJSON.h>
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
    if (tt_record_id()) tt_st_writer_meta(&w, "run", tt_record_id()); /* the folder's run */
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
    tt_ckpt_info info;
    tt_params *ps = &r->model.params;
    /* the header and its values first: a file of the wrong run or size is refused unread */
    if (tt_checkpoint_open(&f, path, err, errlen)) return -1;
    int rc = tt_checkpoint_check_meta(&f, path, &info, err, errlen);
    if (!rc) rc = tt_checkpoint_check_config(&r->cfg, tt_st_meta(&f, "config"), path, err, errlen);
    if (!rc) rc = tt_checkpoint_check_step(&info, path, r->steps_per_epoch, err, errlen);
    int n_params = 0;
    for (int i = 0; i < f.n; i++) n_params += strncmp(f.entries[i].name, "optim.", 6) != 0;
    bool same = same_vocab(tt_st_meta(&f, "vocabulary"), &r->data.words) &&
                same_vocab(tt_st_meta(&f, "labels"), &r->data.labels);
    if (!rc && !same)
        rc = tt_errorf(err, errlen, "%s: its vocabulary or labels differ from those of the data "
                       "(%s); resume with the data it was trained on", path, r->cfg.data.train);
    else if (!rc && n_params != ps->n)
        rc = tt_errorf(err, errlen, "%s: %d parameter tensors; this model has %d (compare the "
                       "model section of the config with the checkpoint's)", path, n_params,
                       ps->n);
    if (rc || tt_st_read_data(&f, path, tt_checkpoint_max_data(ps), err, errlen) ||
        tt_checkpoint_check_data(&f, path, &info, err, errlen)) {
        tt_st_close(&f);
        return -1;
    }
    /* into host copies first: a failure half-way must not leave a half-loaded model */
    real *vals = tt_params_host_alloc(ps, NULL, false);
    real *mom[2] = {tt_params_host_alloc(ps, NULL, false), tt_params_host_alloc(ps, NULL, false)};
    char msg[512];
    if (tt_params_read(ps, vals, &f, "", false, msg, sizeof msg))
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
        r->opt.t = info.optim_step;
        r->dropout.counter = (uint64_t)info.rng_dropout;
        r->mask.counter = (uint64_t)info.rng_mask;
        r->step = info.step;
        r->epoch = info.epoch;
        r->epoch_step = info.mid_epoch ? (int)(info.step - (int64_t)info.epoch *
                                                               r->steps_per_epoch)
                                       : 0;
        r->epoch_loss_sum = info.mid_epoch ? info.epoch_loss_sum : 0;
        r->epoch_tokens = info.mid_epoch ? info.epoch_tokens : 0;
        memcpy(r->resumed_run, info.run, sizeof info.run);
        tt_run_resume_schedule(r, tt_st_meta(&f, "config"));
    }
    free(vals);
    free(mom[0]);
    free(mom[1]);
    tt_st_close(&f);
    return rc;
}
