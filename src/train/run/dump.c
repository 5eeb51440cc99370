/* dump.c: --dump-first-step (docs/design.md section 6): one forward and backward pass on the first
 * training batch with dropout off, so another implementation can reproduce every number,
 * written as one safetensors file of parameters, gradients, inputs and outputs. */
#include "train/run/run.h"

#include "train/run/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_i32(tt_st_writer *w, const char *name, const int32_t *x, int ndim, int B, int T)
{
    int64_t shape[2] = {B, T};
    tt_st_writer_add(w, name, TT_ST_I32, ndim, shape, x);
}

/* The whole batch's copy of a host tensor of this process's share: the ranks' shares in rank
 * order on rank 0 (dist.h); with one process, `mine` itself. */
static void *whole(const tt_run *r, void *mine, size_t bytes)
{
    if (r->batch.parts == 1) return mine;
    void *all = tt_dist_rank() == 0 ? tt_xmalloc(bytes * (size_t)r->batch.parts) : NULL;
    tt_dist_gather(mine, bytes, all);
    free(mine);
    return all;
}

static void *whole_copy(const tt_run *r, const void *mine, size_t bytes)
{
    void *copy = tt_xmalloc(bytes);
    memcpy(copy, mine, bytes);
    return whole(r, copy, bytes);
}

int tt_dump_first_step(tt_run *r, const char *path, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    /* data parallel: each rank takes its share, the gradients are summed, rank 0 writes the
     * whole batch (inputs and outputs gathered): the file a single process would write */
    const int B = r->batch.B * r->batch.parts, T = r->batch.T, L = c->model.n_layers;
    tt_shuffle(r->order, r->data.train.n, (uint64_t)c->seed, 1);
    tt_batch_fill(&r->batch, &r->data, &r->data.train, r->order, 0, &r->mask,
                  c->data.mask_prob);
    /* dropout off, so another implementation can reproduce every number */
    r->g.training = false;
    tt_tensor *att = tt_xcalloc((size_t)(L ? L : 1), sizeof *att);
    tt_var *logits;
    tt_var *loss = tt_run_forward(r, &r->batch, &logits, att);
    real host_loss = (real)tt_run_loss(r, loss, tt_run_grads(r, loss)); /* the whole batch's */
    /* host copies of everything written: the writer keeps pointers until the save */
    const tt_params *ps = &r->model.params;
    const bool classify = r->data.task == TT_TASK_CLASSIFY;
    const size_t rows = (size_t)r->batch.B, cells = rows * (size_t)T;
    int32_t *tokens = whole_copy(r, r->batch.tokens, cells * sizeof(int32_t));
    int32_t *targets = whole_copy(r, r->batch.targets, (classify ? rows : cells) * sizeof(int32_t));
    int32_t *pad = whole_copy(r, r->batch.pad, cells * sizeof(int32_t));
    void *host_logits = whole(r, tt_tensor_host_copy(r->g.be, &logits->val),
                              tt_tensor_bytes(&logits->val));
    void **host_att = tt_xcalloc((size_t)(L ? L : 1), sizeof *host_att);
    for (int l = 0; l < L; l++)
        host_att[l] = whole(r, tt_tensor_host_copy(r->g.be, &att[l]), tt_tensor_bytes(&att[l]));
    free(att);
    if (tt_dist_rank() > 0) { /* rank 0 writes; it has every share now (here: NULLs) */
        free(host_att);
        return 0;
    }
    real *vals = tt_params_host_alloc(ps, NULL, true);
    real *grads = tt_params_host_alloc(ps, ps->grad, true);
    tt_st_writer w;
    tt_st_writer_init(&w);
    tt_params_write(ps, vals, &w, "param.");
    tt_params_write(ps, grads, &w, "grad.");
    add_i32(&w, "input.tokens", tokens, 2, B, T);
    add_i32(&w, "input.targets", targets, classify ? 1 : 2, B, T);
    add_i32(&w, "input.pad_mask", pad, 2, B, T);
    int64_t ls[3] = {B, classify ? tt_corpus_n_out(&r->data) : T, tt_corpus_n_out(&r->data)};
    tt_st_writer_add(&w, "output.logits", TT_ST_REAL, classify ? 2 : 3, ls, host_logits);
    int64_t one = 1;
    tt_st_writer_add(&w, "output.loss", TT_ST_REAL, 1, &one, &host_loss);
    char name[32];
    for (int l = 0; l < L; l++) {
        int64_t s[4] = {B, c->model.n_heads, T, T};
        snprintf(name, sizeof name, "output.attn.%d", l);
        tt_st_writer_add(&w, name, TT_ST_REAL, 4, s, host_att[l]);
    }
    char *cfg = tt_config_to_json(c);
    tt_st_writer_meta(&w, "config", cfg);
    int rc = tt_st_writer_save(&w, path, err, errlen);
    free(cfg);
    free(tokens);
    free(targets);
    free(pad);
    for (int l = 0; l < L; l++) free(host_att[l]);
    free(host_att);
    free(host_logits);
    free(vals);
    free(grads);
    tt_st_writer_free(&w);
    return rc;
}
