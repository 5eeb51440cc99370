/* run.c: a run's state, the forward pass of each task, and evaluation. The loop is loop.c,
 * checkpoints checkpoint.c, the first-step dump dump.c, the step's memory memory.c. */
#include "train/run/run.h"

#include "train/report/maps.h"
#include "train/run/dist.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static tt_model_config model_config(const tt_config *c, const tt_corpus *d)
{
    return (tt_model_config){
        .vocab = d->words.n, .n_out = tt_corpus_n_out(d), .d_model = c->model.d_model,
        .n_heads = c->model.n_heads, .n_layers = c->model.n_layers, .d_ff = c->model.d_ff,
        .max_len = c->model.max_len, .activation = c->model.gelu ? TT_ACT_GELU : TT_ACT_RELU,
        .pre_norm = c->model.pre_norm,
        .positional = c->model.learned_pos ? TT_POS_LEARNED : TT_POS_SINUSOIDAL,
        .embed_scale = c->model.embed_scale, .dropout = (real)c->model.dropout,
        .attn_dropout = (real)c->model.attn_dropout,
        .attn_scale = c->model.attn_scale_none ? TT_SCALE_NONE : TT_SCALE_SQRT_DK,
        .attn_temperature = (real)c->model.attn_temperature, .causal = c->model.causal};
}

int tt_run_init(tt_run *r, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    /* data parallel (dist.h): this process takes share `part` of every batch */
    const int parts = tt_dist_size(), part = tt_dist_rank();
    if (c->train.batch_size % parts)
        return tt_errorf(err, errlen, "train.batch_size: %d rows do not split into %d equal "
                         "shares, one per process (mpirun -np %d); train.batch_size stays the "
                         "whole batch.\nHINT: a batch_size that is a multiple of %d, or a "
                         "process count that divides %d", c->train.batch_size, parts, parts,
                         parts, c->train.batch_size);
    if (tt_dist_check_device(c->device, err, errlen)) return -1;
    const tt_backend *be = tt_backend_open(c->device, err, errlen);
    if (!be) return -1;
    be->set_threads(c->threads);
    be->set_matmul_precision(c->matmul_high);
    tt_model_config mc = model_config(c, &r->data);
    tt_model_init(&r->model, &mc, c->device);
    tt_model_reset(&r->model, (uint64_t)c->seed);
    tt_optim_init(&r->opt, &r->model.params, c);
    int B = c->train.batch_size / parts, T = c->data.seq_len;
    tt_step_sizes sz = tt_step_sizes_for(be, B, T, mc.d_model, mc.d_ff, mc.n_heads,
                                         mc.n_layers, mc.n_out, mc.activation == TT_ACT_GELU);
    tt_arena_init(&r->arena, "step", c->device, sz.values);
    tt_arena_init(&r->meta, "tape", TT_CPU, sz.tape);
    tt_heap_init(&r->grads, "gradients", c->device, sz.grads, sz.grad_blocks);
    tt_rng_init(&r->dropout, (uint64_t)c->seed, TT_STREAM_DROPOUT);
    tt_rng_init(&r->mask, (uint64_t)c->seed, TT_STREAM_MASK);
    tt_graph_init(&r->g, &r->arena, &r->meta, &r->dropout);
    tt_graph_set_grad_heap(&r->g, &r->grads);
    tt_batch_alloc(&r->batch, B, T);
    r->step_norm = be->alloc(sizeof(double));
    /* a step copies in its batch (tokens, padding, targets) and classify's pool weights; it
     * may be replayed when one process trains (the data-parallel step sums on the host): a
     * CUDA graph, and the guard device asserts what that needs */
    r->replay = c->cuda_graphs && parts == 1 && !tt_dist_nccl(c->device == TT_CUDA);
    be->step_setup((size_t)B * T * (3 * sizeof(int32_t) + sizeof(real)) + 4096, r->replay);
    r->g.part = r->batch.part = part, r->g.parts = r->batch.parts = parts;
    r->order = tt_xmalloc((size_t)r->data.train.n * sizeof(int));
    r->pool = tt_xmalloc((size_t)B * T * sizeof(real));
    r->entropy = tt_xcalloc((size_t)mc.n_layers * mc.n_heads + 1, sizeof(double));
    r->steps_per_epoch = (r->data.train.n + c->train.batch_size - 1) / c->train.batch_size;
    if (!r->cfg.train.schedule_epochs_set) /* a study's trainings change train.epochs */
        r->cfg.train.schedule_epochs = c->train.epochs;
    r->total_steps = (int64_t)r->steps_per_epoch * c->train.schedule_epochs;
    return 0;
}

