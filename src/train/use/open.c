/* open.c: a checkpoint opened for use (use.h). The checkpoint carries everything the model
 * needs (the resolved config, the vocabulary and labels in __metadata__, the parameters under
 * their PyTorch names), so no data file is read: the corpus is rebuilt from the metadata with
 * empty splits, the run is set up as ./train sets it up (tt_run_init: the same model, arenas and
 * batch size), and the parameter values are copied in. Nothing is trusted: each metadata entry
 * is checked and a bad one named, with the checks of --resume (ckpt_check.c), and the data is
 * read only after the header, bounded by the size of the model it describes. */
#include "train/use/use.h"

#include "train/run/budget.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* A vocabulary from the metadata's JSON array of distinct strings; what = "vocabulary" or
 * "labels". */
static int read_list(tt_vocab *v, const char *json, const char *path, const char *what,
                     char *err, size_t errlen)
{
    tt_vocab_init(v);
    cJSON *a = json ? cJSON_Parse(json) : NULL;
    int rc = 0;
    if (!cJSON_IsArray(a))
        rc = tt_errorf(err, errlen, "%s: __metadata__.%s: %s; allowed: a JSON array of strings "
                       "(is this a checkpoint written by ./train?)", path, what,
                       json ? "not a JSON array" : "missing");
    for (int i = 0; !rc && i < cJSON_GetArraySize(a); i++) {
        const cJSON *s = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsString(s) || !s->valuestring[0])
            rc = tt_errorf(err, errlen, "%s: __metadata__.%s[%d]: not a non-empty string", path,
                           what, i);
        else if (tt_vocab_add(v, s->valuestring, strlen(s->valuestring)) != i)
            rc = tt_errorf(err, errlen, "%s: __metadata__.%s[%d]: \"%s\" appears twice", path,
                           what, i, s->valuestring);
    }
    cJSON_Delete(a);
    return rc;
}

/* The corpus of a checkpoint: task, seq_len, vocabularies, the ambiguous words; no examples. */
static int corpus_of(tt_corpus *c, const tt_config *cfg, const tt_st_file *f, const char *path,
                     char *err, size_t errlen)
{
    static const char *specials[TT_TOK_SPECIALS] = {"[PAD]", "[UNK]", "[MASK]"};
    *c = (tt_corpus){.task = cfg->data.task, .seq_len = cfg->data.seq_len};
    snprintf(c->train.path, sizeof c->train.path, "%s", cfg->data.train);
    if (read_list(&c->words, tt_st_meta(f, "vocabulary"), path, "vocabulary", err, errlen) ||
        read_list(&c->labels, tt_st_meta(f, "labels"), path, "labels", err, errlen))
        return -1;
    for (int i = 0; i < TT_TOK_SPECIALS; i++)
        if (i >= c->words.n || strcmp(c->words.words[i], specials[i]))
            return tt_errorf(err, errlen, "%s: __metadata__.vocabulary[%d]: want \"%s\" (the "
                             "vocabulary starts with [PAD], [UNK], [MASK])", path, i,
                             specials[i]);
    bool labelled = c->task == TT_TASK_TAG || c->task == TT_TASK_CLASSIFY;
    if (labelled != (c->labels.n > 0))
        return tt_errorf(err, errlen, "%s: __metadata__.labels: %d labels for task %s", path,
                         c->labels.n, tt_task_name(c->task));
    c->ambiguous = tt_xcalloc((size_t)c->words.n, sizeof(bool));
    for (int i = 0; i < cfg->data.n_ambiguous; i++) {
        const char *w = cfg->data.ambiguous[i];
        int id = tt_vocab_find(&c->words, w, strlen(w));
        if (id >= TT_TOK_SPECIALS && !c->ambiguous[id]) c->ambiguous[id] = true, c->n_ambiguous++;
    }
    return 0;
}

int tt_use_open(tt_run *r, const char *checkpoint, const char *const *sets, int n_sets,
                char *err, size_t errlen)
{
    *r = (tt_run){0};
    tt_st_file f;
    tt_ckpt_info info;
    /* the header and its values first; the data is read once the model it must fit is known */
    if (tt_checkpoint_open(&f, checkpoint, err, errlen)) return -1;
    char origin[TT_CONFIG_PATH + 64];
    snprintf(origin, sizeof origin, "%s: __metadata__.config", checkpoint);
    int rc = tt_checkpoint_check_meta(&f, checkpoint, &info, err, errlen);
    if (!rc)
        rc = tt_config_from_text(&r->cfg, tt_st_meta(&f, "config"), origin, sets, n_sets, err,
                                 errlen);
    if (!rc) rc = corpus_of(&r->data, &r->cfg, &f, checkpoint, err, errlen);
    if (!rc) rc = tt_run_check_memory(&r->cfg, &r->data, err, errlen);
    if (!rc) rc = tt_run_init(r, err, errlen);
    if (!rc) {
        int n_params = 0;
        for (int i = 0; i < f.n; i++) n_params += strncmp(f.entries[i].name, "optim.", 6) != 0;
        char msg[512];
        if (n_params != r->model.params.n)
            rc = tt_errorf(err, errlen, "%s: %d parameter tensors; its config's model has %d",
                           checkpoint, n_params, r->model.params.n);
        else if (tt_st_read_data(&f, checkpoint, tt_checkpoint_max_data(&r->model.params), err,
                                 errlen) ||
                 tt_checkpoint_check_data(&f, checkpoint, &info, err, errlen))
            rc = -1;
        else if (tt_params_load(&r->model.params, NULL, &f, "", false, msg, sizeof msg))
            rc = tt_errorf(err, errlen, "%s: %s", checkpoint, msg);
    }
    r->step = info.step;
    r->epoch = info.epoch;
    tt_st_close(&f);
    if (rc) tt_run_free(r);
    return rc;
}