double tt_run_lr(const tt_run *r, int64_t k)
{
    const tt_config *c = &r->cfg;
    return tt_schedule_lr(c->train.schedule, c->train.lr, k, c->train.warmup_steps,
                          r->total_steps);
}

void tt_run_resume_schedule(tt_run *r, const char *config_json)
{
    if (r->cfg.train.schedule_epochs_set || !config_json) return;
    cJSON *root = cJSON_Parse(config_json);
    const cJSON *train = cJSON_GetObjectItemCaseSensitive(root, "train");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(train, "schedule_epochs");
    if (!cJSON_IsNumber(n)) n = cJSON_GetObjectItemCaseSensitive(train, "epochs");
    if (cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= INT_MAX) {
        r->cfg.train.schedule_epochs = (int)n->valuedouble;
        r->total_steps = (int64_t)r->steps_per_epoch * r->cfg.train.schedule_epochs;
    }
    cJSON_Delete(root);
}

void tt_run_free(tt_run *r)
{
    if (r->metrics) fclose(r->metrics);
    tt_batch_free(&r->batch);
    free(r->order);
    free(r->pool);
    free(r->entropy);
    free(r->line);
    if (r->step_norm) {
        const tt_backend *be = tt_backend_get(r->cfg.device);
        be->step_setup(0, false);
        be->free(r->step_norm);
    }
    if (r->arena.base) tt_arena_free(&r->arena);
    if (r->meta.base) tt_arena_free(&r->meta);
    if (r->grads.base) tt_heap_destroy(&r->grads);
    if (r->opt.m) tt_optim_free(&r->opt);
    if (r->model.layers) tt_model_free(&r->model);
    tt_corpus_free(&r->data);
    tt_config_free(&r->cfg);
    *r = (tt_run){0};
}

/* classify: weights [B,1,T] that pool the hidden states, the mean over real tokens or the
 * first token; a padding row gets zeros. */
static tt_var *pool_weights(tt_run *r, const tt_batch *b)
{
    const int B = b->B, T = b->T;
    for (int i = 0; i < B; i++) {
        int len = 0;
        while (len < T && !b->pad[i * T + len]) len++;
        for (int t = 0; t < T; t++) {
            real w = R(0);
            if (len && r->cfg.model.pool == TT_POOL_FIRST) w = t == 0 ? R(1) : R(0);
            else if (len) w = t < len ? R(1) / (real)len : R(0);
            r->pool[i * T + t] = w;
        }
    }
    return tt_var_from_host(&r->g, tt_shape3(B, 1, T), TT_REAL, r->pool, false);
}

tt_var *tt_run_forward(tt_run *r, const tt_batch *b, tt_var **logits, tt_tensor *att)
{
    tt_graph *g = &r->g;
    const int B = b->B, T = b->T;
    tt_graph_reset(g);
    tt_var *tok = tt_var_from_host(g, tt_shape2(B, T), TT_I32, b->tokens, false);
    tt_var *pad = tt_var_from_host(g, tt_shape2(B, T), TT_I32, b->pad, false);
    tt_var *h = tt_model_encode(g, &r->model, tok, &pad->val, att);
    tt_var *tgt;
    if (r->data.task == TT_TASK_CLASSIFY) {
        h = tt_matmul(g, pool_weights(r, b), h, false, false); /* [B,1,d] */
        tgt = tt_var_from_host(g, tt_shape2(B, 1), TT_I32, b->targets, false);
    } else {
        tgt = tt_var_from_host(g, tt_shape2(B, T), TT_I32, b->targets, false);
    }
    *logits = tt_nn_linear_forward(g, &r->model.head, h);
    return tt_cross_entropy(g, *logits, tgt);
}

static int argmax(const real *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

tt_eval tt_run_evaluate(tt_run *r)
{
    tt_eval e = {0};
    const tt_split *s = &r->data.valid;
    const int B = r->batch.B, T = r->batch.T, V = tt_corpus_n_out(&r->data);
    const bool classify = r->data.task == TT_TASK_CLASSIFY;
    bool was_training = r->g.training, was_no_grad = tt_graph_set_no_grad(&r->g, true);
    r->g.training = false;
    tt_rng mask;
    tt_rng_init(&mask, (uint64_t)r->cfg.seed, TT_STREAM_MASK_VALID);
    double loss_sum = 0;
    int64_t correct = 0, correct_amb = 0;
    const tt_backend *be = r->g.be;
    const int L = r->cfg.model.n_layers, H = r->cfg.model.n_heads;
    /* outside any step: host copies of the logits and of one layer's weights */
    real *host = tt_xmalloc((size_t)B * T * V * sizeof(real));
    real *w = tt_xmalloc((size_t)B * H * T * T * sizeof(real));
    tt_tensor *att = tt_xcalloc((size_t)L + 1, sizeof *att);
    int64_t query_rows = 0;
    for (int k = 0; k < L * H; k++) r->entropy[k] = 0;
    for (int first = 0; first < s->n; first += B * r->batch.parts) { /* this rank's share */
        tt_batch_fill(&r->batch, &r->data, s, NULL, first, &mask, r->cfg.data.mask_prob);
        tt_var *logits;
        tt_var *loss = tt_run_forward(r, &r->batch, &logits, att);
        for (int l = 0; l < L; l++) {
            be->to_host(w, att[l].data, tt_tensor_bytes(&att[l]));
            for (int b = 0; b < B; b++)
                for (int i = 0; i < T; i++) {
                    if (r->batch.pad[b * T + i]) continue;
                    query_rows += l == 0;
                    for (int h = 0; h < H; h++)
                        r->entropy[l * H + h] +=
                            tt_attn_row_entropy(w + (((size_t)b * H + h) * T + i) * T, T);
                }
        }
        real l;
        be->to_host(&l, loss->val.data, sizeof l);
        be->to_host(host, logits->val.data, tt_tensor_bytes(&logits->val));
        int64_t rows = classify ? B : (int64_t)B * T, count = 0;
        for (int64_t i = 0; i < rows; i++) {
            int32_t t = r->batch.targets[i];
            if (t == TT_IGNORE_INDEX) continue;
            bool hit = argmax(host + i * V, V) == t;
            count++;
            correct += hit;
            if (!classify && r->batch.ambiguous[i]) {
                e.count_ambiguous++;
                correct_amb += hit;
            }
        }
        loss_sum += (double)l * (double)count; /* the batch loss is a mean over its targets */
        e.count += count;
    }
    free(host);
    free(w);
    free(att);
    if (r->batch.parts > 1) { /* the shares' sums, summed over the ranks */
        double *v = tt_xmalloc((size_t)(6 + L * H) * sizeof(double));
        v[0] = loss_sum, v[1] = (double)e.count, v[2] = (double)correct;
        v[3] = (double)e.count_ambiguous, v[4] = (double)correct_amb, v[5] = (double)query_rows;
        for (int k = 0; k < L * H; k++) v[6 + k] = r->entropy[k];
        tt_dist_sum(v, 6 + L * H);
        loss_sum = v[0], e.count = (int64_t)v[1], correct = (int64_t)v[2];
        e.count_ambiguous = (int64_t)v[3], correct_amb = (int64_t)v[4];
        query_rows = (int64_t)v[5];
        for (int k = 0; k < L * H; k++) r->entropy[k] = v[6 + k];
        free(v);
    }
    for (int k = 0; k < L * H; k++) r->entropy[k] /= query_rows ? (double)query_rows : 1;
    e.loss = e.count ? loss_sum / (double)e.count : 0;
    e.acc = e.count ? (double)correct / (double)e.count : 0;
    e.acc_ambiguous = e.count_ambiguous ? (double)correct_amb / (double)e.count_ambiguous : 0;
    r->g.training = was_training;
    tt_graph_set_no_grad(&r->g, was_no_grad);
    return e;
}
